"""The tiny model of the GPU smoke test: a complete checkpoint that transformers loads and runs."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from tools import tiny_model


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_model.write_tiny_model(tmp_path_factory.mktemp("tiny"))


def test_files_and_size(model_dir):
    names = {p.name for p in model_dir.iterdir()}
    assert names == {
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    }
    assert sum(p.stat().st_size for p in model_dir.iterdir()) < 8 * 2**20


def test_bfloat16_bits_round_to_nearest_even():
    values = np.array([1.0, -2.0, 0.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8], dtype=np.float32)
    # 1 + 2^-8 lies halfway between two bf16 values and rounds to the even one (1.0); 1 + 3*2^-8 rounds up.
    assert tiny_model.to_bfloat16_bits(values).tolist() == [0x3F80, 0xC000, 0x0000, 0x3F80, 0x3F82]


def test_safetensors_header_matches_the_architecture(model_dir):
    raw = (model_dir / "model.safetensors").read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    header.pop("__metadata__")
    shapes = tiny_model.weight_shapes()
    assert {name: tuple(entry["shape"]) for name, entry in header.items()} == shapes
    assert {entry["dtype"] for entry in header.values()} == {"BF16"}
    assert len(raw) == 8 + size + sum(2 * int(np.prod(shape)) for shape in shapes.values())


def test_transformers_loads_and_runs_it(model_dir):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    config = AutoConfig.from_pretrained(model_dir)
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads, config.vocab_size) == (
        256,
        2,
        4,
        2048,
    )
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    assert len(tokenizer) == config.vocab_size
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Hello from the smoke test"}], add_generation_prompt=True, tokenize=False
    )
    assert prompt == "<|begin_of_text|><|im_start|>user\nHello from the smoke test<|im_end|>\n<|im_start|>assistant\n"
    ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt")
    assert tokenizer.decode(ids["input_ids"][0]) == prompt

    model, info = AutoModelForCausalLM.from_pretrained(model_dir, output_loading_info=True)
    assert type(model).__name__ == "LlamaForCausalLM"
    assert model.dtype == torch.bfloat16
    assert not any(info[key] for key in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"))
    output = model.generate(**ids, max_new_tokens=4, do_sample=False)
    assert output.shape[1] == ids["input_ids"].shape[1] + 4


def test_every_id_the_model_can_emit_decodes(model_dir):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    assert tokenizer.get_vocab_size() == tiny_model.VOCAB_SIZE
    assert all(tokenizer.id_to_token(i) is not None for i in range(tiny_model.VOCAB_SIZE))


def test_cli(tmp_path, capsys):
    assert tiny_model.main([str(tmp_path / "m")]) == 0
    assert "tiny model written" in capsys.readouterr().out
    assert (tmp_path / "m" / "model.safetensors").is_file()
