"""Rules on what the stack leaves behind: who owns and pays for it, and which credentials leave it."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import yaml
from pulumi_policy import EnforcementLevel, PolicyResource
from pulumi_policy.proxy import UnknownValueError

from .props import get, known_children, known_strings, mappings
from .resource_types import EKS_COMPONENTS, HELM_RELEASE, KUBERNETES_SECRET, RAY_SERVICE, STACK
from .rules import Inspected, kind_of, of_type, resource_policy, stack_policy
from .serving import containers, serve_config

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
KUBERNETES_CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
# A name whose last word is one of these says its value is a credential (HF_TOKEN, OPENAI_API_KEY, apiKey, db-password,
# the keys file's own `keys`); a name that goes on (HF_TOKEN_PATH, api_keys_file, max_tokens) names something else.
CREDENTIAL_WORDS = frozenset(
    {"key", "keys", "apikey", "token", "secret", "password", "passwd", "credential", "credentials"}
)
# Word boundaries inside a name: camelCase (apiKey) and an acronym before a word (HFToken).
CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
WORD = re.compile(r"[a-z0-9]+")


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


def _decoded(encoded: str) -> str | None:
    """A base64 value (a Secret's `data`, a ConfigMap's `binaryData`) as text, or None where it is not."""
    try:
        return base64.b64decode(encoded, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


def _secret_values(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    """The values of the stack's Kubernetes Secrets (the HF token, the API keys), as given and base64-decoded, and
    each line of a value of several (the keys file holds one key a line), less those too short to be credentials."""
    for secret in of_type(resources, KUBERNETES_SECRET):
        values = list(known_strings(get(secret.props, "stringData", default={})))
        decoded = (_decoded(encoded) for encoded in known_strings(get(secret.props, "data", default={})))
        values += [value for value in decoded if value is not None]
        for value in values:
            lines = [line.strip() for line in value.splitlines() if line.strip()]
            parts = dict.fromkeys([value, *lines])
            yield from ((secret, part) for part in parts if len(part) >= MIN_CREDENTIAL_LENGTH)


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
    """Stack outputs that carry credentials: stricter than "not plain", because a policy gets every secret decrypted and
    unmarked (docs/policy.md#what-a-policy-can-and-cannot-see); the tests prove the outputs' secrecy."""
    credentials = list(_secret_values(resources))
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


def names_a_credential(name: str) -> bool:
    words = WORD.findall(CAMEL_BOUNDARY.sub("_", name).lower())
    return bool(words) and words[-1] in CREDENTIAL_WORDS


def _holds_plain_config(resource_type: str) -> bool:
    """A Kubernetes object whose contents anyone who may read it reads in the clear: all but a Secret. A Helm release
    is left out: Helm keeps its values in a Secret of its own (https://helm.sh/docs/topics/advanced/#storage-backends)."""
    return resource_type.startswith("kubernetes:") and resource_type not in (KUBERNETES_SECRET, HELM_RELEASE)


def _config_map_entries(config_map: Inspected) -> Iterator[tuple[str, str]]:
    """(key, value) of a ConfigMap's `data`, and of its `binaryData` where that decodes to text."""
    for key, value in known_children(get(config_map.props, "data", default={})):
        if isinstance(value, str):
            yield str(key), value
    for key, value in known_children(get(config_map.props, "binaryData", default={})):
        text = _decoded(value) if isinstance(value, str) else None
        if text is not None:
            yield str(key), text


def _serve_env_vars(document: Any) -> Iterator[tuple[str, str]]:
    """(name, value) of every runtime_env's env_vars in a Serve config, wherever it sits: the application's, a
    deployment's ray_actor_options', an LLM config's (which Ray Serve LLM hands to the engine and its workers)."""
    for key, value in known_children(document):
        if key == "runtime_env":
            for name, literal in known_children(get(value, "env_vars", default={})):
                yield str(name), str(literal)
        yield from _serve_env_vars(value)


def _named_values(resource: Inspected) -> Iterator[tuple[str, str, str]]:
    """(where, name, value) of each named literal a Kubernetes object holds: a ConfigMap's keys, a container's env
    values (not valueFrom), a RayService's serve-config env vars."""
    if resource.resource_type == KUBERNETES_CONFIG_MAP:
        for key, value in _config_map_entries(resource):
            yield f"ConfigMap '{resource.name}' key '{key}'", key, value
    for container in containers(resource.props):
        for env in mappings(get(container, "env", default=[])):
            value = get(env, "value")
            if isinstance(value, str):
                name = str(get(env, "name", default=""))
                where = f"{kind_of(resource)} '{resource.name}' container '{get(container, 'name')}' env {name}"
                yield where, name, value
    if resource.resource_type == RAY_SERVICE:
        for name, value in _serve_env_vars(serve_config(resource.props)):
            yield f"RayService '{resource.name}' serveConfigV2 env_vars {name}", name, value


def _credentials_outside_secrets(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    """Credentials in Kubernetes objects that are not Secrets: a value of one of the stack's Secrets anywhere in one (a
    ConfigMap's decoded binaryData too), or a literal under a credential's name (docs/policy.md#policies,
    `credentials-in-secrets-only`). Values are matched against the Secrets' own values, not the keys' shape, which a
    digest or a zip name in the stack's own objects has too."""
    holders: dict[str, set[str]] = {}
    for secret, value in _secret_values(resources):
        holders.setdefault(value, set()).add(str(get(secret.props, "metadata", "name")))
    fix = (
        "Fix: no stack config copies it there; pods take a credential from a Secret (a volume, or env valueFrom "
        "secretKeyRef, as infra/serving/rayservice.py does for the API keys and the HF token): remove the copy and "
        "rotate the credential (`pulumi config set --secret serveApiKeys ...` or `... hfToken ...`)."
    )
    for resource in resources:
        if _holds_plain_config(resource.resource_type):
            # One report per finding: both LLM configs, or two keys of one Secret, make the same one.
            for problem in dict.fromkeys(_plain_credentials(resource, holders)):
                yield resource, f"{problem} {fix}"


def _plain_credentials(resource: Inspected, holders: Mapping[str, set[str]]) -> Iterator[str]:
    named = list(_named_values(resource))
    texts = [*known_strings(resource.props), *(value for _, _, value in named)]
    for credential, secrets in holders.items():
        if any(credential in text for text in texts):
            names = ", ".join(f"'{name}'" for name in sorted(secrets))
            yield (
                f"{kind_of(resource)} '{resource.name}' holds a value of Kubernetes Secret {names}, plain to whoever "
                "reads it."
            )
    for where, name, value in named:
        if value.strip() and names_a_credential(name):
            yield f"{where} is named as a credential and holds a literal value, not a Secret's."


OWNERSHIP_TAGS_PRESENT = resource_policy(
    "ownership-tags",
    "Every AWS resource carries the owner and cost-center tags.",
    EnforcementLevel.ADVISORY,
    lambda resource_type: resource_type.startswith("aws:") or resource_type in EKS_COMPONENTS,
    _missing_ownership_tags,
)
CREDENTIALS_NOT_IN_OUTPUTS = stack_policy(
    "credentials-not-in-outputs",
    "No stack output carries a credential in the clear: the HF token never, a kubeconfig and an API key only as "
    "their secret outputs (kubeconfig, serveApiKey).",
    EnforcementLevel.MANDATORY,
    _credentials_in_outputs,
)
CREDENTIALS_IN_SECRETS_ONLY = stack_policy(
    "credentials-in-secrets-only",
    "Credentials live in Secrets only: no other Kubernetes object (a ConfigMap, a container's env, the serve config's "
    "env_vars) holds a value of the stack's Secrets or a literal under a credential's name.",
    EnforcementLevel.MANDATORY,
    _credentials_outside_secrets,
)
