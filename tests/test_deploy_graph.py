"""The first deploy's model (tools/cold_start.py) against the program's own resource graph: every resource is a step
of the model, and the order `pulumi up` creates the steps in is the model's, so a new `depends_on` (or one removed)
shows up as a step the model orders otherwise. Each resource's waits are read as the Python SDK orders registrations:
`prepare_resource` (pulumi `runtime/resource.py`) awaits, before it registers a resource: the URNs of its
`depends_on` (a component there stands for its children: `_depends_on.py` `_resolve_depends_on_urns`), every input
(an Output's resources are its `dependencies`; a resource reference, kept apart for a remote component, awaits the
referenced URN), its parent's URN and its provider's reference. A custom resource's URN resolves once the engine
has created it, and a remote component's (pulumi-eks's `eks:index:*`) once its provider's Construct returns with
every child created; a local component registers at once, so what waits on it waits only for what it waits on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase

import pytest

from tests.conftest import SERVE_AUTOSCALING, shipped_run
from tools import cold_start
from tools.offline import Resource, StackRun, run_stack
from tools.project import SHIPPED_STACKS

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


def steps_of(run: StackRun, exposed: bool) -> dict[str, list[str]]:
    """Per URN of what the engine creates, the model's steps whose globs match it."""
    steps = cold_start.first_deploy_steps(exposed, autoscaled=True)
    return {
        r.urn: [s.name for s in steps if any(fnmatchcase(f"{r.type}::{r.name}", g) for g in s.resources)]
        for r in run.resources
        if creates(r)
    }


def exposed(run: StackRun) -> bool:
    return "serveLoadBalancerHostname" in run.outputs


@pytest.fixture(scope="module", params=["dev", "prod", "dev with serveAutoscaling"])
def stack(request: pytest.FixtureRequest) -> StackRun:
    """The shipped stacks, and dev with the Cluster Autoscaler (Serve autoscaling installs it)."""
    if request.param in SHIPPED_STACKS:
        return shipped_run(request.param)
    return run_stack(SERVE_AUTOSCALING)


def program_order(run: StackRun) -> set[tuple[str, str]]:
    """The steps' order as the program's resources impose it, (before, after), with the orders another implies
    left out (the transitive reduction)."""
    step = {urn: names[0] for urn, names in steps_of(run, exposed(run)).items()}
    edges: dict[str, set[str]] = {}
    for urn, waits in direct_waits(run).items():
        edges.setdefault(step[urn], set()).update(step[w] for w in waits if step[w] != step[urn])
    return {
        (before, after)
        for after, befores in edges.items()
        for before in befores
        if not any(before in closure(edges, other) for other in befores - {before})
    }


def model_order(run: StackRun) -> set[tuple[str, str]]:
    """The model's `pulumi up` order among the steps the run has resources for."""
    present = {names[0] for names in steps_of(run, exposed(run)).values()}
    return {
        (before, step.name)
        for step in cold_start.first_deploy_steps(exposed(run), autoscaled=True)
        if step.name in present
        for before in step.after
        if before in present
    }


def test_every_resource_is_one_step_of_the_model(stack):
    """A resource no step names is time the model does not count; one two steps name is counted twice."""
    assert {urn: names for urn, names in steps_of(stack, exposed(stack)).items() if len(names) != 1} == {}


def test_the_model_orders_the_steps_as_the_program_does(stack):
    assert model_order(stack) == program_order(stack)


def test_each_step_of_the_running_system_names_what_it_waits_for():
    """A step with no resources is the cluster's own work (a pull, the NLB's health checks): it starts on waits."""
    for step in cold_start.first_deploy_steps(exposed=True, autoscaled=True):
        assert step.resources or (step.waits and not step.after), step.name


@pytest.mark.parametrize("exposed_stack", [False, True], ids=["no-load-balancer", "load-balancer"])
def test_the_first_deploy_serves_within_six_tenths_of_the_samples_time(exposed_stack):
    """Issue 39: the first `pulumi up` to a serving endpoint at most 0.6 of the AWS sample's steps (its README)."""
    assert (
        cold_start.endpoint_seconds(exposed_stack) / 60
        <= cold_start.TARGET_SHARE_OF_SAMPLE * cold_start.sample_minutes()
    )
