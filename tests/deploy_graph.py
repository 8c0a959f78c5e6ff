"""The program's resource graph as `pulumi up` walks it. Each resource's waits are read as the Python SDK orders
registrations: `prepare_resource` (pulumi `runtime/resource.py`) awaits, before it registers a resource: the URNs of
its `depends_on` (a component there stands for its children: `_depends_on.py` `_resolve_depends_on_urns`), every
input (an Output's resources are its `dependencies`; a resource reference, kept apart for a remote component, awaits
the referenced URN), its parent's URN and its provider's reference. A custom resource's URN resolves once the engine
has created it, and a remote component's (pulumi-eks's `eks:index:*`) once its provider's Construct returns with
every child created; a local component registers at once, so what waits on it waits only for what it waits on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tools.offline import Resource, StackRun

REMOTE_COMPONENT_PREFIX = "eks:index:"


def creates(resource: Resource) -> bool:
    """Whether the engine creates the resource before its URN resolves: a custom resource or a remote component."""
    return resource.custom or resource.type.startswith(REMOTE_COMPONENT_PREFIX)


def _named(resource: Resource) -> set[str]:
    """The URNs the SDK awaits for the resource: dependencies, references, parent and provider."""
    urns = set(resource.dependencies) | set(resource.references.values())
    if resource.parent:
        urns.add(resource.parent)
    if resource.provider:
        # A provider reference is `<urn>::<id>`; the URN itself holds `::`.
        urns.add(resource.provider.rsplit("::", 1)[0])
    return urns


def direct_waits(run: StackRun) -> dict[str, set[str]]:
    """Per URN of what the engine creates, the URNs of created resources it waits for directly (a local component
    passed through to what it waits for)."""
    by_urn = {resource.urn: resource for resource in run.resources}
    resolved: dict[str, set[str]] = {}

    def through(urn: str) -> set[str]:
        resource = by_urn.get(urn)
        if resource is None:  # the stack, or a default provider the mocks do not capture
            return set()
        if creates(resource):
            return {urn}
        if urn not in resolved:
            resolved[urn] = set()  # a component is never its own ancestor; this only stops a cycle
            resolved[urn] = set().union(*(through(named) for named in _named(resource)))
        return resolved[urn]

    return {
        resource.urn: set().union(*(through(named) for named in _named(resource))) - {resource.urn}
        for resource in run.resources
        if creates(resource)
    }


def closure(edges: Mapping[str, Iterable[str]], start: str) -> set[str]:
    """Everything `start` waits for, directly or not."""
    seen: set[str] = set()
    todo = list(edges.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(edges.get(node, ()))
    return seen


def waits_for(run: StackRun, type_: str, name: str) -> set[str]:
    """The URNs of every created resource the named one waits for, directly or not."""
    return closure(direct_waits(run), run.get(type_, name).urn)
