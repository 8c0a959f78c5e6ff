"""The CPU proof of the latency-objective policy (lab/autoscale_cpu.py): its stand-ins slow with load, each side's
config is the stack's and Ray Serve 2.58 accepts it, and the recorded run scaled up under load and down after it."""

from __future__ import annotations

import json

import pytest
from ray.serve.config import AutoscalingConfig

from infra.serving.code_package import SERVE_EXT
from infra.serving.serve_config import AUTOSCALE_POLICY
from lab import autoscale_cpu

RECORD = autoscale_cpu.PROJECT_DIR / "lab" / "records" / "2026-12-07-autoscale-cpu" / "run.json"
RUN = json.loads(RECORD.read_text())


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_a_stand_in_slows_as_its_replica_holds_more(side):
    latencies = [autoscale_cpu.standin_latency(side, held) for held in (1, 2, 8)]
    assert latencies == sorted(latencies) and latencies[0] < latencies[-1]


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_each_side_runs_the_stacks_policy_in_a_config_ray_accepts(side, monkeypatch):
    monkeypatch.syspath_prepend(str(SERVE_EXT))
    config = AutoscalingConfig(**autoscale_cpu.side_options(side)["autoscaling_config"])
    assert config.policy.policy_function == AUTOSCALE_POLICY
    assert config.policy.policy_kwargs["objective_s"] == autoscale_cpu.OBJECTIVES_S[side]


def test_the_recorded_run_loaded_the_stacks_policy_on_both_sides():
    loaded = [line for line in RUN["decisions"] if line.startswith("Using custom autoscaling policy")]
    assert len(loaded) == 2 and all(AUTOSCALE_POLICY in line for line in loaded)


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_the_recorded_run_scaled_up_under_load_and_down_after_it(side):
    summary = RUN["summary"][side]
    assert summary["first"] == 1
    assert summary["most_under_load"] > summary["first"]
    assert summary["last"] == summary["first"]
