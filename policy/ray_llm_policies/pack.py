"""The ray-llm-eks policy pack: what a preview of this stack must never lose, and what it should keep.

`policy/__main__.py` serves these policies to the Pulumi CLI; the tests run them offline. Each
violation message says what is wrong and which stack-config key fixes it (or that none does).
"""

from __future__ import annotations

from pulumi_policy import Policy

from . import cluster, exposure, gcs_store, governance, input_rules, least_privilege, model_access, nodes, serving

PACK_NAME = "ray-llm-eks"

POLICIES: list[Policy] = [
    # mandatory: a violation fails the preview
    nodes.GPU_NODES_EFA,
    nodes.GPU_NODES_SINGLE_AZ,
    nodes.NODES_NO_PUBLIC_IP,
    nodes.NODES_IMDS_ONE_HOP,
    serving.NIXL_LIBFABRIC_ON_EFA,
    serving.PREFILL_DECODE_CONSISTENT,
    serving.HELM_CHARTS_PINNED,
    serving.IMAGES_PINNED,
    serving.SERVE_ENDPOINT_NOT_OPEN,
    serving.SERVE_ENDPOINT_TLS,
    serving.SERVE_ENDPOINT_AUTHENTICATED,
    exposure.LOAD_BALANCERS_SERVE_ONLY,
    exposure.NO_NODE_PORT_SERVICES,
    exposure.RAY_NAMESPACE_DEFAULT_DENY,
    governance.CREDENTIALS_NOT_IN_OUTPUTS,
    governance.CREDENTIALS_IN_SECRETS_ONLY,
    model_access.WORKER_ACCESS_MODEL_ONLY,
    gcs_store.GCS_STORE_PROTECTED,
    input_rules.AWS_INPUT_RULES,
    least_privilege.GCS_STORE_SECURITY_GROUPS_ONLY,
    least_privilege.PODS_CONFINED,
    least_privilege.NETWORK_POLICIES_NAME_PORTS,
    least_privilege.RAY_DASHBOARD_OPERATOR_ONLY,
    least_privilege.BUCKETS_PRIVATE,
    least_privilege.IAM_NO_ADMINISTRATORS,
    least_privilege.NO_ADMIN_BINDINGS,
    least_privilege.NODES_PRIVATE_SUBNETS,
    # advisory: a violation is a warning
    cluster.EKS_PUBLIC_ENDPOINT_RESTRICTED,
    cluster.EKS_CONTROL_PLANE_LOGGING,
    governance.OWNERSHIP_TAGS_PRESENT,
    nodes.GPU_ROOT_VOLUME,
    serving.SERVE_ENDPOINT_AUTHENTICATED_INTERNAL,
]
