"""serveConfigV2: parsed back from the RayService, checked field by field and by Ray's own classes.

Ray Serve LLM's PD builder module imports vLLM, so its rules (allowed arguments, one model, a KV
transfer config on both sides) are read from its source and checked here; LLMConfig and
ServeDeploySchema import without vLLM and validate each part exactly as the cluster will.
"""

from __future__ import annotations

import ast
import importlib.util
import math
from pathlib import Path

import pytest
from ray.llm._internal.serve.core.configs.llm_config import LLMConfig
from ray.serve.schema import ServeDeploySchema

from tests.rayservice_parts import RAYSERVICE, ROLLOUT, pd_args, serve_config
from tools.offline import run_stack

KNOWN_KV_CONNECTORS = {"NixlConnector", "LMCacheConnectorV1", "P2pNcclConnector", "MoRIIOConnector"}
KV_ROLES = {"kv_producer", "kv_consumer", "kv_both"}


def pd_builder_fields() -> set[str]:
    """The fields of Ray's PDServingArgs, read from the installed Ray's source."""
    spec = importlib.util.find_spec("ray.llm._internal.serve.serving_patterns.prefill_decode")
    source = Path(spec.submodule_search_locations[0], "builder.py").read_text()
    (pd_class,) = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == "PDServingArgs"]
    return {n.target.id for n in pd_class.body if isinstance(n, ast.AnnAssign)}


@pytest.fixture(scope="module")
def args(dev) -> dict:
    return pd_args(dev)


def test_one_pd_application_at_the_root(dev):
    (application,) = serve_config(dev)["applications"]
    assert application["import_path"] == "ray.serve.llm:build_pd_openai_app"
    assert application["route_prefix"] == "/"
    assert application["name"] == "ray-llm"


def test_whole_config_validates_with_rays_serve_schema(shipped):
    ServeDeploySchema.model_validate(serve_config(shipped))


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_each_side_validates_with_ray_serve_llms_llmconfig(args, side):
    LLMConfig.model_validate(args[f"{side}_config"])


def test_llmconfig_rejects_unknown_keys_so_the_check_has_teeth(args):
    with pytest.raises(ValueError):
        LLMConfig.model_validate({**args["prefill_config"], "engine_kwarg": {}})


def test_only_arguments_the_pd_builder_knows(args):
    fields = pd_builder_fields()
    assert {"prefill_config", "decode_config"} <= fields
    assert set(args) <= fields


@pytest.mark.parametrize("field", ["model_id", "model_source"])
def test_both_sides_load_the_configured_model(dev, args, field):
    """The Hub repo is loaded from the stack's model cache, its copy of it (infra/serving/model_cache.py)."""
    expected = {"model_id": "qwen3.5-9b", "model_source": dev.outputs["modelCacheUri"]}[field]
    assert args["prefill_config"]["model_loading_config"][field] == expected
    assert args["decode_config"]["model_loading_config"][field] == expected


def test_both_sides_share_the_stacks_context_length(args):
    assert args["prefill_config"]["engine_kwargs"]["max_model_len"] == 2048
    assert args["decode_config"]["engine_kwargs"]["max_model_len"] == 2048


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_kv_transfer_uses_nixl_over_libfabric(args, side):
    transfer = args[f"{side}_config"]["engine_kwargs"]["kv_transfer_config"]
    assert transfer["kv_connector"] == "NixlConnector"
    assert transfer["kv_connector_extra_config"] == {"backends": ["LIBFABRIC"]}


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_engine_kwargs_have_the_types_vllm_expects(args, side):
    kwargs = args[f"{side}_config"]["engine_kwargs"]
    assert type(kwargs["max_model_len"]) is int and kwargs["max_model_len"] > 0
    transfer = kwargs["kv_transfer_config"]
    assert transfer["kv_connector"] in KNOWN_KV_CONNECTORS
    assert transfer["kv_role"] in KV_ROLES
    assert all(isinstance(backend, str) for backend in transfer["kv_connector_extra_config"]["backends"])


def test_each_side_has_its_own_engine_id(args):
    ids = [args[f"{side}_config"]["engine_kwargs"]["kv_transfer_config"]["engine_id"] for side in ("prefill", "decode")]
    assert ids == ["prefill", "decode"]


def test_each_side_is_one_replica(args):
    for side in ("prefill_config", "decode_config"):
        replicas = {k: v for k, v in args[side]["deployment_config"].items() if k != "graceful_shutdown_timeout_s"}
        assert replicas == {"num_replicas": 1}


def test_model_override_reaches_both_sides():
    run = run_stack({"modelId": "qwen3-8b", "modelSource": "Qwen/Qwen3-8B", "maxModelLen": 8192})
    args = pd_args(run)
    assert run.outputs["modelCacheUri"].endswith("/models/Qwen/Qwen3-8B")
    for side in ("prefill", "decode"):
        assert args[f"{side}_config"]["model_loading_config"] == {
            "model_id": "qwen3-8b",
            "model_source": run.outputs["modelCacheUri"],
        }
        assert args[f"{side}_config"]["engine_kwargs"]["max_model_len"] == 8192


def test_changing_the_model_moves_only_the_rayservice_its_rollout_and_the_model_cache(dev):
    """A serve-only change updates the RayService in place and, after it, the wait for the new config; before it
    the model cache mirrors the new model (a new Job) under its own prefix (the cache's two IAM policies)."""
    changed = run_stack({"modelId": "qwen3-8b", "modelSource": "Qwen/Qwen3-8B", "maxModelLen": 8192})
    before = {(r.type, r.name): r.inputs for r in dev.resources}
    after = {(r.type, r.name): r.inputs for r in changed.resources}
    assert before.keys() == after.keys()
    moved = {key for key in before if before[key] != after[key]}
    assert moved == {
        (RAYSERVICE, "serving-rayservice"),
        (ROLLOUT, "serving-rollout"),
        ("kubernetes:batch/v1:Job", "model-cache-mirror"),
        ("aws:iam/rolePolicy:RolePolicy", "model-cache-reader"),
        ("aws:iam/rolePolicy:RolePolicy", "model-cache-mirror"),
    }


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_each_side_lays_out_mamba_conv_state_as_nixl_requires(args, side):
    """vLLM v0.26.0 `vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py` (NIXL worker
    init): when any KV-cache group is a `MambaSpec` it asserts `is_conv_state_dim_first()`, "3-read
    Mamba conv transfer requires DS conv state layout. Set VLLM_SSM_CONV_STATE_LAYOUT=DS".
    `vllm/model_executor/layers/mamba/mamba_utils.py` `get_conv_state_layout` defaults to "SD", and
    only Mamba layers, Mamba state copies and that transfer read it, so dense models are unaffected.
    The default model, Qwen/Qwen3.5-9B, caches its Gated DeltaNet layers as `MambaSpec`.
    Ray 2.58.0 `ray/llm/_internal/serve/core/server/llm_server.py` merges `LLMConfig.runtime_env`
    into the replica's `ray_actor_options`, and `engines/vllm/vllm_engine.py` gives the engine's
    placement-group task the same runtime_env.
    """
    assert args[f"{side}_config"]["runtime_env"]["env_vars"]["VLLM_SSM_CONV_STATE_LAYOUT"] == "DS"


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_kv_buffer_device_is_the_stacks_and_one_vllm_accepts(args, side):
    """vLLM 0.26 `vllm/distributed/kv_transfer/kv_connector/v1/nixl/utils.py`: NixlConnector accepts
    kv_buffer_device "cuda" or "cpu" on CUDA platforms; the dev stack (g6.8xlarge) resolves to "cuda"."""
    assert args[f"{side}_config"]["engine_kwargs"]["kv_transfer_config"]["kv_buffer_device"] == "cuda"


# Measured on the lent H200s standing in for a g6's L4 (lab/records/gpu-end-to-end.md, 2026-11-30): Qwen3.5-9B's shape
# at maxModelLen 4096, text only, left vLLM 47 KV-cache blocks (hybrid pages holding one sequence's state each)
# with vLLM's own max_num_seqs 256; the lower max_num_seqs saves graph memory (62 blocks at 32, measured), so 47
# is the bound that holds for any default at or under it.
L4_STATE_BLOCKS_OF_THE_DEFAULT_MODEL = 47


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_each_side_serves_text_only_so_the_default_model_fits_an_l4(args, side):
    """vLLM 0.26.0 `vllm/config/multimodal.py`: `language_model_only` sets every modality's limit to 0, and
    `vllm/model_executor/models/interfaces.py` `_mark_tower_model` skips a tower whose modalities are all
    at 0 (`qwen3_5.py` marks its vision tower for image and video), so it is neither loaded nor profiled.
    Measured at an L4's share: with the tower, weights 17.66 GiB and KV cache -0.07 GiB ("No available
    memory for the cache blocks"); text only, 16.8 GiB and 0.76 GiB."""
    assert args[f"{side}_config"]["engine_kwargs"]["language_model_only"] is True


def test_a_multimodal_stack_keeps_the_vision_tower_on_both_sides():
    # On an L40S: the default model's vision tower does not fit an L4 (tests/test_bad_input.py).
    args = pd_args(run_stack({"languageModelOnly": False, "gpuNodeType": "g6e.12xlarge"}))
    assert [args[f"{side}_config"]["engine_kwargs"]["language_model_only"] for side in ("prefill", "decode")] == [
        False,
        False,
    ]


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_each_side_runs_no_more_sequences_than_the_default_model_has_state_blocks_on_an_l4(args, side):
    """vLLM 0.26.0 `vllm/config/compilation.py` (cudagraph mode resolution): with full CUDA graphs and Mamba
    layers it raises "max_num_seqs (N) exceeds available Mamba cache blocks (B)" when max_num_seqs > B.
    vLLM's own default below 70 GiB is 256 (`vllm/engine/arg_utils.py` `get_batch_defaults`): that failed."""
    assert args[f"{side}_config"]["engine_kwargs"]["max_num_seqs"] <= L4_STATE_BLOCKS_OF_THE_DEFAULT_MODEL


def test_one_replica_a_side_keeps_the_builders_one_ingress_replica(args):
    """Two ingress replicas help only where both sides roll one replica at a time (docs/serve-updates.md)."""
    assert "num_replicas" not in args["ingress_deployment_config"]


@pytest.fixture(scope="module")
def two_a_side() -> dict:
    return pd_args(run_stack({"prefillReplicas": 2, "decodeReplicas": 2}))


def test_two_replicas_a_side_get_two_ingress_replicas(two_a_side):
    """Every serve-config change is a new code version of the ingress too, and Serve 2.58 stops an old replica as it
    starts its successor: OpenAiIngress's default of one replica (ray/llm/_internal/serve/core/ingress/ingress.py
    DEFAULT_INGRESS_OPTIONS, autoscaling_config with the default min/max 1) left 6.0 s without answers on CPU, two
    none (docs/serve-updates.md); on the GPU host two aggregated replicas behind two ingress replicas dropped 0 of 288
    (lab/records/updates/2026-12-03/)."""
    assert two_a_side["ingress_deployment_config"]["num_replicas"] == 2
    assert "ingress_deployment_config" in pd_builder_fields()


def test_ray_drops_the_ingress_autoscaling_default_beside_num_replicas(two_a_side):
    """Serve refuses num_replicas beside an autoscaling_config; Ray Serve LLM 2.58 drops its default autoscaling
    where the user's ingress_deployment_config sets num_replicas (ray/llm/_internal/common/dict_utils.py
    maybe_apply_llm_deployment_config_defaults), and serve.deployment accepts what is left."""
    from ray import serve
    from ray.llm._internal.common.dict_utils import maybe_apply_llm_deployment_config_defaults

    builders_default = {"max_ongoing_requests": 1_000_000_000, "autoscaling_config": {"target_ongoing_requests": 10**9}}
    options = maybe_apply_llm_deployment_config_defaults(builders_default, two_a_side["ingress_deployment_config"])
    deployment = serve.deployment(type("Ingress", (), {}), **options)
    assert deployment.num_replicas == 2
    assert deployment._deployment_config.autoscaling_config is None


def _ray_code_versions(config: dict) -> dict[str, str]:
    """Serve 2.58's own code version of each application (ray/serve/_private/deploy_utils.py get_app_code_version)."""
    from ray.serve._private.deploy_utils import get_app_code_version

    return {app.name: get_app_code_version(app) for app in ServeDeploySchema.model_validate(config).applications}


@pytest.mark.parametrize(
    "change",
    [{"maxModelLen": 8192}, {"modelSource": "Qwen/Qwen3-8B"}, {"kvCacheDtype": "fp8"}],
    ids=lambda change: next(iter(change)),
)
def test_the_engine_digest_moves_with_serves_code_version(change):
    """Every engine-restarting change is a new code version in Serve's eyes, and so a new digest (the newCluster path
    builds a cluster for it: infra/serving/rayservice.py CLUSTER_SPEC_ANNOTATION)."""
    from infra.serving.serve_config import engine_restart_digest

    before, after = serve_config(run_stack({})), serve_config(run_stack(change))
    assert _ray_code_versions(before) != _ray_code_versions(after)
    assert engine_restart_digest(before) != engine_restart_digest(after)


def test_a_serve_change_that_keeps_the_code_version_keeps_the_digest():
    """A route prefix (not a stack setting, but a field Serve applies to the running replicas) changes neither."""
    from infra.serving.serve_config import engine_restart_digest

    before = serve_config(run_stack({}))
    after = {"applications": [{**before["applications"][0], "route_prefix": "/v2"}]}
    assert _ray_code_versions(before) == _ray_code_versions(after)
    assert engine_restart_digest(before) == engine_restart_digest(after)


def test_replicas_being_replaced_get_the_longest_streams_time_not_serves_20_s(args):
    """Serve 2.58 kills a stopping replica graceful_shutdown_timeout_s after it stopped taking requests, 20 s unless
    set (ray/serve/_private/constants.py DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_S, replica.py perform_graceful_shutdown):
    each engine and the ingress, which every stream passes through, get a whole context at the slowest decode pace
    (infra/serving/serve_config.py DECODE_SECONDS_PER_TOKEN): at the default 4096 tokens x 60 ms, 246 s."""
    from ray.serve._private.constants import DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_S

    from infra.serving.serve_config import longest_stream_s

    max_model_len = args["decode_config"]["engine_kwargs"]["max_model_len"]
    expected = longest_stream_s(max_model_len)
    assert expected == math.ceil(max_model_len * 0.060) > DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_S == 20
    assert longest_stream_s(4096) == 246
    for side in ("prefill_config", "decode_config"):
        deployment_config = LLMConfig.model_validate(args[side]).deployment_config
        assert deployment_config["graceful_shutdown_timeout_s"] == expected
    assert args["ingress_deployment_config"]["graceful_shutdown_timeout_s"] == expected


@pytest.mark.parametrize("replicas", [1, 2])
def test_the_ingress_takes_the_timeout_beside_the_builders_defaults(replicas):
    """The PD builder merges ingress_deployment_config into OpenAiIngress' options (dict_utils.py
    maybe_apply_llm_deployment_config_defaults): with one replica a side its autoscaling default stays, and
    serve.deployment takes the result with the timeout."""
    from ray import serve
    from ray.llm._internal.common.dict_utils import maybe_apply_llm_deployment_config_defaults

    overrides = {"prefillReplicas": replicas, "decodeReplicas": replicas}
    ingress = pd_args(run_stack(overrides))["ingress_deployment_config"]
    builders_default = {"max_ongoing_requests": 1_000_000_000, "autoscaling_config": {"target_ongoing_requests": 10**9}}
    options = maybe_apply_llm_deployment_config_defaults(builders_default, ingress)
    deployment = serve.deployment(type("Ingress", (), {}), **options)
    assert deployment._deployment_config.graceful_shutdown_timeout_s == ingress["graceful_shutdown_timeout_s"]
    assert (deployment._deployment_config.autoscaling_config is None) is (replicas == 2)


def test_a_draining_proxy_waits_for_its_ongoing_requests_without_a_cap():
    """Serve's proxies need no setting: one draining (its node left without replicas) stops only once it has no
    ongoing request and RAY_SERVE_PROXY_MIN_DRAINING_PERIOD_S (30 s) has passed, a floor for the load balancer, not a
    deadline (ray/serve/_private/proxy.py GenericProxy.is_drained)."""
    import inspect

    from ray.serve._private.constants import PROXY_MIN_DRAINING_PERIOD_S
    from ray.serve._private.proxy import GenericProxy

    source = inspect.getsource(GenericProxy.is_drained)
    assert "return (not self._ongoing_requests) and (" in source
    assert "> PROXY_MIN_DRAINING_PERIOD_S" in source and PROXY_MIN_DRAINING_PERIOD_S == 30.0
