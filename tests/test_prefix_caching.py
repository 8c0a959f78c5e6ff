"""Prefix caching and prefix-aware routing as settings: what reaches each engine and each side's deployment, what the
preview says, what is refused (infra/settings/prefix_caching.py, infra/serving/prefix_routing.py; vLLM 0.26.0's rules
read in vendor/vllm-0.26.0, Ray 2.58's in the installed package)."""

from __future__ import annotations

import pulumi
import pytest
from ray.llm._internal.serve.core.configs.llm_config import LLMConfig
from ray.serve._private.config import DeploymentConfig
from ray.serve.schema import ServeDeploySchema

from infra.preflight.checks import PreflightError
from infra.serving import prefix_routing
from infra.serving.code_package import SERVE_EXT, ZIP_TOP
from infra.settings.capacity import kv_layout
from tests.conftest import rejection
from tests.rayservice_parts import configmap_zip, mounted_volume, pd_args, pod_specs, serve_config
from tools.offline import StackRun, run_stack
from tools.offline_models import HUB_CONFIGS

SIDES = ("prefill", "decode")
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
# A model the project has not measured (not in KNOWN_MODELS): its kind is vLLM's to find out.
UNKNOWN_MODEL = {"modelSource": "Qwen/Qwen3-8B", "modelId": "qwen3-8b"}
TWO_PREFILL_REPLICAS = {"prefillReplicas": 2}
ROUTED = {"prefixCaching": "on", "prefixAwareRouting": True, **TWO_PREFILL_REPLICAS}
DEFAULT_MODEL = HUB_CONFIGS["Qwen/Qwen3.5-9B"]


def engine_kwargs(run: StackRun, side: str) -> dict:
    return pd_args(run)[f"{side}_config"]["engine_kwargs"]


def deployment_config(run: StackRun, side: str) -> dict:
    return pd_args(run)[f"{side}_config"]["deployment_config"]


def said(monkeypatch: pytest.MonkeyPatch, overrides: dict) -> list[str]:
    """What the program passes to pulumi.log.info (the preview's diagnostics) for these overrides."""
    messages: list[str] = []
    monkeypatch.setattr(pulumi.log, "info", lambda message, *args, **kwargs: messages.append(message))
    run_stack(overrides)
    return messages


# --- the rules, against vLLM's source ---


# --- what the engines get ---


@pytest.mark.parametrize("side", SIDES)
def test_the_default_stack_leaves_vllms_default_so_its_serve_config_is_unchanged(dev, side):
    """prefixCaching auto on the default (hybrid) model is off on both sides, which is vLLM's default: stating it
    would change the serve config, and Serve would restart every engine of a running stack for nothing."""
    assert {"enable_prefix_caching", "mamba_cache_mode"}.isdisjoint(engine_kwargs(dev, side))


def test_on_caches_on_the_prefill_side_in_align_mode_and_leaves_the_hybrid_decode_uncached():
    run = run_stack({"prefixCaching": "on"})
    prefill, decode = engine_kwargs(run, "prefill"), engine_kwargs(run, "decode")
    assert (prefill["enable_prefix_caching"], prefill["mamba_cache_mode"]) == (True, "align")
    assert {"enable_prefix_caching", "mamba_cache_mode"}.isdisjoint(decode)


def test_off_turns_it_off_on_both_sides_of_a_model_vllm_would_cache():
    run = run_stack({**UNKNOWN_MODEL, "prefixCaching": "off"})
    assert [engine_kwargs(run, side)["enable_prefix_caching"] for side in SIDES] == [False, False]


def test_auto_on_a_model_the_project_has_not_measured_is_vllms_call():
    run = run_stack(UNKNOWN_MODEL)
    for side in SIDES:
        assert "enable_prefix_caching" not in engine_kwargs(run, side)


def test_on_with_a_model_of_unknown_kind_states_align_should_it_be_hybrid():
    """align keeps a hybrid prefill's block size the uncached decode's (NIXL needs them equal); an attention-only
    model has no Mamba cache for it to set (`MambaModelConfig` runs only for Mamba-type models)."""
    run = run_stack({**UNKNOWN_MODEL, "prefixCaching": "on"})
    assert engine_kwargs(run, "prefill")["mamba_cache_mode"] == "align"


@pytest.mark.parametrize("side", SIDES)
def test_ray_serve_llm_takes_the_cached_engine_config(side):
    LLMConfig.model_validate(pd_args(run_stack({"prefixCaching": "on"}))[f"{side}_config"])


def test_the_preview_says_what_each_side_gets_and_why(monkeypatch):
    (note,) = [m for m in said(monkeypatch, {}) if m.startswith("prefixCaching=")]
    assert "prefill off (measured on the default model's shape at an L4's memory" in note
    assert "decode off (read in vLLM 0.26's NIXL connector" in note


def test_the_preview_gives_on_as_the_reason_on_a_model_of_unknown_kind(monkeypatch):
    """engine_prefix_caching states True for the prefill side under on, whatever the model: the preview must not
    call it vLLM's default."""
    (note,) = [m for m in said(monkeypatch, {**UNKNOWN_MODEL, "prefixCaching": "on"}) if m.startswith("prefixCaching=")]
    assert "prefill on (prefixCaching is on)" in note


# --- capacity with the cache on ---


def test_a_default_model_request_holds_seven_blocks_uncached_and_ten_cached():
    """The block size is the one vLLM picks uncached (`_align_hybrid_block_size` takes one branch for both). At 2,048
    tokens a default-model request holds 4 attention blocks and 3 state groups: 7 blocks uncached, 10 cached (align
    holds two state blocks a request, vLLM 0.26 `MambaSpec.max_memory_usage_bytes`, lab/tests/test_vllm_source.py).
    Issue 37's cached run (an L4's share, block 528) logged 15,769 KV tokens: int(77 / 10 x 2048), where no block count
    gives it at 7 a request."""
    layout = kv_layout(DEFAULT_MODEL, 1)
    assert (layout.blocks_per_request(2048), layout.blocks_per_request(2048, prefix_caching=True)) == (7, 10)
    assert int(77 / 10 * 2048) == 15769
    assert not any(int(blocks / 7 * 2048) == 15769 for blocks in range(1, 200))


def test_the_capacity_output_counts_the_cached_sides_state_blocks():
    capacity = run_stack({"prefixCaching": "on"}, stack="prod").outputs["engineCapacity"]
    assert (capacity["prefill"]["prefixCaching"], capacity["decode"]["prefixCaching"]) == (True, False)
    assert capacity["prefill"]["blockTokens"] == capacity["decode"]["blockTokens"] == 528
    assert capacity["prefill"]["blocksPerRequest"] == capacity["decode"]["blocksPerRequest"] + 3


def test_a_cached_hybrid_side_whose_step_is_shorter_than_a_block_is_refused():
    """vLLM 0.26 `vllm/config/vllm.py`: "In Mamba cache align mode, block_size (...) must be <=
    max_num_batched_tokens"; the default model's block is 528 tokens on an L4."""
    with pytest.raises(PreflightError) as caught:
        run_stack({"prefixCaching": "on", "prefillMaxNumBatchedTokens": 512}, stack="prod")
    assert "prefillMaxNumBatchedTokens=512 is invalid with prefix caching on the prefill side" in str(caught.value)
    assert "allowed is at least 528" in str(caught.value)


# --- prefix-aware routing ---


def test_routing_with_prefix_caching_off_everywhere_is_refused_naming_why():
    problems = rejection({"prefixAwareRouting": True, "prefixCaching": "off"}).problems
    assert any(
        p.startswith("prefixAwareRouting=true is invalid with prefixCaching='off'") and "allowed is" in p
        for p in problems
    )


def test_routing_on_the_default_model_under_auto_is_refused_until_its_prefill_caches():
    (problem,) = [p for p in rejection({"prefixAwareRouting": True}).problems if p.startswith("prefixAwareRouting")]
    assert "modelSource='Qwen/Qwen3.5-9B', a hybrid model" in problem
    assert "prefixCaching 'on'" in problem


def test_with_one_replica_routing_changes_nothing_and_the_preview_says_so(monkeypatch):
    messages = said(monkeypatch, {"prefixCaching": "on", "prefixAwareRouting": True})
    assert "prefixAwareRouting=true changes nothing: prefill has one replica" in " ".join(messages)
    run = run_stack({"prefixCaching": "on", "prefixAwareRouting": True})
    assert "request_router_config" not in deployment_config(run, "prefill")
    assert "runtime_env" not in serve_config(run)["applications"][0]


@pytest.fixture(scope="module")
def routed() -> StackRun:
    return run_stack(ROUTED)


def test_a_side_of_two_replicas_names_the_stacks_router(routed):
    assert deployment_config(routed, "prefill")["request_router_config"] == {
        "request_router_class": "ray_llm_eks_routing.router:PrefixCacheAffinityRouter",
        "request_router_kwargs": {"do_eviction": True},
    }


def test_a_side_that_keeps_no_prefix_cache_keeps_serves_default_router():
    """The hybrid model's decode side keeps no cache, so prefix routing there would choose by nothing."""
    run = run_stack({**ROUTED, "decodeReplicas": 2})
    assert "request_router_config" not in deployment_config(run, "decode")


def test_a_side_that_may_scale_past_one_replica_routes_by_prefix():
    run = run_stack(
        {
            "prefixCaching": "on",
            "prefixAwareRouting": True,
            "serveAutoscaling": True,
            "prefillMaxReplicas": 2,
            "prefillTargetOngoingRequests": 4,
            "decodeMaxReplicas": 1,
            "decodeTargetOngoingRequests": 4,
        }
    )
    assert "request_router_config" in deployment_config(run, "prefill")


def test_the_router_options_are_ones_the_router_takes():
    """`PrefixCacheAffinityRouter.initialize_state` (ray/llm/_internal/serve/routing_policies/prefix_aware/
    prefix_aware_router.py) takes each option by name."""
    from ray.llm._internal.serve.routing_policies.prefix_aware.prefix_aware_router import PrefixCacheAffinityRouter

    parameters = PrefixCacheAffinityRouter.initialize_state.__code__.co_varnames
    assert set(prefix_routing.ROUTER_KWARGS) <= set(parameters)


def test_ray_takes_the_routed_config_and_imports_the_router_by_its_path(routed, monkeypatch):
    """Ray 2.58's `RequestRouterConfig` imports the class by its path when the deployment config is validated
    (ray/serve/config.py `_serialize_request_router_cls`): in the cluster from the app's py_modules, here from
    serve_ext/."""
    monkeypatch.syspath_prepend(str(SERVE_EXT))
    ServeDeploySchema.model_validate(serve_config(routed))
    prefill = pd_args(routed)["prefill_config"]
    LLMConfig.model_validate(prefill)
    router = DeploymentConfig(**prefill["deployment_config"]).request_router_config.get_request_router_class()
    assert router.__module__ == "ray_llm_eks_routing.router"


def test_the_app_loads_the_routers_zip_and_every_pod_mounts_it(routed):
    (application,) = serve_config(routed)["applications"]
    assert application["runtime_env"] == {"py_modules": [prefix_routing.CODE.uri()]}
    for spec in pod_specs(routed):
        volume = mounted_volume(spec, prefix_routing.CODE.mount)
        assert volume["configMap"] == {"name": prefix_routing.CODE.configmap_name()}


def test_the_routers_configmap_holds_the_zip_the_uri_names(routed):
    name, entries = configmap_zip(routed, "serving-prefix-router-code")
    assert f"file://{prefix_routing.CODE.mount}/{name}" == prefix_routing.CODE.uri()
    assert f"{ZIP_TOP}/ray_llm_eks_routing/router.py" in entries


def test_the_preview_names_the_routing_side(monkeypatch):
    messages = said(monkeypatch, ROUTED)
    assert "prefixAwareRouting=true: prefill routes by prefix over up to 2 replicas" in " ".join(messages)
