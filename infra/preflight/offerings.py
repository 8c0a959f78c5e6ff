"""What EKS and EC2 offer in the region, asked before any resource is declared.

Three answers the config alone cannot give: whether EKS offers `kubernetesVersion`, which build of each
core add-on belongs to it, and whether the region has `systemNodeType` at all. A wrong value fails the
preview here, naming the key, instead of failing the cluster or the node group half-way through `up`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi_aws as aws

from infra.settings.stack_config import ConfigError, StackConfig

# DescribeClusterVersions statuses of the versions a new cluster can use: "You can create new Amazon EKS
# clusters on any version offered in standard or extended support"
# (https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html).
CREATABLE_STATUSES = frozenset({"STANDARD_SUPPORT", "EXTENDED_SUPPORT"})


@dataclass(frozen=True)
class AddonVersions:
    """The build of each core EKS add-on the cluster runs."""

    vpc_cni: str
    coredns: str
    kube_proxy: str


def offered_kubernetes_versions() -> list[str]:
    versions = aws.eks.get_cluster_versions(cluster_type="eks").cluster_versions
    return sorted(
        (v.cluster_version for v in versions if v.version_status in CREATABLE_STATUSES),
        key=lambda version: tuple(map(int, version.split("."))),
    )


def kubernetes_version_problem(cfg: StackConfig, offered: list[str]) -> str | None:
    if cfg.kubernetes_version in offered:
        return None
    return (
        f"kubernetesVersion={cfg.kubernetes_version!r} is not offered by EKS in {cfg.region}: "
        f"allowed is one of {', '.join(offered)} (standard or extended support)"
    )


def system_node_type_problem(cfg: StackConfig) -> str | None:
    offerings = aws.ec2.get_instance_type_offerings(
        location_type="region",
        filters=[aws.ec2.GetInstanceTypeOfferingsFilterArgs(name="instance-type", values=[cfg.system_node_type])],
    )
    if cfg.system_node_type in offerings.instance_types:
        return None
    return (
        f"systemNodeType={cfg.system_node_type!r} is not an EC2 instance type offered in {cfg.region}: "
        "allowed is a type the region offers, such as m7i.xlarge "
        f"(aws ec2 describe-instance-type-offerings --region {cfg.region} --location-type region)"
    )


def addon_version(addon_name: str, pinned: str | None, kubernetes_version: str) -> str:
    """The pinned build, or the one EKS marks default for the Kubernetes version: the one EKS installs on a new cluster,
    which does not move with every release (as terraform-aws-modules/terraform-aws-eks main.tf's
    `aws_eks_addon_version` with `most_recent` unset)."""
    if pinned:
        return pinned
    return aws.eks.get_addon_version(addon_name=addon_name, kubernetes_version=kubernetes_version).version


def check_offerings(cfg: StackConfig) -> AddonVersions:
    """The add-on builds for the cluster; raises ConfigError first if EKS or EC2 do not offer what is asked."""
    offered = offered_kubernetes_versions()
    problems = [kubernetes_version_problem(cfg, offered), system_node_type_problem(cfg)]
    found = [problem for problem in problems if problem]
    if found:
        raise ConfigError(found)
    return AddonVersions(
        vpc_cni=addon_version("vpc-cni", cfg.vpc_cni_version, cfg.kubernetes_version),
        coredns=addon_version("coredns", cfg.coredns_version, cfg.kubernetes_version),
        kube_proxy=addon_version("kube-proxy", cfg.kube_proxy_version, cfg.kubernetes_version),
    )
