"""The NVIDIA and EFA device plugins, so pods can request `nvidia.com/gpu` and `vpc.amazonaws.com/efa`.

eksctl installed the EFA plugin silently when EFA was enabled; here both are pinned Helm releases,
scheduled only on the GPU nodes and tolerating their taint.
"""

from __future__ import annotations

from typing import Any

import pulumi

from infra.cluster import Cluster
from infra.config import StackConfig
from infra.helm import Chart, pinned_release
from infra.node_groups import GpuNodes
from infra.regions import efa_plugin_repository
from infra.scheduling import gpu_node_scheduling

NVIDIA_REPO = "https://nvidia.github.io/k8s-device-plugin"
EKS_CHARTS_REPO = "https://aws.github.io/eks-charts"
PLUGIN_NAMESPACE = "kube-system"


def nvidia_plugin_chart(cfg: StackConfig) -> Chart:
    return Chart("nvidia-device-plugin", NVIDIA_REPO, cfg.nvidia_device_plugin_version)


def efa_plugin_chart(cfg: StackConfig) -> Chart:
    return Chart("aws-efa-k8s-device-plugin", EKS_CHARTS_REPO, cfg.efa_device_plugin_version)


def efa_plugin_values(cfg: StackConfig) -> dict[str, Any]:
    # The chart's default image is in us-west-2; pulling from the cluster's region avoids cross-region pulls.
    return {
        "image": {"repository": efa_plugin_repository(cfg.region)},
        **gpu_node_scheduling(),
    }


class DevicePlugins(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        cfg: StackConfig,
        cluster: Cluster,
        gpu_nodes: GpuNodes,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("ray-llm-eks:nodes:DevicePlugins", name, None, opts)
        # Helm waits for the DaemonSets to be ready, which needs the GPU nodes to exist.
        after_nodes = [gpu_nodes.node_group]
        pinned_release(
            "nvidia-device-plugin",
            nvidia_plugin_chart(cfg),
            PLUGIN_NAMESPACE,
            gpu_node_scheduling(),
            cluster.provider,
            self,
            after_nodes,
        )
        pinned_release(
            "efa-device-plugin",
            efa_plugin_chart(cfg),
            PLUGIN_NAMESPACE,
            efa_plugin_values(cfg),
            cluster.provider,
            self,
            after_nodes,
        )
        self.register_outputs({})
