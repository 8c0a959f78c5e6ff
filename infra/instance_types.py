"""What the stack needs to know about EC2 GPU instance types.

EFA support and interface counts are not exposed by any AWS API we can call without credentials,
so the stack validates `gpuNodeType` against this table before anything is declared. Counts are the
EC2 "maximum EFA interfaces" of each type (one per EFA-capable network card).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuInstanceType:
    name: str
    gpus: int
    vcpus: int
    memory_gib: int
    efa_interfaces: int


def _table(*rows: tuple[str, int, int, int, int]) -> dict[str, GpuInstanceType]:
    return {row[0]: GpuInstanceType(*row) for row in rows}


EFA_GPU_INSTANCE_TYPES: dict[str, GpuInstanceType] = _table(
    # name, GPUs, vCPUs, memory GiB, EFA interfaces
    ("g4dn.8xlarge", 1, 32, 128, 1),
    ("g4dn.12xlarge", 4, 48, 192, 1),
    ("g4dn.16xlarge", 1, 64, 256, 1),
    ("g5.8xlarge", 1, 32, 128, 1),
    ("g5.12xlarge", 4, 48, 192, 1),
    ("g5.16xlarge", 1, 64, 256, 1),
    ("g5.24xlarge", 4, 96, 384, 1),
    ("g5.48xlarge", 8, 192, 768, 1),
    ("g6.8xlarge", 1, 32, 128, 1),
    ("g6.12xlarge", 4, 48, 192, 1),
    ("g6.16xlarge", 1, 64, 256, 1),
    ("g6.24xlarge", 4, 96, 384, 1),
    ("g6.48xlarge", 8, 192, 768, 1),
    ("g6e.8xlarge", 1, 32, 256, 1),
    ("g6e.12xlarge", 4, 48, 384, 1),
    ("g6e.16xlarge", 1, 64, 512, 1),
    ("g6e.24xlarge", 4, 96, 768, 2),
    ("g6e.48xlarge", 8, 192, 1536, 4),
    ("p4d.24xlarge", 8, 96, 1152, 4),
    ("p5.48xlarge", 8, 192, 2048, 32),
    ("p5en.48xlarge", 8, 192, 2048, 16),
)

# Known types that would otherwise get a generic "unknown" message: GPU types without EFA, and
# EFA types without a GPU. Naming the reason saves a trip to the EC2 documentation.
GPU_TYPES_WITHOUT_EFA = frozenset(
    {
        "g4dn.xlarge",
        "g4dn.2xlarge",
        "g4dn.4xlarge",
        "g5.xlarge",
        "g5.2xlarge",
        "g5.4xlarge",
        "g6.xlarge",
        "g6.2xlarge",
        "g6.4xlarge",
        "g6e.xlarge",
        "g6e.2xlarge",
        "g6e.4xlarge",
    }
)
EFA_TYPES_WITHOUT_GPU = frozenset(
    {"c5n.18xlarge", "c6in.32xlarge", "c7i.48xlarge", "m7i.48xlarge", "r7iz.32xlarge", "hpc7a.96xlarge"}
)
