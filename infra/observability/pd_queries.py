"""PromQL for the prefill/decode questions, shared by our dashboard, the alerts and `tools.verify`.

Metric names are the ones Ray 2.58 exports (`ray_` and `ray_vllm_` prefixes: docs/observability.md#observability);
docs/metrics/ lists the names that exist."""

from __future__ import annotations

from collections.abc import Mapping

# Ray Serve LLM's PD builder names the two LLM deployments "Prefill:<model>" and "Decode:<model>"
# (ray/llm/_internal/serve/serving_patterns/prefill_decode/builder.py, name_prefix).
SIDE_DEPLOYMENTS: Mapping[str, str] = {"prefill": "Prefill:.*", "decode": "Decode:.*"}
PD_DEPLOYMENTS = "|".join(SIDE_DEPLOYMENTS.values())
# The aggregated models beside the pair (infra/settings/models.py): Ray Serve LLM names such a deployment
# "<server class>:<model>", LLMServer by default (ray/llm/_internal/serve/core/server/builder.py build_llm_deployment,
# name_prefix), so each series' deployment label names its model.
MODEL_DEPLOYMENTS = "LLMServer:.*"
# Every vLLM engine: both sides of the pair and each aggregated model.
ENGINE_DEPLOYMENTS = f"{PD_DEPLOYMENTS}|{MODEL_DEPLOYMENTS}"
# Serve's application status gauge: 0=UNKNOWN, 1=DEPLOY_FAILED, 2=UNHEALTHY, 3=NOT_STARTED, 4=DELETING,
# 5=DEPLOYING, 6=RUNNING (ray/serve/_private/application_state.py, serve_application_status).
APP_STATUS = "ray_serve_application_status"
APP_RUNNING = 6
APP_DEPLOY_FAILED = 1
REQUESTS = "ray_serve_deployment_request_counter_total"
# Per replica 1/0, or per deployment the healthy count, depending on Ray's high-cardinality flag; a sum is
# the healthy replicas either way (ray/serve/_private/deployment_state.py, serve_deployment_replica_healthy).
HEALTHY_REPLICAS = "ray_serve_deployment_replica_healthy"
TTFT = "ray_vllm_time_to_first_token_seconds"
TPOT = "ray_vllm_request_time_per_output_token_seconds"
KV_CACHE_USAGE = "ray_vllm_kv_cache_usage_perc"
WAITING = "ray_vllm_num_requests_waiting"
RUNNING = "ray_vllm_num_requests_running"
# vLLM 0.26's NIXL connector stats (vllm/distributed/kv_transfer/kv_connector/v1/nixl/stats.py): the side
# that reads the KV cache (decode, in pull mode) records each transfer.
KV_XFER_TIME = "ray_vllm_nixl_xfer_time_seconds"
KV_BYTES = "ray_vllm_nixl_bytes_transferred"
KV_FAILED_TRANSFERS = "ray_vllm_nixl_num_failed_transfers_total"
KV_FAILED_NOTIFICATIONS = "ray_vllm_nixl_num_failed_notifications_total"
# vLLM 0.26's prefix cache, in prompt tokens (vllm/v1/metrics/loggers.py `vllm:prefix_cache_queries`,
# `vllm:prefix_cache_hits`). An engine without the cache counts nothing (vllm/v1/core/kv_cache_manager.py
# `get_computed_blocks` returns before it looks), and Ray exports a counter only from its first increment, so such an
# engine has no series.
PREFIX_CACHE_QUERIES = "ray_vllm_prefix_cache_queries_total"
PREFIX_CACHE_HITS = "ray_vllm_prefix_cache_hits_total"
RATE_WINDOW = "5m"


def app_selector(app: str, deployments: str = PD_DEPLOYMENTS) -> str:
    return f'application="{app}", deployment=~"{deployments}"'


def with_deployment(expr: str, app: str, labels: str = "deployment", deployments: str = PD_DEPLOYMENTS) -> str:
    """`expr` (a vLLM engine series) labelled with the Serve deployment of its replica (`labels`: and the replica):
    vLLM's series carry the replica's Ray worker, its request counter both, joined as Ray's own Serve LLM dashboard
    does."""
    replicas = f"max by (WorkerId, {labels}) ({REQUESTS}{{{app_selector(app, deployments)}}} * 0 + 1)"
    return f"({expr}) * on (WorkerId) group_left ({labels}) {replicas}"


def _over(series: str, window: str | None) -> str:
    """The series' rate over `window`, or (None) its value since each replica started: `tools.verify` reads those,
    since one request makes a counter but a rate needs two samples that differ."""
    return f"rate({series}[{window}])" if window else series


def requests_per_deployment(app: str, window: str | None = RATE_WINDOW, deployments: str = PD_DEPLOYMENTS) -> str:
    """Requests each deployment handles: each side's, or each aggregated model's with MODEL_DEPLOYMENTS."""
    return f"sum by (deployment) ({_over(f'{REQUESTS}{{{app_selector(app, deployments)}}}', window)})"


def healthy_replicas(app: str, deployments: str = PD_DEPLOYMENTS) -> str:
    return f"sum by (deployment) ({HEALTHY_REPLICAS}{{{app_selector(app, deployments)}}})"


def side_healthy_replicas(app: str, side: str) -> str:
    """The side's healthy replicas as one label-less number, 0 when Serve reports none: `or vector(0)` fills in
    only a result with the same (empty) label set."""
    return f"(sum({HEALTHY_REPLICAS}{{{app_selector(app, SIDE_DEPLOYMENTS[side])}}}) or vector(0))"


def quantile_per_side(
    histogram: str, quantile: float, app: str, window: str | None = RATE_WINDOW, deployments: str = PD_DEPLOYMENTS
) -> str:
    buckets = with_deployment(_over(f"{histogram}_bucket", window), app, deployments=deployments)
    return f"histogram_quantile({quantile}, sum by (le, deployment) ({buckets}))"


def mean_per_side(histogram: str, app: str, window: str | None = RATE_WINDOW) -> str:
    total = with_deployment(_over(f"{histogram}_sum", window), app)
    count = with_deployment(_over(f"{histogram}_count", window), app)
    return f"sum by (deployment) ({total}) / sum by (deployment) ({count})"


def counter_per_side(counter: str, app: str, window: str | None = RATE_WINDOW) -> str:
    return f"sum by (deployment) ({with_deployment(_over(counter, window), app)})"


def gauge_per_side(gauge: str, app: str, aggregate: str = "sum") -> str:
    return f"{aggregate} by (deployment) ({with_deployment(gauge, app)})"


def kv_transfers_per_side(app: str, window: str | None = RATE_WINDOW) -> str:
    return counter_per_side(f"{KV_XFER_TIME}_count", app, window)


def kv_bytes_per_side(app: str, window: str | None = RATE_WINDOW) -> str:
    return counter_per_side(f"{KV_BYTES}_sum", app, window)


ENGINE = "deployment, replica"


def prefix_cache_hit_rate_per_engine(app: str, window: str = RATE_WINDOW) -> str:
    """The share of prompt tokens each engine found in its prefix cache, where it looked at all."""
    hits = f"sum by ({ENGINE}) ({with_deployment(_over(PREFIX_CACHE_HITS, window), app, ENGINE)})"
    queries = f"sum by ({ENGINE}) ({with_deployment(_over(PREFIX_CACHE_QUERIES, window), app, ENGINE)})"
    return f"{hits} / ({queries} > 0)"
