"""Model preflight: before the RayService changes, the model source must exist, be readable, and load.

Otherwise a bad model is found only after Serve has stopped the working replicas; what is read where, and what vLLM
0.26 would refuse: docs/models.md#the-model-preflight-read-in-its-sources. It also reads the tensors' bytes from the
safetensors headers for the capacity estimate (infra/settings/capacity.py)."""

from __future__ import annotations

import ast
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from infra import PROJECT_DIR
from infra.settings.model_sources import is_s3_uri

HUB = "https://huggingface.co"
HUB_TIMEOUT_S = 20
# The Hub's X-Error-Message for a bad token (huggingface_hub utils/_http.py hf_raise_for_status).
INVALID_TOKEN = "Invalid credentials in Authorization header"
REGISTRY = PROJECT_DIR / "vendor" / "vllm-0.26.0" / "registry.py"
# vLLM 0.26's keys for a model's maximum length, in its own order (derive_max_model_len_and_key).
MAX_LENGTH_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)


# huggingface_hub constants.py: the file names of a safetensors checkpoint and the longest header it parses;
# hf_api.py parse_safetensors_file_metadata fetches a header's first 100,000 bytes at once.
SAFETENSORS_SINGLE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
SAFETENSORS_MAX_HEADER_LENGTH = 25_000_000
SAFETENSORS_HEADER_PREFETCH = 100_000
# The checkpoint names of a vision tower vLLM 0.26 leaves unbuilt with language_model_only (Qwen3.5/Qwen3-VL).
TOWER_PREFIXES = ("model.visual.",)


class ModelSourceError(RuntimeError):
    """The model source cannot be fetched or loaded as configured; the message says why and what to do."""


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    headers: Mapping[str, str]
    body: bytes


Fetch = Callable[[str, Mapping[str, str]], HttpAnswer]
ReadS3Object = Callable[[str, str], str]


class _KeepHeadersOnRedirect(urllib.request.HTTPRedirectHandler):
    """Follows the Hub's redirects with the request's headers, as huggingface_hub's client does: a `Range` goes on
    to the CDN that serves the bytes (else a header read would fetch whole shards), `Authorization` only to the
    same host (httpx, which huggingface_hub uses, drops it when a redirect changes origin: `_redirect_headers`).
    CPython's own handler copies the request's headers to the redirect (urllib/request.py `redirect_request`)."""

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        redirected = super().redirect_request(req, fp, code, msg, headers, newurl)
        if (
            redirected is not None
            and urllib.parse.urlsplit(newurl).hostname != urllib.parse.urlsplit(req.full_url).hostname
        ):
            redirected.remove_header("Authorization")
        return redirected


_OPENER = urllib.request.build_opener(_KeepHeadersOnRedirect)


def https_get(url: str, headers: Mapping[str, str]) -> HttpAnswer:
    request = urllib.request.Request(url, headers=dict(headers))
    try:
        with _OPENER.open(request, timeout=HUB_TIMEOUT_S) as response:
            return HttpAnswer(response.status, dict(response.headers), response.read())
    except urllib.error.HTTPError as error:
        return HttpAnswer(error.code, dict(error.headers), error.read())


def s3_get_object_text(bucket: str, key: str) -> str:
    """The object's body through the AWS provider; pulumi-aws returns it only for text and JSON content types."""
    import pulumi_aws as aws

    return aws.s3.get_object(bucket=bucket, key=key).body or ""


def _hub_problem(repo: str, answer: HttpAnswer, with_token: bool) -> str:
    code = answer.headers.get("X-Error-Code") or answer.headers.get("x-error-code") or ""
    if (answer.headers.get("X-Error-Message") or answer.headers.get("x-error-message")) == INVALID_TOKEN:
        return "hfToken is not a valid Hugging Face token (huggingface.co: Invalid credentials in Authorization header)"
    token_hint = (
        "the hfToken given has no access to it" if with_token else "set `pulumi config set --secret hfToken hf_…`"
    )
    if code == "GatedRepo":
        return f"modelSource={repo!r} is a gated repository: accept its conditions on huggingface.co, and {token_hint}"
    if code == "EntryNotFound":
        return f"modelSource={repo!r} has no config.json: it is not a model vLLM can load"
    if code == "RepoNotFound" or answer.status in (401, 404):
        return (
            f"modelSource={repo!r} is not a Hugging Face repository this stack can read: it does not exist, or it is "
            f"private ({token_hint})"
        )
    return f"modelSource={repo!r}: huggingface.co answered HTTP {answer.status} for its config.json"


def hub_config(repo: str, token: str | None, fetch: Fetch | None = None) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        answer = (fetch or https_get)(f"{HUB}/{repo}/resolve/main/config.json", headers)
    except OSError as error:
        raise ModelSourceError(
            f"modelSource={repo!r} could not be checked: huggingface.co did not answer ({error}); "
            "the check needs HTTPS to huggingface.co from this machine (set modelPreflight to false to skip it)"
        ) from error
    if answer.status != 200:
        raise ModelSourceError(_hub_problem(repo, answer, token is not None))
    return _parse_config(repo, answer.body.decode("utf-8", "replace"))


def s3_config(source: str, read: ReadS3Object | None = None) -> dict[str, Any] | None:
    """The config of an s3:// source, or None where S3 holds it under a content type the provider won't return."""
    bucket, _, prefix = source.removeprefix("s3://").partition("/")
    key = f"{prefix.rstrip('/')}/config.json" if prefix else "config.json"
    try:
        body = (read or s3_get_object_text)(bucket, key)
    except Exception as error:  # the provider turns S3's refusal (NoSuchKey, AccessDenied) into a failed invoke
        raise ModelSourceError(
            f"modelSource={source!r}: s3://{bucket}/{key} cannot be read by the deploying identity ({error}); "
            "the workers load the weights from there"
        ) from error
    return _parse_config(source, body) if body else None


def _parse_config(source: str, text: str) -> dict[str, Any]:
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ModelSourceError(f"modelSource={source!r}: its config.json is not JSON ({error})") from error
    if not isinstance(config, dict):
        raise ModelSourceError(f"modelSource={source!r}: its config.json is not a JSON object")
    return config


@cache
def vllm_architectures() -> frozenset[str]:
    """Every architecture vLLM 0.26's registry maps to an implementation (the `_…_MODELS` dicts of registry.py)."""
    tree = ast.parse(REGISTRY.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id.endswith("_MODELS") and target.id != "_VLLM_MODELS":
                names.update(
                    k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
                )
    return frozenset(names)


def _rope_scaled(config: Mapping[str, Any]) -> bool:
    for key in ("rope_scaling", "rope_parameters"):  # transformers 4 and 5 names
        value = config.get(key)
        if isinstance(value, Mapping) and (
            "factor" in value or any(isinstance(v, Mapping) and "factor" in v for v in value.values())
        ):
            return True
    return False


def model_max_length(config: Mapping[str, Any]) -> int | None:
    """The model's own limit as vLLM derives it: the text config's smallest length key, or `model_max_length`
    where set; None where none is set, or where RoPE scaling stretches it (vLLM scales it by the factor)."""
    text = config.get("text_config") or config
    if _rope_scaled(text) or _rope_scaled(config):
        return None
    lengths = [int(text[key]) for key in MAX_LENGTH_KEYS if isinstance(text.get(key), int)]
    if isinstance(text.get("model_max_length"), int):
        return int(text["model_max_length"])
    return min(lengths) if lengths else None


def config_problems(source: str, config: Mapping[str, Any], max_model_len: int) -> tuple[list[str], list[str]]:
    """(errors, warnings) about a model config against what the stack asks of it."""
    errors, warnings = [], []
    limit = model_max_length(config)
    if limit is not None and max_model_len > limit:
        errors.append(
            f"maxModelLen={max_model_len} is more than modelSource={source!r} allows ({limit} tokens in its "
            "config.json): vLLM refuses to start; allowed is at most that"
        )
    architectures = config.get("architectures") or []
    if not architectures:
        warnings.append(f"modelSource={source!r}: its config.json names no architectures; vLLM may not load it")
    elif not set(architectures) & vllm_architectures():
        warnings.append(
            f"modelSource={source!r}: vLLM 0.26 registers none of {architectures}; it would try its Transformers "
            "backend, which may not support the model"
        )
    return errors, warnings


@dataclass(frozen=True)
class ModelFacts:
    """What the preflight read: the config (None where it could not be read) and the checkpoint tensors vLLM loads
    (None where they could not be read), with warnings about what it could not tell."""

    config: Mapping[str, Any] | None
    # name -> (safetensors dtype, bytes) of each tensor vLLM loads; None where they could not be read
    tensors: Mapping[str, tuple[str, int]] | None
    warnings: tuple[str, ...]


def _safetensors_header_tensors(
    source: str, filename: str, answer: HttpAnswer, fetch_rest: Callable[[int], bytes]
) -> dict[str, tuple[str, int]]:
    """A safetensors file's tensors -> (dtype, bytes): an 8-byte little-endian header length, then the JSON header
    whose entries give each tensor's `dtype` and `data_offsets` (huggingface_hub `hf_api.py`
    `parse_safetensors_file_metadata`)."""
    size = int.from_bytes(answer.body[:8], "little")
    if size > SAFETENSORS_MAX_HEADER_LENGTH:
        raise ModelSourceError(f"modelSource={source!r}: {filename} has a safetensors header of {size} bytes")
    header = answer.body[8 : 8 + size] if size <= len(answer.body) - 8 else fetch_rest(size)
    entries = json.loads(header)
    return {
        name: (entry["dtype"], entry["data_offsets"][1] - entry["data_offsets"][0])
        for name, entry in entries.items()
        if name != "__metadata__"
    }


def hub_weight_tensors(
    repo: str, token: str | None, language_model_only: bool, fetch: Fetch | None = None
) -> dict[str, tuple[str, int]] | None:
    """The tensors vLLM loads (name -> (dtype, bytes)), from the safetensors headers on the Hub as huggingface_hub reads
    them, less the vision tower with `language_model_only`; None where the repo has no safetensors weights
    (docs/deploy-time-lookups.md#made-by-this-program-infra)."""
    get = fetch or https_get
    auth = {"Authorization": f"Bearer {token}"} if token else {}

    def ask(filename: str, byte_range: str | None = None) -> HttpAnswer:
        headers = {**auth, **({"Range": f"bytes={byte_range}"} if byte_range else {})}
        return get(f"{HUB}/{repo}/resolve/main/{filename}", headers)

    def header(filename: str) -> dict[str, tuple[str, int]]:
        answer = ask(filename, f"0-{SAFETENSORS_HEADER_PREFETCH}")
        if answer.status not in (200, 206):
            raise ModelSourceError(_hub_problem(repo, answer, token is not None))
        return _safetensors_header_tensors(repo, filename, answer, lambda size: ask(filename, f"8-{size + 7}").body)

    index = ask(SAFETENSORS_INDEX)
    if index.status == 200:
        shards = sorted(set(json.loads(index.body)["weight_map"].values()))
    elif ask(SAFETENSORS_SINGLE, "0-7").status in (200, 206):
        shards = [SAFETENSORS_SINGLE]
    else:
        return None
    tensors = {name: entry for shard in shards for name, entry in header(shard).items()}
    skipped = TOWER_PREFIXES if language_model_only else ()
    return {name: entry for name, entry in tensors.items() if not name.startswith(skipped)}


def read_model(
    source: str,
    max_model_len: int,
    hf_token: str | None,
    language_model_only: bool,
    *,
    fetch: Fetch | None = None,
    read_s3: ReadS3Object | None = None,
) -> ModelFacts:
    """The preflight (raises ModelSourceError for a source the engines could not load), and what capacity needs."""
    if source.startswith("/"):
        return ModelFacts(
            None, None, (f"modelSource={source!r} is a path inside the image: not checked before deploying",)
        )
    if is_s3_uri(source):
        config = s3_config(source, read_s3)
        if config is None:
            warning = f"modelSource={source!r}: config.json exists but is not stored as text or JSON; not checked"
            return ModelFacts(None, None, (warning,))
        weights = None  # pulumi-aws's getObject returns no binary body, so no safetensors header
    else:
        config = hub_config(source, hf_token, fetch)
        weights = hub_weight_tensors(source, hf_token, language_model_only, fetch)
    errors, warnings = config_problems(source, config, max_model_len)
    if errors:
        raise ModelSourceError("; ".join(errors))
    return ModelFacts(config, weights, tuple(warnings))
