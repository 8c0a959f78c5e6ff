"""Where the stack can run: each region's image registries, and the partition its ARNs live in.

A region missing from either AWS-published registry table is refused before any resource; only the commercial
partition is supported (docs/configuration.md#regions-and-partitions has the sources)."""

from __future__ import annotations

from dataclasses import dataclass

SUPPORTED_PARTITION = "aws"
SUPPORTED_DNS_SUFFIX = "amazonaws.com"

# EKS's add-on registry account per region (aws partition rows of awsdocs/amazon-eks-user-guide
# latest/ug/workloads/add-ons-images.adoc). The page prints ap-east-2's host as ...ecr.ap-east-1...; the account is
# ap-east-2's own, so its host is built with ap-east-2 like every other row.
EKS_ADDON_IMAGE_ACCOUNTS = {
    "af-south-1": "877085696533",
    "ap-east-1": "800184023465",
    "ap-east-2": "533267051163",
    "ap-northeast-1": "602401143452",
    "ap-northeast-2": "602401143452",
    "ap-northeast-3": "602401143452",
    "ap-south-1": "602401143452",
    "ap-south-2": "900889452093",
    "ap-southeast-1": "602401143452",
    "ap-southeast-2": "602401143452",
    "ap-southeast-3": "296578399912",
    "ap-southeast-4": "491585149902",
    "ap-southeast-6": "333609536671",
    "ap-southeast-7": "121268973566",
    "ca-central-1": "602401143452",
    "ca-west-1": "761377655185",
    "eu-central-1": "602401143452",
    "eu-central-2": "900612956339",
    "eu-north-1": "602401143452",
    "eu-south-1": "590381155156",
    "eu-south-2": "455263428931",
    "eu-west-1": "602401143452",
    "eu-west-2": "602401143452",
    "eu-west-3": "602401143452",
    "il-central-1": "066635153087",
    "me-central-1": "759879836304",
    "me-south-1": "558608220178",
    "mx-central-1": "730335286997",
    "sa-east-1": "602401143452",
    "us-east-1": "602401143452",
    "us-east-2": "602401143452",
    "us-west-1": "602401143452",
    "us-west-2": "602401143452",
}

# Deep Learning Containers account per region (region_availability.md, "Deep Learning Containers").
DLC_IMAGE_ACCOUNTS = {
    "af-south-1": "626614931356",
    "ap-east-1": "871362719292",
    "ap-east-2": "975050140332",
    "ap-northeast-1": "763104351884",
    "ap-northeast-2": "763104351884",
    "ap-northeast-3": "364406365360",
    "ap-south-1": "763104351884",
    "ap-south-2": "772153158452",
    "ap-southeast-1": "763104351884",
    "ap-southeast-2": "763104351884",
    "ap-southeast-3": "907027046896",
    "ap-southeast-4": "457447274322",
    "ap-southeast-5": "550225433462",
    "ap-southeast-6": "633930458069",
    "ap-southeast-7": "590183813437",
    "ca-central-1": "763104351884",
    "ca-west-1": "204538143572",
    "eu-central-1": "763104351884",
    "eu-central-2": "380420809688",
    "eu-north-1": "763104351884",
    "eu-south-1": "692866216735",
    "eu-south-2": "503227376785",
    "eu-west-1": "763104351884",
    "eu-west-2": "763104351884",
    "eu-west-3": "763104351884",
    "il-central-1": "780543022126",
    "me-central-1": "914824155844",
    "me-south-1": "217643126080",
    "me-west-1": "124382933778",
    "mx-central-1": "637423239942",
    "sa-east-1": "763104351884",
    "us-east-1": "763104351884",
    "us-east-2": "763104351884",
    "us-west-1": "763104351884",
    "us-west-2": "763104351884",
}

SUPPORTED_REGIONS = tuple(sorted(EKS_ADDON_IMAGE_ACCOUNTS.keys() & DLC_IMAGE_ACCOUNTS.keys()))

# Region-name prefixes of the other partitions: aws-cn and aws-us-gov (partitions listed in
# https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html), the ISO partitions, and the
# European Sovereign Cloud (its EKS registry is under amazonaws.eu in add-ons-images.adoc).
OTHER_PARTITIONS = {
    "cn-": "aws-cn (China)",
    "us-gov-": "aws-us-gov (GovCloud)",
    "us-iso": "an ISO partition",
    "eu-isoe-": "an ISO partition",
    "eusc-": "aws-eusc (European Sovereign Cloud)",
}


def region_partition(region: str) -> str:
    """The partition a region name belongs to, by its prefix: SUPPORTED_PARTITION or how OTHER_PARTITIONS names it."""
    return next((name for prefix, name in OTHER_PARTITIONS.items() if region.startswith(prefix)), SUPPORTED_PARTITION)


def region_problem(region: str) -> str | None:
    """Why `aws:region` cannot be deployed to, naming the supported regions; None when it can."""
    if region in SUPPORTED_REGIONS:
        return None
    allowed = f"allowed is an AWS region name this stack supports, one of {', '.join(SUPPORTED_REGIONS)}"
    partition = region_partition(region)
    if partition != SUPPORTED_PARTITION:
        return (
            f"aws:region={region!r} is in partition {partition}, which this stack does not support "
            f"(its ARNs, service principals and image registries differ); {allowed}"
        )
    if region in EKS_ADDON_IMAGE_ACCOUNTS or region in DLC_IMAGE_ACCOUNTS:
        missing = "Deep Learning Containers" if region in EKS_ADDON_IMAGE_ACCOUNTS else "EKS add-on (EFA device plugin)"
        return f"aws:region={region!r} has no published {missing} image registry; {allowed}"
    return f"aws:region={region!r} is invalid: {allowed}"


def ecr_registry(account: str, region: str) -> str:
    return f"{account}.dkr.ecr.{region}.{SUPPORTED_DNS_SUFFIX}"


def efa_plugin_repository(region: str) -> str:
    """The EFA device plugin image in the region's own EKS registry (no cross-region pull)."""
    return f"{ecr_registry(EKS_ADDON_IMAGE_ACCOUNTS[region], region)}/eks/aws-efa-k8s-device-plugin"


@dataclass(frozen=True)
class Partition:
    """The AWS partition the stack deploys into, as `aws.get_partition` reports it."""

    name: str
    dns_suffix: str

    def managed_policy_arn(self, policy: str) -> str:
        return f"arn:{self.name}:iam::aws:policy/{policy}"

    def access_policy_arn(self, policy: str) -> str:
        return f"arn:{self.name}:eks::aws:cluster-access-policy/{policy}"

    def service_principal(self, service: str) -> str:
        return f"{service}.{self.dns_suffix}"


def partition_problems(region: str, admin_principal_arns: tuple[str, ...], partition: Partition) -> list[str]:
    """What does not fit the partition the provider really deploys into."""
    problems = []
    if (partition.name, partition.dns_suffix) != (SUPPORTED_PARTITION, SUPPORTED_DNS_SUFFIX):
        problems.append(
            f"aws:region={region!r} resolves to partition {partition.name!r} (DNS suffix "
            f"{partition.dns_suffix!r}); this stack supports partition {SUPPORTED_PARTITION!r} only"
        )
    for index, arn in enumerate(admin_principal_arns):
        arn_partition = arn.split(":")[1]
        if arn_partition != partition.name:
            problems.append(
                f"adminPrincipalArns[{index}]={arn!r} is invalid: it is in partition {arn_partition!r}, "
                f"the cluster in partition {partition.name!r}; allowed is an arn:{partition.name}:iam:: ARN"
            )
    return problems


# The Ray inside the default image (`dlcImage` empty); the GPU proof ran it (lab/records/gpu-end-to-end.md).
DEFAULT_IMAGE_RAY_VERSION = "2.58.0"


def default_dlc_image(region: str) -> str:
    """The Ray Serve LLM Deep Learning Container in the region's own DLC registry."""
    return f"{ecr_registry(DLC_IMAGE_ACCOUNTS[region], region)}/ray:serve-llm-cuda-v1.0"
