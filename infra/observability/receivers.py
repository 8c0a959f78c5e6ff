"""Where the alerts go: Alertmanager's receivers for the stack's alert group, as kube-prometheus-stack values.

The Helm values hold no credential (Pulumi stores them in plain text): a Slack URL or PagerDuty key is a mounted
Secret the config names by file, and SNS is signed through IRSA for the topic's region. Only the stack's own alerts
are routed; the chart's rules stay with its `null` receiver (docs/observability.md#alerts, "Where they go")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from infra.settings.kinds import SNS_TOPIC_ARN_PATTERN

RECEIVER = "ray-llm-eks"
# The chart's own receiver, which takes everything else (values.yaml alertmanager.config.route.receiver).
NULL_RECEIVER = "null"
# The Kubernetes Secret of the credentials, one file each under SECRETS_MOUNT/<secret>/.
SECRET_NAME = "alert-receivers"
SECRETS_MOUNT = "/etc/alertmanager/secrets"
SLACK_FILE = "slack-webhook-url"
PAGERDUTY_FILE = "pagerduty-routing-key"
# What a page says: the status and alert, each alert's summary and runbook section, and its runbook link when set.
TITLE = "[{{ .Status | toUpper }}] {{ .CommonLabels.alertname }} ({{ .Alerts | len }})"
TEXT = (
    "{{ range .Alerts }}*{{ .Annotations.summary }}*\n{{ .Annotations.description }}\n"
    "{{ if .Annotations.runbook_url }}Runbook: {{ .Annotations.runbook_url }}\n{{ end }}{{ end }}"
)
# PagerDuty Events API v2 takes critical, error, warning or info (https://developer.pagerduty.com/docs/events-api-v2/
# trigger-events/, payload.severity); the alerts' severities are critical and warning.
PAGERDUTY_SEVERITY = "{{ .CommonLabels.severity }}"


@dataclass(frozen=True)
class Receivers:
    """Where the stack's alerts go; any of them, all of them, or none (then they stay in Alertmanager)."""

    sns_topic_arn: str | None = None
    slack_webhook_url: pulumi.Input[str] | None = None  # a Pulumi secret
    pagerduty_routing_key: pulumi.Input[str] | None = None  # a Pulumi secret

    @property
    def configured(self) -> bool:
        return any(
            value is not None for value in (self.sns_topic_arn, self.slack_webhook_url, self.pagerduty_routing_key)
        )

    def secret_files(self) -> dict[str, pulumi.Input[str]]:
        """The Secret's files: each credential set, by file name."""
        files = {SLACK_FILE: self.slack_webhook_url, PAGERDUTY_FILE: self.pagerduty_routing_key}
        return {name: value for name, value in files.items() if value is not None}


def sns_topic_region(topic_arn: str) -> str:
    match = SNS_TOPIC_ARN_PATTERN.match(topic_arn)
    assert match is not None, topic_arn
    return match.group("region")


def _secret_file(name: str) -> str:
    return f"{SECRETS_MOUNT}/{SECRET_NAME}/{name}"


def receiver_configs(receivers: Receivers) -> dict[str, Any]:
    """The stack's receiver: one integration per destination set, each told of resolved alerts too."""
    configs: dict[str, Any] = {"name": RECEIVER}
    if receivers.sns_topic_arn is not None:
        configs["sns_configs"] = [
            {
                "topic_arn": receivers.sns_topic_arn,
                "sigv4": {"region": sns_topic_region(receivers.sns_topic_arn)},
                # SNS takes a subject of at most 100 characters (API_Publish.html, Subject); the default one lists
                # every label.
                "subject": TITLE,
                "send_resolved": True,
            }
        ]
    if receivers.slack_webhook_url is not None:
        configs["slack_configs"] = [
            {"api_url_file": _secret_file(SLACK_FILE), "title": TITLE, "text": TEXT, "send_resolved": True}
        ]
    if receivers.pagerduty_routing_key is not None:
        configs["pagerduty_configs"] = [
            {
                "routing_key_file": _secret_file(PAGERDUTY_FILE),
                "description": TITLE,
                "severity": PAGERDUTY_SEVERITY,
                "send_resolved": True,
            }
        ]
    return configs


def alertmanager_config(receivers: Receivers, group_label: str, group: str) -> dict[str, Any]:
    """`alertmanager.config`'s route and receivers; Helm merges the chart's other keys (global, inhibit_rules,
    templates) and the route's timing under them, and replaces its lists (https://helm.sh/docs/chart_template_guide/
    values_files/: a map merges, a list is replaced), so the chart's `null` receiver is declared again."""
    return {
        "route": {
            "receiver": NULL_RECEIVER,
            "routes": [{"receiver": RECEIVER, "matchers": [f'{group_label}="{group}"'], "group_by": ["alertname"]}],
        },
        "receivers": [{"name": NULL_RECEIVER}, receiver_configs(receivers)],
    }


def alertmanager_values(
    receivers: Receivers, group_label: str, group: str, role_arn: pulumi.Input[str] | None
) -> dict[str, Any]:
    """kube-prometheus-stack's `alertmanager` values for the receivers: the config, the Secret mounted when a
    credential is set, the IAM role on the service account when SNS is."""
    values: dict[str, Any] = {"config": alertmanager_config(receivers, group_label, group)}
    if receivers.secret_files():
        values["alertmanagerSpec"] = {"secrets": [SECRET_NAME]}
    if role_arn is not None:
        values["serviceAccount"] = {"annotations": {"eks.amazonaws.com/role-arn": role_arn}}
    return values


def sns_publish_policy(topic_arn: str) -> dict[str, Any]:
    """sns:Publish on the topic only (https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html)."""
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "sns:Publish", "Resource": topic_arn}],
    }
