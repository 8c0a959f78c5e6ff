"""Where the alerts go (infra/observability/receivers.py): the Alertmanager config the stack renders, as Helm merges it
over kube-prometheus-stack 88.5.3's defaults, checked by Alertmanager's own `amtool check-config`, routed by
`amtool config routes test`, and run by a real Alertmanager that delivers a stack alert to stand-ins for SNS, Slack
and PagerDuty. Debian's and Ubuntu's `prometheus-alertmanager` package ships both binaries; without them those tests
skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import copy
import functools
import http.server
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.observability.alerts import GROUP, GROUP_LABEL
from infra.observability.monitoring import ALERTMANAGER_SERVICE_ACCOUNT
from infra.observability.receivers import PAGERDUTY_FILE, SECRET_NAME, SECRETS_MOUNT, SLACK_FILE
from tests.chart_values import chart_defaults, helm_merged, unknown_value_keys
from tests.conftest import rejection
from tests.schemas import schemas_dir
from tools.offline import StackRun, run_stack

RELEASE = "kubernetes:helm.sh/v3:Release"
SECRET = "kubernetes:core/v1:Secret"
PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
STACK_DIR = "kube-prometheus-stack-88.5.3"
# A topic in another region than the dev stack's (sa-east-1): Alertmanager must sign for the topic's.
TOPIC = "arn:aws:sns:us-east-1:123456789012:ray-llm-alerts"
SLACK_URL = "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX"
ROUTING_KEY = "0123456789abcdef0123456789ABCDEF"
RUNBOOK = "https://github.com/example/ray-llm-eks/blob/main/docs/runbook.md"
RECEIVERS = {
    "alertSnsTopicArn": TOPIC,
    "alertSlackWebhookUrl": SLACK_URL,
    "alertPagerDutyRoutingKey": ROUTING_KEY,
    "runbookUrl": RUNBOOK,
}
SECRET_KEYS = ("alertSlackWebhookUrl", "alertPagerDutyRoutingKey")


def binary(*names: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    message = f"{names[0]} not found: apt-get install prometheus-alertmanager (Debian and Ubuntu ship it)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must check the Alertmanager config with Alertmanager's own tools; {message}")
    pytest.skip(message)


@functools.cache
def _receivers_run() -> StackRun:
    return run_stack(RECEIVERS, secret_keys=SECRET_KEYS)


@pytest.fixture(scope="module")
def receivers_run() -> StackRun:
    return _receivers_run()


def stack_values(run: StackRun) -> dict[str, Any]:
    return run.get(RELEASE, "observability-kube-prometheus-stack").inputs["values"]


def rendered_config(run: StackRun) -> dict[str, Any]:
    """`alertmanager.config` as the chart renders it into the Alertmanager's Secret: the values Helm merges over the
    chart's defaults, written with `toYaml` (templates/alertmanager/secret.yaml, tplConfig false)."""
    template = (schemas_dir() / STACK_DIR / "templates-alertmanager-secret.yaml").read_text()
    assert "alertmanager.yaml: {{ toYaml .Values.alertmanager.config | b64enc | quote }}" in template
    defaults = chart_defaults("kube-prometheus-stack")["alertmanager"]["config"]
    assert defaults["route"]["receiver"] == "null"
    # A copy: a test may change its config without changing the run's inputs.
    return copy.deepcopy(helm_merged(defaults, stack_values(run)["alertmanager"].get("config", {})))


def write_config(config: dict[str, Any], folder: Path) -> Path:
    path = folder / "alertmanager.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


# --- without receivers ---


def test_without_receivers_the_chart_keeps_its_null_receiver_and_preview_says_so(dev, monkeypatch):
    said: list[str] = []
    monkeypatch.setattr("pulumi.log.info", lambda message, *args, **kwargs: said.append(message))
    run_stack()
    assert "config" not in stack_values(dev)["alertmanager"]
    assert [r for r in dev.of_type(SECRET) if r.name == f"observability-{SECRET_NAME}"] == []
    (note,) = [message for message in said if "alert" in message]
    assert "the alerts go nowhere: Alertmanager has only the chart's `null` receiver" in note
    assert "the alert rules run in the in-cluster Prometheus" in note


def test_with_managed_prometheus_preview_says_the_rules_still_run_in_cluster(monkeypatch):
    """Amazon Managed Service for Prometheus takes the remote writes; recording and alerting rules run where they are
    loaded, and the stack loads them into the in-cluster Prometheus only (its PrometheusRule)."""
    said: list[str] = []
    monkeypatch.setattr("pulumi.log.info", lambda message, *args, **kwargs: said.append(message))
    workspace = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1a2b3c4d/"
    run_stack({"ampWorkspaceUrl": workspace})
    (note,) = [message for message in said if "alert rules" in message]
    assert "run in the in-cluster Prometheus, not in the Amazon Managed Service for Prometheus workspace it " in note
    assert workspace in note


# --- the rendered values ---


def test_the_receivers_values_are_keys_the_chart_has(receivers_run):
    assert unknown_value_keys(stack_values(receivers_run), chart_defaults("kube-prometheus-stack")) == []


def test_no_credential_is_in_the_helm_values(receivers_run):
    """Helm keeps a release's values, and Pulumi stores the Release's inputs in the stack's state: the URL and the key
    live in a Kubernetes Secret (a Pulumi secret input) the Alertmanager mounts."""
    release = receivers_run.get(RELEASE, "observability-kube-prometheus-stack")
    text = json.dumps(release.inputs)
    assert SLACK_URL not in text and ROUTING_KEY not in text
    secret = receivers_run.get(SECRET, f"observability-{SECRET_NAME}")
    assert secret.inputs["metadata"] == {"name": SECRET_NAME, "namespace": "monitoring"}
    assert secret.inputs["stringData"] == {SLACK_FILE: SLACK_URL, PAGERDUTY_FILE: ROUTING_KEY}
    assert "stringData" in secret.secret_inputs


def test_alertmanager_mounts_the_secret_the_config_reads(receivers_run):
    """The chart passes alertmanagerSpec.secrets to the Alertmanager resource
    (templates/alertmanager/alertmanager.yaml), whose pods mount each at /etc/alertmanager/secrets/<secret>
    (prometheus-operator v0.93.1's Alertmanager CRD, spec.secrets, as kube-prometheus-stack 88.5.3 ships it;
    values.yaml says the same of alertmanagerSpec.secrets)."""
    template = (schemas_dir() / STACK_DIR / "templates-alertmanager-alertmanager.yaml").read_text()
    assert "toYaml .Values.alertmanager.alertmanagerSpec.secrets" in template
    values = (schemas_dir() / STACK_DIR / "values.yaml").read_text()
    assert f"The Secrets are mounted into {SECRETS_MOUNT}/." in values
    assert stack_values(receivers_run)["alertmanager"]["alertmanagerSpec"]["secrets"] == [SECRET_NAME]
    (receiver,) = [r for r in rendered_config(receivers_run)["receivers"] if r["name"] != "null"]
    assert receiver["slack_configs"][0]["api_url_file"] == f"{SECRETS_MOUNT}/{SECRET_NAME}/{SLACK_FILE}"
    assert receiver["pagerduty_configs"][0]["routing_key_file"] == f"{SECRETS_MOUNT}/{SECRET_NAME}/{PAGERDUTY_FILE}"


def test_sns_is_signed_for_the_topics_region(receivers_run):
    """Alertmanager takes the region from sigv4.region (notify/sns/sns.go, `awsconfig.WithRegion`): set, it asks no
    one; the nodes' IMDS hop limit 1 would leave a pod without IMDS's answer."""
    (receiver,) = [r for r in rendered_config(receivers_run)["receivers"] if r["name"] != "null"]
    (sns,) = receiver["sns_configs"]
    assert (sns["topic_arn"], sns["sigv4"]) == (TOPIC, {"region": "us-east-1"})


def test_alertmanager_publishes_through_a_role_only_its_service_account_assumes(receivers_run):
    """IRSA on the chart's Alertmanager service account, `<fullname>-alertmanager` (templates/_helpers.tpl
    kube-prometheus-stack.alertmanager.serviceAccountName), the one the Alertmanager resource names
    (templates/alertmanager/alertmanager.yaml), with sns:Publish on the topic only."""
    template = (schemas_dir() / STACK_DIR / "templates-alertmanager-alertmanager.yaml").read_text()
    assert 'serviceAccountName: {{ template "kube-prometheus-stack.alertmanager.serviceAccountName" . }}' in template
    account = stack_values(receivers_run)["alertmanager"]["serviceAccount"]
    role = receivers_run.get("aws:iam/role:Role", "observability-alertmanager").inputs
    # The role's ARN as IAM gives it, `arn:aws:iam::<account>:role/<name>` (the offline role name:
    # tools/offline_aws.py).
    assert account["annotations"]["eks.amazonaws.com/role-arn"].endswith(":role/observability-alertmanager-role")
    (statement,) = json.loads(role["assumeRolePolicy"])["Statement"]
    (sub,) = [value for key, value in statement["Condition"]["StringEquals"].items() if key.endswith(":sub")]
    assert sub == f"system:serviceaccount:monitoring:{ALERTMANAGER_SERVICE_ACCOUNT}"
    policy = json.loads(
        receivers_run.get("aws:iam/rolePolicy:RolePolicy", "observability-alertmanager-sns").inputs["policy"]
    )
    assert policy["Statement"] == [{"Effect": "Allow", "Action": "sns:Publish", "Resource": TOPIC}]


def test_no_role_without_a_topic():
    run = run_stack({"alertSlackWebhookUrl": SLACK_URL}, secret_keys=("alertSlackWebhookUrl",))
    assert "serviceAccount" not in stack_values(run)["alertmanager"]
    assert [r for r in run.of_type("aws:iam/role:Role") if "alertmanager" in r.name] == []


# --- Alertmanager's own tools over the rendered config ---


def test_amtool_accepts_the_rendered_config(receivers_run, tmp_path):
    path = write_config(rendered_config(receivers_run), tmp_path)
    result = subprocess.run([binary("amtool"), "check-config", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout and "2 receivers" in result.stdout


def test_amtool_would_catch_a_broken_receiver(receivers_run, tmp_path):
    config = rendered_config(receivers_run)
    config["receivers"][1]["slack_configs"][0]["api_url"] = SLACK_URL  # beside api_url_file: mutually exclusive
    path = write_config(config, tmp_path)
    assert subprocess.run([binary("amtool"), "check-config", str(path)], capture_output=True).returncode != 0


def routed_to(config_path: Path, labels: dict[str, str]) -> str:
    result = subprocess.run(
        [binary("amtool"), "config", "routes", "test", f"--config.file={config_path}"]
        + [f"{key}={value}" for key, value in labels.items()],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip()


def test_the_stacks_alerts_route_to_its_receiver_and_the_charts_to_null(receivers_run, tmp_path):
    """Only the stack's own rules (labelled alert_group) reach the receivers; the chart's default rules, and its
    always-firing Watchdog, stay with `null`."""
    path = write_config(rendered_config(receivers_run), tmp_path)
    (rule,) = receivers_run.of_type(PROMETHEUS_RULE)
    for alert in rule.inputs["spec"]["groups"][0]["rules"]:
        assert alert["labels"][GROUP_LABEL] == GROUP
        assert routed_to(path, {"alertname": alert["alert"], **alert["labels"]}) == "ray-llm-eks"
    for chart_alert in ("Watchdog", "KubePodCrashLooping", "TargetDown"):
        assert routed_to(path, {"alertname": chart_alert, "severity": "warning", "namespace": "x"}) == "null"


# --- a real Alertmanager delivering one alert ---


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Stands in for Slack, PagerDuty and SNS: records each request, answers as each does on success."""

    received: list[tuple[str, dict[str, str], bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        # The AWS SDK posts to the endpoint's root: the stand-in's /sns/.
        path = self.path.rstrip("/")
        self.received.append((path, dict(self.headers), body))
        if path == "/sns":
            answer = b"<PublishResponse><PublishResult><MessageId>1</MessageId></PublishResult></PublishResponse>"
        else:
            answer = (
                b'{"status": "success", "message": "Event processed", "dedup_key": "1"}'
                if path == "/pagerduty"
                else b"ok"
            )
        self.send_response(202 if path == "/pagerduty" else 200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stand_in() -> Iterator[tuple[str, list[tuple[str, dict[str, str], bytes]]]]:
    received: list[tuple[str, dict[str, str], bytes]] = []
    handler = type("Recorder", (_Recorder,), {"received": received})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def delivering_config(run: StackRun, folder: Path, stand_in: str) -> dict[str, Any]:
    """The rendered config with only what points outside changed: the Secret's files (the same names) under `folder`,
    the Slack URL in them and PagerDuty's and SNS's API URLs the stand-in's, and the first notification after 1 s
    instead of the chart's group_wait of 30 s."""
    config = rendered_config(run)
    secrets = folder / "secrets" / SECRET_NAME
    secrets.mkdir(parents=True)
    (secrets / SLACK_FILE).write_text(f"{stand_in}/slack\n")
    (secrets / PAGERDUTY_FILE).write_text(ROUTING_KEY)
    (receiver,) = [r for r in config["receivers"] if r["name"] != "null"]
    for integration in ("slack_configs", "pagerduty_configs"):
        for entry in receiver[integration]:
            for key in ("api_url_file", "routing_key_file"):
                if key in entry:
                    entry[key] = entry[key].replace(SECRETS_MOUNT, str(folder / "secrets"))
    receiver["pagerduty_configs"][0]["url"] = f"{stand_in}/pagerduty"
    receiver["sns_configs"][0]["api_url"] = f"{stand_in}/sns"
    config["route"]["group_wait"] = "1s"
    return config


def _post_alerts(port: int, alerts: list[dict[str, Any]]) -> None:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v2/alerts",
        data=json.dumps(alerts).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200


def _wait_ready(port: int, process: subprocess.Popen[str]) -> None:
    for _ in range(100):
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    pytest.fail("Alertmanager did not become ready")


def test_a_real_alertmanager_delivers_a_stack_alert_to_each_receiver(receivers_run, tmp_path, stand_in):
    url, received = stand_in
    config = write_config(delivering_config(receivers_run, tmp_path, url), tmp_path)
    (rule,) = receivers_run.of_type(PROMETHEUS_RULE)
    alert = next(r for r in rule.inputs["spec"]["groups"][0]["rules"] if r["alert"] == "ServeAppNotRunning")
    port = _free_port()
    process = subprocess.Popen(
        [
            binary("prometheus-alertmanager", "alertmanager"),
            f"--config.file={config}",
            f"--storage.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        # SNS signs with the default credential chain's keys; no IMDS to fall back on, as in the pod.
        env={
            **os.environ,
            "AWS_ACCESS_KEY_ID": "AKIDSTANDIN",
            "AWS_SECRET_ACCESS_KEY": "stand-in",
            "AWS_EC2_METADATA_DISABLED": "true",
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_ready(port, process)
        stack_alert = {
            "labels": {"alertname": alert["alert"], **alert["labels"], "application": "ray-llm"},
            "annotations": alert["annotations"],
        }
        chart_alert = {"labels": {"alertname": "KubePodCrashLooping", "severity": "warning", "namespace": "x"}}
        _post_alerts(port, [stack_alert, chart_alert])
        deadline = time.monotonic() + 30
        while len({path for path, _, _ in received}) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        process.terminate()
        process.wait(timeout=10)
    by_path = {path: (headers, body) for path, headers, body in received}
    assert set(by_path) == {"/slack", "/pagerduty", "/sns"}, [path for path, _, _ in received]
    assert all(b"KubePodCrashLooping" not in body for _, _, body in received)
    summary, description = alert["annotations"]["summary"], alert["annotations"]["description"]

    slack = json.loads(by_path["/slack"][1])
    (attachment,) = slack["attachments"]
    assert attachment["title"] == "[FIRING] ServeAppNotRunning (1)"
    assert summary in attachment["text"] and description in attachment["text"]
    assert f"Runbook: {RUNBOOK}#serveappnotrunning" in attachment["text"]

    pagerduty = json.loads(by_path["/pagerduty"][1])
    assert (pagerduty["routing_key"], pagerduty["event_action"]) == (ROUTING_KEY, "trigger")
    assert (pagerduty["payload"]["summary"], pagerduty["payload"]["severity"]) == (
        "[FIRING] ServeAppNotRunning (1)",
        "warning",
    )

    sns_headers, sns_body = by_path["/sns"]
    form = urllib.parse.parse_qs(sns_body.decode())
    assert (form["Action"], form["TopicArn"], form["Subject"]) == (
        ["Publish"],
        [TOPIC],
        ["[FIRING] ServeAppNotRunning (1)"],
    )
    assert "/us-east-1/sns/aws4_request" in sns_headers["Authorization"]


# --- the settings ---


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_a_receiver_credential_in_plain_text_is_refused(key):
    (problem,) = rejection({key: RECEIVERS[key]}).problems
    assert problem.startswith(f"{key} is set in plain text: set it with `pulumi config set --secret {key} <")
    assert RECEIVERS[key] not in problem


@pytest.mark.parametrize(
    ("key", "value"),
    [("alertSlackWebhookUrl", "http://hooks.slack.com/services/T0/B0/x"), ("alertPagerDutyRoutingKey", "short-key")],
)
def test_a_malformed_receiver_credential_is_refused_unseen(key, value):
    (problem,) = rejection({key: value}, secret_keys=(key,)).problems
    assert problem.startswith(f"{key} is invalid (the value is a secret, not shown): allowed is ")
    assert value not in problem


def test_a_topic_arn_that_is_not_one_is_refused():
    (problem,) = rejection({"alertSnsTopicArn": "arn:aws:sqs:us-east-1:123456789012:queue"}).problems
    assert problem.startswith(
        "alertSnsTopicArn='arn:aws:sqs:us-east-1:123456789012:queue' is invalid: allowed is an SNS"
    )


@pytest.mark.parametrize("key", sorted(RECEIVERS.keys() - {"runbookUrl"}))
def test_a_receiver_without_the_metrics_stack_is_refused(key):
    (problem,) = rejection({key: RECEIVERS[key], "observability": False}, secret_keys=SECRET_KEYS).problems
    assert "is invalid with observability=false: the Alertmanager that would send it the alerts" in problem
    assert problem.startswith(key)


def test_without_alertmanagers_tools_ci_fails_and_elsewhere_the_tests_skip_saying_why(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must check the Alertmanager config"):
        binary("amtool")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="apt-get install prometheus-alertmanager"):
        binary("amtool")
