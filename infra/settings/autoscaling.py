"""Latency objectives: each side of the PD pair scaled on its own latency (prefill on time to first token, decode on
inter-token latency), at a percentile, between its minimum and maximum replicas.

The policy runs in the cluster (serve_ext/ray_llm_eks_autoscale/policy.py); on the engines it reads latency off the
ongoing requests through the estimated curves here (docs/scaling.md#latency-objectives says why and how they were
made)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# What a replica costs to start (docs/model-cache.md, "What a new node waits for", after the caches): an engine on a
# node that has the image and compile caches 215 s (measured), on a new GPU node 528 s (342 s measured, 187 estimated).
WARM_ENGINE_START_S = 215
NEW_NODE_ENGINE_START_S = 528
PERCENTILES = ("p50", "p99")  # the percentiles the recorded sweeps hold (vllm bench serve's p50 and p99)
# The bench's client concurrency, and per level (mean TTFT ms, mean end-to-end ms) of the PD sweep on the H200, and
# TTFT / TPOT at each percentile (ms): lab/records/bench/2026-11-30/pd-c{1,4,16,64}.json.
SWEEP_CONCURRENCY = (1, 4, 16, 64)
SWEEP_MEAN_TTFT_MS = (135.06, 178.84, 515.89, 4989.74)
SWEEP_MEAN_E2E_MS = (748.59, 825.48, 1276.62, 6055.27)
SWEEP_TTFT_MS = {"p50": (133.36, 152.49, 568.58, 5475.12), "p99": (153.24, 305.32, 1418.34, 6805.95)}
SWEEP_TPOT_MS = {"p50": (4.83, 5.08, 5.49, 7.56), "p99": (4.85, 5.2, 9.68, 17.34)}
L4_PREFILL_SLOWDOWN = 8.0  # estimated: compute, H200 against L4 (lab/records/gpu-end-to-end.md)
L4_DECODE_SLOWDOWN = 11.0  # estimated: 53 ms against 4.8 ms a token (lab/records/gpu-end-to-end.md)
# The metric a replica may report through record_autoscaling_stats, per side (seconds at the objective's percentile).
SIDE_METRICS = {"prefill": "ttft_s", "decode": "itl_s"}
SIDE_OBJECTIVES = {"prefill": "prefillTtftObjectiveMs", "decode": "decodeItlObjectiveMs"}


@dataclass(frozen=True)
class ScalingPace:
    """How fast Serve acts on the policy's decision (AutoscalingConfig upscale_delay_s, downscale_delay_s) and the
    percentile the objectives are at."""

    upscale_delay_s: int
    downscale_delay_s: int
    percentile: str


def latency_curve(side: str, percentile: str) -> tuple[tuple[float, float], ...]:
    """(ongoing requests on one replica of the side, seconds at the percentile) on an L4, estimated. Decode holds a
    request from its first to its last token (PDDecodeServer calls the prefill and streams), so its ongoing requests
    are the bench's concurrency; a prefill replica holds a request only until its first token, so by Little's law its
    ongoing requests are the concurrency times the share of a request's time spent before the first token."""
    if side == "decode":
        return tuple(
            (float(c), ms * L4_DECODE_SLOWDOWN / 1000)
            for c, ms in zip(SWEEP_CONCURRENCY, SWEEP_TPOT_MS[percentile], strict=True)
        )
    points = zip(SWEEP_CONCURRENCY, SWEEP_MEAN_TTFT_MS, SWEEP_MEAN_E2E_MS, SWEEP_TTFT_MS[percentile], strict=True)
    return tuple((round(c * ttft / e2e, 3), ms * L4_PREFILL_SLOWDOWN / 1000) for c, ttft, e2e, ms in points)


def objective_problem(side: str, objective_ms: int, percentile: str) -> str | None:
    """An objective below the side's latency at its lightest recorded load (in whole ms) could never be met: every
    replica Serve may add would be asked for."""
    if not objective_ms or percentile not in PERCENTILES:  # a percentile not recorded is named by its own row
        return None
    floor = int(latency_curve(side, percentile)[0][1] * 1000 + 0.999)
    if objective_ms >= floor:
        return None
    return (
        f"{SIDE_OBJECTIVES[side]}={objective_ms} is invalid with latencyObjectivePercentile={percentile!r}: allowed is "
        f"0 (scale on ongoing requests) or at least {floor} ms, the {side} side's {percentile} at its lightest "
        "recorded load on an L4 (estimated from the H200 sweep, infra/settings/autoscaling.py)"
    )


def policy_kwargs(side: str, objective_ms: int, percentile: str) -> dict[str, Any]:
    """What the cluster's policy is built with (AutoscalingPolicy.policy_kwargs, which must be JSON)."""
    return {
        "objective_s": objective_ms / 1000,
        "latency_curve": [list(point) for point in latency_curve(side, percentile)],
        "metric": SIDE_METRICS[side],
    }
