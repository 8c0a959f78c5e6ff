"""The EKS cluster: private nodes, API access, access entries, pinned add-ons, logging, encryption."""

from __future__ import annotations

import re

import pytest

from infra.settings.kinds import UNPROTECT_COMMAND
from tests.conftest import OPERATOR_CIDRS, info_notes, rejection
from tests.deploy_graph import waits_for
from tools.offline import run_stack
from tools.offline_aws import DEFAULT_ADDON_BUILDS, DEPLOYER_ARN

CLUSTER = "eks:index:Cluster"
ROLLOUT = "pulumi-python:dynamic/ray-llm-eks:ServeRollout"


def cluster_inputs(run):
    return run.get(CLUSTER, "cluster-eks").inputs


def test_cluster_runs_the_configured_kubernetes_version(dev):
    assert cluster_inputs(dev)["version"] == "1.35"
    older = run_stack({"kubernetesVersion": "1.34", "kubeProxyVersion": "v1.34.1-eksbuild.2"})
    assert cluster_inputs(older)["version"] == "1.34"


def test_cluster_has_no_default_node_group_and_private_nodes(dev):
    inputs = cluster_inputs(dev)
    assert inputs["skipDefaultNodeGroup"] is True
    assert inputs["nodeAssociatePublicIpAddress"] is False
    assert inputs["privateSubnetIds"] == ["network-private-sa-east-1a-id", "network-private-sa-east-1b-id"]
    assert inputs["publicSubnetIds"] == ["network-public-sa-east-1a-id", "network-public-sa-east-1b-id"]
    assert inputs["vpcId"] == "network-vpc-id"


def test_api_endpoint_is_private_and_public_with_configured_cidrs(dev, prod):
    assert cluster_inputs(dev)["endpointPrivateAccess"] is True
    assert cluster_inputs(dev)["endpointPublicAccess"] is True
    assert cluster_inputs(dev)["publicAccessCidrs"] == OPERATOR_CIDRS
    assert cluster_inputs(prod)["publicAccessCidrs"] == OPERATOR_CIDRS
    assert cluster_inputs(run_stack({"apiPublicAccessCidrs": ["100.24.30.0/24"]}))["publicAccessCidrs"] == [
        "100.24.30.0/24"
    ]


def test_oidc_provider_is_on(dev):
    assert cluster_inputs(dev)["createOidcProvider"] is True


def test_access_is_through_access_entries_with_configured_admins(dev, prod):
    assert cluster_inputs(dev)["authenticationMode"] == "API"
    assert cluster_inputs(dev).get("accessEntries", {}) == {}
    (entry,) = cluster_inputs(prod)["accessEntries"].values()
    assert entry["principalArn"] == "arn:aws:iam::123456789012:role/platform-admins"
    (policy,) = entry["accessPolicies"].values()
    assert policy["policyArn"].endswith("/AmazonEKSClusterAdminPolicy")
    assert policy["accessScope"] == {"type": "cluster"}


def test_cluster_gets_no_instance_roles_in_api_authentication_mode(shipped):
    """Defect 0: `instanceRoles` with `authenticationMode: API` makes the first preview fail.

    pulumi/pulumi-eks `nodejs/eks/cluster/authenticationMode.ts` (`validateAuthenticationMode`)
    throws "The 'instanceRoles' property does not support non-empty values when
    'authenticationMode' is set to 'API'"; a managed node group needs no instance role on the
    cluster in this mode (pulumi/pulumi-eks `nodejs/eks/nodes/nodegroup.ts`,
    `createManagedNodeGroup`: only a mode without access entries requires it), because EKS creates
    the node access entry of a managed node group's role itself
    (https://docs.aws.amazon.com/eks/latest/userguide/creating-access-entries.html).
    """
    inputs = cluster_inputs(shipped)
    assert inputs["authenticationMode"] == "API"
    assert not inputs.get("instanceRoles")


def test_nodes_join_through_the_node_role(dev):
    for group in ("system-nodes-system", "gpu-nodes-gpu"):
        assert dev.get("eks:index:ManagedNodeGroup", group).inputs["nodeRole"] == "cluster-node-role-id"
    attached = {
        r.inputs["policyArn"].rsplit("/", 1)[1]
        for r in dev.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    }
    assert {"AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly"} <= attached


def test_node_free_core_addons_are_pinned_on_the_cluster(dev):
    """With the version keys empty, each add-on gets the default build EKS publishes for the cluster's
    Kubernetes version (the offline region's answer to getAddonVersion), passed as an explicit pin."""
    inputs = cluster_inputs(dev)
    assert inputs["vpcCniOptions"]["addonVersion"] == DEFAULT_ADDON_BUILDS["vpc-cni"]
    assert inputs["kubeProxyAddonOptions"]["enabled"] is True
    assert inputs["kubeProxyAddonOptions"]["version"] == "v1.35.0-eksbuild.1"


def test_add_on_builds_follow_the_kubernetes_version():
    older = cluster_inputs(run_stack({"kubernetesVersion": "1.33"}))
    assert older["version"] == "1.33"
    assert older["kubeProxyAddonOptions"]["version"] == "v1.33.0-eksbuild.1"


def test_a_set_add_on_version_is_a_pin_over_the_lookup():
    pins = {"vpcCniVersion": "v1.20.4-eksbuild.1", "kubeProxyVersion": "v1.35.0-eksbuild.2"}
    pinned = cluster_inputs(run_stack(pins))
    assert pinned["vpcCniOptions"]["addonVersion"] == "v1.20.4-eksbuild.1"
    assert pinned["kubeProxyAddonOptions"]["version"] == "v1.35.0-eksbuild.2"


def test_coredns_is_not_created_inside_the_cluster_component(shipped):
    """Defect 1: CoreDNS created with the cluster deadlocks the first `pulumi up`.

    pulumi/pulumi-eks `nodejs/eks/cluster/cluster.ts` (`createCore`) creates the coredns add-on
    inside the cluster component whenever `corednsAddonOptions.enabled` is true ("if the user
    explicitly enables it then do what they want"), even with `skipDefaultNodeGroup`. With no node
    it never becomes ACTIVE, and the managed node groups, which take `cluster=`, wait for the whole
    component: pulumi/pulumi-eks#1819.
    """
    assert cluster_inputs(shipped)["corednsAddonOptions"]["enabled"] is False


def test_coredns_is_a_pinned_addon_created_after_the_system_nodes(shipped):
    """Defect 1: CoreDNS is its own add-on, created once the system node group exists.

    Its pods need a node to run on before EKS reports the add-on ACTIVE (pulumi/pulumi-eks#1819;
    terraform-aws-modules/terraform-aws-eks creates it after the node groups and only the
    `before_compute` add-ons, such as vpc-cni, before them: `main.tf`, `aws_eks_addon.this`).
    OVERWRITE takes over the self-managed CoreDNS EKS bootstraps, as pulumi-eks's own coredns add-on does
    (nodejs/eks/cluster/cluster.ts, corednsAddon; ResolveConflictsOnCreate, per
    https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAddon.html).
    """
    coredns = shipped.get("aws:eks/addon:Addon", "system-nodes-coredns")
    assert coredns.inputs["addonName"] == "coredns"
    assert coredns.inputs["addonVersion"] == DEFAULT_ADDON_BUILDS["coredns"]
    assert coredns.inputs["clusterName"] == cluster_inputs(shipped)["name"]
    assert coredns.inputs["resolveConflictsOnCreate"] == "OVERWRITE"
    assert shipped.get("eks:index:ManagedNodeGroup", "system-nodes-system").urn in coredns.dependencies


def test_addon_version_override_reaches_the_coredns_addon():
    run = run_stack({"corednsVersion": "v1.13.3-eksbuild.2"})
    assert run.get("aws:eks/addon:Addon", "system-nodes-coredns").inputs["addonVersion"] == "v1.13.3-eksbuild.2"


def test_control_plane_logging_is_on_by_default_and_can_be_turned_off(dev):
    assert set(cluster_inputs(dev)["enabledClusterLogTypes"]) == {
        "api",
        "audit",
        "authenticator",
        "controllerManager",
        "scheduler",
    }
    assert cluster_inputs(run_stack({"controlPlaneLogging": False})).get("enabledClusterLogTypes", []) == []


def test_secrets_are_encrypted_with_a_rotating_kms_key(dev):
    key = dev.get("aws:kms/key:Key", "cluster-secrets-key")
    assert key.inputs["enableKeyRotation"] is True
    # A KMS key's ARN names its id, a UUID (https://docs.aws.amazon.com/kms/latest/developerguide/
    # concepts.html#key-id-key-ARN): the cluster's encryption config takes the key's own ARN.
    assert re.fullmatch(
        r"arn:aws:kms:sa-east-1:123456789012:key/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        cluster_inputs(dev)["encryptionConfigKeyArn"],
    )


def test_secrets_encryption_can_be_turned_off():
    run = run_stack({"secretsEncryption": False})
    assert run.of_type("aws:kms/key:Key") == []
    assert "encryptionConfigKeyArn" not in cluster_inputs(run)


def test_cluster_is_deletion_protected_only_in_prod(dev, prod):
    assert cluster_inputs(dev)["deletionProtection"] is False
    assert cluster_inputs(prod)["deletionProtection"] is True
    assert prod.get(CLUSTER, "cluster-eks").protect is True


def test_a_protected_stack_says_how_to_tear_it_down(prod, dev):
    """EKS refuses to delete an active cluster with deletion protection on (InvalidRequestException,
    https://docs.aws.amazon.com/eks/latest/userguide/deletion-protection.html), and `pulumi state unprotect` lifts only
    Pulumi's `protect`: the preview of a protected stack names the step that lifts both."""
    (note,) = [note for note in info_notes(prod) if note.startswith("protectResources=true")]
    assert f"run `{UNPROTECT_COMMAND}` first" in note
    assert not [note for note in info_notes(dev) if note.startswith("protectResources")]


def test_the_teardowns_first_step_lifts_every_protection_in_place(prod):
    """`pulumi config set protectResources false && pulumi up` on prod: no resource is protected any more and the
    cluster's deletion protection is off (an in-place update, UpdateClusterConfig), and nothing else changes, so the
    `pulumi destroy` after it is refused by neither Pulumi nor EKS and the step itself restarts nothing: beside the
    cluster only the serve rollout's record of the settings moves (infra/serving/rollout.py `changes`: its update
    waits for the app that is already running)."""
    unprotected = run_stack({"protectResources": False}, stack="prod", existing=prod)
    assert [r.name for r in unprotected.resources if r.protect] == []
    assert cluster_inputs(unprotected)["deletionProtection"] is False
    before = {(r.type, r.name): r.inputs for r in prod.resources}
    changed = {
        (r.type, r.name, key)
        for r in unprotected.resources
        for key in {*r.inputs, *before.get((r.type, r.name), {})}
        if before.get((r.type, r.name), {}).get(key) != r.inputs.get(key)
    }
    assert changed == {(CLUSTER, "cluster-eks", "deletionProtection"), (ROLLOUT, "serving-rollout", "changes")}


def test_every_aws_resource_carries_the_ownership_tags(dev):
    tagged = [r for r in dev.resources if r.type.startswith(("aws:", "eks:")) and "tags" in r.inputs]
    assert len(tagged) > 10
    for resource in tagged:
        assert resource.inputs["tags"]["owner"] == "ml-platform", resource.name
        assert resource.inputs["tags"]["cost-center"] == "ml-dev", resource.name


def test_kubernetes_provider_uses_the_clusters_kubeconfig_as_a_secret(dev):
    provider = dev.get("pulumi:providers:kubernetes", "cluster-kubernetes")
    assert "kubeconfig" in provider.secret_inputs


def test_every_kubernetes_object_goes_through_the_cluster_provider(dev):
    provider = dev.get("pulumi:providers:kubernetes", "cluster-kubernetes")
    kubernetes_objects = [r for r in dev.resources if r.type.startswith("kubernetes:")]
    assert kubernetes_objects
    assert all(r.provider.startswith(provider.urn) for r in kubernetes_objects)


def test_preview_shows_the_architecture_as_a_tree(dev):
    top_level = {r.name for r in dev.resources if r.parent.endswith("::ray-llm-eks-dev")}
    assert top_level == {"network", "cluster", "gpu-nodes", "gcs-store", "model-cache", "serving", "observability"}


def test_cluster_outputs(dev):
    assert dev.outputs["clusterName"] == "ray-llm-multinode"
    assert (
        dev.outputs["updateKubeconfigCommand"]
        == "aws eks update-kubeconfig --region sa-east-1 --name ray-llm-multinode"
    )
    assert dev.outputs["systemNodeGroupName"] == "system"
    assert dev.outputs["gpuNodeGroupName"] == "gpu-workers"
    assert dev.outputs["gpuAz"] == "sa-east-1a"


def test_kubeconfig_is_a_secret_output(dev):
    assert "kubeconfig" in dev.outputs
    assert dev.secret_outputs == {"kubeconfig"}


@pytest.mark.parametrize("stack_run", ["dev", "prod"])
def test_cluster_comes_after_the_internet_path_and_goes_before_it(request, stack_run):
    """The public subnets that internet-facing load balancers use must be associated with a route
    table that routes 0.0.0.0/0 through an internet gateway
    (https://repost.aws/knowledge-center/eks-cluster-subnet-configuration, "Configure a public
    subnet"), and EC2 refuses to detach a gateway while the VPC holds public addresses
    (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DetachInternetGateway.html: "The VPC
    must not contain any running instances with Elastic IP addresses or public IPv4 addresses").
    The serve NLB is created through the cluster, so the cluster depends on the gateway, the public
    route table and its associations: created after them, destroyed (with every in-cluster object
    and load balancer) before them.
    """
    run = request.getfixturevalue(stack_run)
    internet_path = {run.get("aws:ec2/internetGateway:InternetGateway", "network-internet-gateway").urn}
    internet_path.add(run.get("aws:ec2/routeTable:RouteTable", "network-public-routes").urn)
    internet_path |= {
        run.get("aws:ec2/routeTableAssociation:RouteTableAssociation", f"network-public-{az}").urn
        for az in run.outputs["availabilityZones"]
    }
    assert internet_path <= set(run.get("eks:index:Cluster", "cluster-eks").dependencies)


# --- the deploying identity and the admin list ---

DEPLOYER_ROLE = "arn:aws:iam::123456789012:role/ray-llm-eks-deployer"
OPERATOR_ROLE = "arn:aws:iam::123456789012:role/platform-admins"


@pytest.mark.parametrize(
    ("caller", "listed"),
    [
        pytest.param(DEPLOYER_ARN, DEPLOYER_ROLE, id="assumed-role"),
        # The session ARN has no role path; the role's name (unique in its account, any case) still names it.
        pytest.param(DEPLOYER_ARN, "arn:aws:iam::123456789012:role/ci/deploy/ray-llm-eks-deployer", id="role-path"),
        pytest.param(DEPLOYER_ARN, "arn:aws:iam::123456789012:role/RAY-LLM-EKS-DEPLOYER", id="role-case"),
        pytest.param(
            "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_1f9ff11932198c00/mary@example.com",
            "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_Admin_1f9ff11932198c00",
            id="sso-role",
        ),
        pytest.param("arn:aws:iam::123456789012:user/ops/alice", "arn:aws:iam::123456789012:user/ops/alice", id="user"),
    ],
)
def test_the_identity_creating_the_cluster_is_refused_as_an_admin(caller, listed):
    """pulumi/pulumi-eks `nodejs/eks/cluster/cluster.ts` creates the cluster with
    `bootstrapClusterCreatorAdminPermissions: true`, so EKS gives the creator an admin access entry, and an
    explicit entry for the same principal fails (pulumi/pulumi-eks#2373; the error, ResourceInUseException "The
    specified access entry resource is already in use": terraform-aws-modules/terraform-aws-eks#2969). STS
    GetCallerIdentity answers an assumed role as `arn:aws:sts::<account>:assumed-role/<role-name>/<session>`
    (https://docs.aws.amazon.com/STS/latest/APIReference/API_GetCallerIdentity.html), without the role's path, so
    the role's path cannot be recovered from it; IAM role names "must be unique within the account" and "are not
    distinguished by case" (https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreateRole.html, RoleName), so
    account and name identify it."""
    error = rejection({"adminPrincipalArns": [OPERATOR_ROLE, listed]}, caller_arn=caller)
    (problem,) = error.problems
    assert problem.startswith(f"adminPrincipalArns[1]={listed!r} is invalid: it is the identity creating the cluster")
    assert "ResourceInUseException" in problem


def test_the_deploying_identity_is_an_admin_like_any_other_once_the_cluster_exists():
    """Only the creator gets EKS's bootstrap entry: an operator listed in the admins who later runs `pulumi up`
    on the existing cluster has an entry of this program's and keeps it."""
    run = run_stack(
        {"adminPrincipalArns": [OPERATOR_ROLE]},
        caller_arn="arn:aws:sts::123456789012:assumed-role/platform-admins/bob",
        existing_clusters=("other", "ray-llm-multinode"),
    )
    assert [e["principalArn"] for e in cluster_inputs(run)["accessEntries"].values()] == [OPERATOR_ROLE]


@pytest.mark.parametrize(
    "other",
    [
        pytest.param("arn:aws:iam::123456789012:role/ray-llm-eks-deployer-2", id="longer-name"),
        pytest.param("arn:aws:iam::210987654321:role/ray-llm-eks-deployer", id="other-account"),
        pytest.param("arn:aws:iam::123456789012:user/ray-llm-eks-deployer", id="user-of-that-name"),
    ],
)
def test_principals_that_only_resemble_the_deploying_identity_are_kept(other):
    run = run_stack({"adminPrincipalArns": [other]})
    assert [e["principalArn"] for e in cluster_inputs(run)["accessEntries"].values()] == [other]


@pytest.mark.parametrize(
    "again",
    [
        OPERATOR_ROLE,
        "arn:aws:iam::123456789012:role/teams/platform-admins",
        "arn:aws:iam::123456789012:role/Platform-Admins",
    ],
)
def test_the_same_admin_twice_is_refused(again):
    """EKS keeps one access entry per principal (CreateAccessEntry: ResourceInUseException for an existing one,
    https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAccessEntry.html)."""
    (problem,) = rejection({"adminPrincipalArns": [OPERATOR_ROLE, again]}).problems
    assert problem.startswith(f"adminPrincipalArns[1]={again!r} is invalid: it repeats adminPrincipalArns[0]")


@pytest.mark.parametrize("stack_run", ["dev", "prod"])
def test_the_control_plane_is_created_while_the_nat_gateway_is(request, stack_run):
    """EKS puts the control plane's network interfaces in the cluster's subnets to reach the nodes (kubectl exec and
    logs, the private endpoint: https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html), traffic
    inside the VPC that the route table's local route carries (https://docs.aws.amazon.com/vpc/latest/userguide/
    RouteTables.html, "Local route"); the nodes are what need the NAT route (tests/test_node_groups.py). So the cluster
    takes the private subnets before their NAT route exists, and the NAT gateway's minutes run beside EKS's."""
    run = request.getfixturevalue(stack_run)
    cluster = waits_for(run, "eks:index:Cluster", "cluster-eks")
    private_subnets = {r.urn for r in run.of_type("aws:ec2/subnet:Subnet") if "-private-" in r.name}
    assert private_subnets <= cluster
    assert not {r.urn for r in run.of_type("aws:ec2/natGateway:NatGateway")} & cluster
