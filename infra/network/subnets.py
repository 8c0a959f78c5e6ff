"""The subnet plan: how a VPC's block is cut into a private and a public subnet per Availability Zone (plain
arithmetic, as awsx keeps its subnet distributor apart from the resources)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

# Private subnets get /19s of a /16 (8 k addresses each: the VPC CNI gives every pod a VPC IP); the last of those
# blocks is cut into small public subnets that only hold NAT gateways and NLBs. The deltas live with the settings they
# bound (vpcCidr, maxAzs).
from infra.settings.kinds import PRIVATE_PREFIX_DELTA, PUBLIC_PREFIX_DELTA


@dataclass(frozen=True)
class SubnetPlan:
    az: str
    private_cidr: str
    public_cidr: str


def subnet_blocks(vpc_cidr: str) -> list[ipaddress.IPv4Network]:
    """The private /19s (of a /16) the VPC is cut into; the last is cut again into the public subnets."""
    return list(ipaddress.IPv4Network(vpc_cidr).subnets(prefixlen_diff=PRIVATE_PREFIX_DELTA))


def plan_subnets(vpc_cidr: str, azs: tuple[str, ...]) -> list[SubnetPlan]:
    blocks = subnet_blocks(vpc_cidr)
    public_blocks = list(blocks[-1].subnets(prefixlen_diff=PUBLIC_PREFIX_DELTA - PRIVATE_PREFIX_DELTA))
    return [SubnetPlan(az, str(blocks[i]), str(public_blocks[i])) for i, az in enumerate(azs)]
