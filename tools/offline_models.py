"""The model repositories an offline run reads, the Hugging Face Hub's and the S3 mirror's, as those services answer:
the model preflight's config.json and checkpoint headers come from the tables here (and tools/offline_hub/), never
from the network."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from typing import Any

from infra.serving import model_source
from tools.project import PROJECT_DIR

# Model repositories the offline Hub holds, as huggingface.co serves their config.json: the default model with
# the full Qwen3.5-9B dimensions (tools/offline_hub/: the config the lab's tiny model writes in its "full" shape,
# lab/tests/test_tiny_model.py holds the two equal), and Llama 3.1 8B, a gated repository whose
# config stretches 8192 positions to 131072 by RoPE scaling (its published config.json).
HUB_CONFIGS: dict[str, dict[str, Any]] = {
    "Qwen/Qwen3.5-9B": json.loads((PROJECT_DIR / "tools" / "offline_hub" / "Qwen3.5-9B.config.json").read_text()),
    # A public dense model (its published config.json, the keys vLLM reads for the length check).
    "Qwen/Qwen3-8B": {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "max_position_embeddings": 40960,
        "rope_scaling": None,
        "rope_theta": 1000000,
    },
    "meta-llama/Llama-3.1-8B": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "max_position_embeddings": 131072,
        "rope_scaling": {
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        },
    },
}
GATED_REPOS = frozenset({"meta-llama/Llama-3.1-8B"})
# The tensors of the default model's checkpoint (name -> safetensors dtype and shape): transformers 5.17's
# Qwen3_5ForConditionalGeneration built on the meta device from that config, its state_dict as `save_pretrained`
# writes it (17.53 GiB in all, vLLM's "Checkpoint size: 17.53 GiB" for the checkpoint the GPU runs wrote,
# lab/records/gpu-end-to-end.md). The other offline repos have no weights: the Hub answers EntryNotFound.
HUB_TENSORS = {"Qwen/Qwen3.5-9B": PROJECT_DIR / "tools" / "offline_hub" / "Qwen3.5-9B.tensors.json"}
SAFETENSORS_DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4}
# save_pretrained's max_shard_size="5GB" (lab/tiny_model.py), in bytes.
MAX_SHARD_BYTES = 5 * 10**9


@functools.cache
def hub_checkpoint(repo: str) -> dict[str, bytes]:
    """A sharded safetensors checkpoint as the Hub holds it: the index (`metadata.total_size`, `weight_map`) and
    each shard's first bytes, the 8-byte header length and the JSON header with every tensor's `data_offsets`
    (the safetensors format, huggingface.co/docs/safetensors); the tensor data itself is left out."""
    tensors = json.loads(HUB_TENSORS[repo].read_text())
    shards: list[dict[str, Any]] = [{}]
    sizes = [0]
    for name, (dtype, shape) in tensors.items():
        size = SAFETENSORS_DTYPE_BYTES[dtype] * math.prod(shape)
        if sizes[-1] and sizes[-1] + size > MAX_SHARD_BYTES:
            shards.append({})
            sizes.append(0)
        shards[-1][name] = {"dtype": dtype, "shape": shape, "data_offsets": [sizes[-1], sizes[-1] + size]}
        sizes[-1] += size
    names = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    files = {
        name: len(header).to_bytes(8, "little") + header
        for name, shard in zip(names, shards, strict=True)
        for header in [json.dumps({"__metadata__": {"format": "pt"}, **shard}).encode()]
    }
    weight_map = {tensor: name for name, shard in zip(names, shards, strict=True) for tensor in shard}
    index = {"metadata": {"total_size": sum(sizes)}, "weight_map": weight_map}
    return {model_source.SAFETENSORS_INDEX: json.dumps(index).encode(), **files}


def _byte_range(body: bytes, headers: Mapping[str, str]) -> model_source.HttpAnswer:
    """A file's answer: whole (200), or the bytes a `Range: bytes=a-b` asks (206, `Content-Range`)."""
    asked = headers.get("Range")
    if not asked:
        return model_source.HttpAnswer(200, {}, body)
    start, _, end = asked.removeprefix("bytes=").partition("-")
    part = body[int(start) : int(end) + 1]
    return model_source.HttpAnswer(206, {"Content-Range": f"bytes {start}-{int(start) + len(part) - 1}/*"}, part)


# Objects the offline S3 holds: (bucket, key) -> (Content-Type, body); a model mirrored as `aws s3 sync` writes it
# (application/json for .json).
S3_OBJECTS: dict[tuple[str, str], tuple[str, str]] = {
    ("example-models", "qwen3.5-9b/config.json"): ("application/json", json.dumps(HUB_CONFIGS["Qwen/Qwen3.5-9B"])),
}


def hub_fetch(url: str, headers: Mapping[str, str]) -> model_source.HttpAnswer:
    """huggingface.co's answers for a file of a repo: 200 and the file, or the status and `X-Error-Code` the Hub
    sends (huggingface_hub `utils/_http.py` `hf_raise_for_status`): 401 RepoNotFound for a repo it does not
    show this caller, 401 GatedRepo for a gated repo asked without a token, 404 EntryNotFound for a file."""
    repo, _, filename = url.removeprefix(f"{model_source.HUB}/").partition("/resolve/main/")
    if repo not in HUB_CONFIGS:
        return model_source.HttpAnswer(401, {"X-Error-Code": "RepoNotFound"}, b'{"error":"Repository not found"}')
    if repo in GATED_REPOS and "Authorization" not in headers:
        # Anonymous: 401 (a signed-in user who has not accepted the conditions gets 403), both with GatedRepo.
        message = f"Access to model {repo} is restricted. You must have access to it and be authenticated."
        return model_source.HttpAnswer(401, {"X-Error-Code": "GatedRepo"}, json.dumps({"error": message}).encode())
    if filename != "config.json":
        files = hub_checkpoint(repo) if repo in HUB_TENSORS else {}
        if filename in files:
            return _byte_range(files[filename], headers)
        return model_source.HttpAnswer(404, {"X-Error-Code": "EntryNotFound"}, b'{"error":"Entry not found"}')
    return model_source.HttpAnswer(200, {"Content-Type": "application/json"}, json.dumps(HUB_CONFIGS[repo]).encode())
