"""Capacity per engine, before deploying: weights, KV/state bytes, blocks and tokens of KV, requests that fit.

vLLM 0.26's own arithmetic redone from the model's config.json and EC2's GPU memory; the one estimate is the profiled
overhead (docs/scaling.md#the-capacity-arithmetic-read-in-vllm-026 has the sources and the measurement)."""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from infra import PROJECT_DIR

GIB = 1024**3
MIB = 1024**2
CACHE_CONFIG = PROJECT_DIR / "vendor" / "vllm-0.26.0" / "cache.py"
# FlashAttention's kernel block sizes are MultipleOf(16) (vllm/v1/attention/backends/flash_attn.py
# get_supported_kernel_block_sizes), the same as CacheConfig.DEFAULT_BLOCK_SIZE.
KERNEL_BLOCK_ALIGNMENT = 16
DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2}
FP8_BYTES = 1  # fp8, fp8_e4m3 and fp8_e5m2 KV caches are torch.uint8 (vllm/utils/torch_utils.py)
FULL_ATTENTION = "full_attention"
LINEAR_ATTENTION = "linear_attention"
# Memory vLLM 0.26 takes beyond the checkpoint's tensors, fitted to one measured run of the default model
# (docs/scaling.md#the-capacity-arithmetic-read-in-vllm-026).
PROFILED_OVERHEAD_GIB = 2.56
# Blocks a request holds in each Gated DeltaNet group (MambaSpec.max_memory_usage_bytes, no speculative decoding):
# mamba_cache_mode "none" (prefix caching off) and "align" (on).
UNCACHED_STATE_BLOCKS, ALIGN_STATE_BLOCKS = 1, 2


class CapacityError(RuntimeError):
    """Not one request of maxModelLen fits an engine; the message names the numbers."""


@cache
def vllm_default_gpu_memory_utilization() -> float:
    """`CacheConfig.gpu_memory_utilization`'s default, read from vLLM 0.26.0's own source (vendored cache.py)."""
    for node in ast.walk(ast.parse(CACHE_CONFIG.read_text())):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "gpu_memory_utilization"
            and isinstance(node.value, ast.Call)
        ):
            (default,) = [k.value for k in node.value.keywords if k.arg == "default"]
            assert isinstance(default, ast.Constant) and isinstance(default.value, (int, float))
            return float(default.value)
    raise LookupError(f"no gpu_memory_utilization default in {CACHE_CONFIG}")


@dataclass(frozen=True)
class KvLayout:
    """What one worker of an engine keeps per block, from the model's config and the tensor-parallel size."""

    attention_layers: int
    state_layers: int
    attention_bytes_per_token: int  # one attention layer, one worker
    state_bytes: int  # one Gated DeltaNet layer's state page, one worker, unpadded

    @property
    def block_tokens(self) -> int:
        if not self.state_layers:
            return KERNEL_BLOCK_ALIGNMENT
        per_block = KERNEL_BLOCK_ALIGNMENT * self.attention_bytes_per_token
        return KERNEL_BLOCK_ALIGNMENT * math.ceil(self.state_bytes / per_block)

    @property
    def page_bytes(self) -> int:
        """One layer's page of one block: the attention page, which a state page is padded to."""
        return self.block_tokens * self.attention_bytes_per_token

    @property
    def group_size(self) -> int:
        counts = [n for n in (self.attention_layers, self.state_layers) if n]
        smallest, largest = min(counts), max(counts)
        return largest if largest < smallest * 1.5 else smallest

    @property
    def attention_groups(self) -> int:
        return math.ceil(self.attention_layers / self.group_size)

    @property
    def state_groups(self) -> int:
        return math.ceil(self.state_layers / self.group_size) if self.state_layers else 0

    @property
    def block_bytes(self) -> int:
        """One block of the shared pool: a page in each of `group_size` layers."""
        return self.page_bytes * self.group_size

    def blocks_per_request(self, max_model_len: int, prefix_caching: bool = False) -> int:
        state_blocks = ALIGN_STATE_BLOCKS if prefix_caching else UNCACHED_STATE_BLOCKS
        return self.attention_groups * math.ceil(max_model_len / self.block_tokens) + self.state_groups * state_blocks


def _dtype_bytes(name: Any, key: str) -> int:
    if name not in DTYPE_BYTES:
        raise ValueError(f"config.json: {key}={name!r} is not a dtype the capacity arithmetic knows")
    return DTYPE_BYTES[name]


def kv_layout(config: Mapping[str, Any], tensor_parallel_size: int, kv_cache_dtype: str = "auto") -> KvLayout | None:
    """The layout of a full-attention or a Gated DeltaNet hybrid (Qwen3.5, Qwen3-Next) text config; None for other layer
    kinds (sliding window, MLA, other state) or without the keys. An FP8 `kv_cache_dtype` stores attention KV at one
    byte per element, the Gated DeltaNet state not (docs/scaling.md#the-capacity-arithmetic-read-in-vllm-026)."""
    try:
        return _kv_layout(config.get("text_config") or config, config, tensor_parallel_size, kv_cache_dtype)
    except KeyError:
        return None


def _kv_layout(
    text: Mapping[str, Any], config: Mapping[str, Any], tensor_parallel_size: int, kv_cache_dtype: str
) -> KvLayout | None:
    if text.get("sliding_window") or text.get("kv_lora_rank"):
        return None
    layers = int(text["num_hidden_layers"])
    layer_types = text.get("layer_types") or [FULL_ATTENTION] * layers
    if set(layer_types) - {FULL_ATTENTION, LINEAR_ATTENTION}:
        return None
    dtype = text.get("dtype") or text.get("torch_dtype") or config.get("dtype") or config.get("torch_dtype")
    model_bytes = _dtype_bytes(dtype, "dtype")
    heads = int(text["num_attention_heads"])
    kv_heads = int(text.get("num_key_value_heads") or heads)
    head_size = int(text.get("head_dim") or int(text["hidden_size"]) // heads)
    kv_bytes = model_bytes if kv_cache_dtype == "auto" else FP8_BYTES
    attention_per_token = 2 * max(1, kv_heads // tensor_parallel_size) * head_size * kv_bytes
    state_layers = layer_types.count(LINEAR_ATTENTION)
    state_bytes = 0
    if state_layers:
        k_heads, v_heads = int(text["linear_num_key_heads"]), int(text["linear_num_value_heads"])
        k_dim, v_dim = int(text["linear_key_head_dim"]), int(text["linear_value_head_dim"])
        conv_dim = k_dim * k_heads * 2 + v_dim * v_heads
        conv = conv_dim // tensor_parallel_size * (int(text["linear_conv_kernel_dim"]) - 1) * model_bytes
        ssm_bytes = _dtype_bytes(text.get("mamba_ssm_dtype") or dtype, "mamba_ssm_dtype")
        state_bytes = conv + v_heads // tensor_parallel_size * v_dim * k_dim * ssm_bytes
    return KvLayout(layer_types.count(FULL_ATTENTION), state_layers, attention_per_token, state_bytes)


@dataclass(frozen=True)
class EngineCapacity:
    """One engine (tensor_parallel_size GPUs): what vLLM will find room for."""

    layout: KvLayout
    tensor_parallel_size: int
    gpu_memory_mib: int  # per GPU, EC2's figure
    gpu_memory_utilization: float
    weight_bytes: int  # the tensors vLLM loads, over all the engine's GPUs
    max_model_len: int
    overhead_gib: float = PROFILED_OVERHEAD_GIB  # per GPU
    prefix_caching: bool = False  # the engine runs vLLM's prefix caching (with state: mamba_cache_mode align)
    host_kv_gib: int = 0  # the engine's host-memory KV tier (infra/settings/kv_offload.py)

    @property
    def budget_bytes(self) -> int:
        """Per GPU: the share vLLM takes."""
        return int(self.gpu_memory_mib * MIB * self.gpu_memory_utilization)

    @property
    def kv_bytes(self) -> int:
        """Per GPU: what is left for KV and state (negative: not even the weights and activations fit)."""
        return self.budget_bytes - self.weight_bytes // self.tensor_parallel_size - int(self.overhead_gib * GIB)

    @property
    def blocks(self) -> int:
        return max(0, self.kv_bytes // self.layout.block_bytes)

    @property
    def blocks_per_request(self) -> int:
        return self.layout.blocks_per_request(self.max_model_len, self.prefix_caching)

    @property
    def requests(self) -> float:
        """Requests of max_model_len that fit at once (vLLM's "Maximum concurrency")."""
        return self.blocks / self.blocks_per_request

    @property
    def tokens(self) -> int:
        """vLLM's "GPU KV cache size" in tokens."""
        return int(self.requests * self.max_model_len)

    @property
    def host_blocks(self) -> int:
        """Blocks of the host tier: its bytes over a block of every GPU's cache (vllm/v1/kv_offload/cpu/spec.py:
        cpu_bytes_to_use // (worker_kv_bytes_per_block x world size))."""
        return self.host_kv_gib * GIB // (self.layout.block_bytes * self.tensor_parallel_size)

    @property
    def host_tokens(self) -> int:
        """Prompt tokens the host tier holds: it stores a block of each KV cache group for every full block of
        tokens (kv_connector/v1/offloading/scheduler.py keeps each group's chunks), so a Gated DeltaNet model's
        chunk takes a block in each state group beside the attention one (estimated from that reading)."""
        groups = self.layout.attention_groups + self.layout.state_groups
        return self.host_blocks // groups * self.layout.block_tokens

    def summary(self) -> dict[str, Any]:
        layout, tp = self.layout, self.tensor_parallel_size
        return {
            "gpuMemoryGiB": round(self.gpu_memory_mib * self.tensor_parallel_size / 1024, 2),
            "gpuMemoryUtilization": self.gpu_memory_utilization,
            "weightsGiB": round(self.weight_bytes / GIB, 2),
            "overheadGiB": round(self.overhead_gib * self.tensor_parallel_size, 2),
            "kvCacheGiB": round(self.kv_bytes * self.tensor_parallel_size / GIB, 2),
            "blockTokens": layout.block_tokens,
            "kvBytesPerBlock": layout.block_bytes * tp,
            "attentionKvBytesPerToken": layout.attention_bytes_per_token * layout.attention_layers * tp,
            "stateBytesPerSequence": layout.state_bytes * layout.state_layers * tp,
            "blocks": self.blocks,
            "blocksPerRequest": self.blocks_per_request,
            "kvTokens": self.tokens,
            "requestsOfMaxModelLen": round(self.requests, 2),
            "prefixCaching": self.prefix_caching,
            "hostKvGiB": self.host_kv_gib,
            "hostKvTokens": self.host_tokens,
        }

    def describe(self) -> str:
        s = self.summary()
        return (
            f"estimated per engine ({self.tensor_parallel_size} GPU(s), {s['gpuMemoryGiB']} GiB, vLLM's share "
            f"{self.gpu_memory_utilization}): weights {s['weightsGiB']} GiB, activations/graphs ~{s['overheadGiB']} "
            f"GiB (fitted to one measured run of the default model at max_num_seqs 32), "
            f"KV and state {s['kvCacheGiB']} GiB = {self.blocks} blocks of "
            f"{s['blockTokens']} tokens, {self.blocks_per_request} per request of maxModelLen="
            f"{self.max_model_len}: {s['kvTokens']} tokens of KV on the GPU, {s['requestsOfMaxModelLen']} requests "
            f"of maxModelLen at once; host-memory tier {self.host_kv_gib} GiB = {s['hostKvTokens']} prompt tokens"
        )


def align_block_problem(side: str, capacity: EngineCapacity, max_num_batched_tokens: int | None) -> str | None:
    """A hybrid engine with prefix caching whose step cannot hold one block: vLLM refuses to start."""
    layout = capacity.layout
    if not capacity.prefix_caching or not layout.state_layers or max_num_batched_tokens is None:
        return None
    if max_num_batched_tokens >= layout.block_tokens:
        return None
    return (
        f"{side}MaxNumBatchedTokens={max_num_batched_tokens} is invalid with prefix caching on the {side} side: the "
        f"model's Gated DeltaNet state is cached in blocks of {layout.block_tokens} tokens (mamba_cache_mode align), "
        f"and vLLM 0.26 refuses a step smaller than one block; allowed is at least {layout.block_tokens} (or 0, "
        "vLLM's default), or prefixCaching off"
    )


def capacity_problem(capacity: EngineCapacity) -> str | None:
    """Why vLLM would stop at "No available memory for the cache blocks" (or too little for one request)."""
    if capacity.requests >= 1:
        return None
    return (
        f"maxModelLen={capacity.max_model_len} does not fit an engine: {capacity.describe()}; vLLM would fail "
        'after deploying ("No available memory for the cache blocks" or "To serve at least one request with '
        "the model's max seq len\"); allowed is a layout where one request fits: raise tensorParallelSize, a "
        "gpuNodeType with more GPU memory, a smaller modelSource or maxModelLen (set modelPreflight to false to "
        "skip this estimate)"
    )
