"""The rules that relate the serve app's keys: each side's engines and layout, Ray and KubeRay versions and what
they can do, the API keys, head fault tolerance, surge room, the host KV tier and whether the model fits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.runtime.config import is_config_secret

from infra.settings.autoscaling import SIDE_OBJECTIVES, objective_problem
from infra.settings.instance_types import InstanceShape
from infra.settings.kinds import (
    CACHE_NODE_TYPE_PATTERN,
    CERTIFICATE_ARN_PATTERN,
    ELASTICACHE_NODE_TYPES,
    GCS_REDIS,
    IMAGE_PATTERN,
    KUBERAY_AUTH_OPTIONS_SINCE,
    KUBERAY_DELETION_DELAY_SINCE,
    KUBERAY_GCS_FT_OPTIONS_SINCE,
    MAINTENANCE_WINDOW_ALLOWED,
    MAINTENANCE_WINDOW_PATTERN,
    MAX_NODES_PER_NODE_GROUP,
    MIN_MAINTENANCE_WINDOW_MINUTES,
    NEW_CLUSTER,
    RAY_TOKEN_AUTH_SINCE,
    SEMVER_PATTERN,
    VALIDATED_KUBERAY_VERSIONS,
    maintenance_window_minutes,
)
from infra.settings.kv_offload import hybrid_model_problem, node_memory_problem, prefix_caching_problem
from infra.settings.models import AGGREGATED, OWN_NODES, ModelSpec, model_layout_problems
from infra.settings.prefix_caching import engine_prefix_caching, routes_by_prefix
from infra.settings.quantization import fp8_problems
from infra.settings.reader import Reader, json_string_list
from infra.settings.regions import DEFAULT_IMAGE_RAY_VERSION
from infra.settings.stack_config import KNOWN_MODELS, ServeSide, StackConfig, model_hybrid
from infra.settings.topology import Topology, topology_problems
from policy.ray_llm_policies.pinning import unpinned_image_reason

# The serve endpoint's API keys: one secret setting whose value is a JSON list, so that several keys can be
# valid at once while one is rotated (`pulumi config set --secret serveApiKeys '["<new>", "<old>"]'`).
API_KEYS_SETTING = "serveApiKeys"


# A key travels in an HTTP header and sits on a line of the keys file: printable ASCII, no space; long enough
# that guessing is hopeless (`openssl rand -hex 32` makes 64 characters).
API_KEY_PATTERN = re.compile(r"^[\x21-\x7e]{32,256}\Z")


API_KEY_COMMAND = 'pulumi config set --secret serveApiKeys "[\\"$(openssl rand -hex 32)\\"]"'


def maintenance_window_problem(value: str | None) -> str | None:
    """A window of the right form that is shorter than ElastiCache's minimum (the form is the row's pattern)."""
    if not value or not MAINTENANCE_WINDOW_PATTERN.fullmatch(value):
        return None
    minutes = maintenance_window_minutes(value)
    if minutes >= MIN_MAINTENANCE_WINDOW_MINUTES:
        return None
    return (
        f"gcsRedisMaintenanceWindow={value!r} is invalid: it lasts {minutes} minutes; allowed is "
        f"{MAINTENANCE_WINDOW_ALLOWED}"
    )


def cache_node_type_problem(node_type: str) -> str | None:
    """A well-formed node type ElastiCache has no current generation of (the row's pattern reports a malformed one):
    CreateReplicationGroup would refuse it after the VPC and cluster exist."""
    if not CACHE_NODE_TYPE_PATTERN.fullmatch(node_type) or node_type in ELASTICACHE_NODE_TYPES:
        return None
    families = sorted({name.split(".")[1] for name in ELASTICACHE_NODE_TYPES})
    return (
        f"gcsRedisNodeType={node_type!r} is invalid: it is not among the current-generation ElastiCache node types of "
        "the stack's table (infra/settings/kinds.py ELASTICACHE_NODE_TYPES, from ElastiCache's API reference; no "
        f"lookup lists them); allowed is a type of family {', '.join(families)} in the sizes ElastiCache lists "
        "(https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/CacheNodes.SupportedTypes.html), e.g. "
        "cache.t4g.micro"
    )


def read_api_keys(read: Reader, config: pulumi.Config, raw: str | None) -> tuple[str, ...]:
    """The serve endpoint's keys, each checked without ever being shown: a problem names a key by its index."""
    if not raw:
        return ()
    if not is_config_secret(config.full_key(API_KEYS_SETTING)):
        read.problems.append(
            f"{API_KEYS_SETTING} is set in plain text: set it with `{API_KEY_COMMAND}` (a JSON list of keys)"
        )
        return ()
    keys = json_string_list(raw)
    if keys is None:
        read.problems.append(f"{API_KEYS_SETTING} is invalid: allowed is a JSON list of keys, e.g. `{API_KEY_COMMAND}`")
        return ()
    for index, key in enumerate(keys):
        if not API_KEY_PATTERN.fullmatch(key):
            read.problems.append(
                f"{API_KEYS_SETTING}[{index}] is invalid: allowed is 32 to 256 printable ASCII characters without "
                "spaces (`openssl rand -hex 32`)"
            )
        elif key in keys[:index]:
            read.problems.append(
                f"{API_KEYS_SETTING}[{index}] is invalid: it repeats {API_KEYS_SETTING}[{keys.index(key)}]; "
                "allowed is each key once"
            )
    return tuple(keys)


def serve_auth_problems(cfg: StackConfig, keys: tuple[str, ...]) -> list[str]:
    """An endpoint that leaves the cluster takes only HTTPS and, unless switched off on an internal one, a key."""
    if cfg.serve_exposure == "none":
        return []
    problems = []
    if cfg.serve_certificate_arn is None:
        problems.append(
            f"serveExposure={cfg.serve_exposure!r} needs serveCertificateArn: the load balancer serves HTTPS only; "
            "allowed is the ARN of an ACM certificate in the stack's region for the DNS name clients use "
            "(`aws acm request-certificate --domain-name <name> --validation-method DNS`)"
        )
    else:
        match = CERTIFICATE_ARN_PATTERN.fullmatch(cfg.serve_certificate_arn)
        if match and cfg.region and match.group("region") != cfg.region:
            problems.append(
                f"serveCertificateArn={cfg.serve_certificate_arn!r} is invalid: it is in {match.group('region')}, "
                f"and a load balancer takes only a certificate of its own region; allowed is an ACM certificate "
                f"in {cfg.region}"
            )
    if not cfg.serve_api_key_auth:
        if cfg.serve_exposure == "internet-facing":
            problems.append(
                "serveApiKeyAuth=false is invalid with serveExposure='internet-facing': an endpoint on the internet "
                "must ask for a key; allowed is true (or serveExposure internal)"
            )
    elif not keys:
        problems.append(
            f"serveExposure={cfg.serve_exposure!r} needs serveApiKeys (serveApiKeyAuth is true): set at least one "
            f"key with `{API_KEY_COMMAND}`"
        )
    return problems


def serve_side(values: Mapping[str, Any], problems: list[str], side: str) -> ServeSide:
    """One side's settings; the autoscaling keys must agree with serveAutoscaling."""
    autoscaling = values["serveAutoscaling"]
    replicas = values[f"{side}Replicas"]
    max_key, target_key = f"{side}MaxReplicas", f"{side}TargetOngoingRequests"
    max_replicas, target = values[max_key], values[target_key]
    objective = values[SIDE_OBJECTIVES[side]]
    if objective and not autoscaling:
        problems.append(
            f"{SIDE_OBJECTIVES[side]}={objective} is invalid with serveAutoscaling=false: allowed is 0 (set "
            "serveAutoscaling to true to let Ray Serve scale the side on it)"
        )
    elif problem := objective_problem(side, objective, values["latencyObjectivePercentile"]):
        problems.append(problem)
    if autoscaling and max_replicas < replicas:
        problems.append(
            f"{max_key}={max_replicas} is invalid with serveAutoscaling=true: allowed is at least "
            f"{side}Replicas={replicas} (the fewest replicas Ray Serve keeps)"
        )
    if autoscaling and not target:
        # Ray Serve LLM's own default target is 1e9 requests per replica, which never scales up
        # (ray/llm/_internal/serve/constants.py DEFAULT_MAX_TARGET_ONGOING_REQUESTS).
        problems.append(
            f"{target_key}=0 is invalid with serveAutoscaling=true: allowed is an integer >= 1, the ongoing "
            "requests per replica Ray Serve scales toward (Ray Serve LLM's default of 1e9 would never scale up)"
        )
    if not autoscaling and (max_replicas or target):
        problems.append(
            f"{max_key}={max_replicas}, {target_key}={target} are invalid with serveAutoscaling=false: allowed is 0 "
            "(set serveAutoscaling to true to let Ray Serve scale the side)"
        )
    max_num_seqs, max_num_batched_tokens = values[f"{side}MaxNumSeqs"], values[f"{side}MaxNumBatchedTokens"]
    if problem := _batched_tokens_problem(side, max_num_seqs, max_num_batched_tokens):
        problems.append(problem)
    quantization = values[f"{side}Quantization"]
    prefix_caching = engine_prefix_caching(values["prefixCaching"], side, model_hybrid(values["modelSource"]))
    most_replicas = max_replicas if autoscaling else replicas
    return ServeSide(
        replicas=replicas,
        max_num_seqs=max_num_seqs or None,
        max_num_batched_tokens=max_num_batched_tokens or None,
        quantization=None if quantization == "none" else quantization,
        max_replicas=max_replicas if autoscaling else None,
        target_ongoing_requests=target if autoscaling else None,
        latency_objective_ms=objective if autoscaling and objective else None,
        prefix_caching=prefix_caching,
        prefix_routing=routes_by_prefix(values["prefixAwareRouting"], prefix_caching, most_replicas),
        kv_offload_gib=values[f"{side}KvOffloadGiB"],
    )


def _batched_tokens_problem(side: str, max_num_seqs: int, max_num_batched_tokens: int) -> str | None:
    """vLLM 0.26 refuses to start an engine whose max_num_batched_tokens is below its max_num_seqs
    (`vllm/config/scheduler.py` `SchedulerConfig.verify_max_model_len`: "max_num_batched_tokens (...) must be greater
    than or equal to max_num_seqs"). With max_num_batched_tokens set and max_num_seqs left to vLLM (0), EngineArgs
    caps the default max_num_seqs at it (`vllm/engine/arg_utils.py`,
    `_set_default_max_num_seqs_and_batched_tokens_args`); the other way round, its default batch, the smaller of
    max_num_seqs x max_model_len and 2048 tokens or more (by GPU memory and usage context), holds any max_num_seqs up
    to 2048; one above that is not checked here. The same method refuses max_num_batched_tokens below max_model_len
    only with chunked prefill off, which the stack never sets and vLLM turns on by default for every model that
    supports it (`_set_default_chunked_prefill_and_prefix_caching_args`)."""
    if not max_num_seqs or not max_num_batched_tokens or max_num_batched_tokens >= max_num_seqs:
        return None
    return (
        f"{side}MaxNumBatchedTokens={max_num_batched_tokens} is invalid with {side}MaxNumSeqs={max_num_seqs}: vLLM "
        "refuses to start an engine that batches fewer tokens than sequences (vllm/config/scheduler.py); allowed is "
        f"at least {max_num_seqs}, or 0 for vLLM's default"
    )


def layout_topology(
    values: Mapping[str, Any],
    problems: list[str],
    shape: InstanceShape | None,
    prefill: ServeSide,
    decode: ServeSide,
    models: tuple[ModelSpec, ...],
) -> Topology | None:
    """The layout on GPU nodes; its problems are recorded."""
    # A gpuNodeType unfit for the GPU nodes is reported on its own; the layout cannot be checked against it.
    if shape is None:
        return None
    topology = Topology(
        prefill.replicas,
        decode.replicas,
        values["tensorParallelSize"],
        values["pipelineParallelSize"],
        shape,
        most_replicas=prefill.most_replicas + decode.most_replicas,
        model_gpus=sum(model.gpus for model in models if model.serving == AGGREGATED and model.placement == OWN_NODES),
    )
    layout_problems = topology_problems(topology) + model_layout_problems(topology, models)
    problems.extend(layout_problems)
    if not layout_problems and topology.most_gpu_nodes > MAX_NODES_PER_NODE_GROUP:
        problems.append(
            f"prefill/decode replicas need up to {topology.most_gpu_nodes} GPU nodes ({topology.arithmetic}, "
            f"at most {topology.peak_replicas} replicas): EKS allows {MAX_NODES_PER_NODE_GROUP} per node group; "
            "lower prefillReplicas/decodeReplicas (or their MaxReplicas), or use a gpuNodeType with more GPUs"
        )
    return topology


def latest_image_problem(dlc_image: str | None) -> str | None:
    """A dlcImage of the row's form that may still pull another image later (the pack's rule, one home)."""
    reason = unpinned_image_reason(dlc_image) if dlc_image and IMAGE_PATTERN.fullmatch(dlc_image) else None
    if reason is None:
        return None
    return f"dlcImage={dlc_image!r} is invalid: it {reason}; allowed is a tag other than latest, or a digest"


def ray_version_problem(ray_version: str, custom_image: bool) -> str | None:
    if custom_image or ray_version == DEFAULT_IMAGE_RAY_VERSION:
        return None
    return (
        f"rayVersion={ray_version!r} is invalid: the default image runs Ray {DEFAULT_IMAGE_RAY_VERSION}, "
        f"so allowed is {DEFAULT_IMAGE_RAY_VERSION} (or set dlcImage to an image that runs Ray {ray_version})"
    )


def kuberay_version_problem(version: str, allow_unvalidated: bool) -> str | None:
    if version in VALIDATED_KUBERAY_VERSIONS or not SEMVER_PATTERN.match(version):
        return None
    if allow_unvalidated:
        pulumi.log.warn(
            f"kuberayVersion={version!r} was not validated: the RayService was checked against the CRDs of KubeRay "
            f"{', '.join(VALIDATED_KUBERAY_VERSIONS)} only (allowUnvalidatedKuberayVersion=true)"
        )
        return None
    return (
        f"kuberayVersion={version!r} is invalid: allowed is a KubeRay release whose CRDs the RayService is "
        f"validated against ({', '.join(VALIDATED_KUBERAY_VERSIONS)}), or set allowUnvalidatedKuberayVersion "
        "to true to deploy another one unchecked"
    )


def _since(version: str, since: tuple[int, ...]) -> bool:
    """Whether `version` is a release `since` or later (False for a malformed one, which its row reports)."""
    return bool(SEMVER_PATTERN.match(version)) and tuple(int(part) for part in version.split(".")) >= since


def sets_cluster_deletion_delay(kuberay_version: str) -> bool:
    """Whether this KubeRay release reads spec.rayClusterDeletionDelaySeconds (KUBERAY_DELETION_DELAY_SINCE)."""
    return _since(kuberay_version, KUBERAY_DELETION_DELAY_SINCE)


def has_ray_token_auth(kuberay_version: str) -> bool:
    """Whether this KubeRay release takes authOptions (and its dashboard client sends the token)."""
    return _since(kuberay_version, KUBERAY_AUTH_OPTIONS_SINCE)


def ray_auth_problem(mode: str, kuberay_version: str, ray_version: str) -> str | None:
    if mode != "token" or not SEMVER_PATTERN.match(kuberay_version) or not SEMVER_PATTERN.match(ray_version):
        return None
    since = ".".join(map(str, KUBERAY_AUTH_OPTIONS_SINCE))
    if not has_ray_token_auth(kuberay_version):
        return (
            f"rayAuthMode='token' is invalid with kuberayVersion={kuberay_version!r}: KubeRay takes authOptions from "
            f"{since} on, and an older operator's dashboard client sends no token, so it could not submit the serve "
            f"config; allowed is kuberayVersion {since} or later (validated: {VALIDATED_KUBERAY_VERSIONS[-1]}), or "
            "rayAuthMode 'disabled'"
        )
    if _since(ray_version, RAY_TOKEN_AUTH_SINCE):
        return None
    ray_since = ".".join(map(str, RAY_TOKEN_AUTH_SINCE))
    return (
        f"rayAuthMode='token' is invalid with rayVersion={ray_version!r}: KubeRay refuses authOptions below Ray "
        f"{ray_since}; allowed is rayVersion {ray_since} or later, or rayAuthMode 'disabled'"
    )


def head_fault_tolerance_problem(mode: str, kuberay_version: str) -> str | None:
    """An operator older than gcsFaultToleranceOptions: its CRD prunes the field (an unknown field of a structural
    schema, https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/
    #field-pruning), so the head would run without its store and nothing would say so."""
    if mode != GCS_REDIS or not SEMVER_PATTERN.match(kuberay_version):
        return None
    if _since(kuberay_version, KUBERAY_GCS_FT_OPTIONS_SINCE):
        return None
    since = ".".join(map(str, KUBERAY_GCS_FT_OPTIONS_SINCE))
    return (
        f"headFaultTolerance='redis' is invalid with kuberayVersion={kuberay_version!r}: KubeRay takes "
        f"gcsFaultToleranceOptions from {since} on; allowed is kuberayVersion {since} or later (validated: "
        f"{', '.join(VALIDATED_KUBERAY_VERSIONS)}), or headFaultTolerance 'off'"
    )


def surge_problems(cfg: StackConfig) -> list[str]:
    """newCluster runs both clusters at once for the length of an upgrade: the GPU node group's maximum holds the
    active cluster at its most and the new one's workers (infra/nodes/node_groups.py takes it as the group's max), and
    nodes must be able to come (the system node check counts the second head)."""
    if not cfg.new_cluster or cfg.topology is None:
        return []
    problems = []
    if cfg.gpu_capacity_type == "capacity-block":
        problems.append(
            f"clusterUpgradeStrategy={NEW_CLUSTER!r} is invalid with gpuCapacityType='capacity-block': an upgrade runs "
            f"{cfg.surge_gpu_nodes} GPU node(s) beside the active cluster's, and a Capacity Block holds a fixed number "
            "of instances for its window; allowed is clusterUpgradeStrategy 'replace' (or on-demand GPU nodes)"
        )
    if cfg.gpu_node_group_max > MAX_NODES_PER_NODE_GROUP:
        problems.append(
            f"clusterUpgradeStrategy={NEW_CLUSTER!r} is invalid with these replicas: an upgrade needs up to "
            f"{cfg.gpu_node_group_max} GPU nodes ({cfg.topology.most_gpu_nodes} for the active cluster at its most + "
            f"{cfg.surge_gpu_nodes} for the new one) and EKS allows {MAX_NODES_PER_NODE_GROUP} per node group; "
            "allowed is clusterUpgradeStrategy 'replace', or lower prefillReplicas/decodeReplicas (or their "
            "MaxReplicas)"
        )
    return problems


def host_tier_problems(cfg: StackConfig) -> list[str | None]:
    """A host KV tier for a hybrid model or on a side without prefix caching, or tiers the GPU node's worker pod
    cannot hold (infra/settings/kv_offload.py)."""
    tiers = {f"{side}KvOffloadGiB": getattr(cfg, side).kv_offload_gib for side in ("prefill", "decode")}
    problems = [
        hybrid_model_problem(key, tier, cfg.model_hybrid)
        or prefix_caching_problem(key, tier, side, getattr(cfg, side).prefix_caching)
        for (key, tier), side in zip(tiers.items(), ("prefill", "decode"), strict=True)
    ]
    if cfg.topology is not None and any(tiers.values()):
        problems.append(
            node_memory_problem(cfg.topology.node, cfg.topology.replicas_per_node, tiers, cfg.gpu_node_type)
        )
    return problems


def model_fit_problems(cfg: StackConfig, kv_setting: str) -> list[str]:
    """Settings the project's own measurements of the model (KNOWN_MODELS) call impossible; other models are the
    user's word."""
    facts = KNOWN_MODELS.get(cfg.model_source)
    if facts is None or cfg.topology is None:
        return []
    problems = []
    if facts.hybrid and cfg.kv_buffer_device == "cpu":
        resolved = (
            "" if kv_setting == "cpu" else f" (auto resolves to cpu on {cfg.gpu_node_type}: its EFA has no RDMA read)"
        )
        problems.append(
            f"kvBufferDevice={kv_setting!r} is invalid with modelSource={cfg.model_source!r}{resolved}: the model is "
            "hybrid (Mamba-type state), and vLLM 0.26's NIXL connector cannot stage its KV cache in host memory; "
            "allowed is cuda, on a gpuNodeType whose EFA supports RDMA read (g6, g6e, p4d, p5)"
        )
    # The measurements are of bf16 weights; FP8 on both sides is sized by the capacity estimate in preview.
    if cfg.prefill.quantization and cfg.decode.quantization:
        return problems
    replica_mib = cfg.topology.node.gpu_memory_mib * cfg.topology.gpus_per_replica
    weights_gib = facts.text_weights_gib if cfg.language_model_only else facts.vision_weights_gib
    if weights_gib * 1024 > replica_mib:
        problems.append(
            f"gpuNodeType={cfg.gpu_node_type!r} is invalid with modelSource={cfg.model_source!r} and "
            f"tensorParallelSize={cfg.topology.tensor_parallel_size}: a replica gets {replica_mib} MiB of GPU memory, "
            f"less than the model's {weights_gib} GiB of weights; allowed is a larger GPU or a larger "
            "tensorParallelSize"
        )
    elif not cfg.language_model_only and replica_mib <= facts.vision_does_not_fit_mib:
        problems.append(
            f"languageModelOnly=false is invalid with modelSource={cfg.model_source!r} on {replica_mib} MiB of GPU "
            f"memory per replica: with its vision tower ({facts.vision_weights_gib} GiB of weights) vLLM had no KV "
            f"cache left on {facts.vision_does_not_fit_mib} MiB (lab/records/gpu-end-to-end.md); allowed is "
            "languageModelOnly=true, a larger GPU or a larger tensorParallelSize"
        )
    return problems


def fp8_config_problems(cfg: StackConfig) -> list[str]:
    """FP8 weights or KV cache on a GPU where vLLM 0.26 would refuse them (infra/settings/quantization.py)."""
    if cfg.topology is None:
        return []
    quantized = [side for side in ("prefill", "decode") if getattr(cfg, side).quantization]
    return fp8_problems(cfg.gpu_node_type, cfg.topology.node.gpu_name, quantized, cfg.kv_cache_dtype)
