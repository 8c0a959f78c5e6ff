"""The stack's settings: read once from Pulumi config, validated, frozen; the only reader of `pulumi.Config`.

It reads every row of the settings table (`reader.py`), then applies the rules that relate several keys
(`rules_network.py`, `rules_serving.py`, `rules_observability.py`), and `load_config` raises every problem together,
naming key, value and what is allowed, before any resource; what it only warns of is in `config_warnings.py`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import pulumi

from infra.settings.autoscaling import ScalingPace
from infra.settings.config_keys import provider_value_problems, unknown_key_problems
from infra.settings.config_warnings import ignored_setting_warnings, nested_cidr_warnings
from infra.settings.instance_types import InstanceShape, gpu_node_type_problem, resolve_kv_buffer_device
from infra.settings.kinds import INSTANCE_TYPE_PATTERN, MAX_MODEL_LEN
from infra.settings.model_sources import model_source_problem
from infra.settings.models import ModelSpec, read_models
from infra.settings.prefix_caching import prefix_routing_problem
from infra.settings.reader import (
    Reader,
    encrypted_setting_problems,
    every_setting,
    plain_secret_problem,
)
from infra.settings.regions import default_dlc_image, region_problem
from infra.settings.rules_network import (
    api_allow_list_problem,
    capacity_block_autoscaling_problem,
    capacity_block_problem,
    cluster_autoscaler_problem,
    gpu_az_problem,
    gpu_nodegroup_name_problem,
    kube_proxy_version_problem,
    kubernetes_version_problem,
    namespace_problem,
    serve_source_problem,
    system_node_problems,
    vpc_cidr_problem,
)
from infra.settings.rules_observability import (
    observability_problems,
    receiver_partition_problems,
    receiver_secret_problems,
)
from infra.settings.rules_serving import (
    API_KEYS_SETTING,
    cache_node_type_problem,
    fp8_config_problems,
    has_ray_token_auth,
    head_fault_tolerance_problem,
    host_tier_problems,
    kuberay_version_problem,
    latest_image_problem,
    layout_topology,
    maintenance_window_problem,
    model_fit_problems,
    ray_auth_problem,
    ray_version_problem,
    read_api_keys,
    serve_auth_problems,
    serve_side,
    surge_problems,
)
from infra.settings.stack_config import ConfigError, StackConfig
from infra.settings.table import PROJECT_KEYS, SETTINGS

# The StackConfig fields a row feeds with its value as read; the rest load_config derives.
STACK_FIELDS = frozenset(f.name for f in dataclasses.fields(StackConfig))


# The fields a row names as what it feeds that load_config composes from several settings or resolves: passed by
# keyword, never from the rows. A field missing here or there fails every load_config call (a missing or a repeated
# keyword argument).
COMPOSED_FIELDS = frozenset(
    {
        "dlc_image",
        "kv_buffer_device",
        "serve_api_key_auth",
        "serve_api_keys",
        "ray_token_auth",
        "alert_slack_webhook_url",
        "alert_pagerduty_routing_key",
        "models",
    }
)


def load_config(
    config: pulumi.Config | None = None,
    aws_config: pulumi.Config | None = None,
    *,
    describe_instance_type: Callable[[str], InstanceShape | None],
) -> StackConfig:
    """Builds the frozen stack config, or raises ConfigError naming every bad key; `describe_instance_type` is EC2's
    answer for the GPU type (None when EC2 does not know it), against which the layout is checked."""
    config = config or pulumi.Config()
    read = Reader(config, aws_config or pulumi.Config("aws"))
    values = {setting.key: read.read(setting) for setting in SETTINGS}
    defaults = {setting.key: setting.default for setting in SETTINGS}
    models, model_problems = read_models(values, defaults, MAX_MODEL_LEN)
    read.problems.extend(model_problems)
    # Every PD consumer reads the one-model keys: with a `models` list, they are its PD entry's.
    values.update(modelId=models[0].id, modelSource=models[0].source)
    api_keys = read_api_keys(read, config, values[API_KEYS_SETTING])
    read.problems.extend(p for p in _value_problems(config, values) if p)
    read.problems.extend(read.integer_form_problems)
    cfg = _stack_config(config, read, values, describe_instance_type, api_keys, models)
    read.problems.extend(p for p in _relation_problems(cfg, values, api_keys, describe_instance_type) if p)
    read.problems.extend(encrypted_setting_problems(config))
    settings = every_setting()
    read.problems[:0] = [
        *unknown_key_problems(settings, config.name, PROJECT_KEYS),
        *provider_value_problems(settings),
    ]
    for warning in [*nested_cidr_warnings(cfg.settings), *ignored_setting_warnings(cfg, values)]:
        pulumi.log.warn(warning)
    if read.problems:
        raise ConfigError(read.problems)
    return cfg


def _value_problems(config: pulumi.Config, values: Mapping[str, Any]) -> list[str | None]:
    """What is wrong with a value on its own, beyond its row's kind."""
    region = values["aws:region"]
    return [
        region_problem(region),
        vpc_cidr_problem(values["vpcCidr"]),
        kubernetes_version_problem(values["kubernetesVersion"]),
        gpu_az_problem(values["gpuAz"], region),
        model_source_problem(values["modelSource"]),
        cache_node_type_problem(values["gcsRedisNodeType"]),
        *receiver_partition_problems(values),
        plain_secret_problem(config, "hfToken", values["hfToken"], "token"),
        *receiver_secret_problems(config, values),
        kuberay_version_problem(values["kuberayVersion"], values["allowUnvalidatedKuberayVersion"]),
        ray_auth_problem(values["rayAuthMode"], values["kuberayVersion"], values["rayVersion"]),
        head_fault_tolerance_problem(values["headFaultTolerance"], values["kuberayVersion"]),
        maintenance_window_problem(values["gcsRedisMaintenanceWindow"]),
        ray_version_problem(values["rayVersion"], custom_image=values["dlcImage"] is not None),
        latest_image_problem(values["dlcImage"]),
    ]


def _gpu_shape(
    values: Mapping[str, Any], problems: list[str], describe_instance_type: Callable[[str], InstanceShape | None]
) -> InstanceShape | None:
    """EC2's shape of the GPU type; None (and a problem recorded) where it is unfit. Asked only for a well-formed
    name in a supported region: EC2 cannot answer for anything else."""
    gpu_node_type, region = values["gpuNodeType"], values["aws:region"]
    if not gpu_node_type or region_problem(region) or not INSTANCE_TYPE_PATTERN.match(gpu_node_type):
        return None
    shape = describe_instance_type(gpu_node_type)
    problem = gpu_node_type_problem(gpu_node_type, shape, region)
    if problem:
        problems.append(problem)
        return None
    return shape


def _stack_config(
    config: pulumi.Config,
    read: Reader,
    values: Mapping[str, Any],
    describe_instance_type: Callable[[str], InstanceShape | None],
    api_keys: tuple[str, ...],
    models: tuple[ModelSpec, ...],
) -> StackConfig:
    """The fields a row feeds as read come from the rows (each row's kind checked its value); the composed ones (the
    sides and the layout on EC2's GPU shape among them, their problems recorded) are keyword arguments, so that mypy
    checks their types."""
    prefill, decode = (serve_side(values, read.problems, side) for side in ("prefill", "decode"))
    shape = _gpu_shape(values, read.problems, describe_instance_type)
    region, dlc_image = values["aws:region"], values["dlcImage"]
    # Auth guards only an endpoint that leaves the cluster: with serveExposure none nothing reaches it from outside.
    serve_api_key_auth = values["serveApiKeyAuth"] and values["serveExposure"] != "none"
    fed = {
        setting.feeds: values[setting.key]
        for setting in SETTINGS
        if setting.feeds in STACK_FIELDS and setting.feeds not in COMPOSED_FIELDS
    }
    return StackConfig(
        **fed,
        project=pulumi.get_project(),
        stack=pulumi.get_stack(),
        dlc_image=dlc_image or (default_dlc_image(region) if not region_problem(region) else ""),
        prefill=prefill,
        decode=decode,
        scaling_pace=ScalingPace(
            upscale_delay_s=values["serveUpscaleDelaySeconds"],
            downscale_delay_s=values["serveDownscaleDelaySeconds"],
            percentile=values["latencyObjectivePercentile"],
        ),
        # None only where gpuNodeType is unfit, a problem already recorded: this config is refused below, after the
        # other checks (which skip what needs the layout) have added theirs.
        topology=layout_topology(values, read.problems, shape, prefill, decode, models),  # type: ignore[arg-type]
        models=models,
        kv_buffer_device=resolve_kv_buffer_device(values["kvBufferDevice"], values["gpuNodeType"]),
        ray_token_auth=values["rayAuthMode"] == "token"
        or (values["rayAuthMode"] == "auto" and has_ray_token_auth(values["kuberayVersion"])),
        hf_token=_secret_output(config, "hfToken", values),
        hf_token_value=values["hfToken"] or None,
        serve_api_key_auth=serve_api_key_auth,
        serve_api_keys=pulumi.Output.secret(list(api_keys)) if serve_api_key_auth and api_keys else None,
        alert_slack_webhook_url=_secret_output(config, "alertSlackWebhookUrl", values),
        alert_pagerduty_routing_key=_secret_output(config, "alertPagerDutyRoutingKey", values),
        settings=dict(read.values),
    )


def _secret_output(config: pulumi.Config, key: str, values: Mapping[str, Any]) -> pulumi.Output[str] | None:
    return config.get_secret(key) if values[key] else None


def _relation_problems(
    cfg: StackConfig,
    values: Mapping[str, Any],
    api_keys: tuple[str, ...],
    describe_instance_type: Callable[[str], InstanceShape | None],
) -> list[str | None]:
    """What is wrong with several values together, read on the composed config."""
    return [
        api_allow_list_problem(cfg.api_public_access_cidrs, cfg.settings["apiPublicAccessCidrs"]),
        serve_source_problem(cfg.serve_exposure, cfg.serve_source_cidrs),
        *serve_auth_problems(cfg, api_keys),
        kube_proxy_version_problem(cfg.kube_proxy_version, cfg.kubernetes_version),
        capacity_block_problem(cfg.gpu_capacity_type, cfg.capacity_reservation_id, cfg.gpu_az),
        cluster_autoscaler_problem(cfg),
        capacity_block_autoscaling_problem(cfg.gpu_capacity_type, cfg.serve_autoscaling),
        *surge_problems(cfg),
        namespace_problem(cfg.namespace),
        gpu_nodegroup_name_problem(cfg.gpu_nodegroup_name),
        *model_fit_problems(cfg, values["kvBufferDevice"]),
        prefix_routing_problem(
            values["prefixAwareRouting"],
            values["prefixCaching"],
            cfg.model_source,
            cfg.prefill.prefix_caching,
            cfg.decode.prefix_caching,
        ),
        *fp8_config_problems(cfg),
        *host_tier_problems(cfg),
        *system_node_problems(cfg, describe_instance_type),
        *observability_problems(cfg),
    ]
