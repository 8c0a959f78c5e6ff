"""What a setting's value may be (the value kinds and the patterns, bounds and lists they check against) and the
`Setting` row itself; the rows are in `rows_infrastructure.py`, `rows_serving.py` and `rows_operations.py`, and
`table.py` gathers them."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from infra.settings.changes import Effect
from policy.ray_llm_policies.aws_rules import EKS_CLUSTER_NAME_PATTERN, MAX_TAG_VALUE_LENGTH, TAG_CHARACTERS
from policy.ray_llm_policies.internet import IPV4_NOT_ON_THE_INTERNET

# Runs as copied: checkip.amazonaws.com answers the caller's public address (a bare `<your-ip>/32` would be a shell
# input redirection).
CHECKIP = "$(curl -s https://checkip.amazonaws.com)"
API_ALLOW_LIST_COMMAND = f"pulumi config set --path 'apiPublicAccessCidrs[0]' \"{CHECKIP}/32\""
# The first step of tearing down a protected stack: `pulumi state unprotect` does not lift EKS's own deletion
# protection, so the program must (docs/operations.md#tear-down).
UNPROTECT_COMMAND = "pulumi config set protectResources false && pulumi up"
KUBERNETES_VERSION_PATTERN = re.compile(r"^1\.(\d{2})\Z")
SEMVER_PATTERN = re.compile(r"^\d+\.\d+\.\d+\Z")
CHART_VERSION_PATTERN = re.compile(r"^v?\d+\.\d+\.\d+\Z")
# KubeRay releases vendored (vendor/kuberay-v<version>/) and validated against (tests/conftest.py kuberay_stack); the
# default is the newest, the one with Ray's token (docs/kuberay-versions.md#kuberay-versions).
VALIDATED_KUBERAY_VERSIONS = ("1.4.0", "1.7.0")
DEFAULT_KUBERAY_VERSION = "1.7.0"
# Ray's token authentication through KubeRay: the RayCluster's authOptions arrive in KubeRay 1.5.1, and its operator
# refuses them below Ray 2.52.0 (ray-operator/controllers/ray/utils/validation.go ValidateRayClusterSpec, vendored
# at 1.7.0). With authOptions the operator's own dashboard client sends the token (utils/dashboardclient).
KUBERAY_AUTH_OPTIONS_SINCE = (1, 5, 1)
RAY_TOKEN_AUTH_SINCE = (2, 52, 0)
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
    for families, sizes in {
        ("m7g", "m6g", "r7g", "r6g"): ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"),
        ("m5", "r5"): ("large", "xlarge", "2xlarge", "4xlarge", "12xlarge", "24xlarge"),
        ("m4",): ("large", "xlarge", "2xlarge", "4xlarge", "10xlarge"),
        ("r4",): ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge"),
        ("t4g", "t3"): ("micro", "small", "medium"),
    }.items()
    for family in families
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
# An AWS region name's form, in the ARNs that carry one (aws:region itself is checked against the supported list).
REGION_NAME = r"[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d"
AZ_PATTERN = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d[a-z]\Z")
EKS_NAME_PATTERN = re.compile(rf"^{EKS_CLUSTER_NAME_PATTERN}\Z")
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
    rf"^arn:aws[a-z-]*:sns:(?P<region>{REGION_NAME}):\d{{12}}:[A-Za-z0-9_-]{{1,256}}(\.fifo)?\Z"
)
# A page a browser opens, without a fragment: the alerts add each one's section anchor.
RUNBOOK_URL_PATTERN = re.compile(r"^https?://[^\s/#]+(/[^\s#]*)?\Z")
# An ACM certificate: the NLB's TLS listener names it; ACM certificates are regional and a load balancer takes
# one of its own region (https://docs.aws.amazon.com/acm/latest/userguide/acm-regions.html).
CERTIFICATE_ARN_PATTERN = re.compile(
    rf"^arn:aws[a-z-]*:acm:(?P<region>{REGION_NAME}):\d{{12}}:certificate/[0-9a-f-]{{36}}\Z"
)
# How a RayService cluster-spec change reaches a running stack: replaced, or KubeRay's NewCluster upgrade beside it.
REPLACE, NEW_CLUSTER = "replace", "newCluster"
CLUSTER_UPGRADE_STRATEGIES = (REPLACE, NEW_CLUSTER)

# Upper bounds, each with the reason it names in its message.
# The subnet plan (infra/network/subnets.py) cuts the VPC into 2**PRIVATE_PREFIX_DELTA blocks: a private subnet per AZ,
# the last block cut again into public subnets PUBLIC_PREFIX_DELTA bits narrower than the VPC. A VPC and a subnet are
# /16 to /28 (https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html), so the VPC is at most /22; its
# public /28s keep 10 addresses beside a NAT gateway, the 8 an internet-facing NLB needs per subnet
# (https://docs.aws.amazon.com/elasticloadbalancing/latest/network/availability-zones.html).
PRIVATE_PREFIX_DELTA = 3
PUBLIC_PREFIX_DELTA = 6
MIN_VPC_PREFIX = 16
MAX_SUBNET_PREFIX = 28
MAX_VPC_PREFIX = MAX_SUBNET_PREFIX - PUBLIC_PREFIX_DELTA
# The setting stops two bits short of what the plan can cut: its private subnets (/23 of a /20, 507 addresses) hold
# every pod's VPC address and, by the VPC CNI's default WARM_ENI_TARGET=1, a whole spare ENI of addresses per node
# (https://github.com/aws/amazon-vpc-cni-k8s/blob/master/docs/eni-and-ip-target.md), which a /25 of a /22 (123) runs
# out of with a few GPU nodes in the one GPU AZ (a sizing margin, estimated).
MAX_VPC_CIDR_SETTING_PREFIX = 20
MAX_AZS = 2**PRIVATE_PREFIX_DELTA - 1
# A cluster needs "at least two subnets that are in different Availability Zones"
# (https://docs.aws.amazon.com/eks/latest/userguide/network_reqs.html).
EKS_MIN_AZS = 2
# EKS quota "Nodes per managed node group": 450 (https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html).
MAX_NODES_PER_NODE_GROUP = 450
# 2^20 tokens: an 8B GQA model's KV cache for that context (128 KiB/token) alone needs 128 GiB, more than any
# one GPU of the supported types holds; vLLM further caps it at the model's own max_position_embeddings.
MAX_MODEL_LEN = 1_048_576
# 12 h, the longest an assumed IAM role's credentials last (MaxSessionDuration, IAM user guide
# https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_update-role-settings.html): a longer wait outlives them.
MAX_SERVE_READY_MINUTES = 720

TAG_VALUE_PATTERN = re.compile(rf"{TAG_CHARACTERS}{{0,{MAX_TAG_VALUE_LENGTH}}}\Z")
TAG_VALUE_ALLOWED = (
    f"at most {MAX_TAG_VALUE_LENGTH} letters, digits, spaces and _ . : / = + - @ (AWS tag value rules) (or empty)"
)

# RFC 5737's documentation ranges: no real client has one of these addresses.
DOCUMENTATION_RANGES = tuple(ipaddress.IPv4Network(c) for c in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))
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
    for block in IPV4_NOT_ON_THE_INTERNET:
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


# What one value of a key may be: the reader (infra/settings/reader.py) checks it and names key, value and what is
# allowed; `pulumi_type` is Pulumi.yaml's `type` of it
# (https://www.pulumi.com/docs/iac/concepts/projects/project-file/#config-options).
@dataclass(frozen=True)
class Text:
    """A string, matching `pattern` when one is given (the check of a pattern-less key is a named rule)."""

    pulumi_type: ClassVar[str] = "string"
    pattern: re.Pattern[str] | None = None
    allowed: str = ""
    optional: bool = False  # empty is allowed too, and read as None


@dataclass(frozen=True)
class Integer:
    pulumi_type: ClassVar[str] = "integer"
    minimum: int
    why: str = ""  # said after the bounds in the message, e.g. " (EKS needs two Availability Zones; ...)"
    maximum: int | None = None

    def admits(self, value: int) -> bool:
        return value >= self.minimum and (self.maximum is None or value <= self.maximum)

    @property
    def bounds(self) -> str:
        return f">= {self.minimum}" if self.maximum is None else f"from {self.minimum} to {self.maximum}"


@dataclass(frozen=True)
class Boolean:
    pulumi_type: ClassVar[str] = "boolean"


@dataclass(frozen=True)
class Choice:
    pulumi_type: ClassVar[str] = "string"
    options: tuple[str, ...]


@dataclass(frozen=True)
class StringList:
    """A JSON list of strings, each checked by `item` (its ValueError says why) and kept in the form it returns."""

    pulumi_type: ClassVar[str] = "array"
    item: Callable[[str], str]
    allowed: str


@dataclass(frozen=True)
class Secret:
    """A credential, set with `pulumi config set --secret`; the rules that check it never print it."""

    pulumi_type: ClassVar[str] = "string"


@dataclass(frozen=True)
class ProviderValue:
    """A provider's own key (`aws:region`), read from its namespace; Pulumi.yaml gives it a plain value."""

    pulumi_type: ClassVar[str] = "string"


Kind = Text | Integer | Boolean | Choice | StringList | Secret | ProviderValue
BOOLEAN = Boolean()
SECRET = Secret()


@dataclass(frozen=True)
class Setting:
    key: str
    kind: Kind
    default: Any  # as Pulumi.yaml types it: str, int, bool or list
    description: str
    effects: tuple[Effect, ...]  # what a change does, mildest first (infra/settings/changes.py)
    # The StackConfig fields the value feeds ("prefill.replicas": a field of a field; several joined by ", "), by
    # default the key in snake_case. A plain field name is filled with the value as read unless load_config derives
    # it (kvBufferDevice's "auto").
    feeds: str = ""
    change_note: str = ""  # when an effect applies only to some changes of the setting

    def __post_init__(self) -> None:
        if not self.feeds:
            object.__setattr__(self, "feeds", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", self.key).lower())

    @property
    def pulumi_type(self) -> str:
        return self.kind.pulumi_type
