"""The model mirror: copies a Hugging Face repo into the stack's S3 model cache, once (infra/model_cache.py).

Runs as the cluster's `model-mirror` Job in the DLC image, with huggingface_hub and boto3 from it, as an IAM role
that may write only under the cache prefix. Idempotent and resumable: a file whose object already carries the
Hub's digest for it is skipped, so a retried pod goes on where the last one stopped and a finished mirror copies
nothing. Each file streams from the Hub's download into an S3 multipart upload, never touching the node's disk, and
PARALLEL_FILES of them at once: one HTTP flow each, so the copy is not one flow's rate (tools/cold_start.py).
Last it writes `hash`, the commit it copied, which Ray Serve LLM's downloader reads as the snapshot's
refs/main (ray/llm/_internal/common/utils/cloud_utils.py, CloudFileSystem.download_model).
Every line it prints is progress, for `kubectl logs -n model-cache job/<name>`.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import IO, Any

# The object metadata key holding the Hub's digest of the file (its LFS sha256, or the git blob id).
DIGEST_KEY = "hub-digest"
HASH_OBJECT = "hash"
# Files copied at once: the default model's weights are four shards of up to 5 GB, each one flow from the Hub.
PARALLEL_FILES = 4
# Seconds without a byte from the Hub before a download is given up (and the pod retried, where it stopped).
READ_TIMEOUT_SECONDS = 60


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


class ShortCopy(Exception):
    """A download that did not carry the file's size: the upload is aborted rather than completed short."""


class SizedReader:
    """A file to upload, read from `stream`, that fails at its end unless it carried exactly `size` bytes: boto3
    aborts a multipart upload whose source raises (s3transfer upload.py, the transfer's failure cleanup), so no
    truncated object is left for the next run to take for the file."""

    def __init__(self, stream: IO[bytes], size: int, name: str) -> None:
        self._stream, self._size, self._name, self.read_bytes = stream, size, name, 0

    def read(self, amount: int | None = -1) -> bytes:
        chunk = self._stream.read(amount if amount is not None and amount >= 0 else -1)
        self.read_bytes += len(chunk)
        if self.read_bytes > self._size or (not chunk and self.read_bytes != self._size):
            raise ShortCopy(f"{self._name}: {self.read_bytes} bytes from the Hub, {self._size} expected")
        return chunk


class Progress:
    """What is in the cache so far, logged after each file; the copies run on several threads."""

    def __init__(self, files: list[RepoFile], log: Callable[[str], None]) -> None:
        self._count, self._total, self._log = len(files), sum(f.size for f in files), log
        self._lock, self._started = threading.Lock(), time.monotonic()
        self.done = self.uploaded = self._seen = 0

    def file_done(self, repo_file: RepoFile, copied: bool) -> None:
        with self._lock:
            self._seen += 1
            self.done += repo_file.size
            self.uploaded += repo_file.size if copied else 0
            what = f"{repo_file.size / 1e9:.2f} GB copied" if copied else "already in the cache, skipped"
            self._log(f"[{self._seen}/{self._count}] {repo_file.name}: {what}")
            rate = self.uploaded / max(time.monotonic() - self._started, 1e-9) / 1e6
            share = 100 * self.done / max(self._total, 1)
            self._log(f"progress {self.done / 1e9:.2f}/{self._total / 1e9:.2f} GB ({share:.0f}%), {rate:.0f} MB/s")


def mirror(
    files: Iterable[RepoFile],
    commit: str,
    open_file: Callable[[RepoFile], AbstractContextManager[IO[bytes]]],
    s3: Any,
    uri: str,
    log: Callable[[str], None] = print,
    parallel: int = PARALLEL_FILES,
) -> int:
    """Streams each file missing from `uri` or changed into it, `parallel` at once; returns the bytes uploaded."""
    bucket, prefix = split_s3_uri(uri)
    files = list(files)
    stored = stored_digests(s3, bucket, prefix)
    progress = Progress(files, log)

    def copy(repo_file: RepoFile) -> None:
        key = f"{prefix}/{repo_file.name}"
        if stored.get(key) == repo_file.digest:
            progress.file_done(repo_file, copied=False)
            return
        with open_file(repo_file) as stream:
            body = SizedReader(stream, repo_file.size, repo_file.name)
            s3.upload_fileobj(body, bucket, key, ExtraArgs={"Metadata": {DIGEST_KEY: repo_file.digest}})
        progress.file_done(repo_file, copied=True)

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        # The first failure is raised here once the pool has run every other copy (so a retried pod has less left
        # to do); the `hash` is then not written.
        list(pool.map(copy, files))
    s3.put_object(Bucket=bucket, Key=f"{prefix}/{HASH_OBJECT}", Body=commit.encode())
    log(f"mirror of commit {commit} complete: s3://{bucket}/{prefix}")
    return progress.uploaded


def open_url(url: str, headers: Mapping[str, str]) -> AbstractContextManager[IO[bytes]]:
    """A streamed GET that follows the Hub's redirect to its CDN without the token: urllib copies a request's headers
    to the redirected request but for those added as unredirected (urllib/request.py HTTPRedirectHandler
    redirect_request, Request.add_unredirected_header), and the CDN's URL is signed for the file."""
    request = urllib.request.Request(url)
    for name, value in headers.items():
        if name.lower() == "authorization":
            request.add_unredirected_header(name, value)
        else:
            request.add_header(name, value)
    return urllib.request.urlopen(request, timeout=READ_TIMEOUT_SECONDS)


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
    from huggingface_hub import hf_hub_url
    from huggingface_hub.utils import build_hf_headers

    repo, uri, token = os.environ["MODEL_REPO"], os.environ["MODEL_CACHE_URI"], os.environ.get("HF_TOKEN")
    commit, files = hub_files(repo, token)
    print(f"mirroring {repo}@{commit}: {len(files)} files, {sum(f.size for f in files) / 1e9:.2f} GB -> {uri}")
    headers = build_hf_headers(token=token)

    def open_file(repo_file: RepoFile) -> AbstractContextManager[IO[bytes]]:
        return open_url(hf_hub_url(repo, repo_file.name, revision=commit), headers)

    mirror(files, commit, open_file, boto3.client("s3"), uri)
    return 0


if __name__ == "__main__":
    sys.exit(main())
