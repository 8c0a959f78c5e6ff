"""Node groups: CPU system nodes, and EFA GPU nodes pinned to one AZ with a cluster placement group."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pytest
from pulumi._types import input_type_py_to_pulumi_names

from tools.instance_type_facts import INSTANCE_TYPES
from tools.offline import run_stack

NODE_GROUP = "eks:index:ManagedNodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


def gpu_group(run):
    return run.get(NODE_GROUP, "gpu-nodes-gpu").inputs


def gpu_template(run):
    return run.get(LAUNCH_TEMPLATE, "gpu-nodes-gpu").inputs


def test_system_nodes_are_a_fixed_size_private_group(dev):
    system = dev.get(NODE_GROUP, "system-nodes-system").inputs
    assert system["instanceTypes"] == ["m7i.xlarge"]
    assert system["scalingConfig"] == {"minSize": 1, "maxSize": 1, "desiredSize": 1}
    assert system["labels"] == {"role": "system"}
    assert system["amiType"] == "AL2023_x86_64_STANDARD"
    assert system["subnetIds"] == ["network-private-sa-east-1a-id", "network-private-sa-east-1b-id"]
    assert system["launchTemplate"] == {"id": "system-nodes-system-id", "version": "1"}


def test_system_node_overrides():
    system = (
        run_stack({"systemNodeType": "m7i.2xlarge", "systemNodeCount": 2}).get(NODE_GROUP, "system-nodes-system").inputs
    )
    assert system["instanceTypes"] == ["m7i.2xlarge"]
    assert system["scalingConfig"] == {"minSize": 2, "maxSize": 2, "desiredSize": 2}


def test_gpu_nodes_are_a_fixed_size_group_of_the_gpu_type(dev):
    gpu = gpu_group(dev)
    assert gpu["nodeGroupName"] == "gpu-workers"
    assert gpu["instanceTypes"] == ["g6.8xlarge"]
    assert gpu["scalingConfig"] == {"minSize": 2, "maxSize": 2, "desiredSize": 2}
    assert gpu["capacityType"] == "ON_DEMAND"


def test_gpu_node_overrides():
    # 4 prefill + 8 decode single-GPU replicas on 4-GPU nodes: 3 nodes, which gpuNodeCount confirms.
    layout = {"prefillReplicas": 4, "decodeReplicas": 8, "gpuNodeCount": 3}
    gpu = gpu_group(run_stack({"gpuNodeType": "g6e.12xlarge", "gpuNodegroupName": "l40s", **layout}))
    assert gpu["instanceTypes"] == ["g6e.12xlarge"]
    assert gpu["scalingConfig"] == {"minSize": 3, "maxSize": 3, "desiredSize": 3}
    assert gpu["nodeGroupName"] == "l40s"


def test_gpu_nodes_live_in_one_private_subnet_of_the_gpu_az(dev):
    assert gpu_group(dev)["subnetIds"] == [f"network-private-{dev.outputs['gpuAz']}-id"]


def test_gpu_nodes_are_labelled_and_tainted_for_gpu_work_only(dev):
    gpu = gpu_group(dev)
    assert gpu["labels"] == {
        "role": "gpu-worker",
        "nvidia.com/gpu.present": "true",
        "k8s.amazonaws.com/accelerator": "nvidia-l4",
    }
    assert gpu["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]


def test_gpu_nodes_run_the_nvidia_ami(dev):
    assert gpu_group(dev)["amiType"] == "AL2023_x86_64_NVIDIA"


def test_gpu_nodes_launch_from_the_efa_template(dev):
    assert gpu_group(dev)["launchTemplate"] == {"id": "gpu-nodes-gpu-id", "version": "1"}


@pytest.mark.parametrize("instance_type", ["g6.8xlarge", "g6e.24xlarge", "g6e.48xlarge", "p4d.24xlarge", "p5.48xlarge"])
def test_one_efa_interface_per_efa_network_card(instance_type):
    """As many EFA interfaces as EC2's DescribeInstanceTypes says the type takes (EfaInfo.MaximumEfaInterfaces,
    answered offline with the values of https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html)."""
    interfaces = gpu_template(run_stack({"gpuNodeType": instance_type}))["networkInterfaces"]
    assert len(interfaces) == INSTANCE_TYPES[instance_type].efa_interfaces
    assert [i["networkCardIndex"] for i in interfaces] == list(range(len(interfaces)))


@pytest.mark.parametrize("instance_type", ["g6.8xlarge", "g6e.24xlarge", "g6e.48xlarge", "p4d.24xlarge", "p5.48xlarge"])
def test_multi_card_efa_layout_is_one_primary_efa_and_efa_only_secondaries(instance_type):
    """https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html: the primary
    interface (network card 0, device index 0) is an EFA with ENA ("You can't use an EFA-only network
    interface as the primary network interface"); each further card gets device index 1 and an EFA or
    EFA-only interface. EFA-only interfaces take no IP address (EC2 API `interface_type`: "If you
    specify efa-only, do not assign any IP addresses"). pulumi/pulumi-eks
    `nodejs/eks/nodes/instances.ts` (`getEfaNetworkInterfaces`) builds exactly this: card 0 `efa`,
    device 0, the public-IP setting; cards 1.. `efa-only`, device 1, no public-IP setting.
    terraform-aws-modules/terraform-aws-eks `modules/eks-managed-node-group/main.tf`
    (`efa_network_interfaces`, `enable_efa_only` defaulting to true) does the same with
    `efa_indices = [0]`.
    """
    interfaces = gpu_template(run_stack({"gpuNodeType": instance_type}))["networkInterfaces"]
    primary, *secondaries = interfaces
    assert (primary["interfaceType"], primary["deviceIndex"], primary["associatePublicIpAddress"]) == (
        "efa",
        0,
        "false",
    )
    for secondary in secondaries:
        assert (secondary["interfaceType"], secondary["deviceIndex"]) == ("efa-only", 1)
        assert "associatePublicIpAddress" not in secondary
    assert all(i["securityGroups"] == ["gpu-nodes-efa-id", "sg-eks-cluster"] for i in interfaces)


def test_efa_interfaces_get_no_public_ip_and_both_security_groups(dev):
    (interface,) = gpu_template(dev)["networkInterfaces"]
    assert interface["associatePublicIpAddress"] == "false"
    assert interface["securityGroups"] == ["gpu-nodes-efa-id", "sg-eks-cluster"]


def test_efa_security_group_lets_all_traffic_flow_between_members(dev):
    group = dev.get("aws:ec2/securityGroup:SecurityGroup", "gpu-nodes-efa").inputs
    for rules in (group["ingress"], group["egress"]):
        assert rules == [{"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}]


def test_gpu_nodes_share_a_cluster_placement_group(dev):
    assert dev.get("aws:ec2/placementGroup:PlacementGroup", "gpu-nodes-gpu-placement").inputs["strategy"] == "cluster"
    assert gpu_template(dev)["placement"] == {"groupName": "gpu-nodes-gpu-placement-pg"}


# The offline account's Capacity Block (tools/offline_aws.py CAPACITY_BLOCKS), which the preflight looks up.
CAPACITY_BLOCK = {
    "gpuCapacityType": "capacity-block",
    "capacityReservationId": "cr-02168da1478b509e0",
    "gpuAz": "sa-east-1a",
    "gpuNodeType": "p5.48xlarge",
}
RESERVATIONS = {
    "odcr": {"capacityReservationId": "cr-0123456789abcdef0"},
    "capacity-block": CAPACITY_BLOCK,
}


@pytest.mark.parametrize("reservation", sorted(RESERVATIONS))
def test_reserved_gpu_nodes_get_no_placement_group_of_the_stacks(reservation):
    """A reservation's placement is fixed when it is made: "To reserve capacity in a placement group, you must
    create the Capacity Reservation in the placement group" (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/
    cr-cpg.html), so a group the stack creates never holds an ODCR. eksctl lost reserved instances to the
    placement group it added (eksctl-io/eksctl#7949: 11 of 16) and stopped adding one with a reservation
    (eksctl-io/eksctl#8220); AWS ParallelCluster refuses a placement group with a Capacity Block
    (aws/aws-parallelcluster#6311, `cli/src/pcluster/validators/ec2_validators.py`), whose instances EC2 already
    places together (awslabs/awsome-distributed-ai#353, an AWS engineer: "Capacity block is time based ODCR with
    instances placed by default in a placement group cluster")."""
    run = run_stack(RESERVATIONS[reservation])
    assert run.of_type("aws:ec2/placementGroup:PlacementGroup") == []
    assert "placement" not in gpu_template(run)


def test_a_capacity_block_takes_its_instance_type_from_the_launch_template_only():
    """EKS user guide `capacity-blocks-mng.html`: managed node groups with Capacity Blocks "can only be created
    with custom launch templates", whose LaunchTemplateData must include the InstanceType, besides the market type
    and reservation; "If … any of the above required launch template values are missing, then the create request
    will be rejected". EKS API CreateNodegroup `instanceTypes`: "If however, you specify an instance type in your
    launch template and specify any instanceTypes, the node group deployment will fail"
    (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateNodegroup.html)."""
    run = run_stack({**CAPACITY_BLOCK, "gpuNodeType": "p5.48xlarge"})
    assert gpu_template(run)["instanceType"] == "p5.48xlarge"
    assert "instanceTypes" not in gpu_group(run)


def test_on_demand_gpu_nodes_name_their_type_on_the_node_group_only(dev):
    """The same CreateNodegroup rule, the other way round: the type in one place, the node group's."""
    assert gpu_group(dev)["instanceTypes"] == ["g6.8xlarge"]
    assert "instanceType" not in gpu_template(dev)


@pytest.mark.parametrize(
    ("instance_type", "accelerator"),
    [("g6.8xlarge", "nvidia-l4"), ("g6e.24xlarge", "nvidia-l40s"), ("p5.48xlarge", "nvidia-h100")],
)
def test_gpu_nodes_carry_cluster_autoscalers_accelerator_label(instance_type, accelerator):
    """kubernetes/autoscaler `cluster-autoscaler/cloudprovider/aws/README.md`, "Special note on GPU instances": the
    device plugin "can take some time to advertise the GPU resource to the cluster. This may cause Cluster
    Autoscaler to unnecessarily scale out multiple times"; label the GPU nodes before they join with
    `k8s.amazonaws.com/accelerator=<gpu-type>` (Cluster Autoscaler >= 1.15), `<gpu-type>` such as
    `nvidia-tesla-k80`. EKS applies a managed node group's `labels` when the node registers. The GPU model is
    EC2's own name for it (DescribeInstanceTypes GpuInfo.Gpus[].Name)."""
    labels = gpu_group(run_stack({"gpuNodeType": instance_type}))["labels"]
    assert labels["k8s.amazonaws.com/accelerator"] == accelerator


@pytest.mark.parametrize("template", ["system-nodes-system", "gpu-nodes-gpu"])
def test_node_templates_require_imdsv2(dev, template):
    assert dev.get(LAUNCH_TEMPLATE, template).inputs["metadataOptions"]["httpTokens"] == "required"


@pytest.mark.parametrize("template", ["system-nodes-system", "gpu-nodes-gpu"])
def test_node_templates_have_an_encrypted_gp3_root_volume_and_no_ami(dev, template):
    """The launch templates name no AMI, so EKS picks it from the group's `amiType` and `version`
    (https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html, "Specifying an AMI"). /dev/xvda is
    the root volume's device name on AL2023 (pulumi/pulumi-eks nodejs/eks/nodes/nodegroup.ts,
    createMNGCustomLaunchTemplate)."""
    inputs = dev.get(LAUNCH_TEMPLATE, template).inputs
    (root,) = inputs["blockDeviceMappings"]
    assert root["deviceName"] == "/dev/xvda"
    assert (root["ebs"]["volumeType"], root["ebs"]["encrypted"]) == ("gp3", "true")
    assert "imageId" not in inputs


def test_system_root_disk_is_50_gib(dev):
    (root,) = dev.get(LAUNCH_TEMPLATE, "system-nodes-system").inputs["blockDeviceMappings"]
    assert root["ebs"]["volumeSize"] == 50


@pytest.mark.parametrize("group", ["system-nodes-system", "gpu-nodes-gpu"])
def test_node_groups_run_the_clusters_kubernetes_version(group):
    """A node group follows a control-plane upgrade only through its own `version` (EKS API
    UpdateNodegroupVersion: "If no version is specified, then the Kubernetes version of the node group
    does not change"), and pulumi-eks leaves it unset when a launch template is given
    (pulumi/pulumi-eks `nodejs/eks/nodes/nodegroup.ts`, `createManagedNodeGroup`)."""
    run = run_stack({"kubernetesVersion": "1.34", "kubeProxyVersion": "v1.34.1-eksbuild.2"})
    assert run.get(NODE_GROUP, group).inputs["version"] == "1.34"


def test_gpu_root_disk_is_200_gib_by_default_and_configurable(dev):
    (root,) = gpu_template(dev)["blockDeviceMappings"]
    assert root["deviceName"] == "/dev/xvda"
    assert root["ebs"]["volumeSize"] == 200
    (bigger,) = gpu_template(run_stack({"gpuRootVolumeGiB": 500}))["blockDeviceMappings"]
    assert bigger["ebs"]["volumeSize"] == 500


def test_capacity_reservation_is_targeted_only_when_given(dev):
    assert "capacityReservationSpecification" not in gpu_template(dev)
    reserved = gpu_template(run_stack({"capacityReservationId": "cr-0123456789abcdef0"}))
    assert reserved["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}
    }


def egress_urns(run, azs) -> set[str]:
    return {
        run.get(type_, f"{prefix}-{az}").urn
        for az in azs
        for type_, prefix in (
            ("aws:ec2/routeTable:RouteTable", "network-private-routes"),
            ("aws:ec2/routeTableAssociation:RouteTableAssociation", "network-private"),
        )
    }


@pytest.mark.parametrize("stack_run", ["dev", "prod"])
def test_node_groups_wait_for_their_subnets_nat_egress(request, stack_run):
    """A node in a private subnet reaches ECR, the EKS API and the image registries only through the
    subnet's NAT default route: https://docs.aws.amazon.com/eks/latest/userguide/private-clusters.html
    (without outbound internet, images must come from an in-VPC registry or VPC endpoints, which this
    stack does not create). The route lives in the private route table (inline, created with it) and
    applies only once the subnet is associated, so both node groups depend on the table and the
    association of every subnet they launch into; a subnet id alone is ready before either exists.
    Network's subnet ids are Outputs of the subnet, its table and its association, so the node groups take the
    dependency with the id, whoever passes it: the SDK waits for every input before the RegisterResource of the
    remote `eks:index:ManagedNodeGroup` (so its `aws:eks/nodeGroup:NodeGroup` child is constructed only afterwards)
    and sends each input's resources as dependencies (pulumi `runtime/resource.py` prepare_resource,
    `dependencies |= urns` per property).
    """
    run = request.getfixturevalue(stack_run)
    azs = run.outputs["availabilityZones"]
    assert egress_urns(run, azs) <= set(run.get(NODE_GROUP, "system-nodes-system").dependencies)
    assert egress_urns(run, [run.outputs["gpuAz"]]) <= set(run.get(NODE_GROUP, "gpu-nodes-gpu").dependencies)


def child_options(group, child_type: str):
    """The options a child of `group` gets once the group's transforms have run, as the engine runs them."""
    args = pulumi.ResourceTransformArgs(
        custom=True, type_=child_type, name=group.name, props={}, opts=pulumi.ResourceOptions(parent=None)
    )
    results = [result for transform in group.transforms if (result := transform(args)) is not None]
    return results[-1].opts if results else args.opts


@pytest.mark.parametrize("group_name", ["system-nodes-system", "gpu-nodes-gpu"])
def test_a_node_group_replacement_deletes_the_old_group_first(dev, group_name):
    """hashicorp/terraform-provider-aws `internal/service/eks/node_group.go` (the engine of pulumi-aws's
    `aws.eks.NodeGroup`): `instance_types`, `subnet_ids`, `ami_type`, `disk_size`, `launch_template.id`
    and `node_group_name` are ForceNew. EKS node group names are unique in a cluster
    (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateNodegroup.html, `nodegroupName`),
    and both groups here have fixed names (`system`, `gpuNodegroupName`), so Pulumi's default
    create-before-delete replacement would fail on the name; pulumi-eks `nodes/nodegroup.ts` creates the
    `aws:eks/nodeGroup:NodeGroup` without `deleteBeforeReplace`. A `transforms` option on the component
    reaches that child (https://www.pulumi.com/docs/iac/concepts/resources/options/transforms/: applied "to a
    resource and all of its children"; transforms, unlike transformations, reach the children of packaged
    components such as eks).
    """
    group = dev.get(NODE_GROUP, group_name)
    assert child_options(group, "aws:eks/nodeGroup:NodeGroup").delete_before_replace is True
    assert child_options(group, "aws:ec2/launchTemplate:LaunchTemplate").delete_before_replace is None


def child_props(group, child_type: str) -> dict:
    """The props a child of `group` is registered with once the group's transforms have run."""
    args = pulumi.ResourceTransformArgs(
        custom=True, type_=child_type, name=group.name, props={}, opts=pulumi.ResourceOptions(parent=None)
    )
    results = [result for transform in group.transforms if (result := transform(args)) is not None]
    return results[-1].props if results else args.props


@pytest.mark.parametrize(("group_name", "strategy"), [("gpu-nodes-gpu", "MINIMAL"), ("system-nodes-system", "DEFAULT")])
def test_each_node_group_updates_with_its_strategy(dev, group_name, strategy):
    """EKS NodegroupUpdateConfig (https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupUpdateConfig.html):
    DEFAULT "launches the new instances first, before terminating the old instances"; MINIMAL "terminates the old
    instances before launching the new instances", for groups "constrained to resources or costs (for example,
    with hardware accelerators such as GPUs)". A DEFAULT update first adds up to two nodes per AZ
    (https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html, scale up phase), which an
    exactly-fitting GPU quota or reservation cannot give. pulumi-eks's ManagedNodeGroup has no updateConfig input,
    so the transform sets it on its `aws:eks/nodeGroup:NodeGroup` child."""
    props = child_props(dev.get(NODE_GROUP, group_name), "aws:eks/nodeGroup:NodeGroup")
    assert props["updateConfig"] == {"maxUnavailable": 1, "updateStrategy": strategy}


def test_the_update_config_uses_pulumi_aws_wire_names():
    """A child registered by pulumi-eks's TypeScript reaches a Python transform with its properties under their
    wire names (pulumi SDK `runtime/_callbacks.py`: `deserialize_properties(request.properties)`, untranslated)."""
    assert input_type_py_to_pulumi_names(aws.eks.NodeGroupArgs)["update_config"] == "updateConfig"
    names = input_type_py_to_pulumi_names(aws.eks.NodeGroupUpdateConfigArgs)
    assert {names["max_unavailable"], names["update_strategy"]} == {"maxUnavailable", "updateStrategy"}
