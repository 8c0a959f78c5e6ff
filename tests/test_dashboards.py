"""The Grafana dashboards and the alert rules: Ray's own dashboards as Ray 2.58 generates them, DCGM's verbatim,
ours; every query parses and reads metrics that exist."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from infra.observability.alerts import AlertArgs, alert_rules
from infra.observability.dashboards import DASHBOARDS_DIR, pd_health_dashboard, shipped_dashboards
from infra.observability.monitoring import DASHBOARD_SIDECAR_LABEL, NAMESPACE
from infra.observability.pd_queries import PREFIX_CACHE_HITS, PREFIX_CACHE_QUERIES, prefix_cache_hit_rate_per_engine
from tests.chart_values import chart_defaults
from tests.promql import (
    RAY_VLLM_METRICS,
    dashboard_expressions,
    known_metrics,
    metrics_read,
    parse,
    promtool,
    scraped_names,
    unknown_metrics,
)
from tests.schemas import schemas_dir
from tools.ray_dashboards import RAY_DASHBOARDS, WRITE_COMMAND, stale_dashboards

APP = "ray-llm"
ALERTS = AlertArgs(application=APP, namespace="inference", ttft_p99_objective_seconds=2.0, deploy_deadline_seconds=2700)
DASHBOARDS = {name: json.loads(text) for name, text in shipped_dashboards(APP).items()}
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
# What Ray's and DCGM's dashboards read that the scraped list (docs/metrics/) does not hold, dashboard by dashboard.
# They are shipped as their authors made them; when the list changes this table changes with it, so nobody is
# surprised by an empty upstream panel.
UPSTREAM_PANELS_WITHOUT_METRICS = {
    "dcgm-exporter.json": set(),
    # Serve's model multiplexing, which the PD app does not use.
    "ray-serve-deployment.json": {
        "ray_serve_multiplexed_get_model_requests_counter_total",
        "ray_serve_multiplexed_model_load_latency_ms_bucket",
        "ray_serve_multiplexed_model_unload_latency_ms_bucket",
        "ray_serve_multiplexed_models_load_counter_total",
        "ray_serve_multiplexed_models_unload_counter_total",
        "ray_serve_num_multiplexed_models",
        "ray_serve_registered_multiplexed_model_id",
    },
    # The gRPC proxy's metrics: the app serves HTTP only. (Its autoscaler_* panels read the head's autoscaler port,
    # 44217, scraped where the head runs Ray's autoscaler, with serveAutoscaling; without it they stay empty.)
    "ray-serve.json": {
        "ray_serve_grpc_request_latency_ms_bucket",
        "ray_serve_num_grpc_error_requests_total",
        "ray_serve_num_grpc_requests_total",
        "ray_serve_num_ongoing_grpc_requests",
    },
    # kv_offload_*: vLLM's CPU offloading connector, which this stack does not run; num_requests_swapped: a
    # vLLM V0 gauge V1 no longer has; nixl_num_failed_transfers: Ray's panel leaves off the counter's _total;
    # nixl_num_kv_expired_reqs_total: a counter the scraped run never incremented.
    "ray-serve-llm.json": {
        "ray_vllm_kv_offload_cpu_cache_read_usage_perc",
        "ray_vllm_kv_offload_cpu_cache_usage_perc",
        "ray_vllm_kv_offload_cpu_cache_write_usage_perc",
        "ray_vllm_kv_offload_load_bytes_total",
        "ray_vllm_kv_offload_load_size_count",
        "ray_vllm_kv_offload_load_time_total",
        "ray_vllm_kv_offload_lookup_sync_delay_seconds_bucket",
        "ray_vllm_kv_offload_lookup_sync_delay_seconds_count",
        "ray_vllm_kv_offload_store_bytes_total",
        "ray_vllm_kv_offload_store_size_count",
        "ray_vllm_kv_offload_store_time_total",
        "ray_vllm_nixl_num_failed_transfers",
        "ray_vllm_nixl_num_kv_expired_reqs_total",
        "ray_vllm_num_requests_swapped",
    },
}


def test_ray_dashboards_are_what_ray_generates():
    """Ray's Serve, Serve deployment and Serve LLM dashboards, from the installed Ray 2.58's own generator
    (ray/dashboard/modules/metrics/grafana_dashboard_factory.py); a stale file names the command that rewrites
    them, not a diff of megabytes of JSON."""
    stale = stale_dashboards()
    if stale:
        pytest.fail(f"stale Ray dashboards in {DASHBOARDS_DIR}: {stale}; run {WRITE_COMMAND}", pytrace=False)


def test_ray_dashboards_are_tagged_with_the_clusters_ray_version():
    for name in RAY_DASHBOARDS:
        assert "rayVersion:2.58.0" in DASHBOARDS[name]["tags"]


def test_the_gpu_dashboard_is_dcgms_upstream_file():
    shipped = (DASHBOARDS_DIR / "dcgm-exporter.json").read_bytes()
    assert shipped == (schemas_dir() / "dcgm-exporter-4.8.2" / "dcgm-exporter-dashboard.json").read_bytes()


def test_every_dashboard_ships_with_a_unique_uid():
    uids = [dashboard["uid"] for dashboard in DASHBOARDS.values()]
    assert len(set(uids)) == len(uids) == 5


def test_dashboards_carry_the_label_grafanas_sidecar_loads(dev):
    """kube-prometheus-stack's Grafana sidecar loads the ConfigMaps labelled `grafana_dashboard: "1"` from every
    namespace (values.yaml grafana.sidecar.dashboards)."""
    sidecar = chart_defaults("kube-prometheus-stack")["grafana"]["sidecar"]["dashboards"]
    assert DASHBOARD_SIDECAR_LABEL == {sidecar["label"]: sidecar["labelValue"]}
    assert sidecar["enabled"] is True and sidecar["searchNamespace"] == "ALL"
    maps = [r for r in dev.of_type(CONFIG_MAP) if r.inputs["metadata"]["labels"] == DASHBOARD_SIDECAR_LABEL]
    assert sorted(name for m in maps for name in m.inputs["data"]) == sorted(DASHBOARDS)
    assert {m.inputs["metadata"]["namespace"] for m in maps} == {NAMESPACE}


def test_a_dashboard_fits_in_a_config_map():
    """A ConfigMap holds at most 1 MiB (https://kubernetes.io/docs/concepts/configuration/configmap/)."""
    assert max(len(text.encode()) for text in shipped_dashboards(APP).values()) < 1024 * 1024


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_panel_query_parses(name):
    exprs = list(dashboard_expressions(DASHBOARDS[name]))
    assert exprs
    for expr in exprs:
        parse(expr)


def test_every_alert_expression_parses():
    for rule in alert_rules(ALERTS):
        parse(rule["expr"])


def test_a_broken_query_would_be_caught():
    with pytest.raises(ValueError):
        parse("sum(rate(ray_serve_deployment_request_counter_total[5m])")


def test_our_dashboard_reads_only_metrics_that_exist():
    """Ray 2.58 and vLLM 0.26 names (docs/metrics/), DCGM's default fields, kube-state-metrics' pod metrics."""
    assert unknown_metrics(list(dashboard_expressions(pd_health_dashboard(APP)))) == set()


def test_the_alerts_read_only_metrics_that_exist():
    assert unknown_metrics([rule["expr"] for rule in alert_rules(ALERTS)]) == set()


@pytest.mark.parametrize("name", sorted(UPSTREAM_PANELS_WITHOUT_METRICS))
def test_upstream_dashboards_miss_exactly_the_recorded_metrics(name):
    assert unknown_metrics(list(dashboard_expressions(DASHBOARDS[name]))) == UPSTREAM_PANELS_WITHOUT_METRICS[name]


def test_a_misspelt_metric_would_be_caught():
    assert unknown_metrics(["rate(ray_vllm_time_to_first_token_second_bucket[5m])"]) == {
        "ray_vllm_time_to_first_token_second_bucket"
    }


def test_the_metric_lists_are_read():
    """Each source contributes: the PD metrics, a DCGM field, kube-state-metrics' restart counter and namespace
    creation, Prometheus' `up`, the head's autoscaler and dashboard servers."""
    assert {
        "ray_vllm_nixl_xfer_time_seconds_bucket",
        "ray_serve_application_status",
        "DCGM_FI_DEV_FB_USED",
        "kube_pod_container_status_restarts_total",
        "kube_namespace_created",
        "up",
        "autoscaler_active_nodes",
        "ray_dashboard_api_requests_count_requests_total",
    } <= known_metrics()


def test_pd_dashboard_answers_each_pd_question():
    titles = {panel["title"] for panel in pd_health_dashboard(APP)["panels"]}
    assert {
        "Requests per side",
        "Time to first token per side",
        "Time per output token per side",
        "KV transfers per second",
        "KV bytes per second",
        "KV transfer time",
        "KV transfer failures per second",
        "KV cache usage per side",
        "Queue length per side",
        "Prefix cache hit rate per engine",
    } <= titles


def test_pd_dashboard_splits_every_engine_metric_by_deployment():
    """vLLM's series carry no Serve deployment; each engine panel joins it in (infra/pd_queries.with_deployment)."""
    for expr in dashboard_expressions(pd_health_dashboard(APP)):
        assert "deployment" in expr


def test_pd_dashboard_panels_do_not_overlap():
    cells = set()
    for panel in pd_health_dashboard(APP)["panels"]:
        grid = panel["gridPos"]
        area = {(grid["x"] + dx, grid["y"] + dy) for dx in range(grid["w"]) for dy in range(grid["h"])}
        assert not cells & area, panel["title"]
        cells |= area


def test_the_prefix_cache_hit_rate_reads_what_an_engine_with_the_cache_exports():
    """The panel's two counters are in the scrape of two engines with prefix caching on (docs/metrics/
    ray-2.58.0-vllm-0.26.0-prefix-cache-metric-names.txt, the H200 run of lab/records/bench/2026-12-06-prefix-routing)
    and not in the PD app's (the cache was off there), and Ray 2.58's own Serve LLM dashboard reads the
    same two names for its hit rate."""
    counters = {PREFIX_CACHE_HITS, PREFIX_CACHE_QUERIES}
    ray_llm = set().union(*(metrics_read(e) for e in dashboard_expressions(DASHBOARDS["ray-serve-llm.json"])))
    scraped_without, scraped_with_the_cache = (scraped_names(scrape) for scrape in RAY_VLLM_METRICS)
    assert counters <= metrics_read(prefix_cache_hit_rate_per_engine(APP))
    assert counters <= scraped_with_the_cache - scraped_without
    assert counters <= ray_llm


def test_the_prefix_cache_hit_rate_is_per_engine_and_only_where_it_caches(tmp_path):
    """Prometheus evaluates the panel's query (promtool test rules, promql_expr_test): a prefill replica that looked
    up 100 prompt tokens a minute and found 60 reads 0.6 with its deployment and replica; the decode engine, which
    keeps no cache and so exports no counter, has no line."""
    app, prefill, decode = {"application": APP}, "Prefill:qwen3_5-9b", "Decode:qwen3_5-9b"
    series = {
        f'ray_serve_deployment_request_counter_total{{application="{APP}",deployment="{prefill}",replica="p1",'
        'WorkerId="w1"}': "0+1x10",
        f'ray_serve_deployment_request_counter_total{{application="{APP}",deployment="{decode}",replica="d1",'
        'WorkerId="w2"}': "0+1x10",
        'ray_vllm_prefix_cache_queries_total{WorkerId="w1"}': "0+100x10",
        'ray_vllm_prefix_cache_hits_total{WorkerId="w1"}': "0+60x10",
    }
    test = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": name, "values": values} for name, values in series.items()],
                "promql_expr_test": [
                    {
                        "expr": prefix_cache_hit_rate_per_engine(app["application"]),
                        "eval_time": "10m",
                        "exp_samples": [{"labels": f'{{deployment="{prefill}",replica="p1"}}', "value": 0.6}],
                    }
                ],
            }
        ],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    result = subprocess.run(
        [promtool(), "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
