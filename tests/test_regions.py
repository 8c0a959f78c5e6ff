"""Regions and partitions: every region gets its own registries and ARNs, or is rejected up front."""

from __future__ import annotations

import pytest

from infra.nodes.device_plugins import efa_plugin_values
from infra.settings.regions import (
    DLC_IMAGE_ACCOUNTS,
    EKS_ADDON_IMAGE_ACCOUNTS,
    SUPPORTED_REGIONS,
    Partition,
)
from tests.conftest import rejection
from tools import offline_aws
from tools.offline import load_stack_config

ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"

# Regions whose accounts differ from the usual ones, among them those the first table missed.
REGION_ACCOUNTS = {
    # region: (EKS add-on registry account, Deep Learning Containers account)
    "sa-east-1": ("602401143452", "763104351884"),
    "ap-south-2": ("900889452093", "772153158452"),
    "ap-east-2": ("533267051163", "975050140332"),
    "ap-southeast-4": ("491585149902", "457447274322"),
    "ap-southeast-6": ("333609536671", "633930458069"),
    "ap-southeast-7": ("121268973566", "590183813437"),
    "ca-west-1": ("761377655185", "204538143572"),
    "eu-central-2": ("900612956339", "380420809688"),
    "eu-south-2": ("455263428931", "503227376785"),
    "mx-central-1": ("730335286997", "637423239942"),
    "af-south-1": ("877085696533", "626614931356"),
}


@pytest.mark.parametrize("region", sorted(REGION_ACCOUNTS))
def test_images_come_from_the_regions_own_published_registries(region):
    """EFA device plugin: the EKS add-on registry of the region
    (https://docs.aws.amazon.com/eks/latest/userguide/add-ons-images.html, awsdocs/amazon-eks-user-guide
    `latest/ug/workloads/add-ons-images.adoc`); the chart's own default is us-west-2's
    (`vendor/aws-efa-k8s-device-plugin-v0.5.30/values.yaml`). Ray Serve LLM image: the Deep Learning
    Containers registry of the region (aws/deep-learning-containers
    `docs/reference/region_availability.md`), which is not 763104351884 everywhere.
    """
    eks_account, dlc_account = REGION_ACCOUNTS[region]
    cfg = load_stack_config({"aws:region": region})
    assert efa_plugin_values(region, "g6.8xlarge")["image"]["repository"] == (
        f"{eks_account}.dkr.ecr.{region}.amazonaws.com/eks/aws-efa-k8s-device-plugin"
    )
    assert cfg.dlc_image == f"{dlc_account}.dkr.ecr.{region}.amazonaws.com/ray:serve-llm-cuda-v1.0"


def test_supported_regions_are_those_with_both_registries():
    """The two AWS-published tables: EKS add-on registries
    (https://docs.aws.amazon.com/eks/latest/userguide/add-ons-images.html) and Deep Learning Containers
    registries (aws/deep-learning-containers `docs/reference/region_availability.md`)."""
    assert set(SUPPORTED_REGIONS) == EKS_ADDON_IMAGE_ACCOUNTS.keys() & DLC_IMAGE_ACCOUNTS.keys()
    assert {"sa-east-1", "us-east-1", "ap-south-2", "mx-central-1"} <= set(SUPPORTED_REGIONS)


def test_unknown_region_is_rejected_before_any_resource_naming_the_supported_ones():
    error = rejection({"aws:region": "xx-fake-1"})
    (problem,) = error.problems
    assert problem.startswith("aws:region='xx-fake-1' is invalid: allowed is an AWS region name this stack supports")
    assert ", ".join(SUPPORTED_REGIONS) in problem


@pytest.mark.parametrize(
    ("region", "missing"), [("ap-southeast-5", "EKS add-on (EFA device plugin)"), ("me-west-1", "EKS add-on")]
)
def test_region_missing_from_one_table_is_rejected_naming_the_missing_registry(region, missing):
    """A region absent from one of the published tables: EKS add-on registries
    (https://docs.aws.amazon.com/eks/latest/userguide/add-ons-images.html) or Deep Learning Containers
    registries (aws/deep-learning-containers `docs/reference/region_availability.md`)."""
    (problem,) = rejection({"aws:region": region}).problems
    assert f"has no published {missing}" in problem
    assert "sa-east-1" in problem


@pytest.mark.parametrize(
    ("region", "partition"),
    [
        ("cn-north-1", "aws-cn (China)"),
        ("cn-northwest-1", "aws-cn (China)"),
        ("us-gov-west-1", "aws-us-gov (GovCloud)"),
        ("us-gov-east-1", "aws-us-gov (GovCloud)"),
    ],
)
def test_china_and_govcloud_are_rejected_naming_their_partition(region, partition):
    """China's registries live under amazonaws.com.cn and its ARNs under `arn:aws-cn`; GovCloud has
    no Deep Learning Containers registry (aws/deep-learning-containers
    `docs/reference/region_availability.md`) and uses `arn:aws-us-gov`
    (https://docs.aws.amazon.com/govcloud-us/latest/UserGuide/using-govcloud-arns.html). The stack
    does not verify those partitions, so it refuses them instead of deploying half-right ARNs.
    """
    (problem,) = rejection({"aws:region": region}).problems
    assert f"is in partition {partition}, which this stack does not support" in problem
    assert "us-east-1" in problem


def test_arns_and_service_principals_follow_the_partition():
    """ARN formats: `arn:${Partition}:iam::aws:policy/<name>` for AWS managed policies and
    `arn:${Partition}:eks::aws:cluster-access-policy/<name>` for EKS access policies
    (https://docs.aws.amazon.com/eks/latest/userguide/access-policy-permissions.html); the EC2
    service principal is `ec2.${dnsSuffix}`, as terraform-aws-modules/terraform-aws-eks
    `modules/eks-managed-node-group/main.tf` builds it from `data.aws_partition`.
    """
    gov = Partition(name="aws-us-gov", dns_suffix="amazonaws.com")
    assert gov.managed_policy_arn("AmazonEKS_CNI_Policy") == "arn:aws-us-gov:iam::aws:policy/AmazonEKS_CNI_Policy"
    assert gov.access_policy_arn("AmazonEKSClusterAdminPolicy") == (
        "arn:aws-us-gov:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    )
    assert Partition(name="aws-cn", dns_suffix="amazonaws.com.cn").service_principal("ec2") == "ec2.amazonaws.com.cn"


def test_deployed_arns_use_the_partition_the_provider_reports(prod):
    """The node role carries AmazonEKSWorkerNodePolicy, ECR pull permissions and AmazonEKS_CNI_Policy
    (https://docs.aws.amazon.com/eks/latest/userguide/create-node-role.html); AmazonSSMManagedInstanceCore
    is the stack's own addition (infra/cluster/eks.py NODE_MANAGED_POLICIES). Each ARN names the partition
    (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html)."""
    policies = sorted(r.inputs["policyArn"] for r in prod.of_type(ATTACHMENT))
    assert policies == [
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
    ]
    (entry,) = prod.get("eks:index:Cluster", "cluster-eks").inputs["accessEntries"].values()
    assert entry["accessPolicies"]["cluster-admin"]["policyArn"] == (
        "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    )


def test_a_partition_other_than_the_registries_assume_stops_the_program(monkeypatch):
    """`aws.get_partition` (pulumi-aws `aws:index/getPartition:getPartition`) is the deploy-time
    judge: if the provider reports another partition or DNS suffix than the registries and ARNs were
    built for, nothing is declared."""
    answer = offline_aws.AwsMocks.call

    def china(self, args):
        if args.token == "aws:index/getPartition:getPartition":
            return {
                "id": "aws-cn",
                "partition": "aws-cn",
                "dnsSuffix": "amazonaws.com.cn",
                "reverseDnsPrefix": "cn.com.amazonaws",
            }
        return answer(self, args)

    monkeypatch.setattr(offline_aws.AwsMocks, "call", china)
    (problem,) = rejection({}).problems
    assert "resolves to partition 'aws-cn' (DNS suffix 'amazonaws.com.cn')" in problem


def test_admin_principal_of_another_partition_is_rejected():
    (problem,) = rejection({"adminPrincipalArns": ["arn:aws-cn:iam::123456789012:role/admins"]}).problems
    assert problem.startswith("adminPrincipalArns[0]='arn:aws-cn:iam::123456789012:role/admins' is invalid")
    assert "allowed is an arn:aws:iam:: ARN" in problem
