"""Capacity in preview: vLLM 0.26's block and state sizing, redone from the model's config and weights, against
the default model's measured run (lab/records/gpu-end-to-end.md, "The default model through PD and the baseline, under
load": an L4's 0.9 x 23034 MiB, text only, maxModelLen 4096, max_num_seqs 32)."""

from __future__ import annotations

import pytest

from infra.preflight.checks import PreflightError, engine_capacity
from infra.serving.model_source import ModelFacts, hub_weight_tensors
from infra.settings.capacity import (
    GIB,
    PROFILED_OVERHEAD_GIB,
    EngineCapacity,
    kv_layout,
    vllm_default_gpu_memory_utilization,
)
from infra.settings.quantization import loaded_weight_bytes
from tools.offline import load_stack_config, run_stack
from tools.offline_models import HUB_CONFIGS, hub_fetch

DEFAULT_MODEL = HUB_CONFIGS["Qwen/Qwen3.5-9B"]
MEASURED_GPU_MIB = 23034  # nvidia-smi on an L4, the run's --gpu-memory-of
MEASURED_UTILIZATION = 0.9  # the run's share: 0.1442 of the H200's 143771 MiB
MEASURED_AVAILABLE_GIB = 1.01  # "Available KV cache memory: 1.01 GiB" (two decimals)
MEASURED_BLOCKS = 62  # NIXL "Hybrid SSM registration: num_blocks=62"


def text_weight_bytes(online_fp8: bool = False) -> int:
    return loaded_weight_bytes(hub_weight_tensors("Qwen/Qwen3.5-9B", None, True, hub_fetch), online_fp8)


def measured_run(overhead_gib: float = PROFILED_OVERHEAD_GIB) -> EngineCapacity:
    return EngineCapacity(
        layout=kv_layout(DEFAULT_MODEL, 1),
        tensor_parallel_size=1,
        gpu_memory_mib=MEASURED_GPU_MIB,
        gpu_memory_utilization=MEASURED_UTILIZATION,
        weight_bytes=text_weight_bytes(),
        max_model_len=4096,
        overhead_gib=overhead_gib,
    )


def test_the_block_and_state_pages_are_the_logged_ones():
    """From the config alone: NIXL's "block_len_per_layer={2162688}" and "mamba_ssm_size=(49152, 2097152)", vLLM's
    "Setting attention block size to 528 tokens" (`_align_hybrid_block_size`: 16 x cdiv(2,146,304 B of state,
    16 x 4,096 B per token)), and 4 KV-cache groups of 8 layers, 1 of attention and 3 of Gated DeltaNet
    (`_get_kv_cache_groups_uniform_page_size`)."""
    layout = kv_layout(DEFAULT_MODEL, 1)
    assert layout.state_bytes == 49152 + 2097152
    assert (layout.block_tokens, layout.page_bytes) == (528, 2162688)
    assert (layout.group_size, layout.attention_groups, layout.state_groups) == (8, 1, 3)


def test_the_logged_kv_memory_gives_the_logged_blocks_tokens_and_concurrency():
    """vLLM's own conversion of its available memory, with no estimate in it: 1.01 GiB // (2,162,688 B x 8
    layers) = 62 blocks (`get_num_blocks`); 11 blocks per 4,096-token request (8 attention + 3 state); "GPU KV
    cache size: 23,086 tokens", "Maximum concurrency for 4,096 tokens per request: 5.64x"
    (`get_max_concurrency_for_kv_cache_config`). Anything the log's rounding allows (1.005 to 1.015 GiB) gives 62."""
    layout = kv_layout(DEFAULT_MODEL, 1)
    for available_gib in (1.005, MEASURED_AVAILABLE_GIB, 1.0149):
        assert int(available_gib * GIB) // layout.block_bytes == MEASURED_BLOCKS
    assert layout.blocks_per_request(4096) == 11
    assert int(MEASURED_BLOCKS / 11 * 4096) == 23086
    assert round(MEASURED_BLOCKS / 11, 2) == 5.64


def test_the_text_only_weights_are_the_checkpoint_less_its_vision_tower():
    """The safetensors headers' tensors: 17.53 GiB in all ("Checkpoint size: 17.53 GiB"), 16.68 GiB without
    `model.visual` (vLLM's "Model loading took 16.8 GiB" adds 0.12 GiB of buffers, counted in the overhead);
    the 0.85 GiB tower is the 0.86 GiB the measured load saved (17.66 -> 16.8 GiB)."""
    text_only = text_weight_bytes() / GIB
    whole = loaded_weight_bytes(hub_weight_tensors("Qwen/Qwen3.5-9B", None, False, hub_fetch), False) / GIB
    assert round(whole, 2) == 17.53
    assert round(text_only, 2) == 16.68
    assert abs((whole - text_only) - (17.66 - 16.8)) < 0.02


def test_the_whole_estimate_gives_the_measured_62_blocks():
    """Budget, weights, overhead, blocks, tokens and requests in one: 62 blocks, 23,086 tokens, 5.64 requests.
    The overhead (2.56 GiB) was taken from this same run, so this holds the chain of arithmetic, not the overhead:
    62 blocks come out for any overhead from 2.552 to 2.567 GiB (one block is 16.5 MiB), and 0.1 GiB more or less
    moves the answer by 6 blocks."""
    capacity = measured_run()
    assert (capacity.blocks, capacity.tokens, round(capacity.requests, 2)) == (62, 23086, 5.64)
    assert measured_run(2.552).blocks == measured_run(2.567).blocks == 62
    assert (measured_run(2.46).blocks, measured_run(2.66).blocks) == (68, 56)


def test_vllm_026_takes_092_of_a_gpu_by_default():
    """`CacheConfig.gpu_memory_utilization` is `Field(default=0.92, ...)` in vLLM 0.26.0 (vendored cache.py); the
    measured runs set 0.9 themselves, so a real L4 has 0.02 x 22.5 GiB more for KV than they did."""
    assert vllm_default_gpu_memory_utilization() == 0.92


def test_preview_states_the_default_engines_capacity():
    """g6.8xlarge: EC2 reports the L4 at 22888 MiB (DescribeInstanceTypes), 146 MiB under nvidia-smi's 23034."""
    capacity = run_stack(stack="prod").outputs["engineCapacity"]["decode"]
    assert capacity["blockTokens"] == 528
    assert capacity["weightsGiB"] == 16.68
    assert capacity["blocks"] >= MEASURED_BLOCKS
    assert capacity["requestsOfMaxModelLen"] > 5


def test_a_layout_where_no_request_fits_is_refused_before_any_resource():
    """Qwen3.5's 262,144 positions at one L4: 497 attention blocks + 3 per request, beyond ~80 blocks; today vLLM
    says so only after the 45-minute wait ("To serve at least one request with the model's max seq len")."""
    with pytest.raises(PreflightError) as caught:
        run_stack({"maxModelLen": 262144}, stack="prod")
    message = str(caught.value)
    assert "maxModelLen=262144 does not fit an engine" in message
    assert "weights 16.68 GiB" in message and "500 per request of maxModelLen=262144" in message
    assert caught.value.declared_resources == []


def test_tensor_parallelism_splits_each_workers_pages():
    """Each of 2 workers holds 2 of the 4 KV heads (`get_num_kv_heads`) and half the Gated DeltaNet heads
    (`gated_delta_net_state_shape` divides by tp): half the page, the same 528-token block."""
    one, two = kv_layout(DEFAULT_MODEL, 1), kv_layout(DEFAULT_MODEL, 2)
    assert (two.attention_bytes_per_token, two.state_bytes) == (
        one.attention_bytes_per_token // 2,
        one.state_bytes // 2,
    )
    assert two.block_tokens == one.block_tokens == 528


def test_a_model_without_weights_on_the_hub_is_not_estimated():
    """The offline Hub has no safetensors for Qwen3-8B (404 EntryNotFound), so there is no capacity output."""
    run = run_stack({"modelSource": "Qwen/Qwen3-8B"}, stack="prod")
    assert "engineCapacity" not in run.outputs


# --- FP8 (infra/settings/quantization.py): estimates from vLLM's sizing; held to the GPU runs below ---


def test_an_fp8_kv_cache_doubles_the_block_but_not_its_bytes():
    """One byte per attention element (`STR_DTYPE_TO_TORCH_DTYPE["fp8"]` is torch.uint8) halves the bytes per
    token; the Gated DeltaNet state keeps its bf16 conv and float32 SSM state (`get_mamba_state_dtype_from_config`
    reads `mamba_cache_dtype`, not `cache_dtype`), so `_align_hybrid_block_size` gives 16 x cdiv(2,146,304,
    16 x 2,048) = 1,056 tokens in the same 2,162,688-byte page: 4 + 3 blocks per 4,096-token request, not 8 + 3."""
    bf16, fp8 = kv_layout(DEFAULT_MODEL, 1), kv_layout(DEFAULT_MODEL, 1, "fp8")
    assert fp8.attention_bytes_per_token == bf16.attention_bytes_per_token // 2
    assert fp8.state_bytes == bf16.state_bytes
    assert (fp8.block_tokens, fp8.page_bytes) == (1056, bf16.page_bytes)
    assert fp8.blocks_per_request(4096) == 7


def test_online_fp8_halves_the_linear_layers_and_keeps_embeddings_and_lm_head():
    """`Fp8Config.get_quant_method` quantizes `LinearBase` layers only: of the 16.68 GiB of text weights, the
    embedding and the LM head (1.895 GiB each, `VocabParallelEmbedding` / `ParallelLMHead`) and the Gated
    DeltaNet conv1d stay bf16; the 12.89 GiB of attention, Gated DeltaNet and MLP projections become 6.44 GiB."""
    assert round(text_weight_bytes(online_fp8=True) / GIB, 2) == 10.23


def test_preview_states_each_sides_capacity_with_fp8_on_the_decode_side():
    """FP8 weights on decode only: its engine gets the 6.45 GiB the weights no longer take, prefill does not."""
    capacity = run_stack({"decodeQuantization": "fp8"}, stack="prod").outputs["engineCapacity"]
    assert (capacity["prefill"]["weightsGiB"], capacity["decode"]["weightsGiB"]) == (16.68, 10.23)
    assert capacity["decode"]["blocks"] > 5 * capacity["prefill"]["blocks"]


def test_an_fp8_kv_cache_shows_as_the_longer_block_in_preview():
    capacity = run_stack({"kvCacheDtype": "fp8"}, stack="prod").outputs["engineCapacity"]
    assert capacity["prefill"]["blockTokens"] == capacity["decode"]["blockTokens"] == 1056


def test_a_pre_quantized_checkpoint_is_sized_as_stored():
    """vLLM takes a checkpoint's own quantization_config (`_verify_quantization`), so the safetensors bytes are
    what it loads and online FP8 is not applied on top: the side asking for fp8 gets no halving."""
    cfg = load_stack_config({"decodeQuantization": "fp8"}, stack="prod")
    quantized = {**DEFAULT_MODEL, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}}
    tensors = hub_weight_tensors("Qwen/Qwen3.5-9B", None, True, hub_fetch)
    capacity = engine_capacity(cfg, ModelFacts(quantized, tensors, ()))
    assert capacity["decode"]["weightsGiB"] == capacity["prefill"]["weightsGiB"] == 16.68


# The shipped settings measured on 2026-12-01 (lab/records/gpu-end-to-end.md, "FP8 on an L4's share"): the full-size
# shape, aggregated, vLLM's default 0.92 of an L4's 23034 MiB, maxModelLen 2048, max_num_seqs 32, CUDA graphs on.
SHIPPED_MAX_MODEL_LEN = 2048


def shipped_run(online_fp8: bool, kv_cache_dtype: str) -> EngineCapacity:
    return EngineCapacity(
        layout=kv_layout(DEFAULT_MODEL, 1, kv_cache_dtype),
        tensor_parallel_size=1,
        gpu_memory_mib=MEASURED_GPU_MIB,
        gpu_memory_utilization=vllm_default_gpu_memory_utilization(),
        weight_bytes=text_weight_bytes(online_fp8),
        max_model_len=SHIPPED_MAX_MODEL_LEN,
    )


def test_bf16_at_the_shipped_settings_is_the_measured_kv_exactly():
    """Logged: "Available KV cache memory: 1.46 GiB", "GPU KV cache size: 26,331 tokens", "Maximum concurrency for
    2,048 tokens per request: 12.86x" (90 blocks of 528 tokens, 7 per request)."""
    capacity = shipped_run(online_fp8=False, kv_cache_dtype="auto")
    assert round(capacity.kv_bytes / GIB, 2) == 1.46
    assert (capacity.tokens, round(capacity.requests, 2)) == (26331, 12.86)


def test_fp8_weights_and_kv_are_the_measured_block_and_one_block_short_of_the_measured_kv():
    """Logged: "Setting attention block size to 1056 tokens", "Available KV cache memory: 7.92 GiB", "GPU KV cache
    size: 201,113 tokens", "Maximum concurrency for 2,048 tokens per request: 98.20x": 491 blocks of 5 per request
    (201,113 = int(491 / 5 x 2048)). The estimate has 490: its FP8 weights are 0.16 GiB under the logged 10.39 GiB and
    its activation term, fitted in bf16, 0.18 GiB over this run's."""
    capacity = shipped_run(online_fp8=True, kv_cache_dtype="fp8")
    measured_blocks = 491
    assert capacity.layout.block_tokens == 1056 and capacity.blocks_per_request == 5
    assert int(measured_blocks / capacity.blocks_per_request * SHIPPED_MAX_MODEL_LEN) == 201113
    assert measured_blocks - 1 <= capacity.blocks <= measured_blocks
    assert abs(capacity.kv_bytes / GIB - 7.92) < 0.03
    assert abs(capacity.weight_bytes / GIB - 10.39) < 0.2


def test_fp8_weights_alone_are_the_bf16_block_and_one_block_short_of_the_measured_kv():
    """Logged (lab/records/bench/2026-12-01-fp8/smoke-fp8.log): "Model loading took 10.39 GiB", "Available KV cache
    memory: 7.92 GiB", "GPU KV cache size: 143,652 tokens", "Maximum concurrency for 2,048 tokens per request: 70.14x":
    with a bf16 KV cache the block stays 528 tokens, 7 per request, and 491 blocks give int(491 / 7 x 2048) = 143,652.
    The estimate has 490, short by the same block as FP8 weights + KV (the weights are the same)."""
    capacity = shipped_run(online_fp8=True, kv_cache_dtype="auto")
    measured_blocks = 491
    assert capacity.layout.block_tokens == 528 and capacity.blocks_per_request == 7
    assert int(measured_blocks / capacity.blocks_per_request * SHIPPED_MAX_MODEL_LEN) == 143652
    assert round(measured_blocks / capacity.blocks_per_request, 2) == 70.14
    assert measured_blocks - 1 <= capacity.blocks <= measured_blocks
    assert abs(capacity.kv_bytes / GIB - 7.92) < 0.03
