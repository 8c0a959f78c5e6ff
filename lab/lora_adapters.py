"""The several-model proof's inputs (docs/models.md), made on the spot like the tiny model: no model hub.

`python -m lab.lora_adapters adapters MODEL_DIR OUT_DIR` writes two random LoRA adapters of the tiny model in
MODEL_DIR (`python -m lab.tiny_model`), one folder each under OUT_DIR, in the PEFT layout vLLM 0.26 loads
(vllm/lora/lora_model.py from_local_checkpoint: `adapter_config.json` and `adapter_model.safetensors`; vllm/lora/
peft_helper.py: `r`, `lora_alpha` and `target_modules` required, no bias, no modules_to_save, no DoRA; a tensor's
name is `base_model.model.<module>.lora_A.weight` / `lora_B.weight`, mapped by the model's own HF-to-vLLM names). The
targets are `o_proj` (the gated attention layer's output) and `down_proj` (every layer's MLP): linear layers vLLM's
Qwen3.5 takes LoRA on (Qwen3_5ForConditionalGeneration inherits SupportsLoRA from Qwen3VLForConditionalGeneration,
vllm/model_executor/models/qwen3_5.py, qwen3_vl.py). Each adapter's update is far larger than the random base
weights' (A of std 1/sqrt(in), B of std 1/sqrt(r), alpha 2r), so its greedy answer differs from the base's.

`python -m lab.lora_adapters llama OUT_DIR` writes the second model: a tiny Llama (`LlamaForCausalLM`, attention
only, vllm/model_executor/models/llama.py) with the tiny model's tokenizer, random weights.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from lab import tiny_model

ADAPTERS = ("tiny-a", "tiny-b")
TARGET_MODULES = ("o_proj", "down_proj")
RANK = 8  # one of vLLM 0.26's max_lora_rank values, below the stack's default maxAdapterRank (16)
# The vision tower is neither loaded with languageModelOnly nor a LoRA target by default (vLLM's LoRAConfig
# enable_tower_connector_lora, vllm/config/lora.py).
TOWER = "model.visual."
LLAMA_ARCHITECTURE = "LlamaForCausalLM"
LLAMA_MAX_POSITIONS = 4096


def target_linears(model_dir: Path) -> dict[str, tuple[int, int]]:
    """module name -> (in_features, out_features) of each target linear layer of the text model, read off the model
    transformers builds from MODEL_DIR's config (on the meta device: no weights)."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    config = AutoConfig.from_pretrained(model_dir)
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    return {
        name: (module.in_features, module.out_features)
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear)
        and name.rsplit(".", 1)[-1] in TARGET_MODULES
        and not name.startswith(TOWER)
    }


def adapter_config(base_model: str) -> dict[str, Any]:
    return {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base_model,
        "r": RANK,
        "lora_alpha": 2 * RANK,
        "target_modules": list(TARGET_MODULES),
        "bias": "none",
        "modules_to_save": None,
        "use_dora": False,
        "use_rslora": False,
    }


def write_adapter(out_dir: Path, linears: dict[str, tuple[int, int]], base_model: str, seed: int) -> Path:
    import torch
    from safetensors.torch import save_file

    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    for name, (fan_in, fan_out) in sorted(linears.items()):
        prefix = f"base_model.model.{name}"
        tensors[f"{prefix}.lora_A.weight"] = torch.randn(RANK, fan_in, generator=generator) / fan_in**0.5
        tensors[f"{prefix}.lora_B.weight"] = torch.randn(fan_out, RANK, generator=generator) / RANK**0.5
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(
        {key: value.to(torch.bfloat16).contiguous() for key, value in tensors.items()},
        out_dir / "adapter_model.safetensors",
    )
    (out_dir / "adapter_config.json").write_text(json.dumps(adapter_config(base_model), indent=2) + "\n")
    return out_dir


def write_adapters(model_dir: Path, out_dir: Path, base_model: str = "tiny") -> list[Path]:
    """One folder per adapter under `out_dir`: its name is the adapter's id (`<model id>:<folder>`, docs/models.md)."""
    linears = target_linears(model_dir)
    return [write_adapter(out_dir / name, linears, base_model, seed) for seed, name in enumerate(ADAPTERS, 1)]


def write_llama(out_dir: Path, seed: int = 0) -> Path:
    """A tiny LlamaForCausalLM with the tiny model's tokenizer and chat template."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = tiny_model.train_tokenizer(tiny_model.BPE_VOCAB_SIZE)
    tokenizer.save(str(out_dir / "tokenizer.json"))
    ids = {token: tokenizer.token_to_id(token) for token in tiny_model.SPECIAL_TOKENS}
    config = LlamaConfig(
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=64,
        max_position_embeddings=LLAMA_MAX_POSITIONS,
        vocab_size=tiny_model.BPE_VOCAB_SIZE,
        eos_token_id=ids[tiny_model.EOS_TOKEN],
        pad_token_id=ids[tiny_model.PAD_TOKEN],
        tie_word_embeddings=False,
        architectures=[LLAMA_ARCHITECTURE],
    )
    torch.manual_seed(seed)
    LlamaForCausalLM(config).bfloat16().save_pretrained(out_dir)
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "eos_token": tiny_model.EOS_TOKEN,
        "pad_token": tiny_model.PAD_TOKEN,
        "chat_template": tiny_model.CHAT_TEMPLATE,
        "model_max_length": LLAMA_MAX_POSITIONS,
        "clean_up_tokenization_spaces": False,
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2) + "\n")
    return out_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    adapters = commands.add_parser("adapters", help="two random LoRA adapters of the tiny model")
    adapters.add_argument("model_dir", type=Path, help="the tiny model (python -m lab.tiny_model DIR)")
    adapters.add_argument("out_dir", type=Path, help="where the adapter folders go (one per adapter)")
    adapters.add_argument("--base-model", default="tiny", help="the base model's served id, for the config")
    llama = commands.add_parser("llama", help="the second model: a tiny LlamaForCausalLM")
    llama.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)
    if args.command == "adapters":
        for path in write_adapters(args.model_dir, args.out_dir, args.base_model):
            print(f"adapter {path.name} written to {path}")
    else:
        print(f"{LLAMA_ARCHITECTURE} written to {write_llama(args.out_dir)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
