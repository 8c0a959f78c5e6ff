"""Cluster Autoscaler: adds a GPU node when KubeRay's autoscaler asks for a Ray worker pod that fits nowhere.

EKS managed node groups do not scale themselves; the autoscaler finds the group by EKS's auto-discovery tags and acts
through an IRSA role limited to this cluster's groups (docs/security.md#the-cluster-autoscalers-scope;
docs/scaling.md#which-autoscaler-adds-gpu-nodes-the-cluster-autoscaler says why not Karpenter)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from infra.cluster.eks import Cluster
from infra.cluster.helm import Chart, pinned_release
from infra.cluster.irsa import service_account_role
from infra.components import Children
from infra.kube.scheduling import SYSTEM_NODE_SELECTOR

CLUSTER_AUTOSCALER_REPO = "https://kubernetes.github.io/autoscaler"
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "cluster-autoscaler"
# "Full Cluster Autoscaler Features Policy (Recommended)" for ASG auto-discovery, from the Cluster
# Autoscaler's AWS guide (kubernetes/autoscaler, cluster-autoscaler/cloudprovider/aws/README.md).
DESCRIBE_ACTIONS = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
    "eks:DescribeNodegroup",
)
SCALING_ACTIONS = ("autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup")
# The scaling actions reach only the Auto Scaling groups that carry this cluster's auto-discovery tag key, which EKS
# puts on every managed node group's (docs/security.md#the-cluster-autoscalers-scope).
CLUSTER_TAG_PREFIX = "k8s.io/cluster-autoscaler/"


@dataclass(frozen=True)
class ClusterAutoscalerArgs:
    """Which Cluster Autoscaler, and the cluster whose node groups it scales."""

    version: str  # of the cluster-autoscaler chart, e.g. "9.59.0" (its app minor should match the cluster's)
    cluster_name: str  # the EKS cluster: it scales the node groups tagged k8s.io/cluster-autoscaler/<name>
    region: str  # the cluster's region, where it calls the Auto Scaling API
    tags: Mapping[str, str] = field(default_factory=dict)  # on its IAM role


def autoscaler_policy(cluster_name: str) -> dict[str, Any]:
    """Describe anything; scale and terminate in this cluster's Auto Scaling groups only."""
    this_cluster = {"Null": {f"aws:ResourceTag/{CLUSTER_TAG_PREFIX}{cluster_name}": "false"}}
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": list(DESCRIBE_ACTIONS), "Resource": ["*"]},
            {"Effect": "Allow", "Action": list(SCALING_ACTIONS), "Resource": ["*"], "Condition": this_cluster},
        ],
    }


def cluster_autoscaler_values(args: ClusterAutoscalerArgs, role_arn: pulumi.Input[str]) -> dict[str, Any]:
    return {
        "cloudProvider": "aws",
        "awsRegion": args.region,
        "autoDiscovery": {"clusterName": args.cluster_name},
        "rbac": {"serviceAccount": {"name": SERVICE_ACCOUNT, "annotations": {"eks.amazonaws.com/role-arn": role_arn}}},
        "nodeSelector": dict(SYSTEM_NODE_SELECTOR),
    }


class ClusterAutoscaler(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        args: ClusterAutoscalerArgs,
        cluster: Cluster,
        depends_on: list[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("ray-llm-eks:nodes:ClusterAutoscaler", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        role = service_account_role(f"{name}-role", cluster, NAMESPACE, SERVICE_ACCOUNT, args.tags, child)
        aws.iam.RolePolicy(
            f"{name}-policy", role=role.id, policy=json.dumps(autoscaler_policy(args.cluster_name)), opts=child
        )
        self.release = pinned_release(
            Children(self, name),
            "cluster-autoscaler",
            Chart("cluster-autoscaler", CLUSTER_AUTOSCALER_REPO, args.version),
            NAMESPACE,
            cluster_autoscaler_values(args, role.arn),
            cluster.provider,
            depends_on,
        )
        self.register_outputs({})
