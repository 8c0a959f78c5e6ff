"""The whole stack, top-down like the architecture: network, cluster, GPU nodes, serving."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from infra.alerts import AlertArgs
from infra.capacity import (
    CapacityError,
    EngineCapacity,
    capacity_problem,
    kv_layout,
    vllm_default_gpu_memory_utilization,
)
from infra.changes import settings_by_effect
from infra.cluster import Cluster, ClusterArgs, check_admin_principals, discover_partition, update_kubeconfig_command
from infra.cluster_autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
from infra.config import StackConfig, amp_workspace_region
from infra.device_plugins import DevicePlugins, DevicePluginsArgs
from infra.kuberay import OPERATOR_NAMESPACE, KubeRayOperatorArgs
from infra.model_cache import (
    READER_SERVICE_ACCOUNT,
    ModelCache,
    ModelCacheArgs,
    cache_bucket_name,
    cache_uri,
    is_hub_repo,
    is_s3_uri,
)
from infra.model_source import ModelFacts, ModelSourceError, read_model
from infra.network import Network, NetworkArgs, discover_placement
from infra.node_groups import GpuNodes, GpuNodesArgs, SystemNodes, SystemNodesArgs
from infra.observability import (
    REMOTE_WRITE_POLICY,
    Observability,
    ObservabilityArgs,
    RemoteWrite,
    observability_outputs,
)
from infra.offerings import check_offerings
from infra.quantization import checkpoint_problems, checkpoint_quantization, loaded_weight_bytes
from infra.quota import check_gpu_vcpu_quota
from infra.rayservice import build_rayservice, build_serve_load_balancer, endpoint_outputs
from infra.scheduling import SYSTEM_NODEGROUP_NAME
from infra.serve_app import Serving, ServingArgs
from infra.serve_config import application_name


def engine_capacity(cfg: StackConfig, model: ModelFacts) -> dict[str, Any] | None:
    """What each side's engine holds, printed in preview; raises CapacityError where not one request of
    maxModelLen fits. None, with a warning, where the model's layout or weights are not known."""
    tp = cfg.topology.tensor_parallel_size
    layout = kv_layout(model.config, tp, cfg.kv_cache_dtype) if model.config else None
    if layout is None or model.tensors is None:  # a path in the image or an unreadable S3 config warned already
        if model.config:
            pulumi.log.warn(
                f"modelSource={cfg.model_source!r}: capacity not estimated (its "
                f"{'layer kinds' if layout is None else 'safetensors weights'} are not known here)"
            )
        return None
    # A pre-quantized checkpoint is loaded as its tensors are stored, whatever <side>Quantization says.
    online = checkpoint_quantization(model.config) is None
    summaries = {}
    for side in ("prefill", "decode"):
        capacity = EngineCapacity(
            layout=layout,
            tensor_parallel_size=tp,
            gpu_memory_mib=cfg.topology.node.gpu_memory_mib,
            gpu_memory_utilization=vllm_default_gpu_memory_utilization(),
            weight_bytes=loaded_weight_bytes(model.tensors, online and getattr(cfg, side).quantization == "fp8"),
            max_model_len=cfg.max_model_len,
        )
        problem = capacity_problem(capacity)
        if problem:
            raise CapacityError(f"{side}: {problem}")
        pulumi.log.info(f"capacity of {side} {capacity.describe()}")
        summaries[side] = capacity.summary()
    return summaries


def build_stack(cfg: StackConfig) -> dict[str, Any]:
    """Declares every resource and returns the stack outputs.

    The one place that maps config keys to resources: each component gets a small args object of
    what it needs, so it can be reused in another stack without this project's config.
    """
    # The lookups can reject the config (partition, the deploying identity among the admins, gpuAz, Kubernetes
    # version, system node type, the GPU quota); they run before any resource.
    partition = discover_partition(cfg)
    check_admin_principals(cfg)
    placement = discover_placement(cfg)
    addons = check_offerings(cfg)
    check_gpu_vcpu_quota(cfg)
    capacity = None
    if cfg.model_preflight:
        model = read_model(cfg.model_source, cfg.max_model_len, cfg.hf_token_value, cfg.language_model_only)
        for warning in model.warnings:
            pulumi.log.warn(warning)
        sides = {side: getattr(cfg, side).quantization or "none" for side in ("prefill", "decode")}
        problems = checkpoint_problems(cfg.model_source, model.config or {}, sides, cfg.topology.node.gpu_name)
        if problems:
            raise ModelSourceError("; ".join(problems))
        capacity = engine_capacity(cfg, model)
    network = Network(
        "network",
        NetworkArgs(
            cluster_name=cfg.cluster_name,
            vpc_cidr=cfg.vpc_cidr,
            azs=placement.azs,
            nat_gateway_per_az=cfg.nat_gateway_per_az,
            protect=cfg.protect_resources,
            tags=cfg.tags,
            region=cfg.region,
        ),
    )
    cluster = Cluster(
        "cluster",
        ClusterArgs(
            cluster_name=cfg.cluster_name,
            kubernetes_version=cfg.kubernetes_version,
            partition=partition,
            vpc_cni_version=addons.vpc_cni,
            kube_proxy_version=addons.kube_proxy,
            api_public_access_cidrs=cfg.api_public_access_cidrs,
            admin_principal_arns=cfg.admin_principal_arns,
            control_plane_logging=cfg.control_plane_logging,
            secrets_encryption=cfg.secrets_encryption,
            protect=cfg.protect_resources,
            tags=cfg.tags,
        ),
        network,
    )
    system_nodes = SystemNodes(
        "system-nodes",
        SystemNodesArgs(
            instance_type=cfg.system_node_type,
            count=cfg.system_node_count,
            coredns_version=addons.coredns,
            tags=cfg.tags,
        ),
        cluster,
        network,
        opts=pulumi.ResourceOptions(parent=cluster),
    )
    gpu_nodes = GpuNodes(
        "gpu-nodes",
        GpuNodesArgs(
            node_group_name=cfg.gpu_nodegroup_name,
            instance_type=cfg.gpu_node_type,
            count=cfg.gpu_node_count,
            az=placement.gpu_az,
            efa_interfaces=cfg.topology.node.efa_interfaces,
            root_volume_gib=cfg.gpu_root_volume_gib,
            capacity_reservation_id=cfg.capacity_reservation_id,
            capacity_type=cfg.gpu_capacity_type,
            max_count=cfg.topology.most_gpu_nodes,
            gpu_name=cfg.topology.node.gpu_name,
            tags=cfg.tags,
        ),
        cluster,
        network,
    )
    device_plugins = DevicePlugins(
        "device-plugins",
        DevicePluginsArgs(
            nvidia_version=cfg.nvidia_device_plugin_version,
            efa_version=cfg.efa_device_plugin_version,
            region=cfg.region,
            gpu_node_type=cfg.gpu_node_type,
        ),
        cluster,
        gpu_nodes,
        opts=pulumi.ResourceOptions(parent=gpu_nodes),
    )
    if cfg.serve_autoscaling:
        ClusterAutoscaler(
            "cluster-autoscaler",
            ClusterAutoscalerArgs(
                version=cfg.cluster_autoscaler_version,
                cluster_name=cfg.cluster_name,
                region=cfg.region,
                tags=cfg.tags,
            ),
            cluster,
            depends_on=[system_nodes.node_group],
            opts=pulumi.ResourceOptions(parent=gpu_nodes),
        )
    # The model cache (infra/model_cache.py): a Hub repo mirrored into the stack's bucket, or the user's own s3://
    # source; either way the workers read it with a role that may read that prefix only.
    mirrored = cfg.model_cache and is_hub_repo(cfg.model_source)
    model_uri = (
        cache_uri(
            cache_bucket_name(cfg.cluster_name, aws.get_caller_identity().account_id, cfg.region), cfg.model_source
        )
        if mirrored
        else cfg.model_source
    )
    model_cache = None
    if is_s3_uri(model_uri):
        model_cache = ModelCache(
            "model-cache",
            ModelCacheArgs(
                uri=model_uri,
                namespace=cfg.namespace,
                partition=partition.name,
                image=cfg.dlc_image,
                repo=cfg.model_source if mirrored else None,
                bucket_force_destroy=cfg.model_cache_force_destroy,
                hf_token=cfg.hf_token,
                tags=cfg.tags,
            ),
            cluster,
            opts=pulumi.ResourceOptions(depends_on=[system_nodes]),
        )
    serving = Serving(
        "serving",
        ServingArgs(
            namespace=cfg.namespace,
            operator=KubeRayOperatorArgs(version=cfg.kuberay_version),
            rayservice=build_rayservice(
                cfg,
                with_hf_token=cfg.hf_token is not None,
                model_uri=model_uri,
                service_account=READER_SERVICE_ACCOUNT if model_cache else None,
            ),
            hf_token=cfg.hf_token,
            api_keys=cfg.serve_api_keys,
            load_balancer=build_serve_load_balancer(cfg) if cfg.serve_exposure != "none" else None,
            ready_timeout_seconds=cfg.serve_ready_timeout_minutes * 60,
            changes=settings_by_effect(cfg.settings),
            worker_service_account=(READER_SERVICE_ACCOUNT, model_cache.reader_role_arn) if model_cache else None,
            waits_for=[model_cache.mirror] if model_cache and model_cache.mirror else [],
        ),
        cluster,
        system_nodes,
        device_plugins,
    )
    if cfg.observability:
        Observability(
            "observability",
            ObservabilityArgs(
                stack_version=cfg.kube_prometheus_stack_version,
                dcgm_version=cfg.dcgm_exporter_version,
                ray_namespace=cfg.namespace,
                kuberay_namespace=OPERATOR_NAMESPACE,
                alerts=AlertArgs(
                    application=application_name(cfg),
                    namespace=cfg.namespace,
                    ttft_p99_objective_seconds=cfg.ttft_p99_objective_ms / 1000,
                ),
                remote_write=RemoteWrite(
                    workspace_url=cfg.amp_workspace_url,
                    region=amp_workspace_region(cfg.amp_workspace_url),
                    policy_arn=partition.managed_policy_arn(REMOTE_WRITE_POLICY),
                )
                if cfg.amp_workspace_url
                else None,
                tags=cfg.tags,
            ),
            cluster,
            system_nodes.node_group,
            gpu_nodes.node_group,
        )

    outputs: dict[str, Any] = {
        "region": cfg.region,
        "clusterName": cfg.cluster_name,
        "kubeconfig": cluster.kubeconfig,
        "updateKubeconfigCommand": update_kubeconfig_command(cfg),
        "vpcId": network.vpc_id,
        "availabilityZones": list(placement.azs),
        "gpuAz": placement.gpu_az,
        "systemNodeGroupName": SYSTEM_NODEGROUP_NAME,
        "gpuNodeGroupName": gpu_nodes.node_group_name,
        "namespace": cfg.namespace,
        "rayServiceName": cfg.ray_service_name,
        **endpoint_outputs(cfg),
        **(observability_outputs() if cfg.observability else {}),
    }
    if capacity is not None:
        outputs["engineCapacity"] = capacity
    if mirrored:
        # Where the workers load the model from; README, Model cache, says how to refresh it.
        outputs["modelCacheUri"] = model_uri
    if serving.load_balancer_hostname is not None:
        outputs["serveLoadBalancerHostname"] = serving.load_balancer_hostname
        # HTTPS only; the certificate names the DNS name clients use, which points at this hostname (README).
        outputs["serveLoadBalancerEndpoint"] = pulumi.Output.concat("https://", serving.load_balancer_hostname, "/v1")
    if cfg.serve_api_keys is not None:
        # The first key, for the operator's own calls (tools.verify, the README's curl); a secret output.
        outputs["serveApiKey"] = cfg.serve_api_keys.apply(lambda keys: keys[0])
    return outputs
