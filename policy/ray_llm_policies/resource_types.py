"""Type tokens of the resources the policies look at. pulumi-eks's `Cluster` and `ManagedNodeGroup` are seen with their
inputs under the test mocks and as their `aws:eks` children in a real preview, so every rule on them reads either
form (docs/policy.md#what-a-policy-can-and-cannot-see)."""

from __future__ import annotations

STACK = "pulumi:pulumi:Stack"

EKS_CLUSTER_COMPONENT = "eks:index:Cluster"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
MANAGED_NODE_GROUP_COMPONENT = "eks:index:ManagedNodeGroup"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
EKS_COMPONENTS = frozenset({EKS_CLUSTER_COMPONENT, MANAGED_NODE_GROUP_COMPONENT})
CLUSTERS = frozenset({EKS_CLUSTER_COMPONENT, EKS_CLUSTER})
NODE_GROUPS = frozenset({MANAGED_NODE_GROUP_COMPONENT, EKS_NODE_GROUP})

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
SUBNET = "aws:ec2/subnet:Subnet"
ELASTICACHE_REPLICATION_GROUP = "aws:elasticache/replicationGroup:ReplicationGroup"

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
RAY_SERVICE = "kubernetes:ray.io/v1:RayService"
KUBERNETES_SERVICE = "kubernetes:core/v1:Service"
KUBERNETES_SECRET = "kubernetes:core/v1:Secret"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
