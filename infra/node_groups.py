"""Managed node groups: CPU system nodes, and the EFA-enabled GPU nodes in one AZ.

The GPU group uses a launch template of our own rather than pulumi-eks's `enableEfaSupport`:
that option cannot add an On-Demand Capacity Reservation, and under test mocks its launch template,
placement group and EFA interfaces would be invisible. Ours declares them as plain resources, with
IMDSv2 required and the root disk sized for the DLC image and model weights.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks

from infra.cluster import Cluster
from infra.instance_types import InstanceShape, instance_shape
from infra.network import Network
from infra.scheduling import (
    GPU_NODE_LABELS,
    GPU_TAINT,
    SYSTEM_NODE_LABELS,
    SYSTEM_NODEGROUP_NAME,
    accelerator_label,
)

SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"
GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA"
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


# How EKS replaces nodes on an AMI, launch template or Kubernetes version update (NodegroupUpdateConfig,
# https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupUpdateConfig.html): DEFAULT "launches the new
# instances first, before terminating the old instances"; MINIMAL "terminates the old instances before launching
# the new instances", for groups "constrained to resources or costs (for example, with hardware accelerators such
# as GPUs)". The GPU group takes MINIMAL: a DEFAULT update first adds nodes beyond the group (up to two per AZ,
# managed-node-update-behavior), which a GPU quota, a capacity reservation or a full placement group cannot give,
# and the update fails half-way. One node at a time.
SYSTEM_UPDATE_STRATEGY = "DEFAULT"
GPU_UPDATE_STRATEGY = "MINIMAL"
MAX_UNAVAILABLE_NODES = 1


def node_group_options(update_strategy: str) -> Callable[[pulumi.ResourceTransformArgs], Any]:
    """A transform for pulumi-eks's inner `aws:eks/nodeGroup:NodeGroup`, which its ManagedNodeGroup has no input for:
    delete before replace, and the group's update behaviour.

    EKS node group names are unique in a cluster and ours are fixed, so a replacement (new instance type, subnets,
    launch template) must delete the old group before creating the new one. The props of a child registered by
    pulumi-eks reach the transform under their wire (camelCase) names (pulumi `runtime/_callbacks.py`
    deserializes the request's properties as they are)."""

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
    name: str,
    tags: Mapping[str, str],
    cluster: Cluster,
    parent: pulumi.Resource,
    *,
    node_group_name: str,
    instance_type: str | None,
    count: int,
    subnet_ids: list[pulumi.Output[str]],
    egress: list[pulumi.Resource],
    ami_type: str,
    labels: dict[str, str],
    capacity_type: str = "on-demand",
    max_count: int | None = None,
    update_strategy: str = SYSTEM_UPDATE_STRATEGY,
    **extra: Any,
) -> eks.ManagedNodeGroup:
    """A managed node group in private subnets on the cluster's Kubernetes version, created once they have
    egress: fixed (min = max = desired), or from `count` up to `max_count` with the desired size left to the
    Cluster Autoscaler. `instance_type` None leaves the type to the launch template."""
    most = max_count or count
    return eks.ManagedNodeGroup(
        name,
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
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(min_size=count, max_size=most, desired_size=count),
        # The Cluster Autoscaler moves the desired size; a later `pulumi up` must not reset it.
        ignore_scaling_changes=most > count,
        labels=labels,
        tags=tags,
        # The transform reaches the aws:eks/nodeGroup:NodeGroup that pulumi-eks creates inside.
        opts=pulumi.ResourceOptions(parent=parent, depends_on=egress, transforms=[node_group_options(update_strategy)]),
        **extra,
    )


# The GPU node pulls the DLC image (tens of GB) before the engines can start. nodeadm's FastImagePull feature
# gate makes containerd pull and unpack layers in parallel through the SOCI snapshotter's parallel pull mode
# (awslabs/amazon-eks-ami nodeadm/internal/containerd/config.go UseSOCISnapshotter: on with the gate, for nodes of
# at least 4 vCPUs and 7 GiB; snapshotter/soci-snapshotter.config.toml: 16 MB chunks, 20 downloads and 12
# unpacks per image). Its guide asks for at least 600 MiB/s of root-volume throughput, up to 1000 MiB/s and 16k
# IOPS for more (nodeadm/doc/examples.md, "Enabling fast image pull"); gp3 gives 125 MiB/s and 3000 IOPS unless
# set, and at most 0.25 MiB/s per provisioned IOPS (https://docs.aws.amazon.com/ebs/latest/userguide/
# general-purpose.html#gp3-ebs-volume-type), so 1000 MiB/s needs 4000 IOPS.
GPU_ROOT_THROUGHPUT_MIBPS = 1000
GPU_ROOT_IOPS = 4000
# Made before the kubelet places a Ray worker there, writable whatever user the image runs as: the hostPath of
# vLLM's compile cache (infra/rayservice.py VLLM_CACHE_HOST_PATH).
GPU_NODE_DIRECTORIES = ("/var/lib/ray-llm-eks/vllm-cache",)
USER_DATA_BOUNDARY = "==RAY-LLM-EKS=="


def gpu_node_user_data() -> str:
    """The GPU launch template's user data: EKS merges a managed node group's own NodeConfig with a launch
    template's, which must be MIME multi-part (https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html,
    "Amazon EKS AMIs": nodeadm reads every application/node.eks.aws part; cloud-init runs the shell script part)."""
    node_config = "\n".join(
        [
            "---",
            "apiVersion: node.eks.aws/v1alpha1",
            "kind: NodeConfig",
            "spec:",
            "  featureGates:",
            "    FastImagePull: true",
        ]
    )
    script = "\n".join(
        ["#!/bin/bash", "set -euo pipefail", *(f"install -d -m 1777 {path}" for path in GPU_NODE_DIRECTORIES)]
    )
    parts = [
        f"--{USER_DATA_BOUNDARY}\nContent-Type: application/node.eks.aws\n\n{node_config}\n",
        f'--{USER_DATA_BOUNDARY}\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n{script}\n',
    ]
    header = f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{USER_DATA_BOUNDARY}"\n\n'
    return header + "\n".join(parts) + f"\n--{USER_DATA_BOUNDARY}--\n"


def _launch_template(
    name: str,
    tags: Mapping[str, str],
    parent: pulumi.Resource,
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
        name,
        description=description,
        metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
            http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=2
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
        opts=pulumi.ResourceOptions(parent=parent),
        **extra,
    )
    return aws.eks.NodeGroupLaunchTemplateArgs(id=template.id, version=template.latest_version.apply(str))


@dataclass(frozen=True)
class SystemNodesArgs:
    """The CPU nodes of the system pods, the KubeRay operator and the Ray head, and the CoreDNS add-on they host."""

    instance_type: str
    count: int
    coredns_version: str
    tags: Mapping[str, str] = field(default_factory=dict)


class SystemNodes(pulumi.ComponentResource):
    node_group: eks.ManagedNodeGroup
    coredns: aws.eks.Addon

    def __init__(
        self,
        name: str,
        args: SystemNodesArgs,
        cluster: Cluster,
        network: Network,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("ray-llm-eks:nodes:SystemNodes", name, None, opts)
        self.node_group = _managed_node_group(
            "system",
            args.tags,
            cluster,
            self,
            node_group_name=SYSTEM_NODEGROUP_NAME,
            instance_type=args.instance_type,
            count=args.count,
            subnet_ids=list(network.private_subnet_ids.values()),
            egress=[resource for resources in network.private_egress.values() for resource in resources],
            ami_type=SYSTEM_AMI_TYPE,
            labels=SYSTEM_NODE_LABELS,
            # pulumi-eks's own template (made for `enable_imd_sv2`/`disk_size`) cannot encrypt the root volume.
            launch_template=_launch_template(
                "system",
                args.tags,
                self,
                description=f"{SYSTEM_NODEGROUP_NAME}: IMDSv2, {SYSTEM_ROOT_VOLUME_GIB} GiB encrypted gp3 root",
                root_volume_gib=SYSTEM_ROOT_VOLUME_GIB,
            ),
        )
        # CoreDNS is the core add-on that needs a node to become ACTIVE: created with the cluster,
        # before any node group, it would block every node group that waits for the cluster.
        self.coredns = aws.eks.Addon(
            "coredns",
            cluster_name=cluster.cluster_name,
            addon_name="coredns",
            addon_version=args.coredns_version,
            # Take over the self-managed CoreDNS that EKS bootstraps with the cluster.
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.node_group]),
        )
        self.register_outputs({})


def efa_network_interfaces(
    efa_interfaces: int, security_group_ids: list[pulumi.Input[str]]
) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
    """One EFA interface per EFA-capable network card.

    EC2 wants the primary (card 0, device 0) to be an EFA with ENA, and each further card's interface
    at device index 1; those are EFA-only, which take no IP address (no private addresses used up, no
    second route for the node's traffic), so only the primary carries the public-IP setting.
    """
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
    """The EFA-enabled GPU node group: one AZ, one EFA interface per EFA card, and a cluster placement group of
    its own when no reservation brings one (`uses_own_placement_group`)."""

    node_group_name: str
    instance_type: str
    count: int
    az: str  # one of the network's AZs that offers instance_type
    efa_interfaces: int
    root_volume_gib: int = 200
    capacity_reservation_id: str | None = None
    # "on-demand" (optionally into capacity_reservation_id) or "capacity-block" (the block's reservation id).
    capacity_type: str = "on-demand"
    # More nodes the Cluster Autoscaler may add, up to this many (None: a fixed `count`).
    max_count: int | None = None
    gpu_name: str = ""  # EC2's name of the GPU model (InstanceShape.gpu_name), e.g. "L4"
    tags: Mapping[str, str] = field(default_factory=dict)


def uses_own_placement_group(args: GpuNodesArgs) -> bool:
    """Plain On-Demand nodes only: a reservation (an ODCR or a Capacity Block) brings its own placement."""
    return args.capacity_type == "on-demand" and not args.capacity_reservation_id


class GpuNodes(pulumi.ComponentResource):
    node_group: eks.ManagedNodeGroup
    node_group_name: str

    def __init__(
        self,
        name: str,
        args: GpuNodesArgs,
        cluster: Cluster,
        network: Network,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("ray-llm-eks:nodes:GpuNodes", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        # EFA requires a group that admits all traffic from itself, both ways.
        efa_security_group = aws.ec2.SecurityGroup(
            "efa",
            description="EFA: all traffic between the GPU nodes' EFA interfaces",
            vpc_id=network.vpc_id,
            ingress=[aws.ec2.SecurityGroupIngressArgs(protocol="-1", from_port=0, to_port=0, self=True)],
            egress=[aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0, self=True)],
            tags={**args.tags, "Name": f"{cluster.cluster_name}-efa"},
            opts=child,
        )
        # A reservation's placement is fixed when it is made: one in a cluster placement group is used only by
        # launching into that group, one outside any is not used from a fresh group, and a Capacity Block is
        # already co-located. So the stack makes its own cluster placement group only for plain On-Demand nodes.
        placement_group = (
            aws.ec2.PlacementGroup("gpu-placement", strategy="cluster", tags=args.tags, opts=child)
            if uses_own_placement_group(args)
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
        launch_template = _launch_template(
            "gpu",
            args.tags,
            self,
            description=f"{args.node_group_name}: EFA, {'cluster placement' if placement_group else args.capacity_type}"
            f", IMDSv2, {args.root_volume_gib} GiB root",
            root_volume_gib=args.root_volume_gib,
            root_volume_throughput=GPU_ROOT_THROUGHPUT_MIBPS,
            root_volume_iops=GPU_ROOT_IOPS,
            user_data=base64.b64encode(gpu_node_user_data().encode()).decode(),
            network_interfaces=efa_network_interfaces(
                args.efa_interfaces, [efa_security_group.id, cluster.cluster_security_group_id]
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
        self.node_group_name = args.node_group_name
        self.node_group = _managed_node_group(
            "gpu",
            args.tags,
            cluster,
            self,
            node_group_name=args.node_group_name,
            instance_type=None if capacity_block else args.instance_type,
            count=args.count,
            subnet_ids=[network.private_subnet_ids[args.az]],
            egress=network.private_egress[args.az],
            ami_type=GPU_AMI_TYPE,
            capacity_type=args.capacity_type,
            max_count=args.max_count,
            update_strategy=GPU_UPDATE_STRATEGY,
            labels={**GPU_NODE_LABELS, **accelerator_label(args.gpu_name)},
            taints=[
                aws.eks.NodeGroupTaintArgs(
                    key=GPU_TAINT["key"], value=GPU_TAINT["value"], effect=EKS_TAINT_EFFECTS[GPU_TAINT["effect"]]
                )
            ],
            launch_template=launch_template,
        )
        self.register_outputs({"nodeGroupName": args.node_group_name})
