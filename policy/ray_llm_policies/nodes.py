"""Rules on the nodes: EFA and one AZ for the GPU group, no public IPs, room on the GPU root disk."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource

from .props import as_bool, as_number, get, is_sequence, mappings
from .resource_types import EKS_CLUSTER_COMPONENT, LAUNCH_TEMPLATE, NODE_GROUPS, SUBNET
from .rules import Inspected, resource_policy, stack_policy

GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
# EKS accelerated AMI types: AL2023_x86_64_NVIDIA, AL2_x86_64_GPU, BOTTLEROCKET_x86_64_NVIDIA, ...
GPU_AMI_MARKERS = ("NVIDIA", "GPU")
EFA_INTERFACE_TYPE = "efa"
# The root device of the EKS AL2023 and Bottlerocket AMIs.
ROOT_DEVICE_NAMES = frozenset({"/dev/xvda", "/dev/sda1"})
MIN_GPU_ROOT_VOLUME_GIB = 100
# IMDSv2 answering the node and hostNetwork pods only: one hop more (a pod's own network namespace) gets no token
# (https://docs.aws.amazon.com/eks/latest/best-practices/identity-and-access-management.html, "Restrict access to the
# instance profile assigned to the worker node").
MAX_IMDS_HOP_LIMIT = 1
# What a managed node group without a launch template gets when diskSize is not set.
EKS_DEFAULT_DISK_GIB = 20


def is_gpu_node_group(resource: Inspected) -> bool:
    """A managed node group of GPU nodes: an accelerated AMI, the NVIDIA taint, or the label the NVIDIA device plugin
    keys on. Its settings are the pulumi-eks component's under mocks, its `aws:eks` NodeGroup child's in a real preview,
    where the component shows no inputs (docs/policy.md#what-a-policy-can-and-cannot-see)."""
    if resource.resource_type not in NODE_GROUPS:
        return False
    ami_type = get(resource.props, "amiType", default="")
    labels = get(resource.props, "labels", default={})
    taint_keys = {get(taint, "key") for taint in mappings(get(resource.props, "taints"))}
    return (
        any(marker in ami_type for marker in GPU_AMI_MARKERS)
        or GPU_TAINT_KEY in taint_keys
        or as_bool(get(labels, GPU_PRESENT_LABEL))
    )


def gpu_node_groups(resources: Sequence[PolicyResource]) -> list[PolicyResource]:
    return [resource for resource in resources if is_gpu_node_group(resource)]


def launch_template_of(node_group: PolicyResource) -> PolicyResource | None:
    """The launch template a node group's inputs depend on (its `launchTemplate` holds only the id)."""
    return next((dep for dep in node_group.dependencies if dep.resource_type == LAUNCH_TEMPLATE), None)


def efa_interface_count(launch_template: Mapping[str, Any]) -> int:
    return sum(
        1
        for interface in mappings(get(launch_template, "networkInterfaces"))
        if get(interface, "interfaceType") == EFA_INTERFACE_TYPE
    )


def root_volume_gib(launch_template: Mapping[str, Any]) -> float | None:
    """Size of the root EBS volume the launch template sets, or None where it leaves the AMI default."""
    for mapping in mappings(get(launch_template, "blockDeviceMappings")):
        if get(mapping, "deviceName") in ROOT_DEVICE_NAMES:
            return as_number(get(mapping, "ebs", "volumeSize"))
    return None


def _gpu_nodes_without_efa(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    fix = (
        "Fix: set gpuNodeType to an EFA-capable instance type (e.g. g6.8xlarge); the stack's GPU launch template "
        "gets one EFA interface per EFA network card of that type (infra/nodes/node_groups.py)."
    )
    for group in gpu_node_groups(resources):
        template = launch_template_of(group)
        if template is None:
            yield (
                group,
                f"GPU node group '{group.name}' has no launch template, so its nodes get no EFA interface. {fix}",
            )
        elif efa_interface_count(template.props) == 0:
            yield (
                group,
                f"GPU node group '{group.name}' launches from launch template '{template.name}', which has no "
                f"network interface of type 'efa', so NIXL's KV transfer would fall back to TCP. {fix}",
            )


def _gpu_node_group_azs(resource: Inspected) -> Iterator[str]:
    if not is_gpu_node_group(resource):
        return
    fix = (
        "Fix: set gpuAz to one Availability Zone that offers gpuNodeType, or leave it empty to pick the first; "
        "the stack places the GPU nodes in that AZ's private subnet only."
    )
    # The length is known in a preview even when the subnet ids themselves are not.
    subnet_ids = get(resource.props, "subnetIds")
    if not is_sequence(subnet_ids):
        yield f"GPU node group '{resource.name}' sets no subnetIds, so it spans every subnet of the cluster. {fix}"
    elif len(subnet_ids) != 1:
        yield (
            f"GPU node group '{resource.name}' spans {len(subnet_ids)} subnets; EFA and its cluster placement group "
            f"need one AZ. {fix}"
        )


def _public_ip_assignments(resource: Inspected) -> Iterator[str]:
    no_config = "Fix: no stack config turns this on; revert the change in"
    if resource.resource_type == LAUNCH_TEMPLATE:
        for index, interface in enumerate(mappings(get(resource.props, "networkInterfaces"))):
            if as_bool(get(interface, "associatePublicIpAddress")):
                yield (
                    f"launch template '{resource.name}' network interface {index} sets associatePublicIpAddress. "
                    f"{no_config} infra/nodes/node_groups.py (associate_public_ip_address='false')."
                )
    elif resource.resource_type == SUBNET:
        if as_bool(get(resource.props, "mapPublicIpOnLaunch")):
            yield (
                f"subnet '{resource.name}' gives every instance launched in it a public IP (mapPublicIpOnLaunch). "
                f"{no_config} infra/network/vpc.py (map_public_ip_on_launch=False); NAT gateways and load balancers "
                "bring their own addresses."
            )
    elif resource.resource_type == EKS_CLUSTER_COMPONENT:
        if as_bool(get(resource.props, "nodeAssociatePublicIpAddress")):
            yield (
                f"EKS cluster '{resource.name}' sets nodeAssociatePublicIpAddress. "
                f"{no_config} infra/cluster/eks.py (node_associate_public_ip_address=False)."
            )


def _small_gpu_root_volumes(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    fix = f"Fix: set gpuRootVolumeGiB to {MIN_GPU_ROOT_VOLUME_GIB} or more (the default is 200)."
    for group in gpu_node_groups(resources):
        template = launch_template_of(group)
        size: float | None
        if template is None:
            size = as_number(get(group.props, "diskSize")) or EKS_DEFAULT_DISK_GIB
            where = "its diskSize"
        else:
            size = root_volume_gib(template.props)
            where = f"launch template '{template.name}'"
            if size is None:
                yield (
                    group,
                    f"GPU node group '{group.name}': {where} sets no root volume, so nodes get the AMI's default. "
                    f"{fix}",
                )
                continue
        if size < MIN_GPU_ROOT_VOLUME_GIB:
            yield group, f"GPU node group '{group.name}' boots from a {size:g} GiB root volume ({where}). {fix}"


def _imds_reachable_from_pods(resource: Inspected) -> Iterator[str]:
    options = get(resource.props, "metadataOptions", default={})
    tokens, hops = get(options, "httpTokens"), as_number(get(options, "httpPutResponseHopLimit"))
    no_config = "Fix: no stack config changes this; revert the change in infra/nodes/node_groups.py"
    if tokens != "required":
        yield (
            f"launch template '{resource.name}' does not require IMDSv2 tokens (httpTokens {tokens!r}): a pod that "
            f"can forge a request (SSRF) reads the node role's credentials. {no_config} (http_tokens='required')."
        )
    if hops is None or hops > MAX_IMDS_HOP_LIMIT:
        yield (
            f"launch template '{resource.name}' lets IMDS answer {hops if hops is not None else 'its default'} hops "
            f"away: every pod can take the node role's credentials. {no_config} (IMDS_HOP_LIMIT = 1)."
        )


GPU_NODES_EFA = stack_policy(
    "gpu-nodes-efa",
    "The GPU node group launches with EFA network interfaces: the prefill/decode KV-cache transfer rides EFA.",
    EnforcementLevel.MANDATORY,
    _gpu_nodes_without_efa,
)
GPU_NODES_SINGLE_AZ = resource_policy(
    "gpu-nodes-single-az",
    "The GPU node group lives in one Availability Zone: EFA traffic does not cross AZs.",
    EnforcementLevel.MANDATORY,
    NODE_GROUPS,
    _gpu_node_group_azs,
)
NODES_NO_PUBLIC_IP = resource_policy(
    "nodes-no-public-ip",
    "Nodes get no public IP address: they sit in private subnets and reach out through NAT.",
    EnforcementLevel.MANDATORY,
    {LAUNCH_TEMPLATE, SUBNET, EKS_CLUSTER_COMPONENT},
    _public_ip_assignments,
)
GPU_ROOT_VOLUME = stack_policy(
    "gpu-root-volume-size",
    f"GPU nodes have at least {MIN_GPU_ROOT_VOLUME_GIB} GiB of root disk: the DLC image and model weights land there.",
    EnforcementLevel.ADVISORY,
    _small_gpu_root_volumes,
)
NODES_IMDS_ONE_HOP = resource_policy(
    "nodes-imds-one-hop",
    "Nodes require IMDSv2 and answer it one hop only: no pod can take the node role's credentials.",
    EnforcementLevel.MANDATORY,
    {LAUNCH_TEMPLATE},
    _imds_reachable_from_pods,
)
