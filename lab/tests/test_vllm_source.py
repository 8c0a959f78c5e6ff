"""The product's vLLM rules against vLLM 0.26.0's own source: the files vendored out of its wheel
(vendor/vllm-0.26.0, SOURCE.txt), parsed by lab/tests/vllm_source.py. Prefix caching (infra/settings/prefix_caching.py,
infra/settings/capacity.py) and quantization (infra/settings/quantization.py): each setting is an engine argument vLLM
has, each value one it offers, each default the one vLLM would pick."""

from __future__ import annotations

import ast
from types import SimpleNamespace

import pytest

from infra.settings.capacity import ALIGN_STATE_BLOCKS, UNCACHED_STATE_BLOCKS
from infra.settings.prefix_caching import ATTENTION_ONLY, AUTO_PREFILL, DECODE, HYBRID, PD_MAMBA_CACHE_MODE
from infra.settings.quantization import FP8_WEIGHTS_MIN_CAPABILITY, KV_CACHE_DTYPES
from lab.tests.vllm_source import engine_args_fields, vllm_class, vllm_method, vllm_tree

# --- prefix caching ---


def vllm_default_prefix_caching(hybrid: bool) -> bool:
    """vLLM 0.26's default, evaluated from its own expression in `EngineArgs._set_default_chunked_prefill_and_
    prefix_caching_args` (vllm/engine/arg_utils.py) for a generation model that supports prefix caching."""
    method = vllm_method("arg_utils.py", "EngineArgs", "_set_default_chunked_prefill_and_prefix_caching_args")
    (assignment,) = [
        n
        for n in ast.walk(method)
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "default_prefix_caching"
    ]
    model_config = SimpleNamespace(is_prefix_caching_supported=True, is_hybrid=hybrid)
    return bool(eval(compile(ast.Expression(assignment.value), "arg_utils.py", "eval"), {"model_config": model_config}))


@pytest.mark.parametrize("kind", [HYBRID, ATTENTION_ONLY])
def test_auto_on_a_prefilling_engine_agrees_with_vllms_own_default(kind):
    """`auto` equals vLLM's `default_prefix_caching = is_prefix_caching_supported and not is_hybrid`: for attention-only
    models that is its basis; for hybrid ones the GPU host's run measured the cached path slower and outside batching's
    logprob spread (lab/records/bench/2026-12-06-prefix-cache/), so the stack's serve config of the default model does
    not move."""
    assert AUTO_PREFILL[kind].enabled == vllm_default_prefix_caching(kind)


@pytest.mark.parametrize("kind", [HYBRID, ATTENTION_ONLY])
def test_the_decode_rule_is_vllms_default_too(kind):
    """Read in the NIXL connector (infra/settings/prefix_caching.py): a hybrid decode gains nothing from a cache of
    its own and an attention-only one pulls only what it lacks; both are what vLLM does unasked, so the decode side's
    config never needs to say it."""
    assert DECODE[kind].enabled == vllm_default_prefix_caching(kind)


def test_the_engine_arguments_set_are_vllms():
    """`EngineArgs` (vllm/engine/arg_utils.py) has `enable_prefix_caching` and `mamba_cache_mode`, and
    `MambaCacheMode` (vllm/config/cache.py) offers align."""
    assert {"enable_prefix_caching", "mamba_cache_mode"} <= engine_args_fields()
    (alias,) = [
        n
        for n in ast.walk(vllm_tree("cache.py"))
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "MambaCacheMode"
    ]
    assert PD_MAMBA_CACHE_MODE in {element.value for element in alias.value.slice.elts}


def test_align_keeps_the_block_and_holds_two_state_blocks_per_request():
    """vLLM 0.26 `MambaSpec.max_memory_usage_bytes` (vllm/v1/kv_cache_interface.py): align holds
    `page_size_bytes * (2 + num_speculative_blocks)` a request, none `(1 + ...)`: infra/settings/capacity.py's
    ALIGN_STATE_BLOCKS and UNCACHED_STATE_BLOCKS."""
    method = vllm_method("kv_cache_interface.py", "MambaSpec", "max_memory_usage_bytes")
    (align,) = [
        branch
        for branch in ast.walk(method)
        if isinstance(branch, ast.If) and getattr(branch.test.comparators[0], "value", None) == "align"
    ]
    (align_return,) = align.body
    (uncached_return,) = align.orelse
    assert align_return.value.right.left.value == ALIGN_STATE_BLOCKS
    assert uncached_return.value.right.left.value == UNCACHED_STATE_BLOCKS


# --- quantization ---


def test_the_settings_are_engine_arguments_vllm_has():
    """`EngineArgs` (vllm/engine/arg_utils.py) declares `quantization` and `kv_cache_dtype`, which Ray Serve LLM
    hands it from engine_kwargs."""
    assert {"quantization", "kv_cache_dtype"} <= engine_args_fields()


def test_the_kv_cache_dtypes_offered_are_vllms_own():
    """`CacheDType` (vllm/config/cache.py) lists each value kvCacheDtype takes."""
    (alias,) = [
        n
        for n in ast.walk(vllm_tree("cache.py"))
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and n.targets[0].id == "CacheDType"
    ]
    values = {element.value for element in alias.value.slice.elts}
    assert set(KV_CACHE_DTYPES) <= values


def test_fp8_weights_need_the_capability_fp8config_states():
    """`Fp8Config.get_min_capability` returns 75 (vllm/model_executor/layers/quantization/fp8.py), which
    `VllmConfig._get_quantization_config` compares with the GPU's."""
    (method,) = [
        n for n in ast.walk(vllm_tree("fp8.py")) if isinstance(n, ast.FunctionDef) and n.name == "get_min_capability"
    ]
    (statement,) = method.body
    assert statement.value.value == FP8_WEIGHTS_MIN_CAPABILITY[0] * 10 + FP8_WEIGHTS_MIN_CAPABILITY[1]


def class_bases(name: str, class_name: str) -> set[str]:
    return {ast.unparse(base) for base in vllm_class(name, class_name).bases}


def test_the_default_architecture_takes_lora():
    """vllm/model_executor/models/qwen3_5.py: Qwen3_5ForConditionalGeneration (the default model's and the tiny
    model's architecture) is a Qwen3VLForConditionalGeneration, which declares SupportsLoRA (qwen3_vl.py):
    docs/models.md serves its adapters on an aggregated model."""
    assert "Qwen3VLForConditionalGeneration" in class_bases("qwen3_5.py", "Qwen3_5ForConditionalGeneration")
    assert "SupportsLoRA" in class_bases("qwen3_vl.py", "Qwen3VLForConditionalGeneration")


def test_the_gated_deltanet_projections_are_among_its_lora_modules():
    """The hybrid layers' packed input projections are in Qwen3.5's packed_modules_mapping, beside Qwen3-VL's."""
    (mapping,) = [
        node.value
        for node in vllm_class("qwen3_5.py", "Qwen3_5ForConditionalGeneration").body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "packed_modules_mapping"
    ]
    assert {"in_proj_qkvz", "in_proj_ba"} <= {ast.literal_eval(key) for key in mapping.right.keys if key is not None}


def test_the_proofs_second_architecture_takes_lora_too():
    """vllm/model_executor/models/llama.py: LlamaForCausalLM (lab/lora_adapters.py's tiny Llama) declares
    SupportsLoRA."""
    assert "SupportsLoRA" in class_bases("llama.py", "LlamaForCausalLM")
