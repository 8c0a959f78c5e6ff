"""Where the network goes: the GPU AZ and the cluster's AZs, chosen from EC2's instance-type offerings before
anything is declared (`discover_placement` asks EC2; `choose_placement` decides)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi_aws as aws

from infra.settings.kinds import EKS_MIN_AZS
from infra.settings.stack_config import ConfigError, StackConfig


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
