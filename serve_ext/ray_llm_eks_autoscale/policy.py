"""Scale one side of the PD pair on its own latency objective (Ray Serve 2.58's custom autoscaling policy).

Serve's controller builds the class once per deployment with `AutoscalingPolicy.policy_kwargs` and calls it every
control loop with an `AutoscalingContext` (ray/serve/_private/autoscaling_state.py `_resolve_policy_callable`,
ray/serve/config.py `AutoscalingContext`); what it returns is passed through Serve's own upscale/downscale delays,
scaling factors and the min/max bounds (ray/serve/autoscaling_policy.py `_apply_autoscaling_config`). So this class
only says how many replicas the side's latency asks for.

Two readings of the side's latency, the measured one first:
- a replica that defines `record_autoscaling_stats` pushes its own figures, which the context holds per replica in
  `aggregated_metrics[name]` averaged over `look_back_period_s` (`_get_aggregated_custom_metrics`); the side's
  measured latency is their mean;
- otherwise (Ray Serve LLM's engines report none) the latency at the side's ongoing requests per replica
  (`total_num_requests`, queued ones included) read off the side's latency curve.
Measured above the objective, the side grows in proportion; met, it never grows, and shrinks to what its queue
needs. With no measurement, or nothing in flight, the queue alone: the fewest replicas whose share of the ongoing
requests the curve keeps within the objective.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Any

Curve = Sequence[Sequence[float]]  # ((ongoing requests on one replica, latency in seconds), ...), rising


def requests_within(curve: Curve, objective_s: float) -> float:
    """The most ongoing requests one replica holds with its latency within the objective: linear between the curve's
    points, along its last segment beyond them, and its first point's load below them (never zero)."""
    loads, latencies = [p[0] for p in curve], [p[1] for p in curve]
    index = bisect.bisect_right(latencies, objective_s)
    if index == 0:
        return loads[0]
    lower = min(index - 1, len(curve) - 2)
    (load_a, latency_a), (load_b, latency_b) = curve[lower], curve[lower + 1]
    return load_a + (objective_s - latency_a) * (load_b - load_a) / (latency_b - latency_a)


def measured_latency(aggregated_metrics: Mapping[str, Mapping[Any, float]] | None, metric: str) -> float | None:
    """The mean of what the side's replicas report for the metric, or None where none reports it."""
    per_replica = (aggregated_metrics or {}).get(metric) or {}
    return sum(per_replica.values()) / len(per_replica) if per_replica else None


def desired_replicas(
    ongoing_requests: float, replicas: int, measured_s: float | None, per_replica: float, objective_s: float
) -> float:
    """The replicas the side's latency asks for, before Serve's delays and bounds."""
    by_queue = ongoing_requests / per_replica
    # With nothing in flight a reported latency is of requests gone: it says nothing of what the side must serve.
    if measured_s is None or replicas == 0 or ongoing_requests == 0:
        return by_queue
    if measured_s > objective_s:
        return max(by_queue, replicas * measured_s / objective_s)
    return min(by_queue, replicas)


class LatencyObjectivePolicy:
    """One side's policy: `objective_s` at the side's percentile, its `latency_curve`, the `metric` its replicas may
    report (seconds, at the same percentile)."""

    def __init__(self, objective_s: float, latency_curve: Curve, metric: str) -> None:
        self.objective_s = objective_s
        self.metric = metric
        self.per_replica = requests_within(latency_curve, objective_s)

    def __call__(self, ctx: Any) -> tuple[float, dict[str, Any]]:
        measured = measured_latency(ctx.aggregated_metrics, self.metric)
        desired = desired_replicas(
            ctx.total_num_requests, ctx.current_num_replicas, measured, self.per_replica, self.objective_s
        )
        return desired, {"measured_s": measured, "per_replica": self.per_replica}
