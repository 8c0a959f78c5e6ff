"""The ray-llm-eks policy pack: what a preview of this stack must never lose, and what it should keep.

`policy/__main__.py` serves these policies to the Pulumi CLI; the tests run them offline. Each
violation message says what is wrong and which stack-config key fixes it (or that none does).
"""

from __future__ import annotations

from pulumi_policy import Policy

from .cluster import EKS_CONTROL_PLANE_LOGGING, EKS_PUBLIC_ENDPOINT_RESTRICTED
from .exposure import LOAD_BALANCERS_SERVE_ONLY, NO_NODE_PORT_SERVICES, RAY_NAMESPACE_DEFAULT_DENY
from .gcs_store import GCS_STORE_PROTECTED
from .governance import CREDENTIALS_IN_SECRETS_ONLY, CREDENTIALS_NOT_IN_OUTPUTS, OWNERSHIP_TAGS_PRESENT
from .input_rules import AWS_INPUT_RULES
from .model_access import WORKER_ACCESS_MODEL_ONLY
from .nodes import GPU_NODES_EFA, GPU_NODES_SINGLE_AZ, GPU_ROOT_VOLUME, NODES_IMDS_ONE_HOP, NODES_NO_PUBLIC_IP
from .serving import (
    HELM_CHARTS_PINNED,
    IMAGES_PINNED,
    NIXL_LIBFABRIC_ON_EFA,
    PREFILL_DECODE_CONSISTENT,
    SERVE_ENDPOINT_AUTHENTICATED,
    SERVE_ENDPOINT_AUTHENTICATED_INTERNAL,
    SERVE_ENDPOINT_NOT_OPEN,
    SERVE_ENDPOINT_TLS,
)

PACK_NAME = "ray-llm-eks"

POLICIES: list[Policy] = [
    # mandatory: a violation fails the preview
    GPU_NODES_EFA,
    GPU_NODES_SINGLE_AZ,
    NODES_NO_PUBLIC_IP,
    NODES_IMDS_ONE_HOP,
    NIXL_LIBFABRIC_ON_EFA,
    PREFILL_DECODE_CONSISTENT,
    HELM_CHARTS_PINNED,
    IMAGES_PINNED,
    SERVE_ENDPOINT_NOT_OPEN,
    SERVE_ENDPOINT_TLS,
    SERVE_ENDPOINT_AUTHENTICATED,
    LOAD_BALANCERS_SERVE_ONLY,
    NO_NODE_PORT_SERVICES,
    RAY_NAMESPACE_DEFAULT_DENY,
    CREDENTIALS_NOT_IN_OUTPUTS,
    CREDENTIALS_IN_SECRETS_ONLY,
    WORKER_ACCESS_MODEL_ONLY,
    GCS_STORE_PROTECTED,
    AWS_INPUT_RULES,
    # advisory: a violation is a warning
    EKS_PUBLIC_ENDPOINT_RESTRICTED,
    EKS_CONTROL_PLANE_LOGGING,
    OWNERSHIP_TAGS_PRESENT,
    GPU_ROOT_VOLUME,
    SERVE_ENDPOINT_AUTHENTICATED_INTERNAL,
]

__all__ = ["PACK_NAME", "POLICIES"]
