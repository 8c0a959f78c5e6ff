"""One preflight makes every deploy-time lookup and reports all that they found together, before any resource."""

from __future__ import annotations

import pulumi
import pytest

from infra.preflight.checks import PreflightError
from tests.conftest import rejection
from tools import offline_aws
from tools.offline import run_stack
from tools.offline_aws import AwsMocks

# Each value passes load_config (well-formed, known nowhere yet) and only an AWS answer refuses it: the offline
# runner's EC2 offers g6.8xlarge in sa-east-1a and sa-east-1b, its EKS offers no 1.99, and no m7i.huge exists.
NEEDS_A_LOOKUP = {"gpuAz": "sa-east-1c", "kubernetesVersion": "1.99", "systemNodeType": "m7i.huge"}


@pytest.mark.parametrize("preview", [False, True])
def test_three_values_that_need_lookups_are_refused_in_one_report(preview):
    error = rejection(NEEDS_A_LOOKUP, preview=preview)
    assert isinstance(error, PreflightError)
    assert [problem.split("=")[0] for problem in error.problems] == ["gpuAz", "kubernetesVersion", "systemNodeType"]
    message = str(error)
    assert "gpuAz='sa-east-1c' does not offer g6.8xlarge: allowed is one of sa-east-1a, sa-east-1b" in message
    assert "kubernetesVersion='1.99' is not offered by EKS in sa-east-1" in message
    assert "systemNodeType='m7i.huge' is not an EC2 instance type offered in sa-east-1" in message


def test_a_short_quota_and_a_missing_model_join_the_same_report():
    with pytest.raises(PreflightError) as refused:
        run_stack({**NEEDS_A_LOOKUP, "modelSource": "Qwen/Qwen3.5-9B-typo"}, vcpu_quota=32.0)
    message = str(refused.value)
    assert "EC2 quota L-DB2E81BA (Running On-Demand G and VT instances) in sa-east-1 is 32 vCPUs" in message
    assert "modelSource='Qwen/Qwen3.5-9B-typo'" in message
    assert len(refused.value.problems) == 5
    assert refused.value.declared_resources == []


def test_a_lookup_aws_refuses_outright_keeps_the_problems_found_before_it(monkeypatch):
    """A refused invoke raises a plain Exception("invoke of <token> failed: ...") in the program, whether the provider
    answered an RPC error or failures (pulumi/runtime/invoke.py); the mock answers failures. The quota lookup runs
    after the placement, whose problem must still be reported."""

    def access_denied(self, args):
        if args.token == "aws:servicequotas/getServiceQuota:getServiceQuota":
            return {}, [("quotaCode", "AccessDeniedException: not authorized to perform servicequotas:GetServiceQuota")]
        return answer(self, args)

    answer = AwsMocks.call
    monkeypatch.setattr(AwsMocks, "call", access_denied)
    with pytest.raises(PreflightError) as refused:
        run_stack({"gpuAz": NEEDS_A_LOOKUP["gpuAz"]})
    problems = refused.value.problems
    assert problems[0].startswith("gpuAz='sa-east-1c' does not offer g6.8xlarge")
    assert problems[-1].startswith("check_gpu_vcpu_quota: invoke of aws:servicequotas/getServiceQuota")
    assert "not authorized to perform servicequotas:GetServiceQuota" in problems[-1]


# The offline account's Capacity Block (tools/offline_aws.py CAPACITY_BLOCKS): two p5.48xlarge in sa-east-1a, active.
CAPACITY_BLOCK = {
    "gpuCapacityType": "capacity-block",
    "capacityReservationId": "cr-02168da1478b509e0",
    "gpuAz": "sa-east-1a",
    "gpuNodeType": "p5.48xlarge",
}
LOOKED_UP = "EC2 DescribeCapacityReservations answered"


def test_a_capacity_block_ec2_does_not_know_is_refused_saying_a_lookup_decided():
    """DescribeCapacityReservations answers InvalidCapacityReservationId.NotFound for an id it does not know, which
    terraform-provider-aws's `findCapacityReservations` (internal/service/ec2) turns into a failed read of
    `aws_ec2_capacity_block_reservation`, pulumi-aws's getCapacityBlockReservation."""
    error = rejection({**CAPACITY_BLOCK, "capacityReservationId": "cr-0aaaaaaaaaaaaaaaa"})
    assert isinstance(error, PreflightError)
    (problem,) = error.problems
    assert problem.startswith(
        f"capacityReservationId='cr-0aaaaaaaaaaaaaaaa' is invalid: {LOOKED_UP} InvalidCapacityReservationId.NotFound "
        "in sa-east-1"
    )


def test_a_capacity_block_of_another_type_and_zone_is_refused_naming_what_ec2_answered():
    """A Capacity Block reserves one instance type in one Availability Zone
    (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html): the nodes of another launch into
    nothing."""
    problems = rejection({**CAPACITY_BLOCK, "gpuNodeType": "g6.8xlarge", "gpuAz": "sa-east-1b"}).problems
    assert problems == [
        f"capacityReservationId='cr-02168da1478b509e0' is invalid with gpuNodeType='g6.8xlarge': {LOOKED_UP} that it "
        "reserves p5.48xlarge; allowed is gpuNodeType='p5.48xlarge', or a block of g6.8xlarge",
        f"capacityReservationId='cr-02168da1478b509e0' is invalid with gpuAz='sa-east-1b': {LOOKED_UP} that it is in "
        "sa-east-1a; allowed is gpuAz='sa-east-1a'",
    ]


def test_a_capacity_block_smaller_than_the_gpu_nodes_is_refused():
    """Three engines of eight GPUs need three p5.48xlarge; the block holds two (its TotalInstanceCount, the data
    source's `instance_count`)."""
    overrides = {**CAPACITY_BLOCK, "tensorParallelSize": 8, "prefillReplicas": 2, "decodeReplicas": 1}
    (problem,) = rejection(overrides).problems
    assert problem.startswith(
        f"capacityReservationId='cr-02168da1478b509e0' is invalid with these replicas: {LOOKED_UP} that it holds 2 "
        "instance(s), and the GPU nodes need up to 3"
    )


def test_a_capacity_block_that_has_ended_is_refused(monkeypatch):
    """CapacityReservation.State (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityReservation.html):
    no instance launches into an expired block."""
    monkeypatch.setitem(offline_aws.CAPACITY_BLOCKS, "cr-0bbbbbbbbbbbbbbbb", ("p5.48xlarge", "a", 2, "expired"))
    (problem,) = rejection({**CAPACITY_BLOCK, "capacityReservationId": "cr-0bbbbbbbbbbbbbbbb"}).problems
    assert problem.startswith(
        f"capacityReservationId='cr-0bbbbbbbbbbbbbbbb' is invalid: {LOOKED_UP} that its state is 'expired'"
    )


def test_an_on_demand_reservation_is_not_looked_up_and_the_preview_says_so(monkeypatch):
    """pulumi-aws 7.51.1 has no invoke for an On-Demand Capacity Reservation (pulumi_aws/ec2 holds
    get_capacity_block_reservation only), so nothing is asked and a warning says what EC2 checks only at launch."""
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warned.append(message))
    run_stack({"capacityReservationId": "cr-0123456789abcdef0"})
    (warning,) = [w for w in warned if w.startswith("capacityReservationId=")]
    assert "is not looked up before deploying (pulumi-aws has no invoke for On-Demand Capacity Reservations)" in warning
