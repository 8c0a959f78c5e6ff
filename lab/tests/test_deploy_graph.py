"""The first deploy's model (lab/cold_start.py) against the program's own resource graph (tests/deploy_graph.py):
every resource is a step of the model, and the order `pulumi up` creates the steps in is the model's, so a new
`depends_on` (or one removed) shows up as a step the model orders otherwise.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

import pytest

from lab import cold_start
from tests.conftest import SERVE_AUTOSCALING, shipped_run
from tests.deploy_graph import closure, creates, direct_waits
from tools.offline import StackRun, run_stack
from tools.project import SHIPPED_STACKS


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
