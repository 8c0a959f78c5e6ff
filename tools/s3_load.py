"""GPU proof of the model cache: load a model from an S3 API endpoint on this host, as the stack's workers do.

./.venv-gpu/bin/python -m tools.s3_load /tmp/full                 # `python -m tools.tiny_model /tmp/full --shape full`
./.venv-gpu/bin/python -m tools.s3_load /tmp/tiny --no-engine     # the S3 part alone (what the tests run on CPU)

With no network: moto's S3 server (ThreadedMotoServer, from PyPI: requirements-s3.txt) on 127.0.0.1, the model
directory uploaded into it, then fetched with the stack's own loader settings (`infra.serve_config.
model_loading_config`, the `model_source` both sides' LLMConfig carries): Ray Serve LLM 2.58 turns an `s3://`
model_source into a CloudMirrorConfig (ray/llm/_internal/serve/engines/vllm/vllm_models.py `from_llm_config`) and
each node's engine start calls `download_model_files` with it (serve/utils/node_initialization_utils.py
`initialize_remote_node`), which this tool calls as well; boto3 finds the local server through AWS_ENDPOINT_URL
(botocore's service-specific endpoint settings). vLLM then loads the downloaded copy, and the original directory
for comparison. It prints one JSON document: seconds and GB/s of the S3 fetch, vLLM's load seconds from each
source, and the first token's latency after each load.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.serve_config import model_loading_config
from serve_ext.model_mirror import HASH_OBJECT

BUCKET = "s3-load-proof"
PREFIX = "models/s3-load"
MODEL_ID = "s3-load"
# A region moto accepts for CreateBucket without a location constraint.
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def local_s3() -> Iterator[str]:
    """moto's S3 API on loopback, with throwaway credentials; yields its endpoint. boto3 in this process (and
    Ray's downloader, which builds its own client) reads the endpoint and the credentials from the environment."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    saved = {
        key: os.environ.get(key)
        for key in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")
    }
    os.environ.update(
        {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION,
        }
    )
    try:
        yield endpoint
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def upload(model_dir: Path) -> str:
    """The model directory's files under s3://BUCKET/PREFIX, as the mirror Job leaves them (with the `hash`
    object Ray names the snapshot by, here a digest of the file names and sizes); returns the URI."""
    import boto3

    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    files = sorted(p for p in model_dir.rglob("*") if p.is_file())
    for path in files:
        s3.upload_file(str(path), BUCKET, f"{PREFIX}/{path.relative_to(model_dir)}")
    digest = hashlib.sha1("".join(f"{p.name}:{p.stat().st_size}" for p in files).encode()).hexdigest()
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/{HASH_OBJECT}", Body=digest.encode())
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
    """The engine the stack's workers start, as tools.smoke serves it on one host (its aggregated baseline: the decode
    side's engine_kwargs without the KV connector, the host's named overrides, a share of this GPU): the load and the
    first token are timed with the stack's own settings (language_model_only, max_model_len, CUDA graphs, batch
    limits), not vLLM's defaults."""
    from tools import smoke

    opts = smoke.SmokeOptions(
        model_dir=model_dir,
        model_has_mamba_state=smoke.model_has_mamba_state(model_dir),
        aggregated=True,
        gpu_memory_utilization=gpu_memory_utilization,
        max_model_len=None,
        enforce_eager=False,
    )
    _, config, _ = smoke.smoke_serve_config(smoke.serve_stack_config(stack), opts, smoke.detect_host())
    engine = smoke.served_engine(config)
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
    del llm
    return {"engine_load_s": round(loaded - started, 2), "first_token_s": round(first_token - loaded, 3)}


def directory_bytes(path: Path) -> int:
    """The model's bytes: the files under `path`, less the `hash` object Ray downloads with them."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and p.name != HASH_OBJECT)


def measure(model_dir: Path, hub_cache: Path, settings: EngineSettings | None) -> dict[str, Any]:
    size = directory_bytes(model_dir)
    result: dict[str, Any] = {"model_bytes": size}
    with local_s3() as endpoint:
        started = time.monotonic()
        uri = upload(model_dir)
        result["upload_s"] = round(time.monotonic() - started, 2)
        local_copy, fetch_s = fetch(uri, hub_cache)
    result.update(
        {
            "s3_endpoint": endpoint,
            "model_source": uri,
            "s3_fetch_s": round(fetch_s, 2),
            "s3_fetch_gb_per_s": round(size / fetch_s / 1e9, 3),
            "fetched_copy": str(local_copy),
            "fetched_bytes": directory_bytes(local_copy),
        }
    )
    if settings is not None:
        result["engine_kwargs"] = settings.engine_kwargs
        result["from_s3"] = engine_load(local_copy, settings)
        result["from_local_disk"] = engine_load(model_dir, settings)
        result["from_s3"]["load_s"] = round(fetch_s + result["from_s3"]["engine_load_s"], 2)
        result["from_local_disk"]["load_s"] = result["from_local_disk"]["engine_load_s"]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=Path, help="a model directory (python -m tools.tiny_model)")
    parser.add_argument("--no-engine", action="store_true", help="the S3 upload and fetch only, no vLLM (CPU)")
    parser.add_argument("--stack", default="dev", help="stack whose engine settings both loads use")
    parser.add_argument(
        "--gpu-memory-utilization", type=float, default=0.3, help="the share of this GPU each engine takes"
    )
    parser.add_argument("--work-dir", type=Path, default=None, help="where the fetched copy goes (a temporary dir)")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here (Ray and vLLM log to stdout)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.work_dir) as hub_cache:
        settings = None if args.no_engine else engine_settings(args.model_dir, args.gpu_memory_utilization, args.stack)
        result = json.dumps(measure(args.model_dir, Path(hub_cache), settings), indent=2)
    print(result)
    if args.out:
        args.out.write_text(result + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
