"""Rules on the Ray head's GCS store: the cluster's tables travel and rest encrypted, behind a password."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel

from .props import known
from .resource_types import ELASTICACHE_REPLICATION_GROUP
from .rules import Inspected, resource_policy

NO_CONFIG = "Fix: no stack config changes this; revert the change in infra/serving/gcs_store.py"


def _unprotected_store(resource: Inspected) -> Iterator[str]:
    """ElastiCache encrypts in transit only when asked (its default is off), takes an AUTH token only then, and in
    `preferred` mode also takes clients in the clear (https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/
    in-transit-encryption.html; pulumi-aws elasticache/replication_group.py `transit_encryption_enabled`,
    `auth_token`, `transit_encryption_mode`). A property that is there but unknown in a preview (a generated token)
    counts as set."""
    props, store = resource.props, f"ElastiCache group '{resource.name}'"
    if "transitEncryptionEnabled" not in props or known(props, "transitEncryptionEnabled") is False:
        yield (
            f"{store} does not encrypt in transit: the Ray cluster's tables and its password cross the VPC in the "
            f"clear. {NO_CONFIG} (transit_encryption_enabled=True)."
        )
    if known(props, "transitEncryptionMode") == "preferred":
        yield f"{store} also takes clients in the clear (transitEncryptionMode 'preferred'). {NO_CONFIG}."
    if known(props, "atRestEncryptionEnabled") is False:
        yield f"{store} keeps the Ray cluster's tables unencrypted. {NO_CONFIG} (at_rest_encryption_enabled=True)."
    if "authToken" not in props and not known(props, "userGroupIds"):
        yield (
            f"{store} asks no password (no AUTH token, no user group): whoever reaches its port can rewrite the Ray "
            f"cluster's tables. {NO_CONFIG} (auth_token)."
        )


GCS_STORE_PROTECTED = resource_policy(
    "gcs-store-protected",
    "The Ray head's GCS store encrypts in transit (required, not preferred) and at rest, and asks a password.",
    EnforcementLevel.MANDATORY,
    {ELASTICACHE_REPLICATION_GROUP},
    _unprotected_store,
)
