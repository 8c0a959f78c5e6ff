"""Latency objectives: each side's objective reaches its `autoscaling_config` as the stack's policy, which Ray Serve
2.58's own AutoscalingConfig accepts and builds; bad objectives and cooldowns are refused naming key, value and what is
allowed (infra/settings/autoscaling.py, serve_ext/ray_llm_eks_autoscale/policy.py)."""

from __future__ import annotations

from functools import cache

import pytest
from ray.serve._private.autoscaling_state import _resolve_policy_callable
from ray.serve.config import AutoscalingConfig

from infra.serving.code_package import SERVE_EXT
from infra.serving.serve_config import AUTOSCALE_CODE, AUTOSCALE_POLICY
from infra.settings.autoscaling import WARM_ENGINE_START_S, latency_curve
from tests.conftest import SERVE_AUTOSCALING, rejection
from tests.rayservice_parts import pd_args, pod_specs, serve_config, worker_group
from tools.offline import StackRun, run_stack

OBJECTIVES = {**SERVE_AUTOSCALING, "prefillTtftObjectiveMs": 3000, "decodeItlObjectiveMs": 100}


@cache
def objectives_run(**extra: object) -> StackRun:
    return run_stack({**OBJECTIVES, **extra})


def autoscaling(run: StackRun, side: str) -> dict:
    return pd_args(run)[f"{side}_config"]["deployment_config"]["autoscaling_config"]


@pytest.fixture
def serve_ext_importable(monkeypatch):
    """The cluster imports serve_ext's packages from the app's py_modules zip (infra/serving/code_package.py); here
    from the tree."""
    monkeypatch.syspath_prepend(str(SERVE_EXT))


@pytest.mark.parametrize(("side", "objective_s"), [("prefill", 3.0), ("decode", 0.1)])
def test_each_sides_objective_reaches_its_autoscaling_config(side, objective_s):
    policy = autoscaling(objectives_run(), side)["policy"]
    assert policy["policy_function"] == AUTOSCALE_POLICY
    assert policy["policy_kwargs"]["objective_s"] == objective_s
    assert policy["policy_kwargs"]["latency_curve"] == [list(p) for p in latency_curve(side, "p99")]


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_ray_serves_autoscaling_config_accepts_and_builds_the_policy(side, serve_ext_importable):
    """Ray 2.58's AutoscalingConfig takes `policy` as {policy_function: "module:attr", policy_kwargs: {...}}, imports
    and cloudpickles the function (ray/serve/config.py AutoscalingPolicy.serialize_policy), and the controller builds a
    class with the kwargs once (ray/serve/_private/autoscaling_state.py _resolve_policy_callable)."""
    config = AutoscalingConfig(**autoscaling(objectives_run(), side))
    policy = _resolve_policy_callable(config.policy)
    assert type(policy).__name__ == "LatencyObjectivePolicy"
    assert policy.objective_s == config.policy.policy_kwargs["objective_s"]


def test_the_policys_code_reaches_the_app_and_the_pods():
    run = objectives_run()
    (application,) = serve_config(run)["applications"]
    assert any(AUTOSCALE_CODE.zip_name() in uri for uri in application["runtime_env"]["py_modules"])
    volumes = [volume["name"] for volume in worker_group(run)["template"]["spec"]["volumes"]]
    assert AUTOSCALE_CODE.configmap_prefix in volumes


def test_every_configmap_the_ray_pods_mount_is_declared():
    """A pod whose ConfigMap volume names no ConfigMap never starts (ContainerCreating): the zip the app's py_modules
    names must be declared beside the volume that mounts it."""
    run = objectives_run()
    declared = {r.inputs["metadata"]["name"] for r in run.of_type("kubernetes:core/v1:ConfigMap")}
    mounted = {
        volume["configMap"]["name"]
        for spec in pod_specs(run)
        for volume in spec.get("volumes", [])
        if "configMap" in volume
    }
    assert AUTOSCALE_CODE.configmap_name() in mounted
    assert mounted <= declared


def test_without_objectives_serve_scales_on_ongoing_requests_with_its_own_delays():
    """Serve's defaults (AutoscalingConfig's fields) are not stated again: a config that states them anew would change
    the app's args and restart every engine for nothing (ray/serve/_private/deploy_utils.py get_app_code_version)."""
    config = autoscaling(run_stack(SERVE_AUTOSCALING), "decode")
    assert set(config) == {"min_replicas", "max_replicas", "target_ongoing_requests"}
    assert (AutoscalingConfig().upscale_delay_s, AutoscalingConfig().downscale_delay_s) == (30.0, 600.0)


def test_a_cooldown_other_than_serves_reaches_both_sides():
    run = objectives_run(serveDownscaleDelaySeconds=900, serveUpscaleDelaySeconds=10)
    for side in ("prefill", "decode"):
        config = AutoscalingConfig(**{k: v for k, v in autoscaling(run, side).items() if k != "policy"})
        assert (config.upscale_delay_s, config.downscale_delay_s) == (10, 900)


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        pytest.param(
            {"decodeItlObjectiveMs": 100},
            "decodeItlObjectiveMs=100 is invalid with serveAutoscaling=false: allowed is 0",
            id="objective-without-autoscaling",
        ),
        pytest.param(
            {**OBJECTIVES, "prefillTtftObjectiveMs": 500},
            "prefillTtftObjectiveMs=500 is invalid with latencyObjectivePercentile='p99': allowed is 0 (scale on "
            "ongoing requests) or at least 1226 ms",
            id="objective-below-the-lightest-load",
        ),
        pytest.param(
            {**OBJECTIVES, "serveDownscaleDelaySeconds": 60},
            f"serveDownscaleDelaySeconds='60' is invalid: allowed is an integer >= {WARM_ENGINE_START_S}",
            id="downscale-shorter-than-a-start",
        ),
        pytest.param(
            {**OBJECTIVES, "latencyObjectivePercentile": "p95"},
            "latencyObjectivePercentile='p95' is invalid: allowed is one of p50, p99",
            id="percentile-not-recorded",
        ),
    ],
)
def test_bad_objectives_are_refused_naming_key_value_and_allowed(overrides, named):
    assert named in str(rejection(overrides))
