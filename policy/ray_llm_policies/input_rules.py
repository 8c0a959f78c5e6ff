"""AWS's own input rules on every AWS resource of a preview (the table: aws_input_rules.py); in a real preview it also
sees the names pulumi-aws generates and the children pulumi-eks builds
(docs/aws-input-rules.md#what-holds-the-class)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel

from .aws_input_rules import RULES, violations
from .props import is_sequence, known_children
from .rules import Inspected, resource_policy


def _known(value: Any) -> Any:
    """The property as plain data, without the parts unknown until the update runs."""
    if isinstance(value, Mapping):
        return {key: _known(item) for key, item in known_children(value)}
    if is_sequence(value):
        return [_known(item) for _, item in known_children(value)]
    return value


def _refused_inputs(resource: Inspected) -> Iterator[str]:
    for violation in violations(resource.resource_type, _known(resource.props)):
        yield (
            f"{resource.resource_type} '{resource.name}': {violation}. AWS refuses it; no stack config changes this: "
            "change the value where the code sets it (docs/aws-input-rules.md)."
        )


AWS_INPUT_RULES = resource_policy(
    "aws-input-rules",
    "Every AWS name, description, tag and enumerated value meets the rule AWS enforces on it.",
    EnforcementLevel.MANDATORY,
    RULES,
    _refused_inputs,
)
