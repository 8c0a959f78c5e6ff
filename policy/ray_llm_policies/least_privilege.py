"""Least privilege inside and around the cluster (issue 51): pods confined to what they need, no NetworkPolicy that
opens every port, the GCS store reached by security group only, the model bucket private, no administrator IAM or
Kubernetes role, nodes in private subnets."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource

from .props import as_bool, get, is_sequence, known, mappings, policy_document, statements
from .resource_types import ELASTICACHE_REPLICATION_GROUP, NETWORK_POLICY, NODE_GROUPS, RAY_SERVICE, SUBNET
from .rules import Inspected, kind_of, of_type, resource_policy, stack_policy

# The one host path a pod of the stack mounts: vLLM's compile cache on the GPU node (infra/kube/scheduling.py
# VLLM_CACHE_HOST_PATH; a test holds the two equal), and the one capability one adds: IPC_LOCK, for EFA's pinned
# memory (infra/serving/rayservice.py).
ALLOWED_HOST_PATHS = frozenset({"/var/lib/ray-llm-eks/vllm-cache"})
ALLOWED_ADDED_CAPABILITIES = frozenset({"IPC_LOCK"})
POD_TEMPLATE_KINDS = {
    "kubernetes:apps/v1:DaemonSet": ("spec", "template", "spec"),
    "kubernetes:apps/v1:Deployment": ("spec", "template", "spec"),
    "kubernetes:apps/v1:StatefulSet": ("spec", "template", "spec"),
    "kubernetes:batch/v1:Job": ("spec", "template", "spec"),
    "kubernetes:core/v1:Pod": ("spec",),
}
CODE_ONLY = "Fix: no stack config grants this; revert the change in"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SECURITY_GROUP_RULES = {
    "aws:ec2/securityGroupRule:SecurityGroupRule",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
}
BUCKET = "aws:s3/bucket:Bucket"
BUCKET_PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
PUBLIC_ACCESS_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
IAM_ATTACHMENTS = {
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
    "aws:iam/policyAttachment:PolicyAttachment",
    "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive",
}
# AWS managed policies that grant (nearly) everything, or every IAM action, which is everything by another road.
ADMIN_POLICIES = ("AdministratorAccess", "PowerUserAccess", "IAMFullAccess")
FIX_CACHE = f"{CODE_ONLY} infra/serving/model_cache.py."
FIX_ROLE = f"{CODE_ONLY} the role's module (infra/)."
BINDINGS = {
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
}
# Kubernetes' user-facing superuser and namespace-admin roles, and the group every API request of which is allowed
# (https://kubernetes.io/docs/reference/access-authn-authz/rbac/#user-facing-roles).
ADMIN_ROLES = frozenset({"cluster-admin", "admin", "edit"})
ADMIN_GROUPS = frozenset({"system:masters"})
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ROUTE = "aws:ec2/route:Route"
ROUTE_TABLE_ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"


def _pod_specs(resource: Inspected) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if resource.resource_type == RAY_SERVICE:
        cluster = get(resource.props, "spec", "rayClusterConfig", default={})
        yield "head", get(cluster, "headGroupSpec", "template", "spec", default={})
        for group in mappings(get(cluster, "workerGroupSpecs")):
            yield f"worker group {get(group, 'groupName')}", get(group, "template", "spec", default={})
    elif resource.resource_type in POD_TEMPLATE_KINDS:
        yield "pod", get(resource.props, *POD_TEMPLATE_KINDS[resource.resource_type], default={})


def _unconfined_pods(resource: Inspected) -> Iterator[str]:
    """What Pod Security's baseline forbids, less the stack's two named needs (the compile cache's host path, EFA's
    IPC_LOCK), plus privilege escalation (https://kubernetes.io/docs/concepts/security/pod-security-standards/)."""
    for where, spec in _pod_specs(resource):
        found = [field for field in ("hostNetwork", "hostPID", "hostIPC") if as_bool(get(spec, field))]
        found += [
            f"hostPath {get(volume, 'hostPath', 'path')}"
            for volume in mappings(get(spec, "volumes"))
            if "hostPath" in volume and get(volume, "hostPath", "path") not in ALLOWED_HOST_PATHS
        ]
        for container in [*mappings(get(spec, "initContainers")), *mappings(get(spec, "containers"))]:
            context, name = get(container, "securityContext", default={}), get(container, "name")
            if as_bool(get(context, "privileged")):
                found.append(f"container {name} privileged")
            if get(context, "allowPrivilegeEscalation") is not False:
                found.append(f"container {name} without allowPrivilegeEscalation: false")
            added = set(get(context, "capabilities", "add", default=[]) or []) - ALLOWED_ADDED_CAPABILITIES
            found += [f"container {name} adds {capability}" for capability in sorted(added)]
        if found:
            yield (
                f"{kind_of(resource)} '{resource.name}' {where}: {', '.join(found)}: a pod there "
                "takes the node (its files, network or processes) or more privileges than it needs. "
                f"{CODE_ONLY} infra/serving/rayservice.py or infra/serving/model_cache.py."
            )


def _ports_unnamed(resource: Inspected) -> Iterator[str]:
    """An ingress rule without `ports` admits its sources on every port
    (https://kubernetes.io/docs/concepts/services-networking/network-policies/); every rule of the stack names its
    ports, so a policy that opens a namespace (`ingress: [{}]`) or every port between pods is caught."""
    for index, rule in enumerate(mappings(get(resource.props, "spec", "ingress"))):
        if not mappings(get(rule, "ports")):
            yield (
                f"NetworkPolicy '{resource.name}' ingress rule {index} names no ports: it admits "
                f"{'every source' if not mappings(get(rule, 'from')) else 'its sources'} on every port, the Ray "
                f"dashboard, GCS and Alertmanager's API included. {CODE_ONLY} infra/serving/network_policy.py or "
                "infra/observability/network_policy.py."
            )


def _cidr_ingress(rule: Mapping[str, Any]) -> list[str]:
    keys = ("cidrBlocks", "ipv6CidrBlocks", "prefixListIds", "cidrIpv4", "cidrIpv6", "prefixListId")
    return [cidr for key in keys for cidr in _listed(get(rule, key))]


def _store_open_to_addresses(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    """The store's security groups admit other security groups only (the Ray head's nodes), never address ranges:
    whoever an address range lets in reaches the store's port."""
    for store in of_type(resources, ELASTICACHE_REPLICATION_GROUP):
        groups = [dep for dep in store.dependencies if dep.resource_type == SECURITY_GROUP]
        for group in groups:
            rules = [(group, rule) for rule in mappings(get(group.props, "ingress"))]
            rules += [
                (rule, rule.props)
                for rule in resources
                if rule.resource_type in SECURITY_GROUP_RULES
                and group in rule.dependencies
                and get(rule.props, "type", default="ingress") == "ingress"
            ]
            for holder, rule in rules:
                if ranges := _cidr_ingress(rule):
                    yield (
                        holder,
                        f"the GCS store '{store.name}' security group '{group.name}' admits address ranges "
                        f"{ranges}: only the Ray head's nodes' security group may reach it. {CODE_ONLY} "
                        "infra/serving/gcs_store.py.",
                    )


def _public_buckets(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    """Every bucket blocks public access, all four settings (https://docs.aws.amazon.com/AmazonS3/latest/userguide/
    access-control-block-public-access.html), and no bucket policy grants anyone (Principal "*")."""
    for bucket in of_type(resources, BUCKET):
        blocks = [r for r in of_type(resources, BUCKET_PUBLIC_ACCESS_BLOCK) if bucket in r.dependencies]
        off = [flag for flag in PUBLIC_ACCESS_FLAGS if not any(as_bool(get(b.props, flag)) for b in blocks)]
        if off:
            yield (
                bucket,
                f"S3 bucket '{bucket.name}' does not block public access ({', '.join(off)} not true). {FIX_CACHE}",
            )
        for policy in of_type(resources, BUCKET_POLICY):
            if bucket in policy.dependencies and _grants_anyone(known(policy.props, "policy")):
                yield (
                    policy,
                    f"bucket policy '{policy.name}' grants anyone (Principal *) bucket '{bucket.name}'. {FIX_CACHE}",
                )


def _listed(value: Any) -> list[str]:
    """A list property's items, or a set scalar's own value, as text."""
    return [str(v) for v in value] if is_sequence(value) else ([str(value)] if value else [])


def _grants_anyone(text: Any) -> bool:
    for statement in statements(policy_document(text)):
        principal = get(statement, "Principal")
        anyone = principal == "*" or "*" in _listed(get(principal, "AWS"))
        if get(statement, "Effect") == "Allow" and anyone:
            return True
    return False


def _admin_statements(text: Any) -> list[str]:
    """Allow statements of every action, or of every action of a service, on every resource."""
    found = []
    for statement in statements(policy_document(text)):
        if get(statement, "Effect") != "Allow":
            continue
        actions = _listed(get(statement, "Action"))
        wide = [a for a in actions if a == "*" or a.endswith(":*")]
        if get(statement, "NotAction") or (wide and "*" in _listed(get(statement, "Resource"))):
            found.append(str(wide or "NotAction"))
    return found


def _administrators(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    for resource in resources:
        if resource.resource_type in IAM_ATTACHMENTS:
            for arn in _listed(known(resource.props, "policyArn")) + _listed(known(resource.props, "policyArns")):
                if arn.rsplit("/", 1)[-1] in ADMIN_POLICIES:
                    message = f"attaches {arn}: no role of this stack administers the account. {FIX_ROLE}"
                    yield resource, f"'{resource.name}' {message}"
        elif resource.resource_type == "aws:iam/role:Role":
            for arn in _listed(known(resource.props, "managedPolicyArns")):
                if arn.rsplit("/", 1)[-1] in ADMIN_POLICIES:
                    yield resource, f"role '{resource.name}' carries {arn}. {FIX_ROLE}"
            for inline in mappings(known(resource.props, "inlinePolicies")):
                for wide in _admin_statements(get(inline, "policy")):
                    yield resource, f"role '{resource.name}' allows {wide} on every resource. {FIX_ROLE}"
        elif resource.resource_type in ("aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy"):
            for wide in _admin_statements(known(resource.props, "policy")):
                yield resource, f"IAM policy '{resource.name}' allows {wide} on every resource. {FIX_ROLE}"


def _admin_bindings(resource: Inspected) -> Iterator[str]:
    role = get(resource.props, "roleRef", "name")
    groups = {get(s, "name") for s in mappings(get(resource.props, "subjects")) if get(s, "kind") == "Group"}
    if role in ADMIN_ROLES or groups & ADMIN_GROUPS:
        yield (
            f"{kind_of(resource)} '{resource.name}' grants {role!r}"
            f"{' to ' + str(sorted(groups & ADMIN_GROUPS)) if groups & ADMIN_GROUPS else ''}: whoever holds the "
            "bound account (a pod running the model's code) then administers the cluster. No pod of this stack calls "
            f"the Kubernetes API but through its chart's own narrow role. {CODE_ONLY} the binding's module."
        )


def _public_subnets(resources: Sequence[PolicyResource]) -> set[str]:
    """URNs of subnets routed to an internet gateway: a route table with a gatewayId route, associated to them."""
    gateway_tables = {
        table.urn
        for table in of_type(resources, ROUTE_TABLE)
        if any(get(route, "gatewayId") for route in mappings(get(table.props, "routes")))
    }
    gateway_tables |= {
        dep.urn
        for route in of_type(resources, ROUTE)
        if get(route.props, "gatewayId")
        for dep in route.dependencies
        if dep.resource_type == ROUTE_TABLE
    }
    public = set()
    for association in of_type(resources, ROUTE_TABLE_ASSOCIATION):
        if any(dep.urn in gateway_tables for dep in association.dependencies):
            public |= {dep.urn for dep in association.dependencies if dep.resource_type == SUBNET}
    return public


def _nodes_in_public_subnets(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    public = _public_subnets(resources)
    for group in of_type(resources, *NODE_GROUPS):
        exposed = [dep.name for dep in group.dependencies if dep.resource_type == SUBNET and dep.urn in public]
        if exposed:
            yield (
                group,
                f"node group '{group.name}' launches into {exposed}, routed to the internet gateway: its nodes sit "
                "beside the load balancers, one security-group mistake from the internet. Fix: no stack config "
                "places nodes; revert the change in infra/nodes/node_groups.py (the private subnets).",
            )


PODS_CONFINED = resource_policy(
    "pods-confined",
    "No pod of the stack runs privileged, on the host's network, PID or IPC namespace, mounts a host path but vLLM's "
    "compile cache, adds a capability but IPC_LOCK, or may escalate privileges.",
    EnforcementLevel.MANDATORY,
    {RAY_SERVICE, *POD_TEMPLATE_KINDS},
    _unconfined_pods,
)
NETWORK_POLICIES_NAME_PORTS = resource_policy(
    "network-policies-name-ports",
    "Every ingress rule of every NetworkPolicy names its ports: none opens a namespace or every port between pods.",
    EnforcementLevel.MANDATORY,
    {NETWORK_POLICY},
    _ports_unnamed,
)
GCS_STORE_SECURITY_GROUPS_ONLY = stack_policy(
    "gcs-store-security-groups-only",
    "The GCS store's security groups admit the Ray head's nodes' security group, never an address range.",
    EnforcementLevel.MANDATORY,
    _store_open_to_addresses,
)
BUCKETS_PRIVATE = stack_policy(
    "buckets-private",
    "Every S3 bucket blocks public access (all four settings) and no bucket policy grants anyone.",
    EnforcementLevel.MANDATORY,
    _public_buckets,
)
IAM_NO_ADMINISTRATORS = stack_policy(
    "iam-no-administrators",
    "No role gets AdministratorAccess, PowerUserAccess or IAMFullAccess, and no policy allows every action (or every "
    "action of a service) on every resource.",
    EnforcementLevel.MANDATORY,
    _administrators,
)
NO_ADMIN_BINDINGS = resource_policy(
    "kubernetes-no-admin-bindings",
    "No (Cluster)RoleBinding grants cluster-admin, admin or edit, or binds system:masters.",
    EnforcementLevel.MANDATORY,
    BINDINGS,
    _admin_bindings,
)
NODES_PRIVATE_SUBNETS = stack_policy(
    "nodes-private-subnets",
    "Every node group launches into subnets with no route to the internet gateway.",
    EnforcementLevel.MANDATORY,
    _nodes_in_public_subnets,
)


# The Ray dashboard's port (Ray 2.58 ray_constants.DEFAULT_DASHBOARD_PORT): job submission and Serve's REST API run
# code for whoever reaches it, so only the KubeRay operator may (it submits the serve config there).
DASHBOARD_PORT = 8265
OPERATOR_POD = {"app.kubernetes.io/name": "kuberay-operator"}
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def _covers(entry: Mapping[str, Any], port: int) -> bool:
    first = get(entry, "port")
    return isinstance(first, (int, float)) and first <= port <= (get(entry, "endPort") or first)


def _is_operator(peer: Mapping[str, Any], operator_namespaces: set[str]) -> bool:
    namespace = get(peer, "namespaceSelector", "matchLabels", NAMESPACE_NAME_LABEL)
    pods = get(peer, "podSelector", "matchLabels", default={})
    return namespace in operator_namespaces and dict(pods) == OPERATOR_POD and not get(peer, "ipBlock")


def _dashboard_beyond_the_operator(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    ray_namespaces = {get(r.props, "metadata", "namespace") for r in of_type(resources, RAY_SERVICE)}
    operator_namespaces = {
        str(get(r.props, "namespace"))
        for r in of_type(resources, "kubernetes:helm.sh/v3:Release")
        if get(r.props, "chart") == "kuberay-operator"
    }
    for policy in of_type(resources, NETWORK_POLICY):
        if get(policy.props, "metadata", "namespace") not in ray_namespaces:
            continue
        for rule in mappings(get(policy.props, "spec", "ingress")):
            ports = mappings(get(rule, "ports"))
            if ports and not any(_covers(entry, DASHBOARD_PORT) for entry in ports):
                continue
            peers = mappings(get(rule, "from"))
            if not peers or not all(_is_operator(peer, operator_namespaces) for peer in peers):
                yield (
                    policy,
                    f"NetworkPolicy '{policy.name}' admits pods other than the KubeRay operator to the Ray dashboard "
                    f"({DASHBOARD_PORT}: job submission, Serve's REST API, the Redis password in /nodes): a GPU worker "
                    f"runs the model's code. {CODE_ONLY} infra/serving/network_policy.py.",
                )


RAY_DASHBOARD_OPERATOR_ONLY = stack_policy(
    "ray-dashboard-operator-only",
    "In a RayService's namespace, only the KubeRay operator's pods are admitted to the Ray dashboard's port (8265).",
    EnforcementLevel.MANDATORY,
    _dashboard_beyond_the_operator,
)
