"""The VPC: public subnets for NAT and load balancers, private subnets for every node.

Subnets go only where the GPU instance type is offered (infra.network.placement), so the GPU node group always has
a usable subnet; infra.network.subnets cuts the VPC's block.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
from pulumi.errors import InputPropertyErrorDetails

from infra.components import Children, problem, raise_input_errors
from infra.network.subnets import SubnetPlan, plan_subnets, subnet_blocks
from infra.settings.kinds import EKS_MIN_AZS, MAX_VPC_PREFIX, MIN_VPC_PREFIX
from infra.settings.rules_network import vpc_block_reason

# The tag by which EKS's load balancers find a tier's subnets: internet-facing ones public, internal ones private.
LOAD_BALANCER_ROLE_TAGS = {"public": "kubernetes.io/role/elb", "private": "kubernetes.io/role/internal-elb"}


@dataclass(frozen=True)
class NetworkArgs:
    """What the VPC is made of."""

    # The EKS cluster the VPC is for: it names the VPC and its parts, and tags the subnets
    # `kubernetes.io/cluster/<name>: shared`, so that cluster's load balancers find them.
    cluster_name: str
    # The VPC's IPv4 block, e.g. 10.0.0.0/16: a private /19-equivalent per AZ, the last one cut into public subnets.
    vpc_cidr: str
    # The Availability Zones to span, the GPU AZ first (Placement.azs): one private and one public subnet in each.
    azs: tuple[str, ...]
    nat_gateway_per_az: bool = False  # one NAT gateway per AZ, rather than one for all (cheaper, one AZ's fate)
    protect: bool = False  # Pulumi's `protect` on the VPC, so `pulumi destroy` refuses until it is lifted
    tags: Mapping[str, str] = field(default_factory=dict)  # on every resource of the network
    # The VPC's region, which names its S3 gateway endpoint's service (com.amazonaws.<region>.s3); empty makes none.
    region: str = ""


def network_args_errors(args: NetworkArgs) -> list[InputPropertyErrorDetails]:
    """What the subnet plan needs: a VPC block it can cut, and two AZs (EKS's least) up to its room."""
    errors: list[InputPropertyErrorDetails] = []
    block = vpc_block_reason(args.vpc_cidr)
    if block:
        allowed = f"allowed is a /{MIN_VPC_PREFIX} to /{MAX_VPC_PREFIX} block"
        errors.append(problem("vpc_cidr", f"{args.vpc_cidr!r} is invalid: {block}; {allowed}"))
    if len(set(args.azs)) != len(args.azs):
        errors.append(problem("azs", f"{list(args.azs)} names an Availability Zone twice"))
    room = len(subnet_blocks(args.vpc_cidr)) - 1 if block is None else None
    if len(args.azs) < EKS_MIN_AZS:
        errors.append(problem("azs", f"{len(args.azs)} Availability Zone(s): EKS needs two"))
    elif room is not None and len(args.azs) > room:
        errors.append(
            problem("azs", f"{len(args.azs)} Availability Zones: vpc_cidr={args.vpc_cidr} has room for {room}")
        )
    return errors


class Network(pulumi.ComponentResource):
    """A VPC with a private and a public subnet in each of `args.azs`, NAT egress and an internet gateway.

    The subnet ids it exposes resolve only once their routes exist, so what is given them waits for egress and the
    internet path; `private_subnets_unrouted` is for the EKS control plane's interfaces, which need no egress
    (docs/architecture.md#reusing-the-components-in-a-stack-of-your-own)."""

    vpc_id: pulumi.Output[str]
    private_subnet_ids: dict[str, pulumi.Output[str]]  # by AZ, each once its NAT route is associated
    private_subnets_unrouted: dict[str, pulumi.Output[str]]  # by AZ, each as soon as the subnet exists
    public_subnet_ids: dict[str, pulumi.Output[str]]  # by AZ, each once its internet route is associated

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        raise_input_errors("Network", network_args_errors(args))
        super().__init__("ray-llm-eks:network:Network", name, None, opts)
        self._children = children = Children(self, name)

        vpc = aws.ec2.Vpc(
            children.name("vpc"),
            cidr_block=args.vpc_cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={**args.tags, "Name": f"{args.cluster_name}-vpc"},
            opts=children.opts(protect=args.protect),
        )
        gateway = aws.ec2.InternetGateway(
            children.name("internet-gateway"),
            vpc_id=vpc.id,
            tags={**args.tags, "Name": f"{args.cluster_name}-igw"},
            opts=children.opts(),
        )
        plans = plan_subnets(args.vpc_cidr, args.azs)
        nat_gateway_ids = self._public_subnets(args, vpc, gateway, plans)
        private_route_tables = self._private_subnets(args, vpc, nat_gateway_ids, plans)
        if args.region:
            # The weights and the DLC image's layers reach the private subnets from S3 without the NAT gateway's per-GB
            # charge; the inline routes and the endpoint's do not undo each other
            # (docs/model-cache.md#model-cache-and-cold-start).
            aws.ec2.VpcEndpoint(
                children.name("s3"),
                vpc_id=vpc.id,
                service_name=f"com.amazonaws.{args.region}.s3",
                vpc_endpoint_type="Gateway",
                route_table_ids=[routes.id for routes in private_route_tables],
                tags={**args.tags, "Name": f"{args.cluster_name}-s3"},
                opts=children.opts(),
            )
        self.vpc_id = vpc.id
        self.register_outputs({"vpcId": vpc.id})

    def _public_subnets(
        self, args: NetworkArgs, vpc: aws.ec2.Vpc, gateway: aws.ec2.InternetGateway, plans: list[SubnetPlan]
    ) -> dict[str, pulumi.Output[str]]:
        """A public subnet per AZ on the internet gateway's route table; returns the NAT gateway ids by AZ (one in
        the first AZ, or one in each)."""
        children = self._children
        public_routes = aws.ec2.RouteTable(
            children.name("public-routes"),
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=gateway.id)],
            tags={**args.tags, "Name": f"{args.cluster_name}-public"},
            opts=children.opts(),
        )
        self.public_subnet_ids = {}
        nat_gateway_ids: dict[str, pulumi.Output[str]] = {}
        for plan in plans:
            public = self._subnet(args, vpc.id, plan.az, "public", plan.public_cidr)
            self.public_subnet_ids[plan.az] = self._routed(public, f"public-{plan.az}", public_routes, gateway)
            if args.nat_gateway_per_az or not nat_gateway_ids:
                nat_gateway_ids[plan.az] = self._nat_gateway(args, plan.az, public, gateway)
        return nat_gateway_ids

    def _private_subnets(
        self,
        args: NetworkArgs,
        vpc: aws.ec2.Vpc,
        nat_gateway_ids: Mapping[str, pulumi.Output[str]],
        plans: list[SubnetPlan],
    ) -> list[aws.ec2.RouteTable]:
        """A private subnet per AZ, each with a route table to its AZ's NAT gateway (or the one there is)."""
        children = self._children
        self.private_subnet_ids = {}
        self.private_subnets_unrouted = {}
        private_route_tables: list[aws.ec2.RouteTable] = []
        for plan in plans:
            private = self._subnet(args, vpc.id, plan.az, "private", plan.private_cidr)
            nat_id = nat_gateway_ids.get(plan.az, next(iter(nat_gateway_ids.values())))
            routes = aws.ec2.RouteTable(
                children.name(f"private-routes-{plan.az}"),
                vpc_id=vpc.id,
                routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat_id)],
                tags={**args.tags, "Name": f"{args.cluster_name}-private-{plan.az}"},
                opts=children.opts(),
            )
            self.private_subnet_ids[plan.az] = self._routed(private, f"private-{plan.az}", routes)
            self.private_subnets_unrouted[plan.az] = private.id
            private_route_tables.append(routes)
        return private_route_tables

    def _subnet(self, args: NetworkArgs, vpc_id: pulumi.Output[str], az: str, tier: str, cidr: str) -> aws.ec2.Subnet:
        """A subnet of one tier in one AZ, tagged so EKS and its load balancers find it."""
        return aws.ec2.Subnet(
            self._children.name(f"{tier}-{az}"),
            vpc_id=vpc_id,
            cidr_block=cidr,
            availability_zone=az,
            map_public_ip_on_launch=False,
            tags={
                **args.tags,
                f"kubernetes.io/cluster/{args.cluster_name}": "shared",
                "Name": f"{args.cluster_name}-{tier}-{az}",
                LOAD_BALANCER_ROLE_TAGS[tier]: "1",
            },
            opts=self._children.opts(),
        )

    def _routed(
        self, subnet: aws.ec2.Subnet, role: str, routes: aws.ec2.RouteTable, *routing: pulumi.CustomResource
    ) -> pulumi.Output[str]:
        """The subnet associated with `routes`; its id carries what routes it (`routing`, the table, the association):
        a resource given it depends on them too."""
        association = aws.ec2.RouteTableAssociation(
            self._children.name(role), subnet_id=subnet.id, route_table_id=routes.id, opts=self._children.opts()
        )
        ids = (resource.id for resource in (*routing, routes, association))
        return pulumi.Output.all(subnet.id, *ids).apply(lambda found: found[0])

    def _nat_gateway(
        self, args: NetworkArgs, az: str, public_subnet: aws.ec2.Subnet, gateway: aws.ec2.InternetGateway
    ) -> pulumi.Output[str]:
        name, tags = self._children.name(f"nat-{az}"), {**args.tags, "Name": f"{args.cluster_name}-nat-{az}"}
        address = aws.ec2.Eip(name, domain="vpc", tags=tags, opts=self._children.opts())
        nat = aws.ec2.NatGateway(
            name,
            subnet_id=public_subnet.id,
            allocation_id=address.id,
            tags=tags,
            opts=self._children.opts(depends_on=[gateway]),
        )
        return nat.id
