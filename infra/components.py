"""What every component of this project does alike: it names its children after itself, and checks its own args.

Children are named `<component name>-<role>` so two instances of one component do not collide, and bad args raise one
`InputPropertiesError` listing every problem, as pulumi-eks does
(docs/architecture.md#reusing-the-components-in-a-stack-of-your-own).

Imports: infra.settings."""

from __future__ import annotations

import re
from typing import Any

import pulumi
from pulumi.errors import InputPropertiesError, InputPropertyErrorDetails

from infra.settings.kinds import EKS_NAME_PATTERN


class Children:
    """Names and options of one component's children."""

    def __init__(self, component: pulumi.Resource, name: str) -> None:
        self.component = component
        self.prefix = name

    def name(self, role: str) -> str:
        return f"{self.prefix}-{role}"

    def opts(self, **options: Any) -> pulumi.ResourceOptions:
        """The child's options: parented to the component."""
        return pulumi.ResourceOptions(parent=self.component, **options)


def problem(property_path: str, reason: str) -> InputPropertyErrorDetails:
    return InputPropertyErrorDetails(property_path=property_path, reason=reason)


# What the common patterns (infra/settings/config.py) allow, for the errors of `unmatched`.
CHART_VERSION = "a chart version such as 1.2.3"
REGION = "an AWS region name such as us-east-1"
NAMESPACE_NAME = "a Kubernetes namespace name (a DNS label)"


def unmatched(fields: dict[str, str], pattern: re.Pattern[str], allowed: str) -> list[InputPropertyErrorDetails]:
    """A problem for each field (path -> value) whose value `pattern` does not match; `allowed` says what would."""
    return [problem(path, f"{value!r} is not {allowed}") for path, value in fields.items() if not pattern.match(value)]


def cluster_name_errors(cluster_name: str) -> list[InputPropertyErrorDetails]:
    """The `cluster_name` field of any component's args: the EKS cluster it is for."""
    if EKS_NAME_PATTERN.match(cluster_name):
        return []
    return [problem("cluster_name", f"{cluster_name!r} is not an EKS cluster name (1-100 letters, digits, - and _)")]


def raise_input_errors(component: str, errors: list[InputPropertyErrorDetails]) -> None:
    """Raises every problem of a component's args together; the message lists them, as the engine shows it."""
    if errors:
        listed = "; ".join(f"{error['property_path']}: {error['reason']}" for error in errors)
        raise InputPropertiesError(f"Invalid arguments for {component}: {listed}", errors)


# The NetworkPolicy manifests the serving and monitoring namespaces build alike (infra/serving/network_policy.py,
# infra/observability/network_policy.py).
def tcp_ports(*ports: int) -> list[dict[str, Any]]:
    return [{"protocol": "TCP", "port": port} for port in ports]


def ingress_policy(name: str, namespace: str, pods: dict[str, str], ingress: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace},
        # {} selects every pod of the namespace.
        "spec": {
            "podSelector": {"matchLabels": dict(pods)} if pods else {},
            "policyTypes": ["Ingress"],
            "ingress": ingress,
        },
    }
