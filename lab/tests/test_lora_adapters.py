"""The several-model proof's inputs (lab/lora_adapters.py): two LoRA adapters of the tiny model in the layout vLLM
0.26 loads, and a tiny Llama as the second architecture."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from safetensors import safe_open

from infra.settings.models import DEFAULT_LORA_RANK, LORA_RANKS
from lab import lora_adapters
from lab.tests.vllm_source import VLLM, vllm_class
from tools.project import PROJECT_DIR


@pytest.fixture(scope="module")
def adapters_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("adapters")
    lora_adapters.write_adapters(tiny_model_dir, out)
    return out


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return lora_adapters.write_llama(tmp_path_factory.mktemp("llama"))


def tensors(path: Path) -> dict[str, list[int]]:
    with safe_open(path / "adapter_model.safetensors", "pt") as opened:
        return {name: list(opened.get_slice(name).get_shape()) for name in opened.keys()}


def test_each_adapter_is_a_folder_of_the_two_files_vllm_reads(adapters_dir):
    """vllm/lora/lora_model.py from_local_checkpoint: adapter_config.json and adapter_model.safetensors."""
    assert sorted(p.name for p in adapters_dir.iterdir()) == sorted(lora_adapters.ADAPTERS)
    for folder in adapters_dir.iterdir():
        assert {p.name for p in folder.iterdir()} == {"adapter_config.json", "adapter_model.safetensors"}


def test_the_config_has_what_vllms_peft_helper_requires_and_nothing_it_refuses(adapters_dir):
    """vllm/lora/peft_helper.py (vendored): the fields without a default are required; bias other than "none",
    modules_to_save and DoRA are refused."""
    helper = vllm_class("peft_helper.py", "PEFTHelper")
    required = {
        n.target.id
        for n in helper.body
        if isinstance(n, ast.AnnAssign) and n.value is None and isinstance(n.target, ast.Name)
    }
    assert required == {"r", "lora_alpha", "target_modules"}
    config = json.loads((adapters_dir / "tiny-a" / "adapter_config.json").read_text())
    assert required <= set(config)
    assert (config["bias"], config["modules_to_save"], config["use_dora"]) == ("none", None, False)


def test_the_rank_is_one_the_stack_serves_by_default(adapters_dir):
    rank = json.loads((adapters_dir / "tiny-a" / "adapter_config.json").read_text())["r"]
    assert rank in LORA_RANKS and rank <= DEFAULT_LORA_RANK


def test_every_tensor_is_a_lora_pair_of_a_target_linear_of_the_checkpoint(adapters_dir, tiny_model_dir):
    """Names are `base_model.model.<checkpoint module>.lora_A/B.weight` (vllm/lora/utils.py
    parse_fine_tuned_lora_name strips the prefix and maps the rest as the checkpoint's names); A is (r, in), B
    (out, r) of that linear layer."""
    with safe_open(tiny_model_dir / "model.safetensors", "pt") as model:
        weights = {name: model.get_slice(name).get_shape() for name in model.keys()}
    found = tensors(adapters_dir / "tiny-a")
    assert found
    for name, shape in found.items():
        module, part = name.removeprefix("base_model.model.").rsplit(".lora_", 1)
        assert module.rsplit(".", 1)[-1] in lora_adapters.TARGET_MODULES
        fan_out, fan_in = weights[f"{module}.weight"]
        assert shape == ([lora_adapters.RANK, fan_in] if part == "A.weight" else [fan_out, lora_adapters.RANK])


def test_the_adapters_target_the_attention_and_every_mlp_of_the_text_model(adapters_dir):
    modules = {name.rsplit(".lora_", 1)[0] for name in tensors(adapters_dir / "tiny-b")}
    assert any(name.endswith("self_attn.o_proj") for name in modules)
    assert sum(name.endswith("mlp.down_proj") for name in modules) == 4
    assert not any(".visual." in name for name in modules)


def test_the_two_adapters_differ(adapters_dir):
    name = next(iter(tensors(adapters_dir / "tiny-a")))
    with (
        safe_open(adapters_dir / "tiny-a" / "adapter_model.safetensors", "pt") as a,
        safe_open(adapters_dir / "tiny-b" / "adapter_model.safetensors", "pt") as b,
    ):
        assert not a.get_tensor(name).equal(b.get_tensor(name))


def test_the_second_model_is_an_architecture_vllm_registers(llama_dir):
    """vllm/model_executor/models/registry.py (vendored) maps LlamaForCausalLM to models/llama.py."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(llama_dir)
    assert config.architectures == [lora_adapters.LLAMA_ARCHITECTURE]
    assert f'"{lora_adapters.LLAMA_ARCHITECTURE}": ("llama", "LlamaForCausalLM")' in (VLLM / "registry.py").read_text()


def test_the_second_models_vocabulary_is_its_tokenizers(llama_dir):
    from tokenizers import Tokenizer

    config = json.loads((llama_dir / "config.json").read_text())
    assert Tokenizer.from_file(str(llama_dir / "tokenizer.json")).get_vocab_size() == config["vocab_size"]


def test_the_vendored_peft_helper_is_listed():
    assert (
        "peft_helper.py                    <- vllm/lora/peft_helper.py"
        in (PROJECT_DIR / "vendor" / "vllm-0.26.0" / "SOURCE.txt").read_text()
    )
