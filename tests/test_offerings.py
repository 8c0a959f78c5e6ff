"""What EKS and EC2 offer, asked before any resource: Kubernetes version, add-on builds, system node type."""

from __future__ import annotations

import pytest

from infra.preflight import offerings
from tests.conftest import rejection
from tools.offline import run_stack
from tools.offline_aws import EKS_CLUSTER_VERSIONS

OFFERED = ", ".join(sorted(version for version, *_ in EKS_CLUSTER_VERSIONS))

NOT_OFFERED = {
    "kubernetes-from-the-future": (
        {"kubernetesVersion": "1.99"},
        ["kubernetesVersion='1.99' is not offered by EKS in sa-east-1", f"allowed is one of {OFFERED}"],
    ),
    "kubernetes-past-extended-support": (
        {"kubernetesVersion": "1.31"},
        ["kubernetesVersion='1.31' is not offered by EKS in sa-east-1", f"allowed is one of {OFFERED}"],
    ),
    "system-node-type-that-does-not-exist": (
        {"systemNodeType": "m7i.huge"},
        ["systemNodeType='m7i.huge' is not an EC2 instance type offered in sa-east-1", "allowed is a type the region"],
    ),
}


@pytest.mark.parametrize(("overrides", "expected"), NOT_OFFERED.values(), ids=NOT_OFFERED)
def test_what_the_region_does_not_offer_fails_the_preview_before_any_resource(overrides, expected):
    """EKS creates clusters only on versions in standard or extended support
    (https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html), answered by
    DescribeClusterVersions; DescribeInstanceTypeOfferings with location type `region` lists the types a
    region has (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypeOfferings.html)."""
    message = str(rejection(overrides, preview=True))
    for fragment in expected:
        assert fragment in message


def test_every_version_eks_offers_evaluates():
    for version, *_ in EKS_CLUSTER_VERSIONS:
        cluster = run_stack({"kubernetesVersion": version}).get("eks:index:Cluster", "cluster-eks")
        assert cluster.inputs["kubeProxyAddonOptions"]["version"].startswith(f"v{version}.")


def test_an_unpinned_add_on_asks_eks_for_its_default_build(monkeypatch):
    """pulumi-aws's getAddonVersion is terraform-provider-aws's `aws_eks_addon_version` data source
    (internal/service/eks/addon_version_data_source.go, findAddonVersionByTwoPartKey): without
    `most_recent` it returns the build whose compatibility for the Kubernetes version has DefaultVersion,
    the one EKS installs on a new cluster; with it, the newest listed. The lookup must leave it unset."""
    asked = []

    def get_addon_version(**kwargs):
        asked.append(kwargs)
        return type("GetAddonVersionResult", (), {"version": "v1.0.0-eksbuild.1"})

    monkeypatch.setattr(offerings.aws.eks, "get_addon_version", get_addon_version)
    assert offerings.addon_version("vpc-cni", None, "1.35") == "v1.0.0-eksbuild.1"
    assert asked == [{"addon_name": "vpc-cni", "kubernetes_version": "1.35"}]
