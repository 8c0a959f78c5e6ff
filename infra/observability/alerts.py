"""The alerts an operator must act on, as one PrometheusRule (monitoring.coreos.com/v1) built from plain data.

Each alert carries its docs/runbook.md section as its `description` (and, with a runbook URL, a `runbook_url`); a
first deploy pages nobody. How each is tested with `promtool test rules`: docs/observability.md#alerts."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from infra import PROJECT_DIR
from infra.observability import pd_queries as q

RUNBOOK = PROJECT_DIR / "docs" / "runbook.md"
GROUP = "ray-llm-eks.serving"
# Every alert of the group carries it, so that Alertmanager routes these alerts (and not the chart's own rules) to
# the stack's receivers (infra/observability/receivers.py).
GROUP_LABEL = "alert_group"
# The RayService head's container (infra/serving/rayservice.py head_group); kube-state-metrics names restarts by
# container.
HEAD_CONTAINER = "ray-head"
# vLLM takes gpu_memory_utilization (0.9 by default) of each GPU up front; above this the GPU has no room left.
GPU_MEMORY_EXHAUSTED = 0.97
KV_FAILURE_COUNTERS = (q.KV_FAILED_TRANSFERS, q.KV_FAILED_NOTIFICATIONS)
KV_WINDOW = "10m"
# kube-state-metrics' creation time of a namespace, in seconds since the epoch (docs/metrics/cluster/
# namespace-metrics.md, vendored): the serving namespace is created on the first `pulumi up`, before the mirror.
NAMESPACE_CREATED = "kube_namespace_created"
# kube-state-metrics' per-container readiness
# (vendor/kube-prometheus-stack-88.5.3/kube-state-metrics-pod-metrics.md): 0 while the head's
# container waits, crashes or fails its readiness probe.
CONTAINER_READY = "kube_pod_container_status_ready"
# How long the head may be away before someone must act: with fault tolerance each GPU worker gives up on the GCS
# after KubeRay's 600 s reconnect timeout (docs/head-fault-tolerance.md), so this leaves the other five minutes.
HEAD_NOT_READY_FOR = "5m"
# Prometheus' own series for each target: 1 when its last scrape succeeded
# (https://prometheus.io/docs/concepts/jobs_instances/#automatically-generated-labels-and-time-series).
UP = "up"


@dataclass(frozen=True)
class AlertArgs:
    """What the alerts watch: the Serve application and the namespace of its pods, the TTFT objective, how long a
    first deploy may take before it is late, and where the runbook opens."""

    application: str
    namespace: str
    ttft_p99_objective_seconds: float
    # The longest `pulumi up` waits for the app to run, counted from the serving namespace's creation.
    deploy_deadline_seconds: int
    # docs/runbook.md as a browser opens it (e.g. on the repository's host); None: the alerts carry no link.
    runbook_url: str | None = None
    # The head keeps the cluster in a GCS store (headFaultTolerance redis): its restart costs no worker.
    head_fault_tolerance: bool = False


def runbook_sections(text: str) -> dict[str, str]:
    """docs/runbook.md's `## <AlertName>` sections, each as its text with the lines joined."""
    sections = re.split(r"^## (\S+)\n", text, flags=re.MULTILINE)[1:]
    return {name: " ".join(body.split()) for name, body in zip(sections[::2], sections[1::2], strict=True)}


def runbook_anchor(name: str) -> str:
    """The section's anchor as GitHub (and most Markdown hosts) make it from a one-word heading: lower case."""
    return name.lower()


def _alert(args: AlertArgs, name: str, expr: str, duration: str, severity: str, summary: str) -> dict[str, Any]:
    annotations = {"summary": summary, "description": runbook_sections(RUNBOOK.read_text())[name]}
    if args.runbook_url:
        annotations["runbook_url"] = f"{args.runbook_url}#{runbook_anchor(name)}"
    return {
        "alert": name,
        "expr": expr,
        "for": duration,
        "labels": {"severity": severity, GROUP_LABEL: GROUP},
        "annotations": annotations,
    }


def armed(args: AlertArgs) -> str:
    """One label-less series while the app's alerts should page: the app was RUNNING within the deadline (Serve's
    status gauge: 6=RUNNING is its highest value, ray/serve/_private/application_state.py), or the serving namespace
    is older than the deadline, past which `pulumi up` has given up on the app."""
    deadline = args.deploy_deadline_seconds
    status = f'{q.APP_STATUS}{{application="{args.application}"}}'
    created = f'{NAMESPACE_CREATED}{{namespace="{args.namespace}"}}'
    return f"((max(max_over_time({status}[{deadline}s])) == {q.APP_RUNNING}) or (time() - max({created}) > {deadline}))"


def first_seen(counter: str, window: str) -> str:
    """A counter's series that appeared within `window` on a target Prometheus already scraped then: Ray exports a
    counter only from its first increment, and `increase()` counts nothing before a series' first sample, so a
    first burst shows only here. The target's earlier successful scrape (`up == 1`) tells a new series from one that
    only looks new because Prometheus started or missed scrapes since."""
    return f"(({counter} unless {counter} offset {window}) and on (job, instance) ({UP} offset {window} == 1))"


def kv_failures(window: str) -> str:
    """NIXL's failed transfers and notifications within `window`, 0 when none: each counter's increase plus the
    value of a series first seen; a missing counter counts 0 (`x + <no result>` would be no result)."""
    terms = [
        f"(sum(increase({counter}[{window}])) or vector(0)) + (sum({first_seen(counter, window)}) or vector(0))"
        for counter in KV_FAILURE_COUNTERS
    ]
    return " + ".join(terms)


def alert_rules(args: AlertArgs) -> list[dict[str, Any]]:
    app, gate = args.application, armed(args)
    status = f'{q.APP_STATUS}{{application="{app}"}}'
    head = f'namespace="{args.namespace}", container="{HEAD_CONTAINER}"'
    objective = f"{args.ttft_p99_objective_seconds:g}"
    side_rules = [
        (
            f"{side.capitalize()}NoHealthyReplica",
            f"({q.side_healthy_replicas(app, side)} < 1) and on () {gate}",
            "10m",
            "critical",
            f"The {side} side of Serve app {app} has no healthy replica: requests cannot complete.",
        )
        for side in q.SIDE_DEPLOYMENTS
    ]
    rules = [
        (
            "ServeAppDeployFailed",
            f"({status} == {q.APP_DEPLOY_FAILED}) and on () {gate}",
            "1m",
            "critical",
            f"Serve app {app} is DEPLOY_FAILED: Serve does not roll back, nothing serves.",
        ),
        (
            "ServeAppNotRunning",
            f"(({status} != {q.APP_RUNNING}) or absent({status})) and on () {gate}",
            "15m",
            "warning",
            f"Serve app {app} has not been RUNNING for 15 minutes.",
        ),
        *side_rules,
        (
            "ModelNoHealthyReplica",
            f"(sum by (deployment) ({q.HEALTHY_REPLICAS}{{{q.app_selector(app, q.MODEL_DEPLOYMENTS)}}}) < 1) "
            f"and on () {gate}",
            "10m",
            "critical",
            f"An aggregated model of Serve app {app} has no healthy replica: requests for it and its adapters fail.",
        ),
        (
            "KvTransferFailures",
            f"{kv_failures(KV_WINDOW)} > 0",
            "0m",
            "warning",
            f"NIXL KV-cache transfers between prefill and decode failed in the last {KV_WINDOW}.",
        ),
        (
            "TtftP99OverObjective",
            f"{q.quantile_per_side(q.TTFT, 0.99, app, deployments=q.ENGINE_DEPLOYMENTS)} > {objective}",
            "10m",
            "warning",
            f"p99 time to first token of a side or a model is over the {objective} s objective.",
        ),
        (
            "GpuMemoryExhausted",
            f"max by (Hostname, gpu) (DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)) "
            f"> {GPU_MEMORY_EXHAUSTED}",
            "10m",
            "warning",
            f"A GPU has used over {GPU_MEMORY_EXHAUSTED:.0%} of its memory for 10 minutes.",
        ),
        (
            "RayHeadRestarted",
            f"increase(kube_pod_container_status_restarts_total{{{head}}}[15m]) > 0",
            "0m",
            *_head_restart_severity(args.head_fault_tolerance),
        ),
        (
            "RayHeadNotReady",
            f"(max by (namespace, pod) ({CONTAINER_READY}{{{head}}}) == 0) and on () {gate}",
            HEAD_NOT_READY_FOR,
            "critical",
            f"The Ray head has not been ready for {HEAD_NOT_READY_FOR}: no serve change or replica recovery "
            "reaches the app, and the GPU workers give up on it after their 600 s reconnect timeout.",
        ),
    ]
    return [_alert(args, *rule) for rule in rules]


def _head_restart_severity(fault_tolerant: bool) -> tuple[str, str]:
    """With a GCS store a head restart is ridden through (measured: no failed request through the workers'
    proxies, docs/head-fault-tolerance.md); without one every GPU worker restarts and loads the model again."""
    if fault_tolerant:
        return (
            "warning",
            "The Ray head container restarted; with GCS fault tolerance the GPU workers kept serving through it.",
        )
    return (
        "critical",
        "The Ray head container restarted without GCS fault tolerance: every GPU worker restarts and loads the model "
        "again.",
    )


def prometheus_rule(name: str, namespace: str, labels: dict[str, str], args: AlertArgs) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"groups": [{"name": GROUP, "rules": alert_rules(args)}]},
    }
