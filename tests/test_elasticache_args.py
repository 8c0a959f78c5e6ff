"""What pulumi-aws (7.51.1, requirements.txt) documents for `aws.elasticache.ReplicationGroup`, the resource the stack's
GCS store is: the rules of its arguments the wiring must follow, read in the installed package's argument docs
(pulumi_aws/elasticache/replication_group.py, ReplicationGroupArgs and ReplicationGroup's outputs), so a provider
upgrade that changes one fails here (docs/head-fault-tolerance.md, "ElastiCache facts").
"""

from __future__ import annotations

import inspect

import pulumi_aws as aws

ARGS = aws.elasticache.ReplicationGroupArgs


def doc(name: str, owner: type = ARGS) -> str:
    return " ".join(inspect.getdoc(getattr(owner, name)).split())


def test_the_auth_token_needs_transit_encryption():
    """ElastiCache's AUTH works only with in-transit encryption (https://docs.aws.amazon.com/AmazonElastiCache/latest/
    dg/auth.html: "AUTH can only be enabled for encryption in-transit enabled Valkey or Redis OSS clusters")."""
    assert "Can be specified only if `transit_encryption_enabled = true`" in doc("auth_token")
    assert "Can be specified only if `transit_encryption_enabled = true`" in doc("auth_token_wo")


def test_valkey_is_an_engine_and_encrypts_at_rest_by_default():
    assert "Valid values are `redis` or `valkey`" in doc("engine")
    assert "When `engine` is `valkey`, default is `true`" in doc("at_rest_encryption_enabled")


def test_automatic_failover_needs_a_replica_and_multi_az_needs_automatic_failover():
    assert "If enabled, `num_cache_clusters` must be greater than 1" in doc("automatic_failover_enabled")
    assert "If `true`, `automatic_failover_enabled` must also be enabled" in doc("multi_az_enabled")
    assert "If `automatic_failover_enabled` or `multi_az_enabled` are `true`, must be at least 2" in doc(
        "num_cache_clusters"
    )


def test_destroy_leaves_no_snapshot_unless_one_is_asked_for():
    assert "If omitted, no final snapshot will be made" in doc("final_snapshot_identifier")
    assert "If the value of `snapshot_retention_limit` is set to zero (0), backups are turned off" in doc(
        "snapshot_retention_limit"
    )


def test_with_cluster_mode_disabled_the_primary_endpoint_is_the_address_to_use_on_6379():
    assert "Address of the endpoint for the primary node in the replication group, if the cluster mode is disabled" in (
        doc("primary_endpoint_address", aws.elasticache.ReplicationGroup)
    )
    assert "for Redis the default port is 6379" in doc("port")
