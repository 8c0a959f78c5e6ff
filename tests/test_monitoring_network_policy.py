"""The monitoring namespace's own NetworkPolicies (issue 51): no pod outside the metrics stack can silence an alert
or read Prometheus. Read by the project's engine (tests/network_policy_engine.py) and NP-Guard's analyzer on the
rendered policies, against the pods as their operators and charts label them."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.kube.namespaces import MONITORING_NAMESPACE
from infra.observability.network_policy import (
    ALERTMANAGER_POD_SELECTOR,
    ALERTMANAGER_PORT,
    CONFIG_RELOADER_PORT,
    DCGM_EXPORTER_POD_SELECTOR,
    DCGM_EXPORTER_PORT,
    GRAFANA_POD_SELECTOR,
    GRAFANA_PORT,
    KUBE_STATE_METRICS_POD_SELECTOR,
    KUBE_STATE_METRICS_PORT,
    OPERATOR_PORT,
    PROMETHEUS_OPERATOR_POD_SELECTOR,
    PROMETHEUS_WEB_PORT,
)
from tests.network_policy_engine import Pod, allows
from tests.test_in_cluster_security import analyzer_connectivity, policies, prometheus_pod, ray_pod
from tools.offline import StackRun

KUBE_PROMETHEUS = Path(__file__).parent.parent / "vendor/kube-prometheus-stack-88.5.3"
PORTS = sorted(
    {ALERTMANAGER_PORT, PROMETHEUS_WEB_PORT, CONFIG_RELOADER_PORT, GRAFANA_PORT, DCGM_EXPORTER_PORT, OPERATOR_PORT}
)


def monitoring_pods(run: StackRun) -> dict[str, Pod]:
    selectors = {
        "alertmanager": ALERTMANAGER_POD_SELECTOR,
        "grafana": GRAFANA_POD_SELECTOR,
        "kube-state-metrics": KUBE_STATE_METRICS_POD_SELECTOR,
        "dcgm-exporter": DCGM_EXPORTER_POD_SELECTOR,
        "operator": PROMETHEUS_OPERATOR_POD_SELECTOR,
    }
    pods = {name: Pod(MONITORING_NAMESPACE, dict(selector)) for name, selector in selectors.items()}
    return {"prometheus": prometheus_pod(run), **pods}


def strangers(run: StackRun) -> dict[str, Pod]:
    """A GPU worker (it runs the model's code), a pod elsewhere, an unlabelled pod in the monitoring namespace."""
    return {
        "gpu-worker": ray_pod(run, "worker"),
        "stranger": Pod("default", {"app": "anything"}),
        "monitoring-debug": Pod(MONITORING_NAMESPACE, {"app": "debug"}),
    }


@pytest.mark.parametrize("stranger", ["gpu-worker", "stranger", "monitoring-debug"])
def test_no_other_pod_can_silence_alertmanager_or_read_prometheus(dev, stranger):
    """A POST to Alertmanager's /api/v2/silences needs no credentials; Prometheus' API neither (issue 51)."""
    source, pods = strangers(dev)[stranger], monitoring_pods(dev)
    assert not allows(policies(dev), source, pods["alertmanager"], ALERTMANAGER_PORT)
    assert not allows(policies(dev), source, pods["prometheus"], PROMETHEUS_WEB_PORT)
    assert [p for p in PORTS if allows(policies(dev), source, pods["grafana"], p)] == []


def test_alertmanagers_api_answers_prometheus_and_grafana_only(dev):
    pods = monitoring_pods(dev)
    admitted = [n for n, pod in pods.items() if allows(policies(dev), pod, pods["alertmanager"], ALERTMANAGER_PORT)]
    assert admitted == ["prometheus", "grafana"]


def test_prometheus_answers_grafana_and_itself_only(dev):
    pods = monitoring_pods(dev)
    admitted = [n for n, pod in pods.items() if allows(policies(dev), pod, pods["prometheus"], PROMETHEUS_WEB_PORT)]
    assert admitted == ["prometheus", "grafana"]


def test_prometheus_scrapes_every_target_in_the_namespace(dev):
    pods = monitoring_pods(dev)
    targets = {
        "prometheus": (PROMETHEUS_WEB_PORT, CONFIG_RELOADER_PORT),
        "alertmanager": (ALERTMANAGER_PORT, CONFIG_RELOADER_PORT),
        "grafana": (GRAFANA_PORT,),
        "kube-state-metrics": (KUBE_STATE_METRICS_PORT,),
        "dcgm-exporter": (DCGM_EXPORTER_PORT,),
        "operator": (OPERATOR_PORT,),
    }
    for name, ports in targets.items():
        assert all(allows(policies(dev), pods["prometheus"], pods[name], port) for port in ports), name


def test_the_scraped_ports_are_the_charts(dev):
    """kube-prometheus-stack 88.5.3 values.yaml: the operator's TLS port, the config reloaders' web port, Grafana's
    target port; kube-state-metrics' service port; the DCGM exporter's service port (vendored values)."""
    import yaml

    values = yaml.safe_load((KUBE_PROMETHEUS / "values.yaml").read_text())
    assert values["prometheusOperator"]["tls"]["internalPort"] == OPERATOR_PORT
    assert values["prometheus"]["service"]["reloaderWebPort"] == CONFIG_RELOADER_PORT
    assert values["grafana"]["sidecar"]["datasources"]["alertmanager"]["enabled"] is True
    grafana = yaml.safe_load((KUBE_PROMETHEUS / "grafana-values.yaml").read_text())
    assert grafana["service"]["targetPort"] == GRAFANA_PORT
    ksm = yaml.safe_load((KUBE_PROMETHEUS / "kube-state-metrics-values.yaml").read_text())
    assert ksm["service"]["port"] == KUBE_STATE_METRICS_PORT
    dcgm = yaml.safe_load((KUBE_PROMETHEUS.parent / "dcgm-exporter-4.8.2/values.yaml").read_text())
    assert (dcgm["service"]["port"], dcgm["hostNetwork"]) == (DCGM_EXPORTER_PORT, False)


def test_the_operators_webhook_port_answers_the_api_server(dev):
    """The API server's admission calls come from the control plane's interfaces in the cluster's subnets, which no
    pod selector names: the webhook port alone is open, and nothing else of the operator."""
    operator = monitoring_pods(dev)["operator"]
    stranger = strangers(dev)["stranger"]
    assert [p for p in PORTS if allows(policies(dev), stranger, operator, p)] == [OPERATOR_PORT]


def test_np_guards_analyzer_finds_the_same_paths_into_the_monitoring_pods(dev, tmp_path):
    """NP-Guard's Network Config Analyzer on the rendered policies: into Alertmanager and Prometheus, exactly the
    paths above."""
    pods = {**monitoring_pods(dev), **strangers(dev)}
    connectivity = analyzer_connectivity(dev, pods, tmp_path)
    guarded = {f"{MONITORING_NAMESPACE}/{n}": n for n in ("alertmanager", "prometheus")}
    into = {(source, guarded[target]): c for (source, target), c in connectivity.items() if target in guarded}
    prometheus, grafana = f"{MONITORING_NAMESPACE}/prometheus", f"{MONITORING_NAMESPACE}/grafana"
    assert into == {
        (prometheus, "alertmanager"): f"{{protocols:TCP,dst_ports:{CONFIG_RELOADER_PORT},{ALERTMANAGER_PORT}}}",
        (grafana, "alertmanager"): f"{{protocols:TCP,dst_ports:{ALERTMANAGER_PORT}}}",
        (grafana, "prometheus"): f"{{protocols:TCP,dst_ports:{PROMETHEUS_WEB_PORT}}}",
    }
