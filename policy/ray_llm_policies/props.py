"""Reading resource properties as the policy engine hands them over: read-only proxies that raise `UnknownValueError` on
a value unknown in preview, numbers as floats and some AWS booleans as strings; these helpers absorb that, so the
policies read like the stack's own code."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy.proxy import UnknownValueError


def is_sequence(value: Any) -> bool:
    """A list-like property (a string is a Sequence too, but never a list of items here)."""
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def get(value: Any, *path: str | int, default: Any = None) -> Any:
    """The property at `path` (keys of mappings, indices of lists), or `default` where it is absent."""
    for step in path:
        if isinstance(step, int):
            if not is_sequence(value) or not -len(value) <= step < len(value):
                return default
        elif not isinstance(value, Mapping) or step not in value:
            return default
        value = value[step]
    return default if value is None else value


def known(value: Any, *path: str | int) -> Any:
    """`get`, or None where the property is unknown until the update runs (a role's generated name in a first
    preview)."""
    try:
        return get(value, *path)
    except UnknownValueError:
        return None


def mappings(value: Any) -> list[Mapping[str, Any]]:
    """The mapping items of a list property (an absent or scalar property has none)."""
    return [item for item in value if isinstance(item, Mapping)] if is_sequence(value) else []


def policy_document(value: Any) -> Mapping[str, Any]:
    """An IAM policy document as a resource holds it: JSON text (Python's SDK), or the document itself (the
    TypeScript SDK takes `string | PolicyDocument`); {} for anything else."""
    try:
        document = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return {}
    return document if isinstance(document, Mapping) else {}


def statements(document: Any) -> list[Mapping[str, Any]]:
    """An IAM policy document's statements: `Statement` is one statement or a list of them."""
    statement = get(document, "Statement")
    return [statement] if isinstance(statement, Mapping) else mappings(statement)


def as_bool(value: Any) -> bool:
    """True for `True` and for the AWS provider's string form "true"."""
    return value is True or (isinstance(value, str) and value.lower() == "true")


def as_number(value: Any) -> float | None:
    """A number property (floats on the wire; Kubernetes quantities are strings such as "1")."""
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def known_children(value: Any) -> Iterator[tuple[str | int, Any]]:
    """(key, item) of a mapping or list property, skipping the items unknown until the update runs."""
    if isinstance(value, Mapping) or is_sequence(value):
        keys = list(value) if isinstance(value, Mapping) else range(len(value))
        for key in keys:
            try:
                yield key, value[key]
            except UnknownValueError:
                continue


def known_strings(value: Any) -> Iterator[str]:
    """Every string inside a property, skipping the parts that are unknown until the update runs."""
    if isinstance(value, str):
        yield value
    for _, item in known_children(value):
        yield from known_strings(item)
