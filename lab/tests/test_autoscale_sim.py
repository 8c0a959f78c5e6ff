"""The day-of-load simulation (lab/autoscale_sim.py): its record is its output, its start times are the cold-start
model's, and the policy fleet follows the load within the bounds the fixed fleet sets."""

from __future__ import annotations

from functools import cache

from infra.settings.autoscaling import NEW_NODE_ENGINE_START_S, WARM_ENGINE_START_S
from lab import autoscale_sim, cold_start

README = (autoscale_sim.RECORD / "README.md").read_text()


@cache
def comparison() -> autoscale_sim.Comparison:
    return autoscale_sim.compare()


def test_the_records_table_is_the_simulations_output():
    generated = f"{autoscale_sim.table(comparison())}\n\n{autoscale_sim.figures_table()}"
    assert generated in README, "python -m lab.autoscale_sim --write"


def test_the_start_times_are_the_cold_start_models():
    """infra/settings/autoscaling.py holds them as plain constants (the product never imports the lab)."""
    new_node = sum(step.after.seconds for step in cold_start.new_node_steps())
    warm = sum(step.after.seconds for step in cold_start.restarted_pod_steps())
    assert (NEW_NODE_ENGINE_START_S, WARM_ENGINE_START_S) == (round(new_node), round(warm))


def test_the_fixed_fleet_holds_both_objectives_all_day():
    fixed = comparison().days[0]
    assert fixed.slo_attainment == 1.0


def test_one_replica_fewer_on_either_side_would_not_hold_the_peak():
    prefill, decode = comparison().sizing
    peak = comparison().peak_rate
    assert autoscale_sim.peak_sizing(peak) == (prefill, decode)
    short = autoscale_sim.simulate("short", autoscale_sim.fixed_sides(prefill - 1, decode), [peak] * 3600, False)
    assert short.slo_attainment < 1.0


def test_the_policy_fleet_grows_by_day_and_shrinks_by_night():
    timeline = comparison().days[1].timeline
    nodes_at = {minute: nodes for minute, _rate, _p, _d, nodes, _t, _i in timeline}
    night = [nodes for minute, nodes in nodes_at.items() if minute < 6 * 60]
    assert min(night) == 2  # one replica a side, the floor
    assert nodes_at[16 * 60] > max(night)


def test_the_policy_fleet_stays_within_the_fixed_fleets_replicas_and_uses_fewer_gpu_hours():
    fixed, scaled = comparison().days[:2]
    assert scaled.most_replicas == dict(zip(("prefill", "decode"), comparison().sizing, strict=True))
    assert scaled.gpu_hours < fixed.gpu_hours


def test_serves_delay_keeps_the_target_until_the_side_has_wanted_more_for_the_whole_delay():
    side = autoscale_sim.Side("decode", 1, 4, 1, 1)
    side.decide(3, now=0)
    side.decide(3, now=autoscale_sim.DELAYS["upscale"] - 1)
    held = side.target
    side.decide(3, now=autoscale_sim.DELAYS["upscale"])
    assert (held, side.target) == (1, 3)


def test_the_same_seed_gives_the_same_day_and_another_another():
    assert autoscale_sim.load_rate(7) == autoscale_sim.load_rate(7)
    assert autoscale_sim.load_rate(7) != autoscale_sim.load_rate(8)
