"""The GPU workers' cloud access: read the model's S3 prefix, and nothing else.

The workers' pods run as a Kubernetes service account whose IAM role (IRSA: the role trusts
`system:serviceaccount:<namespace>:<account>` through the cluster's OIDC provider) the stack grants read access to
the prefix both sides' `model_source` names (infra/model_cache.py reader_policy). Any other action, any object
outside the prefix, a listing not narrowed to it (s3:ListBucket without an s3:prefix condition under it,
https://docs.aws.amazon.com/AmazonS3/latest/userguide/amazon-s3-policy-keys.html), or a managed policy attached
to that role hands the engines (and whatever code a model ships) more than the weights.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource
from pulumi_policy.proxy import UnknownValueError

from .props import get, is_sequence, known_children, mappings
from .resource_types import RAY_SERVICE
from .rules import of_type, stack_policy
from .serving import ServeConfigError, pd_applications

IAM_ROLE = "aws:iam/role:Role"
IAM_ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
IAM_ROLE_POLICY_ATTACHMENTS = ("aws:iam/rolePolicyAttachment:RolePolicyAttachment",)
READ_ACTIONS = {"s3:GetObject", "s3:ListBucket"}
FIX = "Fix: no stack config widens it; the reader's policy is infra/model_cache.py reader_policy."


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [item for item in value if isinstance(item, str)] if is_sequence(value) else []


def _s3_prefixes(rayservice: PolicyResource) -> set[tuple[str, str]]:
    """(bucket, prefix) of each side's s3:// model_source."""
    sources = set()
    for app in pd_applications(rayservice.props):
        for _, llm_config in app.sides():
            source = get(llm_config, "model_loading_config", "model_source")
            if isinstance(source, str) and source.startswith("s3://"):
                bucket, _, prefix = source.removeprefix("s3://").partition("/")
                sources.add((bucket, prefix.strip("/")))
    return sources


def _worker_subjects(rayservice: PolicyResource) -> set[str]:
    namespace = get(rayservice.props, "metadata", "namespace", default="default")
    groups = mappings(get(rayservice.props, "spec", "rayClusterConfig", "workerGroupSpecs"))
    accounts = {get(group, "template", "spec", "serviceAccountName") for group in groups}
    return {f"system:serviceaccount:{namespace}:{account}" for account in accounts if isinstance(account, str)}


def _trusted_subjects(role: PolicyResource) -> set[str]:
    text = get(role.props, "assumeRolePolicy")
    try:
        document = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return set()
    subjects = set()
    for statement in mappings(get(document, "Statement")):
        for _, condition in known_children(get(statement, "Condition", default={})):
            if isinstance(condition, Mapping):
                for key, value in condition.items():
                    if str(key).endswith(":sub"):
                        subjects.update(_strings(value))
    return subjects


def _statement_problem(statement: Mapping[str, Any], prefixes: set[tuple[str, str]]) -> str | None:
    """What a statement grants beyond reading one of the model prefixes, or None."""
    if get(statement, "Effect") != "Allow":
        return None
    actions = set(_strings(get(statement, "Action")))
    names = {resource.split(":::", 1)[-1] for resource in _strings(get(statement, "Resource"))}
    if get(statement, "NotAction") or get(statement, "NotResource"):
        return "NotAction/NotResource (everything but a list)"
    if actions == {"s3:GetObject"}:
        outside = names - {f"{bucket}/{prefix}/*" for bucket, prefix in prefixes}
        return f"s3:GetObject on {sorted(outside)}, outside the model's prefix" if outside else None
    if actions == {"s3:ListBucket"}:
        outside = names - {bucket for bucket, _ in prefixes}
        if outside:
            return f"s3:ListBucket on {sorted(outside)}, not the model's bucket"
        allowed = {value for bucket, prefix in prefixes if bucket in names for value in (f"{prefix}/*", prefix)}
        listed = set(_strings(get(statement, "Condition", "StringLike", "s3:prefix")))
        if not listed or not listed <= allowed:
            return f"s3:ListBucket with s3:prefix {sorted(listed) or 'unset'}, not only the model's prefix"
        return None
    return f"{sorted(actions)} (only s3:GetObject and s3:ListBucket, each in its own statement)"


def _trust_subjects_or_none(role: PolicyResource) -> set[str]:
    """The role's trusted subjects, none while its trust policy is unknown (a first preview)."""
    try:
        return _trusted_subjects(role)
    except UnknownValueError:
        return set()


def _worker_access_beyond_the_model(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    for rayservice in of_type(resources, RAY_SERVICE):
        try:
            prefixes = _s3_prefixes(rayservice)
        except ServeConfigError:
            continue  # reported by the serving rules
        subjects = _worker_subjects(rayservice)
        if not subjects:
            continue
        roles = [role for role in of_type(resources, IAM_ROLE) if _trust_subjects_or_none(role) & subjects]
        for role in roles:
            for attached in resources:
                if role not in attached.dependencies:
                    continue
                if attached.resource_type in IAM_ROLE_POLICY_ATTACHMENTS:
                    yield (
                        attached,
                        (
                            f"IAM role '{role.name}' of the GPU workers has a managed policy attached "
                            f"({get(attached.props, 'policyArn')}): they may only read the model's S3 prefix. {FIX}"
                        ),
                    )
                if attached.resource_type != IAM_ROLE_POLICY:
                    continue
                text = get(attached.props, "policy")
                try:
                    document = json.loads(text) if isinstance(text, str) else {}
                except ValueError:
                    continue
                for statement in mappings(get(document, "Statement")):
                    problem = _statement_problem(statement, prefixes)
                    if problem:
                        where = ", ".join(f"s3://{b}/{p}" for b, p in sorted(prefixes)) or "no S3 model source"
                        yield (
                            attached,
                            (
                                f"IAM role '{role.name}' of the GPU workers allows {problem} ({where}): they may only "
                                f"read the model's S3 prefix. {FIX}"
                            ),
                        )


WORKER_ACCESS_MODEL_ONLY = stack_policy(
    "worker-access-model-only",
    "The GPU workers' IAM role (IRSA) may only read the model's S3 prefix: GetObject under it, ListBucket narrowed "
    "to it, nothing attached besides.",
    EnforcementLevel.MANDATORY,
    _worker_access_beyond_the_model,
)
