"""The latency-objective policy's decisions (serve_ext/ray_llm_eks_autoscale/policy.py), alone and inside Ray Serve
2.58's own wrapper, which adds the delays and bounds (ray/serve/autoscaling_policy.py `_apply_autoscaling_config`) and
hands the policy an AutoscalingContext as the controller builds it (ray/serve/_private/autoscaling_state.py
`get_autoscaling_context`)."""

from __future__ import annotations

import pytest
from ray.serve._private.common import DeploymentID, ReplicaID
from ray.serve.autoscaling_policy import _apply_autoscaling_config
from ray.serve.config import AutoscalingConfig, AutoscalingContext

from infra.settings.autoscaling import latency_curve, policy_kwargs
from serve_ext.ray_llm_eks_autoscale.policy import (
    LatencyObjectivePolicy,
    desired_replicas,
    measured_latency,
    requests_within,
)

CURVE = ((1.0, 0.05), (4.0, 0.06), (16.0, 0.10))
DEPLOYMENT = DeploymentID(name="Decode:qwen", app_name="app")


def test_the_requests_a_replica_holds_within_the_objective_are_read_between_the_points():
    assert requests_within(CURVE, 0.08) == pytest.approx(10.0)


def test_past_the_last_point_the_last_segment_goes_on():
    assert requests_within(CURVE, 0.14) == pytest.approx(28.0)


def test_an_objective_below_the_lightest_load_still_gives_each_replica_its_first_points_load():
    assert requests_within(CURVE, 0.01) == 1.0


def test_with_no_measurement_the_queue_alone_decides():
    assert desired_replicas(ongoing_requests=30, replicas=1, measured_s=None, per_replica=10, objective_s=0.08) == 3


def test_a_measured_latency_above_the_objective_grows_the_side_in_proportion():
    assert desired_replicas(ongoing_requests=5, replicas=2, measured_s=0.16, per_replica=10, objective_s=0.08) == 4


def test_a_met_objective_never_grows_the_side_but_lets_it_shrink_to_its_queue():
    assert desired_replicas(ongoing_requests=50, replicas=2, measured_s=0.05, per_replica=10, objective_s=0.08) == 2
    assert desired_replicas(ongoing_requests=5, replicas=3, measured_s=0.05, per_replica=10, objective_s=0.08) == 0.5


def test_with_nothing_in_flight_a_reported_latency_keeps_no_replica():
    assert desired_replicas(ongoing_requests=0, replicas=3, measured_s=0.5, per_replica=10, objective_s=0.08) == 0


def test_the_measured_latency_is_the_mean_of_the_replicas_reports():
    replicas = {ReplicaID("a", DEPLOYMENT): 0.1, ReplicaID("b", DEPLOYMENT): 0.3}
    assert measured_latency({"itl_s": replicas}, "itl_s") == pytest.approx(0.2)
    assert measured_latency({"other": replicas}, "itl_s") is None


def context(config: AutoscalingConfig, ongoing: float, replicas: int, now: float, state: dict) -> AutoscalingContext:
    running = [ReplicaID(str(i), DEPLOYMENT) for i in range(replicas)]
    return AutoscalingContext(
        deployment_id=DEPLOYMENT,
        deployment_name=DEPLOYMENT.name,
        app_name=DEPLOYMENT.app_name,
        current_num_replicas=replicas,
        target_num_replicas=replicas,
        running_replicas=running,
        total_num_requests=ongoing,
        total_queued_requests=0,
        aggregated_metrics={},
        raw_metrics={},
        capacity_adjusted_min_replicas=config.min_replicas,
        capacity_adjusted_max_replicas=config.max_replicas,
        policy_state=state,
        last_scale_up_time=None,
        last_scale_down_time=None,
        current_time=now,
        config=config,
        total_pending_async_requests=0,
    )


def test_inside_serves_wrapper_the_side_grows_only_after_the_upscale_delay(monkeypatch):
    """Serve's wrapper keeps the current target until the side has wanted more for upscale_delay_s of wall time."""
    config = AutoscalingConfig(min_replicas=1, max_replicas=8, upscale_delay_s=30, downscale_delay_s=600)
    policy = _apply_autoscaling_config(LatencyObjectivePolicy(**policy_kwargs("decode", 100, "p99")))
    clock = iter([1000.0, 1031.0])
    monkeypatch.setattr("ray.serve.autoscaling_policy.time.time", lambda: next(clock))
    first, state = policy(context(config, ongoing=60, replicas=1, now=1000.0, state={}))
    second, _ = policy(context(config, ongoing=60, replicas=1, now=1031.0, state=state))
    per_replica = requests_within(latency_curve("decode", "p99"), 0.1)
    assert (first, second) == (1, -(-60 // per_replica))
