"""The settings of observability, alerting and governance: rows of the table (`table.py`)."""

from __future__ import annotations

from collections.abc import Mapping

from infra.settings.changes import AWS_IN_PLACE, GPU_NODES_ROLLED, MONITORING, SYSTEM_NODES_ROLLED
from infra.settings.kinds import (
    AMP_WORKSPACE_PATTERN,
    BOOLEAN,
    CHART_VERSION_PATTERN,
    RUNBOOK_URL_PATTERN,
    SECRET,
    SNS_TOPIC_ARN_PATTERN,
    TAG_VALUE_ALLOWED,
    TAG_VALUE_PATTERN,
    UNPROTECT_COMMAND,
    Integer,
    Setting,
    Text,
)


def tag(key: str, description: str) -> Setting:
    """The row of a tag every AWS resource carries."""
    return Setting(
        key,
        Text(TAG_VALUE_PATTERN, TAG_VALUE_ALLOWED),
        "",
        description,
        effects=(AWS_IN_PLACE, SYSTEM_NODES_ROLLED, GPU_NODES_ROLLED),
        change_note="tags reach the node launch templates, so both node groups roll",
    )


OPERATIONS: Mapping[str, tuple[Setting, ...]] = {
    "observability": (
        Setting(
            "observability",
            BOOLEAN,
            True,
            "Install the metrics stack (kube-prometheus-stack on the system nodes, DCGM exporter on the GPU nodes), "
            "the Ray/vLLM scrapes, dashboards and alerts (see Observability).",
            effects=(MONITORING,),
        ),
        Setting(
            "kubePrometheusStackVersion",
            Text(CHART_VERSION_PATTERN, "a version such as 1.4.0"),
            "88.5.3",
            "Version of the kube-prometheus-stack Helm chart (Prometheus, Alertmanager, Grafana, the Prometheus "
            "operator), installed with observability.",
            effects=(MONITORING,),
        ),
        Setting(
            "dcgmExporterVersion",
            Text(CHART_VERSION_PATTERN, "a version such as 1.4.0"),
            "4.8.2",
            "Version of NVIDIA's dcgm-exporter Helm chart (GPU metrics of the GPU nodes), installed with "
            "observability.",
            effects=(MONITORING,),
        ),
        Setting(
            "ttftP99ObjectiveMs",
            Integer(1, " milliseconds"),
            2000,
            "Time-to-first-token objective in milliseconds; the TtftP99OverObjective alert fires when a side's p99 "
            "TTFT stays above it for 10 minutes.",
            effects=(MONITORING,),
        ),
        Setting(
            "ampWorkspaceUrl",
            Text(
                AMP_WORKSPACE_PATTERN,
                "a workspace endpoint such as https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-<id>/",
                optional=True,
            ),
            "",
            "Optional Amazon Managed Service for Prometheus workspace endpoint "
            "(https://aps-workspaces.<region>.amazonaws.com/workspaces/ws-.../): Prometheus also remote-writes there, "
            "signed with SigV4 by an IAM role for its service account. Needs observability.",
            effects=(MONITORING,),
        ),
        Setting(
            "alertSnsTopicArn",
            Text(
                SNS_TOPIC_ARN_PATTERN,
                "an SNS topic ARN such as arn:aws:sns:us-east-1:123456789012:ray-llm-alerts",
                optional=True,
            ),
            "",
            "Optional Amazon SNS topic the stack's alerts are published to: Alertmanager signs for the topic's region "
            "with an IAM role only its service account assumes, allowed sns:Publish on this topic only. Needs "
            "observability.",
            effects=(MONITORING,),
        ),
        Setting(
            "alertSlackWebhookUrl",
            SECRET,
            "",
            "Optional Slack incoming-webhook URL the stack's alerts are posted to; set it with `pulumi config set "
            "--secret alertSlackWebhookUrl <url>`. Alertmanager reads it from a Kubernetes Secret, never from the Helm "
            "values. Needs observability.",
            effects=(MONITORING,),
        ),
        Setting(
            "alertPagerDutyRoutingKey",
            SECRET,
            "",
            "Optional PagerDuty Events API v2 integration key (32 characters) the stack's alerts page with; set it "
            "with `pulumi config set --secret alertPagerDutyRoutingKey <key>`. Kept like alertSlackWebhookUrl. Needs "
            "observability.",
            feeds="alert_pagerduty_routing_key",
            effects=(MONITORING,),
        ),
        Setting(
            "runbookUrl",
            Text(
                RUNBOOK_URL_PATTERN,
                "an http(s) URL without a #fragment, such as https://github.com/<owner>/<repo>/blob/main/docs/runbook.md",
                optional=True,
            ),
            "",
            "Where docs/runbook.md opens in a browser (your repository host's page of it): each alert's runbook_url is "
            "it with the alert's section anchor. Empty: no link; every alert carries its runbook section as its "
            "description either way.",
            effects=(MONITORING,),
        ),
    ),
    "governance": (
        tag("owner", "Owner tag on every AWS resource (team or person to ask); AWS tag value rules."),
        tag("costCenter", "cost-center tag on every AWS resource; AWS tag value rules."),
        Setting(
            "protectResources",
            BOOLEAN,
            False,
            "Protect the VPC and cluster from deletion/replacement (pulumi protect + EKS deletion protection). To tear "
            f"down, run `{UNPROTECT_COMMAND}` before `pulumi destroy` (`pulumi state unprotect` lifts only "
            "Pulumi's protection, not EKS's).",
            effects=(AWS_IN_PLACE,),
        ),
    ),
}
