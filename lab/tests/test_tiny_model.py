"""The GPU smoke test's model: the default model's architecture with random weights, loadable offline."""

from __future__ import annotations

import json

import pytest

from lab import tiny_model
from tools.offline_models import HUB_CONFIGS


def test_files_and_size(tiny_model_dir):
    names = {p.name for p in tiny_model_dir.iterdir()}
    assert names == {
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "preprocessor_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "video_preprocessor_config.json",
    }
    assert sum(p.stat().st_size for p in tiny_model_dir.iterdir()) < 16 * 2**20


def test_architecture_is_the_default_models(tiny_model_dir):
    """Qwen/Qwen3.5-9B's config.json names `Qwen3_5ForConditionalGeneration`, model_type `qwen3_5`, a
    text_config of model_type `qwen3_5_text` and a vision_config (huggingface.co/Qwen/Qwen3.5-9B;
    transformers 5.17 `models/qwen3_5/configuration_qwen3_5.py` `Qwen3_5Config.sub_configs`). vLLM 0.26
    registers that architecture as `Qwen3_5ForConditionalGeneration(Qwen3VLForConditionalGeneration,
    IsHybrid)` in `vllm/model_executor/models/qwen3_5.py`.
    """
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(tiny_model_dir)
    assert type(config).__name__ == "Qwen3_5Config"
    assert config.architectures == ["Qwen3_5ForConditionalGeneration"]
    assert config.text_config.model_type == "qwen3_5_text"
    assert config.vision_config.out_hidden_size == config.text_config.hidden_size


@pytest.mark.parametrize("shape", sorted(tiny_model.SHAPES))
def test_layers_are_three_deltanet_then_one_attention(shape):
    """Model card of Qwen/Qwen3.5-9B: "8 x (3 x (Gated DeltaNet -> FFN) -> 1 x (Gated Attention -> FFN))";
    transformers' Qwen3_5TextConfig derives the same list from full_attention_interval=4."""
    layers = tiny_model.model_config(tiny_model.SHAPES[shape], _ids())["text_config"]["layer_types"]
    block = ["linear_attention"] * 3 + ["full_attention"]
    assert layers == block * (len(layers) // 4)
    assert len(layers) == (32 if shape == "full" else 4)


def test_full_shape_is_qwen3_5_9b():
    """transformers 5.17 `configuration_qwen3_5.py`: the defaults of Qwen3_5TextConfig and
    Qwen3_5VisionConfig are "the Qwen3.5-9B style configuration" (hidden 4096, 32 layers, 16/4 attention
    heads of 256, DeltaNet 16 key / 32 value heads of 128, FFN 12288, vocab 248320; vision 27 x 1152)."""
    from transformers import Qwen3_5TextConfig, Qwen3_5VisionConfig

    shape = tiny_model.SHAPES["full"]
    text, vision = Qwen3_5TextConfig(), Qwen3_5VisionConfig()
    for field, value in vars(shape).items():
        source, name = (vision, field.removeprefix("vision_")) if field.startswith("vision_") else (text, field)
        reference = getattr(source, name)
        assert value == reference, field


def test_full_shape_has_the_default_models_parameter_count():
    """About 9.4 B parameters without the MTP head, which vLLM skips (`skip_prefixes=["mtp."]` in
    vLLM 0.26 `qwen3_5.py`): the bf16 weights an L4 must hold."""
    import torch
    from transformers import AutoModelForImageTextToText, Qwen3_5Config

    document = tiny_model.model_config(tiny_model.SHAPES["full"], _ids())
    config = Qwen3_5Config(**{k: v for k, v in document.items() if k not in ("architectures", "model_type")})
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    assert 9.3e9 < sum(p.numel() for p in model.parameters()) < 9.5e9


def test_weights_load_under_the_names_vllm_maps(tiny_model_dir):
    """vLLM 0.26 `qwen3_vl.py` maps checkpoint prefixes "model.visual.", "model.language_model." and
    "lm_head."; `qwen3_5.py` fuses the separate DeltaNet projections in_proj_qkv/z/b/a."""
    from safetensors import safe_open

    with safe_open(str(tiny_model_dir / "model.safetensors"), "np") as weights:
        names = set(weights.keys())
    assert {name.split(".")[0] if name.startswith("lm_head") else ".".join(name.split(".")[:2]) for name in names} == {
        "lm_head",
        "model.visual",
        "model.language_model",
    }
    projections = {name.rsplit(".", 2)[-2] for name in names if ".linear_attn.in_proj_" in name}
    assert projections == {"in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"}


def test_transformers_loads_and_runs_it(tiny_model_dir):
    import torch
    from transformers import AutoModelForImageTextToText, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    inputs = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Hello from the smoke test"}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    model, info = AutoModelForImageTextToText.from_pretrained(tiny_model_dir, output_loading_info=True)
    assert type(model).__name__ == "Qwen3_5ForConditionalGeneration"
    assert model.dtype == torch.bfloat16
    assert not any(info[key] for key in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"))
    output = model.generate(**inputs, max_new_tokens=2, do_sample=False)
    assert output.shape[1] == inputs["input_ids"].shape[1] + 2


def test_chat_template_round_trips(tiny_model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Hello"}], add_generation_prompt=True, tokenize=False
    )
    assert prompt == "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"
    assert tokenizer.decode(tokenizer(prompt, add_special_tokens=False)["input_ids"]) == prompt


def test_vision_tokens_sit_at_the_configs_ids(tiny_model_dir):
    """Qwen3VLProcessor (transformers `processing_qwen3_vl.py`) looks up "<|image_pad|>", "<|video_pad|>",
    "<|vision_start|>", "<|vision_end|>" in the tokenizer; the model config must name the same ids."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    config = json.loads((tiny_model_dir / "config.json").read_text())
    for key, token in tiny_model.VISION_TOKENS.items():
        assert config[key] == tokenizer.token_to_id(token)


def test_preprocessors_match_the_vision_tower(tiny_model_dir):
    config = json.loads((tiny_model_dir / "config.json").read_text())["vision_config"]
    for name in ("preprocessor_config.json", "video_preprocessor_config.json"):
        processor = json.loads((tiny_model_dir / name).read_text())
        assert processor["patch_size"] == config["patch_size"]
        assert processor["merge_size"] == config["spatial_merge_size"]
        assert processor["temporal_patch_size"] == config["temporal_patch_size"]


@pytest.mark.parametrize("vocab_size", [tiny_model.SHAPES["tiny"].vocab_size, 6000])
def test_every_id_the_model_can_emit_decodes(vocab_size):
    tokenizer = tiny_model.train_tokenizer(vocab_size)
    assert tokenizer.get_vocab_size() == vocab_size
    ordinary_ids = range(len(tiny_model.SPECIAL_TOKENS), vocab_size)
    assert all(tokenizer.decode([i], skip_special_tokens=True) for i in ordinary_ids)


def test_filler_ids_never_come_out_of_encoding():
    tokenizer = tiny_model.train_tokenizer(6000)
    text = " ".join(tiny_model._training_text(200))
    assert max(tokenizer.encode(text).ids) < tiny_model.BPE_VOCAB_SIZE


def test_cli(tmp_path, capsys):
    assert tiny_model.main([str(tmp_path / "m")]) == 0
    assert "tiny Qwen3_5ForConditionalGeneration written" in capsys.readouterr().out
    assert (tmp_path / "m" / "model.safetensors").is_file()


def _ids() -> dict[str, int]:
    return {token: i for i, token in enumerate(tiny_model.SPECIAL_TOKENS)}


def test_the_offline_hubs_default_model_config_is_the_full_shapes():
    """tools/offline_models.py serves the default model's config.json from a file; it is this model's, full size."""
    token_ids = {token: 248044 + i for i, token in enumerate(tiny_model.SPECIAL_TOKENS)}
    assert HUB_CONFIGS["Qwen/Qwen3.5-9B"] == tiny_model.model_config(tiny_model.SHAPES["full"], token_ids)
