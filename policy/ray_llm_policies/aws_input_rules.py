"""The input rules AWS enforces on every AWS property this program sets: one row per rule, each citing its source.

A string AWS refuses passes every offline test (the mocks take anything) and fails only in `pulumi preview`
(pulumi-aws runs terraform-provider-aws's validators in Check) or, worse, in `pulumi up` after the VPC and the cluster
exist (EC2 CreateSecurityGroup refused the EFA group's apostrophe about 15 minutes in: issue 49). This table states
each rule once, citing the API reference or the terraform-provider-aws validator (hashicorp/terraform-provider-aws,
`internal/service/...`) it comes from. `tests/test_aws_input_rules.py` walks every AWS resource of every shipped stack
and variant against it, and fails on a property the table neither checks nor explains; the `aws-input-rules` policy
(`input_rules.py`) checks a real preview, where autonames and pulumi-eks's own children are visible too.
docs/aws-input-rules.md lists what it covers.

Dependency-free (the standard library only), so the policy pack and the tests share it.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator, Mapping
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


# --- tags: every tagged resource -------------------------------------------------------------------------------------
_TAGGING = (
    "https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html (tag naming limits and requirements); "
    "IAM's Tag, the strictest of the services here: https://docs.aws.amazon.com/IAM/latest/APIReference/API_Tag.html"
)
# Letters, numbers and spaces representable in UTF-8, and _ . : / = + - @ (Python's \w is Unicode letters, digits, _).
_TAG_CHARACTERS = r"[\w .:/=+\-@]"
TAG_KEY = Rule(
    "tag key",
    "1-128 letters, numbers, spaces and _ . : / = + - @, not starting with aws:",
    _TAGGING,
    "owner's",
    pattern=rf"(?!aws:){_TAG_CHARACTERS}+",
    min_length=1,
    max_length=128,
)
TAG_VALUE = Rule(
    "tag value",
    "0-256 letters, numbers, spaces and _ . : / = + - @",
    _TAGGING,
    "the head's store",
    pattern=rf"{_TAG_CHARACTERS}*",
    max_length=256,
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
VOLUME_TYPE = Rule(
    "EBS volume type",
    "standard, io1, io2, gp2, sc1, st1 or gp3",
    f"{EC2_API}API_LaunchTemplateEbsBlockDeviceRequest.html (VolumeType)",
    "gp4",
    values=("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"),
)
GP3_SIZE = Rule(
    "gp3 volume size",
    "1 to 16384 GiB",
    "https://docs.aws.amazon.com/ebs/latest/userguide/ebs-volume-types.html (gp3: 1 GiB - 16 TiB)",
    16385,
    minimum=1,
    maximum=16384,
)
HTTP_ENDPOINT = Rule(
    "instance metadata endpoint",
    "enabled or disabled",
    f"{EC2_API}API_LaunchTemplateInstanceMetadataOptionsRequest.html (HttpEndpoint)",
    "on",
    values=("enabled", "disabled"),
)
HTTP_TOKENS = Rule(
    "instance metadata tokens",
    "optional or required",
    f"{EC2_API}API_LaunchTemplateInstanceMetadataOptionsRequest.html (HttpTokens)",
    "v2",
    values=("optional", "required"),
)
HOP_LIMIT = Rule(
    "instance metadata hop limit",
    "1 to 64",
    f"{EC2_API}API_LaunchTemplateInstanceMetadataOptionsRequest.html (HttpPutResponseHopLimit)",
    65,
    minimum=1,
    maximum=64,
)
INTERFACE_TYPE = Rule(
    "network interface type",
    "interface, efa or efa-only",
    f"{EC2_API}API_LaunchTemplateInstanceNetworkInterfaceSpecificationRequest.html (InterfaceType)",
    "EFA",
    values=("interface", "efa", "efa-only"),
)
MARKET_TYPE = Rule(
    "instance market type",
    "spot, capacity-block or interruptible-capacity-reservation",
    f"{EC2_API}API_LaunchTemplateInstanceMarketOptionsRequest.html (MarketType)",
    "capacity_block",
    values=("spot", "capacity-block", "interruptible-capacity-reservation"),
)
TAGGED_RESOURCE_TYPE = Rule(
    "launch template tag resource type",
    "instance, volume, network-interface or spot-instances-request",
    f"{EC2_API}API_LaunchTemplateTagSpecificationRequest.html (ResourceType)",
    "launch-template",
    values=("instance", "volume", "network-interface", "spot-instances-request"),
)
PLACEMENT_GROUP_NAME = Rule(
    "placement group name",
    "up to 255 ASCII characters",
    f"{EC2_API}API_CreatePlacementGroup.html (GroupName)",
    "gpu-placement-é",
    pattern=r"[\x00-\x7f]*",
    max_length=255,
)
PLACEMENT_STRATEGY = Rule(
    "placement strategy",
    "cluster, spread or partition",
    f"{EC2_API}API_CreatePlacementGroup.html (Strategy)",
    "clustered",
    values=("cluster", "spread", "partition"),
)
CIDR_BLOCK = Rule(
    "VPC or subnet IPv4 block",
    "an IPv4 network from /16 to /28",
    "https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html (the allowed block size is between a /28 "
    "netmask and /16 netmask)",
    "10.0.0.0/12",
    pattern=r"\d{1,3}(\.\d{1,3}){3}/(1[6-9]|2[0-8])",
)
ADDRESS_DOMAIN = Rule(
    "Elastic IP domain",
    "vpc or standard",
    f"{EC2_API}API_AllocateAddress.html (Domain)",
    "VPC",
    values=("vpc", "standard"),
)
VPC_ENDPOINT_TYPE = Rule(
    "VPC endpoint type",
    "Interface, Gateway, GatewayLoadBalancer, Resource or ServiceNetwork",
    f"{EC2_API}API_CreateVpcEndpoint.html (VpcEndpointType)",
    "gateway",
    values=("Interface", "Gateway", "GatewayLoadBalancer", "Resource", "ServiceNetwork"),
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
EKS_CLUSTER_NAME = Rule(
    "EKS cluster name",
    "1-100 letters, digits, - and _, starting with a letter or digit",
    f"{TF}eks/validate.go validClusterName; {EKS_API}API_CreateCluster.html (name)",
    "-ray-llm",
    pattern=r"[0-9A-Za-z][0-9A-Za-z_-]*",
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
RESOLVE_CONFLICTS_ON_CREATE = Rule(
    "EKS add-on conflict resolution on create",
    "NONE or OVERWRITE",
    f"{TF}eks/addon.go resolve_conflicts_on_create",
    "PRESERVE",
    values=("NONE", "OVERWRITE"),
)
RESOLVE_CONFLICTS_ON_UPDATE = Rule(
    "EKS add-on conflict resolution on update",
    "NONE, OVERWRITE or PRESERVE",
    f"{TF}eks/addon.go resolve_conflicts_on_update (types.ResolveConflicts); {EKS_API}API_UpdateAddon.html",
    "KEEP",
    values=("NONE", "OVERWRITE", "PRESERVE"),
)
LOG_TYPE = Rule(
    "EKS control plane log type",
    "api, audit, authenticator, controllerManager or scheduler",
    f"{EKS_API}API_LogSetup.html (types)",
    "controller-manager",
    values=("api", "audit", "authenticator", "controllerManager", "scheduler"),
)
AUTHENTICATION_MODE = Rule(
    "EKS authentication mode",
    "API, API_AND_CONFIG_MAP or CONFIG_MAP",
    f"{EKS_API}API_CreateAccessConfigRequest.html (authenticationMode)",
    "IAM",
    values=("API", "API_AND_CONFIG_MAP", "CONFIG_MAP"),
)
ACCESS_POLICY_ARN = Rule(
    "EKS access policy ARN",
    "arn:<partition>:eks::aws:cluster-access-policy/<name>",
    f"{EKS_API}API_AssociateAccessPolicy.html (policyArn); "
    "https://docs.aws.amazon.com/eks/latest/userguide/access-policy-permissions.html",
    "AmazonEKSClusterAdminPolicy",
    pattern=r"arn:aws(-[a-z]+)*:eks::aws:cluster-access-policy/[A-Za-z]+",
)
ACCESS_SCOPE_TYPE = Rule(
    "EKS access scope type",
    "cluster or namespace",
    f"{EKS_API}API_AccessScope.html (type)",
    "Cluster",
    values=("cluster", "namespace"),
)
ENCRYPTED_RESOURCES = Rule(
    "EKS encryption resources",
    "secrets",
    f"{EKS_API}API_EncryptionConfig.html (resources: the only supported value is secrets)",
    "configmaps",
    values=("secrets",),
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
CAPACITY_TYPE = Rule(
    "EKS node group capacity type",
    "ON_DEMAND, SPOT or CAPACITY_BLOCK",
    f"{EKS_API}API_CreateNodegroup.html (capacityType); {TF}eks/node_group.go capacity_type",
    "on-demand",
    values=("ON_DEMAND", "SPOT", "CAPACITY_BLOCK"),
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
TAINT_EFFECT = Rule(
    "EKS taint effect",
    "NO_SCHEDULE, NO_EXECUTE or PREFER_NO_SCHEDULE",
    f"{EKS_API}API_Taint.html (effect); {TF}eks/node_group.go taint.effect",
    "NoSchedule",
    values=("NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE"),
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
ENGINE = Rule(
    "ElastiCache engine",
    "redis or valkey",
    f"{TF}elasticache/replication_group.go engine: StringInSlice(engineRedis, engineValkey)",
    "memcached",
    values=("redis", "valkey"),
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
SSE_ALGORITHM = Rule(
    "S3 default encryption algorithm",
    "AES256, aws:kms or aws:kms:dsse",
    "https://docs.aws.amazon.com/AmazonS3/latest/API/API_ServerSideEncryptionByDefault.html (SSEAlgorithm)",
    "SSE-S3",
    values=("AES256", "aws:kms", "aws:kms:dsse"),
)

# --- properties the table explains instead of checking ----------------------------------------------------------------
REFERENCE = "the id, name or ARN of a resource the stack declares or looked up, as AWS returns it"
BOOLEAN = "a boolean: the provider schema's type is the whole rule"
CONFIG = "a stack-config value, refused before any resource by its key's rule (infra/settings/table.py)"
CONSTANT = "a fixed value of the program's code (no name, description or user text)"
NO_RULE = "no rule found in the API reference or the provider's validators"

TAGS = {"tags{key}": TAG_KEY, "tags{value}": TAG_VALUE}
_CLUSTER_ADDON = {
    "resolveConflictsOnCreate": RESOLVE_CONFLICTS_ON_CREATE,
    "resolveConflictsOnUpdate": RESOLVE_CONFLICTS_ON_UPDATE,
}

NODE_GROUP: Mapping[str, Rule] = {
    **TAGS,
    "nodeGroupName": NODEGROUP_NAME,
    "amiType": AMI_TYPE,
    "capacityType": CAPACITY_TYPE,
    "taints[].key": TAINT_KEY,
    "taints[].value": TAINT_VALUE,
    "taints[].effect": TAINT_EFFECT,
    "labels{key}": NODE_LABEL,
    "labels{value}": NODE_LABEL,
    "launchTemplate.version": LAUNCH_TEMPLATE_VERSION,
    "scalingConfig.desiredSize": NODE_COUNT,
    "scalingConfig.minSize": NODE_COUNT,
    "scalingConfig.maxSize": NODE_COUNT_MAX,
}

# Type token -> property path -> Rule. A path names a nested property with `.`, a list's items with `[]`, a map's
# keys and values with `{key}` and `{value}` (and `{}.` before a property of a map's values).
RULES: Mapping[str, Mapping[str, Rule]] = {
    "aws:ec2/vpc:Vpc": {**TAGS, "cidrBlock": CIDR_BLOCK},
    "aws:ec2/subnet:Subnet": {**TAGS, "cidrBlock": CIDR_BLOCK},
    "aws:ec2/eip:Eip": {**TAGS, "domain": ADDRESS_DOMAIN},
    "aws:ec2/internetGateway:InternetGateway": TAGS,
    "aws:ec2/natGateway:NatGateway": TAGS,
    "aws:ec2/routeTable:RouteTable": TAGS,
    "aws:ec2/routeTableAssociation:RouteTableAssociation": {},
    "aws:ec2/vpcEndpoint:VpcEndpoint": {**TAGS, "vpcEndpointType": VPC_ENDPOINT_TYPE},
    "aws:ec2/securityGroup:SecurityGroup": {
        **TAGS,
        "name": SECURITY_GROUP_NAME,
        "description": SECURITY_GROUP_DESCRIPTION,
        "ingress[].description": SECURITY_GROUP_RULE_DESCRIPTION,
    },
    "aws:ec2/launchTemplate:LaunchTemplate": {
        **TAGS,
        "name": LAUNCH_TEMPLATE_NAME,
        "description": LAUNCH_TEMPLATE_DESCRIPTION,
        "userData": USER_DATA,
        "blockDeviceMappings[].ebs.volumeType": VOLUME_TYPE,
        "blockDeviceMappings[].ebs.volumeSize": GP3_SIZE,
        "metadataOptions.httpEndpoint": HTTP_ENDPOINT,
        "metadataOptions.httpTokens": HTTP_TOKENS,
        "metadataOptions.httpPutResponseHopLimit": HOP_LIMIT,
        "networkInterfaces[].interfaceType": INTERFACE_TYPE,
        "instanceMarketOptions.marketType": MARKET_TYPE,
        "tagSpecifications[].resourceType": TAGGED_RESOURCE_TYPE,
        "tagSpecifications[].tags{key}": TAG_KEY,
        "tagSpecifications[].tags{value}": TAG_VALUE,
    },
    "aws:ec2/placementGroup:PlacementGroup": {**TAGS, "name": PLACEMENT_GROUP_NAME, "strategy": PLACEMENT_STRATEGY},
    "aws:iam/role:Role": {
        **TAGS,
        "name": IAM_ROLE_NAME,
        "description": IAM_ROLE_DESCRIPTION,
        "assumeRolePolicy": TRUST_POLICY,
    },
    "aws:iam/rolePolicy:RolePolicy": {"name": IAM_ROLE_POLICY_NAME, "policy": INLINE_POLICY},
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": {"policyArn": MANAGED_POLICY_ARN},
    "aws:kms/key:Key": {**TAGS, "description": KMS_DESCRIPTION, "deletionWindowInDays": KMS_DELETION_WINDOW},
    "aws:eks/addon:Addon": {
        **TAGS,
        **_CLUSTER_ADDON,
        "addonName": ADDON_NAME,
        "addonVersion": ADDON_VERSION,
        "clusterName": EKS_CLUSTER_NAME,
    },
    "aws:elasticache/subnetGroup:SubnetGroup": {**TAGS, "name": CACHE_SUBNET_GROUP_NAME},
    "aws:elasticache/replicationGroup:ReplicationGroup": {
        **TAGS,
        "replicationGroupId": REPLICATION_GROUP_ID,
        "description": REPLICATION_GROUP_DESCRIPTION,
        "authToken": AUTH_TOKEN,
        "engine": ENGINE,
        "numCacheClusters": CACHE_CLUSTERS,
        "snapshotRetentionLimit": SNAPSHOT_RETENTION,
    },
    "aws:s3/bucket:Bucket": {**TAGS, "bucket": BUCKET_NAME},
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": {},
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": {
        "rules[].applyServerSideEncryptionByDefault.sseAlgorithm": SSE_ALGORITHM
    },
    # pulumi-eks's components: the inputs the program passes, which become the aws:eks cluster and node group.
    "eks:index:Cluster": {
        **TAGS,
        "name": EKS_CLUSTER_NAME,
        "authenticationMode": AUTHENTICATION_MODE,
        "enabledClusterLogTypes[]": LOG_TYPE,
        "accessEntries{}.accessPolicies{}.policyArn": ACCESS_POLICY_ARN,
        "accessEntries{}.accessPolicies{}.accessScope.type": ACCESS_SCOPE_TYPE,
        "kubeProxyAddonOptions.version": ADDON_VERSION,
        "vpcCniOptions.addonVersion": ADDON_VERSION,
        **{
            f"{addon}.{key}": rule
            for addon in ("kubeProxyAddonOptions", "vpcCniOptions", "corednsAddonOptions")
            for key, rule in _CLUSTER_ADDON.items()
        },
    },
    "eks:index:ManagedNodeGroup": NODE_GROUP,
    # pulumi-eks's children (tests/test_aws_input_rules.py expands the components with pulumi-eks's own code).
    "aws:eks/cluster:Cluster": {
        **TAGS,
        "name": EKS_CLUSTER_NAME,
        "accessConfig.authenticationMode": AUTHENTICATION_MODE,
        "enabledClusterLogTypes[]": LOG_TYPE,
        "encryptionConfig.resources[]": ENCRYPTED_RESOURCES,
    },
    "aws:eks/nodeGroup:NodeGroup": {**NODE_GROUP, "clusterName": EKS_CLUSTER_NAME},
    "aws:eks/accessEntry:AccessEntry": {"clusterName": EKS_CLUSTER_NAME},
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": {
        "clusterName": EKS_CLUSTER_NAME,
        "policyArn": ACCESS_POLICY_ARN,
        "accessScope.type": ACCESS_SCOPE_TYPE,
    },
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": {},
}

_NODE_GROUP_EXPLAINED = {
    "launchTemplate.id": REFERENCE,
    "subnetIds[]": REFERENCE,
    "instanceTypes[]": CONFIG,
    "version": CONFIG,
}
# Type token -> property path -> why the table checks no rule there (a path explains everything below it too).
EXPLAINED: Mapping[str, Mapping[str, str]] = {
    "aws:ec2/vpc:Vpc": {"enableDnsHostnames": BOOLEAN, "enableDnsSupport": BOOLEAN},
    "aws:ec2/subnet:Subnet": {"vpcId": REFERENCE, "availabilityZone": REFERENCE, "mapPublicIpOnLaunch": BOOLEAN},
    "aws:ec2/eip:Eip": {},
    "aws:ec2/internetGateway:InternetGateway": {"vpcId": REFERENCE},
    "aws:ec2/natGateway:NatGateway": {"allocationId": REFERENCE, "subnetId": REFERENCE},
    "aws:ec2/routeTable:RouteTable": {
        "vpcId": REFERENCE,
        "routes[].cidrBlock": CONSTANT,
        "routes[].gatewayId": REFERENCE,
        "routes[].natGatewayId": REFERENCE,
    },
    "aws:ec2/routeTableAssociation:RouteTableAssociation": {"routeTableId": REFERENCE, "subnetId": REFERENCE},
    "aws:ec2/vpcEndpoint:VpcEndpoint": {"vpcId": REFERENCE, "routeTableIds[]": REFERENCE, "serviceName": CONSTANT},
    "aws:ec2/securityGroup:SecurityGroup": {
        "vpcId": REFERENCE,
        **{
            f"{direction}[].{key}": reason
            for direction in ("ingress", "egress")
            for key, reason in (
                ("protocol", CONSTANT),
                ("fromPort", CONSTANT),
                ("toPort", CONSTANT),
                ("self", BOOLEAN),
            )
        },
        "ingress[].securityGroups[]": REFERENCE,
    },
    "aws:ec2/launchTemplate:LaunchTemplate": {
        "blockDeviceMappings[].deviceName": CONSTANT,
        "blockDeviceMappings[].ebs.deleteOnTermination": BOOLEAN,
        "blockDeviceMappings[].ebs.encrypted": BOOLEAN,
        "blockDeviceMappings[].ebs.iops": CONSTANT,
        "blockDeviceMappings[].ebs.throughput": CONSTANT,
        "capacityReservationSpecification.capacityReservationTarget.capacityReservationId": CONFIG,
        "instanceType": CONFIG,
        "networkInterfaces[].associatePublicIpAddress": BOOLEAN,
        "networkInterfaces[].deleteOnTermination": BOOLEAN,
        "networkInterfaces[].deviceIndex": CONSTANT,
        "networkInterfaces[].networkCardIndex": CONSTANT,
        "networkInterfaces[].securityGroups[]": REFERENCE,
        "placement.groupName": REFERENCE,
        "vpcSecurityGroupIds[]": REFERENCE,
    },
    "aws:ec2/placementGroup:PlacementGroup": {},
    "aws:iam/role:Role": {},
    "aws:iam/rolePolicy:RolePolicy": {"role": REFERENCE},
    # pulumi-eks passes the role resource itself: everything below `role` is that reference.
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": {"role": REFERENCE},
    "aws:kms/key:Key": {"enableKeyRotation": BOOLEAN},
    "aws:eks/addon:Addon": {"configurationValues": CONSTANT, "preserve": BOOLEAN},
    "aws:elasticache/subnetGroup:SubnetGroup": {"description": NO_RULE, "subnetIds[]": REFERENCE},
    "aws:elasticache/replicationGroup:ReplicationGroup": {
        "applyImmediately": BOOLEAN,
        "atRestEncryptionEnabled": BOOLEAN,
        "automaticFailoverEnabled": BOOLEAN,
        "multiAzEnabled": BOOLEAN,
        "transitEncryptionEnabled": BOOLEAN,
        "engineVersion": CONSTANT,
        "port": CONSTANT,
        "nodeType": CONFIG,
        "securityGroupIds[]": REFERENCE,
    },
    "aws:s3/bucket:Bucket": {"forceDestroy": BOOLEAN},
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": {
        "bucket": REFERENCE,
        "blockPublicAcls": BOOLEAN,
        "blockPublicPolicy": BOOLEAN,
        "ignorePublicAcls": BOOLEAN,
        "restrictPublicBuckets": BOOLEAN,
    },
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": {"bucket": REFERENCE},
    "eks:index:Cluster": {
        "accessEntries{key}": CONSTANT,
        "accessEntries{}.accessPolicies{key}": CONSTANT,
        "accessEntries{}.principalArn": CONFIG,
        "publicAccessCidrs[]": CONFIG,
        "version": CONFIG,
        "encryptionConfigKeyArn": REFERENCE,
        "vpcId": REFERENCE,
        "privateSubnetIds[]": REFERENCE,
        "publicSubnetIds[]": REFERENCE,
        "corednsAddonOptions.enabled": BOOLEAN,
        "kubeProxyAddonOptions.enabled": BOOLEAN,
        "vpcCniOptions.enableNetworkPolicy": BOOLEAN,
        "createOidcProvider": BOOLEAN,
        "deletionProtection": BOOLEAN,
        "endpointPrivateAccess": BOOLEAN,
        "endpointPublicAccess": BOOLEAN,
        "nodeAssociatePublicIpAddress": BOOLEAN,
        "skipDefaultNodeGroup": BOOLEAN,
        "skipDefaultSecurityGroups": BOOLEAN,
    },
    "eks:index:ManagedNodeGroup": {
        "cluster": REFERENCE,
        "nodeRole": REFERENCE,
        "ignoreScalingChanges": BOOLEAN,
        **_NODE_GROUP_EXPLAINED,
    },
    "aws:eks/cluster:Cluster": {
        "roleArn": REFERENCE,
        "encryptionConfig.provider.keyArn": REFERENCE,
        "vpcConfig.subnetIds[]": REFERENCE,
        "vpcConfig.publicAccessCidrs[]": CONFIG,
        "version": CONFIG,
        "accessConfig.bootstrapClusterCreatorAdminPermissions": BOOLEAN,
        "bootstrapSelfManagedAddons": BOOLEAN,
        "deletionProtection": BOOLEAN,
        "vpcConfig.endpointPrivateAccess": BOOLEAN,
        "vpcConfig.endpointPublicAccess": BOOLEAN,
    },
    "aws:eks/nodeGroup:NodeGroup": {"nodeRoleArn": REFERENCE, **_NODE_GROUP_EXPLAINED},
    "aws:eks/accessEntry:AccessEntry": {"principalArn": CONFIG},
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": {"principalArn": CONFIG},
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": {
        "url": REFERENCE,
        "clientIdLists[]": CONSTANT,
        "thumbprintLists[]": CONSTANT,
    },
}

# pulumi-aws fills these name properties in Check when the program leaves them out: the resource's logical name, a
# "-" and 7 random characters (pulumi/pulumi-terraform-bridge pkg/tfbridge AutoNameTransform: Separator "-",
# Randlen 7; pulumi/pulumi-aws provider/resources.go), the replication group's id lowercased.
AUTONAMED: Mapping[str, str] = {
    "aws:ec2/securityGroup:SecurityGroup": "name",
    "aws:ec2/launchTemplate:LaunchTemplate": "name",
    "aws:ec2/placementGroup:PlacementGroup": "name",
    "aws:iam/role:Role": "name",
    "aws:iam/rolePolicy:RolePolicy": "name",
    "aws:elasticache/subnetGroup:SubnetGroup": "name",
    "aws:elasticache/replicationGroup:ReplicationGroup": "replicationGroupId",
}
AUTONAME_SUFFIX = "-" + "0a1b2c3"


def autonamed(type_: str, logical_name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs as pulumi-aws's Check completes them: an autonamed property the program left out gets its name."""
    prop = AUTONAMED.get(type_)
    if prop is None or prop in inputs:
        return dict(inputs)
    name = logical_name + AUTONAME_SUFFIX
    return {**inputs, prop: name.lower() if prop == "replicationGroupId" else name}


# Map-valued properties: their keys are data (tag keys, label keys, chosen entry names), not property names.
MAP_PROPERTIES = frozenset({"tags", "labels", "accessEntries", "accessPolicies"})


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every scalar inside `value` with its property path (see RULES)."""
    if isinstance(value, Mapping):
        is_map = path.rsplit(".", 1)[-1].removesuffix("[]") in MAP_PROPERTIES
        for key, item in value.items():
            if is_map:
                yield f"{path}{{key}}", key
                yield from leaves(item, f"{path}{{value}}" if not isinstance(item, Mapping | list) else f"{path}{{}}")
            else:
                yield from leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for item in value:
            yield from leaves(item, f"{path}[]")
    elif value is not None:
        yield path, value


@dataclass(frozen=True)
class Violation:
    path: str
    value: Any
    rule: Rule
    reason: str

    def __str__(self) -> str:
        shown = self.value if len(str(self.value)) <= 120 else f"{str(self.value)[:117]}..."
        return (
            f"{self.path}={shown!r} breaks the {self.rule.name} rule ({self.reason}): allowed is {self.rule.allowed} "
            f"[{self.rule.source}]"
        )


def violations(type_: str, inputs: Mapping[str, Any]) -> Iterator[Violation]:
    """Each input of a resource of type `type_` that its rule refuses (paths the table does not rule are skipped)."""
    rules = RULES.get(type_, {})
    for path, value in leaves(inputs):
        rule = rules.get(path)
        reason = rule.refusal(value) if rule else None
        if rule and reason:
            yield Violation(path, value, rule, reason)


def unexplained(type_: str, inputs: Mapping[str, Any]) -> Iterator[str]:
    """The property paths of these inputs that the table neither rules nor explains."""
    known = {**RULES.get(type_, {}), **EXPLAINED.get(type_, {})}
    for path in sorted({path for path, _ in leaves(inputs)}):
        ancestors = [path[:index] for index, character in enumerate(path) if character == "."]
        if path not in known and not any(ancestor in known for ancestor in ancestors):
            yield path
