"""The VPC: subnets only in AZs offering the GPU type, private nodes, egress through NAT."""

from __future__ import annotations

import ipaddress

import pytest

from infra.network.subnets import plan_subnets, subnet_blocks
from infra.settings.kinds import MAX_SUBNET_PREFIX, MAX_VPC_PREFIX, MIN_VPC_PREFIX
from infra.settings.stack_config import ConfigError
from tools.offline import StackRun, run_stack

SUBNET = "aws:ec2/subnet:Subnet"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
NAT = "aws:ec2/natGateway:NatGateway"


def subnets(run: StackRun, kind: str) -> dict[str, dict]:
    return {r.inputs["availabilityZone"]: r.inputs for r in run.of_type(SUBNET) if r.name.startswith(f"network-{kind}")}


def default_route(run: StackRun, table_name: str) -> dict:
    (route,) = [r for r in run.get(ROUTE_TABLE, table_name).inputs["routes"] if r["cidrBlock"] == "0.0.0.0/0"]
    return route


def test_subnets_go_only_into_azs_offering_the_gpu_type(dev):
    assert set(subnets(dev, "private")) == {"sa-east-1a", "sa-east-1b"}
    assert set(subnets(dev, "public")) == {"sa-east-1a", "sa-east-1b"}


def test_no_subnet_hands_out_public_ips(dev):
    assert all(r.inputs["mapPublicIpOnLaunch"] is False for r in dev.of_type(SUBNET))


def test_subnets_carry_the_tags_eks_load_balancers_look_for(dev):
    cluster_tag = "kubernetes.io/cluster/ray-llm-multinode"
    for subnet in subnets(dev, "private").values():
        assert subnet["tags"]["kubernetes.io/role/internal-elb"] == "1"
        assert subnet["tags"][cluster_tag] == "shared"
    for subnet in subnets(dev, "public").values():
        assert subnet["tags"]["kubernetes.io/role/elb"] == "1"
        assert subnet["tags"][cluster_tag] == "shared"


def test_subnet_cidrs_are_disjoint_and_inside_the_vpc(prod):
    vpc = ipaddress.ip_network(prod.get("aws:ec2/vpc:Vpc", "network-vpc").inputs["cidrBlock"])
    cidrs = [ipaddress.ip_network(r.inputs["cidrBlock"]) for r in prod.of_type(SUBNET)]
    assert all(cidr.subnet_of(vpc) for cidr in cidrs)
    assert all(not a.overlaps(b) for i, a in enumerate(cidrs) for b in cidrs[i + 1 :])


def test_public_subnets_route_to_the_internet_gateway(dev):
    assert default_route(dev, "network-public-routes")["gatewayId"] == "network-internet-gateway-id"
    public_ids = {f"network-public-{az}-id" for az in ("sa-east-1a", "sa-east-1b")}
    associated = {
        r.inputs["subnetId"] for r in dev.of_type(ASSOCIATION) if r.inputs["routeTableId"] == "network-public-routes-id"
    }
    assert associated == public_ids


def test_private_subnets_route_through_one_shared_nat_by_default(dev):
    (nat,) = dev.of_type(NAT)
    assert nat.inputs["subnetId"] == "network-public-sa-east-1a-id"
    for az in ("sa-east-1a", "sa-east-1b"):
        assert default_route(dev, f"network-private-routes-{az}")["natGatewayId"] == nat.name + "-id"
        association = dev.get(ASSOCIATION, f"network-private-{az}").inputs
        assert association == {
            "subnetId": f"network-private-{az}-id",
            "routeTableId": f"network-private-routes-{az}-id",
        }


def test_nat_per_az_routes_each_private_subnet_through_its_own_az(prod):
    nats = {r.name: r.inputs["subnetId"] for r in prod.of_type(NAT)}
    azs = prod.outputs["availabilityZones"]
    assert nats == {f"network-nat-{az}": f"network-public-{az}-id" for az in azs}
    for az in azs:
        assert default_route(prod, f"network-private-routes-{az}")["natGatewayId"] == f"network-nat-{az}-id"


def test_gpu_az_is_the_first_offering_az_when_not_given():
    run = run_stack(gpu_offering_azs=["sa-east-1c", "sa-east-1b"])
    assert run.outputs["gpuAz"] == "sa-east-1b"
    assert run.outputs["availabilityZones"] == ["sa-east-1b", "sa-east-1c"]


def test_explicit_gpu_az_is_used():
    run = run_stack({"gpuAz": "sa-east-1b"})
    assert run.outputs["gpuAz"] == "sa-east-1b"
    assert run.get("eks:index:ManagedNodeGroup", "gpu-nodes-gpu").inputs["subnetIds"] == [
        "network-private-sa-east-1b-id"
    ]


def test_gpu_az_that_does_not_offer_the_type_names_the_ones_that_would():
    with pytest.raises(ConfigError) as rejected:
        run_stack({"gpuAz": "sa-east-1c"})
    assert "gpuAz='sa-east-1c'" in str(rejected.value)
    assert "sa-east-1a, sa-east-1b" in str(rejected.value)
    assert rejected.value.declared_resources == []


def test_a_second_az_is_taken_when_only_one_offers_the_gpu_type():
    run = run_stack(gpu_offering_azs=["sa-east-1b"])
    assert run.outputs["gpuAz"] == "sa-east-1b"
    assert run.outputs["availabilityZones"] == ["sa-east-1b", "sa-east-1a"]


def test_no_offering_az_fails_naming_the_type():
    with pytest.raises(ConfigError, match=r"gpuNodeType='g6\.8xlarge' is not offered"):
        run_stack(gpu_offering_azs=[])


def test_max_azs_caps_the_span():
    assert len(run_stack(gpu_offering_azs=["sa-east-1a", "sa-east-1b", "sa-east-1c"]).outputs["availabilityZones"]) == 3
    capped = run_stack({"maxAzs": 2}, gpu_offering_azs=["sa-east-1a", "sa-east-1b", "sa-east-1c"])
    assert len(capped.outputs["availabilityZones"]) == 2


def test_vpc_cidr_comes_from_config(dev):
    assert dev.get("aws:ec2/vpc:Vpc", "network-vpc").inputs["cidrBlock"] == "10.0.0.0/16"
    assert (
        run_stack({"vpcCidr": "10.20.0.0/16"}).get("aws:ec2/vpc:Vpc", "network-vpc").inputs["cidrBlock"]
        == "10.20.0.0/16"
    )


def test_vpc_is_protected_only_when_configured(dev, prod):
    assert dev.get("aws:ec2/vpc:Vpc", "network-vpc").protect is False
    assert prod.get("aws:ec2/vpc:Vpc", "network-vpc").protect is True


def test_s3_is_reached_from_the_private_subnets_through_a_gateway_endpoint(dev):
    """A gateway endpoint adds S3's prefix list to the route tables it names
    (https://docs.aws.amazon.com/vpc/latest/privatelink/vpc-endpoints-s3.html): the model cache's weights and ECR's
    image layers skip the NAT gateway. Every private subnet's route table gets it, in the stack's region. Named in
    route_table_ids beside the tables' inline routes, which the provider reads without the endpoint's routes
    (hashicorp/terraform-provider-aws internal/service/ec2/vpc_route_table.go flattenRoutes skips a prefix-list route
    through a vpce- gateway), so the two never undo each other."""
    endpoint_resource = dev.get("aws:ec2/vpcEndpoint:VpcEndpoint", "network-s3")
    endpoint = endpoint_resource.inputs
    assert endpoint["vpcEndpointType"] == "Gateway"
    assert endpoint["serviceName"] == "com.amazonaws.sa-east-1.s3"
    private_tables = {
        r.urn for r in dev.of_type("aws:ec2/routeTable:RouteTable") if r.name.startswith("network-private-routes-")
    }
    assert private_tables and private_tables <= set(endpoint_resource.dependencies)
    assert len(endpoint["routeTableIds"]) == len(private_tables)


# Every VPC block the args accept (/16 to /22: the public subnets are PUBLIC_PREFIX_DELTA bits narrower, and a VPC
# subnet is /16 to /28, https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html) and every AZ count it
# has room for: the plan is plain arithmetic, so the whole space is checked rather than a sample.
PLANNABLE = [
    (f"10.{second}.0.0/{prefix}", count)
    for prefix in range(MIN_VPC_PREFIX, MAX_VPC_PREFIX + 1)
    for second in (0, 128)
    for count in range(2, len(subnet_blocks(f"10.0.0.0/{prefix}")))
]


@pytest.mark.parametrize(("vpc_cidr", "count"), PLANNABLE)
def test_every_plan_is_disjoint_inside_the_vpc_and_one_pair_per_az(vpc_cidr, count):
    azs = tuple(f"sa-east-1{letter}" for letter in "abcdefg"[:count])
    plans = plan_subnets(vpc_cidr, azs)
    cidrs = [ipaddress.IPv4Network(cidr) for plan in plans for cidr in (plan.private_cidr, plan.public_cidr)]
    vpc = ipaddress.IPv4Network(vpc_cidr)
    assert [plan.az for plan in plans] == list(azs)
    assert all(cidr.subnet_of(vpc) for cidr in cidrs)
    assert not any(a.overlaps(b) for i, a in enumerate(cidrs) for b in cidrs[i + 1 :])
    assert all(cidr.prefixlen <= MAX_SUBNET_PREFIX for cidr in cidrs)
