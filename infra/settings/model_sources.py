"""The forms a `modelSource` may take, checked before any resource: a Hugging Face repo id `owner/name`, an
`s3://bucket/prefix` URI, or an absolute path inside the image.

Anything else would reach Ray Serve LLM's `model_source` verbatim and fail only when the engines start, after the VPC
and cluster exist; the rules' sources are on the constants below."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

S3_SCHEME = "s3://"
# huggingface_hub 1.33.0 validate_repo_id's REPO_ID_REGEX (huggingface_hub/utils/_validators.py) with the namespace
# required, ASCII only (re.ASCII there too); the Hub's one-part legacy names redirect to an owner/name repo.
HUB_REPO_PATTERN = re.compile(r"\b[\w.-]{1,96}\b/\b[\w.-]{1,96}\b\Z", re.ASCII)
# S3's general purpose bucket naming rules: 3-63 lower-case letters, digits, '.' and '-', beginning and ending with a
# letter or digit, no '..', not an IP address, none of the reserved prefixes and suffixes
# (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
BUCKET_NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")
RESERVED_BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
RESERVED_BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
BUCKET_RULES = (
    "3-63 lower-case letters, digits, '.' and '-', beginning and ending with a letter or digit, without '..', not an "
    f"IP address, not starting with {', '.join(RESERVED_BUCKET_PREFIXES)} nor ending with "
    f"{', '.join(RESERVED_BUCKET_SUFFIXES)}"
)
ALLOWED_FORMS = (
    "a Hugging Face repo id owner/name (1-96 letters, digits, '-', '_' or '.' each, no '--' or '..', e.g. "
    "Qwen/Qwen3.5-9B), an s3://<bucket>/<prefix> URI (a bucket name S3 takes: lower case, 3-63 characters) or an "
    "absolute path inside the image"
)


def is_s3_uri(source: str) -> bool:
    return source.startswith(S3_SCHEME)


def split_s3_uri(uri: str) -> tuple[str, str]:
    """(bucket, prefix without slashes at either end)."""
    bucket, _, prefix = uri.removeprefix(S3_SCHEME).partition("/")
    return bucket, prefix.strip("/")


def is_hub_repo(source: str) -> bool:
    """A Hugging Face repo id, `owner/name`, by huggingface_hub's rule."""
    return (
        HUB_REPO_PATTERN.fullmatch(source) is not None
        and "--" not in source
        and ".." not in source
        and not source.endswith(".git")
    )


def bucket_name_breaks_rules(bucket: str) -> bool:
    """Whether S3's naming rules refuse a general purpose bucket's name."""
    return (
        not BUCKET_NAME_PATTERN.fullmatch(bucket)
        or ".." in bucket
        or _is_ip_address(bucket)
        or bucket.startswith(RESERVED_BUCKET_PREFIXES)
        or bucket.endswith(RESERVED_BUCKET_SUFFIXES)
    )


def _is_ip_address(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def s3_location_reason(uri: str) -> str | None:
    """Why `uri` cannot be where the workers read the model, or None: a bucket S3 takes and a prefix under it, the
    only part the workers' role may read. The setting (model_source_problem) and ModelCacheArgs
    (infra/serving/model_cache.py) share it."""
    bucket, prefix = split_s3_uri(uri)
    if not is_s3_uri(uri):
        return "it is not an s3:// URI"
    if bucket_name_breaks_rules(bucket):
        return f"bucket {bucket!r} breaks S3's bucket naming rules"
    if not prefix:
        return "it names no prefix under the bucket, and the workers' role may read the model's prefix only"
    return None


def model_source_problem(source: Any, key: str = "modelSource") -> str | None:
    """A model source (modelSource, or a `models` entry's `key`) in none of the forms the engines load, naming what is
    wrong and the forms allowed."""
    if isinstance(source, str) and (source.startswith("/") or is_hub_repo(source)):
        return None
    if not isinstance(source, str) or not is_s3_uri(source):
        return f"{key}={source!r} is invalid: allowed is {ALLOWED_FORMS}"
    reason = s3_location_reason(source)
    if reason is None:
        return None
    allowed = f"s3://<bucket>/<prefix> with a bucket name of {BUCKET_RULES}"
    return f"{key}={source!r} is invalid: {reason}; allowed is {allowed}"
