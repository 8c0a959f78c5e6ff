"""API-key auth on the serve endpoint: how the auth package reaches the Ray pods and the serve config names it.

The package (`serve_ext/ray_llm_eks_auth`, run inside the cluster) travels without an image build: a ConfigMap
holds it as one zip, mounted into the head and worker pods, and the application's `runtime_env.py_modules`
names that zip by a `file://` URI. Serve's config accepts only remote URIs there (ray/serve/schema.py,
`runtime_env_contains_remote_uris`), and `file://` is one (ray/_private/runtime_env/protocol.py); Ray unpacks
it and puts it on each worker's PYTHONPATH before the image's own (ray/_private/runtime_env/py_modules.py), so
the build task and every replica of the app import it. The zip's name carries its digest: Ray caches a
package by URI, so changed code must be a new URI.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from functools import cache
from typing import Any

from infra import PROJECT_DIR

PACKAGE = "ray_llm_eks_auth"
PACKAGE_DIR = PROJECT_DIR / "serve_ext" / PACKAGE
INGRESS_CLS = f"{PACKAGE}.ingress:ApiKeyIngress"
CODE_CONFIGMAP_PREFIX = "serve-auth-code"
CODE_MOUNT = "/opt/ray-llm-eks/serve-auth"
KEYS_SECRET = "serve-api-keys"
KEYS_SECRET_KEY = "keys"
KEYS_MOUNT = "/etc/ray-llm-eks/api-keys"
KEYS_FILE = f"{KEYS_MOUNT}/{KEYS_SECRET_KEY}"
# A fixed timestamp and mode for every entry, so the same sources make the same bytes (no diff on `pulumi up`).
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
ZIP_TOP = "serve_ext"


@cache
def package_zip() -> bytes:
    """The package as Ray's py_modules unpacks it: a remote zip whose top level is one directory loses that
    directory (ray/_private/runtime_env/packaging.py, `download_and_unpack_package`: remote protocols unzip with
    `remove_top_level_directory=True`), and what is left goes on PYTHONPATH; so the package sits one level down."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for source in sorted(PACKAGE_DIR.glob("*.py")):
            entry = zipfile.ZipInfo(f"{ZIP_TOP}/{PACKAGE}/{source.name}", date_time=ZIP_DATE)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, source.read_bytes())
    return buffer.getvalue()


def package_zip_name() -> str:
    return f"{PACKAGE}-{hashlib.sha256(package_zip()).hexdigest()[:16]}.zip"


def code_configmap_name() -> str:
    """The ConfigMap's name carries the package's digest too. A ConfigMap updated in place reaches a mounted volume
    only after the kubelet's next sync ("the kubelet checks whether the mounted ConfigMap is fresh on every periodic
    sync", https://kubernetes.io/docs/concepts/configuration/configmap/#mounted-configmaps-are-updated-automatically),
    while the serve config would name the new zip at once; a new name changes the pods' volumes instead, so the
    RayService is replaced (a rayClusterConfig change) and every pod starts with the zip it is told to load."""
    return f"{CODE_CONFIGMAP_PREFIX}-{hashlib.sha256(package_zip()).hexdigest()[:10]}"


def package_uri(mount: str = CODE_MOUNT) -> str:
    return f"file://{mount}/{package_zip_name()}"


def ingress_args(keys_file: str = KEYS_FILE) -> dict[str, Any]:
    """The PD builder's ingress arguments: our ingress class, told where the keys are."""
    return {"ingress_cls_config": {"ingress_cls": INGRESS_CLS, "ingress_extra_kwargs": {"api_keys_file": keys_file}}}


def keys_file_content(keys: list[str]) -> str:
    return "".join(f"{key}\n" for key in keys)
