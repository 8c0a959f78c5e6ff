"""The monitoring namespace's NetworkPolicies: every ingress there is denied but what the metrics stack needs.

Otherwise any pod could silence every alert or read every series. Each allowed path, its port and the charts'
sources, and why the rest is not admitted: docs/security.md#port-by-port."""

from __future__ import annotations

from typing import Any

from infra.components import ingress_policy, tcp_ports
from infra.kube.namespaces import MONITORING_NAMESPACE
from infra.kube.pod_labels import PROMETHEUS_POD_SELECTOR

ALERTMANAGER_POD_SELECTOR = {"app.kubernetes.io/name": "alertmanager"}
GRAFANA_POD_SELECTOR = {"app.kubernetes.io/name": "grafana"}
KUBE_STATE_METRICS_POD_SELECTOR = {"app.kubernetes.io/name": "kube-state-metrics"}
DCGM_EXPORTER_POD_SELECTOR = {"app.kubernetes.io/name": "dcgm-exporter"}
PROMETHEUS_OPERATOR_POD_SELECTOR = {"app": "kube-prometheus-stack-operator"}
ALERTMANAGER_PORT = 9093
PROMETHEUS_WEB_PORT = 9090
CONFIG_RELOADER_PORT = 8080
GRAFANA_PORT = 3000
KUBE_STATE_METRICS_PORT = 8080
DCGM_EXPORTER_PORT = 9400
OPERATOR_PORT = 10250


def _from(*selectors: dict[str, str]) -> list[dict[str, Any]]:
    """Pods of the monitoring namespace itself."""
    return [{"podSelector": {"matchLabels": dict(selector)}} for selector in selectors]


def monitoring_network_policies() -> list[dict[str, Any]]:
    namespace, prometheus = MONITORING_NAMESPACE, PROMETHEUS_POD_SELECTOR
    scraped = {
        "grafana": (GRAFANA_POD_SELECTOR, GRAFANA_PORT),
        "kube-state-metrics": (KUBE_STATE_METRICS_POD_SELECTOR, KUBE_STATE_METRICS_PORT),
        "dcgm-exporter": (DCGM_EXPORTER_POD_SELECTOR, DCGM_EXPORTER_PORT),
    }
    # Alertmanager and Prometheus: their web port from Prometheus and Grafana, their config reloader from Prometheus.
    served = {
        "alertmanager-from-prometheus-and-grafana": (ALERTMANAGER_POD_SELECTOR, ALERTMANAGER_PORT),
        "prometheus-from-grafana-and-itself": (prometheus, PROMETHEUS_WEB_PORT),
    }
    return [
        # Its own name: tools.render writes one file per kind and name, beside the serving namespace's deny.
        ingress_policy("monitoring-default-deny-ingress", namespace, {}, []),
        *(
            ingress_policy(
                name,
                namespace,
                pods,
                [
                    {"from": _from(prometheus, GRAFANA_POD_SELECTOR), "ports": tcp_ports(port)},
                    {"from": _from(prometheus), "ports": tcp_ports(CONFIG_RELOADER_PORT)},
                ],
            )
            for name, (pods, port) in served.items()
        ),
        *(
            ingress_policy(
                f"prometheus-to-{name}", namespace, pods, [{"from": _from(prometheus), "ports": tcp_ports(port)}]
            )
            for name, (pods, port) in scraped.items()
        ),
        ingress_policy(
            "api-server-to-operator-webhook",
            namespace,
            PROMETHEUS_OPERATOR_POD_SELECTOR,
            [{"ports": tcp_ports(OPERATOR_PORT)}],
        ),
    ]
