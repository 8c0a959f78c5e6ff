"""The GPU workers' cloud access: read the models' S3 prefixes, and nothing else.

Any other action, object or unnarrowed listing, or a managed policy on the workers' role, hands the engines (and
whatever code a model ships) more than the weights. Which role is the workers', the routes its permissions come by,
and the IAM and S3 sources: docs/policy.md#policies, `worker-access-model-only`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource
from pulumi_policy.proxy import UnknownValueError

from .props import get, is_sequence, known, known_children, mappings, policy_document, statements
from .resource_types import RAY_SERVICE
from .rules import of_type, stack_policy
from .serving import ServeConfigError, pd_applications, serve_config

IAM_ROLE = "aws:iam/role:Role"
IAM_ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
IAM_ROLE_POLICY_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
IAM_POLICY_ATTACHMENT = "aws:iam/policyAttachment:PolicyAttachment"
IAM_ROLE_POLICY_ATTACHMENTS_EXCLUSIVE = "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive"
EKS_POD_IDENTITY_ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
# A trust with no `:sub` condition: any service account the OIDC provider vouches for.
ANY_SUBJECT = "*"
FIX = "Fix: no stack config widens it; the reader's policy is infra/serving/model_cache.py reader_policy."


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [item for item in value if isinstance(item, str)] if is_sequence(value) else []


def _s3_prefixes(rayservice: PolicyResource) -> set[tuple[str, str]]:
    """(bucket, prefix) of each s3:// model_source and LoRA adapter path the serve config names."""
    configs = [config for app in pd_applications(rayservice.props) for _, config in app.sides()]
    # The models served beside the pair: the several-model builder's `llm_configs` (docs/models.md).
    apps = mappings(get(serve_config(rayservice.props), "applications"))
    configs += [config for app in apps for config in mappings(get(app, "args", "llm_configs"))]
    uris = [get(config, "model_loading_config", "model_source") for config in configs]
    uris += [get(config, "lora_config", "dynamic_lora_loading_path") for config in configs]
    sources = set()
    for uri in uris:
        if isinstance(uri, str) and uri.startswith("s3://"):
            bucket, _, prefix = uri.removeprefix("s3://").partition("/")
            sources.add((bucket, prefix.strip("/")))
    return sources


def _worker_subjects(rayservice: PolicyResource) -> set[str]:
    namespace = get(rayservice.props, "metadata", "namespace", default="default")
    groups = mappings(get(rayservice.props, "spec", "rayClusterConfig", "workerGroupSpecs"))
    accounts = {get(group, "template", "spec", "serviceAccountName") for group in groups}
    return {f"system:serviceaccount:{namespace}:{account}" for account in accounts if isinstance(account, str)}


def _trusted_subjects(role: PolicyResource) -> set[str]:
    """The service-account subjects (or patterns) the role's web-identity trust lets in; ANY_SUBJECT where a
    statement names none; none while the trust policy is unknown (a first preview)."""
    subjects = set()
    try:
        for statement in statements(policy_document(get(role.props, "assumeRolePolicy"))):
            if get(statement, "Effect") != "Allow" or not get(statement, "Principal", "Federated"):
                continue
            named = set()
            for _, condition in known_children(get(statement, "Condition", default={})):
                if isinstance(condition, Mapping):
                    for key, value in condition.items():
                        if str(key).endswith(":sub"):
                            named.update(_strings(value))
            subjects.update(named or {ANY_SUBJECT})
    except UnknownValueError:
        return set()
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


def _names_role(attached: PolicyResource, role: PolicyResource) -> bool:
    """Whether a resource attaches something to `role`: it depends on it, or names it (by name or ARN)."""
    if role in attached.dependencies:
        return True
    names = {value for value in (known(role.props, "name"), known(role.props, "arn")) if isinstance(value, str)}
    named = {name for key in ("role", "roleName", "roles") for name in _strings(known(attached.props, key))}
    return bool(names & named)


def _managed_policies(
    role: PolicyResource, resources: Sequence[PolicyResource]
) -> Iterator[tuple[PolicyResource, str]]:
    """(the resource, the managed policy ARN) of every managed policy attached to `role`."""
    for arn in _strings(known(role.props, "managedPolicyArns")):
        yield role, arn
    for attached in resources:
        if not _names_role(attached, role):
            continue
        if attached.resource_type in (IAM_ROLE_POLICY_ATTACHMENT, IAM_POLICY_ATTACHMENT):
            # Any attachment is one too many; its ARN may be unknown in a first preview (another resource's output).
            yield attached, known(attached.props, "policyArn") or "ARN unknown until the update"
        elif attached.resource_type == IAM_ROLE_POLICY_ATTACHMENTS_EXCLUSIVE:
            for arn in _strings(known(attached.props, "policyArns")):
                yield attached, arn


def _inline_policies(role: PolicyResource, resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, Any]]:
    """(the resource, the policy's JSON) of every inline policy of `role`."""
    for inline in mappings(known(role.props, "inlinePolicies")):
        yield role, get(inline, "policy")
    for attached in resources:
        if attached.resource_type == IAM_ROLE_POLICY and _names_role(attached, role):
            yield attached, known(attached.props, "policy")


def _associated(role: PolicyResource, resources: Sequence[PolicyResource], subjects: set[str]) -> bool:
    """Whether an EKS Pod Identity association hands `role` to one of the workers' service accounts."""
    for association in of_type(resources, EKS_POD_IDENTITY_ASSOCIATION):
        namespace, account = known(association.props, "namespace"), known(association.props, "serviceAccount")
        if f"system:serviceaccount:{namespace}:{account}" not in subjects:
            continue
        arn = known(role.props, "arn")
        if role in association.dependencies or (isinstance(arn, str) and known(association.props, "roleArn") == arn):
            return True
    return False


def _worker_roles(resources: Sequence[PolicyResource], subjects: set[str]) -> Iterable[PolicyResource]:
    return [
        role
        for role in of_type(resources, IAM_ROLE)
        if any(fnmatchcase(subject, pattern) for pattern in _trusted_subjects(role) for subject in subjects)
        or _associated(role, resources, subjects)
    ]


def _worker_access_beyond_the_model(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    for rayservice in of_type(resources, RAY_SERVICE):
        try:
            prefixes = _s3_prefixes(rayservice)
        except ServeConfigError:
            continue  # reported by the serving rules
        subjects = _worker_subjects(rayservice)
        if not subjects:
            continue
        where = ", ".join(f"s3://{b}/{p}" for b, p in sorted(prefixes)) or "no S3 model source"
        for role in _worker_roles(resources, subjects):
            for attached, arn in _managed_policies(role, resources):
                yield (
                    attached,
                    f"IAM role '{role.name}' of the GPU workers has a managed policy attached ({arn}): they may only "
                    f"read the model's S3 prefix. {FIX}",
                )
            for attached, text in _inline_policies(role, resources):
                for statement in statements(policy_document(text)):
                    problem = _statement_problem(statement, prefixes)
                    if problem:
                        yield (
                            attached,
                            f"IAM role '{role.name}' of the GPU workers allows {problem} ({where}): they may only "
                            f"read the model's S3 prefix. {FIX}",
                        )


WORKER_ACCESS_MODEL_ONLY = stack_policy(
    "worker-access-model-only",
    "The GPU workers' IAM role (IRSA) may only read the model's S3 prefix: GetObject under it, ListBucket narrowed "
    "to it, nothing attached besides.",
    EnforcementLevel.MANDATORY,
    _worker_access_beyond_the_model,
)
