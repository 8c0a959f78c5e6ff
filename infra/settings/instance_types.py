"""What the stack needs to know about the GPU instance type, as EC2 reports it at deploy time
(`aws.ec2.get_instance_type`, asked before any resource), so every GPU type EC2 offers works without a table; this
module only reads the answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The NVIDIA device plugin advertises only NVIDIA GPUs as `nvidia.com/gpu`, and vLLM's CUDA build runs only on them.
GPU_MANUFACTURER = "NVIDIA"
EXAMPLE_GPU_TYPES = "g6.8xlarge, g6e.24xlarge, p4d.24xlarge, p5.48xlarge"
# The processor architecture of both node groups' AMIs (EKS AMI types AL2023_x86_64_STANDARD and AL2023_x86_64_NVIDIA,
# infra/nodes/node_groups.py; https://docs.aws.amazon.com/eks/latest/APIReference/API_Nodegroup.html amiType): an
# instance type must list it among EC2's SupportedArchitectures to boot them.
NODE_ARCHITECTURE = "x86_64"


@dataclass(frozen=True)
class InstanceShape:
    """One instance type's GPUs, EFA interfaces, CPUs, memory and network cards (DescribeInstanceTypes)."""

    instance_type: str
    gpus: int  # NVIDIA GPUs
    gpu_name: str  # e.g. "L4", "H100"; empty without GPUs
    gpu_memory_mib: int  # per GPU
    efa_supported: bool
    efa_interfaces: int  # NetworkInfo.EfaInfo.MaximumEfaInterfaces: one per EFA-capable network card
    vcpus: int
    memory_mib: int
    network_cards: int
    architectures: tuple[str, ...]  # ProcessorInfo.SupportedArchitectures: i386, x86_64, arm64, x86_64_mac, arm64_mac


def instance_shape(result: Any) -> InstanceShape:
    """The shape of pulumi-aws's `GetInstanceTypeResult` (pulumi_aws/ec2/get_instance_type.py: one `gpuses` entry per
    GPU model, memory in MiB); "Not all attributes are set for every instance type" (its docs), so an absent GPU list
    or EFA count reads as none."""
    nvidia = [gpu for gpu in result.gpuses or () if gpu.manufacturer == GPU_MANUFACTURER]
    return InstanceShape(
        instance_type=result.instance_type,
        gpus=sum(gpu.count for gpu in nvidia),
        gpu_name=", ".join(gpu.name for gpu in nvidia),
        gpu_memory_mib=max((gpu.memory_size for gpu in nvidia), default=0),
        efa_supported=bool(result.efa_supported),
        efa_interfaces=(result.efa_maximum_interfaces or 0) if result.efa_supported else 0,
        vcpus=result.default_vcpus,
        memory_mib=result.memory_size,
        network_cards=result.maximum_network_cards,
        architectures=tuple(result.supported_architectures),
    )


def unfit_gpu_node_reason(shape: InstanceShape | None, region: str) -> str | None:
    """Why EC2's answer rules the type out for the GPU nodes (NVIDIA GPUs and EFA are both needed); None if fit."""
    if shape is None:
        return f"EC2 does not know it in {region}"
    if NODE_ARCHITECTURE not in shape.architectures:
        return architecture_reason(shape)
    if shape.gpus and shape.efa_interfaces:
        return None
    if shape.gpus:
        return "it has GPUs but no EFA network interface"
    if shape.efa_interfaces:
        return "it supports EFA but has no NVIDIA GPU"
    return "it has neither NVIDIA GPUs nor EFA"


def architecture_reason(shape: InstanceShape) -> str:
    """Why a type whose processors the nodes' x86_64 AMI cannot boot on is unfit, as EC2's answer says."""
    return (
        f"EC2 lists its architectures as {', '.join(shape.architectures)}, and the node group's EKS AMI is "
        f"{NODE_ARCHITECTURE}"
    )


def gpu_node_type_problem(instance_type: str, shape: InstanceShape | None, region: str) -> str | None:
    """The stack's `gpuNodeType` error for an unfit type (unfit_gpu_node_reason); None if fit."""
    reason = unfit_gpu_node_reason(shape, region)
    if reason is None:
        return None
    return (
        f"gpuNodeType={instance_type!r} is invalid: {reason}; allowed is an instance type with NVIDIA GPUs and EFA, "
        f"e.g. {EXAMPLE_GPU_TYPES} (aws ec2 describe-instance-types --filters Name=network-info.efa-supported,"
        "Values=true Name=instance-type,Values=g*,p*)"
    )


# EFA without RDMA read, which EC2's DescribeInstanceTypes does not report: the AWS EC2 User Guide,
# "Elastic Fabric Adapter", Supported instance types (docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html
# #efa-instance-types), lists these Nitro v3 GPU families with "RDMA read support: No"; g6, g6e, p5 (Nitro v4
# and later, "RDMA read is supported on all instances with Nitro version 4 and later") and p4d/p4de have it.
EFA_FAMILIES_WITHOUT_RDMA_READ = frozenset({"g4dn", "g5", "p3dn"})


def resolve_kv_buffer_device(setting: str, gpu_node_type: str) -> str:
    """ "auto": GPU memory where the node's EFA can serve NIXL's RDMA reads, else host memory (libfabric's EFA
    provider registers CUDA memory with the device itself and needs RDMA read to move it without host copies)."""
    if setting != "auto":
        return setting
    return "cpu" if gpu_node_type.split(".")[0] in EFA_FAMILIES_WITHOUT_RDMA_READ else "cuda"
