"""The NVIDIA and EFA device plugins, so pods can request `nvidia.com/gpu` and `vpc.amazonaws.com/efa`.

eksctl installed the EFA plugin silently when EFA was enabled; here both are pinned Helm releases,
scheduled only on the GPU nodes and tolerating their taint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from infra.cluster.eks import Cluster
from infra.cluster.helm import Chart, pinned_release
from infra.components import Children
from infra.kube.scheduling import gpu_node_scheduling
from infra.nodes.node_groups import GpuNodes
from infra.settings.regions import efa_plugin_repository

NVIDIA_REPO = "https://nvidia.github.io/k8s-device-plugin"
EKS_CHARTS_REPO = "https://aws.github.io/eks-charts"
PLUGIN_NAMESPACE = "kube-system"


@dataclass(frozen=True)
class DevicePluginsArgs:
    """The two device plugins' charts and where the EFA plugin's image comes from; the nodes they run on are the
    GpuNodes they are given (the EFA plugin's DaemonSet runs on that group's instance type only)."""

    nvidia_version: str  # of the nvidia-device-plugin chart, e.g. "0.20.0"
    efa_version: str  # of the aws-efa-k8s-device-plugin chart, e.g. "v0.5.30"
    region: str  # the cluster's region: its ECR serves the EFA plugin's image


# The chart pins its DaemonSet to the instance types of a list it ships (a required node affinity on this
# label, aws/eks-charts stable/aws-efa-k8s-device-plugin templates/daemonset.yaml); a GPU type EC2 reports
# with EFA but missing from that list would get no plugin and no `vpc.amazonaws.com/efa`. Naming the GPU
# type makes the list exactly the nodes the plugin is for.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


def efa_plugin_values(region: str, gpu_node_type: str) -> dict[str, Any]:
    # The chart's default image is in us-west-2; pulling from the cluster's region avoids cross-region pulls.
    return {
        "image": {"repository": efa_plugin_repository(region)},
        "supportedInstanceLabels": {"keys": [INSTANCE_TYPE_LABEL], "values": [gpu_node_type]},
        **gpu_node_scheduling(),
    }


class DevicePlugins(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        args: DevicePluginsArgs,
        cluster: Cluster,
        gpu_nodes: GpuNodes,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("ray-llm-eks:nodes:DevicePlugins", name, None, opts)
        children = Children(self, name)
        releases = {
            "nvidia-device-plugin": (
                Chart("nvidia-device-plugin", NVIDIA_REPO, args.nvidia_version),
                gpu_node_scheduling(),
            ),
            "efa-device-plugin": (
                Chart("aws-efa-k8s-device-plugin", EKS_CHARTS_REPO, args.efa_version),
                efa_plugin_values(args.region, gpu_nodes.shape.instance_type),
            ),
        }
        for release, (chart, values) in releases.items():
            # Helm waits for the DaemonSets to be ready, which needs the GPU nodes to exist.
            pinned_release(children, release, chart, PLUGIN_NAMESPACE, values, cluster.provider, [gpu_nodes.node_group])
        self.register_outputs({})
