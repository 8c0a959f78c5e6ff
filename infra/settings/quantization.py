"""FP8 weights and KV cache: what vLLM 0.26 accepts on which GPU, and what it stores in FP8.

An FP8 KV cache is one stack-wide `kvCacheDtype` because NIXL's handshake compares it; the weights' quantization may
differ per side (docs/scaling.md#fp8-read-in-vllm-0260-the-wheel-rayllm2580-pins has vLLM's source for each rule)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

QUANTIZATIONS = ("none", "fp8")
KV_CACHE_DTYPES = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")
FP8_WEIGHTS_MIN_CAPABILITY = (7, 5)  # Fp8Config.get_min_capability() == 75
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
