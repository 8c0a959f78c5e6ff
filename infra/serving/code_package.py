"""Code of the stack's that runs inside the Ray cluster (a package under serve_ext/), shipped without an image build: a
ConfigMap of one zip, mounted into the Ray pods and named by a `file://` URI in `runtime_env.py_modules`, the zip's
and the ConfigMap's names carrying its digest
(docs/architecture.md#the-stacks-code-in-the-ray-pods-without-an-image-build has Ray's and Kubernetes' sources)."""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass
from functools import cache

from infra import PROJECT_DIR

SERVE_EXT = PROJECT_DIR / "serve_ext"
# A fixed timestamp and mode for every entry, so the same sources make the same bytes (no diff on `pulumi up`).
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
ZIP_TOP = "serve_ext"


@cache
def package_zip(package: str) -> bytes:
    """The package as Ray's py_modules unpacks it: a remote zip loses its one top-level directory, so the package sits
    one level down."""
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

    def zip(self) -> bytes:
        return package_zip(self.package)

    def digest(self) -> str:
        return hashlib.sha256(self.zip()).hexdigest()

    def zip_name(self) -> str:
        return f"{self.package}-{self.digest()[:16]}.zip"

    def configmap_name(self) -> str:
        """The ConfigMap's name carries the package's digest too, so changed code replaces the RayService and every pod
        starts with the zip it is told to load instead of waiting on the kubelet's sync."""
        return f"{self.configmap_prefix}-{self.digest()[:10]}"

    def uri(self, mount: str | None = None) -> str:
        return f"file://{mount or self.mount}/{self.zip_name()}"

    def volume(self) -> tuple[dict[str, object], dict[str, object]]:
        """(the pod's volume, the container's mount) of the ConfigMap, read-only."""
        return (
            {"name": self.configmap_prefix, "configMap": {"name": self.configmap_name()}},
            {"name": self.configmap_prefix, "mountPath": self.mount, "readOnly": True},
        )
