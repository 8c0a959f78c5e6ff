"""FP8 weights and KV cache as settings: what reaches the engines, and what vLLM 0.26 would refuse on which GPU
(infra/settings/quantization.py, read from vLLM 0.26.0's source; vendor/vllm-0.26.0 holds the files the tests parse)."""

from __future__ import annotations

import pytest

from infra.settings.quantization import (
    CUDA_COMPUTE_CAPABILITY,
    checkpoint_problems,
    fp8_problems,
)
from tests.conftest import rejection
from tests.rayservice_parts import pd_args
from tools.instance_type_facts import INSTANCE_TYPES
from tools.offline import run_stack

SIDES = ("prefill", "decode")
# A config.json quantization_config as Qwen's FP8 checkpoints write it (fine-grained FP8, 128 x 128 blocks).
FP8_CHECKPOINT = {"quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}}


def engine_kwargs(overrides: dict) -> dict[str, dict]:
    args = pd_args(run_stack(overrides))
    return {side: args[f"{side}_config"]["engine_kwargs"] for side in SIDES}


def test_every_gpu_the_offline_ec2_names_has_a_compute_capability():
    """The GPU names EC2 reports for the GPU types the project runs on (tools/instance_type_facts.py)."""
    names = {facts.gpu_name for facts in INSTANCE_TYPES.values() if facts.gpus}
    assert names <= set(CUDA_COMPUTE_CAPABILITY)


def test_fp8_is_off_by_default_and_the_engines_get_vllms_defaults(dev):
    """No `quantization` or `kv_cache_dtype` in engine_kwargs: vLLM's own defaults (None and "auto")."""
    for side in SIDES:
        kwargs = pd_args(dev)[f"{side}_config"]["engine_kwargs"]
        assert "quantization" not in kwargs and "kv_cache_dtype" not in kwargs


def test_fp8_weights_reach_only_the_side_that_asks_for_them():
    """The weights' quantization is not in NIXL's compatibility hash (nixl/metadata.py), so a side may differ."""
    kwargs = engine_kwargs({"decodeQuantization": "fp8"})
    assert kwargs["decode"]["quantization"] == "fp8"
    assert "quantization" not in kwargs["prefill"]


def test_an_fp8_kv_cache_reaches_both_sides_alike():
    """NIXL's handshake refuses a pair whose `cache_dtype` differs (`compute_nixl_compatibility_hash`)."""
    kwargs = engine_kwargs({"kvCacheDtype": "fp8_e4m3"})
    assert [kwargs[side]["kv_cache_dtype"] for side in SIDES] == ["fp8_e4m3", "fp8_e4m3"]


def test_an_fp8_kv_cache_is_refused_on_a_t4():
    """A T4 is compute capability 7.5 (https://developer.nvidia.com/cuda-gpus); vLLM 0.26 has no attention
    backend with an FP8 KV cache there: FLASHINFER starts at 8.0, TRITON_ATTN at 8.9, FLASH_ATTN's FP8 is 9.x
    only (v1/attention/backends/*.py)."""
    overrides = {"gpuNodeType": "g4dn.8xlarge", "kvBufferDevice": "cuda", "kvCacheDtype": "fp8"}
    overrides |= {f"{side}Quantization": "fp8" for side in SIDES}
    (problem,) = rejection(overrides).problems
    assert problem.startswith(
        "kvCacheDtype='fp8' is invalid with gpuNodeType='g4dn.8xlarge': its T4 has compute capability 7.5, and "
        "vLLM 0.26 needs 8.0 or later for it; allowed is auto"
    )


def test_fp8_weights_are_accepted_on_a_t4_and_fit_it():
    """7.5 is Fp8Config's minimum (weight-only FP8 through Marlin below 8.9); with FP8 on both sides the default
    model's 16.8 GiB of bf16 weights no longer rule out the T4's 15360 MiB, which the capacity estimate sizes."""
    overrides = {"gpuNodeType": "g4dn.8xlarge", "kvBufferDevice": "cuda"}
    overrides |= {f"{side}Quantization": "fp8" for side in SIDES}
    kwargs = engine_kwargs(overrides)
    assert [kwargs[side]["quantization"] for side in SIDES] == ["fp8", "fp8"]


def test_the_t4_still_refuses_the_bf16_side():
    """One side in bf16 keeps the measured limit: 16.8 GiB of weights do not fit 15360 MiB."""
    overrides = {"gpuNodeType": "g4dn.8xlarge", "kvBufferDevice": "cuda", "decodeQuantization": "fp8"}
    (problem,) = rejection(overrides).problems
    assert "less than the model's 16.8 GiB of weights" in problem


@pytest.mark.parametrize("key", ["prefillQuantization", "decodeQuantization"])
def test_fp8_weights_are_refused_below_compute_capability_75(key):
    """A V100 (p3dn) is 7.0 (https://developer.nvidia.com/cuda-gpus), under Fp8Config's 75."""
    side = key.removesuffix("Quantization")
    (problem,) = fp8_problems("p3dn.24xlarge", "V100", [side], "auto")
    assert problem.startswith(
        f"{key}='fp8' is invalid with gpuNodeType='p3dn.24xlarge': its V100 has compute capability 7.0, and vLLM "
        "0.26 needs 7.5 or later for it; allowed is none"
    )


def test_a_gpu_whose_capability_is_not_known_is_refused_fp8_not_guessed():
    (problem,) = fp8_problems("x9.48xlarge", "Z100", [], "fp8")
    assert "the CUDA compute capability of its GPU 'Z100' is not known here" in problem


@pytest.mark.parametrize("gpu", ["L4", "L40S", "A100", "H100", "H200"])
def test_fp8_weights_and_kv_cache_are_accepted_from_compute_capability_80(gpu):
    assert fp8_problems("g6.8xlarge", gpu, list(SIDES), "fp8") == []


def test_a_checkpoint_of_another_quantization_refuses_online_fp8():
    """vLLM raises "Quantization method specified in the model config (awq) does not match the quantization
    method specified in the `quantization` argument (fp8)" (vllm/config/model.py `_verify_quantization`)."""
    config = {"quantization_config": {"quant_method": "awq"}}
    (problem,) = checkpoint_problems("org/model-AWQ", config, {"prefill": "none", "decode": "fp8"}, "L4")
    assert problem.startswith("decodeQuantization='fp8' is invalid with modelSource='org/model-AWQ'")


def test_an_fp8_checkpoint_is_taken_as_it_is_where_the_gpu_has_fp8():
    assert checkpoint_problems("Qwen/Qwen3-8B-FP8", FP8_CHECKPOINT, {"prefill": "fp8", "decode": "none"}, "L4") == []


def test_an_fp8_checkpoint_is_refused_below_compute_capability_75():
    (problem,) = checkpoint_problems("Qwen/Qwen3-8B-FP8", FP8_CHECKPOINT, {"prefill": "none"}, "V100")
    assert "is an FP8 checkpoint" in problem and "V100 is 7.0" in problem


def test_an_unknown_setting_value_is_refused_naming_what_is_allowed():
    problems = rejection({"kvCacheDtype": "int8", "prefillQuantization": "awq"}).problems
    assert "kvCacheDtype='int8' is invalid: allowed is one of auto, fp8, fp8_e4m3, fp8_e5m2" in problems
    assert "prefillQuantization='awq' is invalid: allowed is one of none, fp8" in problems
