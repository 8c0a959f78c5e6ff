"""What the stack's pods ask of the system node, and what a node type offers them: the one source of each pod's
resources (the components use these dicts as they are), and the check that the system node holds them all at once,
a day-two mirror Job beside a running head included.

Kubernetes schedules by requests: a container with a limit and no request is given its limit as request
(https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#requests-and-limits).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from infra.settings.topology import (
    EVICTION_HARD_MEMORY_MIB,
    KUBE_RESERVED_MEMORY_BASE_MIB,
    KUBE_RESERVED_MEMORY_PER_POD_MIB,
    VM_MEMORY_OVERHEAD,
    kube_reserved_cpu_millis,
)

# The Ray head only coordinates: it fits an m7i.xlarge (4 vCPU, 16 GiB) beside the system pods.
HEAD_RESOURCES = {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "8Gi"}}
# KubeRay's in-tree autoscaler, a sidecar in the head pod with Serve autoscaling.
RAY_AUTOSCALER_RESOURCES = {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "512Mi"}}
# The kuberay-operator chart's default 100m CPU limit throttles reconciles while a model-sized RayService comes up:
# it may burst to 500m, and asks 100m, so the system node keeps room for a mirror Job beside the head.
KUBERAY_OPERATOR_RESOURCES = {
    "requests": {"cpu": "100m", "memory": "512Mi"},
    "limits": {"cpu": "500m", "memory": "512Mi"},
}
# What the metrics stack reserves on the system nodes (the chart sets no requests). CPU limits are left off:
# Prometheus may burst while it compacts.
PROMETHEUS_RESOURCES = {"requests": {"cpu": "300m", "memory": "1536Mi"}, "limits": {"memory": "3Gi"}}
GRAFANA_RESOURCES = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}}
PROMETHEUS_OPERATOR_RESOURCES = {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}
KUBE_STATE_METRICS_RESOURCES = {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}
ALERTMANAGER_RESOURCES = {"requests": {"cpu": "25m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}
# The model mirror streams the Hub's files to S3: network-bound, so a quarter core is its floor, and with no CPU
# limit it uses what the node has idle. Its request must fit beside a running head: a model change runs it then.
MIRROR_RESOURCES = {"requests": {"cpu": "250m", "memory": "2Gi"}, "limits": {"memory": "4Gi"}}
# The image pre-puller (infra/serving/rayservice.py build_prepull_daemonset), on every node: a sleep, which needs
# almost nothing.
PREPULL_RESOURCES = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}}
# The EKS add-ons' pods on every node group, by the requests of their manifests: CoreDNS, 2 replicas of 100m and
# 70Mi (coredns/deployment kubernetes/coredns.yaml.sed, which EKS's add-on keeps), kube-proxy 100m (EKS's
# kube-proxy DaemonSet), aws-node 25m (aws/amazon-vpc-cni-k8s config/master/aws-k8s-cni.yaml).
EKS_ADDON_RESOURCES = {
    "coredns": ({"requests": {"cpu": "100m", "memory": "70Mi"}}, 2),
    "kube-proxy": ({"requests": {"cpu": "100m"}}, 1),
    "aws-node": ({"requests": {"cpu": "25m"}}, 1),
}
# The most pods a system node's kubelet is given, for its kube-reserved memory (infra/settings/topology.py has the
# rest of nodeadm's reservation): Kubernetes' default maxPods, above the ENI-based limit of the small types a system
# node uses (m7i.xlarge 58, m7i.large 29: awslabs/amazon-eks-ami nodeadm/internal/kubelet/eni-max-pods.txt); a type
# with a higher limit has memory to spare. An estimate on the safe side.
SYSTEM_MAX_PODS_BOUND = 110


@dataclass(frozen=True)
class Requests:
    """What pods ask of a node (or what it offers), in millicores and MiB."""

    millicpu: int
    memory_mib: int

    def __add__(self, other: Requests) -> Requests:
        return Requests(self.millicpu + other.millicpu, self.memory_mib + other.memory_mib)

    def __sub__(self, other: Requests) -> Requests:
        return Requests(self.millicpu - other.millicpu, self.memory_mib - other.memory_mib)

    def fits(self, room: Requests) -> bool:
        return self.millicpu <= room.millicpu and self.memory_mib <= room.memory_mib


NOTHING = Requests(0, 0)


def millicpu(quantity: str) -> int:
    return int(quantity[:-1]) if quantity.endswith("m") else round(float(quantity) * 1000)


def mebibytes(quantity: str) -> int:
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return round(float(quantity[: -len(suffix)]) * factor)
    return round(float(quantity) / (1024 * 1024))  # plain bytes


def requests_of(resources: Mapping[str, Any]) -> Requests:
    """A container's requests as the scheduler counts them: each resource's request, else its limit, else none."""
    asked = {**resources.get("limits", {}), **resources.get("requests", {})}
    return Requests(millicpu(asked.get("cpu", "0")), mebibytes(asked.get("memory", "0")))


def allocatable(vcpus: int, memory_mib: int) -> Requests:
    """What the EKS AMI's kubelet leaves to pods on a system node, reserved as infra/settings/topology.py reserves it
    for a GPU node (nodeadm's kube-reserved CPU and memory, the eviction threshold, the VM's memory overhead)."""
    capacity_mib = memory_mib * (1 - VM_MEMORY_OVERHEAD)
    reserved_mib = (
        KUBE_RESERVED_MEMORY_BASE_MIB
        + KUBE_RESERVED_MEMORY_PER_POD_MIB * SYSTEM_MAX_PODS_BOUND
        + EVICTION_HARD_MEMORY_MIB
    )
    return Requests(vcpus * 1000 - kube_reserved_cpu_millis(vcpus), int(capacity_mib - reserved_mib))


def system_node_load(
    *, observability: bool, serve_autoscaling: bool, model_cache: bool, new_cluster: bool = False
) -> dict[str, Requests]:
    """Every pod the system node holds at once on a running stack: the EKS add-ons, the KubeRay operator, the image
    pre-puller, the Ray head (and its autoscaler sidecar), the metrics stack, and the mirror Job a model change runs
    beside the head.
    With `new_cluster` (clusterUpgradeStrategy newCluster) a second head too: KubeRay builds the new RayCluster's head
    beside the active one for an upgrade, and a new cluster that failed keeps its head until the next change, which
    may be a model change that runs the mirror (KubeRay 1.4.0 and 1.7.0 rayservice_controller.go reconcileRayCluster,
    createRayClusterInstance; cleanUpRayClusterInstance deletes a cluster only once it is neither active nor
    pending)."""
    load = {
        f"{name}-{index}": requests_of(resources)
        for name, (resources, replicas) in EKS_ADDON_RESOURCES.items()
        for index in range(replicas)
    }
    load["kuberay-operator"] = requests_of(KUBERAY_OPERATOR_RESOURCES)
    load["image-prepull"] = requests_of(PREPULL_RESOURCES)
    load["ray-head"] = requests_of(HEAD_RESOURCES) + (
        requests_of(RAY_AUTOSCALER_RESOURCES) if serve_autoscaling else NOTHING
    )
    if new_cluster:
        load["ray-head-new-cluster"] = load["ray-head"]
    if observability:
        load |= {
            "prometheus": requests_of(PROMETHEUS_RESOURCES),
            "grafana": requests_of(GRAFANA_RESOURCES),
            "prometheus-operator": requests_of(PROMETHEUS_OPERATOR_RESOURCES),
            "kube-state-metrics": requests_of(KUBE_STATE_METRICS_RESOURCES),
            "alertmanager": requests_of(ALERTMANAGER_RESOURCES),
        }
    if model_cache:
        load["model-mirror"] = requests_of(MIRROR_RESOURCES)
    return load


def unplaced(load: dict[str, Requests], rooms: list[Requests]) -> list[str]:
    """The pods that first-fit-decreasing (largest CPU first, each on the first node with room) leaves over: none
    means the scheduler can place them all, as it places each pod on a node with room for its requests."""
    free = list(rooms)
    left = []
    for name, asked in sorted(load.items(), key=lambda item: (-item[1].millicpu, -item[1].memory_mib, item[0])):
        node = next((index for index, room in enumerate(free) if asked.fits(room)), None)
        if node is None:
            left.append(name)
        else:
            free[node] -= asked
    return left


def system_node_problem(
    system_node_type: str, node_count: int, vcpus: int, memory_mib: int, load: dict[str, Requests]
) -> str | None:
    """The system node group is fixed-size: what must run there together has to fit its nodes, or a pod waits
    Pending with no node to come (the RayService, or `pulumi up` behind the mirror Job, waits with it)."""
    room = allocatable(vcpus, memory_mib)
    left = unplaced(load, [room] * node_count)
    if not left:
        return None
    total = sum(load.values(), NOTHING)
    return (
        f"systemNodeType={system_node_type!r} with systemNodeCount={node_count} is too small: the system nodes must "
        f"hold {total.millicpu}m CPU and {total.memory_mib}Mi of requests at once ({_largest(load)}), each node "
        f"offers {room.millicpu}m and {room.memory_mib}Mi to pods, and {', '.join(left)} would find no room; allowed "
        + (
            "is a larger type or more system nodes (with clusterUpgradeStrategy 'newCluster' they hold a second Ray "
            "head during an upgrade: systemNodeCount 2 of m7i.xlarge holds the default stack), or "
            "clusterUpgradeStrategy 'replace'"
            if "ray-head-new-cluster" in load
            else "is a larger type (m7i.xlarge holds the default stack) or more system nodes"
        )
    )


def _largest(load: dict[str, Requests]) -> str:
    largest = sorted(load.items(), key=lambda item: -item[1].millicpu)[:3]
    return "largest: " + ", ".join(f"{name} {asked.millicpu}m/{asked.memory_mib}Mi" for name, asked in largest)
