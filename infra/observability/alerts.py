"""The alerts an operator must act on, as one PrometheusRule (monitoring.coreos.com/v1) built from plain data.

Each alert's `runbook_url` points at its section of docs/runbook.md, which says what to look at and do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.observability import pd_queries as q

# In the repository (no published URL): the section of each alert is its name in lower case.
RUNBOOK = "docs/runbook.md"
# The RayService head's container (infra/serving/rayservice.py head_group); kube-state-metrics names restarts by
# container.
HEAD_CONTAINER = "ray-head"
# vLLM takes gpu_memory_utilization (0.9 by default) of each GPU up front; above this the GPU has no room left.
GPU_MEMORY_EXHAUSTED = 0.97
KV_FAILURE_COUNTERS = (q.KV_FAILED_TRANSFERS, q.KV_FAILED_NOTIFICATIONS)


@dataclass(frozen=True)
class AlertArgs:
    """What the alerts watch: the Serve application and the namespace of its pods, and the TTFT objective."""

    application: str
    namespace: str
    ttft_p99_objective_seconds: float


def _alert(name: str, expr: str, duration: str, severity: str, summary: str) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": duration,
        "labels": {"severity": severity},
        "annotations": {"summary": summary, "runbook_url": f"{RUNBOOK}#{name.lower()}"},
    }


def alert_rules(args: AlertArgs) -> list[dict[str, Any]]:
    app = args.application
    status = f'{q.APP_STATUS}{{application="{app}"}}'
    side_alerts = [
        _alert(
            f"{side.capitalize()}NoHealthyReplica",
            f"{q.side_healthy_replicas(app, side)} < 1",
            "10m",
            "critical",
            f"The {side} side of Serve app {app} has no healthy replica: requests cannot complete.",
        )
        for side in q.SIDE_DEPLOYMENTS
    ]
    return [
        _alert(
            "ServeAppDeployFailed",
            f"{status} == {q.APP_DEPLOY_FAILED}",
            "1m",
            "critical",
            f"Serve app {app} is DEPLOY_FAILED: Serve does not roll back, nothing serves.",
        ),
        _alert(
            "ServeAppNotRunning",
            f"({status} != {q.APP_RUNNING}) or absent({status})",
            "15m",
            "warning",
            f"Serve app {app} has not been RUNNING for 15 minutes.",
        ),
        *side_alerts,
        _alert(
            "KvTransferFailures",
            # Each counter may not exist until its first failure: a missing one counts 0, not "no result".
            " + ".join(f"(sum(increase({counter}[10m])) or vector(0))" for counter in KV_FAILURE_COUNTERS) + " > 0",
            "0m",
            "warning",
            "NIXL KV-cache transfers between prefill and decode failed in the last 10 minutes.",
        ),
        _alert(
            "TtftP99OverObjective",
            f"{q.quantile_per_side(q.TTFT, 0.99, app)} > {args.ttft_p99_objective_seconds:g}",
            "10m",
            "warning",
            f"p99 time to first token of a side is over the {args.ttft_p99_objective_seconds:g} s objective.",
        ),
        _alert(
            "GpuMemoryExhausted",
            f"max by (Hostname, gpu) (DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)) "
            f"> {GPU_MEMORY_EXHAUSTED}",
            "10m",
            "warning",
            f"A GPU has used over {GPU_MEMORY_EXHAUSTED:.0%} of its memory for 10 minutes.",
        ),
        _alert(
            "RayHeadRestarted",
            f'increase(kube_pod_container_status_restarts_total{{namespace="{args.namespace}", '
            f'container="{HEAD_CONTAINER}"}}[15m]) > 0',
            "0m",
            "critical",
            "The Ray head container restarted: the Serve controller and GCS restarted with it.",
        ),
    ]


def prometheus_rule(name: str, namespace: str, labels: dict[str, str], args: AlertArgs) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"groups": [{"name": "ray-llm-eks.serving", "rules": alert_rules(args)}]},
    }
