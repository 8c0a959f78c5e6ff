"""The host-memory KV tier as vLLM 0.26.0 takes it, read in its files in vendor/vllm-0.26.0 (the product's tests:
tests/test_kv_offload.py), and the smoke's aggregated baseline, which takes it through vLLM's own switch."""

from __future__ import annotations

import ast

import pytest

from infra.settings.kv_offload import cpu_bytes_to_use
from lab.smoke import app as smoke_app
from lab.smoke.host import HostFacts
from lab.smoke.overrides import SmokeOptions
from lab.tests.vllm_source import vllm_method, vllm_tree
from tests.rayservice_parts import pd_args
from tests.test_kv_offload import TIER_GIB, TIERED
from tools.offline import StackRun, run_stack


@pytest.fixture(scope="module")
def tiered() -> StackRun:
    return run_stack(TIERED)


def test_vllm_gives_an_unset_engine_id_a_uuid_and_multiconnectors_children_inherit_it():
    """Why a tiered side sets no engine id (tests/test_kv_offload.py)."""
    post_init = ast.unparse(vllm_method("kv_transfer.py", "KVTransferConfig", "__post_init__"))
    assert "if self.engine_id is None:\n        self.engine_id = str(uuid.uuid4())" in post_init
    children = ast.unparse(vllm_method("multi_connector.py", "MultiConnector", "_get_connector_classes_and_configs"))
    assert "engine_id = ktc.get('engine_id', vllm_config.kv_transfer_config.engine_id)" in children


def test_the_tier_is_vllms_own_bytes_per_gib():
    """`kv_offloading_size` GiB becomes `cpu_bytes_to_use = kv_offloading_size * (1 << 30)` for the native backend
    (vllm/config/vllm.py `_post_init_kv_transfer_config`), the key the CPU spec reads (vllm/v1/kv_offload/cpu/
    spec.py)."""
    method = vllm_method("vllm_config.py", "VllmConfig", "_post_init_kv_transfer_config")
    (call,) = [
        n
        for n in ast.walk(method)
        if isinstance(n, ast.Dict) and any(getattr(k, "value", None) == "cpu_bytes_to_use" for k in n.keys)
    ]
    expression = ast.Expression(call.values[0])
    for gib in (1, 16, 64):
        assert eval(compile(expression, "vllm.py", "eval"), {"kv_offloading_size": gib}) == cpu_bytes_to_use(gib)
    assert 'self.extra_config.get("cpu_bytes_to_use")' in (vllm_tree_source("cpu_offload_spec.py"))


def vllm_tree_source(name: str) -> str:
    return ast.unparse(vllm_tree(name)).replace("'", '"')


def test_vllms_own_switch_would_replace_nixl_so_only_the_baseline_uses_it(tiered, tmp_path):
    """`kv_offloading_size` writes `kv_connector = OffloadingConnector` over whatever kv_transfer_config names: the PD
    sides never set it; the aggregated baseline, which has no other connector, does, with the prefill side's tier."""
    method = ast.unparse(vllm_method("vllm_config.py", "VllmConfig", "_post_init_kv_transfer_config"))
    assert "self.kv_transfer_config.kv_connector = config_connector" in method
    assert "config_connector = 'OffloadingConnector'" in method
    for side in ("prefill", "decode"):
        assert "kv_offloading_size" not in pd_args(tiered)[f"{side}_config"]["engine_kwargs"]
    cfg = smoke_app.serve_stack_config("dev", {key: str(value) for key, value in TIERED.items()})
    opts = SmokeOptions(model_dir=tmp_path, aggregated=True, auth_dir=tmp_path, code_dir=tmp_path)
    _, config, _ = smoke_app.smoke_serve_config(cfg, opts, HostFacts(has_efa=False, has_flashinfer=False))
    (engine,) = config["applications"][0]["args"]["llm_configs"]
    assert engine["engine_kwargs"]["kv_offloading_size"] == TIER_GIB
    assert "kv_transfer_config" not in engine["engine_kwargs"]


def test_vllms_offloading_config_needs_prefix_caching_for_a_hybrid_model():
    """Why a tier without the side's prefix caching is refused (tests/test_kv_offload.py)."""
    assert "need --enable-prefix-caching to align block sizes" in vllm_tree_source("offloading_config.py")
