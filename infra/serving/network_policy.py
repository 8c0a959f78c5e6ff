"""The serving namespace's NetworkPolicies (networking.k8s.io/v1), as plain dicts: every ingress to a pod there is
denied but the paths serving needs, enforced by the VPC CNI's agent (docs/security.md#inside-the-cluster,
docs/security.md#port-by-port)."""

from __future__ import annotations

from typing import Any

from infra.components import ingress_policy, tcp_ports
from infra.kube.namespaces import MONITORING_NAMESPACE
from infra.kube.pod_labels import (
    KUBERAY_OPERATOR_SELECTOR,
    PROMETHEUS_POD_SELECTOR,
    RAY_METRICS_PORT_NUMBER,
    RAY_NODE_TYPE_LABEL,
    head_metrics_ports,
)
from infra.kube.scheduling import OPERATOR_NAMESPACE
from infra.serving.rayservice import (
    DASHBOARD_AGENT_GRPC_PORT,
    DASHBOARD_AGENT_PORT,
    DASHBOARD_PORT,
    GCS_PORT,
    INSTANCE_LABEL,
    NODE_MANAGER_PORT,
    OBJECT_MANAGER_PORT,
    RUNTIME_ENV_AGENT_PORT,
    SERVE_PORT,
    WORKER_PORTS,
)
from infra.serving.serve_config import NIXL_SIDE_CHANNEL_BASES

# Kubernetes labels every namespace with its own name (https://kubernetes.io/docs/reference/labels-annotations-taints/
# #kubernetes-io-metadata-name), the only label a namespace is sure to carry.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
DEFAULT_DENY = "default-deny-ingress"


def pods_in_namespace(namespace: str, pods: dict[str, str]) -> dict[str, Any]:
    return {
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: namespace}},
        "podSelector": {"matchLabels": dict(pods)},
    }


def _tcp_range(first: int, last: int) -> dict[str, Any]:
    return {"protocol": "TCP", "port": first, "endPort": last}


def nixl_side_channel_ranges() -> list[tuple[int, int]]:
    """Each side's side-channel ports, first and last: from its base up to the next side's, the room Ray Serve LLM
    leaves each (a side's replicas times their GPUs stay far below it)."""
    bases = sorted(NIXL_SIDE_CHANNEL_BASES.values())
    room = bases[1] - bases[0]
    return [(base, base + room - 1) for base in bases]


def network_policies(namespace: str, ray_service: str, ray_autoscaler: bool = False) -> list[dict[str, Any]]:
    """The default deny and the allowed paths, for the Ray pods of `ray_service` in `namespace` (their pod templates
    carry INSTANCE_LABEL=ray_service, infra/serving/rayservice.py; a NewCluster upgrade's second cluster too);
    `ray_autoscaler`: the head runs Ray's autoscaler sidecar, whose metrics Prometheus scrapes."""
    ray_pods = {INSTANCE_LABEL: ray_service}
    head = {**ray_pods, RAY_NODE_TYPE_LABEL: "head"}
    prometheus = [pods_in_namespace(MONITORING_NAMESPACE, PROMETHEUS_POD_SELECTOR)]
    operator = [pods_in_namespace(OPERATOR_NAMESPACE, KUBERAY_OPERATOR_SELECTOR)]
    return [
        ingress_policy(DEFAULT_DENY, namespace, {}, []),
        *ray_pods_to_each_other(namespace, ray_service),
        ingress_policy("anyone-to-serve", namespace, ray_pods, [{"ports": tcp_ports(SERVE_PORT)}]),
        ingress_policy(
            "prometheus-to-metrics",
            namespace,
            ray_pods,
            [{"from": prometheus, "ports": tcp_ports(RAY_METRICS_PORT_NUMBER)}],
        ),
        ingress_policy(
            "prometheus-to-head-metrics",
            namespace,
            head,
            [{"from": prometheus, "ports": tcp_ports(*head_metrics_ports(ray_autoscaler))}],
        ),
        ingress_policy(
            "operator-to-dashboard", namespace, head, [{"from": operator, "ports": tcp_ports(DASHBOARD_PORT)}]
        ),
    ]


def ray_pods_to_each_other(namespace: str, ray_service: str) -> list[dict[str, Any]]:
    """What the Ray pods reach of each other, port by port: every pod's raylet, object manager and worker range; the
    head's GCS; the workers' agents from the head; NIXL's side channel between the workers."""
    ray_pods = {INSTANCE_LABEL: ray_service}
    head = {**ray_pods, RAY_NODE_TYPE_LABEL: "head"}
    workers = {**ray_pods, RAY_NODE_TYPE_LABEL: "worker"}
    node_ports = [*tcp_ports(NODE_MANAGER_PORT, OBJECT_MANAGER_PORT), _tcp_range(*WORKER_PORTS)]
    nixl_ports = [_tcp_range(*ports) for ports in nixl_side_channel_ranges()]
    agent_ports = tcp_ports(DASHBOARD_AGENT_PORT, DASHBOARD_AGENT_GRPC_PORT, RUNTIME_ENV_AGENT_PORT)
    paths = (
        ("ray-pods-to-ray-nodes", ray_pods, ray_pods, node_ports),
        ("ray-pods-to-gcs", head, ray_pods, tcp_ports(GCS_PORT)),
        ("head-to-agents", workers, head, agent_ports),
        ("workers-to-nixl", workers, workers, nixl_ports),
    )
    return [
        ingress_policy(name, namespace, to, [{"from": [{"podSelector": {"matchLabels": source}}], "ports": ports}])
        for name, to, source, ports in paths
    ]
