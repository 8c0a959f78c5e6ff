"""The settings of the AWS provider, the network, the EKS cluster and the GPU nodes: rows of the table (`table.py`)."""

from __future__ import annotations

from collections.abc import Mapping

from infra.settings.changes import (
    ADDON_ROLLED,
    AWS_IN_PLACE,
    CHART_ROLLED,
    CONTROL_PLANE_UPGRADED,
    GPU_NODES_REPLACED,
    GPU_NODES_ROLLED,
    NOTHING_RUNNING,
    RAYSERVICE_REPLACED,
    STACK_REBUILT,
    SYSTEM_NODES_REPLACED,
    SYSTEM_NODES_ROLLED,
    SYSTEM_NODES_SCALED,
)
from infra.settings.kinds import (
    ADDON_VERSION_PATTERN,
    API_ALLOW_LIST_COMMAND,
    AZ_PATTERN,
    BOOLEAN,
    CAPACITY_RESERVATION_PATTERN,
    CHART_VERSION_PATTERN,
    EKS_MIN_AZS,
    EKS_NAME_PATTERN,
    INSTANCE_TYPE_PATTERN,
    INTERNET_CIDR_LIST,
    MAX_AZS,
    MAX_NODES_PER_NODE_GROUP,
    MAX_VPC_CIDR_SETTING_PREFIX,
    MIN_VPC_PREFIX,
    NODEGROUP_NAME_PATTERN,
    Choice,
    Integer,
    ProviderValue,
    Setting,
    StringList,
    Text,
    iam_principal,
    internet_client_cidr,
)
from policy.ray_llm_policies.aws_rules import MAX_GP3_GIB

NODE_GROUP_QUOTA = f" (EKS allows {MAX_NODES_PER_NODE_GROUP} nodes per managed node group)"


def addon_version(key: str, addon: str, example: str, pin_rule: str = "") -> Setting:
    """The row of an EKS add-on's build: the default for kubernetesVersion, or a pin."""
    return Setting(
        key,
        Text(ADDON_VERSION_PATTERN, f"an EKS add-on version such as {example}", optional=True),
        "",
        f"Build of the {addon} EKS add-on; empty takes the default build EKS publishes for kubernetesVersion "
        f"(looked up at deploy time), a value such as {example} pins it{pin_rule}.",
        effects=(ADDON_ROLLED,),
    )


INFRASTRUCTURE: Mapping[str, tuple[Setting, ...]] = {
    "provider": (
        Setting(
            "aws:region",
            ProviderValue(),
            "sa-east-1",
            "AWS region of every resource (the AWS provider's own key); one of the supported regions, see Regions and "
            "partitions.",
            feeds="region",
            effects=(STACK_REBUILT,),
        ),
    ),
    "network": (
        Setting(
            "vpcCidr",
            Text(),
            "10.0.0.0/16",
            f"IPv4 network of the VPC (/{MIN_VPC_PREFIX} to /{MAX_VPC_CIDR_SETTING_PREFIX}, RFC 1918 or other "
            "unicast); private and public subnets are carved from it per AZ.",
            effects=(STACK_REBUILT,),
        ),
        Setting(
            "maxAzs",
            Integer(
                EKS_MIN_AZS, f" (EKS needs two Availability Zones; vpcCidr has room for {MAX_AZS})", maximum=MAX_AZS
            ),
            3,
            "Most Availability Zones to span (2 to 7; EKS needs 2); AZs offering gpuNodeType are used first.",
            effects=(STACK_REBUILT,),
            change_note=(
                "adds or removes subnets under the cluster; whether EKS takes the new subnets in place was not "
                "checked, so plan it as a rebuild"
            ),
        ),
        Setting(
            "natGatewayPerAz",
            BOOLEAN,
            False,
            "One NAT gateway per AZ (production) instead of a single shared one (cheaper, one AZ of failure).",
            effects=(AWS_IN_PLACE,),
        ),
    ),
    "cluster": (
        Setting(
            "clusterName",
            Text(EKS_NAME_PATTERN, "1-100 letters, digits, '-' or '_'"),
            "ray-llm-multinode",
            "EKS cluster name.",
            effects=(STACK_REBUILT,),
        ),
        Setting(
            "kubernetesVersion",
            Text(),
            "1.35",
            "Kubernetes version of the EKS control plane and node groups (MAJOR.MINOR).",
            effects=(CONTROL_PLANE_UPGRADED, SYSTEM_NODES_ROLLED, GPU_NODES_ROLLED),
            change_note="EKS upgrades one minor version at a time; a downgrade is refused by EKS",
        ),
        Setting(
            "apiPublicAccessCidrs",
            StringList(internet_client_cidr, INTERNET_CIDR_LIST),
            [],
            "Required: public CIDRs allowed to reach the Kubernetes API endpoint (yours, CI's); set with "
            f"`{API_ALLOW_LIST_COMMAND}`.",
            effects=(AWS_IN_PLACE,),
        ),
        Setting(
            "adminPrincipalArns",
            StringList(iam_principal, "IAM role or user ARNs"),
            [],
            "IAM role/user ARNs given cluster-admin through EKS access entries, each once, besides the identity that "
            "creates the cluster: EKS already makes that one admin, so listing it is refused while the cluster is "
            "created (a second access entry would fail).",
            effects=(AWS_IN_PLACE,),
        ),
        Setting(
            "controlPlaneLogging",
            BOOLEAN,
            True,
            "Send all EKS control-plane log types to CloudWatch.",
            effects=(AWS_IN_PLACE,),
        ),
        Setting(
            "secretsEncryption",
            BOOLEAN,
            True,
            "Encrypt Kubernetes secrets with a customer-managed KMS key.",
            effects=(STACK_REBUILT,),
            change_note="EKS can add envelope encryption to a cluster but never remove it",
        ),
        addon_version("vpcCniVersion", "vpc-cni", "v1.21.1-eksbuild.1"),
        addon_version("corednsVersion", "coredns", "v1.13.2-eksbuild.1"),
        addon_version(
            "kubeProxyVersion",
            "kube-proxy",
            "v1.35.0-eksbuild.2",
            " (a pin's MAJOR.MINOR must equal kubernetesVersion)",
        ),
        Setting(
            "systemNodeType",
            Text(INSTANCE_TYPE_PATTERN, "an EC2 instance type such as m7i.xlarge"),
            "m7i.xlarge",
            "Instance type of the CPU system nodes (system pods, KubeRay operator, Ray head).",
            effects=(SYSTEM_NODES_REPLACED,),
        ),
        Setting(
            "systemNodeCount",
            Integer(1, NODE_GROUP_QUOTA, maximum=MAX_NODES_PER_NODE_GROUP),
            1,
            "Number of system nodes (1 to 450).",
            effects=(SYSTEM_NODES_SCALED,),
        ),
    ),
    "GPU nodes": (
        Setting(
            "gpuNodeType",
            Text(INSTANCE_TYPE_PATTERN, "an EC2 instance type such as g6.8xlarge"),
            "g6.8xlarge",
            "EFA-capable GPU instance type of the worker nodes (smallest EFA-capable g6 by default).",
            effects=(GPU_NODES_REPLACED, RAYSERVICE_REPLACED),
        ),
        Setting(
            "gpuNodegroupName",
            Text(NODEGROUP_NAME_PATTERN, "1-63 letters, digits, '-' or '_'"),
            "gpu-workers",
            "Name of the GPU managed node group.",
            effects=(GPU_NODES_REPLACED,),
        ),
        Setting(
            "gpuAz",
            Text(AZ_PATTERN, "an Availability Zone name", optional=True),
            "",
            "Availability Zone of the GPU node group; empty picks the first AZ that offers gpuNodeType.",
            effects=(GPU_NODES_REPLACED,),
        ),
        Setting(
            "gpuRootVolumeGiB",
            Integer(
                50,
                f" GiB (the DLC image and model weights land there; a gp3 volume holds at most {MAX_GP3_GIB} GiB)",
                maximum=MAX_GP3_GIB,
            ),
            200,
            "Root disk (gp3) of each GPU node in GiB, 50 to 16384 (the DLC image and model weights land there).",
            feeds="gpu_root_volume_gib",
            effects=(GPU_NODES_ROLLED,),
        ),
        Setting(
            "capacityReservationId",
            Text(CAPACITY_RESERVATION_PATTERN, "a capacity reservation id such as cr-0123456789abcdef0", optional=True),
            "",
            "Optional capacity reservation (cr-...) the GPU nodes launch into, an On-Demand Capacity Reservation or, "
            "with gpuCapacityType capacity-block, the Capacity Block.",
            effects=(GPU_NODES_REPLACED,),
        ),
        Setting(
            "gpuCapacityType",
            Choice(("on-demand", "capacity-block")),
            "on-demand",
            "How the GPU nodes are bought: on-demand (optionally into capacityReservationId) or capacity-block "
            "(Capacity Blocks for ML: needs capacityReservationId and gpuAz).",
            effects=(GPU_NODES_REPLACED,),
        ),
        Setting(
            "quotaPreflight",
            BOOLEAN,
            True,
            "Before anything is created, check that the account's On-Demand vCPU quota for the GPU family (Service "
            "Quotas) holds the GPU nodes; false skips it.",
            effects=(NOTHING_RUNNING,),
        ),
        Setting(
            "nvidiaDevicePluginVersion",
            Text(CHART_VERSION_PATTERN, "a version such as 1.4.0"),
            "0.20.0",
            "Version of the nvidia-device-plugin Helm chart.",
            effects=(CHART_ROLLED,),
        ),
        Setting(
            "efaDevicePluginVersion",
            Text(CHART_VERSION_PATTERN, "a version such as v0.5.30"),
            "v0.5.30",
            "Version of the aws-efa-k8s-device-plugin Helm chart.",
            effects=(CHART_ROLLED,),
        ),
    ),
}
