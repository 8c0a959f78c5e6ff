"""Quota preflight: the GPU family's On-Demand vCPU quota must hold the GPU nodes, before anything is declared."""

from __future__ import annotations

import pytest

from infra.nodes.node_groups import GPU_UPDATE_STRATEGY
from infra.preflight.checks import PreflightError
from infra.preflight.quota import gpu_vcpu_need
from tools.offline import load_stack_config, run_stack
from tools.project import PROJECT_DIR

P5_TP8 = {"gpuNodeType": "p5.48xlarge", "tensorParallelSize": 8}


@pytest.mark.parametrize(
    ("overrides", "code", "vcpus"),
    [
        ({}, "L-DB2E81BA", 2 * 32),
        ({"gpuNodeType": "g6.12xlarge", "decodeReplicas": 3, "tensorParallelSize": 2}, "L-DB2E81BA", 2 * 48),
        (P5_TP8, "L-417A185B", 2 * 192),
    ],
)
def test_need_is_the_gpu_nodes_vcpus_under_their_familys_quota(overrides, code, vcpus):
    """EC2 counts running On-Demand instances in vCPUs per family group: G and VT under L-DB2E81BA,
    P under L-417A185B (https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html)."""
    need = gpu_vcpu_need(load_stack_config(overrides))
    assert (need.quota_code, need.vcpus) == (code, vcpus)


def test_a_quota_that_holds_the_nodes_passes():
    assert run_stack(vcpu_quota=64.0).outputs["clusterName"]


@pytest.mark.parametrize("preview", [False, True])
def test_a_short_quota_fails_naming_code_need_and_value_before_any_resource(preview):
    with pytest.raises(PreflightError) as refused:
        run_stack(vcpu_quota=32.0, preview=preview)
    message = str(refused.value)
    assert "L-DB2E81BA (Running On-Demand G and VT instances)" in message
    assert "is 32 vCPUs" in message
    assert "need 64 (2 x g6.8xlarge of 32 vCPUs)" in message
    assert "quotaPreflight" in message
    assert refused.value.declared_resources == []


def test_p_family_is_checked_against_the_p_quota():
    with pytest.raises(PreflightError) as refused:
        run_stack(P5_TP8, vcpu_quota=192.0)
    assert "L-417A185B (Running On-Demand P instances)" in str(refused.value)
    assert "need 384" in str(refused.value)


def test_a_capacity_block_is_still_checked():
    """Kept conservative: AWS's Capacity Blocks pages do not say whether instances running in a block count
    against the Running On-Demand vCPU quota. Read: the EC2 user guide's
    https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html,
    https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html (its only limits:
    64 instances per block, 256 across blocks) and
    https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html, and EKS's
    https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html. docs/scaling.md (Capacity
    preflight) says so; quotaPreflight: false skips the check."""
    capacity_block = {
        **P5_TP8,
        "gpuCapacityType": "capacity-block",
        "capacityReservationId": "cr-02168da1478b509e0",
        "aws:region": "us-east-1",
        "gpuAz": "us-east-1a",
    }
    with pytest.raises(PreflightError) as refused:
        run_stack(capacity_block, vcpu_quota=192.0)
    assert "L-417A185B (Running On-Demand P instances)" in str(refused.value)


def test_the_switch_skips_the_check():
    assert run_stack({"quotaPreflight": False}, vcpu_quota=0.0).outputs["clusterName"]


def test_the_lookup_doc_names_both_service_quotas_actions():
    """pulumi-aws's getServiceQuota is terraform-provider-aws's `aws_servicequotas_service_quota` data source
    (internal/service/servicequotas/service_quota_data_source.go, dataSourceServiceQuotaRead): it calls
    GetAWSDefaultServiceQuota first (find.go findServiceQuotaDefaultByID), then GetServiceQuota, keeping the
    default value when no applied value exists. A least-privilege preview role needs both actions."""
    token = "`aws:servicequotas/getServiceQuota:getServiceQuota`"
    lookups_doc = (PROJECT_DIR / "docs" / "deploy-time-lookups.md").read_text()
    row = next(line for line in lookups_doc.splitlines() if token in line)
    assert "`servicequotas:GetAWSDefaultServiceQuota`" in row
    assert "`servicequotas:GetServiceQuota`" in row


def test_a_node_update_needs_no_quota_beyond_the_nodes():
    """The GPU group updates with EKS's MINIMAL strategy, which "terminates the old instances before launching the
    new instances" (https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupUpdateConfig.html), so an AMI
    or launch-template update runs within the nodes' own vCPUs: a quota of exactly the nodes passes, with no
    surge counted (DEFAULT would add up to two nodes per AZ first, managed-node-update-behavior)."""
    assert GPU_UPDATE_STRATEGY == "MINIMAL"
    assert gpu_vcpu_need(load_stack_config()).vcpus == 2 * 32
    assert run_stack(vcpu_quota=64.0).outputs["clusterName"]
