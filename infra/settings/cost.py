"""What the stack costs: its parts' On-Demand prices by region, the hourly and monthly cost by part, and the cost per
million output tokens at the measured capacity, said in the preview (`cost_note`). Every price is estimated, and a
region the table lacks gets no figure (docs/cost.md#the-price-table, docs/cost.md#the-live-price)."""

from __future__ import annotations

from dataclasses import dataclass

from infra.settings.autoscaling import L4_DECODE_SLOWDOWN

PRICES_READ = "2026-12-07"
HOURS_PER_MONTH = 730  # AWS's own monthly convention (the AWS Pricing Calculator's 730 hours)
PRICED_REGIONS = ("us-east-1", "us-west-2")
# Hourly On-Demand price by type, alike in the priced regions (estimated, https://aws.amazon.com/ec2/pricing/on-demand/)
INSTANCE_HOURLY = {"g6.8xlarge": 2.0144, "g6.12xlarge": 4.6016, "m7i.xlarge": 0.2016, "m7i.2xlarge": 0.4032}
EKS_CLUSTER_HOURLY = 0.10  # standard support, 0.60 in extended support (https://aws.amazon.com/eks/pricing/)
NAT_GATEWAY_HOURLY = 0.045  # per gateway, plus 0.045 per GB not counted here (https://aws.amazon.com/vpc/pricing/)
# ElastiCache for Valkey, per node (https://aws.amazon.com/elasticache/pricing/); the store is a primary and a replica.
VALKEY_NODE_HOURLY = {"cache.t4g.micro": 0.0128, "cache.t4g.small": 0.0256, "cache.m7g.large": 0.1264}
# Measured on an H200 held to an L4's memory (lab/records/bench/2026-11-30/pd-c16.json); an L4 pair makes about an
# eleventh of it (estimated: docs/cost.md#a-million-output-tokens).
MEASURED_PAIR_OUTPUT_TOKENS_S = 1434.01
L4_PAIR_OUTPUT_TOKENS_S = MEASURED_PAIR_OUTPUT_TOKENS_S / L4_DECODE_SLOWDOWN


@dataclass(frozen=True)
class Part:
    name: str
    count: int
    unit_hourly: float | None  # None: no price for this region or type in the table

    @property
    def hourly(self) -> float | None:
        return None if self.unit_hourly is None else self.count * self.unit_hourly


@dataclass(frozen=True)
class StackCost:
    region: str
    parts: tuple[Part, ...]

    @property
    def unpriced(self) -> tuple[str, ...]:
        return tuple(part.name for part in self.parts if part.hourly is None and part.count)

    @property
    def hourly(self) -> float:
        """The priced parts' sum; `unpriced` says what it leaves out."""
        return sum(part.hourly or 0.0 for part in self.parts)

    @property
    def monthly(self) -> float:
        return self.hourly * HOURS_PER_MONTH


def unit_price(table: dict[str, float], region: str, kind: str) -> float | None:
    return table.get(kind) if region in PRICED_REGIONS else None


def stack_cost(
    region: str,
    gpu: tuple[str, int],
    system: tuple[str, int],
    nat_gateways: int,
    cache_node: tuple[str, int],
) -> StackCost:
    """The stack's parts at their counts: (instance type, nodes) of GPU and system nodes, the NAT gateways, (node type,
    nodes) of the head's store (0 nodes without one)."""
    flat = {"eks": EKS_CLUSTER_HOURLY, "nat": NAT_GATEWAY_HOURLY}
    return StackCost(
        region,
        (
            Part(f"GPU nodes ({gpu[0]})", gpu[1], unit_price(INSTANCE_HOURLY, region, gpu[0])),
            Part(f"system nodes ({system[0]})", system[1], unit_price(INSTANCE_HOURLY, region, system[0])),
            Part("EKS control plane", 1, unit_price(flat, region, "eks")),
            Part("NAT gateways", nat_gateways, unit_price(flat, region, "nat")),
            Part(f"GCS store ({cache_node[0]})", cache_node[1], unit_price(VALKEY_NODE_HOURLY, region, cache_node[0])),
        ),
    )


def cost_per_million_output_tokens(hourly: float, decode_replicas: int) -> float:
    """At the measured capacity: each decode replica with its prefill partner makes L4_PAIR_OUTPUT_TOKENS_S."""
    tokens_per_hour = decode_replicas * L4_PAIR_OUTPUT_TOKENS_S * 3600
    return hourly / tokens_per_hour * 1_000_000


def stack_cost_note(cost: StackCost, most: StackCost | None, decode_replicas: int) -> str:
    """What `pulumi preview` says of the cost: by part, the hour and the month, the most with autoscaling, and the
    cost per million output tokens."""
    if not cost.hourly:
        return (
            f"Cost: no table price for {cost.region} (priced: {', '.join(PRICED_REGIONS)}; docs/cost.md): see the AWS "
            "Pricing Calculator for this region"
        )
    parts = "; ".join(
        f"{part.name} {part.count} x ${part.unit_hourly:.4f}" for part in cost.parts if part.count and part.unit_hourly
    )
    unpriced = f"; not in the table: {', '.join(cost.unpriced)}" if cost.unpriced else ""
    ceiling = f"; up to ${most.hourly:.2f}/h at serveAutoscaling's most replicas" if most else ""
    per_million = cost_per_million_output_tokens(cost.hourly, decode_replicas)
    return (
        f"Cost, On-Demand in {cost.region} (prices of {PRICES_READ}, estimated: docs/cost.md): ${cost.hourly:.2f}/h, "
        f"${cost.monthly:,.0f}/month ({parts}{unpriced}){ceiling}; ${per_million:.2f} per million output tokens at the "
        f"measured capacity ({L4_PAIR_OUTPUT_TOKENS_S:.0f} output tokens/s per decode replica on an L4, estimated "
        "from lab/records/bench/2026-11-30/pd-c16.json); load balancer, volumes and data transfer not counted"
    )
