"""The GPU smoke with several models (lab/smoke/models.py, docs/models.md): the stack's serve config with the models
beside the pair built for one host, the adapters staged where it loads them, and the checks' verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.serving.serve_config import MODELS_IMPORT_PATH
from lab import lora_adapters
from lab.smoke import app as smoke_app
from lab.smoke import deploy as smoke_deploy
from lab.smoke import models as smoke_models
from lab.smoke import run as smoke_run
from lab.smoke.host import HostFacts
from lab.smoke.overrides import SmokeOptions
from tests.openai_server import OpenAIServer
from tools.probe import Report

# The proof's stack (lab/records/2026-12-07-models/): the tiny default architecture as the PD model and again as an
# aggregated model with two adapters, a tiny Llama beside them; the sources are the stack's, the smoke loads local
# copies (--model-dir, --model-dir-of).
MODELS = [
    {"id": "tiny", "source": "Qwen/Qwen3.5-9B", "serving": "pd"},
    {
        "id": "tiny-lora",
        "source": "Qwen/Qwen3.5-9B",
        "serving": "aggregated",
        "adapters": list(lora_adapters.ADAPTERS),
        "maxAdaptersPerReplica": 2,
        "maxNumSeqs": 32,
    },
    {"id": "llama", "source": "Qwen/Qwen3-8B", "serving": "aggregated"},
]
CONFIG = [f"models={json.dumps(MODELS)}"]


def argv(tiny: Path, llama: Path) -> list[str]:
    settings = [item for setting in CONFIG for item in ("--config", setting)]
    dirs = ["--model-dir-of", f"tiny-lora={tiny}", "--model-dir-of", f"llama={llama}"]
    return ["--stack", "dev", "--model-dir", str(tiny), *settings, *dirs]


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return lora_adapters.write_llama(tmp_path_factory.mktemp("llama"))


@pytest.fixture(scope="module")
def cfg():
    return smoke_app.serve_stack_config("dev", dict(setting.split("=", 1) for setting in CONFIG), ())


def test_the_dry_run_serves_every_model_from_its_local_directory(tiny_model_dir, llama_dir, capsys):
    assert smoke_run.main([*argv(tiny_model_dir, llama_dir), "--dry-run"]) == 0
    out = capsys.readouterr().out
    smoke = json.loads(out[out.index('{\n  "http_options"') :])
    (app,) = smoke["applications"]
    assert app["import_path"] == MODELS_IMPORT_PATH
    sources = {
        c["model_loading_config"]["model_id"]: c["model_loading_config"]["model_source"]
        for c in app["args"]["llm_configs"]
    }
    assert sources == {"tiny-lora": str(tiny_model_dir), "llama": str(llama_dir)}
    assert app["args"]["pd_config"]["decode_config"]["model_loading_config"]["model_source"] == str(tiny_model_dir)


def test_each_engine_on_the_host_gets_its_own_tcpstore_port(tiny_model_dir, llama_dir, capsys):
    assert smoke_run.main([*argv(tiny_model_dir, llama_dir), "--dry-run"]) == 0
    out = capsys.readouterr().out
    smoke = json.loads(out[out.index('{\n  "http_options"') :])
    args = smoke["applications"][0]["args"]
    engines = [*args["pd_config"].values(), *args["llm_configs"]]
    ports = [engine["runtime_env"]["env_vars"]["VLLM_DP_MASTER_PORT"] for engine in engines]
    assert len(set(ports)) == len(ports) == 4


def test_the_adapters_load_from_the_smokes_s3_bucket(cfg):
    production, _, _ = smoke_app.smoke_serve_config(
        cfg,
        SmokeOptions(Path("/m"), code_dir=Path("/c"), model_dirs=(("tiny-lora", Path("/t")), ("llama", Path("/l")))),
        HostFacts(False, False, None),
    )
    (tuned,) = [c for c in production["applications"][0]["args"]["llm_configs"] if "lora_config" in c]
    assert tuned["lora_config"]["dynamic_lora_loading_path"] == f"s3://{smoke_app.ADAPTER_BUCKET}/adapters/tiny-lora"


def test_a_model_without_its_local_directory_is_refused(cfg):
    with pytest.raises(ValueError, match="--model-dir-of llama=DIR"):
        smoke_app.smoke_serve_config(
            cfg,
            SmokeOptions(Path("/m"), code_dir=Path("/c"), model_dirs=(("tiny-lora", Path("/t")),)),
            HostFacts(False, False, None),
        )


def test_the_adapters_are_staged_where_the_serve_config_names_them(cfg, tiny_model_dir, tmp_path):
    adapters = lora_adapters.write_adapters(tiny_model_dir, tmp_path / "adapters")
    staged = smoke_models.stage_adapters(cfg, tmp_path / "adapters", tmp_path / "root")
    assert staged == [
        tmp_path / "root" / smoke_app.ADAPTER_BUCKET / "adapters" / "tiny-lora" / a.name for a in adapters
    ]
    assert all((path / "adapter_model.safetensors").is_file() for path in staged)


@pytest.fixture
def served(api: OpenAIServer, monkeypatch: pytest.MonkeyPatch, cfg) -> OpenAIServer:
    monkeypatch.setattr(smoke_deploy, "SERVE_URL", api.base_url.removesuffix("/v1"))
    api.models = smoke_models.served_ids(cfg)
    return api


def test_every_model_and_adapter_is_listed_and_answers(served, cfg, monkeypatch):
    monkeypatch.setattr(smoke_models, "greedy_answer", lambda api, model: f"answer of {model}")
    report = Report()
    smoke_models.check_models(report, cfg)
    assert report.ok, report.verdict("models")
    assert served.models == ["tiny", "tiny-lora", "llama", "tiny-lora:tiny-a", "tiny-lora:tiny-b"]


def test_an_adapter_answering_as_its_base_model_fails(served, cfg):
    """The stand-in server answers every model alike, as an adapter that did not load would."""
    report = Report()
    smoke_models.check_models(report, cfg)
    assert not report.ok
    assert [request["temperature"] for request in served.requests] == [0] * 5


def test_an_adapter_missing_from_the_list_fails(served, cfg, monkeypatch):
    monkeypatch.setattr(smoke_models, "greedy_answer", lambda api, model: f"answer of {model}")
    served.models = served.models[:-1]
    report = Report()
    smoke_models.check_models(report, cfg)
    assert not report.ok


def test_with_share_gpu_every_engine_takes_an_equal_share_of_the_one_gpu(tiny_model_dir, llama_dir, capsys):
    """Two sides and two models: four engines, a quarter of the GPU each (lab/smoke/overrides.py
    shared_gpu_overrides)."""
    argv_ = [*argv(tiny_model_dir, llama_dir), "--share-gpu", "--gpu-memory-utilization", "0.2", "--dry-run"]
    assert smoke_run.main(argv_) == 0
    out = capsys.readouterr().out
    args = json.loads(out[out.index('{\n  "http_options"') :])["applications"][0]["args"]
    engines = [*args["pd_config"].values(), *args["llm_configs"]]
    assert [e["placement_group_config"] for e in engines] == [{"bundles": [{"GPU": 0.25, "CPU": 1}]}] * 4
