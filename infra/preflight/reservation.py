"""The Capacity Block the GPU nodes launch into, as EC2 describes it, checked before any resource is declared.

A block of another type or zone, too small or ended, fails only when the nodes do not launch; an On-Demand Capacity
Reservation has no invoke in pulumi-aws 7.51.1 and is not looked up (docs/scaling.md#reserved-capacity)."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from infra.settings.stack_config import ConfigError, StackConfig

# EC2's error code for a reservation id it does not know (DescribeCapacityReservations).
NOT_FOUND = "InvalidCapacityReservationId.NotFound"
# CapacityReservationState values a node group can launch into now or once the block starts: an active block, or
# one paid for and waiting for its start date (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/
# API_CapacityReservation.html, State).
USABLE_STATES = ("active", "scheduled")
LOOKED_UP = "EC2 DescribeCapacityReservations answered"


def check_capacity_reservation(cfg: StackConfig) -> None:
    """Raises ConfigError naming each way the Capacity Block does not fit the GPU nodes; warns that an On-Demand
    reservation is not looked up."""
    reservation_id = cfg.capacity_reservation_id
    if reservation_id is None:
        return
    if cfg.gpu_capacity_type != "capacity-block":
        pulumi.log.warn(
            f"capacityReservationId={reservation_id!r} is not looked up before deploying (pulumi-aws has no invoke for "
            "On-Demand Capacity Reservations): its instance type, Availability Zone, free instances and state are "
            f"checked by EC2 only when the GPU nodes launch (aws ec2 describe-capacity-reservations "
            f"--capacity-reservation-ids {reservation_id})"
        )
        return
    try:
        block = aws.ec2.get_capacity_block_reservation(id=reservation_id)
    except Exception as error:  # the provider turns EC2's refusal into a failed invoke; only not-found is expected
        if NOT_FOUND not in str(error):
            raise
        raise ConfigError(
            [
                f"capacityReservationId={reservation_id!r} is invalid: {LOOKED_UP} {NOT_FOUND} in {cfg.region}; "
                "allowed is the cr-... id of a Capacity Block this account holds in the stack's region "
                "(aws ec2 describe-capacity-reservations --filters Name=reservation-type,Values=capacity-block)"
            ]
        ) from error
    problems = capacity_block_problems(cfg, block)
    if problems:
        raise ConfigError(problems)


def capacity_block_problems(cfg: StackConfig, block: aws.ec2.GetCapacityBlockReservationResult) -> list[str]:
    """Each way EC2's description of the block does not fit the GPU nodes at their most."""
    key = f"capacityReservationId={cfg.capacity_reservation_id!r}"
    problems = []
    if block.instance_type != cfg.gpu_node_type:
        problems.append(
            f"{key} is invalid with gpuNodeType={cfg.gpu_node_type!r}: {LOOKED_UP} that it reserves "
            f"{block.instance_type}; allowed is gpuNodeType={block.instance_type!r}, or a block of {cfg.gpu_node_type}"
        )
    if block.availability_zone != cfg.gpu_az:
        problems.append(
            f"{key} is invalid with gpuAz={cfg.gpu_az or ''!r}: {LOOKED_UP} that it is in {block.availability_zone}; "
            f"allowed is gpuAz={block.availability_zone!r}"
        )
    if block.instance_count < cfg.gpu_node_group_max:
        problems.append(
            f"{key} is invalid with these replicas: {LOOKED_UP} that it holds {block.instance_count} instance(s), "
            f"and the GPU nodes need up to {cfg.gpu_node_group_max}; allowed is a block of at least "
            f"{cfg.gpu_node_group_max}, or fewer prefillReplicas/decodeReplicas"
        )
    if block.state not in USABLE_STATES:
        problems.append(
            f"{key} is invalid: {LOOKED_UP} that its state is {block.state!r}, and no instance launches into it; "
            f"allowed is a block whose state is {' or '.join(USABLE_STATES)}"
        )
    return problems
