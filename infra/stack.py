"""The whole stack, top-down like the architecture: the preflight, network, cluster, nodes, model cache, serving,
observability, and the outputs; `build_stack` reads as that list, each step a function below it.

Imports: every part of infra/ (the top: nothing imports it but __main__.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import pulumi
from pulumi.errors import InputPropertiesError

from infra.cluster.eks import Cluster, ClusterArgs, update_kubeconfig_command
from infra.kube.scheduling import SYSTEM_NODEGROUP_NAME
from infra.network.vpc import Network, NetworkArgs
from infra.nodes.cluster_autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
from infra.nodes.device_plugins import DevicePlugins, DevicePluginsArgs
from infra.nodes.node_groups import GpuNodes, GpuNodesArgs, SystemNodes, SystemNodesArgs
from infra.observability.alerts import AlertArgs
from infra.observability.monitoring import (
    REMOTE_WRITE_POLICY,
    Observability,
    ObservabilityArgs,
    RemoteWrite,
    observability_outputs,
)
from infra.observability.receivers import Receivers
from infra.preflight.checks import DeployFacts, preflight
from infra.preview_notes import alerting_note, cost_note, protection_note, rollback_wait_warning, serving_notes
from infra.serving import serve_auth
from infra.serving.gcs_store import GcsStore, GcsStoreArgs
from infra.serving.kuberay import OPERATOR_NAMESPACE, KubeRayOperatorArgs
from infra.serving.model_cache import (
    MIRROR_TIMEOUT_SECONDS,
    READER_SERVICE_ACCOUNT,
    ModelCache,
    ModelCacheArgs,
    cache_uri,
)
from infra.serving.network_policy import network_policies
from infra.serving.rayservice import (
    build_rayservice,
    build_serve_load_balancer,
    endpoint_outputs,
    serve_edge,
)
from infra.serving.serve_app import GcsStoreAccess, Serving, ServingArgs
from infra.serving.serve_config import code_packages, serve_app_args
from infra.settings.model_sources import is_s3_uri
from infra.settings.rules_observability import amp_workspace_region
from infra.settings.stack_config import ConfigError, StackConfig
from infra.settings.table import settings_by_effect

T = TypeVar("T")
# The stack key each component args field is set from: a component reports its args' property paths, and the
# stack reports the key the user sets (config.py checks the keys first; this keeps a rule only a component knows
# in the stack's terms). A path's first part, before any "[index]", is the field.
CONFIG_KEYS = {
    "Network": {"vpc_cidr": "vpcCidr", "azs": "maxAzs"},
    "Cluster": {"api_public_access_cidrs": "apiPublicAccessCidrs"},
    "SystemNodes": {"count": "systemNodeCount"},
    "GpuNodes": {
        "instance_type": "gpuNodeType",
        "capacity_type": "gpuCapacityType",
        "capacity_reservation_id": "capacityReservationId",
    },
    "ModelCache": {"uri": "modelSource"},
}


def in_config_terms(component: str, declare: Callable[[], T]) -> T:
    """Declares a component; its InputPropertiesError becomes a ConfigError naming the stack keys behind the fields."""
    try:
        return declare()
    except InputPropertiesError as error:
        keys: Mapping[str, str] = CONFIG_KEYS.get(component, {})
        problems = []
        for detail in error.errors or []:
            field = detail["property_path"].split("[")[0]
            problems.append(f"{keys.get(field, f'{component}.{field}')} is invalid: {detail['reason']}")
        raise ConfigError(problems) from error


def build_stack(cfg: StackConfig) -> dict[str, Any]:
    """Declares every resource and returns the stack outputs: the one place that maps config keys to resources, each
    component given a small args object, so it can be reused in another stack without this project's config."""
    # Every deploy-time lookup, before any resource: all their problems come in one report.
    facts = preflight(cfg)
    pulumi.log.info(cost_note(cfg, len(facts.placement.azs)))
    if cfg.protect_resources:
        pulumi.log.info(protection_note())
    network = declare_network(cfg, facts)
    cluster = declare_cluster(cfg, facts, network)
    nodes = declare_nodes(cfg, facts, network, cluster)
    model = declare_model_cache(cfg, facts, cluster, nodes)
    gcs_store = declare_gcs_store(cfg, network, nodes) if cfg.gcs_redis else None
    serving = declare_serving(cfg, cluster, nodes, model, gcs_store)
    if cfg.observability:
        declare_observability(cfg, facts, cluster, nodes, model)
    return stack_outputs(cfg, facts, network, cluster, model, serving)


@dataclass(frozen=True)
class Nodes:
    system: SystemNodes
    gpu: GpuNodes
    device_plugins: DevicePlugins


@dataclass(frozen=True)
class Model:
    """Where the workers load the model from."""

    cache_uri: str | None  # the stack's bucket's copy of a Hub repo; None when the model is not mirrored
    cache: ModelCache | None  # the bucket, the mirror and the workers' reader role, for any s3:// source


def declare_network(cfg: StackConfig, facts: DeployFacts) -> Network:
    args = NetworkArgs(
        cluster_name=cfg.cluster_name,
        vpc_cidr=cfg.vpc_cidr,
        azs=facts.placement.azs,
        nat_gateway_per_az=cfg.nat_gateway_per_az,
        protect=cfg.protect_resources,
        tags=cfg.tags,
        region=cfg.region,
    )
    return in_config_terms("Network", lambda: Network("network", args))


def declare_cluster(cfg: StackConfig, facts: DeployFacts, network: Network) -> Cluster:
    args = ClusterArgs(
        cluster_name=cfg.cluster_name,
        kubernetes_version=cfg.kubernetes_version,
        partition=facts.partition,
        vpc_cni_version=facts.addons.vpc_cni,
        kube_proxy_version=facts.addons.kube_proxy,
        vpc_id=network.vpc_id,
        # The control plane's interfaces need the private subnets, not their NAT route (the nodes do):
        # EKS is created while the NAT gateway is, and still goes before the subnets and the internet path.
        private_subnet_ids=list(network.private_subnets_unrouted.values()),
        public_subnet_ids=list(network.public_subnet_ids.values()),
        api_public_access_cidrs=cfg.api_public_access_cidrs,
        admin_principal_arns=cfg.admin_principal_arns,
        control_plane_logging=cfg.control_plane_logging,
        secrets_encryption=cfg.secrets_encryption,
        protect=cfg.protect_resources,
        tags=cfg.tags,
    )
    return in_config_terms("Cluster", lambda: Cluster("cluster", args))


def declare_nodes(cfg: StackConfig, facts: DeployFacts, network: Network, cluster: Cluster) -> Nodes:
    """The system node group under the cluster; the GPU node group with its device plugins and, with autoscaling,
    the Cluster Autoscaler (which runs on the system nodes)."""
    args = SystemNodesArgs(
        instance_type=cfg.system_node_type,
        count=cfg.system_node_count,
        coredns_version=facts.addons.coredns,
        subnet_ids=list(network.private_subnet_ids.values()),
        vpc_id=network.vpc_id,
        tags=cfg.tags,
    )
    system = in_config_terms(
        "SystemNodes", lambda: SystemNodes("system-nodes", args, cluster, opts=pulumi.ResourceOptions(parent=cluster))
    )
    gpu = declare_gpu_nodes(cfg, facts, network, cluster)
    device_plugins = DevicePlugins(
        "device-plugins",
        DevicePluginsArgs(
            nvidia_version=cfg.nvidia_device_plugin_version,
            efa_version=cfg.efa_device_plugin_version,
            region=cfg.region,
        ),
        cluster,
        gpu,
        opts=pulumi.ResourceOptions(parent=gpu),
    )
    # Serve autoscaling adds and removes GPU nodes, and so does a newCluster upgrade's surge.
    if cfg.cluster_autoscaler:
        ClusterAutoscaler(
            "cluster-autoscaler",
            ClusterAutoscalerArgs(
                version=cfg.cluster_autoscaler_version,
                cluster_name=cfg.cluster_name,
                region=cfg.region,
                tags=cfg.tags,
            ),
            cluster,
            depends_on=[system.node_group],
            opts=pulumi.ResourceOptions(parent=gpu),
        )
    return Nodes(system=system, gpu=gpu, device_plugins=device_plugins)


def declare_gpu_nodes(cfg: StackConfig, facts: DeployFacts, network: Network, cluster: Cluster) -> GpuNodes:
    args = GpuNodesArgs(
        node_group_name=cfg.gpu_nodegroup_name,
        instance_type=cfg.gpu_node_type,
        count=cfg.topology.gpu_nodes,
        vpc_id=network.vpc_id,
        subnet_id=network.private_subnet_ids[facts.placement.gpu_az],
        root_volume_gib=cfg.gpu_root_volume_gib,
        capacity_reservation_id=cfg.capacity_reservation_id,
        capacity_type=cfg.gpu_capacity_type,
        max_count=cfg.gpu_node_group_max,
        # With newCluster the Cluster Autoscaler adds the surge and a scale-up raises no minimum above the
        # desired size it left (GpuNodesArgs.min_count).
        min_count=0 if cfg.new_cluster else None,
        tags=cfg.tags,
    )
    return in_config_terms("GpuNodes", lambda: GpuNodes("gpu-nodes", args, cluster))


def declare_model_cache(cfg: StackConfig, facts: DeployFacts, cluster: Cluster, nodes: Nodes) -> Model:
    """The model cache (infra/serving/model_cache.py): a Hub repo mirrored into the stack's bucket, or the user's own
    s3:// source; either way the workers read it with a role that may read that prefix only."""
    bucket = facts.model_cache_bucket
    model_cache_uri = cache_uri(bucket, cfg.model_source) if bucket is not None else None
    workers_source = model_cache_uri or cfg.model_source
    if not is_s3_uri(workers_source):
        return Model(cache_uri=model_cache_uri, cache=None)
    args = ModelCacheArgs(
        uri=workers_source,
        namespace=cfg.namespace,
        partition=facts.partition.name,
        image=cfg.dlc_image,
        repo=cfg.model_source if bucket is not None else None,
        retain_bucket_on_destroy=cfg.model_cache_retain_on_destroy,
        hf_token=cfg.hf_token,
        tags=cfg.tags,
        adapter_prefixes=tuple(model.adapter_prefix for model in cfg.aggregated_models if model.adapters),
    )
    model_cache = in_config_terms(
        "ModelCache",
        lambda: ModelCache("model-cache", args, cluster, opts=pulumi.ResourceOptions(depends_on=[nodes.system])),
    )
    return Model(cache_uri=model_cache_uri, cache=model_cache)


def declare_gcs_store(cfg: StackConfig, network: Network, nodes: Nodes) -> GcsStore:
    """The Ray head's GCS store (headFaultTolerance redis): beside the cluster, in its private subnets, reached from
    the system nodes only. It needs the subnets, not their NAT route."""
    args = GcsStoreArgs(
        vpc_id=network.vpc_id,
        subnet_ids=list(network.private_subnets_unrouted.values()),
        client_security_group_id=nodes.system.security_group_id,
        node_type=cfg.gcs_redis_node_type,
        maintenance_window=cfg.gcs_redis_maintenance_window,
        tags=cfg.tags,
    )
    return in_config_terms("GcsStore", lambda: GcsStore("gcs-store", args))


def declare_serving(
    cfg: StackConfig, cluster: Cluster, nodes: Nodes, model: Model, gcs_store: GcsStore | None
) -> Serving:
    for note in serving_notes(cfg):
        pulumi.log.info(note)
    rollback_wait = rollback_wait_warning(cfg)
    if rollback_wait:
        pulumi.log.warn(rollback_wait)
    cache = model.cache
    # The token only where the Hub is read: the workers, when they load from it; with the model in S3 only the mirror
    # Job has it, from a Secret in its own namespace (infra/serving/model_cache.py).
    workers_hf_token = cfg.hf_token if cache is None else None
    return Serving(
        "serving",
        ServingArgs(
            namespace=cfg.namespace,
            operator=KubeRayOperatorArgs(version=cfg.kuberay_version),
            rayservice=build_rayservice(
                cfg,
                with_hf_token=workers_hf_token is not None,
                model_cache_uri=model.cache_uri,
                service_account=READER_SERVICE_ACCOUNT if cache else None,
            ),
            hf_token=workers_hf_token,
            api_keys=cfg.serve_api_keys,
            load_balancer=build_serve_load_balancer(cfg) if cfg.serve_exposure != "none" else None,
            ready_timeout_seconds=cfg.serve_ready_timeout_minutes * 60,
            changes=settings_by_effect(cfg.settings, cfg.cluster_upgrade_strategy),
            worker_service_account=(READER_SERVICE_ACCOUNT, cache.reader_role_arn) if cache else None,
            waits_for=[cache.mirror] if cache and cache.mirror else [],
            network_policies=network_policies(cfg.namespace, cfg.ray_service_name, cfg.serve_autoscaling),
            prepull_image=cfg.dlc_image,
            gcs_store=GcsStoreAccess(endpoint=gcs_store.primary_endpoint, auth_token=gcs_store.auth_token)
            if gcs_store
            else None,
            code_packages=[package for package in code_packages(serve_app_args(cfg)) if package != serve_auth.CODE],
            edge=serve_edge(cfg),
        ),
        cluster,
        nodes.system,
        nodes.device_plugins,
    )


def deploy_deadline_seconds(cfg: StackConfig, mirrored: bool) -> int:
    """The longest `pulumi up` waits for the app after it creates the serving namespace: the mirror Job's timeout
    where the stack mirrors the model (the RayService waits for it), then the rollout's serveReadyTimeoutMinutes."""
    return (MIRROR_TIMEOUT_SECONDS if mirrored else 0) + cfg.serve_ready_timeout_minutes * 60


def declare_observability(
    cfg: StackConfig, facts: DeployFacts, cluster: Cluster, nodes: Nodes, model: Model
) -> Observability:
    mirrored = model.cache is not None and model.cache.mirror is not None
    remote_write = (
        RemoteWrite(
            workspace_url=cfg.amp_workspace_url,
            region=amp_workspace_region(cfg.amp_workspace_url),
            policy_arn=facts.partition.managed_policy_arn(REMOTE_WRITE_POLICY),
        )
        if cfg.amp_workspace_url
        else None
    )
    receivers = Receivers(
        sns_topic_arn=cfg.alert_sns_topic_arn,
        slack_webhook_url=cfg.alert_slack_webhook_url,
        pagerduty_routing_key=cfg.alert_pagerduty_routing_key,
    )
    pulumi.log.info(alerting_note(cfg, receivers))
    return Observability(
        "observability",
        ObservabilityArgs(
            stack_version=cfg.kube_prometheus_stack_version,
            dcgm_version=cfg.dcgm_exporter_version,
            ray_namespace=cfg.namespace,
            kuberay_namespace=OPERATOR_NAMESPACE,
            alerts=AlertArgs(
                application=cfg.ray_service_name,
                namespace=cfg.namespace,
                ttft_p99_objective_seconds=cfg.ttft_p99_objective_ms / 1000,
                deploy_deadline_seconds=deploy_deadline_seconds(cfg, mirrored),
                runbook_url=cfg.runbook_url,
                head_fault_tolerance=cfg.gcs_redis,
            ),
            ray_autoscaler=cfg.serve_autoscaling,
            remote_write=remote_write,
            receivers=receivers,
            tags=cfg.tags,
        ),
        cluster,
        nodes.system.node_group,
        nodes.gpu.node_group,
    )


def stack_outputs(
    cfg: StackConfig, facts: DeployFacts, network: Network, cluster: Cluster, model: Model, serving: Serving
) -> dict[str, Any]:
    outputs: dict[str, Any] = {
        "region": cfg.region,
        "clusterName": cfg.cluster_name,
        "kubeconfig": cluster.kubeconfig,
        "updateKubeconfigCommand": update_kubeconfig_command(cfg),
        "vpcId": network.vpc_id,
        "availabilityZones": list(facts.placement.azs),
        "gpuAz": facts.placement.gpu_az,
        "systemNodeGroupName": SYSTEM_NODEGROUP_NAME,
        "gpuNodeGroupName": cfg.gpu_nodegroup_name,
        "gpuNodeCount": cfg.topology.gpu_nodes,
        "namespace": cfg.namespace,
        "rayServiceName": cfg.ray_service_name,
        **endpoint_outputs(cfg),
        **(observability_outputs() if cfg.observability else {}),
    }
    if facts.capacity is not None:
        outputs["engineCapacity"] = facts.capacity
    if model.cache_uri is not None:
        # Where the workers load the model from; docs/model-cache.md says how to refresh it.
        outputs["modelCacheUri"] = model.cache_uri
    if serving.load_balancer_hostname is not None:
        outputs["serveLoadBalancerHostname"] = serving.load_balancer_hostname
        # HTTPS only; the certificate names the DNS name clients use, which points at this hostname (docs/security.md).
        outputs["serveLoadBalancerEndpoint"] = pulumi.Output.concat("https://", serving.load_balancer_hostname, "/v1")
    if cfg.serve_api_keys is not None:
        # The first key, for the operator's own calls (tools.verify, the curl in docs/security.md); a secret output.
        outputs["serveApiKey"] = cfg.serve_api_keys.apply(lambda keys: keys[0])
    return outputs
