"""The rules of the alert receivers and the remote-write workspace."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pulumi

from infra.settings.config_warnings import assignment
from infra.settings.kinds import AMP_WORKSPACE_PATTERN, SNS_TOPIC_ARN_PATTERN
from infra.settings.reader import plain_secret_problem
from infra.settings.regions import SUPPORTED_DNS_SUFFIX, SUPPORTED_PARTITION, region_partition
from infra.settings.stack_config import StackConfig

# The alert receivers' credentials, checked for their form without being shown: (pattern, what is allowed, the
# placeholder of the `--secret` command). A Slack incoming webhook is an https:// URL
# (https://api.slack.com/messaging/webhooks); PagerDuty's Events API v2 routing_key is "the 32 character Integration
# Key" (https://developer.pagerduty.com/docs/events-api-v2/trigger-events/).
RECEIVER_SECRETS: Mapping[str, tuple[re.Pattern[str], str, str]] = {
    "alertSlackWebhookUrl": (
        re.compile(r"^https://[^\s/]+/\S*\Z"),
        "an https:// URL such as https://hooks.slack.com/services/T0000/B0000/XXXXXXXX",
        "url",
    ),
    "alertPagerDutyRoutingKey": (
        re.compile(r"^[A-Za-z0-9]{32}\Z"),
        "the 32 letters and digits of a PagerDuty Events API v2 integration key",
        "key",
    ),
}

RECEIVER_SETTINGS = ("alertSnsTopicArn", *RECEIVER_SECRETS)


def receiver_secret_problems(config: pulumi.Config, values: Mapping[str, Any]) -> list[str | None]:
    """Each receiver credential set as a secret, in its form; the value is never shown."""
    problems: list[str | None] = []
    for key, (pattern, allowed, placeholder) in RECEIVER_SECRETS.items():
        value = values[key]
        plain = plain_secret_problem(config, key, value, placeholder)
        if plain or not value:
            problems.append(plain)
        elif not pattern.fullmatch(value):
            problems.append(f"{key} is invalid (the value is a secret, not shown): allowed is {allowed}")
    return problems


def receiver_partition_problems(values: Mapping[str, Any]) -> list[str]:
    """The SNS topic and the AMP workspace must be in the stack's partition: credentials and ARNs of one partition are
    not valid in another (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html, "partition"), so the
    IRSA role could not be granted the topic nor sign for the workspace. Another region of the partition is allowed:
    the stack signs each request for the topic's or the workspace's own region (infra/observability)."""
    places = []
    if topic := SNS_TOPIC_ARN_PATTERN.fullmatch(values["alertSnsTopicArn"] or ""):
        # arn:<partition>:sns:<region>:<account>:<name> (https://docs.aws.amazon.com/sns/latest/api/API_CreateTopic.html)
        partition = values["alertSnsTopicArn"].split(":")[1]
        places.append(("alertSnsTopicArn", partition, topic.group("region"), f"arn:{SUPPORTED_PARTITION}:sns:<region>"))
    if workspace := AMP_WORKSPACE_PATTERN.fullmatch(values["ampWorkspaceUrl"] or ""):
        # https://aps-workspaces.<region>.<DNS suffix>/workspaces/ws-<id>/, the partition's DNS suffix
        # (https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-onboard-ingest-metrics-remote-write.html).
        partition = "aws-cn" if workspace.group(3) else SUPPORTED_PARTITION
        form = f"https://aps-workspaces.<region>.{SUPPORTED_DNS_SUFFIX}"
        places.append(("ampWorkspaceUrl", partition, workspace.group(1), form))
    problems = []
    for key, partition, region, form in places:
        region_in = region_partition(region)
        if partition == SUPPORTED_PARTITION and region_in == SUPPORTED_PARTITION:
            continue
        where = (
            f"partition {partition!r}"
            if partition != SUPPORTED_PARTITION
            else f"region {region!r}, a region of partition {region_in}"
        )
        problems.append(
            f"{key}={values[key]!r} is invalid: it is in {where}, and the stack deploys into partition "
            f"{SUPPORTED_PARTITION!r}, whose credentials are not valid there; allowed is {form} in a region of "
            f"partition {SUPPORTED_PARTITION!r}"
        )
    return problems


# What would use each setting that acts only through the metrics stack: without it, a value the user would miss.
NEEDS_OBSERVABILITY = {
    "ampWorkspaceUrl": "the Prometheus that would remote-write",
    **dict.fromkeys(RECEIVER_SETTINGS, "the Alertmanager that would send it the alerts"),
}


def observability_problems(cfg: StackConfig) -> list[str]:
    """A remote-write workspace or an alert receiver without the metrics stack would never be used."""
    if cfg.observability:
        return []
    return [
        f"{assignment(key, cfg.settings)} is invalid with observability=false: {user} is installed only with "
        f"observability; set observability to true, or {key} to empty"
        for key, user in NEEDS_OBSERVABILITY.items()
        if cfg.settings[key]
    ]


def amp_workspace_region(workspace_url: str) -> str:
    """The workspace's region, which SigV4 signs the remote writes for."""
    match = AMP_WORKSPACE_PATTERN.match(workspace_url)
    assert match is not None, workspace_url
    return match.group(1)
