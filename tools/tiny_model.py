"""A tiny Llama checkpoint made on the spot, so the GPU smoke test needs no model hub.

`python -m tools.tiny_model DIR` writes a complete Hugging Face model directory: `config.json`
(LlamaForCausalLM, hidden 256, 2 layers, 4 heads, vocab 2048), random bf16 weights in
`model.safetensors` (about 5 MB), a byte-level BPE tokenizer trained here on generated text, and a
ChatML chat template. The weights are noise: the model answers gibberish, fast, which is all a
serving test needs. Only numpy and `tokenizers` are required; the safetensors file is written by
hand because numpy has no bfloat16.
"""

from __future__ import annotations

import argparse
import json
import random
import struct
from pathlib import Path
from typing import Any

import numpy as np

HIDDEN_SIZE = 256
INTERMEDIATE_SIZE = 512
NUM_LAYERS = 2
NUM_HEADS = 4
VOCAB_SIZE = 2048
# Longer than any context the stacks configure (maxModelLen), so the production value also loads.
MAX_POSITIONS = 8192
INIT_STD = 0.02

BOS_TOKEN = "<|begin_of_text|>"
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|pad|>"
SPECIAL_TOKENS = (BOS_TOKEN, "<|im_start|>", EOS_TOKEN, PAD_TOKEN)
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Words for the tokenizer's training text: enough distinct pieces for 2048 BPE tokens.
WORDS = (
    "the a an of to and in is it that for on with as was are be this by at from or have not but "
    "what all were when we there can your which their if do will each about how up out them then "
    "she many some so these would other into has more her two like him see time could no make than "
    "first been its who now people my made over did down only way find use may water long little "
    "very after words called just where most know get through back much before go good new write "
    "our used me man too any day same right look think also around another came come work three "
    "word must because does part even place well such here take why things help put years different "
    "away again off went old number great tell men say small every found still between name should "
    "home big give air line set own under read last never us left end along while might next sound "
    "below saw something thought both few those always looked show large often together asked house "
    "world going want school important until form food keep children feet land side without boy once "
    "animals life enough took sometimes four head above kind began almost live page got earth need "
    "far hand high year mother light parts country father let night following picture being study "
    "second eyes soon times story boys since white days paper hard near sentence better best across "
    "during today others however sure means knew its try told young miles sun ways thing whole hear "
    "example heard several change answer room sea against top turned learn point city play toward "
    "five using himself usually model serve prefill decode cluster token cache transfer engine gpu "
    "request stream chat completion latency throughput replica deploy node pod kernel tensor batch"
).split()


def _training_text(lines: int = 4000, seed: int = 0) -> list[str]:
    """Deterministic sentences, some in the chat format, so BPE learns the template's pieces too."""
    rng = random.Random(seed)
    text = []
    for i in range(lines):
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))).capitalize()
        sentence += rng.choice(".?!,;:") + (f" {rng.randint(0, 9999)}" if i % 7 == 0 else "")
        text.append(f"<|im_start|>user\n{sentence}<|im_end|>\n" if i % 5 == 0 else sentence)
    return text


def train_tokenizer(vocab_size: int = VOCAB_SIZE) -> Any:
    """A byte-level BPE tokenizer of exactly `vocab_size` ids: every id the model can emit decodes."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_training_text(), trainer)
    # Random weights sample any id below vocab_size; pad with reserved tokens if BPE ran out of merges.
    missing = vocab_size - tokenizer.get_vocab_size()
    tokenizer.add_special_tokens([f"<|reserved_{i}|>" for i in range(missing)])
    if tokenizer.get_vocab_size() != vocab_size:
        raise RuntimeError(f"tokenizer has {tokenizer.get_vocab_size()} ids, expected {vocab_size}")
    return tokenizer


def model_config(token_ids: dict[str, int]) -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": HIDDEN_SIZE,
        "intermediate_size": INTERMEDIATE_SIZE,
        "num_hidden_layers": NUM_LAYERS,
        "num_attention_heads": NUM_HEADS,
        "num_key_value_heads": NUM_HEADS,
        "head_dim": HIDDEN_SIZE // NUM_HEADS,
        "hidden_act": "silu",
        "vocab_size": VOCAB_SIZE,
        "max_position_embeddings": MAX_POSITIONS,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "initializer_range": INIT_STD,
        "bos_token_id": token_ids[BOS_TOKEN],
        "eos_token_id": token_ids[EOS_TOKEN],
        "pad_token_id": token_ids[PAD_TOKEN],
        "torch_dtype": "bfloat16",
    }


def weight_shapes() -> dict[str, tuple[int, ...]]:
    """Every tensor of LlamaForCausalLM at this size, under the names transformers and vLLM load."""
    h, i, v = HIDDEN_SIZE, INTERMEDIATE_SIZE, VOCAB_SIZE
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (v, h)}
    for layer in range(NUM_LAYERS):
        prefix = f"model.layers.{layer}"
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            shapes[f"{prefix}.self_attn.{proj}.weight"] = (h, h)
        shapes[f"{prefix}.mlp.gate_proj.weight"] = (i, h)
        shapes[f"{prefix}.mlp.up_proj.weight"] = (i, h)
        shapes[f"{prefix}.mlp.down_proj.weight"] = (h, i)
        shapes[f"{prefix}.input_layernorm.weight"] = (h,)
        shapes[f"{prefix}.post_attention_layernorm.weight"] = (h,)
    shapes["model.norm.weight"] = (h,)
    shapes["lm_head.weight"] = (v, h)
    return shapes


def to_bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """float32 → bfloat16 bit patterns (round to nearest even), little-endian uint16."""
    bits = values.astype(np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return rounded.astype("<u2")


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """The safetensors layout: u64 header size, JSON header (8-byte aligned), then raw tensor bytes."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, bits in tensors.items():
        header[name] = {"dtype": "BF16", "shape": list(bits.shape), "data_offsets": [offset, offset + bits.nbytes]}
        offset += bits.nbytes
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    with path.open("wb") as out:
        out.write(struct.pack("<Q", len(encoded)))
        out.write(encoded)
        for bits in tensors.values():
            out.write(bits.tobytes())


def random_weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in weight_shapes().items():
        # RMSNorm scales start at one, as a freshly initialised model's do; the rest is small noise.
        values = np.ones(shape) if name.endswith("norm.weight") else rng.normal(0.0, INIT_STD, shape)
        weights[name] = to_bfloat16_bits(values)
    return weights


def write_tiny_model(out_dir: Path, seed: int = 0) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer()
    tokenizer.save(str(out_dir / "tokenizer.json"))
    token_ids = {token: tokenizer.token_to_id(token) for token in SPECIAL_TOKENS}
    config = model_config(token_ids)
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS_TOKEN,
        "eos_token": EOS_TOKEN,
        "pad_token": PAD_TOKEN,
        "chat_template": CHAT_TEMPLATE,
        "model_max_length": MAX_POSITIONS,
        "clean_up_tokenization_spaces": False,
    }
    generation_config = {key: config[key] for key in ("bos_token_id", "eos_token_id", "pad_token_id")}
    for name, document in (
        ("config.json", config),
        ("tokenizer_config.json", tokenizer_config),
        ("generation_config.json", generation_config),
    ):
        (out_dir / name).write_text(json.dumps(document, indent=2) + "\n")
    write_safetensors(out_dir / "model.safetensors", random_weights(seed))
    return out_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, help="directory to write the model into (created if missing)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    args = parser.parse_args(argv)
    out_dir = write_tiny_model(args.out_dir, args.seed)
    size = sum(f.stat().st_size for f in out_dir.iterdir())
    print(f"tiny model written to {out_dir} ({size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
