"""IAM roles for service accounts (IRSA): a role only one Kubernetes service account may assume."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_aws as aws

from infra.cluster.eks import Cluster


def service_account_trust(
    oidc_provider_arn: str, oidc_issuer: str, namespace: str, service_account: str
) -> dict[str, Any]:
    """Only `namespace/service_account`, through the cluster's OIDC provider, may assume the role
    (https://docs.aws.amazon.com/eks/latest/userguide/associate-service-account-role.html)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": oidc_provider_arn},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{oidc_issuer}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                        f"{oidc_issuer}:aud": "sts.amazonaws.com",
                    }
                },
            }
        ],
    }


def service_account_role(
    name: str, cluster: Cluster, namespace: str, account: str, tags: Mapping[str, str], opts: pulumi.ResourceOptions
) -> aws.iam.Role:
    """An IAM role only `namespace/account` of `cluster` may assume."""
    oidc = pulumi.Output.all(cluster.eks_cluster.oidc_provider_arn, cluster.eks_cluster.oidc_issuer)
    trust = oidc.apply(lambda found: json.dumps(service_account_trust(found[0], found[1], namespace, account)))
    return aws.iam.Role(name, assume_role_policy=trust, tags=dict(tags), opts=opts)
