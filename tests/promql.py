"""PromQL in the dashboards and rules: every expression, parsed by promql-parser, and the metrics it reads.

The metric lists a name is checked against, by the exporter that makes it:
- Ray and vLLM (`ray_...`): the names scraped from Ray's metrics port (docs/metrics/, one name a line) while the PD
  app served and while two engines with prefix caching on served, and the failure counters a healthy run never
  exports;
- DCGM (`DCGM_...`): the fields dcgm-exporter 4.8.2 exports by default (its chart's metrics ConfigMap);
- kube-state-metrics (`kube_...`): the pod and namespace metrics kube-state-metrics v2.20.0 documents;
- Prometheus itself: `up`, which it records for every target it scrapes;
- the Ray head's autoscaler and dashboard metrics servers (ports 44217, 44227): the names the installed Ray 2.58's own
  registries for them hold.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import promql_parser
import pytest

from tests.schemas import schemas_dir
from tools.project import PROJECT_DIR

# The PD app's scrape, and one with vLLM's prefix cache on: an engine counts `vllm:prefix_cache_queries` and
# `vllm:prefix_cache_hits` only with the cache on (vllm/v1/core/kv_cache_manager.py `get_computed_blocks`), and Ray
# exports a counter only from its first increment.
RAY_VLLM_METRICS = tuple(
    PROJECT_DIR / "docs" / "metrics" / f"ray-2.58.0-vllm-0.26.0-{scrape}metric-names.txt"
    for scrape in ("", "prefix-cache-")
)
DCGM_COUNTERS = Path("dcgm-exporter-4.8.2/metrics-configmap.yaml")
KUBE_STATE_METRICS_DOCS = tuple(
    Path(f"kube-prometheus-stack-88.5.3/kube-state-metrics-{kind}-metrics.md") for kind in ("pod", "namespace")
)
# Prometheus records `up` (1 when the target's last scrape succeeded, else 0) for every target it scrapes
# (https://prometheus.io/docs/concepts/jobs_instances/#automatically-generated-labels-and-time-series).
PROMETHEUS_SERIES = frozenset({"up"})
# vLLM 0.26's NIXL connector counts failed transfers and notifications
# (vllm/distributed/kv_transfer/kv_connector/v1/nixl/stats.py, record_failed_transfer / record_failed_notification),
# and Ray exports a counter only from its first increment (docs/metrics/ray-2.58.0-vllm-0.26.0-pd-samples.txt:
# ray_serve_deployment_request_counter_total is "-" until the first request). The scrape saw no failure, so
# these names are in no list a healthy run produces; the alert and the dashboard read them for the day one occurs.
COUNTED_ONLY_ON_FAILURE = frozenset(
    {"ray_vllm_nixl_num_failed_transfers_total", "ray_vllm_nixl_num_failed_notifications_total"}
)
# Grafana template variables in a range (`[$interval]`, `[$__rate_interval]`) are durations only once Grafana
# fills them in; any duration parses the same.
RANGE_VARIABLE = re.compile(r"\[\s*\$\{?\w+\}?\s*\]")


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        message = "promtool not found: apt-get install prometheus (Debian and Ubuntu ship promtool in it)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the alert rules through promtool; {message}")
        pytest.skip(message)
    return found


def parse(expr: str) -> promql_parser.Expr:
    """The expression's syntax tree; ValueError when Prometheus would reject it."""
    return promql_parser.parse(RANGE_VARIABLE.sub("[5m]", expr))


def dashboard_expressions(dashboard: dict[str, Any]) -> Iterator[str]:
    """The query of every panel target, rows' nested panels included."""
    for panel in dashboard.get("panels", []):
        for target in panel.get("targets", []):
            if target.get("expr"):
                yield target["expr"]
        yield from dashboard_expressions(panel)


# How prometheus_client exposes a family (https://prometheus.github.io/client_python/instrumenting/): a counter's
# samples end in _total, a histogram's in _bucket, _sum and _count.
EXPOSED_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def ray_head_servers_metrics() -> set[str]:
    """What the head's autoscaler (ray/autoscaler/_private/prom_metrics.py AutoscalerPrometheusMetrics) and dashboard
    (ray/dashboard/dashboard_metrics.py DashboardPrometheusMetrics) metrics servers export, from their registries."""
    from ray.autoscaler._private.prom_metrics import AutoscalerPrometheusMetrics
    from ray.dashboard.dashboard_metrics import DashboardPrometheusMetrics

    registries = (AutoscalerPrometheusMetrics(session_name="names").registry, DashboardPrometheusMetrics().registry)
    return {
        f"{family.name}{suffix}"
        for registry in registries
        for family in registry.collect()
        for suffix in EXPOSED_SUFFIXES[family.type]
    }


def scraped_names(scrape: Path) -> set[str]:
    """A docs/metrics/ names file: one name a line under its `#` header."""
    return {line for line in scrape.read_text().splitlines() if line and not line.startswith("#")}


@cache
def known_metrics() -> frozenset[str]:
    ray_vllm = set().union(*(scraped_names(scrape) for scrape in RAY_VLLM_METRICS))
    dcgm = set(re.findall(r"^\s*(DCGM_FI_\w+),", (schemas_dir() / DCGM_COUNTERS).read_text(), re.MULTILINE))
    kube = {
        name
        for doc in KUBE_STATE_METRICS_DOCS
        for name in re.findall(r"^\| (kube_\w+) ", (schemas_dir() / doc).read_text(), re.M)
    }
    return frozenset(ray_vllm | COUNTED_ONLY_ON_FAILURE | dcgm | kube | PROMETHEUS_SERIES | ray_head_servers_metrics())


def metrics_read(expr: str) -> set[str]:
    """The metric names the expression selects; a `__name__` regex stands for the known names it matches, or
    for itself when it matches none."""
    names: set[str] = set()

    def visit(node: promql_parser.Expr) -> None:
        if not isinstance(node, promql_parser.VectorSelector):
            return
        if node.name:
            names.add(node.name)
        for matcher in node.matchers.matchers:
            if matcher.name == "__name__":
                matches = {name for name in known_metrics() if re.fullmatch(matcher.value, name)}
                names.update(matches or {matcher.value})

    promql_parser.walk(parse(expr), visit)
    return names


def unknown_metrics(exprs: list[str]) -> set[str]:
    return {name for expr in exprs for name in metrics_read(expr)} - known_metrics()
