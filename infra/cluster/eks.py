"""The EKS control plane, the node IAM role, and the Kubernetes provider every object goes through.

What eksctl did silently is explicit here: the OIDC provider, access entries, pinned core add-ons,
control-plane logging and KMS envelope encryption of Kubernetes secrets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s
from pulumi.errors import InputPropertyErrorDetails

from infra.components import Children, problem, raise_input_errors
from infra.settings.regions import Partition, partition_problems
from infra.settings.rules_network import api_allow_list_reason
from infra.settings.stack_config import ConfigError, StackConfig

CONTROL_PLANE_LOG_TYPES = ["api", "audit", "authenticator", "controllerManager", "scheduler"]
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
# AWS managed policies of the node role, by short name; their ARNs carry the deploy partition.
NODE_MANAGED_POLICIES = {
    "worker": "AmazonEKSWorkerNodePolicy",
    "cni": "AmazonEKS_CNI_Policy",
    "ecr": "AmazonEC2ContainerRegistryReadOnly",
    "ssm": "AmazonSSMManagedInstanceCore",
}


def discover_partition(cfg: StackConfig) -> Partition:
    """Asks the provider which partition it deploys into; raises ConfigError before any resource."""
    result = aws.get_partition()
    partition = Partition(name=result.partition, dns_suffix=result.dns_suffix)
    problems = partition_problems(cfg.region, cfg.admin_principal_arns, partition)
    if problems:
        raise ConfigError(problems)
    return partition


# An STS assumed-role session ARN: arn:<partition>:sts::<account>:assumed-role/<role name>/<session name>.
ASSUMED_ROLE_ARN = re.compile(
    r"arn:(?P<partition>[\w-]+):sts::(?P<account>\d{12}):assumed-role/(?P<name>[\w+=,.@-]+)/.+\Z"
)
# An IAM role or user ARN, its path (if any) before the name.
IAM_PRINCIPAL_ARN = re.compile(
    r"arn:(?P<partition>[\w-]+):iam::(?P<account>\d{12}):(?P<kind>role|user)/(?:[\w+=,.@/-]*/)?(?P<name>[\w+=,.@-]+)\Z"
)


def _principal(arn: str) -> tuple[str, str, str] | None:
    """(account, kind, lower-case name) of an IAM role or user, or of the role behind an STS session.

    The session ARN carries the role's name but not its path; IAM names are unique in an account whatever
    their path and not distinguished by case, so account and name alone say which role it is."""
    session = ASSUMED_ROLE_ARN.fullmatch(arn)
    if session:
        return session["account"], "role", session["name"].lower()
    principal = IAM_PRINCIPAL_ARN.fullmatch(arn)
    return (principal["account"], principal["kind"], principal["name"].lower()) if principal else None


def deploying_identity_problems(admin_arns: tuple[str, ...], caller_arn: str, creates_cluster: bool) -> list[str]:
    """`adminPrincipalArns` items EKS would refuse: the identity creating the cluster, and repeats.

    pulumi-eks creates the cluster with `bootstrapClusterCreatorAdminPermissions: true`, so EKS gives its
    creator an admin access entry; a second entry for the same principal fails with ResourceInUseException."""
    problems = []
    caller = _principal(caller_arn)
    seen: dict[tuple[str, str, str] | str, int] = {}
    for index, arn in enumerate(admin_arns):
        principal = _principal(arn) or arn
        if principal in seen:
            problems.append(
                f"adminPrincipalArns[{index}]={arn!r} is invalid: it repeats adminPrincipalArns[{seen[principal]}] "
                "(the same principal: IAM names are unique in an account, whatever their path or case); allowed is "
                "each principal once (EKS has one access entry per principal)"
            )
            continue
        seen[principal] = index
        if creates_cluster and caller is not None and principal == caller:
            problems.append(
                f"adminPrincipalArns[{index}]={arn!r} is invalid: it is the identity creating the cluster "
                f"({caller_arn}), which EKS already makes cluster admin (pulumi-eks sets "
                "bootstrapClusterCreatorAdminPermissions), so a second access entry would fail with "
                "ResourceInUseException; allowed is the other principals: remove it from the list"
            )
    return problems


def check_admin_principals(cfg: StackConfig) -> None:
    """Asks STS who deploys and EKS whether the cluster exists yet; raises ConfigError before any resource."""
    caller = aws.get_caller_identity()
    creates_cluster = cfg.cluster_name not in (aws.eks.get_clusters().names or [])
    problems = deploying_identity_problems(cfg.admin_principal_arns, caller.arn, creates_cluster)
    if problems:
        raise ConfigError(problems)


def access_entries(principal_arns: tuple[str, ...], partition: Partition) -> dict[str, eks.AccessEntryArgs]:
    """Cluster-admin access entries; the deploying identity is admin through EKS's creator bootstrap."""
    return {
        f"admin-{index}": eks.AccessEntryArgs(
            principal_arn=arn,
            access_policies={
                "cluster-admin": eks.AccessPolicyAssociationArgs(
                    policy_arn=partition.access_policy_arn(CLUSTER_ADMIN_POLICY),
                    access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                )
            },
        )
        for index, arn in enumerate(principal_arns)
    }


def update_kubeconfig_command(cfg: StackConfig) -> str:
    return f"aws eks update-kubeconfig --region {cfg.region} --name {cfg.cluster_name}"


@dataclass(frozen=True)
class ClusterArgs:
    """The EKS control plane's settings, and the VPC it goes into (any VPC: `infra.network.vpc.Network` makes one)."""

    cluster_name: str  # the EKS cluster's name
    kubernetes_version: str  # MAJOR.MINOR, e.g. "1.35"
    partition: Partition  # the one the AWS provider deploys into (`discover_partition`): ARNs and service principals
    vpc_cni_version: str  # the vpc-cni add-on build, e.g. "v1.21.1-eksbuild.1" (one EKS offers for the version)
    kube_proxy_version: str  # the kube-proxy add-on build, of the same Kubernetes minor
    vpc_id: pulumi.Input[str]
    # The private subnets (the cluster's ENIs and internal load balancers go there; neither needs their NAT route),
    # and the public ones for internet-facing load balancers; at least two AZs between them (EKS's network
    # requirements).
    private_subnet_ids: Sequence[pulumi.Input[str]]
    public_subnet_ids: Sequence[pulumi.Input[str]]
    # Who may reach the public API endpoint: no default, since without a list EKS opens it to 0.0.0.0/0
    # (API_VpcConfigRequest), which is what no caller should get by leaving a field out.
    api_public_access_cidrs: tuple[str, ...]
    admin_principal_arns: tuple[str, ...] = ()  # IAM roles/users given cluster admin (the creator already is)
    control_plane_logging: bool = True  # all five control-plane log types to CloudWatch
    secrets_encryption: bool = True  # a KMS key of the cluster's own for envelope encryption of Secrets
    protect: bool = False  # Pulumi's `protect` and EKS's deletion protection on the cluster
    tags: Mapping[str, str] = field(default_factory=dict)  # on every AWS resource of the cluster


def cluster_args_errors(args: ClusterArgs) -> list[InputPropertyErrorDetails]:
    """What would leave the cluster without its subnets or its API open; a value's form is the settings' to check
    (docs/architecture.md, Errors in the args' terms)."""
    errors: list[InputPropertyErrorDetails] = []
    if not args.private_subnet_ids:
        errors.append(
            problem("private_subnet_ids", "empty: the nodes and the cluster's network interfaces need subnets")
        )
    allow_list = api_allow_list_reason(args.api_public_access_cidrs)
    if allow_list:
        errors.append(problem("api_public_access_cidrs", allow_list))
    return errors


class Cluster(pulumi.ComponentResource):
    eks_cluster: eks.Cluster
    node_role: aws.iam.Role
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    cluster_security_group_id: pulumi.Output[str]
    cluster_name: str
    kubernetes_version: str

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        raise_input_errors("Cluster", cluster_args_errors(args))
        super().__init__("ray-llm-eks:cluster:Cluster", name, None, opts)
        children = Children(self, name)

        self.node_role = _node_role(children, args)
        secrets_key = _secrets_key(children, args) if args.secrets_encryption else None
        self.eks_cluster = _eks_cluster(children, args, secrets_key)

        self.kubeconfig = pulumi.Output.secret(self.eks_cluster.kubeconfig_json)
        self.provider = k8s.Provider(children.name("kubernetes"), kubeconfig=self.kubeconfig, opts=children.opts())
        # Nodes launched from a launch template with network interfaces of its own (the GPU group) must
        # carry the security group EKS creates for the cluster, or they cannot reach the control plane
        # and the other nodes. Without pulumi-eks's default groups this output is that group.
        self.cluster_security_group_id = self.eks_cluster.cluster_security_group_id
        self.cluster_name = args.cluster_name
        self.kubernetes_version = args.kubernetes_version
        self.register_outputs({"clusterName": args.cluster_name})


def _node_role(children: Children, args: ClusterArgs) -> aws.iam.Role:
    """The role every node group's instances take, with the policies a node needs."""
    role = aws.iam.Role(
        children.name("node-role"),
        assume_role_policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": args.partition.service_principal("ec2")},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
        ),
        tags=args.tags,
        opts=children.opts(),
    )
    for short_name, policy in NODE_MANAGED_POLICIES.items():
        aws.iam.RolePolicyAttachment(
            children.name(f"node-role-{short_name}"),
            role=role.name,
            policy_arn=args.partition.managed_policy_arn(policy),
            opts=children.opts(),
        )
    return role


def _secrets_key(children: Children, args: ClusterArgs) -> aws.kms.Key:
    """The cluster's own KMS key for envelope encryption of Kubernetes Secrets."""
    return aws.kms.Key(
        children.name("secrets-key"),
        description=f"Envelope encryption of Kubernetes secrets in {args.cluster_name}",
        enable_key_rotation=True,
        deletion_window_in_days=30,
        tags=args.tags,
        opts=children.opts(),
    )


def _eks_cluster(children: Children, args: ClusterArgs, secrets_key: aws.kms.Key | None) -> eks.Cluster:
    return eks.Cluster(
        children.name("eks"),
        name=args.cluster_name,
        version=args.kubernetes_version,
        vpc_id=args.vpc_id,
        private_subnet_ids=list(args.private_subnet_ids),
        public_subnet_ids=list(args.public_subnet_ids),
        node_associate_public_ip_address=False,
        skip_default_node_group=True,
        # Managed nodes use the security group EKS creates for the cluster; pulumi-eks's own cluster
        # and node groups (and their rules) serve only self-managed node groups, which this stack has none of.
        skip_default_security_groups=True,
        endpoint_private_access=True,
        endpoint_public_access=True,
        public_access_cidrs=list(args.api_public_access_cidrs),
        create_oidc_provider=True,
        authentication_mode=eks.AuthenticationMode.API,
        # No instance_roles: pulumi-eks rejects them in API mode, and EKS gives a managed node
        # group's role its node access entry by itself.
        access_entries=access_entries(args.admin_principal_arns, args.partition),
        enabled_cluster_log_types=CONTROL_PLANE_LOG_TYPES if args.control_plane_logging else [],
        encryption_config_key_arn=secrets_key.arn if secrets_key else None,
        # The VPC CNI's network policy agent, which enforces the serving namespace's NetworkPolicies
        # (infra/serving/network_policy.py; https://docs.aws.amazon.com/eks/latest/userguide/cni-network-policy.html).
        vpc_cni_options=eks.VpcCniOptionsArgs(addon_version=args.vpc_cni_version, enable_network_policy=True),
        # CoreDNS needs a node to become ACTIVE; inside this component it would be created before
        # any node group and block them all. `SystemNodes` creates it after its node group.
        coredns_addon_options=eks.CoreDnsAddonOptionsArgs(enabled=False),
        kube_proxy_addon_options=eks.KubeProxyAddonOptionsArgs(enabled=True, version=args.kube_proxy_version),
        deletion_protection=args.protect,
        tags=args.tags,
        # Network's public subnet ids carry their internet routes, so everything in the cluster, load balancers
        # included, comes after the internet path and is gone before it is torn down.
        opts=children.opts(protect=args.protect),
    )
