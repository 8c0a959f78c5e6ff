"""Rules on what the stack leaves behind: who owns and pays for it, and which credentials leave it."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import yaml
from pulumi_policy import EnforcementLevel, PolicyResource
from pulumi_policy.proxy import UnknownValueError

from .props import get, known_strings
from .resource_types import EKS_COMPONENTS, KUBERNETES_SECRET, STACK
from .rules import Inspected, of_type, resource_policy, stack_policy

# Tag on every AWS resource -> the stack-config key that sets it.
OWNERSHIP_TAGS = {"owner": "owner", "cost-center": "costCenter"}
# Taggable types this stack declares (itself or through pulumi-eks); a missing `tags` on one of them
# is an omission. Other AWS types are checked only when they carry tags (many cannot: attachments,
# associations, security group rules).
TAGGABLE_TYPES = frozenset(
    {
        "aws:ec2/vpc:Vpc",
        "aws:ec2/subnet:Subnet",
        "aws:ec2/internetGateway:InternetGateway",
        "aws:ec2/eip:Eip",
        "aws:ec2/natGateway:NatGateway",
        "aws:ec2/routeTable:RouteTable",
        "aws:ec2/securityGroup:SecurityGroup",
        "aws:ec2/placementGroup:PlacementGroup",
        "aws:ec2/launchTemplate:LaunchTemplate",
        "aws:kms/key:Key",
        "aws:eks/cluster:Cluster",
        "aws:eks/nodeGroup:NodeGroup",
    }
)
# The only output allowed to carry a kubeconfig: the program exports it as a secret.
KUBECONFIG_OUTPUTS = frozenset({"kubeconfig"})
# The one output that may carry a Secret's value: the first API key, exported as a secret for the operator's own
# calls, from the keys Secret (by its Kubernetes name, metadata.name: the Pulumi resource's name is its component's).
KEY_OUTPUTS = {"serveApiKey": "serve-api-keys"}
# Shorter Secret values ("true", a port) would match innocent outputs by chance.
MIN_CREDENTIAL_LENGTH = 8


def _is_tagged_resource(resource_type: str) -> bool:
    return resource_type.startswith("aws:") or resource_type in EKS_COMPONENTS


def _missing_ownership_tags(resource: Inspected) -> Iterator[str]:
    if resource.resource_type in EKS_COMPONENTS and not resource.props:
        return  # a real preview shows pulumi-eks components without inputs; their children are checked
    tags = get(resource.props, "tags")
    if tags is None:
        if resource.resource_type in TAGGABLE_TYPES:
            yield (
                f"{resource.resource_type} '{resource.name}' has no tags at all, so its cost has no owner. Fix: "
                "declare it with the stack's tags (tags=cfg.tags in infra/), which carry owner and costCenter from "
                "stack config."
            )
        return
    missing = [tag for tag in OWNERSHIP_TAGS if not get(tags, tag)]
    if missing:
        keys = " and ".join(OWNERSHIP_TAGS[tag] for tag in missing)
        yield (
            f"{resource.resource_type} '{resource.name}' has no {' or '.join(missing)} tag, so its cost has no owner. "
            f"Fix: set {keys} in stack config; the stack tags every AWS resource with them."
        )


def _secret_values(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    """The values of the stack's Kubernetes Secrets (the HF token, the API keys), as given and base64-decoded, and
    each line of a value of several (the keys file holds one key a line)."""
    for secret in of_type(resources, KUBERNETES_SECRET):
        values = list(known_strings(get(secret.props, "stringData", default={})))
        for encoded in known_strings(get(secret.props, "data", default={})):
            try:
                values.append(base64.b64decode(encoded, validate=True).decode())
            except (binascii.Error, UnicodeDecodeError):
                continue
        for value in values:
            lines = [line.strip() for line in value.splitlines() if line.strip()]
            yield from ((secret, part) for part in dict.fromkeys([value, *lines]))


def _parse_document(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def _holds_kubeconfig(value: Any) -> bool:
    """A kubeconfig (kind: Config with clusters or users), as a mapping or as JSON/YAML text."""
    if isinstance(value, str):
        # Parse only what could be one; most outputs are names and commands.
        return "Config" in value and "kind" in value and _holds_kubeconfig(_parse_document(value))
    try:
        return (
            isinstance(value, Mapping) and get(value, "kind") == "Config" and ("clusters" in value or "users" in value)
        )
    except UnknownValueError:
        return False


def _credentials_in_outputs(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    """Stack outputs that carry credentials.

    A policy cannot tell a secret output from a plain one: pulumi_policy hands every secret over
    decrypted and unmarked (pulumi/pulumi-policy#241). So the rule is stricter than "not plain": no
    output may carry a Kubernetes Secret's value (nothing outside the cluster needs the HF token) but
    serveApiKey a key of the keys Secret, and a kubeconfig may leave only through the output the
    program marks secret. That these outputs are secret is proven by the tests, where the mock runner
    sees secrecy.
    """
    credentials = [
        (secret, value) for secret, value in _secret_values(resources) if len(value) >= MIN_CREDENTIAL_LENGTH
    ]
    for stack in of_type(resources, STACK):
        for output_name in stack.props:
            try:
                value = stack.props[output_name]
            except UnknownValueError:
                continue  # known only after the update; the policy runs again then
            strings = list(known_strings(value))
            for secret, credential in credentials:
                secret_name = get(secret.props, "metadata", "name")
                if KEY_OUTPUTS.get(output_name) == secret_name:
                    continue  # its own secret output; that it is secret is proven by the tests
                if any(credential in text for text in strings):
                    yield (
                        stack,
                        f"stack output '{output_name}' contains a value of Kubernetes Secret '{secret_name}'. "
                        "Fix: remove the export; Secret values stay in the cluster (the pods read the Hugging Face "
                        "token from it; set it only with `pulumi config set --secret hfToken <token>`), and an API "
                        "key of serveApiKeys leaves it only as the secret output serveApiKey.",
                    )
            if output_name not in KUBECONFIG_OUTPUTS and _holds_kubeconfig(value):
                yield (
                    stack,
                    f"stack output '{output_name}' contains a kubeconfig. Fix: no stack config exports it; use the "
                    f"secret output {', '.join(sorted(KUBECONFIG_OUTPUTS))} (or `aws eks update-kubeconfig`) and "
                    "remove this export.",
                )


OWNERSHIP_TAGS_PRESENT = resource_policy(
    "ownership-tags",
    "Every AWS resource carries the owner and cost-center tags.",
    EnforcementLevel.ADVISORY,
    _is_tagged_resource,
    _missing_ownership_tags,
)
CREDENTIALS_NOT_IN_OUTPUTS = stack_policy(
    "credentials-not-in-outputs",
    "No stack output carries a credential in the clear: the HF token never, a kubeconfig and an API key only as "
    "their secret outputs (kubeconfig, serveApiKey).",
    EnforcementLevel.MANDATORY,
    _credentials_in_outputs,
)
