"""pulumi-eks's Cluster and ManagedNodeGroup, expanded by their own implementation with our inputs.

The `eks.Cluster` and `eks.ManagedNodeGroup` inputs of each shipped stack and scaling recipe (docs/scaling.md)
(captured offline) go through the vendored pulumi/pulumi-eks `nodejs/eks`
(vendor/pulumi-eks-4.3.0/README.md names the release) under @pulumi/pulumi's mocks: the
children asserted on here are the ones the provider would create at deploy time, and an error is what
the real preview would report. Needs node and the npm packages (see
`tests.eks_expansion.missing_toolchain`): CI always has them; elsewhere the module is skipped once,
with the reason.
"""

from __future__ import annotations

import copy
import json
import os

import pytest

from tests.conftest import shipped_run
from tests.eks_expansion import CLUSTER, MANAGED_NODE_GROUP, Expansion, build, expand, missing_toolchain, runner_request
from tests.test_scaling import EXPECTED, render
from tools.offline import StackRun
from tools.project import PROJECT_DIR, SHIPPED_STACKS

_missing = missing_toolchain()
if _missing and os.environ.get("CI") == "true":
    raise RuntimeError(f"CI must run the pulumi-eks expansion tests: {_missing}")
if _missing:
    pytest.skip(_missing, allow_module_level=True)

EKS_CLUSTER = "aws:eks/cluster:Cluster"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ADDON = "aws:eks/addon:Addon"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
# The root volume's device name on AL2/AL2023 (pulumi-eks nodejs/eks/nodes/nodegroup.ts, createMNGCustomLaunchTemplate).
ROOT_DEVICE_NAME = "/dev/xvda"


@pytest.fixture(scope="session")
def runner() -> None:
    build()


# Every shipped stack, and every scaling recipe of docs/scaling.md (its node groups differ: sizes, types,
# autoscaling, capacity blocks).
CASES = {**{stack: None for stack in SHIPPED_STACKS}, **{f"recipe-{title}": title for title in sorted(EXPECTED)}}


@pytest.fixture(scope="session", params=list(CASES))
def stack(request: pytest.FixtureRequest, runner) -> tuple[StackRun, Expansion]:
    recipe = CASES[request.param]
    run = shipped_run(request.param) if recipe is None else render(recipe)
    return run, expand(runner_request(run, run.outputs["region"]))


@pytest.fixture(scope="session")
def dev_inputs(runner, dev: StackRun) -> dict:
    return runner_request(dev, dev.outputs["region"])


@pytest.fixture
def dev_request(dev_inputs) -> dict:
    """The dev stack's runner request, for a test to change."""
    return copy.deepcopy(dev_inputs)


def test_pulumi_eks_constructs_the_cluster_and_both_node_groups(stack):
    """pulumi/pulumi-eks `nodejs/eks/cluster/cluster.ts` (`createCluster`) and `nodejs/eks/nodes/nodegroup.ts`
    (`createManagedNodeGroup`) accept the inputs without an error and create the EKS cluster and one
    `aws:eks/nodeGroup:NodeGroup` per managed node group."""
    run, expansion = stack
    assert expansion.errors == ()
    (cluster,) = expansion.of_type(EKS_CLUSTER)
    assert cluster.inputs["name"] == run.outputs["clusterName"]
    assert sorted(g.name for g in expansion.of_type(NODE_GROUP)) == sorted(
        g.name for g in run.of_type(MANAGED_NODE_GROUP)
    )


def test_the_cluster_component_creates_no_addon_that_needs_nodes(stack):
    """Only node-free add-ons (vpc-cni, kube-proxy: DaemonSets) may be created inside `eks.Cluster`.

    Every node group waits for the whole cluster component, so an add-on in it that needs a node to
    become ACTIVE (coredns) blocks them forever: pulumi/pulumi-eks `nodejs/eks/cluster/cluster.ts`
    (`createCore`: "if the user explicitly enables it then do what they want"), pulumi/pulumi-eks#1819.
    """
    _, expansion = stack
    cluster = expansion.get(CLUSTER, "cluster-eks")
    in_cluster = {r.inputs["addonName"] for r in expansion.descendants(cluster) if r.type == ADDON}
    assert in_cluster == {"vpc-cni", "kube-proxy"}


def test_the_harness_sees_coredns_inside_the_cluster_when_enabled_there(dev_request):
    """The previous inputs (`corednsAddonOptions: {enabled: true, version}`) put coredns inside the component
    (pulumi/pulumi-eks `nodejs/eks/cluster/cluster.ts`, `createCore`; pulumi/pulumi-eks#1819)."""
    dev_request["cluster"]["inputs"]["corednsAddonOptions"].update(enabled=True, version="v1.13.2-eksbuild.1")
    expansion = expand(dev_request)
    cluster = expansion.get(CLUSTER, "cluster-eks")
    assert "coredns" in {r.inputs["addonName"] for r in expansion.descendants(cluster) if r.type == ADDON}


def test_instance_roles_in_api_mode_fail_the_preview(dev_request):
    """The previous inputs (`instanceRoles: [node role]` with `authenticationMode: API`) throw in
    pulumi/pulumi-eks `nodejs/eks/cluster/authenticationMode.ts` (`validateAuthenticationMode`)."""
    node_role = dev_request["nodeGroups"][0]["inputs"]["nodeRole"]
    dev_request["cluster"]["inputs"]["instanceRoles"] = [node_role]
    expansion = expand(dev_request)
    assert expansion.errors == (
        "The 'instanceRoles' property does not support non-empty values when 'authenticationMode' is set to 'API'.",
    )
    assert expansion.of_type(NODE_GROUP) == []


def test_every_node_group_runs_the_clusters_kubernetes_version(stack):
    """pulumi/pulumi-eks `nodejs/eks/nodes/nodegroup.ts` (`createManagedNodeGroup`) defaults `version`
    to the cluster's only without a launch template ("If they do, they're responsible for deciding
    the k8s version"); EKS leaves a node group on its version unless it is given one (EKS API
    UpdateNodegroupVersion). A template without an AMI allows it (CreateNodegroup `version`: only a
    custom AMI forbids it)."""
    _, expansion = stack
    (cluster,) = expansion.of_type(EKS_CLUSTER)
    for group in expansion.of_type(NODE_GROUP):
        assert group.inputs.get("version") == cluster.inputs["version"], group.name


def test_every_node_group_boots_from_an_encrypted_gp3_root_volume(stack):
    """The template pulumi-eks makes for a managed node group (pulumi/pulumi-eks
    `nodejs/eks/nodes/nodegroup.ts`, `createMNGCustomLaunchTemplate`, used when `enableIMDSv2` or
    another of `customLaunchTemplateArgs` is set) maps the root device with `volumeSize` only: neither
    encrypted nor of a declared type. Every node group must launch from a template of ours that is."""
    run, expansion = stack
    templates = {f"{t.name}-id": t for t in [*run.of_type(LAUNCH_TEMPLATE), *expansion.of_type(LAUNCH_TEMPLATE)]}
    for group in expansion.of_type(NODE_GROUP):
        template = templates[group.inputs["launchTemplate"]["id"]]
        (root,) = template.inputs["blockDeviceMappings"]
        assert root["deviceName"] == ROOT_DEVICE_NAME, group.name
        assert (root["ebs"]["volumeType"], root["ebs"]["encrypted"]) == ("gp3", "true"), group.name
    assert expansion.of_type(LAUNCH_TEMPLATE) == []


def test_pulumi_eks_creates_no_security_group_that_no_node_uses(stack):
    """Without `skipDefaultSecurityGroups`, pulumi/pulumi-eks `nodejs/eks/cluster/cluster.ts`
    (`createCore`, `createCluster`) adds a cluster security group to the control plane and a node
    security group with its rules (`nodejs/eks/nodes/securitygroup.ts`); only self-managed node groups
    join that node group (`nodejs/eks/nodes/nodegroup.ts`: `createManagedNodeGroup` never reads it).
    Managed nodes use the security group EKS creates for the cluster: by default, or through our GPU
    template's interfaces (https://docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html), which
    is what `clusterSecurityGroupId` returns once the defaults are skipped (`createCluster`)."""
    run, expansion = stack
    assert run.get(CLUSTER, "cluster-eks").inputs["skipDefaultSecurityGroups"] is True
    assert expansion.of_type("aws:ec2/securityGroup:SecurityGroup") == []
    assert expansion.of_type("aws:ec2/securityGroupRule:SecurityGroupRule") == []
    (cluster,) = expansion.of_type(EKS_CLUSTER)
    assert "securityGroupIds" not in cluster.inputs["vpcConfig"]


def test_pulumi_eks_makes_only_the_documented_lookups(stack):
    """The lookups pulumi-eks's own code makes for our inputs (the runner fails on any it does not
    answer) are the ones docs/deploy-time-lookups.md lists for it: pulumi/pulumi-eks
    `nodejs/eks/cluster/cluster.ts` (`createCore`: `aws.getPartitionOutput`, and `aws.getRegion` for the
    OIDC provider); `nodejs/eks/nodes/nodegroup.ts` makes none for managed node groups without user data."""
    _, expansion = stack
    made_by_pulumi_eks = (PROJECT_DIR / "docs" / "deploy-time-lookups.md").read_text().split("## Made by pulumi-eks")[1]
    assert set(expansion.invokes) == {"aws:index/getPartition:getPartition", "aws:index/getRegion:getRegion"}
    assert all(f"`{token}`" in made_by_pulumi_eks for token in expansion.invokes)


def test_the_vpc_cni_addon_turns_on_its_network_policy_agent(stack):
    """The serving namespace's NetworkPolicies (infra/serving/network_policy.py) are enforced only where the vpc-cni
    add-on's configuration sets `enableNetworkPolicy: "true"`
    (https://docs.aws.amazon.com/eks/latest/userguide/cni-network-policy.html, "Enable network policy in the VPC CNI");
    pulumi/pulumi-eks `nodejs/eks/addons/cni-addon.ts` (`mergeConfigurationValues`) writes `enableNetworkPolicy` as the
    string it wants from VpcCniOptions.enableNetworkPolicy."""
    _, expansion = stack
    (vpc_cni,) = [r for r in expansion.of_type(ADDON) if r.inputs["addonName"] == "vpc-cni"]
    assert json.loads(vpc_cni.inputs["configurationValues"])["enableNetworkPolicy"] == "true"
