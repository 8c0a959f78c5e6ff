"""Managed node groups: CPU system nodes, and the EFA-enabled GPU nodes in one AZ, the GPU group on a launch template of
our own rather than pulumi-eks's `enableEfaSupport` (docs/architecture.md#architecture says why), with IMDSv2
required and the root disk sized for the DLC image and model weights."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
from pulumi.errors import InputPropertyErrorDetails

from infra.cluster.eks import Cluster
from infra.components import Children, problem, raise_input_errors
from infra.kube.scheduling import (
    GPU_NODE_LABELS,
    GPU_TAINT,
    SYSTEM_NODE_LABELS,
    SYSTEM_NODEGROUP_NAME,
    VLLM_CACHE_GID,
    VLLM_CACHE_HOST_PATH,
    VLLM_CACHE_MODE,
    accelerator_label,
)
from infra.settings.instance_types import NODE_ARCHITECTURE, InstanceShape, instance_shape, unfit_gpu_node_reason
from infra.settings.kinds import MAX_NODES_PER_NODE_GROUP

SYSTEM_AMI_TYPE = f"AL2023_{NODE_ARCHITECTURE}_STANDARD"
GPU_AMI_TYPE = f"AL2023_{NODE_ARCHITECTURE}_NVIDIA"
SYSTEM_ROOT_VOLUME_GIB = 50
ROOT_DEVICE_NAME = "/dev/xvda"
NODE_GROUP_TYPE = "aws:eks/nodeGroup:NodeGroup"
# EKS node group capacity types (CreateNodegroup capacityType) for the stack's gpuCapacityType values.
EKS_CAPACITY_TYPES = {"on-demand": "ON_DEMAND", "capacity-block": "CAPACITY_BLOCK"}
EKS_TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}


# What EC2 answers DescribeInstanceTypes for a name it does not know (the EC2 API reference's error codes,
# https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html).
UNKNOWN_INSTANCE_TYPE_ERROR = "InvalidInstanceType"


def describe_instance_type(instance_type: str) -> InstanceShape | None:
    """EC2's facts about an instance type in the deploy region, None if it has no such type.

    Called while the config is loaded, before any resource is declared, like the placement lookup."""
    try:
        result = aws.ec2.get_instance_type(instance_type=instance_type)
    except Exception as error:  # the provider turns EC2's error into a failed invoke; only this one is expected
        if UNKNOWN_INSTANCE_TYPE_ERROR in str(error):
            return None
        raise
    return instance_shape(result)


# How EKS replaces nodes on an update (API_NodegroupUpdateConfig): the GPU group terminates the old node first, one
# at a time, since the extra nodes a DEFAULT update adds need quota and placement the group may not have
# (docs/changes.md, Node updates fit).
SYSTEM_UPDATE_STRATEGY = "DEFAULT"
GPU_UPDATE_STRATEGY = "MINIMAL"
MAX_UNAVAILABLE_NODES = 1


def node_group_options(update_strategy: str) -> Callable[[pulumi.ResourceTransformArgs], Any]:
    """A transform for pulumi-eks's inner `aws:eks/nodeGroup:NodeGroup`, which its ManagedNodeGroup has no input for:
    delete before replace (EKS node group names are unique in a cluster, and ours are fixed), and the group's update
    behaviour. The child's props arrive under their wire (camelCase) names (pulumi `runtime/_callbacks.py`)."""

    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        if args.type_ != NODE_GROUP_TYPE:
            return None
        props = {
            **args.props,
            "updateConfig": {"maxUnavailable": MAX_UNAVAILABLE_NODES, "updateStrategy": update_strategy},
        }
        return pulumi.ResourceTransformResult(
            props, pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(delete_before_replace=True))
        )

    return transform


def _managed_node_group(
    children: Children,
    tags: Mapping[str, str],
    cluster: Cluster,
    *,
    node_group_name: str,
    instance_type: str | None,
    count: int,
    subnet_ids: list[pulumi.Input[str]],
    ami_type: str,
    labels: dict[str, str],
    capacity_type: str = "on-demand",
    max_count: int | None = None,
    min_count: int | None = None,
    update_strategy: str = SYSTEM_UPDATE_STRATEGY,
    role: str,
    **extra: Any,
) -> eks.ManagedNodeGroup:
    """A managed node group `<component>-<role>` in private subnets on the cluster's Kubernetes version, created once
    they have egress where the subnet ids carry their routes (as infra.network.vpc.Network's do): fixed (min = max =
    desired), or from `count` up to `max_count` with the desired size left to the Cluster Autoscaler, and its least
    `min_count` (None: `count`). `instance_type` None leaves the type to the launch template."""
    most = max_count or count
    least = count if min_count is None else min_count
    return eks.ManagedNodeGroup(
        children.name(role),
        cluster=cluster.eks_cluster,
        node_group_name=node_group_name,
        node_role=cluster.node_role,
        subnet_ids=subnet_ids,
        instance_types=[instance_type] if instance_type else None,
        capacity_type=EKS_CAPACITY_TYPES[capacity_type],
        ami_type=ami_type,
        # pulumi-eks sets no version when a launch template is given; without one, a node group stays
        # on its Kubernetes version when the control plane is upgraded.
        version=cluster.kubernetes_version,
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(min_size=least, max_size=most, desired_size=count),
        # The Cluster Autoscaler moves the desired size; a later `pulumi up` must not reset it.
        ignore_scaling_changes=most > count,
        labels=labels,
        tags=tags,
        # The transform reaches the aws:eks/nodeGroup:NodeGroup that pulumi-eks creates inside ("<name>-nodeGroup").
        opts=pulumi.ResourceOptions.merge(
            children.opts(), pulumi.ResourceOptions(transforms=[node_group_options(update_strategy)])
        ),
        **extra,
    )


# Root volumes fast enough for nodeadm's FastImagePull of the DLC image: the GPU nodes at the guide's top rate, the
# system nodes at its least (docs/model-cache.md, The image on the node faster).
GPU_ROOT_THROUGHPUT_MIBPS = 1000
GPU_ROOT_IOPS = 4000
SYSTEM_ROOT_THROUGHPUT_MIBPS = 600
# Made before the kubelet places a Ray worker there: the hostPath of vLLM's compile cache, writable by its group only
# (infra/kube/scheduling.py VLLM_CACHE_HOST_PATH, VLLM_CACHE_GID).
GPU_NODE_DIRECTORY_COMMANDS = (f"install -d -o root -g {VLLM_CACHE_GID} -m {VLLM_CACHE_MODE} {VLLM_CACHE_HOST_PATH}",)
USER_DATA_BOUNDARY = "==RAY-LLM-EKS=="
NODE_CONFIG = (
    "---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  featureGates:\n    FastImagePull: true"
)
# IMDSv2's token answers one hop only, so no pod takes the node role's credentials, and none needs IMDS
# (docs/security.md#inside-the-cluster, 2. IMDS).
IMDS_HOP_LIMIT = 1


def node_user_data(commands: Sequence[str]) -> str:
    """A launch template's user data (base64) that turns on FastImagePull and runs `commands` at boot: EKS merges a
    managed node group's own NodeConfig with a launch template's, which must be MIME multi-part
    (https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html, "Amazon EKS AMIs": nodeadm reads every
    application/node.eks.aws part; cloud-init runs the shell script part)."""
    parts = [f"--{USER_DATA_BOUNDARY}\nContent-Type: application/node.eks.aws\n\n{NODE_CONFIG}\n"]
    if commands:
        script = "\n".join(["#!/bin/bash", "set -euo pipefail", *commands])
        parts.append(f'--{USER_DATA_BOUNDARY}\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n{script}\n')
    header = f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{USER_DATA_BOUNDARY}"\n\n'
    return base64.b64encode((header + "\n".join(parts) + f"\n--{USER_DATA_BOUNDARY}--\n").encode()).decode()


def _launch_template(
    children: Children,
    role: str,
    tags: Mapping[str, str],
    *,
    description: str,
    root_volume_gib: int,
    root_volume_throughput: int | None = None,
    root_volume_iops: int | None = None,
    **extra: Any,
) -> aws.eks.NodeGroupLaunchTemplateArgs:
    """A launch template with IMDSv2 required and an encrypted gp3 root volume, and no AMI: EKS picks the
    node group's AMI for its `amiType` and `version`."""
    template = aws.ec2.LaunchTemplate(
        children.name(role),
        description=description,
        metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
            http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=IMDS_HOP_LIMIT
        ),
        block_device_mappings=[
            aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name=ROOT_DEVICE_NAME,
                ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                    volume_size=root_volume_gib,
                    volume_type="gp3",
                    encrypted="true",
                    delete_on_termination="true",
                    throughput=root_volume_throughput,
                    iops=root_volume_iops,
                ),
            )
        ],
        tag_specifications=[
            aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=tags)
            for kind in ("instance", "volume", "network-interface")
        ],
        tags=tags,
        opts=children.opts(),
        **extra,
    )
    return aws.eks.NodeGroupLaunchTemplateArgs(id=template.id, version=template.latest_version.apply(str))


@dataclass(frozen=True)
class SystemNodesArgs:
    """The CPU nodes of the system pods, the KubeRay operator and the Ray head, and the CoreDNS add-on they host."""

    instance_type: str  # an EC2 instance type, e.g. "m7i.xlarge"
    count: int  # nodes, fixed (1 to EKS's 450 per managed node group)
    coredns_version: str  # the coredns add-on build, e.g. "v1.13.2-eksbuild.1" (one EKS offers for the version)
    subnet_ids: Sequence[pulumi.Input[str]]  # private subnets with egress (Network.private_subnet_ids), any AZs
    vpc_id: pulumi.Input[str]  # the subnets' VPC, for the nodes' own security group
    tags: Mapping[str, str] = field(default_factory=dict)  # on the node group, its template and the add-on


def _node_count_errors(path: str, count: int, least: int) -> list[InputPropertyErrorDetails]:
    if least <= count <= MAX_NODES_PER_NODE_GROUP:
        return []
    return [problem(path, f"{count} nodes: allowed is {least} to {MAX_NODES_PER_NODE_GROUP} (EKS's per-group quota)")]


def system_nodes_args_errors(args: SystemNodesArgs) -> list[InputPropertyErrorDetails]:
    errors = _node_count_errors("count", args.count, 1)
    if not args.subnet_ids:
        errors.append(problem("subnet_ids", "empty: a managed node group needs a subnet"))
    return errors


class SystemNodes(pulumi.ComponentResource):
    node_group: eks.ManagedNodeGroup
    coredns: aws.eks.Addon
    # A group only the system nodes carry: what a service reached by the Ray head alone (the GCS store) admits.
    security_group_id: pulumi.Output[str]

    def __init__(
        self, name: str, args: SystemNodesArgs, cluster: Cluster, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        raise_input_errors("SystemNodes", system_nodes_args_errors(args))
        super().__init__("ray-llm-eks:nodes:SystemNodes", name, None, opts)
        children = Children(self, name)
        # No rules of its own: it names the system nodes to other groups. An instance's rules are the union of its
        # groups' (https://docs.aws.amazon.com/vpc/latest/userguide/vpc-security-groups.html), so the cluster group
        # beside it keeps every path the nodes had.
        own_group = aws.ec2.SecurityGroup(
            children.name("system-nodes"),
            description=f"{SYSTEM_NODEGROUP_NAME}: the system nodes, admitted where only the Ray head may go",
            vpc_id=args.vpc_id,
            tags={**args.tags, "Name": f"{cluster.cluster_name}-system-nodes"},
            opts=children.opts(),
        )
        self.security_group_id = own_group.id
        self.node_group = _managed_node_group(
            children,
            args.tags,
            cluster,
            role="system",
            node_group_name=SYSTEM_NODEGROUP_NAME,
            instance_type=args.instance_type,
            count=args.count,
            subnet_ids=list(args.subnet_ids),
            ami_type=SYSTEM_AMI_TYPE,
            labels=SYSTEM_NODE_LABELS,
            # pulumi-eks's own template (made for `enable_imd_sv2`/`disk_size`) cannot encrypt the root volume.
            launch_template=_launch_template(
                children,
                "system",
                args.tags,
                description=f"{SYSTEM_NODEGROUP_NAME}: IMDSv2, {SYSTEM_ROOT_VOLUME_GIB} GiB encrypted gp3 root",
                root_volume_gib=SYSTEM_ROOT_VOLUME_GIB,
                root_volume_throughput=SYSTEM_ROOT_THROUGHPUT_MIBPS,
                user_data=node_user_data(()),
                # A launch template that names security groups gets those alone, not the cluster's: EKS adds the
                # cluster security group only to a template without any
                # (https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html, "Security groups").
                vpc_security_group_ids=[cluster.cluster_security_group_id, own_group.id],
            ),
        )
        # CoreDNS is the core add-on that needs a node to become ACTIVE: created with the cluster,
        # before any node group, it would block every node group that waits for the cluster.
        self.coredns = aws.eks.Addon(
            children.name("coredns"),
            cluster_name=cluster.cluster_name,
            addon_name="coredns",
            addon_version=args.coredns_version,
            # Take over the self-managed CoreDNS that EKS bootstraps with the cluster.
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=args.tags,
            opts=children.opts(depends_on=[self.node_group]),
        )
        self.register_outputs({})


def efa_network_interfaces(
    efa_interfaces: int, security_group_ids: list[pulumi.Input[str]]
) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
    """One EFA interface per EFA-capable network card: the primary (card 0, device 0) an EFA with ENA, each further
    card's at device index 1, EFA-only, taking no IP address, so only the primary carries the public-IP setting."""
    return [
        aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            network_card_index=card,
            device_index=0 if card == 0 else 1,
            interface_type="efa" if card == 0 else "efa-only",
            associate_public_ip_address="false" if card == 0 else None,
            delete_on_termination="true",
            security_groups=security_group_ids,
        )
        for card in range(efa_interfaces)
    ]


@dataclass(frozen=True)
class GpuNodesArgs:
    """The EFA-enabled GPU node group in one subnet (so one AZ), with a cluster placement group of its own when no
    reservation brings one; its EFA interfaces and GPU model come from EC2, as pulumi-eks's EFA support does
    (docs/architecture.md#reusing-the-components-in-a-stack-of-your-own)."""

    node_group_name: str  # the EKS node group's name (unique in the cluster)
    instance_type: str  # an EC2 type with NVIDIA GPUs and EFA, e.g. "g6.8xlarge"
    count: int  # nodes (0 to 450); with max_count, the least the group keeps
    vpc_id: pulumi.Input[str]  # the VPC of subnet_id, for the EFA security group
    subnet_id: pulumi.Input[str]  # one private subnet with egress, in an AZ that offers instance_type
    root_volume_gib: int = 200  # the gp3 root volume, where the image and the model weights land
    capacity_reservation_id: str | None = None  # an ODCR to launch into, or the Capacity Block's reservation
    # "on-demand" (optionally into capacity_reservation_id) or "capacity-block" (the block's reservation id).
    capacity_type: str = "on-demand"
    # More nodes the Cluster Autoscaler may add, up to this many (None: a fixed `count`).
    max_count: int | None = None
    # With max_count, the least the group keeps (None: `count`). 0 lets a later `pulumi up` raise `count` at all: the
    # desired size is left to the Cluster Autoscaler (ignored by Pulumi), and EKS refuses a minimum above the desired
    # size ("Minimum capacity N can't be greater than desired size", UpdateNodegroupConfig); the autoscaler removes
    # only nodes it finds unneeded, never one a Ray worker asks all of.
    min_count: int | None = None
    tags: Mapping[str, str] = field(default_factory=dict)  # on every resource of the group


def gpu_nodes_args_errors(args: GpuNodesArgs, shape: InstanceShape | None) -> list[InputPropertyErrorDetails]:
    """The counts' order, the capacity type's needs and EC2's answer (`shape`) about the instance type."""
    errors = _node_count_errors("count", args.count, 0)
    if args.max_count is not None:
        errors += _node_count_errors("max_count", args.max_count, max(args.count, 1))
    if args.min_count is not None and not 0 <= args.min_count <= args.count:
        errors.append(problem("min_count", f"{args.min_count} nodes: allowed is 0 to count ({args.count})"))
    reason = unfit_gpu_node_reason(shape, "the deploy region")
    if reason:
        errors.append(problem("instance_type", f"{args.instance_type!r} cannot be a GPU node: {reason}"))
    if args.capacity_type not in EKS_CAPACITY_TYPES:
        errors.append(
            problem("capacity_type", f"{args.capacity_type!r}: allowed is one of {', '.join(EKS_CAPACITY_TYPES)}")
        )
    elif args.capacity_type == "capacity-block" and not args.capacity_reservation_id:
        errors.append(
            problem("capacity_reservation_id", "a Capacity Block is launched into through its reservation id")
        )
    return errors


class GpuNodes(pulumi.ComponentResource):
    node_group: eks.ManagedNodeGroup
    node_group_name: str
    shape: InstanceShape  # EC2's facts about args.instance_type

    def __init__(
        self, name: str, args: GpuNodesArgs, cluster: Cluster, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        shape = describe_instance_type(args.instance_type)
        raise_input_errors("GpuNodes", gpu_nodes_args_errors(args, shape))
        assert shape is not None  # an unknown type is one of the errors above
        super().__init__("ray-llm-eks:nodes:GpuNodes", name, None, opts)
        children = Children(self, name)
        self.shape = shape

        launch_template = _gpu_launch_template(children, args, cluster, shape)
        capacity_block = args.capacity_type == "capacity-block"
        self.node_group_name = args.node_group_name
        self.node_group = _managed_node_group(
            children,
            args.tags,
            cluster,
            role="gpu",
            node_group_name=args.node_group_name,
            instance_type=None if capacity_block else args.instance_type,
            count=args.count,
            subnet_ids=[args.subnet_id],
            ami_type=GPU_AMI_TYPE,
            capacity_type=args.capacity_type,
            max_count=args.max_count,
            min_count=args.min_count,
            update_strategy=GPU_UPDATE_STRATEGY,
            labels={**GPU_NODE_LABELS, **accelerator_label(shape.gpu_name)},
            taints=[
                aws.eks.NodeGroupTaintArgs(
                    key=GPU_TAINT["key"], value=GPU_TAINT["value"], effect=EKS_TAINT_EFFECTS[GPU_TAINT["effect"]]
                )
            ],
            launch_template=launch_template,
        )
        self.register_outputs({"nodeGroupName": args.node_group_name})


def _gpu_launch_template(
    children: Children, args: GpuNodesArgs, cluster: Cluster, shape: InstanceShape
) -> aws.eks.NodeGroupLaunchTemplateArgs:
    """The GPU nodes' launch template: an EFA interface per EFA card in the EFA security group, the cluster placement
    group or the reservation, IMDSv2 and the root volume."""
    # EFA requires a group that admits all traffic from itself, both ways.
    efa_security_group = aws.ec2.SecurityGroup(
        children.name("efa"),
        description="EFA: all traffic between the EFA interfaces of the GPU nodes",
        vpc_id=args.vpc_id,
        ingress=[aws.ec2.SecurityGroupIngressArgs(protocol="-1", from_port=0, to_port=0, self=True)],
        egress=[aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0, self=True)],
        tags={**args.tags, "Name": f"{cluster.cluster_name}-efa"},
        opts=children.opts(),
    )
    # A reservation's placement (an ODCR's or a Capacity Block's) is fixed when it is made, so only plain On-Demand
    # nodes get a placement group of the stack's own (docs/scaling.md#reserved-capacity).
    placement_group = (
        aws.ec2.PlacementGroup(children.name("gpu-placement"), strategy="cluster", tags=args.tags, opts=children.opts())
        if args.capacity_type == "on-demand" and not args.capacity_reservation_id
        else None
    )
    capacity_block = args.capacity_type == "capacity-block"
    capacity_reservation = (
        aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
            capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                capacity_reservation_id=args.capacity_reservation_id
            )
        )
        if args.capacity_reservation_id
        else None
    )
    return _launch_template(
        children,
        "gpu",
        args.tags,
        description=f"{args.node_group_name}: EFA, {'cluster placement' if placement_group else args.capacity_type}"
        f", IMDSv2, {args.root_volume_gib} GiB root",
        root_volume_gib=args.root_volume_gib,
        root_volume_throughput=GPU_ROOT_THROUGHPUT_MIBPS,
        root_volume_iops=GPU_ROOT_IOPS,
        user_data=node_user_data(GPU_NODE_DIRECTORY_COMMANDS),
        network_interfaces=efa_network_interfaces(
            shape.efa_interfaces, [efa_security_group.id, cluster.cluster_security_group_id]
        ),
        placement=aws.ec2.LaunchTemplatePlacementArgs(group_name=placement_group.name) if placement_group else None,
        capacity_reservation_specification=capacity_reservation,
        # A Capacity Block is used through its own market type, besides its reservation id, and EKS takes its
        # instance type only from the launch template.
        instance_market_options=aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
        if capacity_block
        else None,
        instance_type=args.instance_type if capacity_block else None,
    )
