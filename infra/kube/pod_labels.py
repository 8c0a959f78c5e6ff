"""The labels and ports by which one part of the stack selects another's pods: KubeRay's Ray pods and operator, and
Prometheus. Plain data, so the PodMonitors (infra/observability) and the NetworkPolicies (infra/serving) name them
from one place.
"""

from __future__ import annotations

# KubeRay labels each Ray pod with its node type (ray-operator/controllers/ray/utils/constant.go RayNodeTypeLabelKey)
# and adds the container port "metrics", 8080, where Ray exports its metrics (common/pod.go MetricsPortName,
# DefaultMetricsPort).
RAY_NODE_TYPE_LABEL = "ray.io/node-type"
RAY_METRICS_PORT = "metrics"
RAY_METRICS_PORT_NUMBER = 8080
# The kuberay-operator chart's pod carries app.kubernetes.io/name: kuberay-operator (helm-chart/kuberay-operator
# templates/deployment.yaml, _helpers.tpl labels).
KUBERAY_OPERATOR_SELECTOR = {"app.kubernetes.io/name": "kuberay-operator"}
# The Prometheus operator sets app.kubernetes.io/name: prometheus on every Prometheus pod, a label podMetadata cannot
# override (vendor/kube-prometheus-stack-88.5.3/crd-prometheuses.yaml, podMetadata).
PROMETHEUS_POD_SELECTOR = {"app.kubernetes.io/name": "prometheus"}
# The head's two other metrics servers, which KubeRay's head PodMonitor scrapes too: the dashboard's (Ray 2.58
# ray/dashboard/consts.py DASHBOARD_METRIC_PORT) and, with serveAutoscaling, the autoscaler sidecar's
# (ray/autoscaler/_private/constants.py AUTOSCALER_METRIC_PORT); docs/observability.md#observability.
RAY_DASHBOARD_METRICS_PORT_NUMBER = 44227
RAY_AUTOSCALER_METRICS_PORT_NUMBER = 44217


def head_metrics_ports(autoscaler: bool) -> tuple[int, ...]:
    """The head's metrics ports besides RAY_METRICS_PORT_NUMBER: the dashboard's, and the autoscaler's with one."""
    return (RAY_DASHBOARD_METRICS_PORT_NUMBER, *((RAY_AUTOSCALER_METRICS_PORT_NUMBER,) if autoscaler else ()))
