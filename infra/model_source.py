"""Model preflight: before the RayService changes, the model source must exist, be readable, and load.

A model the engines cannot fetch or load is found otherwise only after the change is applied, when Serve has
already stopped the working replicas and the app sits in DEPLOY_FAILED (../shared/notes/serve-updates.md).
So `pulumi preview` and `pulumi up` read the model's `config.json` the way the engines will, with the stack's
credentials, and refuse what vLLM 0.26 would refuse:
- a Hugging Face repo: `GET https://huggingface.co/<repo>/resolve/main/config.json` with `hfToken` as bearer
  token (huggingface_hub's `HUGGINGFACE_CO_URL_TEMPLATE`); the Hub's `X-Error-Code` header names what is wrong
  (huggingface_hub `utils/_http.py`, `hf_raise_for_status`: RepoNotFound, GatedRepo, EntryNotFound, and a
  401 without a code for a missing or private repo);
- an `s3://bucket/prefix` source: `<prefix>/config.json` through the AWS provider (`aws.s3.get_object`), so
  with the deploying identity's credentials (`s3:GetObject`);
- a path inside the image cannot be read from here: only its form is checked, with a warning.
Then `max_model_len` must fit the model's own limit, which vLLM derives from the smallest of its length keys
(vLLM 0.26 `model_arch_config_convertor.py`, `derive_max_model_len_and_key`) and enforces
(`vllm/config/model.py`, `_get_and_verify_max_len`: "User-specified max_model_len … is greater than the derived
max_model_len"), and the architecture should be one vLLM registers (`vllm/model_executor/models/registry.py`,
vendored from vLLM 0.26.0; others fall to its Transformers backend, so that is a warning).
"""

from __future__ import annotations

import ast
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

HUB = "https://huggingface.co"
HUB_TIMEOUT_S = 20
# The Hub's X-Error-Message for a bad token (huggingface_hub utils/_http.py hf_raise_for_status).
INVALID_TOKEN = "Invalid credentials in Authorization header"
REGISTRY = Path(__file__).resolve().parent.parent / "vendor" / "vllm-0.26.0" / "registry.py"
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


class ModelSourceError(RuntimeError):
    """The model source cannot be fetched or loaded as configured; the message says why and what to do."""


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    headers: Mapping[str, str]
    body: bytes


Fetch = Callable[[str, Mapping[str, str]], HttpAnswer]
ReadS3Object = Callable[[str, str], str]


def https_get(url: str, headers: Mapping[str, str]) -> HttpAnswer:
    request = urllib.request.Request(url, headers=dict(headers))
    try:
        with urllib.request.urlopen(request, timeout=HUB_TIMEOUT_S) as response:
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
                names.update(k.value for k in node.value.keys if isinstance(k, ast.Constant))
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


def check_model_source(
    source: str,
    max_model_len: int,
    hf_token: str | None,
    *,
    fetch: Fetch | None = None,
    read_s3: ReadS3Object | None = None,
) -> list[str]:
    """Raises ModelSourceError for a source the engines could not load; returns warnings for what it can't tell."""
    if source.startswith("/"):
        return [f"modelSource={source!r} is a path inside the image: not checked before deploying"]
    if source.startswith("s3://"):
        config = s3_config(source, read_s3)
        if config is None:
            return [f"modelSource={source!r}: config.json exists but is not stored as text or JSON; not checked"]
    else:
        config = hub_config(source, hf_token, fetch)
    errors, warnings = config_problems(source, config, max_model_len)
    if errors:
        raise ModelSourceError("; ".join(errors))
    return warnings
