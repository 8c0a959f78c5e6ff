"""Rules on the EKS control plane: who can reach its public endpoint, and whether it logs. Both read pulumi-eks's
component (mocks) or its aws:eks Cluster (real preview), and skip the component as a real preview shows it (no
inputs): its child carries the settings."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel

from .internet import covers_the_internet
from .props import as_bool, get
from .resource_types import CLUSTERS, EKS_CLUSTER_COMPONENT
from .rules import Inspected, resource_policy

# What EKS does when publicAccessCidrs is not set on a public endpoint.
EKS_DEFAULT_PUBLIC_ACCESS_CIDRS = ("0.0.0.0/0",)


def _open_public_endpoint(resource: Inspected) -> Iterator[str]:
    if not resource.props:
        return
    component = resource.resource_type == EKS_CLUSTER_COMPONENT
    endpoint = resource.props if component else get(resource.props, "vpcConfig", default={})
    public = get(endpoint, "endpointPublicAccess")
    # Both pulumi-eks and EKS default to a public endpoint.
    if public is not None and not as_bool(public):
        return
    cidrs = tuple(get(endpoint, "publicAccessCidrs", default=())) or EKS_DEFAULT_PUBLIC_ACCESS_CIDRS
    if covers_the_internet(cidrs):
        yield (
            f"EKS cluster '{resource.name}' serves its public API endpoint to the whole internet "
            f"({', '.join(map(str, cidrs))}). "
            "Fix: set apiPublicAccessCidrs to the CIDRs of your operators and CI (the private endpoint stays on)."
        )


def _control_plane_logging_off(resource: Inspected) -> Iterator[str]:
    if resource.props and not tuple(get(resource.props, "enabledClusterLogTypes", default=())):
        yield (
            f"EKS cluster '{resource.name}' sends no control-plane logs to CloudWatch: API and audit history is lost. "
            "Fix: set controlPlaneLogging to true."
        )


EKS_PUBLIC_ENDPOINT_RESTRICTED = resource_policy(
    "eks-public-endpoint-restricted",
    "The EKS public API endpoint is not open to the whole internet.",
    EnforcementLevel.ADVISORY,
    CLUSTERS,
    _open_public_endpoint,
)
EKS_CONTROL_PLANE_LOGGING = resource_policy(
    "eks-control-plane-logging",
    "The EKS control plane sends its logs to CloudWatch.",
    EnforcementLevel.ADVISORY,
    CLUSTERS,
    _control_plane_logging_off,
)
