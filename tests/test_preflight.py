"""One preflight makes every deploy-time lookup and reports all that they found together, before any resource."""

from __future__ import annotations

import pytest

from infra.preflight.checks import PreflightError
from tests.conftest import rejection
from tools.offline import AwsMocks, run_stack

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
