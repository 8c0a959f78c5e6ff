"""Code of the stack's that runs inside the Ray cluster (a package under serve_ext/), shipped without an image build.

A ConfigMap holds the package as one zip, mounted into the head and worker pods, and the application's
`runtime_env.py_modules` names that zip by a `file://` URI. Serve's config accepts only remote URIs there
(ray/serve/schema.py, `runtime_env_contains_remote_uris`), and `file://` is one (ray/_private/runtime_env/protocol.py);
Ray unpacks it and puts it on each worker's PYTHONPATH before the image's own (ray/_private/runtime_env/py_modules.py),
so the build task and every replica of the app import it. The zip's name carries its digest: Ray caches a package by
URI, so changed code must be a new URI.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from infra import PROJECT_DIR

SERVE_EXT = PROJECT_DIR / "serve_ext"
# A fixed timestamp and mode for every entry, so the same sources make the same bytes (no diff on `pulumi up`).
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
ZIP_TOP = "serve_ext"


@cache
def package_zip(package: str) -> bytes:
    """The package as Ray's py_modules unpacks it: a remote zip whose top level is one directory loses that
    directory (ray/_private/runtime_env/packaging.py, `download_and_unpack_package`: remote protocols unzip with
    `remove_top_level_directory=True`), and what is left goes on PYTHONPATH; so the package sits one level down."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for source in sorted((SERVE_EXT / package).glob("*.py")):
            entry = zipfile.ZipInfo(f"{ZIP_TOP}/{package}/{source.name}", date_time=ZIP_DATE)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, source.read_bytes())
    return buffer.getvalue()


@dataclass(frozen=True)
class CodePackage:
    package: str  # the directory under serve_ext/, the name the cluster imports
    configmap_prefix: str  # the ConfigMap's name before its digest, also the pods' volume name
    mount: str  # where the pods mount the ConfigMap

    @property
    def directory(self) -> Path:
        return SERVE_EXT / self.package

    def zip(self) -> bytes:
        return package_zip(self.package)

    def digest(self) -> str:
        return hashlib.sha256(self.zip()).hexdigest()

    def zip_name(self) -> str:
        return f"{self.package}-{self.digest()[:16]}.zip"

    def configmap_name(self) -> str:
        """The ConfigMap's name carries the package's digest too. A ConfigMap updated in place reaches a mounted volume
        only after the kubelet's next sync ("the kubelet checks whether the mounted ConfigMap is fresh on every
        periodic sync", https://kubernetes.io/docs/concepts/configuration/configmap/#mounted-configmaps-are-updated-
        automatically), while the serve config would name the new zip at once; a new name changes the pods' volumes
        instead, so the RayService is replaced (a rayClusterConfig change) and every pod starts with the zip it is
        told to load."""
        return f"{self.configmap_prefix}-{self.digest()[:10]}"

    def uri(self, mount: str | None = None) -> str:
        return f"file://{mount or self.mount}/{self.zip_name()}"

    def volume(self) -> tuple[dict[str, object], dict[str, object]]:
        """(the pod's volume, the container's mount) of the ConfigMap, read-only."""
        return (
            {"name": self.configmap_prefix, "configMap": {"name": self.configmap_name()}},
            {"name": self.configmap_prefix, "mountPath": self.mount, "readOnly": True},
        )
