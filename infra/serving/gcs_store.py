"""The Ray head's GCS store: an ElastiCache for Valkey replication group, so a restarted head reloads the cluster.

Without a store a restarted GCS is a new cluster and every GPU worker's raylet ends itself on it (measured); the
store's shape (Valkey, cluster mode off, a primary and a replica with failover, TLS with AUTH, reachable from the
system nodes only, a chosen maintenance window, no snapshot on destroy) and its sources are in
docs/head-fault-tolerance.md#what-the-stack-should-set and docs/head-fault-tolerance.md#elasticache-facts.

Imports: infra.components, infra.serving.rayservice, infra.settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_random as random
from pulumi.errors import InputPropertyErrorDetails

from infra.components import Children, problem, raise_input_errors
from infra.serving.rayservice import GCS_REDIS_PORT

ENGINE = "valkey"
ENGINE_VERSION = "8.0"
# Where the head dials it (through the ExternalName alias, which maps no port).
PORT = GCS_REDIS_PORT
# A primary and one replica: automatic failover needs at least two (pulumi-aws replication_group.py
# `num_cache_clusters`: "If automatic_failover_enabled or multi_az_enabled are true, must be at least 2").
CACHE_CLUSTERS = 2
# ElastiCache's AUTH token: 16 to 128 printable characters, none of them `"`, `/` or `@`
# (https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/auth.html); letters and digits only, 64 of them.
AUTH_TOKEN_LENGTH = 64


@dataclass(frozen=True)
class GcsStoreArgs:
    """Where the store goes and who may reach it."""

    vpc_id: pulumi.Input[str]
    subnet_ids: Sequence[pulumi.Input[str]]  # private subnets, one per AZ; two or more make the group Multi-AZ
    client_security_group_id: pulumi.Input[str]  # the only group admitted to PORT: the Ray head's nodes
    node_type: str = "cache.t4g.micro"
    # ElastiCache patches in this weekly window (UTC), failing the primary over: a head restart. Chosen, not left to
    # ElastiCache's random hour of the week (https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/
    # maintenance-window.html: "assigns a 60-minute maintenance window ... on a randomly chosen day of the week").
    maintenance_window: str = "sun:06:00-sun:07:00"
    tags: Mapping[str, str] = field(default_factory=dict)


def gcs_store_args_errors(args: GcsStoreArgs) -> list[InputPropertyErrorDetails]:
    if args.subnet_ids:
        return []
    return [problem("subnet_ids", "empty: the replication group needs a subnet")]


def multi_az(subnet_count: int) -> bool:
    """Multi-AZ needs the replica in another AZ than the primary: subnets in two AZs at least
    (https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/AutoFailover.html)."""
    return subnet_count >= 2


class GcsStore(pulumi.ComponentResource):
    """`primary_endpoint`: the primary's DNS name, which follows a failover; `auth_token`: the AUTH token, secret."""

    primary_endpoint: pulumi.Output[str]
    auth_token: pulumi.Output[str]

    def __init__(self, name: str, args: GcsStoreArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        raise_input_errors("GcsStore", gcs_store_args_errors(args))
        super().__init__("ray-llm-eks:serving:GcsStore", name, None, opts)
        children = Children(self, name)
        security_group = aws.ec2.SecurityGroup(
            children.name("clients"),
            description="Ray GCS store: TLS Redis protocol from the system nodes only",
            vpc_id=args.vpc_id,
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="tcp",
                    from_port=PORT,
                    to_port=PORT,
                    security_groups=[args.client_security_group_id],
                    description="the Ray head GCS",
                )
            ],
            tags=dict(args.tags),
            opts=children.opts(),
        )
        subnet_group = aws.elasticache.SubnetGroup(
            children.name("subnets"),
            description="Ray GCS store: the private subnets",
            subnet_ids=list(args.subnet_ids),
            tags=dict(args.tags),
            opts=children.opts(),
        )
        token = random.RandomPassword(
            children.name("auth-token"), length=AUTH_TOKEN_LENGTH, special=False, opts=children.opts()
        )
        group = aws.elasticache.ReplicationGroup(
            children.name("valkey"),
            description="Ray GCS fault tolerance: the tables of the Ray head",
            engine=ENGINE,
            engine_version=ENGINE_VERSION,
            node_type=args.node_type,
            num_cache_clusters=CACHE_CLUSTERS,
            automatic_failover_enabled=True,
            multi_az_enabled=multi_az(len(args.subnet_ids)),
            port=PORT,
            subnet_group_name=subnet_group.name,
            security_group_ids=[security_group.id],
            transit_encryption_enabled=True,
            at_rest_encryption_enabled=True,
            auth_token=token.result,
            snapshot_retention_limit=0,
            maintenance_window=args.maintenance_window,
            apply_immediately=True,
            tags=dict(args.tags),
            opts=children.opts(),
        )
        self.primary_endpoint = group.primary_endpoint_address
        # Secret already: pulumi-random marks `result` so (random_password.py additional_secret_outputs).
        self.auth_token = token.result
        self.register_outputs({})
