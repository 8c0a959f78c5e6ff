"""The input rules AWS enforces on the properties this program sets: a `Rule` each, citing its source.

A string AWS refuses passes every offline test and fails only in preview or `pulumi up` (issue 49), so each rule is
stated once here with its API reference or terraform-provider-aws validator
(docs/aws-input-rules.md#what-holds-the-class). Dependency-free (the standard library only), so the policy pack and
the tests share it."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TF = "hashicorp/terraform-provider-aws internal/service/"
EC2_API = "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/"
EKS_API = "https://docs.aws.amazon.com/eks/latest/APIReference/"


def _without_whitespace(text: str) -> int:
    """IAM counts a policy's size without its whitespace (IAM quotas, "IAM and AWS STS quotas")."""
    return len("".join(text.split()))


def _decoded_size(text: str) -> int:
    """User data is limited in raw form, before it is base64-encoded."""
    return len(base64.b64decode(text, validate=True))


@dataclass(frozen=True)
class Rule:
    """What AWS accepts for one property: a pattern the whole value must match, lengths, allowed values or bounds."""

    name: str
    allowed: str
    source: str
    # A value the source refuses (a test holds the rule to refuse it).
    refused_example: str | float
    pattern: str = ""
    min_length: int = 0
    max_length: int | None = None
    values: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    length: Callable[[str], int] = len

    def refusal(self, value: Any) -> str | None:
        """Why AWS refuses `value`, or None when it accepts it."""
        if self.minimum is not None or self.maximum is not None:
            if isinstance(value, bool) or not isinstance(value, int | float):
                return "not a number"
            if self.minimum is not None and value < self.minimum:
                return f"below {self.minimum:g}"
            if self.maximum is not None and value > self.maximum:
                return f"above {self.maximum:g}"
            return None
        if not isinstance(value, str):
            return "not a string"
        if self.values and value not in self.values:
            return "not one of the allowed values"
        try:
            size = self.length(value)
        except ValueError as error:
            return f"unreadable ({error})"
        if size < self.min_length:
            return f"shorter than {self.min_length}"
        if self.max_length is not None and size > self.max_length:
            return f"{size} characters, more than {self.max_length}"
        if self.pattern and not re.fullmatch(self.pattern, value):
            return f"does not match {self.pattern}"
        return None


def one_of(name: str, source: str, refused_example: str, values: tuple[str, ...]) -> Rule:
    """A rule of enumerated values, which it names as what is allowed ("a, b or c")."""
    allowed = values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"
    return Rule(name, allowed, source, refused_example, values=values)


# --- tags: every tagged resource -------------------------------------------------------------------------------------
_TAGGING = (
    "https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html (tag naming limits and requirements); "
    "IAM's Tag, the strictest of the services here: https://docs.aws.amazon.com/IAM/latest/APIReference/API_Tag.html"
)
# Letters, numbers and spaces representable in UTF-8, and _ . : / = + - @ (Python's \w is Unicode letters, digits, _).
TAG_CHARACTERS = r"[\w .:/=+\-@]"
MAX_TAG_VALUE_LENGTH = 256
TAG_KEY = Rule(
    "tag key",
    "1-128 letters, numbers, spaces and _ . : / = + - @, not starting with aws:",
    _TAGGING,
    "owner's",
    pattern=rf"(?!aws:){TAG_CHARACTERS}+",
    min_length=1,
    max_length=128,
)
TAG_VALUE = Rule(
    "tag value",
    "0-256 letters, numbers, spaces and _ . : / = + - @",
    _TAGGING,
    "the head's store",
    pattern=rf"{TAG_CHARACTERS}*",
    max_length=MAX_TAG_VALUE_LENGTH,
)

# --- EC2 -------------------------------------------------------------------------------------------------------------
_EC2_GROUP_CHARACTERS = r"[A-Za-z0-9 ._\-:/()#,@\[\]+=&;{}!$*]"
SECURITY_GROUP_DESCRIPTION = Rule(
    "security group description",
    "up to 255 of a-zA-Z0-9, spaces and ._-:/()#,@[]+=&;{}!$*",
    f"{EC2_API}API_CreateSecurityGroup.html (GroupDescription); terraform checks only the length "
    f"({TF}ec2/vpc_security_group.go, description)",
    "EFA: all traffic between the GPU nodes' EFA interfaces",
    pattern=f"{_EC2_GROUP_CHARACTERS}*",
    max_length=255,
)
SECURITY_GROUP_NAME = Rule(
    "security group name",
    "up to 255 of a-zA-Z0-9, spaces and ._-:/()#,@[]+=&;{}!$*, not starting with sg-",
    f"{EC2_API}API_CreateSecurityGroup.html (GroupName); {TF}ec2/vpc_security_group.go (name: cannot begin with sg-)",
    "sg-gpu-nodes",
    pattern=f"(?!sg-){_EC2_GROUP_CHARACTERS}*",
    max_length=255,
)
SECURITY_GROUP_RULE_DESCRIPTION = Rule(
    "security group rule description",
    "up to 255 of A-Za-z0-9, spaces and ._-:/()#,@[]+=&;{}!$*",
    f"{TF}ec2/validate.go validSecurityGroupRuleDescription (hashicorp/terraform-provider-aws#18874 is an "
    f"apostrophe refused); {EC2_API}API_IpRange.html",
    "the Ray head's GCS",
    pattern=f"{_EC2_GROUP_CHARACTERS}*",
    max_length=255,
)
LAUNCH_TEMPLATE_NAME = Rule(
    "launch template name",
    "3-125 letters, digits and ()./_-",
    f"{TF}ec2/validate.go ValidLaunchTemplateName (3-125); {EC2_API}API_CreateLaunchTemplate.html (LaunchTemplateName)",
    "gpu nodes",
    pattern=r"[0-9A-Za-z()./_\-]+",
    min_length=3,
    max_length=125,
)
LAUNCH_TEMPLATE_DESCRIPTION = Rule(
    "launch template version description",
    "up to 255 characters",
    f"{EC2_API}API_CreateLaunchTemplate.html (VersionDescription: maximum 255 characters)",
    "x" * 256,
    max_length=255,
)
USER_DATA = Rule(
    "user data",
    "base64 of at most 16 KB",
    "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html (limited to 16 KB in raw form, before it is "
    "base64-encoded)",
    base64.b64encode(b"x" * 16385).decode(),
    max_length=16384,
    length=_decoded_size,
)
VOLUME_TYPE = one_of(
    "EBS volume type",
    f"{EC2_API}API_LaunchTemplateEbsBlockDeviceRequest.html (VolumeType)",
    "gp4",
    ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"),
)
MAX_GP3_GIB = 16384
GP3_SIZE = Rule(
    "gp3 volume size",
    "1 to 16384 GiB",
    "https://docs.aws.amazon.com/ebs/latest/userguide/ebs-volume-types.html (gp3: 1 GiB - 16 TiB)",
    16385,
    minimum=1,
    maximum=MAX_GP3_GIB,
)
HTTP_ENDPOINT = one_of(
    "instance metadata endpoint",
    f"{EC2_API}API_LaunchTemplateInstanceMetadataOptionsRequest.html (HttpEndpoint)",
    "on",
    ("enabled", "disabled"),
)
HTTP_TOKENS = one_of(
    "instance metadata tokens",
    f"{EC2_API}API_LaunchTemplateInstanceMetadataOptionsRequest.html (HttpTokens)",
    "v2",
    ("optional", "required"),
)
HOP_LIMIT = Rule(
    "instance metadata hop limit",
    "1 to 64",
    f"{EC2_API}API_LaunchTemplateInstanceMetadataOptionsRequest.html (HttpPutResponseHopLimit)",
    65,
    minimum=1,
    maximum=64,
)
INTERFACE_TYPE = one_of(
    "network interface type",
    f"{EC2_API}API_LaunchTemplateInstanceNetworkInterfaceSpecificationRequest.html (InterfaceType)",
    "EFA",
    ("interface", "efa", "efa-only"),
)
MARKET_TYPE = one_of(
    "instance market type",
    f"{EC2_API}API_LaunchTemplateInstanceMarketOptionsRequest.html (MarketType)",
    "capacity_block",
    ("spot", "capacity-block", "interruptible-capacity-reservation"),
)
TAGGED_RESOURCE_TYPE = one_of(
    "launch template tag resource type",
    f"{EC2_API}API_LaunchTemplateTagSpecificationRequest.html (ResourceType)",
    "launch-template",
    ("instance", "volume", "network-interface", "spot-instances-request"),
)
PLACEMENT_GROUP_NAME = Rule(
    "placement group name",
    "up to 255 ASCII characters",
    f"{EC2_API}API_CreatePlacementGroup.html (GroupName)",
    "gpu-placement-é",
    pattern=r"[\x00-\x7f]*",
    max_length=255,
)
PLACEMENT_STRATEGY = one_of(
    "placement strategy",
    f"{EC2_API}API_CreatePlacementGroup.html (Strategy)",
    "clustered",
    ("cluster", "spread", "partition"),
)
CIDR_BLOCK = Rule(
    "VPC or subnet IPv4 block",
    "an IPv4 network from /16 to /28",
    "https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html (the allowed block size is between a /28 "
    "netmask and /16 netmask)",
    "10.0.0.0/12",
    pattern=r"\d{1,3}(\.\d{1,3}){3}/(1[6-9]|2[0-8])",
)
ADDRESS_DOMAIN = one_of("Elastic IP domain", f"{EC2_API}API_AllocateAddress.html (Domain)", "VPC", ("vpc", "standard"))
VPC_ENDPOINT_TYPE = one_of(
    "VPC endpoint type",
    f"{EC2_API}API_CreateVpcEndpoint.html (VpcEndpointType)",
    "gateway",
    ("Interface", "Gateway", "GatewayLoadBalancer", "Resource", "ServiceNetwork"),
)

# --- IAM -------------------------------------------------------------------------------------------------------------
_IAM_QUOTAS = "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html"
IAM_ROLE_NAME = Rule(
    "IAM role name",
    "1-64 letters, digits and +=,.@_-",
    f"{TF}iam/role.go name: validResourceName(roleNameMaxLen = 64), iam/validate.go; "
    "https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreateRole.html (RoleName)",
    "model cache reader",
    pattern=r"[\w+=,.@-]+",
    min_length=1,
    max_length=64,
)
IAM_ROLE_POLICY_NAME = Rule(
    "IAM inline policy name",
    "1-128 letters, digits and +=,.@_-",
    f"{TF}iam/role_policy.go name: validRolePolicyName (rolePolicyNameMaxLen = 128), iam/validate.go",
    "alertmanager sns",
    pattern=r"[\w+=,.@-]+",
    min_length=1,
    max_length=128,
)
# terraform-provider-aws refuses typographic quotes (U+201C, U+2018) in a role description.
_TYPOGRAPHIC_QUOTES = "\u201c\u2018"
IAM_ROLE_DESCRIPTION = Rule(
    "IAM role description",
    "up to 1000 letters, marks, spaces, symbols, numbers and punctuation, no typographic quotes",
    f"{TF}iam/role.go description: validation.StringLenBetween(0, 1000), StringDoesNotMatch of the quotes, "
    r"StringMatch [\p{L}\p{M}\p{Z}\p{S}\p{N}\p{P}]*",
    "the cluster\u2018s role",
    pattern=rf"[^{_TYPOGRAPHIC_QUOTES}]*",
    max_length=1000,
)
TRUST_POLICY = Rule(
    "IAM role trust policy",
    "at most 2048 characters, whitespace not counted",
    f"{_IAM_QUOTAS} (role trust policy length: 2,048 characters)",
    '{"Statement": "' + "x" * 2048 + '"}',
    max_length=2048,
    length=_without_whitespace,
)
INLINE_POLICY = Rule(
    "IAM inline role policy",
    "at most 10240 characters, whitespace not counted",
    f"{TF}iam/role_policy.go policy: verify.ValidIAMPolicyJSON(10240); {_IAM_QUOTAS} (role policy size)",
    '{"Statement": "' + "x" * 10240 + '"}',
    max_length=10240,
    length=_without_whitespace,
)
MANAGED_POLICY_ARN = Rule(
    "IAM managed policy ARN",
    "arn:<partition>:iam::<aws or account>:policy/<path and name>",
    "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-arns; "
    f"{TF}iam/role_policy_attachment.go policy_arn: verify.ValidARN",
    "AmazonEKSWorkerNodePolicy",
    pattern=r"arn:aws(-[a-z]+)*:iam::(aws|\d{12}):policy/[\w+=,.@/-]+",
)

# --- KMS -------------------------------------------------------------------------------------------------------------
KMS_DESCRIPTION = Rule(
    "KMS key description",
    "up to 8192 characters",
    f"{TF}kms/key.go description: validation.StringLenBetween(0, 8192); "
    "https://docs.aws.amazon.com/kms/latest/APIReference/API_CreateKey.html (Description)",
    "x" * 8193,
    max_length=8192,
)
KMS_DELETION_WINDOW = Rule(
    "KMS key deletion window",
    "7 to 30 days",
    f"{TF}kms/key.go deletion_window_in_days: validation.IntBetween(7, 30)",
    31,
    minimum=7,
    maximum=30,
)

# --- EKS -------------------------------------------------------------------------------------------------------------
EKS_CLUSTER_NAME_PATTERN = r"[0-9A-Za-z][0-9A-Za-z_-]{0,99}"
EKS_CLUSTER_NAME = Rule(
    "EKS cluster name",
    "1-100 letters, digits, - and _, starting with a letter or digit",
    f"{TF}eks/validate.go validClusterName; {EKS_API}API_CreateCluster.html (name)",
    "-ray-llm",
    pattern=EKS_CLUSTER_NAME_PATTERN,
    min_length=1,
    max_length=100,
)
NODEGROUP_NAME = Rule(
    "EKS node group name",
    "1-63 characters",
    f"{TF}eks/node_group.go node_group_name: validation.StringLenBetween(0, 63); {EKS_API}API_CreateNodegroup.html",
    "g" * 64,
    min_length=1,
    max_length=63,
)
ADDON_NAME = Rule(
    "EKS add-on name",
    "not empty",
    f"{TF}eks/addon.go addon_name: validation.NoZeroValues",
    "",
    min_length=1,
)
ADDON_VERSION = Rule(
    "EKS add-on version",
    "v<semantic version>, such as v1.13.2-eksbuild.1",
    f"{TF}eks/addon.go addon_version (semver.org's regular expression behind a v)",
    "1.13.2-eksbuild.1",
    pattern=r"v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-((0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
    r"(\.(0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?",
)
RESOLVE_CONFLICTS_ON_CREATE = one_of(
    "EKS add-on conflict resolution on create",
    f"{TF}eks/addon.go resolve_conflicts_on_create",
    "PRESERVE",
    ("NONE", "OVERWRITE"),
)
RESOLVE_CONFLICTS_ON_UPDATE = one_of(
    "EKS add-on conflict resolution on update",
    f"{TF}eks/addon.go resolve_conflicts_on_update (types.ResolveConflicts); {EKS_API}API_UpdateAddon.html",
    "KEEP",
    ("NONE", "OVERWRITE", "PRESERVE"),
)
LOG_TYPE = one_of(
    "EKS control plane log type",
    f"{EKS_API}API_LogSetup.html (types)",
    "controller-manager",
    ("api", "audit", "authenticator", "controllerManager", "scheduler"),
)
AUTHENTICATION_MODE = one_of(
    "EKS authentication mode",
    f"{EKS_API}API_CreateAccessConfigRequest.html (authenticationMode)",
    "IAM",
    ("API", "API_AND_CONFIG_MAP", "CONFIG_MAP"),
)
ACCESS_POLICY_ARN = Rule(
    "EKS access policy ARN",
    "arn:<partition>:eks::aws:cluster-access-policy/<name>",
    f"{EKS_API}API_AssociateAccessPolicy.html (policyArn); "
    "https://docs.aws.amazon.com/eks/latest/userguide/access-policy-permissions.html",
    "AmazonEKSClusterAdminPolicy",
    pattern=r"arn:aws(-[a-z]+)*:eks::aws:cluster-access-policy/[A-Za-z]+",
)
ACCESS_SCOPE_TYPE = one_of(
    "EKS access scope type", f"{EKS_API}API_AccessScope.html (type)", "Cluster", ("cluster", "namespace")
)
ENCRYPTED_RESOURCES = one_of(
    "EKS encryption resources",
    f"{EKS_API}API_EncryptionConfig.html (resources: the only supported value is secrets)",
    "configmaps",
    ("secrets",),
)
AMI_TYPE = Rule(
    "EKS node group AMI type",
    "one of the AMITypes EKS documents",
    f"{EKS_API}API_CreateNodegroup.html (amiType); {TF}eks/node_group.go ami_type: enum.Validate[types.AMITypes]",
    "AL2023_X86_64_NVIDIA",
    values=(
        "AL2_x86_64",
        "AL2_x86_64_GPU",
        "AL2_ARM_64",
        "CUSTOM",
        "BOTTLEROCKET_ARM_64",
        "BOTTLEROCKET_x86_64",
        "BOTTLEROCKET_ARM_64_FIPS",
        "BOTTLEROCKET_x86_64_FIPS",
        "BOTTLEROCKET_ARM_64_NVIDIA",
        "BOTTLEROCKET_x86_64_NVIDIA",
        "WINDOWS_CORE_2019_x86_64",
        "WINDOWS_FULL_2019_x86_64",
        "WINDOWS_CORE_2022_x86_64",
        "WINDOWS_FULL_2022_x86_64",
        "AL2023_x86_64_STANDARD",
        "AL2023_ARM_64_STANDARD",
        "AL2023_x86_64_NEURON",
        "AL2023_x86_64_NVIDIA",
        "AL2023_ARM_64_NVIDIA",
    ),
)
CAPACITY_TYPE = one_of(
    "EKS node group capacity type",
    f"{EKS_API}API_CreateNodegroup.html (capacityType); {TF}eks/node_group.go capacity_type",
    "on-demand",
    ("ON_DEMAND", "SPOT", "CAPACITY_BLOCK"),
)
TAINT_KEY = Rule(
    "EKS taint key",
    "1-63 characters",
    f"{TF}eks/node_group.go taint.key: validation.StringLenBetween(1, 63); {EKS_API}API_Taint.html",
    "",
    min_length=1,
    max_length=63,
)
TAINT_VALUE = Rule(
    "EKS taint value",
    "0-63 characters",
    f"{TF}eks/node_group.go taint.value: validation.StringLenBetween(0, 63); {EKS_API}API_Taint.html",
    "t" * 64,
    max_length=63,
)
TAINT_EFFECT = one_of(
    "EKS taint effect",
    f"{EKS_API}API_Taint.html (effect); {TF}eks/node_group.go taint.effect",
    "NoSchedule",
    ("NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE"),
)
NODE_LABEL = Rule(
    "EKS node group label key or value",
    "1-63 characters",
    f"{EKS_API}API_UpdateLabelsPayload.html (key and value length constraints: 1 to 63), the labels of "
    f"{EKS_API}API_CreateNodegroup.html",
    "l" * 64,
    min_length=1,
    max_length=63,
)
LAUNCH_TEMPLATE_VERSION = Rule(
    "EKS node group launch template version",
    "1-255 characters",
    f"{TF}eks/node_group.go launch_template.version: validation.StringLenBetween(1, 255)",
    "",
    min_length=1,
    max_length=255,
)
NODE_COUNT = Rule(
    "EKS node group size",
    "0 or more",
    f"{TF}eks/node_group.go scaling_config desired_size/min_size: validation.IntAtLeast(0)",
    -1,
    minimum=0,
)
NODE_COUNT_MAX = Rule(
    "EKS node group maximum size",
    "1 or more",
    f"{TF}eks/node_group.go scaling_config.max_size: validation.IntAtLeast(1)",
    0,
    minimum=1,
)

# --- ElastiCache -----------------------------------------------------------------------------------------------------
_ELASTICACHE_API = "https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/"
REPLICATION_GROUP_ID = Rule(
    "ElastiCache replication group id",
    "1-40 letters, digits or single hyphens, starting with a letter, not ending with a hyphen",
    f"{_ELASTICACHE_API}API_CreateReplicationGroup.html (ReplicationGroupId constraints)",
    "gcs--store",
    pattern=r"[A-Za-z](?!.*--)[A-Za-z0-9-]*(?<!-)",
    min_length=1,
    max_length=40,
)
REPLICATION_GROUP_DESCRIPTION = Rule(
    "ElastiCache replication group description",
    "not empty",
    f"{TF}elasticache/replication_group.go description: validation.StringIsNotEmpty "
    "(no character rule is documented; the stack's avoids the apostrophe anyway: issue 49)",
    "",
    min_length=1,
)
AUTH_TOKEN = Rule(
    "ElastiCache AUTH token",
    '16-128 printable characters other than @, " and /',
    f"{TF}elasticache/validate.go validReplicationGroupAuthToken; {_ELASTICACHE_API}API_CreateReplicationGroup.html "
    "(AuthToken)",
    "short@token",
    pattern=r'[^@"/]+',
    min_length=16,
    max_length=128,
)
ENGINE = one_of(
    "ElastiCache engine",
    f"{TF}elasticache/replication_group.go engine: StringInSlice(engineRedis, engineValkey)",
    "memcached",
    ("redis", "valkey"),
)
CACHE_CLUSTERS = Rule(
    "ElastiCache replication group cache clusters",
    "1 to 6",
    f"{_ELASTICACHE_API}API_CreateReplicationGroup.html (NumCacheClusters: between 1 and 6)",
    7,
    minimum=1,
    maximum=6,
)
SNAPSHOT_RETENTION = Rule(
    "ElastiCache snapshot retention",
    "at most 35 days",
    f"{TF}elasticache/replication_group.go snapshot_retention_limit: validation.IntAtMost(35)",
    36,
    maximum=35,
)
_DAY = "(?i:sun|mon|tue|wed|thu|fri|sat)"
_WEEKLY_TIME = rf"{_DAY}:([01][0-9]|2[0-3]):[0-5][0-9]"
MAINTENANCE_WINDOW = Rule(
    "ElastiCache maintenance window",
    "ddd:hh24:mi-ddd:hh24:mi in UTC (its 60-minute minimum is the stack config's check: gcsRedisMaintenanceWindow)",
    f"{_ELASTICACHE_API}API_CreateReplicationGroup.html (PreferredMaintenanceWindow); hashicorp/terraform-provider-aws "
    "internal/verify/validate.go ValidOnceAWeekWindowFormat",
    "sun:6:00-sun:7:00",
    pattern=rf"{_WEEKLY_TIME}-{_WEEKLY_TIME}",
)
CACHE_SUBNET_GROUP_NAME = Rule(
    "ElastiCache subnet group name",
    "up to 255 letters, digits or hyphens",
    f"{_ELASTICACHE_API}API_CreateCacheSubnetGroup.html (CacheSubnetGroupName)",
    "gcs_store_subnets",
    pattern=r"[A-Za-z0-9-]+",
    max_length=255,
)

# --- S3 --------------------------------------------------------------------------------------------------------------
BUCKET_NAME = Rule(
    "S3 bucket name",
    "3-63 lowercase letters, digits, . and -, starting and ending with a letter or digit, no '..', not an IP address",
    f"{TF}s3/bucket.go validBucketName; https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html",
    "LLM-models",
    pattern=r"(?!\d{1,3}(\.\d{1,3}){3}$)(?!xn--)(?!sthree-)(?!.*\.\.)[0-9a-z][0-9a-z.-]*[0-9a-z](?<!-s3alias)(?<!--ol-s3)",
    min_length=3,
    max_length=63,
)
SSE_ALGORITHM = one_of(
    "S3 default encryption algorithm",
    "https://docs.aws.amazon.com/AmazonS3/latest/API/API_ServerSideEncryptionByDefault.html (SSEAlgorithm)",
    "SSE-S3",
    ("AES256", "aws:kms", "aws:kms:dsse"),
)
