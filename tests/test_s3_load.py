"""The GPU proof's S3 part (tools/s3_load.py), on CPU: a model uploaded to moto's S3 server comes back whole through
Ray Serve LLM 2.58's own downloader, driven by the stack's loader settings. The vLLM load runs on the GPU host only
(docs/gpu-end-to-end.md)."""

from __future__ import annotations

import json

from tools import s3_load, smoke


def test_the_model_comes_back_whole_through_rays_downloader(tiny_model_dir, tmp_path):
    """Ray's CloudModelDownloader writes the snapshot where Hugging Face's cache keeps one,
    `models--<model_id>/snapshots/<hash>` (ray/llm/_internal/common/utils/cloud_utils.py download_model), and
    vLLM loads that directory."""
    with s3_load.local_s3():
        uri = s3_load.upload(tiny_model_dir)
        copy, _ = s3_load.fetch(uri, tmp_path)
    assert copy.parent.parent.name == f"models--{s3_load.MODEL_ID}"
    # The snapshot is named by the `hash` object, as the mirror Job writes it (serve_ext/model_mirror.py).
    assert (copy.parent.parent / "refs" / "main").read_text() == copy.name
    for original in tiny_model_dir.iterdir():
        assert (copy / original.name).read_bytes() == original.read_bytes(), original.name


def test_without_the_engine_the_tool_writes_the_fetch_as_json(tiny_model_dir, tmp_path):
    out = tmp_path / "result.json"
    assert s3_load.main([str(tiny_model_dir), "--no-engine", "--work-dir", str(tmp_path), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["fetched_bytes"] == result["model_bytes"] > 0
    assert result["s3_fetch_gb_per_s"] > 0
    assert "from_s3" not in result


def test_both_loads_use_the_engine_the_stack_starts(tiny_model_dir):
    """The timed engine is the stack's decode engine as tools.smoke serves it on one host, so its load and first token
    are the workers' (language_model_only, the stack's max_model_len and batch limits, CUDA graphs), not vLLM's
    defaults; one engine, so no KV connector."""
    settings = s3_load.engine_settings(tiny_model_dir, gpu_memory_utilization=0.3)
    cfg = smoke.serve_stack_config("dev")
    kwargs = settings.engine_kwargs
    assert kwargs["max_model_len"] == cfg.max_model_len and kwargs["language_model_only"] is cfg.language_model_only
    assert kwargs["gpu_memory_utilization"] == 0.3 and "enforce_eager" not in kwargs
    assert "kv_transfer_config" not in kwargs
    assert settings.env["VLLM_SSM_CONV_STATE_LAYOUT"] == "DS"
