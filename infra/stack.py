"""The whole stack, top-down like the architecture: network, cluster, GPU nodes, serving."""

from __future__ import annotations

from typing import Any

import pulumi

from infra.cluster import Cluster, discover_partition, update_kubeconfig_command
from infra.config import StackConfig
from infra.device_plugins import DevicePlugins
from infra.network import Network, discover_placement
from infra.node_groups import SYSTEM_NODEGROUP_NAME, GpuNodes, SystemNodes
from infra.quota import check_gpu_vcpu_quota
from infra.rayservice import endpoint_outputs
from infra.serve_app import Serving


def build_stack(cfg: StackConfig) -> dict[str, Any]:
    """Declares every resource and returns the stack outputs."""
    # The lookups can reject the config (partition, gpuAz, the GPU quota); they run before any resource.
    partition = discover_partition(cfg)
    placement = discover_placement(cfg)
    check_gpu_vcpu_quota(cfg)
    network = Network("network", cfg, placement)
    cluster = Cluster("cluster", cfg, network, partition)
    system_nodes = SystemNodes("system-nodes", cfg, cluster, network, opts=pulumi.ResourceOptions(parent=cluster))
    gpu_nodes = GpuNodes("gpu-nodes", cfg, cluster, network, placement)
    device_plugins = DevicePlugins(
        "device-plugins", cfg, cluster, gpu_nodes, opts=pulumi.ResourceOptions(parent=gpu_nodes)
    )
    serving = Serving("serving", cfg, cluster, system_nodes, device_plugins)

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
    }
    if serving.load_balancer_hostname is not None:
        outputs["serveLoadBalancerHostname"] = serving.load_balancer_hostname
    return outputs
