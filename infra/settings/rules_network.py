"""The rules that relate network, cluster and node keys: the VPC and API allow-list CIDRs, versions that must agree,
the GPU AZ, names that must not collide, the system node's room and Capacity Blocks.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Sequence

from infra.kube.namespaces import CREATED_NAMESPACES
from infra.kube.scheduling import OPERATOR_NAMESPACE, SYSTEM_NODEGROUP_NAME
from infra.settings.footprint import system_node_load, system_node_problem
from infra.settings.instance_types import NODE_ARCHITECTURE, InstanceShape, architecture_reason
from infra.settings.kinds import (
    API_ALLOW_LIST_COMMAND,
    CHECKIP,
    INSTANCE_TYPE_PATTERN,
    KUBERNETES_VERSION_PATTERN,
    MAX_SUBNET_PREFIX,
    MAX_VPC_CIDR_SETTING_PREFIX,
    MAX_VPC_PREFIX,
    MIN_VPC_PREFIX,
    NEW_CLUSTER,
    PUBLIC_PREFIX_DELTA,
    ipv4_network,
)
from infra.settings.regions import region_problem
from infra.settings.stack_config import StackConfig
from policy.ray_llm_policies.internet import covers_the_internet

MIN_KUBERNETES_MINOR = 29


# The Kubernetes minor each known cluster-autoscaler chart's Cluster Autoscaler is built for (the chart's
# appVersion: 9.59.0 runs 1.35.0). Upstream tests a Cluster Autoscaler only on the Kubernetes minor it was
# meant for, "there is always a chance that it won't work as expected" on another (kubernetes/autoscaler
# cluster-autoscaler/README.md, Releases). Another chart version is the user's word.
CLUSTER_AUTOSCALER_KUBERNETES_MINOR = {"9.59.0": "1.35"}


# IPv4 blocks no VPC can use: not unicast, or reserved for the host itself (RFC 6890), or, for
# 172.17.0.0/16, a range the VPC user guide says not to use because Docker and AWS services take it
# (https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html).
NON_VPC_RANGES = {
    "0.0.0.0/8": "'this network' (RFC 1122)",
    "127.0.0.0/8": "loopback",
    "169.254.0.0/16": "link-local, where the instance metadata service lives",
    "172.17.0.0/16": "used by Docker and some AWS services; the VPC user guide says not to use it",
    "224.0.0.0/4": "multicast",
    "240.0.0.0/4": "reserved (RFC 1112)",
}


# EKS quota "Public endpoint access CIDR ranges per cluster": 40, not adjustable
# (https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html).
MAX_API_PUBLIC_ACCESS_CIDRS = 40


# The same for the offline render, which reads the stack file without the Pulumi CLI.
OFFLINE_ALLOW_LIST_OPTION = f'--config "apiPublicAccessCidrs=[\\"{CHECKIP}/32\\"]"'


VPC_CIDR_ALLOWED = (
    f"an IPv4 network address with a /{MIN_VPC_PREFIX} to /{MAX_VPC_CIDR_SETTING_PREFIX} prefix and no host bits set, "
    "in RFC 1918 private space (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16) or another unicast range"
)


def vpc_block_reason(value: str) -> str | None:
    """Why `value` cannot be a VPC the subnet plan cuts, or None; the setting (vpc_cidr_problem) and NetworkArgs
    (infra/network/vpc.py) share it."""
    try:
        network = ipv4_network(value)
    except ValueError as error:
        return str(error)
    if network.prefixlen < MIN_VPC_PREFIX:
        return f"a /{network.prefixlen} block; AWS takes a VPC of /{MIN_VPC_PREFIX} to /{MAX_SUBNET_PREFIX}"
    if network.prefixlen > MAX_VPC_PREFIX:
        return (
            f"a /{network.prefixlen} block; its public subnets are {PUBLIC_PREFIX_DELTA} bits narrower, and a VPC "
            f"subnet is /{MIN_VPC_PREFIX} to /{MAX_SUBNET_PREFIX}"
        )
    for block, why in NON_VPC_RANGES.items():
        if network.overlaps(ipaddress.IPv4Network(block)):
            return f"it overlaps {block}, {why}"
    return None


def vpc_cidr_problem(value: str) -> str | None:
    reason = vpc_block_reason(value)
    prefix = ipv4_network(value).prefixlen if reason is None else 0
    if prefix > MAX_VPC_CIDR_SETTING_PREFIX:
        reason = f"a /{prefix} block leaves too few addresses per AZ for the VPC CNI's pods and warm ENIs"
    return None if reason is None else f"vpcCidr={value!r} is invalid ({reason}): allowed is {VPC_CIDR_ALLOWED}"


def kubernetes_version_problem(value: str) -> str | None:
    match = KUBERNETES_VERSION_PATTERN.match(value)
    if match and int(match.group(1)) >= MIN_KUBERNETES_MINOR:
        return None
    return (
        f"kubernetesVersion={value!r} is invalid: allowed is MAJOR.MINOR, 1.{MIN_KUBERNETES_MINOR} or newer (e.g. 1.35)"
    )


def kube_proxy_version_problem(kube_proxy_version: str | None, kubernetes_version: str) -> str | None:
    """EKS publishes one kube-proxy add-on line per Kubernetes version; another minor is refused."""
    proxy = re.match(r"^v(\d+\.\d+)\.", kube_proxy_version or "")
    if (
        proxy is None
        or not KUBERNETES_VERSION_PATTERN.match(kubernetes_version)
        or proxy.group(1) == kubernetes_version
    ):
        return None
    return (
        f"kubeProxyVersion={kube_proxy_version!r} is invalid: kube-proxy must match kubernetesVersion "
        f"{kubernetes_version}; allowed is a v{kubernetes_version}.x-eksbuild.N version "
        f"(aws eks describe-addon-versions --addon-name kube-proxy --kubernetes-version {kubernetes_version})"
    )


def gpu_az_problem(gpu_az: str | None, region: str) -> str | None:
    if gpu_az is None or region_problem(region):
        return None
    if re.fullmatch(re.escape(region) + r"[a-z]", gpu_az):
        return None
    return (
        f"gpuAz={gpu_az!r} is invalid: it is not an Availability Zone of region {region!r} (e.g. {region}a), or empty"
    )


def cluster_autoscaler_problem(cfg: StackConfig) -> str | None:
    chart_version, kubernetes_version = cfg.cluster_autoscaler_version, cfg.kubernetes_version
    built_for = CLUSTER_AUTOSCALER_KUBERNETES_MINOR.get(chart_version)
    if not cfg.cluster_autoscaler or built_for in (None, kubernetes_version):
        return None
    why = "serveAutoscaling=true" if cfg.serve_autoscaling else f"clusterUpgradeStrategy={NEW_CLUSTER!r}"
    return (
        f"kubernetesVersion={kubernetes_version!r} is invalid with {why}: clusterAutoscalerVersion="
        f"{chart_version!r} runs Cluster Autoscaler {built_for}, which is built and tested for Kubernetes {built_for} "
        f"only; allowed is kubernetesVersion {built_for!r}, or a clusterAutoscalerVersion whose Cluster Autoscaler is "
        f"{kubernetes_version}.x"
    )


API_ALLOW_LIST_ALLOWED = (
    f"at most {MAX_API_PUBLIC_ACCESS_CIDRS} public CIDRs that `pulumi up`, kubectl and CI connect from: fixed egress "
    "addresses (a NAT gateway's, a self-hosted CI runner's), not a CI provider's published ranges (docs/policy.md, "
    f"Deploying from CI); add yours with `{API_ALLOW_LIST_COMMAND}` (your address: "
    "`curl https://checkip.amazonaws.com`); offline, without the Pulumi CLI, pass "
    f"`python -m tools.render ... {OFFLINE_ALLOW_LIST_OPTION}`"
)


def api_allow_list_reason(cidrs: Sequence[str]) -> str | None:
    """Why EKS's public API endpoint must not be given `cidrs`, or None; the setting (api_allow_list_problem) and
    ClusterArgs (infra/cluster/eks.py) share it."""
    if len(cidrs) > MAX_API_PUBLIC_ACCESS_CIDRS:
        return (
            f"{len(cidrs)} CIDRs: EKS allows at most {MAX_API_PUBLIC_ACCESS_CIDRS} (quota 'Public endpoint access CIDR "
            "ranges per cluster', not adjustable) and would refuse the cluster mid-deploy"
        )
    if covers_the_internet(cidrs):
        return f"{list(cidrs)} together admit every internet address"
    if not cidrs:
        # With no publicAccessCidrs EKS opens the public endpoint to 0.0.0.0/0
        # (https://docs.aws.amazon.com/eks/latest/APIReference/API_VpcConfigRequest.html).
        return "empty: EKS would then open the public API endpoint to 0.0.0.0/0"
    return None


def api_allow_list_problem(cidrs: tuple[str, ...], raw: str) -> str | None:
    """The setting's list once the reader kept its valid items; a list whose every item it refused is reported."""
    if not cidrs and raw not in ("", "[]"):
        return None
    reason = api_allow_list_reason(cidrs)
    return None if reason is None else f"apiPublicAccessCidrs is invalid: {reason}; allowed is {API_ALLOW_LIST_ALLOWED}"


def serve_source_problem(exposure: str, cidrs: tuple[str, ...]) -> str | None:
    """The load balancer's sources are also whom its NodePort answers on every node, in plain HTTP: cloud-provider-aws
    opens the nodes' security group on the NodePort to loadBalancerSourceRanges, or to 0.0.0.0/0 when there are none
    (kubernetes/cloud-provider-aws pkg/providers/v1/aws.go EnsureLoadBalancer, updateInstanceSecurityGroupsForNLB),
    for an internal load balancer too."""
    if exposure == "none" or (cidrs and not covers_the_internet(cidrs)):
        return None
    if exposure == "internal" and not cidrs:
        return (
            "serveExposure='internal' needs serveSourceCidrs: without them the cloud provider opens the load "
            "balancer's NodePort on every node to 0.0.0.0/0, and the NodePort answers in plain HTTP, past the TLS "
            "listener; allowed is the private CIDRs the clients connect from (e.g. the VPC's or 10.0.0.0/8)"
        )
    return (
        f"serveExposure={exposure!r} needs serveSourceCidrs narrower than the whole internet "
        f"(got {list(cidrs)}, which together admit every internet address): an open inference endpoint is not allowed"
    )


# Namespaces every cluster already has; Kubernetes reserves the `kube-` prefix for its own
# (https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/).
EXISTING_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def namespace_problem(namespace: str) -> str | None:
    """The RayService's namespace is a Namespace object of the program's, deleted on destroy with all it holds, so it
    must be no namespace another object already holds. One the stack also creates would be created twice (the second
    create fails: a name is unique per kind, https://kubernetes.io/docs/concepts/overview/working-with-objects/names/)
    or, created first, take the other part's objects with it on destroy. Refused whether or not that part is on now:
    turning it on later would fail mid-deploy, and moving the RayService then replaces it."""
    creates = "the program creates (and on destroy deletes) the namespace it names"
    if namespace in EXISTING_NAMESPACES or namespace.startswith("kube-"):
        why = f"every cluster already has it or Kubernetes reserves its kube- prefix, and {creates}"
    elif namespace == OPERATOR_NAMESPACE:
        why = "it is the KubeRay operator's, which its Helm release creates"
    elif namespace in CREATED_NAMESPACES:
        why = f"it is {CREATED_NAMESPACES[namespace]}, and {creates}"
    else:
        return None
    return f"namespace={namespace!r} is invalid: {why}; allowed is a namespace of its own such as 'inference'"


def gpu_nodegroup_name_problem(gpu_nodegroup_name: str) -> str | None:
    if gpu_nodegroup_name != SYSTEM_NODEGROUP_NAME:
        return None
    return (
        f"gpuNodegroupName={gpu_nodegroup_name!r} is invalid: it is the system node group's name, and node group "
        "names are unique in a cluster; allowed is another name such as 'gpu-workers'"
    )


def system_node_problems(
    cfg: StackConfig, describe_instance_type: Callable[[str], InstanceShape | None]
) -> list[str | None]:
    """The system node type as EC2 describes it, asked once (a type EC2 does not know is left to the region's
    offerings check): an x86_64 CPU type, with room for what runs there."""
    if region_problem(cfg.region) or not INSTANCE_TYPE_PATTERN.fullmatch(cfg.system_node_type):
        return []
    shape = describe_instance_type(cfg.system_node_type)
    if shape is None:
        return []
    if NODE_ARCHITECTURE not in shape.architectures:
        return [
            f"systemNodeType={cfg.system_node_type!r} is invalid: {architecture_reason(shape)} (EC2's answer, asked "
            f"before any resource); allowed is an {NODE_ARCHITECTURE} instance type such as m7i.xlarge"
        ]
    if shape.gpus:
        return [
            f"systemNodeType={cfg.system_node_type!r} is invalid: it has {shape.gpus} NVIDIA GPU(s) "
            f"({shape.gpu_name}), but the system nodes run the standard AL2023 AMI (no NVIDIA driver) and CPU pods "
            "only; allowed is a CPU instance type such as m7i.xlarge (gpuNodeType sets the GPU nodes)"
        ]
    # What runs on the system nodes at once, a model change's mirror Job beside the head included, must fit them.
    load = system_node_load(cfg)
    return [system_node_problem(cfg.system_node_type, cfg.system_node_count, shape.vcpus, shape.memory_mib, load)]


def capacity_block_autoscaling_problem(capacity_type: str, serve_autoscaling: bool) -> str | None:
    if capacity_type != "capacity-block" or not serve_autoscaling:
        return None
    return (
        "serveAutoscaling=true is invalid with gpuCapacityType='capacity-block': a Capacity Block holds a fixed "
        "number of instances for its window, so the Cluster Autoscaler could add no node beyond it; allowed is "
        "serveAutoscaling=false with replicas that fill the block"
    )


def capacity_block_problem(capacity_type: str, reservation_id: str | None, gpu_az: str | None) -> str | None:
    """A Capacity Block is one reservation in one Availability Zone: the node group targets both."""
    if capacity_type != "capacity-block" or (reservation_id and gpu_az):
        return None
    return (
        "gpuCapacityType='capacity-block' needs capacityReservationId (the Capacity Block's cr-... id) and "
        f"gpuAz (the Availability Zone it was bought in); got capacityReservationId={reservation_id or ''!r}, "
        f"gpuAz={gpu_az or ''!r}"
    )
