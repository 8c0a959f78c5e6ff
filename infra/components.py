"""What every component of this project does alike: it names its children after itself (declaring a child from its
manifest one way), and checks its own args.

Children are named `<component name>-<role>` so two instances of one component do not collide, and bad args raise one
`InputPropertiesError` listing every problem, as pulumi-eks does
(docs/architecture.md#reusing-the-components-in-a-stack-of-your-own).

Imports: infra.settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi.errors import InputPropertiesError, InputPropertyErrorDetails


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


def declare_manifest(
    children: Children, role: str, manifest: Mapping[str, Any], opts: pulumi.ResourceOptions
) -> pulumi.Resource:
    """A child from its manifest: the typed resource of its kind where the stack makes one, else a CustomResource."""
    name, metadata, kind = children.name(role), manifest["metadata"], manifest["kind"]
    if kind == "ConfigMap":
        return k8s.core.v1.ConfigMap(name, metadata=metadata, data=manifest["data"], opts=opts)
    if kind == "NetworkPolicy":
        return k8s.networking.v1.NetworkPolicy(name, metadata=metadata, spec=manifest["spec"], opts=opts)
    if kind == "DaemonSet":
        return k8s.apps.v1.DaemonSet(name, metadata=metadata, spec=manifest["spec"], opts=opts)
    return k8s.apiextensions.CustomResource(
        name, api_version=manifest["apiVersion"], kind=kind, metadata=metadata, spec=manifest["spec"], opts=opts
    )


def network_policy_role(policy: Mapping[str, Any]) -> str:
    return f"network-policy-{policy['metadata']['name']}"


def problem(property_path: str, reason: str) -> InputPropertyErrorDetails:
    return InputPropertyErrorDetails(property_path=property_path, reason=reason)


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
