"""Which config keys exist, so that a misspelt key fails instead of leaving its setting at the default: the project's
are the settings table's rows, a provider's the settings its installed SDK reads (the engine silently ignores a key
the provider does not know, so `aws:regoin` would deploy to the default region)."""

from __future__ import annotations

import ast
import difflib
import importlib
import importlib.util
import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

from pulumi._types import input_type_py_to_pulumi_names


@cache
def aws_provider_getters() -> dict[str, str]:
    """The keys pulumi-aws reads, each with the getter it reads it by (`get`, `get_bool`, `get_int`): every
    `__config__.get*('<key>')` of its generated `config/vars.py`.

    Read as source, not imported: importing `pulumi_aws.config.vars` alone trips its circular import.
    """
    spec = importlib.util.find_spec("pulumi_aws.config.vars")
    assert spec is not None and spec.origin is not None, "pulumi_aws is not installed"
    tree = ast.parse(Path(spec.origin).read_text())
    return {
        node.args[0].value: node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "__config__"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }


def aws_provider_keys() -> frozenset[str]:
    return frozenset(aws_provider_getters())


@cache
def aws_object_fields(key: str) -> frozenset[str] | None:
    """The fields of an object-valued pulumi-aws setting (`defaultTags` -> {"tags"}): the `@pulumi.getter` names of
    its class in `pulumi_aws.config.outputs` (DefaultTags, IgnoreTags, Endpoints, ...); None for other keys."""
    outputs = importlib.import_module("pulumi_aws.config.outputs")
    settings_type = getattr(outputs, key[:1].upper() + key[1:], None)
    if not isinstance(settings_type, type):
        return None
    return frozenset(
        name
        for member in vars(settings_type).values()
        if isinstance(member, property) and (name := getattr(member.fget, "_pulumi_name", None))
    )


@cache
def aws_list_settings() -> frozenset[str]:
    """The pulumi-aws settings that are lists of objects (`assumeRoles`, `endpoints`): the provider's own
    `ProviderArgs` types them `Sequence[...]`."""
    from pulumi_aws import ProviderArgs

    return frozenset(
        name
        for member in vars(ProviderArgs).values()
        if isinstance(member, property)
        and (name := getattr(member.fget, "_pulumi_name", None))
        and "Sequence[" in str(member.fget.__annotations__.get("return", ""))
    )


def _object_problem(key: str, value: str, fields: frozenset[str]) -> str | None:
    many = key in aws_list_settings()
    named = (
        ", ".join(sorted(fields))
        if len(fields) <= 10
        else f"the fields of pulumi_aws.config.outputs.{key[:1].upper()}{key[1:]}"
    )
    allowed = f"{'a JSON list of objects' if many else 'a JSON object'} of {named}"
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = None
    items = parsed if many else [parsed]
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        return f"aws:{key}={value!r} is invalid: the aws provider cannot read it; allowed is {allowed}"
    unknown = sorted({field for item in items for field in item} - fields)
    if unknown:
        return (
            f"aws:{key}={value!r} is invalid: the aws provider does not read {unknown[0]!r} "
            f"({_closest(unknown[0], fields)}); allowed is {allowed}"
        )
    tags = items[0].get("tags") if items else None
    if (
        key == "defaultTags"
        and tags is not None
        and not (isinstance(tags, dict) and all(isinstance(v, str) for v in tags.values()))
    ):
        return f'aws:{key}={value!r} is invalid: allowed is {{"tags": {{"<key>": "<value>", ...}}}}'
    return None


def provider_value_problems(settings: Mapping[str, str]) -> list[str]:
    """A problem for each aws provider setting whose value the provider cannot read as the type it reads."""
    getters = aws_provider_getters()
    problems = []
    for key, value in sorted(settings.items()):
        namespace, _, name = key.rpartition(":")
        if namespace != "aws" or name not in getters or value == "[secret]":
            continue
        getter, fields = getters[name], aws_object_fields(name)
        if getter == "get_bool" and value not in ("true", "false"):
            problems.append(f"{key}={value!r} is invalid: the aws provider reads a boolean; allowed is true or false")
        elif getter == "get_int" and not re.fullmatch(r"-?\d+", value):
            problems.append(f"{key}={value!r} is invalid: the aws provider reads an integer; allowed is an integer")
        elif fields is not None and (problem := _object_problem(name, value, fields)):
            problems.append(problem)
    return problems


@cache
def kubernetes_provider_keys() -> frozenset[str]:
    """The keys pulumi-kubernetes reads: its Provider's inputs (the SDK has no config module)."""
    from pulumi_kubernetes.provider import ProviderArgs

    return frozenset(input_type_py_to_pulumi_names(ProviderArgs).values())


# The engine's own settings (pulumi:disable-default-providers, ...), which the CLI may hand the program.
ENGINE_NAMESPACE = "pulumi"


def _closest(name: str, known: Iterable[str]) -> str:
    matches = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f"did you mean {matches[0]!r}?" if matches else "no known key is close"


def unknown_key_problems(settings: Mapping[str, str], project: str, declared: Iterable[str]) -> list[str]:
    """A problem for each key of `project` that is not `declared`, or of a provider that it does not read.

    `settings` maps each key to the value to show (a secret's value already hidden by the caller).
    """
    declared = set(declared)
    providers = {"aws": aws_provider_keys(), "kubernetes": kubernetes_provider_keys()}
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
        elif namespace not in (project, *providers, ENGINE_NAMESPACE):
            problems.append(
                f"{key}={shown!r} is in namespace {namespace!r}, which neither this project nor a provider it uses "
                f"reads ({_closest(namespace, (project, *providers))}): nothing would read it; allowed are "
                f"{project}:<key> (or a bare <key>), aws:<key> and kubernetes:<key>"
            )
    return problems
