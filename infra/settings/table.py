"""The stack's settings as a table: one row per key, the one place a key is stated.

Each row gives the key's type and what a single value may be (pattern, bounds, allowed values), its default and
description (Pulumi.yaml's `config` block and docs/configuration.md's table are generated from these rows by
`python -m tools.config_reference --write`, and tests hold them equal), the `StackConfig` field it feeds, and what
changing it does to a running stack (`infra/settings/changes.py` defines the effects).
`infra.settings.config.load_config` reads every row; the rules that relate several keys are named functions there,
beside the fields they protect.

Adding a key: a row here, the `StackConfig` field it feeds (and its consumer), then `--write`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from infra.settings.changes import (
    ADDON_ROLLED,
    ALL_EFFECTS,
    AWS_IN_PLACE,
    CHART_ROLLED,
    CONTROL_PLANE_UPGRADED,
    GCS_STORE,
    GPU_NODES_REPLACED,
    GPU_NODES_ROLLED,
    GPU_NODES_SCALED,
    KEYS_RELOADED,
    LOAD_BALANCER,
    MODEL_MIRRORED,
    MONITORING,
    NOTHING_RUNNING,
    RAYSERVICE_NEW_CLUSTER,
    RAYSERVICE_REPLACED,
    SECRET_UPDATED,
    SERVE_IN_PLACE,
    SERVE_NEW_CLUSTER,
    STACK_REBUILT,
    SYSTEM_NODES_REPLACED,
    SYSTEM_NODES_ROLLED,
    SYSTEM_NODES_SCALED,
    Effect,
)
from infra.settings.prefix_caching import PREFIX_CACHING_MODES
from infra.settings.quantization import KV_CACHE_DTYPES, QUANTIZATIONS

# Runs as copied: checkip.amazonaws.com answers the caller's public address (a bare `<your-ip>/32` would be a shell
# input redirection).
CHECKIP = "$(curl -s https://checkip.amazonaws.com)"
API_ALLOW_LIST_COMMAND = f"pulumi config set --path 'apiPublicAccessCidrs[0]' \"{CHECKIP}/32\""
# The first step of tearing down a protected stack: protectResources sets both Pulumi's `protect` and the EKS cluster's
# deletion protection (infra/cluster/eks.py), and `pulumi state unprotect` lifts only the first, so the program itself
# must lift both before `pulumi destroy` can delete the cluster ("If you try to delete an active cluster that has
# deletion protection turned on, you will receive a InvalidRequestException",
# https://docs.aws.amazon.com/eks/latest/userguide/deletion-protection.html).
UNPROTECT_COMMAND = "pulumi config set protectResources false && pulumi up"
KUBERNETES_VERSION_PATTERN = re.compile(r"^1\.(\d{2})\Z")
SEMVER_PATTERN = re.compile(r"^\d+\.\d+\.\d+\Z")
CHART_VERSION_PATTERN = re.compile(r"^v?\d+\.\d+\.\d+\Z")
# KubeRay releases whose CRDs and operator chart are vendored (vendor/kuberay-v<version>/) and the RayService and the
# operator's Helm values are validated against (the kuberay_stack fixture of tests/conftest.py);
# docs/kuberay-versions.md says what changed between them. The default is the newest: the one with Ray's token
# (KUBERAY_AUTH_OPTIONS_SINCE).
VALIDATED_KUBERAY_VERSIONS = ("1.4.0", "1.7.0")
DEFAULT_KUBERAY_VERSION = "1.7.0"
# Ray's token authentication through KubeRay: the RayCluster's authOptions arrive in KubeRay 1.5.1, and its operator
# refuses them below Ray 2.52.0 (ray-operator/controllers/ray/utils/validation.go ValidateRayClusterSpec, vendored
# at 1.7.0). With authOptions the operator's own dashboard client sends the token (utils/dashboardclient).
KUBERAY_AUTH_OPTIONS_SINCE = (1, 5, 1)
RAY_TOKEN_AUTH_SINCE = (2, 52, 0)
RAY_AUTH_MODES = ("auto", "token", "disabled")
# The Ray head's GCS fault tolerance: on an ElastiCache for Valkey store the stack makes (infra/serving/gcs_store.py),
# or none. KubeRay takes spec.gcsFaultToleranceOptions from 1.3.0 on (docs/head-fault-tolerance.md).
GCS_REDIS, GCS_OFF = "redis", "off"
HEAD_FAULT_TOLERANCE_MODES = (GCS_REDIS, GCS_OFF)
KUBERAY_GCS_FT_OPTIONS_SINCE = (1, 3, 0)
# spec.rayClusterDeletionDelaySeconds: how long KubeRay keeps the cluster a NewCluster upgrade left, 60 s fixed before
# (ray-project/kuberay#3864, merged after v1.4.0; vendor/kuberay-v1.7.0/rayservice_types.go, rayservice_controller.go
# cleanUpRayClusterInstance; the v1.4.0 CRD has no such field).
KUBERAY_DELETION_DELAY_SINCE = (1, 5, 0)
# An ElastiCache node type such as cache.t4g.micro (https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/
# CacheNodes.SupportedTypes.html): `cache.`, a family, a size.
CACHE_NODE_TYPE_PATTERN = re.compile(r"^cache\.[a-z0-9]+\.[a-z0-9]+\Z")
# The node types ElastiCache creates new clusters on: the "Current generation" lists of its API reference's CacheNode
# (https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_CacheNode.html, as the ElastiCache model of
# botocore 1.44.8 carries it, read 2026-12-07), less T2, which CacheNodes.SupportedTypes.html moved to the previous
# generation (no new clusters on T2). No pulumi-aws 7.51.1 invoke
# lists node types, so this table decides, and says so; a newer type is added here with its source.
ELASTICACHE_NODE_TYPES = frozenset(
    f"cache.{family}.{size}"
    for family, sizes in {
        "m7g": ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"),
        "m6g": ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"),
        "m5": ("large", "xlarge", "2xlarge", "4xlarge", "12xlarge", "24xlarge"),
        "m4": ("large", "xlarge", "2xlarge", "4xlarge", "10xlarge"),
        "t4g": ("micro", "small", "medium"),
        "t3": ("micro", "small", "medium"),
        "r7g": ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"),
        "r6g": ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"),
        "r5": ("large", "xlarge", "2xlarge", "4xlarge", "12xlarge", "24xlarge"),
        "r4": ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge"),
    }.items()
    for size in sizes
)
# ElastiCache's weekly maintenance window, `ddd:hh24:mi-ddd:hh24:mi` in UTC with ddd one of sun mon tue wed thu fri sat,
# "The minimum maintenance window is a 60 minute period" (CreateReplicationGroup PreferredMaintenanceWindow,
# https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_CreateReplicationGroup.html). The form is
# terraform-provider-aws's check (internal/verify/validate.go ValidOnceAWeekWindowFormat), here in lower case only.
WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_WEEKLY_TIME = rf"({'|'.join(WEEKDAYS)}):([01][0-9]|2[0-3]):([0-5][0-9])"
MAINTENANCE_WINDOW_PATTERN = re.compile(rf"^{_WEEKLY_TIME}-{_WEEKLY_TIME}\Z")
MIN_MAINTENANCE_WINDOW_MINUTES = 60
MAINTENANCE_WINDOW_ALLOWED = (
    "ddd:hh24:mi-ddd:hh24:mi in UTC, ddd one of sun mon tue wed thu fri sat, at least "
    f"{MIN_MAINTENANCE_WINDOW_MINUTES} minutes long (ElastiCache's minimum), such as sun:06:00-sun:07:00"
)
ADDON_VERSION_PATTERN = re.compile(r"^v\d+\.\d+\.\d+-eksbuild\.\d+\Z")
INSTANCE_TYPE_PATTERN = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9]+\Z")
AZ_PATTERN = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d[a-z]\Z")
EKS_NAME_PATTERN = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}\Z")
NODEGROUP_NAME_PATTERN = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,62}\Z")
# RayService names prefix the RayCluster, its pods and `<name>-serve-svc`, which must stay DNS labels.
RAYSERVICE_NAME_PATTERN = re.compile(r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?\Z")
DNS_LABEL_PATTERN = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
DNS_LABEL_ALLOWED = (
    "a DNS label: 1-63 characters of lower-case letters, digits and '-', starting and ending with a letter or digit"
)
NO_SPACE_PATTERN = re.compile(r"^\S+\Z")
IAM_PRINCIPAL_PATTERN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:(role|user)/[\w+=,.@/-]+\Z")
IMAGE_PATTERN = re.compile(r"^[\w.-]+(:\d+)?(/[\w.-]+)+(:[\w.-]+|@sha256:[0-9a-f]{64})\Z")
CAPACITY_RESERVATION_PATTERN = re.compile(r"^cr-[0-9a-f]{8,17}\Z")
# A workspace's Prometheus endpoint (the console's "Endpoint - remote write URL" without api/v1/remote_write).
AMP_WORKSPACE_PATTERN = re.compile(
    r"^https://aps-workspaces\.([a-z]{2}(-gov)?-[a-z]+-\d)\.amazonaws\.com(\.cn)?/workspaces/ws-[0-9a-f-]+/\Z"
)
# A standard or FIFO SNS topic (https://docs.aws.amazon.com/sns/latest/api/API_CreateTopic.html: a name of up to 256
# letters, digits, '-' and '_', a FIFO topic's ending in .fifo); its region is the ARN's fourth field.
SNS_TOPIC_ARN_PATTERN = re.compile(
    r"^arn:aws[a-z-]*:sns:(?P<region>[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d):\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?\Z"
)
# A page a browser opens, without a fragment: the alerts add each one's section anchor.
RUNBOOK_URL_PATTERN = re.compile(r"^https?://[^\s/#]+(/[^\s#]*)?\Z")
# An ACM certificate: the NLB's TLS listener names it; ACM certificates are regional and a load balancer takes
# one of its own region (https://docs.aws.amazon.com/acm/latest/userguide/acm-regions.html).
CERTIFICATE_ARN_PATTERN = re.compile(
    r"^arn:aws[a-z-]*:acm:(?P<region>[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d):\d{12}:certificate/[0-9a-f-]{36}\Z"
)
SERVE_EXPOSURES = ("none", "internal", "internet-facing")
GPU_CAPACITY_TYPES = ("on-demand", "capacity-block")
# How a RayService cluster-spec change reaches a running stack: replaced, or KubeRay's NewCluster upgrade beside it.
REPLACE, NEW_CLUSTER = "replace", "newCluster"
CLUSTER_UPGRADE_STRATEGIES = (REPLACE, NEW_CLUSTER)
KV_BUFFER_DEVICES = ("auto", "cuda", "cpu")

# Upper bounds, each with the reason it names in its message.
# A VPC is split into 8 blocks (infra.network.subnets PRIVATE_PREFIX_DELTA = 3): one public, at most 7 private ones.
MAX_AZS = 7
# EKS quota "Nodes per managed node group": 450 (https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html).
MAX_NODES_PER_NODE_GROUP = 450
# gp3 volume size is 1 GiB - 16 TiB (https://docs.aws.amazon.com/ebs/latest/userguide/ebs-volume-types.html).
MAX_GP3_GIB = 16384
# 2^20 tokens: an 8B GQA model's KV cache for that context (128 KiB/token) alone needs 128 GiB, more than any
# one GPU of the supported types holds; vLLM further caps it at the model's own max_position_embeddings.
MAX_MODEL_LEN = 1_048_576
# 12 h, the longest an assumed IAM role's credentials last (MaxSessionDuration, IAM user guide
# https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_update-role-settings.html): a longer wait outlives them.
MAX_SERVE_READY_MINUTES = 720
NODE_GROUP_QUOTA = f" (EKS allows {MAX_NODES_PER_NODE_GROUP} nodes per managed node group)"
AUTOSCALING_ONLY = " (0 when serveAutoscaling is false)"
VLLM_DEFAULT = " (0 leaves vLLM's default)"

# AWS tag values: up to 256 Unicode characters; letters, numbers, spaces and _ . : / = + - @
# (https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html).
TAG_VALUE_PATTERN = re.compile(r"[\w .:/=+\-@]{0,256}\Z")
TAG_VALUE_ALLOWED = "at most 256 letters, digits, spaces and _ . : / = + - @ (AWS tag value rules) (or empty)"

# RFC 5737's documentation ranges: no real client has one of these addresses.
DOCUMENTATION_RANGES = tuple(ipaddress.IPv4Network(c) for c in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))
# Addresses never seen as a source on the internet (RFC 6890 special-purpose blocks that are not
# globally reachable); a set of CIDRs covering every other address is open to the whole internet.
NOT_ON_THE_INTERNET = tuple(
    ipaddress.IPv4Network(c)
    for c in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
)
IPV4_CIDR_PATTERN = re.compile(r"\d{1,3}(\.\d{1,3}){3}/\d{1,2}")
# The example address of the two lists' messages: one the checks accept (tests/test_bad_input.py), unlike
# `<your-ip>/32` or an RFC 5737 documentation address.
EXAMPLE_CLIENT_CIDR = "100.24.10.7/32"
YOUR_ADDRESS = "`curl -s https://checkip.amazonaws.com` prints yours"
CLIENT_CIDR_LIST = (
    f"IPv4 CIDRs of real clients such as {EXAMPLE_CLIENT_CIDR} ({YOUR_ADDRESS}; RFC 5737 documentation ranges reach "
    "no one)"
)
INTERNET_CIDR_LIST = (
    f"public IPv4 CIDRs such as {EXAMPLE_CLIENT_CIDR} ({YOUR_ADDRESS}), narrower than the internet (not private, "
    "shared or reserved space: in-VPC clients use the private endpoint)"
)


def ipv4_network(text: str) -> ipaddress.IPv4Network:
    """An IPv4 network in prefix notation with no host bits set. Python's parser also takes a netmask or a
    hostmask after the slash (10.0.0.0/255.255.0.0), which AWS's CIDR fields do not; it is refused here
    rather than passed on in a form the check did not see."""
    if not IPV4_CIDR_PATTERN.fullmatch(text):
        raise ValueError("not an IPv4 CIDR in a.b.c.d/prefix notation")
    return ipaddress.IPv4Network(text, strict=True)


def client_cidr(text: str) -> str:
    """A CIDR that real clients can come from: RFC 5737's documentation ranges reach nothing."""
    network = ipv4_network(text)
    if any(network.subnet_of(documentation) for documentation in DOCUMENTATION_RANGES):
        raise ValueError("an RFC 5737 documentation range, which no real client has")
    return str(network)


def internet_client_cidr(text: str) -> str:
    """A CIDR of internet addresses: the public endpoint sees only those; the VPC uses the private one."""
    network = ipv4_network(text)
    if network.prefixlen == 0:
        raise ValueError("it is the whole internet")
    for block in NOT_ON_THE_INTERNET:
        if network.subnet_of(block):
            raise ValueError(f"it lies in {block}, space no internet client comes from (RFC 6890)")
    return str(network)


def maintenance_window_minutes(window: str) -> int:
    """How long a window of MAINTENANCE_WINDOW_PATTERN lasts; one that ends before it starts runs over the week's end
    (sat:23:30-sun:00:30 is 60 minutes)."""

    def minute_of_week(moment: str) -> int:
        day, hours, minutes = moment.split(":")
        return (WEEKDAYS.index(day) * 24 + int(hours)) * 60 + int(minutes)

    start, end = window.split("-")
    return (minute_of_week(end) - minute_of_week(start)) % (7 * 24 * 60)


def iam_principal(text: str) -> str:
    if not IAM_PRINCIPAL_PATTERN.fullmatch(text):
        raise ValueError("not an IAM role or user ARN")
    return text


# What one value of a key may be: the reader (infra.settings.config) checks it and names key, value and what is allowed.
@dataclass(frozen=True)
class Text:
    """A string, matching `pattern` when one is given (the check of a pattern-less key is a named rule)."""

    pattern: re.Pattern[str] | None = None
    allowed: str = ""
    optional: bool = False  # empty is allowed too, and read as None


@dataclass(frozen=True)
class Integer:
    minimum: int
    why: str = ""  # said after the bounds in the message, e.g. " (EKS needs two Availability Zones; ...)"
    maximum: int | None = None


@dataclass(frozen=True)
class Boolean:
    pass


@dataclass(frozen=True)
class Choice:
    options: tuple[str, ...]


@dataclass(frozen=True)
class StringList:
    """A JSON list of strings, each checked by `item` (its ValueError says why) and kept in the form it returns."""

    item: Callable[[str], str]
    allowed: str


@dataclass(frozen=True)
class Secret:
    """A credential, set with `pulumi config set --secret`; its named rule in infra.settings.config checks it unseen."""


@dataclass(frozen=True)
class ProviderValue:
    """A provider's own key (`aws:region`), read from its namespace; Pulumi.yaml gives it a plain value."""


Kind = Text | Integer | Boolean | Choice | StringList | Secret | ProviderValue
BOOLEAN = Boolean()
SECRET = Secret()
# Pulumi.yaml's `type` of each kind (https://www.pulumi.com/docs/iac/concepts/projects/project-file/#config-options).
PULUMI_TYPES: Mapping[type, str] = {
    Text: "string",
    Integer: "integer",
    Boolean: "boolean",
    Choice: "string",
    StringList: "array",
    Secret: "string",
    ProviderValue: "string",
}


@dataclass(frozen=True)
class Setting:
    key: str
    kind: Kind
    default: Any  # as Pulumi.yaml types it: str, int, bool or list
    description: str
    # The StackConfig fields the value feeds ("prefill.replicas": a field of a field; several joined by ", "). A
    # plain field name is filled with the value as read unless load_config derives it (kvBufferDevice's "auto").
    feeds: str
    effects: tuple[Effect, ...]  # what a change does, mildest first (infra/settings/changes.py)
    change_note: str = ""  # when an effect applies only to some changes of the setting

    @property
    def pulumi_type(self) -> str:
        return PULUMI_TYPES[type(self.kind)]

    @property
    def fed_fields(self) -> frozenset[str]:
        """The top-level StackConfig fields (or properties) the value ends up in."""
        return frozenset(part.split(".")[0].split(" ")[0] for part in self.feeds.split(", "))


SERVE_ONLY = (SERVE_IN_PLACE,)
SIDE_SIZE = (GPU_NODES_SCALED, RAYSERVICE_REPLACED)

# The table, by section (Pulumi.yaml lists them in this order).
SECTIONS: Mapping[str, tuple[Setting, ...]] = {
    "provider": (
        Setting(
            "aws:region",
            ProviderValue(),
            "sa-east-1",
            "AWS region of every resource (the AWS provider's own key); one of the supported regions, see Regions and "
            "partitions.",
            feeds="region",
            effects=(STACK_REBUILT,),
        ),
    ),
    "network": (
        Setting(
            "vpcCidr",
            Text(),
            "10.0.0.0/16",
            "IPv4 network of the VPC (/16 to /20, RFC 1918 or other unicast); private and public subnets are carved "
            "from it per AZ.",
            feeds="vpc_cidr",
            effects=(STACK_REBUILT,),
        ),
        Setting(
            "maxAzs",
            Integer(2, f" (EKS needs two Availability Zones; vpcCidr has room for {MAX_AZS})", maximum=MAX_AZS),
            3,
            "Most Availability Zones to span (2 to 7; EKS needs 2); AZs offering gpuNodeType are used first.",
            feeds="max_azs",
            effects=(STACK_REBUILT,),
            change_note=(
                "adds or removes subnets under the cluster; whether EKS takes the new subnets in place was not "
                "checked, so plan it as a rebuild"
            ),
        ),
        Setting(
            "natGatewayPerAz",
            BOOLEAN,
            False,
            "One NAT gateway per AZ (production) instead of a single shared one (cheaper, one AZ of failure).",
            feeds="nat_gateway_per_az",
            effects=(AWS_IN_PLACE,),
        ),
    ),
    "cluster": (
        Setting(
            "clusterName",
            Text(EKS_NAME_PATTERN, "1-100 letters, digits, '-' or '_'"),
            "ray-llm-multinode",
            "EKS cluster name.",
            feeds="cluster_name",
            effects=(STACK_REBUILT,),
        ),
        Setting(
            "kubernetesVersion",
            Text(),
            "1.35",
            "Kubernetes version of the EKS control plane and node groups (MAJOR.MINOR).",
            feeds="kubernetes_version",
            effects=(CONTROL_PLANE_UPGRADED, SYSTEM_NODES_ROLLED, GPU_NODES_ROLLED),
            change_note="EKS upgrades one minor version at a time; a downgrade is refused by EKS",
        ),
        Setting(
            "apiPublicAccessCidrs",
            StringList(internet_client_cidr, INTERNET_CIDR_LIST),
            [],
            "Required: public CIDRs allowed to reach the Kubernetes API endpoint (yours, CI's); set with "
            f"`{API_ALLOW_LIST_COMMAND}`.",
            feeds="api_public_access_cidrs",
            effects=(AWS_IN_PLACE,),
        ),
        Setting(
            "adminPrincipalArns",
            StringList(iam_principal, "IAM role or user ARNs"),
            [],
            "IAM role/user ARNs given cluster-admin through EKS access entries, each once, besides the identity that "
            "creates the cluster: EKS already makes that one admin, so listing it is refused while the cluster is "
            "created (a second access entry would fail).",
            feeds="admin_principal_arns",
            effects=(AWS_IN_PLACE,),
        ),
        Setting(
            "controlPlaneLogging",
            BOOLEAN,
            True,
            "Send all EKS control-plane log types to CloudWatch.",
            feeds="control_plane_logging",
            effects=(AWS_IN_PLACE,),
        ),
        Setting(
            "secretsEncryption",
            BOOLEAN,
            True,
            "Encrypt Kubernetes secrets with a customer-managed KMS key.",
            feeds="secrets_encryption",
            effects=(STACK_REBUILT,),
            change_note="EKS can add envelope encryption to a cluster but never remove it",
        ),
        Setting(
            "vpcCniVersion",
            Text(ADDON_VERSION_PATTERN, "an EKS add-on version such as v1.20.4-eksbuild.1", optional=True),
            "",
            "Build of the vpc-cni EKS add-on; empty takes the default build EKS publishes for kubernetesVersion "
            "(looked up at deploy time), a value such as v1.21.1-eksbuild.1 pins it.",
            feeds="vpc_cni_version",
            effects=(ADDON_ROLLED,),
        ),
        Setting(
            "corednsVersion",
            Text(ADDON_VERSION_PATTERN, "an EKS add-on version such as v1.12.4-eksbuild.1", optional=True),
            "",
            "Build of the coredns EKS add-on; empty takes the default build EKS publishes for kubernetesVersion "
            "(looked up at deploy time), a value such as v1.13.2-eksbuild.1 pins it.",
            feeds="coredns_version",
            effects=(ADDON_ROLLED,),
        ),
        Setting(
            "kubeProxyVersion",
            Text(ADDON_VERSION_PATTERN, "an EKS add-on version such as v1.35.0-eksbuild.2", optional=True),
            "",
            "Build of the kube-proxy EKS add-on; empty takes the default build EKS publishes for kubernetesVersion "
            "(looked up at deploy time), a value such as v1.35.0-eksbuild.2 pins it (a pin's MAJOR.MINOR must equal "
            "kubernetesVersion).",
            feeds="kube_proxy_version",
            effects=(ADDON_ROLLED,),
        ),
        Setting(
            "systemNodeType",
            Text(INSTANCE_TYPE_PATTERN, "an EC2 instance type such as m7i.xlarge"),
            "m7i.xlarge",
            "Instance type of the CPU system nodes (system pods, KubeRay operator, Ray head).",
            feeds="system_node_type",
            effects=(SYSTEM_NODES_REPLACED,),
        ),
        Setting(
            "systemNodeCount",
            Integer(1, NODE_GROUP_QUOTA, maximum=MAX_NODES_PER_NODE_GROUP),
            1,
            "Number of system nodes (1 to 450).",
            feeds="system_node_count",
            effects=(SYSTEM_NODES_SCALED,),
        ),
    ),
    "GPU nodes": (
        Setting(
            "gpuNodeType",
            Text(INSTANCE_TYPE_PATTERN, "an EC2 instance type such as g6.8xlarge"),
            "g6.8xlarge",
            "EFA-capable GPU instance type of the worker nodes (smallest EFA-capable g6 by default).",
            feeds="gpu_node_type",
            effects=(GPU_NODES_REPLACED, RAYSERVICE_REPLACED),
        ),
        Setting(
            "gpuNodeCount",
            Integer(
                0,
                f" (0 derives it from the prefill/decode layout; EKS allows {MAX_NODES_PER_NODE_GROUP} per node group)",
                maximum=MAX_NODES_PER_NODE_GROUP,
            ),
            0,
            "Number of GPU nodes; 0 derives it from the prefill/decode layout (see Scaling), any other value must "
            "equal it.",
            feeds="topology.gpu_nodes",
            effects=(NOTHING_RUNNING,),
        ),
        Setting(
            "gpuNodegroupName",
            Text(NODEGROUP_NAME_PATTERN, "1-63 letters, digits, '-' or '_'"),
            "gpu-workers",
            "Name of the GPU managed node group.",
            feeds="gpu_nodegroup_name",
            effects=(GPU_NODES_REPLACED,),
        ),
        Setting(
            "gpuAz",
            Text(AZ_PATTERN, "an Availability Zone name", optional=True),
            "",
            "Availability Zone of the GPU node group; empty picks the first AZ that offers gpuNodeType.",
            feeds="gpu_az",
            effects=(GPU_NODES_REPLACED,),
        ),
        Setting(
            "gpuRootVolumeGiB",
            Integer(
                50,
                f" GiB (the DLC image and model weights land there; a gp3 volume holds at most {MAX_GP3_GIB} GiB)",
                maximum=MAX_GP3_GIB,
            ),
            200,
            "Root disk (gp3) of each GPU node in GiB, 50 to 16384 (the DLC image and model weights land there).",
            feeds="gpu_root_volume_gib",
            effects=(GPU_NODES_ROLLED,),
        ),
        Setting(
            "capacityReservationId",
            Text(CAPACITY_RESERVATION_PATTERN, "a capacity reservation id such as cr-0123456789abcdef0", optional=True),
            "",
            "Optional capacity reservation (cr-...) the GPU nodes launch into, an On-Demand Capacity Reservation or, "
            "with gpuCapacityType capacity-block, the Capacity Block.",
            feeds="capacity_reservation_id",
            effects=(GPU_NODES_REPLACED,),
        ),
        Setting(
            "gpuCapacityType",
            Choice(GPU_CAPACITY_TYPES),
            "on-demand",
            "How the GPU nodes are bought: on-demand (optionally into capacityReservationId) or capacity-block "
            "(Capacity Blocks for ML: needs capacityReservationId and gpuAz).",
            feeds="gpu_capacity_type",
            effects=(GPU_NODES_REPLACED,),
        ),
        Setting(
            "quotaPreflight",
            BOOLEAN,
            True,
            "Before anything is created, check that the account's On-Demand vCPU quota for the GPU family (Service "
            "Quotas) holds the GPU nodes; false skips it.",
            feeds="quota_preflight",
            effects=(NOTHING_RUNNING,),
        ),
        Setting(
            "nvidiaDevicePluginVersion",
            Text(CHART_VERSION_PATTERN, "a version such as 1.4.0"),
            "0.20.0",
            "Version of the nvidia-device-plugin Helm chart.",
            feeds="nvidia_device_plugin_version",
            effects=(CHART_ROLLED,),
        ),
        Setting(
            "efaDevicePluginVersion",
            Text(CHART_VERSION_PATTERN, "a version such as v0.5.30"),
            "v0.5.30",
            "Version of the aws-efa-k8s-device-plugin Helm chart.",
            feeds="efa_device_plugin_version",
            effects=(CHART_ROLLED,),
        ),
    ),
    "serving": (
        Setting(
            "dlcImage",
            Text(IMAGE_PATTERN, "an image reference pinned by tag or digest", optional=True),
            "",
            "Ray Serve LLM container image; empty uses ray:serve-llm-cuda-v1.0 from the region's Deep Learning "
            "Containers registry (<account>.dkr.ecr.<region>.amazonaws.com).",
            feeds="dlc_image",
            effects=(MODEL_MIRRORED, RAYSERVICE_REPLACED),
            change_note="the mirror Job runs in the same image, so it runs again; with the files already in the bucket "
            "it only checks them. The image pre-puller restarts on the new image, so every node pulls it at once, "
            "beside the RayService's change",
        ),
        Setting(
            "kuberayVersion",
            Text(SEMVER_PATTERN, "a version such as 1.4.0"),
            DEFAULT_KUBERAY_VERSION,
            "Version of the kuberay-operator Helm chart; only releases whose CRDs are vendored "
            f"({', '.join(VALIDATED_KUBERAY_VERSIONS)}). 1.4.0 has no Ray token: with rayAuthMode auto it turns the "
            "token off.",
            feeds="kuberay_version",
            effects=(CHART_ROLLED, RAYSERVICE_REPLACED),
            change_note=(
                "the stack applies the release's RayService and RayCluster CRDs first (helm upgrade never upgrades a "
                "chart's crds/), then the operator restarts on the new image (seconds with no operator; Ray keeps "
                "serving) and updates the running RayCluster in place for its new version without touching its pods; "
                "with rayAuthMode auto, 1.4.0 to 1.7.0 also turns Ray's token on, a cluster-spec change: the "
                "RayService is replaced (an outage until the new cluster serves). To move without it, set rayAuthMode "
                "disabled first and turn the token on in a later `pulumi up`; with newCluster always move in those two "
                "steps, since a new spec that reaches the new operator before its first reconcile is written into the "
                "running RayCluster, whose pods keep the old one (docs/kuberay-versions.md)"
            ),
        ),
        Setting(
            "rayAuthMode",
            Choice(RAY_AUTH_MODES),
            "auto",
            "Ray's own token authentication on its dashboard, Ray client and GCS (KubeRay's authOptions, a token "
            "KubeRay generates per RayCluster): token (needs kuberayVersion 1.5.1 or later), disabled (the serving "
            "namespace's NetworkPolicies alone guard them), or auto (token where kuberayVersion has it, else "
            "disabled, which the preview says).",
            feeds="ray_token_auth",
            effects=(RAYSERVICE_REPLACED,),
            change_note="the RayCluster's spec gains or loses authOptions, and a new cluster gets a new token",
        ),
        Setting(
            "headFaultTolerance",
            Choice(HEAD_FAULT_TOLERANCE_MODES),
            GCS_REDIS,
            "GCS fault tolerance for the Ray head: redis (an ElastiCache for Valkey primary and replica the stack "
            "makes, TLS and an AUTH token, reachable from the system nodes only: a restarted head reloads the "
            "cluster and the GPU workers keep serving through it) or off (no store: a head restart restarts every "
            "GPU worker, which loads the model again).",
            feeds="head_fault_tolerance",
            effects=(GCS_STORE, MONITORING, RAYSERVICE_REPLACED),
            change_note=(
                "the RayCluster's spec gains or loses gcsFaultToleranceOptions and the head-restart alert its "
                "severity; to redis the ElastiCache group is created first (minutes) and the RayService, which waits "
                "for it, is left as it was when that fails; to off the group is deleted once the RayService no longer "
                "names it"
            ),
        ),
        Setting(
            "gcsRedisNodeType",
            Text(CACHE_NODE_TYPE_PATTERN, "an ElastiCache node type such as cache.t4g.micro"),
            "cache.t4g.micro",
            "ElastiCache node type of the head's GCS store (headFaultTolerance redis), for its primary and replica.",
            feeds="gcs_redis_node_type",
            effects=(GCS_STORE,),
            change_note="ElastiCache scales the nodes in place (online) and switches the primary at the end",
        ),
        Setting(
            "gcsRedisMaintenanceWindow",
            Text(MAINTENANCE_WINDOW_PATTERN, MAINTENANCE_WINDOW_ALLOWED),
            "sun:06:00-sun:07:00",
            "Weekly maintenance window of the head's GCS store (headFaultTolerance redis), ddd:hh24:mi-ddd:hh24:mi "
            "in UTC, at least 60 minutes: ElastiCache patches there, failing the primary over, which restarts the Ray "
            "head (the GPU workers ride through it). Unset, ElastiCache would pick a random hour of the week.",
            feeds="gcs_redis_maintenance_window",
            effects=(AWS_IN_PLACE,),
        ),
        Setting(
            "allowUnvalidatedKuberayVersion",
            BOOLEAN,
            False,
            "Deploy a kuberayVersion the RayService was not validated against (preview warns).",
            feeds="kuberay_version (whether an unvalidated one is allowed)",
            effects=(NOTHING_RUNNING,),
        ),
        Setting(
            "clusterUpgradeStrategy",
            Choice(CLUSTER_UPGRADE_STRATEGIES),
            REPLACE,
            "How a change to the RayService's cluster spec (image, Ray version, replicas, worker resources, a token or "
            "the API keys added or removed) reaches a running stack: replace (the RayService is deleted and created "
            "again: a full outage, no extra nodes) or newCluster (KubeRay's zero-downtime upgrade: a second RayCluster "
            "beside the active one, which needs a second Ray head on the system nodes and as many GPU nodes again, "
            "added by the Cluster Autoscaler; see Changing a running stack).",
            feeds="cluster_upgrade_strategy",
            effects=(LOAD_BALANCER, CHART_ROLLED, GPU_NODES_SCALED, RAYSERVICE_NEW_CLUSTER, RAYSERVICE_REPLACED),
            change_note=(
                "to newCluster: the RayService is updated in place and KubeRay builds a first new cluster beside the "
                "running one (its spec gains the digest annotation), the GPU node group's maximum grows by the surge "
                "and the Cluster Autoscaler is installed, and the NLB's selector names the active cluster; back to "
                "replace: the RayService is replaced"
            ),
        ),
        Setting(
            "rayVersion",
            Text(SEMVER_PATTERN, "a version such as 2.58.0"),
            "2.58.0",
            "Ray version of the image (RayService spec.rayClusterConfig.rayVersion); must be 2.58.0 with the default "
            "image.",
            feeds="ray_version",
            effects=(RAYSERVICE_REPLACED,),
        ),
        Setting(
            "rayServiceName",
            Text(
                RAYSERVICE_NAME_PATTERN,
                "1-40 characters of lower-case letters, digits and '-', starting with a letter and ending with a "
                "letter or digit (a DNS label that prefixes the RayCluster's own)",
            ),
            "ray-llm",
            "Name of the RayService; the endpoint Service is <name>-serve-svc.",
            feeds="ray_service_name",
            effects=(RAYSERVICE_REPLACED, LOAD_BALANCER, MONITORING),
        ),
        Setting(
            "namespace",
            Text(DNS_LABEL_PATTERN, DNS_LABEL_ALLOWED),
            "inference",
            "Kubernetes namespace of the RayService; not one the stack creates for another part (kuberay-system, "
            "monitoring, model-cache).",
            feeds="namespace",
            effects=(RAYSERVICE_REPLACED, LOAD_BALANCER, MONITORING),
        ),
        Setting(
            "modelId",
            Text(NO_SPACE_PATTERN, "a non-empty name without spaces"),
            "qwen3.5-9b",
            "Model id exposed on the OpenAI-compatible API.",
            feeds="model_id",
            effects=SERVE_ONLY,
            change_note=(
                "Ray Serve LLM names each engine deployment after the model id, so a new id replaces the deployment "
                "whatever the replica count: no rolling update"
            ),
        ),
        Setting(
            "modelSource",
            Text(),
            "Qwen/Qwen3.5-9B",
            "Where the weights come from (Hugging Face repo id, s3:// URI or a path in the image).",
            feeds="model_source",
            effects=(MODEL_MIRRORED, MONITORING, SERVE_IN_PLACE),
            change_note="with modelCache on, a Hugging Face repo is mirrored into the cache first; an s3:// source is "
            "read as it is; between the two the alerts' first-deploy deadline gains or loses the mirror's timeout",
        ),
        Setting(
            "maxModelLen",
            Integer(
                1,
                " tokens (2^20: more KV cache than one GPU of the supported types holds for an 8B model)",
                maximum=MAX_MODEL_LEN,
            ),
            4096,
            "vLLM max_model_len (context length) of prefill and decode, 1 to 1048576 tokens.",
            feeds="max_model_len",
            effects=SERVE_ONLY,
        ),
        Setting(
            "languageModelOnly",
            BOOLEAN,
            True,
            "Serve text only (vLLM language_model_only): a multimodal model's vision tower is neither loaded nor "
            "profiled, and requests with images are refused. The default Qwen3.5-9B at maxModelLen 4096 fits a g6's "
            "L4 only this way (lab/records/gpu-end-to-end.md); false needs a larger GPU.",
            feeds="language_model_only",
            effects=SERVE_ONLY,
        ),
        Setting(
            "prefillReplicas",
            Integer(1),
            1,
            "Prefill replicas (vLLM engines of tensorParallelSize x pipelineParallelSize GPUs each).",
            feeds="prefill.replicas",
            effects=(SERVE_IN_PLACE, *SIDE_SIZE),
        ),
        Setting(
            "decodeReplicas",
            Integer(1),
            1,
            "Decode replicas (vLLM engines of tensorParallelSize x pipelineParallelSize GPUs each).",
            feeds="decode.replicas",
            effects=(SERVE_IN_PLACE, *SIDE_SIZE),
        ),
        Setting(
            "tensorParallelSize",
            Integer(1),
            1,
            "vLLM tensor_parallel_size of every replica, both sides; at most the GPUs of one gpuNodeType node, and a "
            "divisor of them.",
            feeds="topology.tensor_parallel_size",
            effects=(SERVE_IN_PLACE, *SIDE_SIZE),
            change_note="the RayService is replaced and the node group resized only when the GPU node count changes",
        ),
        Setting(
            "pipelineParallelSize",
            Integer(1),
            1,
            "vLLM pipeline_parallel_size; only 1 with the NixlConnector KV transfer (see Scaling).",
            feeds="topology.pipeline_parallel_size",
            effects=SERVE_ONLY,
        ),
        Setting(
            "prefillMaxNumSeqs",
            Integer(0, VLLM_DEFAULT),
            32,
            "vLLM max_num_seqs of the prefill side; 0 leaves vLLM's default (256 below 70 GiB of GPU memory, 1024 "
            "above). 32 because with CUDA graphs vLLM needs it at most a hybrid model's state blocks, and the default "
            "model at maxModelLen 4096 on an L4 gets 47 with vLLM's 256 (62 with 32, measured: "
            "lab/records/gpu-end-to-end.md); raise it on larger GPUs.",
            feeds="prefill.max_num_seqs",
            effects=SERVE_ONLY,
        ),
        Setting(
            "decodeMaxNumSeqs",
            Integer(0, VLLM_DEFAULT),
            32,
            "vLLM max_num_seqs of the decode side, the requests it decodes at once; 0 leaves vLLM's default (256 "
            "below 70 GiB of GPU memory, 1024 above). 32 for the same reason as prefillMaxNumSeqs; raise it on larger "
            "GPUs.",
            feeds="decode.max_num_seqs",
            effects=SERVE_ONLY,
        ),
        Setting(
            "prefillMaxNumBatchedTokens",
            Integer(0, VLLM_DEFAULT),
            0,
            "vLLM max_num_batched_tokens of the prefill side; 0 leaves vLLM's default.",
            feeds="prefill.max_num_batched_tokens",
            effects=SERVE_ONLY,
        ),
        Setting(
            "decodeMaxNumBatchedTokens",
            Integer(0, VLLM_DEFAULT),
            0,
            "vLLM max_num_batched_tokens of the decode side; 0 leaves vLLM's default.",
            feeds="decode.max_num_batched_tokens",
            effects=SERVE_ONLY,
        ),
        Setting(
            "prefillQuantization",
            Choice(QUANTIZATIONS),
            "none",
            "vLLM quantization of the prefill side's weights: none (the checkpoint's own dtype, or its own "
            "quantization_config) or fp8 (vLLM's online FP8 of the linear layers at load, half their bytes; compute "
            "capability 7.5 or later, weight-only below 8.9). Off by default: no published evaluation covers it for "
            "the default model's Gated DeltaNet layers (see Scaling, FP8).",
            feeds="prefill.quantization",
            effects=SERVE_ONLY,
        ),
        Setting(
            "decodeQuantization",
            Choice(QUANTIZATIONS),
            "none",
            "vLLM quantization of the decode side's weights, as prefillQuantization; decode reads every weight each "
            "step, so it gains most from fp8.",
            feeds="decode.quantization",
            effects=SERVE_ONLY,
        ),
        Setting(
            "kvCacheDtype",
            Choice(KV_CACHE_DTYPES),
            "auto",
            "vLLM kv_cache_dtype of both sides (NIXL refuses a pair that differs): auto (the model dtype) or fp8, "
            "fp8_e4m3, fp8_e5m2 (one byte per element, half the KV bytes per token and per transfer; compute "
            "capability 8.0 or later). A hybrid model's Gated DeltaNet state keeps its dtype. Off by default: at "
            "the default maxModelLen and decodeMaxNumSeqs the KV of FP8 weights alone holds every sequence (see "
            "Scaling, FP8).",
            feeds="kv_cache_dtype",
            effects=SERVE_ONLY,
        ),
        Setting(
            "prefixCaching",
            Choice(PREFIX_CACHING_MODES),
            "auto",
            "vLLM prefix caching: a prompt that starts like an earlier one (a chat's history, a shared system prompt) "
            "reuses that prefix's KV cache instead of prefilling it again. on: the prefill side; off: no engine; auto: "
            "on where measured correct and faster (attention-only models), off for hybrid models such as the default "
            "(measured slower at an L4's memory, see Prefix caching). The decode side caches only for attention-only "
            "models, whatever the setting but off.",
            feeds="prefill.prefix_caching, decode.prefix_caching",
            effects=SERVE_ONLY,
            change_note=(
                "the engines of a side whose cache turns on or off restart; on a hybrid model a cached engine holds "
                "two state blocks a request, so fewer requests fit its KV cache (engineCapacity says how many; "
                "measured on an L4's memory: 80 preemptions at 16 concurrent requests, none uncached)"
            ),
        ),
        Setting(
            "prefillKvOffloadGiB",
            Integer(0, " (0: no host tier)"),
            0,
            "GiB of the node's host memory each prefill engine keeps KV blocks in when its GPU evicts them (vLLM's "
            "native CPU offloading beside NIXL): a prompt that starts like an earlier one loads them back instead of "
            "prefilling again. Needs the side's prefix caching on (prefixCaching on for a hybrid model). Pinned in the "
            "worker pod's memory beside Ray's object store: the preview refuses what the gpuNodeType cannot hold "
            "(see Prefix caching, Host-memory KV tier).",
            feeds="prefill.kv_offload_gib",
            effects=SERVE_ONLY,
            change_note="the side's engines restart with the new tier, empty: the host-memory cache starts cold",
        ),
        Setting(
            "decodeKvOffloadGiB",
            Integer(0, " (0: no host tier)"),
            0,
            "GiB of host memory each decode engine keeps evicted KV blocks in, as prefillKvOffloadGiB; only where the "
            "decode side caches prefixes (attention-only models, see Prefix caching).",
            feeds="decode.kv_offload_gib",
            effects=SERVE_ONLY,
        ),
        Setting(
            "prefixAwareRouting",
            BOOLEAN,
            False,
            "Route each request to the replica whose earlier prompts share the longest prefix with it (Ray Serve "
            "LLM's PrefixCacheAffinityRouter, run by the stack's fix of it), on each side that caches prefixes and "
            "may have more than one replica; with one replica it changes nothing (the preview says so). It does not "
            "balance load: on two replicas sharing four prefixes it won at most 2.8 points of cache hits and cost 24 % "
            "of the throughput at 64 concurrent requests (measured, see Prefix caching).",
            feeds="prefill.prefix_routing, decode.prefix_routing",
            effects=(SERVE_IN_PLACE, RAYSERVICE_REPLACED),
            change_note="the RayService is replaced when a side starts or stops routing by prefix: the pods mount the "
            "router's code; with no side routing only the serve config could change, and nothing does",
        ),
        Setting(
            "serveAutoscaling",
            BOOLEAN,
            False,
            "Ray Serve autoscales each side between <side>Replicas and <side>MaxReplicas; KubeRay's autoscaler adds "
            "Ray worker pods and the Cluster Autoscaler GPU nodes to match (see Scaling).",
            feeds="serve_autoscaling",
            effects=(MONITORING, SERVE_IN_PLACE, *SIDE_SIZE),
            change_note="the head's PodMonitor and its Prometheus NetworkPolicy add or drop the head autoscaler's "
            "metrics port",
        ),
        Setting(
            "prefillMaxReplicas",
            Integer(0, AUTOSCALING_ONLY),
            0,
            "Most prefill replicas with serveAutoscaling (at least prefillReplicas); 0 otherwise.",
            feeds="prefill.max_replicas",
            effects=(SERVE_IN_PLACE, *SIDE_SIZE),
        ),
        Setting(
            "decodeMaxReplicas",
            Integer(0, AUTOSCALING_ONLY),
            0,
            "Most decode replicas with serveAutoscaling (at least decodeReplicas); 0 otherwise.",
            feeds="decode.max_replicas",
            effects=(SERVE_IN_PLACE, *SIDE_SIZE),
        ),
        Setting(
            "prefillTargetOngoingRequests",
            Integer(0, AUTOSCALING_ONLY),
            0,
            "Ongoing requests per prefill replica that Ray Serve scales toward (required with serveAutoscaling); 0 "
            "otherwise.",
            feeds="prefill.target_ongoing_requests",
            effects=SERVE_ONLY,
        ),
        Setting(
            "decodeTargetOngoingRequests",
            Integer(0, AUTOSCALING_ONLY),
            0,
            "Ongoing requests per decode replica that Ray Serve scales toward (required with serveAutoscaling); 0 "
            "otherwise.",
            feeds="decode.target_ongoing_requests",
            effects=SERVE_ONLY,
        ),
        Setting(
            "clusterAutoscalerVersion",
            Text(CHART_VERSION_PATTERN, "a version such as 1.4.0"),
            "9.59.0",
            "Version of the cluster-autoscaler Helm chart (Cluster Autoscaler 1.35, built for kubernetesVersion 1.35 "
            "only), installed only with serveAutoscaling.",
            feeds="cluster_autoscaler_version",
            effects=(CHART_ROLLED,),
        ),
        Setting(
            "kvBufferDevice",
            Choice(KV_BUFFER_DEVICES),
            "auto",
            "Where vLLM's NIXL connector registers the KV cache for transfer: cuda (GPU memory over EFA RDMA), cpu "
            "(staged in host memory; vLLM 0.26 cannot do this for hybrid models such as the default) or auto (cuda "
            "where the instance type's EFA supports RDMA read, else cpu).",
            feeds="kv_buffer_device",
            effects=SERVE_ONLY,
        ),
        Setting(
            "hfToken",
            SECRET,
            "",
            "Optional Hugging Face token for gated models; set it with `pulumi config set --secret hfToken`.",
            feeds="hf_token, hf_token_value",
            effects=(SECRET_UPDATED, MODEL_MIRRORED, RAYSERVICE_REPLACED),
            change_note="a new value updates its Secret only (with the model cache the mirror's, else the workers'); "
            "adding or removing the token replaces the mirror Job with the model cache, else the RayService",
        ),
        Setting(
            "serveExposure",
            Choice(SERVE_EXPOSURES),
            "none",
            "Extra LoadBalancer (NLB) in front of the serve pods: none, internal or internet-facing.",
            feeds="serve_exposure",
            effects=(LOAD_BALANCER, SERVE_IN_PLACE, RAYSERVICE_REPLACED),
            change_note=(
                "the RayService is replaced only when API keys come or go with the exposure (to or from none, with "
                "serveApiKeyAuth true): its pods mount the keys; between internal and internet-facing only the load "
                "balancer changes"
            ),
        ),
        Setting(
            "serveSourceCidrs",
            StringList(client_cidr, CLIENT_CIDR_LIST),
            [],
            "CIDRs allowed through the serve load balancer, and to its NodePort on the nodes (required whenever "
            "serveExposure is not none, and then not the whole internet).",
            feeds="serve_source_cidrs",
            effects=(LOAD_BALANCER,),
        ),
        Setting(
            "serveApiKeys",
            SECRET,
            "",
            "API keys the serve endpoint accepts as `Authorization: Bearer <key>`, a JSON list set as one secret "
            "(`pulumi config set --secret serveApiKeys '[\"<key>\"]'`, each key 32-256 printable characters); two at "
            "once let a key be rotated without downtime. Required when serveExposure is not none and serveApiKeyAuth "
            "is true.",
            feeds="serve_api_keys",
            effects=(KEYS_RELOADED,),
            change_note="only while the endpoint asks for keys (serveExposure not none, serveApiKeyAuth true)",
        ),
        Setting(
            "serveApiKeyAuth",
            BOOLEAN,
            True,
            "Ask every request for one of serveApiKeys whenever serveExposure is not none (a 401 otherwise; health "
            "checks stay open). false is refused for internet-facing.",
            feeds="serve_api_key_auth",
            effects=(SERVE_IN_PLACE, RAYSERVICE_REPLACED),
            change_note="only with serveExposure internal or internet-facing; with none nothing changes",
        ),
        Setting(
            "serveMaxRequestMib",
            Integer(1, maximum=1024),
            16,
            "Largest request body the serve endpoint's edge takes, in MiB, 1 to 1024: a larger Content-Length gets 413 "
            "before the body is read, and a chunked body 411 (docs/security.md, The edge). Raise it for prompts that "
            "carry images.",
            feeds="serve_max_request_mib",
            effects=(RAYSERVICE_REPLACED,),
            change_note="the edge's configuration is a volume of the worker pods: they start again with it",
        ),
        Setting(
            "serveCertificateArn",
            Text(
                CERTIFICATE_ARN_PATTERN,
                "an ACM certificate ARN such as arn:aws:acm:<region>:<account>:certificate/<uuid>",
                optional=True,
            ),
            "",
            "ACM certificate (in the stack's region) for the DNS name clients use; the serve load balancer listens "
            "for HTTPS only, on 443. Required when serveExposure is not none.",
            feeds="serve_certificate_arn",
            effects=(LOAD_BALANCER,),
        ),
        Setting(
            "serveReadyTimeoutMinutes",
            Integer(
                5,
                f" (an assumed IAM role's credentials last at most {MAX_SERVE_READY_MINUTES // 60} h)",
                maximum=MAX_SERVE_READY_MINUTES,
            ),
            45,
            "How long `pulumi up` waits for the RayService to run the config just applied (image pull + model load), "
            "5 to 720; past it `pulumi up` fails naming what is missing. The app's alerts wait as long on a first "
            "deploy (see Observability).",
            feeds="serve_ready_timeout_minutes",
            effects=(NOTHING_RUNNING, MONITORING),
            change_note="the alert rules take the new deadline (with observability)",
        ),
        Setting(
            "modelPreflight",
            BOOLEAN,
            True,
            "Before the RayService changes, check that modelSource exists, is readable with the stack's credentials "
            "(hfToken, or the deploying identity for s3://) and holds a config.json vLLM can load; needs HTTPS to "
            "huggingface.co or S3 from the deploying machine.",
            feeds="model_preflight",
            effects=(NOTHING_RUNNING,),
        ),
        Setting(
            "modelCache",
            BOOLEAN,
            True,
            "Mirror a Hugging Face modelSource once into the stack's own S3 bucket (an in-cluster Job on the first "
            "`pulumi up` and when modelSource changes) and load the GPU workers from it instead of the Hub; an s3:// "
            "modelSource is read directly either way (docs/model-cache.md).",
            feeds="model_cache",
            effects=(MODEL_MIRRORED, MONITORING, SERVE_IN_PLACE, RAYSERVICE_REPLACED),
            change_note="only for a Hugging Face modelSource; the RayService is replaced because the workers' service "
            "account (read access to the cache) comes or goes; the alerts' first-deploy deadline gains or loses the "
            "mirror's timeout",
        ),
        Setting(
            "modelCacheRetainOnDestroy",
            BOOLEAN,
            False,
            "Keep the model cache bucket and its weights in the account on `pulumi destroy` (it leaves the stack's "
            "state; delete it yourself later); false, the default, deletes the bucket with the weights in it.",
            feeds="model_cache_retain_on_destroy",
            effects=(AWS_IN_PLACE,),
        ),
    ),
    "observability": (
        Setting(
            "observability",
            BOOLEAN,
            True,
            "Install the metrics stack (kube-prometheus-stack on the system nodes, DCGM exporter on the GPU nodes), "
            "the Ray/vLLM scrapes, dashboards and alerts (see Observability).",
            feeds="observability",
            effects=(MONITORING,),
        ),
        Setting(
            "kubePrometheusStackVersion",
            Text(CHART_VERSION_PATTERN, "a version such as 1.4.0"),
            "88.5.3",
            "Version of the kube-prometheus-stack Helm chart (Prometheus, Alertmanager, Grafana, the Prometheus "
            "operator), installed with observability.",
            feeds="kube_prometheus_stack_version",
            effects=(MONITORING,),
        ),
        Setting(
            "dcgmExporterVersion",
            Text(CHART_VERSION_PATTERN, "a version such as 1.4.0"),
            "4.8.2",
            "Version of NVIDIA's dcgm-exporter Helm chart (GPU metrics of the GPU nodes), installed with "
            "observability.",
            feeds="dcgm_exporter_version",
            effects=(MONITORING,),
        ),
        Setting(
            "ttftP99ObjectiveMs",
            Integer(1, " milliseconds"),
            2000,
            "Time-to-first-token objective in milliseconds; the TtftP99OverObjective alert fires when a side's p99 "
            "TTFT stays above it for 10 minutes.",
            feeds="ttft_p99_objective_ms",
            effects=(MONITORING,),
        ),
        Setting(
            "ampWorkspaceUrl",
            Text(
                AMP_WORKSPACE_PATTERN,
                "a workspace endpoint such as https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-<id>/",
                optional=True,
            ),
            "",
            "Optional Amazon Managed Service for Prometheus workspace endpoint "
            "(https://aps-workspaces.<region>.amazonaws.com/workspaces/ws-.../): Prometheus also remote-writes there, "
            "signed with SigV4 by an IAM role for its service account. Needs observability.",
            feeds="amp_workspace_url",
            effects=(MONITORING,),
        ),
        Setting(
            "alertSnsTopicArn",
            Text(
                SNS_TOPIC_ARN_PATTERN,
                "an SNS topic ARN such as arn:aws:sns:us-east-1:123456789012:ray-llm-alerts",
                optional=True,
            ),
            "",
            "Optional Amazon SNS topic the stack's alerts are published to: Alertmanager signs for the topic's region "
            "with an IAM role only its service account assumes, allowed sns:Publish on this topic only. Needs "
            "observability.",
            feeds="alert_sns_topic_arn",
            effects=(MONITORING,),
        ),
        Setting(
            "alertSlackWebhookUrl",
            SECRET,
            "",
            "Optional Slack incoming-webhook URL the stack's alerts are posted to; set it with `pulumi config set "
            "--secret alertSlackWebhookUrl <url>`. Alertmanager reads it from a Kubernetes Secret, never from the Helm "
            "values. Needs observability.",
            feeds="alert_slack_webhook_url",
            effects=(MONITORING,),
        ),
        Setting(
            "alertPagerDutyRoutingKey",
            SECRET,
            "",
            "Optional PagerDuty Events API v2 integration key (32 characters) the stack's alerts page with; set it "
            "with `pulumi config set --secret alertPagerDutyRoutingKey <key>`. Kept like alertSlackWebhookUrl. Needs "
            "observability.",
            feeds="alert_pagerduty_routing_key",
            effects=(MONITORING,),
        ),
        Setting(
            "runbookUrl",
            Text(
                RUNBOOK_URL_PATTERN,
                "an http(s) URL without a #fragment, such as https://github.com/<owner>/<repo>/blob/main/docs/runbook.md",
                optional=True,
            ),
            "",
            "Where docs/runbook.md opens in a browser (your repository host's page of it): each alert's runbook_url is "
            "it with the alert's section anchor. Empty: no link; every alert carries its runbook section as its "
            "description either way.",
            feeds="runbook_url",
            effects=(MONITORING,),
        ),
    ),
    "governance": (
        Setting(
            "owner",
            Text(TAG_VALUE_PATTERN, TAG_VALUE_ALLOWED),
            "",
            "Owner tag on every AWS resource (team or person to ask); AWS tag value rules.",
            feeds="owner",
            effects=(AWS_IN_PLACE, SYSTEM_NODES_ROLLED, GPU_NODES_ROLLED),
            change_note="tags reach the node launch templates, so both node groups roll",
        ),
        Setting(
            "costCenter",
            Text(TAG_VALUE_PATTERN, TAG_VALUE_ALLOWED),
            "",
            "cost-center tag on every AWS resource; AWS tag value rules.",
            feeds="cost_center",
            effects=(AWS_IN_PLACE, SYSTEM_NODES_ROLLED, GPU_NODES_ROLLED),
            change_note="tags reach the node launch templates, so both node groups roll",
        ),
        Setting(
            "protectResources",
            BOOLEAN,
            False,
            "Protect the VPC and cluster from deletion/replacement (pulumi protect + EKS deletion protection). To tear "
            f"down, run `{UNPROTECT_COMMAND}` before `pulumi destroy` (`pulumi state unprotect` lifts only "
            "Pulumi's protection, not EKS's).",
            feeds="protect_resources",
            effects=(AWS_IN_PLACE,),
        ),
    ),
}
SETTINGS = tuple(setting for section in SECTIONS.values() for setting in section)
SETTINGS_BY_KEY: Mapping[str, Setting] = {setting.key: setting for setting in SETTINGS}
# The program's own keys (the provider's aws:region aside): any other key of its namespace is a typo.
PROJECT_KEYS = frozenset(setting.key for setting in SETTINGS if ":" not in setting.key)

# What a change to each setting does; a test runs the program with each setting changed and holds these to what
# the change does to the declared resources.
CHANGE_EFFECTS: Mapping[str, tuple[Effect, ...]] = {setting.key: setting.effects for setting in SETTINGS}
CHANGE_NOTES: Mapping[str, str] = {setting.key: setting.change_note for setting in SETTINGS if setting.change_note}


def effects_of(key: str, strategy: str = REPLACE) -> tuple[Effect, ...]:
    """What a change to `key` does with clusterUpgradeStrategy `strategy`: with newCluster, a change that would
    replace the RayService updates it in place instead and KubeRay builds a second cluster (RAYSERVICE_NEW_CLUSTER),
    and so does a serve-config change (SERVE_NEW_CLUSTER: infra/serving/rayservice.py CLUSTER_SPEC_ANNOTATION).
    A key that names both (the strategy itself) keeps its own."""
    effects = CHANGE_EFFECTS[key]
    if strategy != NEW_CLUSTER or RAYSERVICE_NEW_CLUSTER in effects:
        return effects
    on_new_cluster = {RAYSERVICE_REPLACED: RAYSERVICE_NEW_CLUSTER, SERVE_IN_PLACE: SERVE_NEW_CLUSTER}
    return tuple(on_new_cluster.get(effect, effect) for effect in effects)


def most_severe(key: str, strategy: str = REPLACE) -> Effect:
    return max(effects_of(key, strategy), key=ALL_EFFECTS.index)


def settings_by_effect(settings: Mapping[str, str], strategy: str = REPLACE) -> dict[str, dict[str, str]]:
    """The settings grouped under the most severe effect a change to each has with the stack's
    clusterUpgradeStrategy, mildest group first: the ServeRollout's input, so that `pulumi preview --diff` names each
    changed setting under what it costs on the path that applies (`rayservice-replaced` or `rayservice-new-cluster`)."""
    grouped: dict[str, dict[str, str]] = {}
    for effect in ALL_EFFECTS:
        members = {key: value for key, value in sorted(settings.items()) if most_severe(key, strategy) is effect}
        if members:
            grouped[effect.name] = members
    return grouped
