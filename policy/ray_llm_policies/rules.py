"""How a rule becomes a CrossGuard policy: a check that lists problems, wrapped for the engine. A resource rule sees one
resource's inputs, a stack rule every resource's outputs and their dependencies; both receive objects with
`resource_type`, `name` and `props`, so the helpers reading a resource serve either."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)


class Inspected(Protocol):
    """A resource as a policy sees it (its inputs in a resource policy, its outputs in a stack policy)."""

    @property
    def resource_type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def props(self) -> Mapping[str, Any]: ...


ResourceCheck = Callable[[Inspected], Iterable[str]]
StackCheck = Callable[[Sequence[PolicyResource]], Iterable[tuple[PolicyResource, str]]]


def resource_policy(
    name: str,
    description: str,
    level: EnforcementLevel,
    applies_to: Iterable[str] | Callable[[str], bool],
    check: ResourceCheck,
) -> ResourceValidationPolicy:
    """A policy that runs `check` on each resource it applies to (type tokens, or a test of the token)."""
    applies = applies_to if callable(applies_to) else frozenset(applies_to).__contains__

    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if applies(args.resource_type):
            for problem in check(args):
                report_violation(problem, None)

    return ResourceValidationPolicy(name=name, description=description, enforcement_level=level, validate=validate)


def stack_policy(name: str, description: str, level: EnforcementLevel, check: StackCheck) -> StackValidationPolicy:
    """A policy that runs `check` on the whole stack and reports each problem on the resource it names."""

    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        for resource, problem in check(args.resources):
            report_violation(problem, resource.urn)

    return StackValidationPolicy(name=name, description=description, enforcement_level=level, validate=validate)


def kind_of(resource: Inspected) -> str:
    """The Kubernetes kind in a type token: kubernetes:ray.io/v1:RayService -> RayService."""
    return resource.resource_type.rsplit(":", 1)[-1]


def of_type(resources: Iterable[PolicyResource], *resource_types: str) -> list[PolicyResource]:
    return [resource for resource in resources if resource.resource_type in resource_types]
