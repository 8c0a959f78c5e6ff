"""Capacity preflight: the account's On-Demand vCPU quota must hold the GPU nodes, checked in preview.

EC2 limits running On-Demand instances per instance family in vCPUs, one quota per family group
(https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html). Without enough, the
managed node group is created and its instances never launch (the Auto Scaling group reports
VcpuLimitExceeded), after the VPC and cluster already exist. Asking Service Quotas first fails the
preview instead, naming the quota, the need and the current value.

An update that replaces the GPU nodes (AMI, launch template, Kubernetes version) needs no vCPUs beyond the
group's own: the GPU node group updates with EKS's MINIMAL strategy, which terminates an old node before it
launches the new one (infra/nodes/node_groups.py). With EKS's DEFAULT strategy it would first add up to two nodes per
AZ, and a quota that fits the nodes exactly would stop the update half-way; so the need is the nodes alone.

With clusterUpgradeStrategy newCluster an upgrade runs the new RayCluster's GPU workers beside the active cluster's
(KubeRay's NewCluster upgrade, vendor/kuberay-v1.4.0/rayservice_controller.go), so the need is the GPU node group's
maximum, which holds both.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi_aws as aws

from infra.settings.stack_config import StackConfig

# Service Quotas codes of the EC2 "Running On-Demand ... instances" quotas, by instance family letter
# (the EFA-capable GPU types the stack accepts are all G or P).
ON_DEMAND_VCPU_QUOTAS = {
    "g": ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    "p": ("L-417A185B", "Running On-Demand P instances"),
}


class QuotaError(RuntimeError):
    """The account cannot run the GPU nodes; the message says which quota, the need and the value."""


@dataclass(frozen=True)
class VcpuNeed:
    quota_code: str
    quota_name: str
    vcpus: int


def gpu_vcpu_need(cfg: StackConfig) -> VcpuNeed:
    """The GPU nodes at their most, the node group's maximum: with autoscaling its ceiling, with newCluster the
    surge of an upgrade on top."""
    code, name = ON_DEMAND_VCPU_QUOTAS[cfg.gpu_node_type[0]]
    return VcpuNeed(code, name, cfg.topology.node.vcpus * cfg.gpu_node_group_max)


def _nodes_counted(cfg: StackConfig) -> str:
    nodes = f"{cfg.gpu_node_group_max} x {cfg.gpu_node_type} of {cfg.topology.node.vcpus} vCPUs"
    if not cfg.surge_gpu_nodes:
        return nodes
    return (
        f"{nodes}: {cfg.topology.most_gpu_nodes} for the active RayCluster and {cfg.surge_gpu_nodes} for the new one "
        "a clusterUpgradeStrategy 'newCluster' upgrade runs beside it"
    )


def quota_problem(cfg: StackConfig, need: VcpuNeed, current: float) -> str | None:
    if current >= need.vcpus:
        return None
    return (
        f"EC2 quota {need.quota_code} ({need.quota_name}) in {cfg.region} is {current:g} vCPUs; the GPU nodes need "
        f"{need.vcpus} ({_nodes_counted(cfg)}), "
        "besides any instances of that family already running. Request an increase in Service Quotas "
        f"(aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {need.quota_code} "
        f"--desired-value {need.vcpus}), or set quotaPreflight to false to skip this check"
    )


def check_gpu_vcpu_quota(cfg: StackConfig) -> None:
    """Raises QuotaError before any resource when the GPU family's On-Demand vCPU quota is too small."""
    if not cfg.quota_preflight:
        return
    need = gpu_vcpu_need(cfg)
    quota = aws.servicequotas.get_service_quota(service_code="ec2", quota_code=need.quota_code)
    problem = quota_problem(cfg, need, quota.value)
    if problem:
        raise QuotaError(problem)
