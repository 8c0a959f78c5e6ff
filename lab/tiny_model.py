"""A random-weight copy of the default model's architecture, made on the spot: no model hub.

`python -m lab.tiny_model DIR` writes a complete Hugging Face model directory of the same
architecture class as the stack's default model, `Qwen/Qwen3.5-9B`: `Qwen3_5ForConditionalGeneration`,
a vision tower in front of a hybrid text decoder whose layers repeat three Gated DeltaNet (linear
attention) layers and one gated full-attention layer. vLLM serves it with the same code paths as the
real model: Mamba-type state for the DeltaNet layers, paged KV cache for the attention layers, the
Qwen3-VL multimodal processor. `--shape tiny` (default) is a few MB for the GPU smoke test;
`--shape full` has the default model's dimensions (9.4 B parameters, about 19 GB of bf16), so its
compute, weight memory and KV/state sizes are the real model's; write it on the GPU host with
`--device cuda`. The weights are noise (transformers' own initialisation): the model answers
gibberish, which is all a serving test needs. The tokenizer is a byte-level BPE trained here, padded
to the model's vocabulary so that every id the model can emit decodes.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ARCHITECTURE = "Qwen3_5ForConditionalGeneration"
# Every fourth layer is full attention, the rest Gated DeltaNet ("8 x (3 x Gated DeltaNet + 1 x Gated
# Attention)" in the model card; transformers derives layer_types from this interval).
FULL_ATTENTION_INTERVAL = 4
BPE_VOCAB_SIZE = 2048

EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"
VISION_TOKENS = {
    "image_token_id": "<|image_pad|>",
    "video_token_id": "<|video_pad|>",
    "vision_start_token_id": "<|vision_start|>",
    "vision_end_token_id": "<|vision_end|>",
}
SPECIAL_TOKENS = (PAD_TOKEN, "<|im_start|>", EOS_TOKEN, *VISION_TOKENS.values())
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# The image and video preprocessors the Qwen3.5 checkpoints publish (preprocessor_config.json,
# video_preprocessor_config.json): 16 px patches, 2 x 2 merge, at most 16 Mpx per image. vLLM sizes
# its multimodal memory profile from these, so they are the real ones, not small ones.
IMAGE_PREPROCESSOR = {
    "size": {"longest_edge": 16777216, "shortest_edge": 65536},
    "patch_size": 16,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "processor_class": "Qwen3VLProcessor",
    "image_processor_type": "Qwen2VLImageProcessorFast",
}
VIDEO_PREPROCESSOR = {
    "size": {"longest_edge": 25165824, "shortest_edge": 4096},
    "patch_size": 16,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "processor_class": "Qwen3VLProcessor",
    "video_processor_type": "Qwen3VLVideoProcessor",
}


@dataclass(frozen=True)
class ModelShape:
    """The dimensions that set compute, weight memory and the KV/state size per token."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    linear_num_key_heads: int
    linear_num_value_heads: int
    linear_key_head_dim: int
    linear_value_head_dim: int
    linear_conv_kernel_dim: int
    vocab_size: int
    vision_depth: int
    vision_hidden_size: int
    vision_num_heads: int
    vision_intermediate_size: int


SHAPES = {
    # Qwen/Qwen3.5-9B (model card, huggingface.co/Qwen/Qwen3.5-9B): hidden 4096, 32 layers, Gated
    # DeltaNet 16 QK / 32 V heads of 128, gated attention 16 Q / 4 KV heads of 256, FFN 12288, vocab
    # 248320 (padded); the vision tower is the Qwen3-VL encoder (27 blocks of 1152, 16 heads, MLP 4304).
    # transformers 5.17's Qwen3_5TextConfig / Qwen3_5VisionConfig defaults are the same numbers.
    "full": ModelShape(
        hidden_size=4096,
        intermediate_size=12288,
        num_hidden_layers=32,
        num_attention_heads=16,
        num_key_value_heads=4,
        head_dim=256,
        linear_num_key_heads=16,
        linear_num_value_heads=32,
        linear_key_head_dim=128,
        linear_value_head_dim=128,
        linear_conv_kernel_dim=4,
        vocab_size=248320,
        vision_depth=27,
        vision_hidden_size=1152,
        vision_num_heads=16,
        vision_intermediate_size=4304,
    ),
    # One 3+1 block of the same layers: head sizes, GQA and value/key head ratios as in the full model,
    # so vLLM runs the same kernels; fewer heads, layers and a small vocabulary.
    "tiny": ModelShape(
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=FULL_ATTENTION_INTERVAL,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=256,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=128,
        linear_value_head_dim=128,
        linear_conv_kernel_dim=4,
        vocab_size=BPE_VOCAB_SIZE,
        vision_depth=2,
        vision_hidden_size=128,
        vision_num_heads=2,
        vision_intermediate_size=256,
    ),
}
# Qwen3.5's rotary embedding: a quarter of each attention head (64 of 256 dims), multimodal sections
# over (time, height, width) that add up to half the rotary dims, interleaved, theta 1e7; 262144
# positions natively (model card).
ROPE_PARAMETERS = {
    "rope_type": "default",
    "rope_theta": 10000000,
    "partial_rotary_factor": 0.25,
    "mrope_section": [11, 11, 10],
    "mrope_interleaved": True,
}
MAX_POSITIONS = 262144
# Words for the tokenizer's training text: enough distinct pieces for the BPE vocabulary.
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


def train_tokenizer(vocab_size: int) -> Any:
    """A byte-level BPE tokenizer of exactly `vocab_size` ids: every id the model can emit decodes.

    BPE learns at most BPE_VOCAB_SIZE pieces from the generated text; the rest of the model's
    vocabulary is filled with plain pieces that no merge produces (encoding never emits them) and
    that decode to visible text, as a real tokenizer's rarely used ids do.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=min(vocab_size, BPE_VOCAB_SIZE),
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_training_text(), trainer)
    document = json.loads(tokenizer.to_str())
    vocab = document["model"]["vocab"]
    for token_id in range(len(vocab), vocab_size):
        vocab[f"<|filler_{token_id}|>"] = token_id
    tokenizer = Tokenizer.from_str(json.dumps(document))
    if tokenizer.get_vocab_size() != vocab_size:
        raise RuntimeError(f"tokenizer has {tokenizer.get_vocab_size()} ids, expected {vocab_size}")
    return tokenizer


def model_config(shape: ModelShape, token_ids: dict[str, int]) -> dict[str, Any]:
    """config.json as the Qwen3.5 checkpoints lay it out: a text_config and a vision_config."""
    text_config = {key: value for key, value in asdict(shape).items() if not key.startswith("vision_")} | {
        "model_type": "qwen3_5_text",
        "layer_types": [
            "full_attention" if (i + 1) % FULL_ATTENTION_INTERVAL == 0 else "linear_attention"
            for i in range(shape.num_hidden_layers)
        ],
        "hidden_act": "silu",
        "attn_output_gate": True,
        "rms_norm_eps": 1e-6,
        "rope_parameters": ROPE_PARAMETERS,
        "max_position_embeddings": MAX_POSITIONS,
        "mamba_ssm_dtype": "float32",
        "tie_word_embeddings": False,
        "eos_token_id": token_ids[EOS_TOKEN],
        "pad_token_id": token_ids[PAD_TOKEN],
        "dtype": "bfloat16",
    }
    vision_config = {
        "model_type": "qwen3_5_vision",
        "depth": shape.vision_depth,
        "hidden_size": shape.vision_hidden_size,
        "num_heads": shape.vision_num_heads,
        "intermediate_size": shape.vision_intermediate_size,
        "out_hidden_size": shape.hidden_size,
        "hidden_act": "gelu_pytorch_tanh",
        "patch_size": IMAGE_PREPROCESSOR["patch_size"],
        "spatial_merge_size": IMAGE_PREPROCESSOR["merge_size"],
        "temporal_patch_size": IMAGE_PREPROCESSOR["temporal_patch_size"],
        "in_channels": 3,
        "num_position_embeddings": 2304,
        "deepstack_visual_indexes": [],
    }
    return {
        "architectures": [ARCHITECTURE],
        "model_type": "qwen3_5",
        "text_config": text_config,
        "vision_config": vision_config,
        "tie_word_embeddings": False,
        **{key: token_ids[token] for key, token in VISION_TOKENS.items()},
        "dtype": "bfloat16",
    }


def write_weights(out_dir: Path, config_path: Path, device: str, seed: int) -> None:
    """Random bf16 weights from transformers' own initialisation, saved under the checkpoint's names."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    torch.manual_seed(seed)
    config = AutoConfig.from_pretrained(config_path.parent)
    with torch.device(device):
        model = AutoModelForImageTextToText.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(out_dir, max_shard_size="5GB")


def write_model(out_dir: Path, shape_name: str = "tiny", device: str = "cpu", seed: int = 0) -> Path:
    shape = SHAPES[shape_name]
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(shape.vocab_size)
    tokenizer.save(str(out_dir / "tokenizer.json"))
    token_ids = {token: tokenizer.token_to_id(token) for token in SPECIAL_TOKENS}
    config = model_config(shape, token_ids)
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "eos_token": EOS_TOKEN,
        "pad_token": PAD_TOKEN,
        "chat_template": CHAT_TEMPLATE,
        "model_max_length": MAX_POSITIONS,
        "clean_up_tokenization_spaces": False,
    }
    for name, document in (
        ("config.json", config),
        ("tokenizer_config.json", tokenizer_config),
        ("preprocessor_config.json", IMAGE_PREPROCESSOR),
        ("video_preprocessor_config.json", VIDEO_PREPROCESSOR),
    ):
        (out_dir / name).write_text(json.dumps(document, indent=2) + "\n")
    write_weights(out_dir, out_dir / "config.json", device, seed)
    # save_pretrained rewrites config.json in its own spelling; keep the checkpoint's layout.
    (out_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return out_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, help="directory to write the model into (created if missing)")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="tiny", help="tiny (smoke) or full (9B dims)")
    parser.add_argument("--device", default="cpu", help="where to initialise the weights (cuda for --shape full)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    args = parser.parse_args(argv)
    out_dir = write_model(args.out_dir, args.shape, args.device, args.seed)
    size = sum(f.stat().st_size for f in out_dir.iterdir())
    print(f"{args.shape} {ARCHITECTURE} written to {out_dir} ({size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
