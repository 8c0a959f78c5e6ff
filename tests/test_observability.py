"""The metrics stack: pinned charts with values the real charts have, on the right nodes, the PodMonitors and
rules valid against the prometheus-operator CRDs and selected by Prometheus, the Grafana outputs and the off switch
(the room it takes on the system node: tests/test_day_two.py)."""

from __future__ import annotations

import functools
import json

import jsonschema
import promql_parser
import pytest
import yaml
from ray.autoscaler._private.constants import AUTOSCALER_METRIC_PORT
from ray.dashboard.consts import DASHBOARD_METRIC_PORT

from infra.observability.alerts import HEAD_CONTAINER, runbook_anchor
from infra.observability.monitoring import RELEASE_LABEL
from infra.serving.kuberay import OPERATOR_NAMESPACE
from tests.chart_values import chart_defaults, kuberay_operator_defaults, unknown_value_keys
from tests.conftest import SERVE_AUTOSCALING, rejection
from tests.promql import parse
from tests.schemas import crd_schema, custom_resource_validator, kuberay_dir, schema_errors, schemas_dir, strict_schema
from tests.test_docs_links import anchors
from tools.offline import run_stack
from tools.project import PROJECT_DIR

RELEASE = "kubernetes:helm.sh/v3:Release"
POD_MONITOR = "kubernetes:monitoring.coreos.com/v1:PodMonitor"
PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
CHARTS = {
    "kube-prometheus-stack": (
        "kube-prometheus-stack",
        "https://prometheus-community.github.io/helm-charts",
        "88.5.3",
    ),
    "dcgm-exporter": ("dcgm-exporter", "https://nvidia.github.io/dcgm-exporter/helm-charts", "4.8.2"),
}
STACK_DIR = "kube-prometheus-stack-88.5.3"
SYSTEM = {"role": "system"}
# Where kube-prometheus-stack's workloads take their nodeSelector (values.yaml; grafana and kube-state-metrics
# are subcharts, whose values.yaml has it at the top).
SYSTEM_WORKLOADS = (
    ("prometheusOperator",),
    ("prometheusOperator", "admissionWebhooks", "patch"),
    ("prometheus", "prometheusSpec"),
    ("alertmanager", "alertmanagerSpec"),
    ("grafana",),
    ("kube-state-metrics",),
)


def _at(values, path):
    for key in path:
        values = values[key]
    return values


def _stack_values(run):
    return run.get(RELEASE, "observability-kube-prometheus-stack").inputs["values"]


@pytest.mark.parametrize(("release", "chart"), CHARTS.items())
def test_chart_is_pinned_from_its_repository(dev, release, chart):
    inputs = dev.get(RELEASE, f"observability-{release}").inputs
    assert (inputs["chart"], inputs["repositoryOpts"]["repo"], inputs["version"]) == chart
    assert inputs["name"] == release  # Helm knows a release by its name, whatever the Pulumi resource is called


@pytest.mark.parametrize("release", CHARTS)
def test_every_value_key_exists_in_the_real_chart(dev, release):
    inputs = dev.get(RELEASE, f"observability-{release}").inputs
    assert unknown_value_keys(inputs["values"], chart_defaults(inputs["chart"])) == []


def test_a_misspelt_subchart_key_would_be_caught():
    defaults = chart_defaults("kube-prometheus-stack")
    assert unknown_value_keys({"grafana": {"nodeSelectr": {}}}, defaults) == ["grafana.nodeSelectr"]
    assert unknown_value_keys({"grafana": {"nodeSelector": {}, "sidecar": {"dashboards": {}}}}, defaults) == []


def test_the_vendored_subcharts_are_the_versions_the_stack_depends_on():
    """Helm installs the subchart versions the parent's Chart.yaml `dependencies` name."""
    folder = schemas_dir() / STACK_DIR
    dependencies = {
        d["name"]: d["version"] for d in yaml.safe_load((folder / "Chart.yaml").read_text())["dependencies"]
    }
    for subchart in ("grafana", "kube-state-metrics"):
        assert yaml.safe_load((folder / f"{subchart}-Chart.yaml").read_text())["version"] == dependencies[subchart]


@pytest.mark.parametrize("path", SYSTEM_WORKLOADS, ids=".".join)
def test_metrics_stack_runs_on_the_system_nodes(dev, path):
    assert _at(_stack_values(dev), path)["nodeSelector"] == SYSTEM


def test_dcgm_exporter_runs_on_the_gpu_nodes_only(dev):
    values = dev.get(RELEASE, "observability-dcgm-exporter").inputs["values"]
    assert values["nodeSelector"] == {"role": "gpu-worker"}
    assert values["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_dcgm_exporter_waits_for_the_stack_and_the_gpu_nodes(dev):
    """Its ServiceMonitor (the chart default, values.yaml serviceMonitor.enabled) needs the stack's CRDs."""
    dependencies = dev.get(RELEASE, "observability-dcgm-exporter").dependencies
    assert dev.get(RELEASE, "observability-kube-prometheus-stack").urn in dependencies
    assert dev.get("eks:index:ManagedNodeGroup", "gpu-nodes-gpu").urn in dependencies
    assert chart_defaults("dcgm-exporter")["serviceMonitor"]["enabled"] is True


def test_prometheus_selects_our_monitors_and_rules_by_the_release_label(dev):
    """With `*SelectorNilUsesHelmValues: true` (the defaults) the chart's Prometheus selects monitors and rules
    labelled `release: <release name>` only (templates/prometheus/prometheus.yaml)."""
    spec = chart_defaults("kube-prometheus-stack")["prometheus"]["prometheusSpec"]
    for kind in ("podMonitor", "serviceMonitor", "rule"):
        assert spec[f"{kind}SelectorNilUsesHelmValues"] is True
    release = {"release": dev.get(RELEASE, "observability-kube-prometheus-stack").inputs["name"]}
    assert RELEASE_LABEL == release
    for monitor in [*dev.of_type(POD_MONITOR), *dev.of_type(PROMETHEUS_RULE)]:
        assert monitor.inputs["metadata"]["labels"] == release
    assert (
        dev.get(RELEASE, "observability-dcgm-exporter").inputs["values"]["serviceMonitor"]["additionalLabels"]
        == release
    )


@pytest.mark.parametrize(
    ("kind", "crd"), [(POD_MONITOR, "crd-podmonitors.yaml"), (PROMETHEUS_RULE, "crd-prometheusrules.yaml")]
)
def test_custom_resources_are_valid_against_the_crds_the_stack_installs(dev, kind, crd):
    validator = custom_resource_validator(schemas_dir() / STACK_DIR / crd)
    resources = dev.of_type(kind)
    assert resources
    for resource in resources:
        manifest = {key: resource.inputs[key] for key in ("apiVersion", "kind", "metadata", "spec")}
        assert schema_errors(validator, manifest) == [], resource.name


def test_a_misspelt_pod_monitor_field_would_be_caught(dev):
    validator = custom_resource_validator(schemas_dir() / STACK_DIR / "crd-podmonitors.yaml")
    monitor = dev.get(POD_MONITOR, "observability-podmonitor-ray-head").inputs
    broken = {**monitor, "spec": {**monitor["spec"], "podMetricEndpoints": monitor["spec"]["podMetricsEndpoints"]}}
    broken = {key: broken[key] for key in ("apiVersion", "kind", "metadata", "spec")}
    assert any("podMetricEndpoints" in error for error in schema_errors(validator, broken))


@pytest.mark.parametrize(("monitor", "node_type"), [("ray-head", "head"), ("ray-workers", "worker")])
def test_ray_pod_monitors_scrape_the_port_kuberay_adds_to_every_ray_pod(dev, monitor, node_type):
    """KubeRay 1.4.0 labels each Ray pod `ray.io/node-type: head|worker` and `ray.io/cluster`, adds the container
    port `metrics` (8080) and starts Ray with `--metrics-export-port=8080` (ray-operator/controllers/ray/utils/
    constant.go, common/pod.go); its own PodMonitors select and relabel them so (config/prometheus/podMonitor.yaml)."""
    spec = dev.get(POD_MONITOR, f"observability-podmonitor-{monitor}").inputs["spec"]
    assert spec["namespaceSelector"] == {"matchNames": ["inference"]}
    assert spec["selector"] == {"matchLabels": {"ray.io/node-type": node_type}}
    endpoint = spec["podMetricsEndpoints"][0]
    assert endpoint["port"] == "metrics"
    assert endpoint["relabelings"] == [RAY_CLUSTER_COPY]


def kuberay_reference_monitors() -> dict[str, dict]:
    """KubeRay 1.4.0's own PodMonitors by the node type they select (its config/prometheus/podMonitor.yaml)."""
    documents = yaml.safe_load_all((schemas_dir() / "kuberay-v1.4.0" / "prometheus-podMonitor.yaml").read_text())
    return {doc["spec"]["selector"]["matchLabels"]["ray.io/node-type"]: doc for doc in documents}


def head_targets(run) -> list[str]:
    """Where each of the head PodMonitor's endpoints scrapes: the port name, or the port its address is moved to."""
    targets = []
    for endpoint in run.get(POD_MONITOR, "observability-podmonitor-ray-head").inputs["spec"]["podMetricsEndpoints"]:
        moved = [r for r in endpoint["relabelings"] if r["targetLabel"] == "__address__"]
        assert [r for r in endpoint["relabelings"] if r not in moved] == [RAY_CLUSTER_COPY]
        if moved:
            ((relabeling,),) = (moved,)
            assert relabeling["sourceLabels"] == ["__meta_kubernetes_pod_ip"]
            targets.append(relabeling["replacement"].removeprefix("$1:"))
        else:
            targets.append(endpoint["port"])
    return targets


def test_the_head_is_scraped_where_kuberays_own_head_monitor_scrapes_it():
    """KubeRay's head PodMonitor scrapes `metrics`, `as-metrics` (the autoscaler, 44217) and `dash-metrics` (the
    dashboard, 44227): Ray 2.58's AUTOSCALER_METRIC_PORT and DASHBOARD_METRIC_PORT (ray/autoscaler/_private/
    constants.py, ray/dashboard/consts.py, read from the installed Ray). The head's container declares neither port,
    so both are the `metrics` target readdressed; the autoscaler's only where the head runs Ray's autoscaler sidecar
    (serveAutoscaling: ray/autoscaler/_private/kuberay/run_autoscaler.py starts its metrics server)."""
    reference = [e["port"] for e in kuberay_reference_monitors()["head"]["spec"]["podMetricsEndpoints"]]
    assert reference == ["metrics", "as-metrics", "dash-metrics"]
    assert head_targets(run_stack()) == ["metrics", str(DASHBOARD_METRIC_PORT)]
    assert head_targets(run_stack(SERVE_AUTOSCALING)) == [
        "metrics",
        str(DASHBOARD_METRIC_PORT),
        str(AUTOSCALER_METRIC_PORT),
    ]
    assert (DASHBOARD_METRIC_PORT, AUTOSCALER_METRIC_PORT) == (44227, 44217)


def test_the_head_declares_no_port_the_readdressed_targets_would_duplicate(dev):
    """A readdressed target is unique only while no declared port of the pod is the same number (the PodMonitor CRD,
    portNumber: "beware of duplicate targets")."""
    (rayservice,) = dev.of_type("kubernetes:ray.io/v1:RayService")
    head = rayservice.inputs["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert {p["containerPort"] for p in head["ports"]} & {DASHBOARD_METRIC_PORT, AUTOSCALER_METRIC_PORT} == set()


def test_operator_pod_monitor_scrapes_the_operators_metrics_port(kuberay_stack):
    """The kuberay-operator chart's pod: label app.kubernetes.io/name from `kuberay-operator.name` (the values'
    nameOverride, kuberay-operator: templates/_helpers.tpl), /metrics on the container port `http` (8080), metrics
    on by default (helm-chart/kuberay-operator templates/deployment.yaml and values.yaml, vendored: 1.4.0, 1.7.0)."""
    run, version = kuberay_stack.run, kuberay_stack.version
    spec = run.get(POD_MONITOR, "observability-podmonitor-kuberay-operator").inputs["spec"]
    assert spec["namespaceSelector"] == {
        "matchNames": [run.get(RELEASE, "serving-kuberay-kuberay-operator").inputs["namespace"]]
    }
    assert spec["namespaceSelector"] == {"matchNames": [OPERATOR_NAMESPACE]}
    assert spec["selector"] == {"matchLabels": {"app.kubernetes.io/name": "kuberay-operator"}}
    assert spec["podMetricsEndpoints"] == [{"port": "http"}]
    defaults = kuberay_operator_defaults(version)
    assert defaults["nameOverride"] == "kuberay-operator"
    assert defaults["metrics"]["enabled"] is True
    template = (kuberay_dir(version) / "kuberay-operator-deployment.yaml").read_text()
    assert 'app.kubernetes.io/name: {{ include "kuberay-operator.name" . }}' in template
    assert "- name: http\n              containerPort: 8080" in template


RAY_CLUSTER_COPY = {
    "action": "replace",
    "sourceLabels": ["__meta_kubernetes_pod_label_ray_io_cluster"],
    "targetLabel": "ray_io_cluster",
}


def _rules(run):
    (rule,) = run.of_type(PROMETHEUS_RULE)
    return {r["alert"]: r for group in rule.inputs["spec"]["groups"] for r in group["rules"]}


def test_the_alerts_an_operator_must_act_on(dev):
    assert sorted(_rules(dev)) == sorted(
        [
            "ServeAppDeployFailed",
            "ServeAppNotRunning",
            "PrefillNoHealthyReplica",
            "DecodeNoHealthyReplica",
            "ModelNoHealthyReplica",
            "KvTransferFailures",
            "TtftP99OverObjective",
            "GpuMemoryExhausted",
            "RayHeadRestarted",
            "RayHeadNotReady",
        ]
    )


def test_each_alert_carries_its_runbook_section_and_no_link_without_a_runbook_url(dev):
    """Each alert's description is its `## <AlertName>` section of docs/runbook.md; a repository path is no link a
    page can open, so without runbookUrl the alerts carry none."""
    runbook = (PROJECT_DIR / "docs" / "runbook.md").read_text()
    for name, rule in _rules(dev).items():
        section = runbook.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        assert rule["annotations"]["description"] == " ".join(section.split())
        assert "runbook_url" not in rule["annotations"]


def test_each_alerts_runbook_anchor_is_a_heading_of_the_runbook():
    """The anchor runbook_url ends in is one GitHub gives a heading of docs/runbook.md (tests/test_docs_links.py
    `anchors`, GitHub's rules), so the link opens the alert's section."""
    rules = _rules(run_stack({"runbookUrl": "https://github.com/example/ray-llm-eks/blob/main/docs/runbook.md"}))
    headings = anchors(PROJECT_DIR / "docs" / "runbook.md")
    for name, rule in rules.items():
        url, _, anchor = rule["annotations"]["runbook_url"].partition("#")
        assert (url, anchor) == (
            "https://github.com/example/ray-llm-eks/blob/main/docs/runbook.md",
            runbook_anchor(name),
        )
        assert anchor in headings, name


def test_serve_app_alerts_watch_the_deployed_application(dev):
    """Serve's status gauge: 1=DEPLOY_FAILED, 6=RUNNING (ray/serve/_private/application_state.py)."""
    rules = _rules(dev)
    assert rules["ServeAppDeployFailed"]["expr"].startswith(
        '(ray_serve_application_status{application="ray-llm"} == 1) and on () '
    )
    assert 'ray_serve_application_status{application="ray-llm"} != 6' in rules["ServeAppNotRunning"]["expr"]


def test_side_alerts_watch_the_deployments_rays_pd_builder_names(dev):
    """Ray Serve LLM's PD builder names them Prefill:<model> and Decode:<model>
    (ray/llm/_internal/serve/serving_patterns/prefill_decode/builder.py)."""
    rules = _rules(dev)
    assert 'deployment=~"Prefill:.*"' in rules["PrefillNoHealthyReplica"]["expr"]
    assert 'deployment=~"Decode:.*"' in rules["DecodeNoHealthyReplica"]["expr"]


@pytest.mark.parametrize("alert", ["PrefillNoHealthyReplica", "DecodeNoHealthyReplica"])
def test_no_healthy_replica_alerts_count_zero_only_when_none_is_reported(dev, alert):
    """`a or vector(0)` adds the 0 only where `a` has no series of the same labels (Prometheus' `or`,
    https://prometheus.io/docs/prometheus/latest/querying/operators/#logical-set-binary-operators): the count must
    carry no labels, as `vector(0)` does, or the alert would fire beside every healthy side."""
    gated = parse(_rules(dev)[alert]["expr"])
    either = gated.lhs.expr.lhs.expr
    assert str(either.op) == "or"
    assert isinstance(either.lhs, promql_parser.AggregateExpr) and either.lhs.modifier is None
    assert str(either.rhs) == "vector(0)"


@pytest.mark.parametrize(
    "alert",
    ["ServeAppDeployFailed", "ServeAppNotRunning", "PrefillNoHealthyReplica", "DecodeNoHealthyReplica"],
)
def test_the_apps_alerts_wait_for_the_app_or_the_deadline(dev, alert):
    """Armed once the app has been RUNNING or the serving namespace is older than the deadline (serveReadyTimeoutMinutes
    and, with the model mirrored, the mirror Job's 2 h): dev waits 45 + 120 minutes. tests/test_alert_rules.py plays
    it through promtool."""
    expr = _rules(dev)[alert]["expr"]
    assert expr.endswith(
        ' and on () ((max(max_over_time(ray_serve_application_status{application="ray-llm"}[9900s])) == 6) or '
        '(time() - max(kube_namespace_created{namespace="inference"}) > 9900))'
    )


def test_the_deadline_follows_the_ready_timeout_and_the_mirror():
    """Without the model cache nothing is mirrored: the deadline is serveReadyTimeoutMinutes alone."""
    rules = _rules(run_stack({"modelCache": False, "serveReadyTimeoutMinutes": 60}))
    assert "[3600s]" in rules["ServeAppNotRunning"]["expr"] and "> 3600))" in rules["ServeAppNotRunning"]["expr"]


def test_kv_failure_alert_counts_first_seen_counters_and_a_missing_counter_as_zero(dev):
    """A sum of an absent counter is no result, and `x + <no result>` is no result: each term falls back to 0. A
    counter's first sample counts through `first_seen` (Ray exports a counter from its first increment)."""
    terms = _rules(dev)["KvTransferFailures"]["expr"].removesuffix(" > 0").split(" + ")
    counters = ("ray_vllm_nixl_num_failed_transfers_total", "ray_vllm_nixl_num_failed_notifications_total")
    assert terms == [
        term
        for counter in counters
        for term in (
            f"(sum(increase({counter}[10m])) or vector(0))",
            f"(sum((({counter} unless {counter} offset 10m) and on (job, instance) (up offset 10m == 1)))"
            " or vector(0))",
        )
    ]


def test_ttft_objective_is_the_configured_one():
    assert _rules(run_stack({"ttftP99ObjectiveMs": 1500}))["TtftP99OverObjective"]["expr"].endswith("> 1.5")


def test_head_restart_alert_watches_the_rayservice_head_container(dev):
    (rayservice,) = dev.of_type("kubernetes:ray.io/v1:RayService")
    head = rayservice.inputs["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert head["name"] == HEAD_CONTAINER
    assert f'container="{HEAD_CONTAINER}"' in _rules(dev)["RayHeadRestarted"]["expr"]
    assert 'namespace="inference"' in _rules(dev)["RayHeadRestarted"]["expr"]


def test_outputs_open_the_grafana_and_prometheus_services_the_chart_creates(dev):
    """The release name is the chart's name, so the chart's fullname is the release name
    (templates/_helpers.tpl kube-prometheus-stack.fullname); Grafana's Service is `<release>-grafana` on port 80
    (grafana chart values.yaml service.port), Prometheus' `<fullname>-prometheus` on 9090."""
    release = dev.get(RELEASE, "observability-kube-prometheus-stack").inputs["name"]
    assert dev.outputs["grafanaPortForwardCommand"] == (
        f"kubectl -n monitoring port-forward svc/{release}-grafana 3000:80"
    )
    assert f"secret {release}-grafana " in dev.outputs["grafanaPasswordCommand"]
    assert dev.outputs["prometheusPortForwardCommand"] == (
        f"kubectl -n monitoring port-forward svc/{release}-prometheus 9090:9090"
    )
    grafana = chart_defaults("kube-prometheus-stack")["grafana"]
    assert grafana["service"]["port"] == 80 and "adminPassword" not in grafana


def test_observability_off_declares_none_of_it():
    run = run_stack({"observability": False})
    assert [r.name for r in run.of_type(RELEASE) if r.name in CHARTS] == []
    assert run.of_type(POD_MONITOR) == run.of_type(PROMETHEUS_RULE) == []
    assert not [key for key in run.outputs if "grafana" in key or "prometheus" in key]


AMP_WORKSPACE = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d/"
# The console's "remote write URL", where the key wants the workspace's endpoint.
AMP_REMOTE_WRITE_URL = f"{AMP_WORKSPACE}api/v1/remote_write"


@functools.cache
def _amp_run():
    return run_stack({"ampWorkspaceUrl": AMP_WORKSPACE})


def test_prometheus_remote_writes_to_the_workspace_signed_for_its_region():
    """The workspace's remote-write URL is its endpoint + api/v1/remote_write, signed with SigV4 for the workspace's
    region (https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-onboard-ingest-metrics-existing-Prometheus.html)."""
    remote_write = _stack_values(_amp_run())["prometheus"]["prometheusSpec"]["remoteWrite"]
    assert remote_write == [{"url": f"{AMP_WORKSPACE}api/v1/remote_write", "sigv4": {"region": "us-east-1"}}]


def test_remote_write_is_valid_against_the_prometheus_crd():
    """kube-prometheus-stack passes prometheusSpec.remoteWrite to the Prometheus resource's spec.remoteWrite."""
    schema = crd_schema(schemas_dir() / STACK_DIR / "crd-prometheuses.yaml")
    item = strict_schema(schema["properties"]["spec"]["properties"]["remoteWrite"]["items"])
    for remote_write in _stack_values(_amp_run())["prometheus"]["prometheusSpec"]["remoteWrite"]:
        assert schema_errors(jsonschema.Draft202012Validator(item), remote_write) == []


def test_prometheus_writes_through_a_role_only_its_service_account_assumes():
    """IRSA on the chart's Prometheus service account, `<fullname>-prometheus` (templates/_helpers.tpl), with the
    AWS managed policy that allows aps:RemoteWrite only."""
    run = _amp_run()
    prometheus = _stack_values(run)["prometheus"]
    role_arn = prometheus["serviceAccount"]["annotations"]["eks.amazonaws.com/role-arn"]
    # The role's ARN as IAM gives it, `arn:aws:iam::<account>:role/<name>` (the offline role name:
    # tools/offline_aws.py).
    assert role_arn.startswith("arn:aws:iam::") and role_arn.endswith(":role/observability-remote-write-role")
    role = run.get("aws:iam/role:Role", "observability-remote-write").inputs
    (statement,) = json.loads(role["assumeRolePolicy"])["Statement"]
    (sub,) = [value for key, value in statement["Condition"]["StringEquals"].items() if key.endswith(":sub")]
    assert sub == "system:serviceaccount:monitoring:kube-prometheus-stack-prometheus"
    attachment = run.get("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "observability-remote-write").inputs
    assert attachment["policyArn"] == "arn:aws:iam::aws:policy/AmazonPrometheusRemoteWriteAccess"


def test_no_remote_write_without_a_workspace(dev):
    assert "remoteWrite" not in _stack_values(dev)["prometheus"]["prometheusSpec"]
    assert "serviceAccount" not in _stack_values(dev)["prometheus"]
    assert [r for r in dev.of_type("aws:iam/role:Role") if "remote-write" in r.name] == []


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"ampWorkspaceUrl": AMP_REMOTE_WRITE_URL},
            f"ampWorkspaceUrl={AMP_REMOTE_WRITE_URL!r} is invalid",
        ),
        ({"ampWorkspaceUrl": AMP_WORKSPACE, "observability": False}, "is invalid with observability=false"),
    ],
    ids=["remote-write-url-instead-of-the-endpoint", "without-observability"],
)
def test_a_bad_workspace_setting_is_rejected(overrides, message):
    assert message in str(rejection(overrides))
