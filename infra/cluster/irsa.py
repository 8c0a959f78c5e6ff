"""IAM roles for service accounts (IRSA): a role only one Kubernetes service account may assume."""

from __future__ import annotations

from typing import Any


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
