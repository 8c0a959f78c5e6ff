"""The VPC: public subnets for NAT and load balancers, private subnets for every node.

Subnets go only where the GPU instance type is offered, so the GPU node group always has a usable
subnet; the AZ choice is made from EC2's instance-type offerings before anything is declared.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from infra.config import ConfigError, StackConfig

# Private subnets get /19s of a /16 (8 k addresses each: the VPC CNI gives every pod a VPC IP);
# the last of those blocks is cut into small public subnets that only hold NAT gateways and NLBs.
PRIVATE_PREFIX_DELTA = 3
PUBLIC_PREFIX_DELTA = 6
EKS_MIN_AZS = 2


@dataclass(frozen=True)
class Placement:
    """Where things go: the GPU AZ first, then the other AZs the cluster spans."""

    gpu_az: str
    azs: tuple[str, ...]


def choose_placement(cfg: StackConfig, region_azs: list[str], offering_azs: list[str]) -> Placement:
    """Picks the GPU AZ and the cluster's AZs from what the region offers (pure, so it is testable)."""
    offering = [az for az in region_azs if az in set(offering_azs)]
    if not offering:
        raise ConfigError(
            [
                f"gpuNodeType={cfg.gpu_node_type!r} is not offered in any Availability Zone of {cfg.region}: "
                "pick another type or region"
            ]
        )
    if cfg.gpu_az is not None and cfg.gpu_az not in offering:
        raise ConfigError(
            [
                f"gpuAz={cfg.gpu_az!r} does not offer {cfg.gpu_node_type}: "
                f"allowed is one of {', '.join(offering)} (or empty to auto-pick)"
            ]
        )
    gpu_az = cfg.gpu_az or offering[0]
    # GPU-offering AZs first; EKS needs two AZs, so fall back to others when only one offers the type.
    ordered = [gpu_az] + [az for az in offering if az != gpu_az] + [az for az in region_azs if az not in offering]
    count = max(EKS_MIN_AZS, min(cfg.max_azs, len(offering)))
    if len(ordered) < count:
        raise ConfigError([f"aws:region={cfg.region!r} has fewer than {EKS_MIN_AZS} Availability Zones; EKS needs two"])
    return Placement(gpu_az=gpu_az, azs=tuple(ordered[:count]))


def discover_placement(cfg: StackConfig) -> Placement:
    """Asks EC2 which AZs exist and which offer the GPU type, as the sample's scripts did."""
    zones = aws.get_availability_zones(
        state="available", filters=[aws.GetAvailabilityZonesFilterArgs(name="zone-type", values=["availability-zone"])]
    )
    offerings = aws.ec2.get_instance_type_offerings(
        location_type="availability-zone",
        filters=[aws.ec2.GetInstanceTypeOfferingsFilterArgs(name="instance-type", values=[cfg.gpu_node_type])],
    )
    return choose_placement(cfg, list(zones.names), list(offerings.locations))


@dataclass(frozen=True)
class SubnetPlan:
    az: str
    private_cidr: str
    public_cidr: str


def plan_subnets(vpc_cidr: str, azs: tuple[str, ...]) -> list[SubnetPlan]:
    vpc = ipaddress.IPv4Network(vpc_cidr)
    blocks = list(vpc.subnets(prefixlen_diff=PRIVATE_PREFIX_DELTA))
    public_blocks = list(blocks[-1].subnets(prefixlen_diff=PUBLIC_PREFIX_DELTA - PRIVATE_PREFIX_DELTA))
    if len(azs) > len(blocks) - 1:
        raise ConfigError([f"maxAzs={len(azs)} is invalid: vpcCidr={vpc_cidr} has room for {len(blocks) - 1} AZs"])
    return [SubnetPlan(az, str(blocks[i]), str(public_blocks[i])) for i, az in enumerate(azs)]


@dataclass(frozen=True)
class NetworkArgs:
    """What the VPC is made of; `cluster_name` names it and tags its subnets for that cluster."""

    cluster_name: str
    vpc_cidr: str
    azs: tuple[str, ...]  # the GPU AZ first (Placement.azs)
    nat_gateway_per_az: bool = False
    protect: bool = False
    tags: Mapping[str, str] = field(default_factory=dict)
    # The region, for its S3 gateway endpoint's service name; empty makes none.
    region: str = ""


class Network(pulumi.ComponentResource):
    vpc_id: pulumi.Output[str]
    private_subnet_ids: dict[str, pulumi.Output[str]]
    public_subnet_ids: dict[str, pulumi.Output[str]]
    # Per AZ: the private route table (its NAT default route is inline) and its subnet association.
    # A node launched before both exist has no egress: it cannot pull images or join the cluster.
    private_egress: dict[str, list[pulumi.Resource]]
    # The internet gateway, the public route table and its associations. Load balancers the cluster
    # creates in the public subnets need them, and hold public addresses that stop the gateway from
    # being detached until they are gone.
    internet_path: list[pulumi.Resource]

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("ray-llm-eks:network:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        vpc = aws.ec2.Vpc(
            "vpc",
            cidr_block=args.vpc_cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={**args.tags, "Name": f"{args.cluster_name}-vpc"},
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        gateway = aws.ec2.InternetGateway(
            "internet-gateway", vpc_id=vpc.id, tags={**args.tags, "Name": f"{args.cluster_name}-igw"}, opts=child
        )
        public_routes = aws.ec2.RouteTable(
            "public-routes",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=gateway.id)],
            tags={**args.tags, "Name": f"{args.cluster_name}-public"},
            opts=child,
        )

        self.public_subnet_ids = {}
        self.private_subnet_ids = {}
        self.private_egress = {}
        self.internet_path = [gateway, public_routes]
        nat_gateway_ids: dict[str, pulumi.Output[str]] = {}
        subnet_plans = plan_subnets(args.vpc_cidr, args.azs)
        for plan in subnet_plans:
            public = self._subnet(args, vpc.id, plan.az, "public", plan.public_cidr, "kubernetes.io/role/elb", child)
            self.internet_path.append(
                aws.ec2.RouteTableAssociation(
                    f"public-{plan.az}", subnet_id=public.id, route_table_id=public_routes.id, opts=child
                )
            )
            self.public_subnet_ids[plan.az] = public.id
            if args.nat_gateway_per_az or not nat_gateway_ids:
                nat_gateway_ids[plan.az] = self._nat_gateway(args, plan.az, public, gateway, child)

        for plan in subnet_plans:
            private = self._subnet(
                args, vpc.id, plan.az, "private", plan.private_cidr, "kubernetes.io/role/internal-elb", child
            )
            nat_id = nat_gateway_ids.get(plan.az, next(iter(nat_gateway_ids.values())))
            routes = aws.ec2.RouteTable(
                f"private-routes-{plan.az}",
                vpc_id=vpc.id,
                routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat_id)],
                tags={**args.tags, "Name": f"{args.cluster_name}-private-{plan.az}"},
                opts=child,
            )
            association = aws.ec2.RouteTableAssociation(
                f"private-{plan.az}", subnet_id=private.id, route_table_id=routes.id, opts=child
            )
            self.private_subnet_ids[plan.az] = private.id
            self.private_egress[plan.az] = [routes, association]

        if args.region:
            # S3 from the private subnets without the NAT gateway (no per-GB processing charge): a gateway
            # endpoint puts the region's S3 prefix list on the private route tables
            # (https://docs.aws.amazon.com/vpc/latest/privatelink/vpc-endpoints-s3.html). The model cache's weights
            # (infra/model_cache.py) come this way, and so do the DLC image's layers, which ECR serves from S3
            # (https://docs.aws.amazon.com/AmazonECR/latest/userguide/vpc-endpoints.html, "Create the Amazon S3
            # gateway endpoint").
            aws.ec2.VpcEndpoint(
                "s3",
                vpc_id=vpc.id,
                service_name=f"com.amazonaws.{args.region}.s3",
                vpc_endpoint_type="Gateway",
                route_table_ids=[egress[0].id for egress in self.private_egress.values()],
                tags={**args.tags, "Name": f"{args.cluster_name}-s3"},
                opts=child,
            )
        self.vpc_id = vpc.id
        self.register_outputs({"vpcId": vpc.id})

    def _subnet(
        self,
        args: NetworkArgs,
        vpc_id: pulumi.Output[str],
        az: str,
        tier: str,
        cidr: str,
        load_balancer_role_tag: str,
        child: pulumi.ResourceOptions,
    ) -> aws.ec2.Subnet:
        """A subnet of one tier in one AZ, tagged so EKS and its load balancers find it."""
        return aws.ec2.Subnet(
            f"{tier}-{az}",
            vpc_id=vpc_id,
            cidr_block=cidr,
            availability_zone=az,
            map_public_ip_on_launch=False,
            tags={
                **args.tags,
                f"kubernetes.io/cluster/{args.cluster_name}": "shared",
                "Name": f"{args.cluster_name}-{tier}-{az}",
                load_balancer_role_tag: "1",
            },
            opts=child,
        )

    def _nat_gateway(
        self,
        args: NetworkArgs,
        az: str,
        public_subnet: aws.ec2.Subnet,
        gateway: aws.ec2.InternetGateway,
        child: pulumi.ResourceOptions,
    ) -> pulumi.Output[str]:
        address = aws.ec2.Eip(
            f"nat-{az}", domain="vpc", tags={**args.tags, "Name": f"{args.cluster_name}-nat-{az}"}, opts=child
        )
        nat = aws.ec2.NatGateway(
            f"nat-{az}",
            subnet_id=public_subnet.id,
            allocation_id=address.id,
            tags={**args.tags, "Name": f"{args.cluster_name}-nat-{az}"},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[gateway]),
        )
        return nat.id
