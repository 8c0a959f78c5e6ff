"""The model mirror: copies a Hugging Face repo into the stack's S3 model cache, once (infra/model_cache.py).

Runs as the cluster's `model-mirror` Job in the DLC image, with huggingface_hub and boto3 from it, as an IAM role
that may write only under the cache prefix. Idempotent and resumable: a file whose object already carries the
Hub's digest for it is skipped, so a retried pod goes on where the last one stopped and a finished mirror copies
nothing. One file at a time lands on local disk (the largest shard, a few GB) and is uploaded, then removed.
Last it writes `hash`, the commit it copied, which Ray Serve LLM's downloader reads as the snapshot's
refs/main (ray/llm/_internal/common/utils/cloud_utils.py, CloudFileSystem.download_model).
Every line it prints is progress, for `kubectl logs -n model-cache job/<name>`.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The object metadata key holding the Hub's digest of the file (its LFS sha256, or the git blob id).
DIGEST_KEY = "hub-digest"
HASH_OBJECT = "hash"


@dataclass(frozen=True)
class RepoFile:
    name: str
    size: int
    digest: str


def split_s3_uri(uri: str) -> tuple[str, str]:
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    return bucket, prefix.strip("/")


# vLLM 0.26's default loader reads the weights of one format, from the repo's top level only: the first of
# *.safetensors, *.bin, *.pt that any top-level file has (vllm/model_executor/model_loader/default_loader.py,
# `_prepare_weights`: glob in the model folder, break at the first pattern that matches). Ray Serve LLM downloads
# every object under the prefix (ray/llm/_internal/common/utils/cloud_utils.py), so the mirror copies only those.
LOADED_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")
WEIGHT_SUFFIXES = (*LOADED_WEIGHT_SUFFIXES, ".pth", ".gguf", ".msgpack", ".h5", ".onnx", ".ckpt", ".ot")


def loaded_files(files: list[RepoFile]) -> list[RepoFile]:
    """The repo's files vLLM's default loader needs: every non-weight file (configs, tokenizer, chat template) and
    the top-level weights of the format it picks; not a second copy of the weights (`original/*.pth`, `*.bin`
    beside `*.safetensors`), which would double the bucket and every node's download."""
    top_level = [f.name for f in files if "/" not in f.name]
    chosen = next((s for s in LOADED_WEIGHT_SUFFIXES if any(n.endswith(s) for n in top_level)), None)
    return [
        f
        for f in files
        if not f.name.endswith(WEIGHT_SUFFIXES) or ("/" not in f.name and chosen and f.name.endswith(chosen))
    ]


def stored_digests(s3: Any, bucket: str, prefix: str) -> dict[str, str | None]:
    """The digest recorded on each object already under the prefix. Listed first, then each listed key read: without
    s3:ListBucket for a request, HeadObject of a missing key answers 403, not 404
    (https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html), and the mirror's ListBucket holds only
    with an s3:prefix condition, which a HeadObject request does not carry."""
    keys = [
        item["Key"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"{prefix}/")
        for item in page.get("Contents", [])
    ]
    return {key: s3.head_object(Bucket=bucket, Key=key)["Metadata"].get(DIGEST_KEY) for key in keys}


def mirror(
    files: Iterable[RepoFile],
    commit: str,
    fetch: Callable[[RepoFile, Path], Path],
    s3: Any,
    uri: str,
    log: Callable[[str], None] = print,
) -> int:
    """Copies each file missing from `uri` or changed; returns the bytes uploaded."""
    bucket, prefix = split_s3_uri(uri)
    files = list(files)
    stored = stored_digests(s3, bucket, prefix)
    total = sum(f.size for f in files)
    done = uploaded = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=os.environ.get("MIRROR_WORK_DIR")) as work:
        for index, repo_file in enumerate(files, 1):
            key = f"{prefix}/{repo_file.name}"
            if stored.get(key) == repo_file.digest:
                log(f"[{index}/{len(files)}] {repo_file.name}: already in the cache, skipped")
            else:
                local = fetch(repo_file, Path(work))
                s3.upload_file(str(local), bucket, key, ExtraArgs={"Metadata": {DIGEST_KEY: repo_file.digest}})
                local.unlink()
                uploaded += repo_file.size
                log(f"[{index}/{len(files)}] {repo_file.name}: {repo_file.size / 1e9:.2f} GB copied")
            done += repo_file.size
            rate = uploaded / max(time.monotonic() - started, 1e-9) / 1e6
            log(f"progress {done / 1e9:.2f}/{total / 1e9:.2f} GB ({100 * done / max(total, 1):.0f}%), {rate:.0f} MB/s")
    s3.put_object(Bucket=bucket, Key=f"{prefix}/{HASH_OBJECT}", Body=commit.encode())
    log(f"mirror of commit {commit} complete: s3://{bucket}/{prefix}")
    return uploaded


def hub_files(repo: str, token: str | None) -> tuple[str, list[RepoFile]]:
    """The repo's commit on main and its files, with each file's size and digest (huggingface_hub's
    `model_info(files_metadata=True)`: siblings with `size`, `blob_id` and, for LFS files, `lfs.sha256`)."""
    from huggingface_hub import HfApi

    info = HfApi(token=token).model_info(repo, files_metadata=True)
    files = [
        RepoFile(s.rfilename, s.size or 0, s.lfs.sha256 if s.lfs else s.blob_id)
        for s in info.siblings
        if not s.rfilename.startswith(".")
    ]
    return info.sha, loaded_files(files)


def main() -> int:
    import boto3
    from huggingface_hub import hf_hub_download

    repo, uri, token = os.environ["MODEL_REPO"], os.environ["MODEL_CACHE_URI"], os.environ.get("HF_TOKEN")
    commit, files = hub_files(repo, token)
    print(f"mirroring {repo}@{commit}: {len(files)} files, {sum(f.size for f in files) / 1e9:.2f} GB -> {uri}")

    def fetch(repo_file: RepoFile, work: Path) -> Path:
        return Path(hf_hub_download(repo, repo_file.name, revision=commit, token=token, local_dir=work))

    mirror(files, commit, fetch, boto3.client("s3"), uri)
    return 0


if __name__ == "__main__":
    sys.exit(main())
