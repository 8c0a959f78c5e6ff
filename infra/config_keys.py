"""Which config keys exist, so that a misspelt key fails instead of leaving its setting at the default.

The project's keys are the ones the program reads (a test holds them equal to what `Pulumi.yaml`
declares). A provider's keys are the settings its installed SDK reads: the Pulumi engine configures a
default provider from every key of its namespace, and a key the provider does not know is silently
ignored, so `aws:regoin` would deploy to the default region.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

from pulumi._types import input_type_py_to_pulumi_names


@cache
def aws_provider_keys() -> frozenset[str]:
    """The keys pulumi-aws reads: each `__config__.get*('<key>')` of its generated `config/vars.py`.

    Read as source, not imported: importing `pulumi_aws.config.vars` alone trips its circular import.
    """
    spec = importlib.util.find_spec("pulumi_aws.config.vars")
    assert spec is not None and spec.origin is not None, "pulumi_aws is not installed"
    tree = ast.parse(Path(spec.origin).read_text())
    return frozenset(
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "__config__"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    )


@cache
def kubernetes_provider_keys() -> frozenset[str]:
    """The keys pulumi-kubernetes reads: its Provider's inputs (the SDK has no config module)."""
    from pulumi_kubernetes.provider import ProviderArgs

    return frozenset(input_type_py_to_pulumi_names(ProviderArgs).values())


def provider_keys() -> dict[str, frozenset[str]]:
    return {"aws": aws_provider_keys(), "kubernetes": kubernetes_provider_keys()}


def _closest(name: str, known: Iterable[str]) -> str:
    matches = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f"did you mean {matches[0]!r}?" if matches else "no known key is close"


def unknown_key_problems(settings: Mapping[str, str], project: str, declared: Iterable[str]) -> list[str]:
    """A problem for each key of `project` that is not `declared`, or of a provider that it does not read.

    `settings` maps each key to the value to show (a secret's value already hidden by the caller).
    """
    declared = set(declared)
    providers = provider_keys()
    problems = []
    for key, shown in sorted(settings.items()):
        namespace, _, name = key.rpartition(":")
        if namespace == project and name not in declared:
            problems.append(
                f"{key}={shown!r} is not a setting of this project ({_closest(name, declared)}): "
                "allowed are the keys Pulumi.yaml declares"
            )
        elif namespace in providers and name not in providers[namespace]:
            problems.append(
                f"{key}={shown!r} is not a setting of the {namespace} provider "
                f"({_closest(name, providers[namespace])}): the provider would ignore it"
            )
    return problems
