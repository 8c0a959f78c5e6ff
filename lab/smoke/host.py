"""What the one-host overrides depend on, read from this machine: an EFA device, libfabric's version, flashinfer,
the GPUs and their memory, whether the model keeps Mamba state.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

# NIXL's LIBFABRIC plugin needs libfabric >= 1.21 (AWS EC2 User Guide, "Elastic Fabric Adapter": "NIXL
# integrates with Libfabric 1.21.0 and later"); NIXL 1.3.1's plugin links symbol version FABRIC_1.7,
# which libfabric 1.17 lacks ("unsupported backend 'LIBFABRIC'", lab/records/gpu-end-to-end.md).
NIXL_MIN_LIBFABRIC = (1, 21)


@dataclass(frozen=True)
class HostFacts:
    """What the one-host overrides depend on, read from the machine (tests pass their own)."""

    has_efa: bool
    has_flashinfer: bool
    libfabric: tuple[int, int] | None = None  # the libfabric.so.1 the dynamic loader finds, if any

    @property
    def nixl_libfabric_usable(self) -> bool:
        return self.libfabric is not None and self.libfabric >= NIXL_MIN_LIBFABRIC


def model_has_mamba_state(model_dir: Path) -> bool:
    """Linear-attention (Gated DeltaNet) layers, which vLLM caches as Mamba state (`MambaSpec`)."""
    config = json.loads((model_dir / "config.json").read_text())
    return "linear_attention" in config.get("text_config", config).get("layer_types", [])


def detect_host() -> HostFacts:
    return HostFacts(
        has_efa=has_efa_device(),
        has_flashinfer=importlib.util.find_spec("flashinfer") is not None,
        libfabric=libfabric_version(),
    )


def libfabric_version() -> tuple[int, int] | None:
    """(major, minor) of the libfabric NIXL's plugin would load: `fi_version()` returns
    FI_VERSION(major, minor) = major << 16 | minor (ofiwg/libfabric include/rdma/fabric.h)."""
    try:
        library = ctypes.CDLL("libfabric.so.1")
    except OSError:
        return None
    library.fi_version.restype = ctypes.c_uint32
    version = library.fi_version()
    return version >> 16, version & 0xFFFF


def has_efa_device() -> bool:
    """An EFA shows up as an RDMA device bound to the `efa` driver, or as libfabric's efa provider."""
    infiniband = Path("/sys/class/infiniband")
    if infiniband.is_dir():
        for device in infiniband.iterdir():
            if (device / "device" / "driver").resolve().name == "efa":
                return True
    if shutil.which("fi_info"):
        probe = subprocess.run(["fi_info", "-p", "efa"], capture_output=True, check=False, timeout=30)
        return probe.returncode == 0
    return False


def gpu_memory_mib() -> int:
    """Total memory of GPU 0 as nvidia-smi reports it (the unit `--gpu-memory-of` takes)."""
    query = ["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits", "-i", "0"]
    return int(subprocess.run(query, capture_output=True, text=True, check=True).stdout.strip())


def gpu_count() -> int:
    if not shutil.which("nvidia-smi"):
        return 0
    listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    return sum(1 for line in listing.stdout.splitlines() if line.startswith("GPU "))
