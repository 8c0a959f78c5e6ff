"""Capacity preflight: the account's On-Demand vCPU quota must hold the GPU nodes, checked in preview.

Without enough quota the node group's instances never launch, after the VPC and cluster exist. The need is the nodes
alone (MINIMAL node updates), or the GPU node group's maximum with clusterUpgradeStrategy newCluster, which runs both
clusters' workers at once (docs/scaling.md#capacity-preflight)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi_aws as aws

from infra.settings.stack_config import ConfigError, StackConfig

# Service Quotas codes of the EC2 "Running On-Demand ... instances" quotas, by instance family letter
# (the EFA-capable GPU types the stack accepts are all G or P).
ON_DEMAND_VCPU_QUOTAS = {
    "g": ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    "p": ("L-417A185B", "Running On-Demand P instances"),
}


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
    """Raises ConfigError before any resource when the GPU family's On-Demand vCPU quota is too small."""
    if not cfg.quota_preflight:
        return
    need = gpu_vcpu_need(cfg)
    quota = aws.servicequotas.get_service_quota(service_code="ec2", quota_code=need.quota_code)
    problem = quota_problem(cfg, need, quota.value)
    if problem:
        raise ConfigError([problem])
