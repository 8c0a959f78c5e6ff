"""FP8 weights and KV cache: what vLLM 0.26 accepts on which GPU, and what it stores in FP8.

Read from vLLM 0.26.0's own source (the wheel ray[llm]==2.58.0 pins):
- weights: `quantization: fp8` makes `Fp8Config` (`vllm/model_executor/layers/quantization/fp8.py`), whose
  `get_min_capability` is 75; `VllmConfig._get_quantization_config` (`vllm/config/vllm.py`) raises "The
  quantization method fp8 is not supported for the current GPU" below it. Under 8.9 (no FP8 tensor cores) the
  weights are still stored in FP8 and run through the weight-only Marlin kernel
  (`kernels/linear/scaled_mm/marlin.py`, "FP8 Marlin for GPUs that lack FP8 hardware support", 7.5 and up);
- which layers: `Fp8Config.get_quant_method` quantizes every `LinearBase` built with the quant config, and
  nothing else (embeddings, the LM head's `ParallelLMHead`, norms, convolutions get no FP8 method). For Qwen3.5
  (`models/qwen3_5.py`) those are the full-attention layers' qkv_proj and o_proj (`Qwen3NextAttention`,
  `models/qwen3_next.py`), every layer's gate_up_proj and down_proj (`Qwen2MoeMLP`, `models/qwen2_moe.py`) and the
  Gated DeltaNet layers' in_proj_qkvz, in_proj_ba and out_proj (`QwenGatedDeltaNetAttention`,
  `layers/mamba/gdn/qwen_gdn_linear_attn.py`); its conv1d is a `ColumnParallelLinear` built without the quant
  config and stays in the model dtype, as do A_log, dt_bias and the gated norm. In checkpoint names these are
  q/k/v/o_proj, gate/up/down_proj, in_proj_qkv, in_proj_z, in_proj_b, in_proj_a and out_proj (the loader packs
  them into vLLM's merged layers: `packed_modules_mapping`, `models/qwen3_5.py`);
- a pre-quantized checkpoint: `ModelConfig._verify_quantization` (`vllm/config/model.py`) takes the method from
  config.json's `quantization_config.quant_method` and raises "Quantization method specified in the model config
  (...) does not match the quantization method specified in the `quantization` argument" when the setting names
  another;
- the KV cache: `cache_dtype` fp8 / fp8_e4m3 / fp8_e5m2 store one byte per element (`STR_DTYPE_TO_TORCH_DTYPE`,
  `vllm/utils/torch_utils.py`: torch.uint8). An attention backend must take it on the GPU
  (`vllm/platforms/cuda.py` `_get_backend_priorities`: FLASH_ATTN, FLASHINFER, TRITON_ATTN, ...):
  FLASH_ATTN only with FlashAttention 3 on compute capability 9.x, for fp8 / fp8_e4m3
  (`v1/attention/backends/flash_attn.py` `supports_kv_cache_dtype`); FLASHINFER on 8.0 to 12.1 for all three
  (`flashinfer.py` `supported_kv_cache_dtypes`, `supports_compute_capability`); TRITON_ATTN only from 8.9
  ("native FP8 (fp8e4nv) requires SM89+", `triton_attn.py`). So an FP8 KV cache needs 8.0 or later;
- the Gated DeltaNet state keeps its own dtypes: `get_mamba_state_dtype_from_config` (`models/qwen3_5.py`) reads
  `mamba_cache_dtype` and `mamba_ssm_cache_dtype`, never `cache_dtype` (`mamba_utils.py`
  `gated_delta_net_state_dtype`);
- the transfer: NIXL moves each layer's registered KV memory as bytes (`nixl/base_worker.py`: `block_stride =
  total_size // self.num_blocks` of the storage's `nbytes()`), with no dtype of its own, and puts `cache_dtype`
  in the compatibility hash both sides exchange (`nixl/metadata.py` `compute_nixl_compatibility_hash`, the
  `"cache_dtype"` factor); a mismatch fails the handshake ("NIXL compatibility hash mismatch", base_worker.py).
  An FP8 KV cache is therefore transferred as is, at half the bytes, provided prefill and decode both use it:
  one stack-wide `kvCacheDtype`. The weights' quantization is not in the hash, so it may differ per side.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

QUANTIZATIONS = ("none", "fp8")
KV_CACHE_DTYPES = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")
FP8_WEIGHTS_MIN_CAPABILITY = (7, 5)  # Fp8Config.get_min_capability() == 75
FP8_NATIVE_CAPABILITY = (8, 9)  # below: Marlin weight-only FP8 (MarlinFP8ScaledMMLinearKernel)
FP8_KV_CACHE_MIN_CAPABILITY = (8, 0)  # FLASHINFER's floor; FLASH_ATTN needs 9.x, TRITON_ATTN 8.9
# Online FP8 stores the weights of these checkpoint modules at one byte per element (the linear layers, see above).
ONLINE_FP8_MODULES = frozenset(
    {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    | {"in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj"}
)
WEIGHT_DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4}

# CUDA compute capability of the GPU models EC2 names in DescribeInstanceTypes (GpuInfo.Gpus[].Name), from
# NVIDIA's "CUDA GPU Compute Capability" table (https://developer.nvidia.com/cuda-gpus): B200 10.0, H100 and H200
# 9.0, L4 and L40S 8.9, A10 8.6 (EC2's A10G is the A10's AWS build, GA102 like it), A100 8.0, T4 7.5, V100 7.0.
CUDA_COMPUTE_CAPABILITY = {
    "B200": (10, 0),
    "H200": (9, 0),
    "H100": (9, 0),
    "L40S": (8, 9),
    "L4": (8, 9),
    "A10G": (8, 6),
    "A100": (8, 0),
    "T4": (7, 5),
    "V100": (7, 0),
}


def _version(capability: tuple[int, int]) -> str:
    return f"{capability[0]}.{capability[1]}"


def fp8_problems(gpu_node_type: str, gpu_name: str, quantized_sides: list[str], kv_cache_dtype: str) -> list[str]:
    """Why vLLM would refuse the FP8 settings on this GPU (each names the key, the GPU and what is allowed)."""
    wanted = [(f"{side}Quantization", "fp8", FP8_WEIGHTS_MIN_CAPABILITY) for side in quantized_sides]
    if kv_cache_dtype != "auto":
        wanted.append(("kvCacheDtype", kv_cache_dtype, FP8_KV_CACHE_MIN_CAPABILITY))
    if not wanted:
        return []
    capability = CUDA_COMPUTE_CAPABILITY.get(gpu_name)
    problems = []
    for key, value, needed in wanted:
        if capability is None:
            reason = f"the CUDA compute capability of its GPU {gpu_name!r} is not known here"
        elif capability < needed:
            reason = f"its {gpu_name} has compute capability {_version(capability)}"
        else:
            continue
        problems.append(
            f"{key}={value!r} is invalid with gpuNodeType={gpu_node_type!r}: {reason}, and vLLM 0.26 needs "
            f"{_version(needed)} or later for it; allowed is "
            f"{'none' if key.endswith('Quantization') else 'auto'}, or a gpuNodeType with a GPU of "
            f"{', '.join(name for name, cc in CUDA_COMPUTE_CAPABILITY.items() if cc >= needed)}"
        )
    return problems


def checkpoint_quantization(config: Mapping[str, Any]) -> str | None:
    """The method of a pre-quantized checkpoint (config.json's `quantization_config.quant_method`), else None."""
    quantization = config.get("quantization_config") or (config.get("text_config") or {}).get("quantization_config")
    return str(quantization["quant_method"]) if quantization else None


def checkpoint_problems(
    source: str, config: Mapping[str, Any], side_quantization: Mapping[str, str], gpu_name: str
) -> list[str]:
    """A `<side>Quantization` vLLM would refuse for this checkpoint, and an FP8 checkpoint on a GPU without FP8."""
    method = checkpoint_quantization(config)
    if method is None:
        return []
    problems = [
        f"{side}Quantization={value!r} is invalid with modelSource={source!r}: its config.json is quantized with "
        f"{method!r}, and vLLM 0.26 refuses another method (vllm/config/model.py _verify_quantization); allowed "
        "is none (vLLM takes the checkpoint's own)"
        for side, value in side_quantization.items()
        if value != "none" and value != method
    ]
    capability = CUDA_COMPUTE_CAPABILITY.get(gpu_name)
    if method == "fp8" and (capability is None or capability < FP8_WEIGHTS_MIN_CAPABILITY):
        problems.append(
            f"modelSource={source!r} is an FP8 checkpoint, which vLLM 0.26 loads only on compute capability "
            f"{_version(FP8_WEIGHTS_MIN_CAPABILITY)} or later (Fp8Config.get_min_capability); the gpuNodeType's "
            f"{gpu_name or 'GPU'} is {_version(capability) if capability else 'not known here'}"
        )
    return problems


def loaded_weight_bytes(tensors: Mapping[str, tuple[str, int]], online_fp8: bool) -> int:
    """The bytes vLLM keeps of these checkpoint tensors (name -> (safetensors dtype, bytes)); with online FP8
    the linear layers' weights at one byte per element (their per-tensor float32 scales are a few bytes). A vision
    tower's layers have other names and count at the checkpoint's dtype: an upper bound where vLLM quantizes them."""
    return sum(
        size // WEIGHT_DTYPE_BYTES[dtype] if online_fp8 and _online_fp8(name, dtype) else size
        for name, (dtype, size) in tensors.items()
    )


def _online_fp8(name: str, dtype: str) -> bool:
    module, _, kind = name.rpartition(".")
    return kind == "weight" and module.rpartition(".")[2] in ONLINE_FP8_MODULES and dtype in WEIGHT_DTYPE_BYTES
