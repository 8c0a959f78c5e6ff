"""What a node's kubelet leaves to pods: the reservations of EKS's AL2023 nodeadm, and requests as the scheduler
counts them (https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#requests-and-limits)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Allocatable, as EKS's AL2023 nodeadm sets it (awslabs/amazon-eks-ami,
# nodeadm/internal/kubelet/config.go): kube-reserved CPU is 6 % of the first core, 1 % of the
# second, 0.5 % of the next two and 0.25 % of the rest; kube-reserved memory is 255 MiB + 11 MiB per
# pod the node may hold; the hard eviction threshold keeps another 100 MiB.
KUBE_RESERVED_CPU_BANDS = ((0, 1000, 600), (1000, 2000, 100), (2000, 4000, 50), (4000, None, 25))
KUBE_RESERVED_MEMORY_BASE_MIB = 255
KUBE_RESERVED_MEMORY_PER_POD_MIB = 11
EVICTION_HARD_MEMORY_MIB = 100
# The most pods nodeadm allows any EFA-capable GPU type (nodeadm/internal/kubelet/eni-max-pods.txt:
# g5.12xlarge, g6.48xlarge, p4d.24xlarge ... 737); using the bound keeps the pod inside allocatable.
MAX_PODS_BOUND = 737
# The kernel and firmware keep part of the nominal memory from the node's capacity; Karpenter
# subtracts 7.5 % by default for the same reason (karpenter-provider-aws, VM_MEMORY_OVERHEAD_PERCENT).
VM_MEMORY_OVERHEAD = 0.075


def kube_reserved_cpu_millis(vcpus: int) -> int:
    total = vcpus * 1000
    reserved = 0
    for start, end, per_ten_thousand in KUBE_RESERVED_CPU_BANDS:
        top = total if end is None else min(total, end)
        if top > start:
            reserved += (top - start) * per_ten_thousand // 10000
    return reserved


# The most pods a system node's kubelet is given, for its kube-reserved memory (the rest of nodeadm's reservation is
# above): Kubernetes' default maxPods, above the ENI-based limit of the small types a system
# node uses (m7i.xlarge 58, m7i.large 29: awslabs/amazon-eks-ami nodeadm/internal/kubelet/eni-max-pods.txt); a type
# with a higher limit has memory to spare. An estimate on the safe side.
SYSTEM_MAX_PODS_BOUND = 110


@dataclass(frozen=True)
class Requests:
    """What pods ask of a node (or what it offers), in millicores and MiB."""

    millicpu: int
    memory_mib: int

    def __add__(self, other: Requests) -> Requests:
        return Requests(self.millicpu + other.millicpu, self.memory_mib + other.memory_mib)

    def __sub__(self, other: Requests) -> Requests:
        return Requests(self.millicpu - other.millicpu, self.memory_mib - other.memory_mib)

    def fits(self, room: Requests) -> bool:
        return self.millicpu <= room.millicpu and self.memory_mib <= room.memory_mib


NOTHING = Requests(0, 0)


def millicpu(quantity: str) -> int:
    return int(quantity[:-1]) if quantity.endswith("m") else round(float(quantity) * 1000)


def mebibytes(quantity: str) -> int:
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return round(float(quantity[: -len(suffix)]) * factor)
    return round(float(quantity) / (1024 * 1024))  # plain bytes


def requests_of(resources: Mapping[str, Any]) -> Requests:
    """A container's requests as the scheduler counts them: each resource's request, else its limit, else none."""
    asked = {**resources.get("limits", {}), **resources.get("requests", {})}
    return Requests(millicpu(asked.get("cpu", "0")), mebibytes(asked.get("memory", "0")))


def allocatable(vcpus: int, memory_mib: int, max_pods: int) -> Requests:
    """What the EKS AMI's kubelet leaves to pods on a node of at most `max_pods` pods: nodeadm's kube-reserved CPU and
    memory, the eviction threshold and the VM's memory overhead."""
    capacity_mib = memory_mib * (1 - VM_MEMORY_OVERHEAD)
    reserved_mib = (
        KUBE_RESERVED_MEMORY_BASE_MIB + KUBE_RESERVED_MEMORY_PER_POD_MIB * max_pods + EVICTION_HARD_MEMORY_MIB
    )
    return Requests(vcpus * 1000 - kube_reserved_cpu_millis(vcpus), int(capacity_mib - reserved_mib))
