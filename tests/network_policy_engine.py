"""Which ingress connections a set of NetworkPolicies (networking.k8s.io/v1) allows, by the API's own semantics.

https://kubernetes.io/docs/concepts/services-networking/network-policies/: a pod is isolated for ingress once a policy
with `Ingress` in its policyTypes selects it, and then takes only the union of those policies' rules; a rule admits a
connection when one of its `from` peers matches the source (no `from`: every source) and one of its `ports` matches
the port (no `ports`: every port); a peer with a podSelector alone means pods of the policy's own namespace, with a
namespaceSelector alone every pod of the namespaces it selects, with both the pods it selects in those namespaces.
Only what the stack's policies use is implemented: matchLabels selectors, TCP ports by number (a range to `endPort`,
inclusive), pod and namespace peers. Anything
else fails, so a policy that grows a field this engine does not know cannot be read wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: Mapping[str, str]


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    unknown = set(selector) - {"matchLabels"}
    if unknown:
        raise NotImplementedError(f"selector fields {sorted(unknown)}")
    return all(labels.get(key) == value for key, value in (selector.get("matchLabels") or {}).items())


def _peer_matches(peer: Mapping[str, Any], policy_namespace: str, source: Pod) -> bool:
    unknown = set(peer) - {"podSelector", "namespaceSelector"}
    if unknown:
        raise NotImplementedError(f"peer fields {sorted(unknown)}")
    if "namespaceSelector" in peer:
        namespace_labels = {NAMESPACE_NAME_LABEL: source.namespace}
        in_namespace = _selects(peer["namespaceSelector"], namespace_labels)
    else:
        in_namespace = source.namespace == policy_namespace
    return in_namespace and _selects(peer.get("podSelector", {}), source.labels)


def _port_matches(ports: Iterable[Mapping[str, Any]] | None, port: int) -> bool:
    if not ports:
        return True
    for entry in ports:
        # Pulumi's mocks pass numbers as protobuf Struct values, floats.
        number = entry.get("port")
        if (
            set(entry) - {"protocol", "port", "endPort"}
            or not isinstance(number, (int, float))
            or number != int(number)
        ):
            raise NotImplementedError(f"port entry {entry}")
        if entry.get("protocol", "TCP") == "TCP" and number <= port <= entry.get("endPort", number):
            return True
    return False


def _rule_admits(rule: Mapping[str, Any], policy_namespace: str, source: Pod, port: int) -> bool:
    peers = rule.get("from")
    from_ok = not peers or any(_peer_matches(peer, policy_namespace, source) for peer in peers)
    return from_ok and _port_matches(rule.get("ports"), port)


def _selecting(policies: Iterable[Mapping[str, Any]], target: Pod) -> list[Mapping[str, Any]]:
    return [
        policy
        for policy in policies
        if policy["metadata"]["namespace"] == target.namespace
        and "Ingress" in policy["spec"].get("policyTypes", ["Ingress"])
        and _selects(policy["spec"]["podSelector"], target.labels)
    ]


def allows(policies: Iterable[Mapping[str, Any]], source: Pod, target: Pod, port: int) -> bool:
    """Whether `source` may open a TCP connection to `target` on `port`."""
    selecting = _selecting(policies, target)
    if not selecting:
        return True
    return any(
        _rule_admits(rule, policy["metadata"]["namespace"], source, port)
        for policy in selecting
        for rule in policy["spec"].get("ingress") or []
    )


def port_entries(policies: Iterable[Mapping[str, Any]], source: Pod, target: Pod) -> set[tuple[int, int]]:
    """The distinct port entries (first, last) of the rules that admit `source` into `target`."""
    entries = set()
    for policy in _selecting(policies, target):
        for rule in policy["spec"].get("ingress") or []:
            peers = rule.get("from")
            if not peers or any(_peer_matches(peer, policy["metadata"]["namespace"], source) for peer in peers):
                for entry in rule.get("ports") or []:
                    entries.add((int(entry["port"]), int(entry.get("endPort", entry["port"]))))
    return entries
