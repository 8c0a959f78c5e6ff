"""Whether the system nodes hold every pod that runs there at once, a day-two mirror Job beside a running head
included: the pods' requests (infra/kube/pod_resources.py) against what each node leaves to pods
(infra/kube/node_allocatable.py)."""

from __future__ import annotations

from infra.kube.node_allocatable import NOTHING, SYSTEM_MAX_PODS_BOUND, Requests, allocatable, requests_of
from infra.kube.pod_resources import (
    ALERTMANAGER_RESOURCES,
    EKS_ADDON_RESOURCES,
    GRAFANA_RESOURCES,
    HEAD_RESOURCES,
    KUBE_STATE_METRICS_RESOURCES,
    KUBERAY_OPERATOR_RESOURCES,
    MIRROR_RESOURCES,
    PREPULL_RESOURCES,
    PROMETHEUS_OPERATOR_RESOURCES,
    PROMETHEUS_RESOURCES,
    RAY_AUTOSCALER_RESOURCES,
)
from infra.settings.stack_config import StackConfig


def system_node_load(cfg: StackConfig) -> dict[str, Requests]:
    """Every pod the system node holds at once on a running stack: the EKS add-ons, the KubeRay operator, the image
    pre-puller, the Ray head (and its autoscaler sidecar), the metrics stack, and the mirror Job a model change runs
    beside the head. With newCluster a second head too: a new or failed RayCluster's head stays beside the active
    one until KubeRay deletes it (docs/changes.md#keeping-serving-through-a-cluster-shape-change-newcluster)."""
    load = {
        f"{name}-{index}": requests_of(resources)
        for name, (resources, replicas) in EKS_ADDON_RESOURCES.items()
        for index in range(replicas)
    }
    load["kuberay-operator"] = requests_of(KUBERAY_OPERATOR_RESOURCES)
    load["image-prepull"] = requests_of(PREPULL_RESOURCES)
    load["ray-head"] = requests_of(HEAD_RESOURCES) + (
        requests_of(RAY_AUTOSCALER_RESOURCES) if cfg.serve_autoscaling else NOTHING
    )
    if cfg.new_cluster:
        load["ray-head-new-cluster"] = load["ray-head"]
    if cfg.observability:
        load |= {
            "prometheus": requests_of(PROMETHEUS_RESOURCES),
            "grafana": requests_of(GRAFANA_RESOURCES),
            "prometheus-operator": requests_of(PROMETHEUS_OPERATOR_RESOURCES),
            "kube-state-metrics": requests_of(KUBE_STATE_METRICS_RESOURCES),
            "alertmanager": requests_of(ALERTMANAGER_RESOURCES),
        }
    if cfg.model_cache:
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
    room = allocatable(vcpus, memory_mib, SYSTEM_MAX_PODS_BOUND)
    left = unplaced(load, [room] * node_count)
    if not left:
        return None
    total = sum(load.values(), NOTHING)
    heaviest = sorted(load.items(), key=lambda item: -item[1].millicpu)[:3]
    largest = ", ".join(f"{name} {asked.millicpu}m/{asked.memory_mib}Mi" for name, asked in heaviest)
    return (
        f"systemNodeType={system_node_type!r} with systemNodeCount={node_count} is too small: the system nodes must "
        f"hold {total.millicpu}m CPU and {total.memory_mib}Mi of requests at once (largest: {largest}), each node "
        f"offers {room.millicpu}m and {room.memory_mib}Mi to pods, and {', '.join(left)} would find no room; allowed "
        + (
            "is a larger type or more system nodes (with clusterUpgradeStrategy 'newCluster' they hold a second Ray "
            "head during an upgrade: systemNodeCount 2 of m7i.xlarge holds the default stack), or "
            "clusterUpgradeStrategy 'replace'"
            if "ray-head-new-cluster" in load
            else "is a larger type (m7i.xlarge holds the default stack) or more system nodes"
        )
    )
