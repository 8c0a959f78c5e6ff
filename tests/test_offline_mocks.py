"""The offline lookups answer in the shape the real provider does, so a misnamed field fails here.

Every invoke the program makes is listed once (INVOKES); each mocked answer is compared, key by key
and level by level, with the pulumi-aws Python SDK's result type for that invoke: the `@pulumi.getter`
names of its properties are the camelCase fields the provider returns, and a property typed without
`Optional` is one the provider always fills.
"""

from __future__ import annotations

import importlib
import pickle
import re
import typing
from types import SimpleNamespace

import pytest

from tools.offline import run_stack
from tools.offline_aws import AwsMocks
from tools.project import PROJECT_DIR

# token -> (package, result class) of pulumi-aws 7.51.1, with the arguments the program passes. The
# result classes are read from the package: importing a function's own module (pulumi_aws.ec2.get_x)
# rebinds the package attribute `get_x` to that module, and every later run of the program then
# fails with "'module' object is not callable".
INVOKES = {
    "aws:index/getPartition:getPartition": ("pulumi_aws", "GetPartitionResult", {}),
    "aws:index/getCallerIdentity:getCallerIdentity": ("pulumi_aws", "GetCallerIdentityResult", {}),
    "aws:eks/getClusters:getClusters": ("pulumi_aws.eks", "GetClustersResult", {}),
    "aws:index/getAvailabilityZones:getAvailabilityZones": (
        "pulumi_aws",
        "GetAvailabilityZonesResult",
        {"state": "available", "filters": [{"name": "zone-type", "values": ["availability-zone"]}]},
    ),
    "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings": (
        "pulumi_aws.ec2",
        "GetInstanceTypeOfferingsResult",
        {"locationType": "availability-zone", "filters": [{"name": "instance-type", "values": ["g6.8xlarge"]}]},
    ),
    "aws:ec2/getInstanceType:getInstanceType": (
        "pulumi_aws.ec2",
        "GetInstanceTypeResult",
        {"instanceType": "p5.48xlarge"},
    ),
    "aws:eks/getClusterVersions:getClusterVersions": (
        "pulumi_aws.eks",
        "GetClusterVersionsResult",
        {"clusterType": "eks"},
    ),
    "aws:eks/getAddonVersion:getAddonVersion": (
        "pulumi_aws.eks",
        "GetAddonVersionResult",
        {"addonName": "kube-proxy", "kubernetesVersion": "1.35"},
    ),
    "aws:s3/getObject:getObject": (
        "pulumi_aws.s3",
        "GetObjectResult",
        {"bucket": "example-models", "key": "qwen3.5-9b/config.json"},
    ),
    "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation": (
        "pulumi_aws.ec2",
        "GetCapacityBlockReservationResult",
        {"id": "cr-02168da1478b509e0"},
    ),
    "aws:servicequotas/getServiceQuota:getServiceQuota": (
        "pulumi_aws.servicequotas",
        "GetServiceQuotaResult",
        {"serviceCode": "ec2", "quotaCode": "L-DB2E81BA"},
    ),
}
NESTED_TYPE = re.compile(r"outputs\.(\w+)")


def fields(result_type: type) -> dict[str, tuple[bool, str]]:
    """camelCase field -> (always returned, annotation) of a pulumi-aws result type."""
    found = {}
    for member in vars(result_type).values():
        if isinstance(member, property) and hasattr(member.fget, "_pulumi_name"):
            annotation = member.fget.__annotations__["return"]
            text = annotation if isinstance(annotation, str) else repr(annotation)
            required = typing.get_origin(annotation) is not typing.Union and not text.startswith("Optional")
            found[member.fget._pulumi_name] = (required, text)
    return found


def shape_problems(value: dict, result_type: type, path: str) -> list[str]:
    module = importlib.import_module(result_type.__module__.rsplit(".", 1)[0] + ".outputs")
    declared = fields(result_type)
    problems = [f"{path}.{key} is not a field of {result_type.__name__}" for key in value if key not in declared]
    problems += [
        f"{path}.{key} is missing: {result_type.__name__} always has it"
        for key, (required, _) in declared.items()
        if required and key not in value
    ]
    for key, (_, annotation) in declared.items():
        nested = NESTED_TYPE.search(annotation)
        if key not in value or not nested:
            continue
        nested_type = getattr(module, nested.group(1))
        items = value[key] if isinstance(value[key], list) else [value[key]]
        for index, item in enumerate(items):
            problems += shape_problems(item, nested_type, f"{path}.{key}[{index}]")
    return problems


def answer(token: str, request: dict) -> dict:
    return AwsMocks("sa-east-1", None).call(SimpleNamespace(token=token, args=request, provider=None))


@pytest.mark.parametrize("token", sorted(INVOKES))
def test_mocked_answer_has_the_fields_of_pulumi_aws_result_type(token):
    """pulumi-aws's generated `Get...Result` classes (sdk/python/pulumi_aws, v7.51.1) are built from
    the provider schema of each invoke, so their getter names and nesting are the provider's output."""
    module, class_name, request = INVOKES[token]
    result_type = getattr(importlib.import_module(module), class_name)
    assert shape_problems(answer(token, request), result_type, token) == []


def test_the_shape_check_catches_a_misnamed_field():
    module, class_name, request = INVOKES["aws:servicequotas/getServiceQuota:getServiceQuota"]
    wrong = answer("aws:servicequotas/getServiceQuota:getServiceQuota", request)
    dimension = wrong["usageMetrics"][0]["metricDimensions"][0]
    dimension["Resource"] = dimension.pop("resource")
    problems = shape_problems(wrong, getattr(importlib.import_module(module), class_name), "quota")
    nested = "quota.usageMetrics[0].metricDimensions[0]"
    assert f"{nested}.Resource is not a field of GetServiceQuotaUsageMetricMetricDimensionResult" in problems
    assert f"{nested}.resource is missing: GetServiceQuotaUsageMetricMetricDimensionResult always has it" in problems


def test_every_lookup_the_program_makes_is_mocked_and_documented():
    """The invoke functions the program calls, found in its source, are exactly INVOKES; each is listed
    in docs/deploy-time-lookups.md with the IAM action it needs."""
    sources = "\n".join(path.read_text() for path in (PROJECT_DIR / "infra").rglob("*.py"))
    called = set(re.findall(r"\baws\.(?:(\w+)\.)?get_(\w+?)(?:_output)?\(", sources))
    tokens = {token.split(":")[-1] for token in INVOKES}
    assert {name for _, name in called} == {re.sub(r"(?<!^)([A-Z])", r"_\1", t[3:]).lower() for t in tokens}
    lookups_doc = (PROJECT_DIR / "docs" / "deploy-time-lookups.md").read_text()
    assert all(f"`{token}`" in lookups_doc for token in INVOKES)


def test_a_region_wide_offering_answers_in_the_same_shape():
    """`location_type="region"` (systemNodeType) gets DescribeInstanceTypeOfferings' region-level answer."""
    module, class_name, request = INVOKES["aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings"]
    region_request = {
        **request,
        "locationType": "region",
        "filters": [{"name": "instance-type", "values": ["m7i.xlarge"]}],
    }
    token = "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings"
    offered = answer(token, region_request)
    assert shape_problems(offered, getattr(importlib.import_module(module), class_name), token) == []
    assert (offered["locations"], offered["locationTypes"]) == (["sa-east-1"], ["region"])


def test_an_unknown_lookup_fails_loudly():
    with pytest.raises(NotImplementedError, match="aws:ec2/getVpc:getVpc"):
        answer("aws:ec2/getVpc:getVpc", {})


# The ARN shapes AWS documents (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-arns:
# IAM is global, so its ARNs carry no region, and name the resource type: arn:aws:iam::<account>:role/<path><name>; a
# role name is up to 64 of letters, digits and +=,.@_-, https://docs.aws.amazon.com/IAM/latest/APIReference/
# API_CreateRole.html), an S3 bucket's neither region nor account (https://docs.aws.amazon.com/AmazonS3/latest/
# userguide/s3-arn-format.html), a KMS key's its id, a UUID (https://docs.aws.amazon.com/kms/latest/developerguide/
# concepts.html#key-id-key-ARN).
ARN_SHAPES = {
    "aws:iam/role:Role": r"arn:aws:iam::\d{12}:role/([\w+=,.@-]+/)*[\w+=,.@-]{1,64}",
    "aws:s3/bucket:Bucket": r"arn:aws:s3:::[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]",
    "aws:kms/key:Key": r"arn:aws:kms:[a-z]{2}-[a-z]+-\d:\d{12}:key/[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}",
    "aws:elasticache/replicationGroup:ReplicationGroup": (
        r"arn:aws:elasticache:[a-z]{2}-[a-z]+-\d:\d{12}:replicationgroup:[a-z][a-z0-9-]*"
    ),
}


@pytest.mark.parametrize("type_", sorted(ARN_SHAPES))
def test_a_resources_arn_is_in_the_shape_aws_gives(type_):
    """The program passes these ARNs on (an IRSA annotation, a policy's resource, the cluster's encryption key):
    an offline run must not hand a GitOps user a role ARN with a region, which IAM never returns."""
    mocks = AwsMocks("sa-east-1", None)
    inputs = {"bucket": "llm-models-1523d5a8-123456789012-sa-east-1"} if type_ == "aws:s3/bucket:Bucket" else {}
    args = SimpleNamespace(typ=type_, name="model-cache-mirror", inputs=inputs, provider="", id="")
    _, state = mocks.new_resource(args)
    assert re.fullmatch(ARN_SHAPES[type_], state["arn"]), state["arn"]


@pytest.mark.parametrize(
    ("region", "zone_id"), [("us-east-1", "use1-az1"), ("ap-southeast-2", "apse2-az1"), ("ap-northeast-1", "apne1-az1")]
)
def test_the_offline_zone_ids_shorten_the_region_as_ec2_does(region, zone_id):
    """AZ ids keep a two-part direction's two letters (apse2-az1, apne1-az1 in the tables of
    https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-availability-zones.html)."""
    request = INVOKES["aws:index/getAvailabilityZones:getAvailabilityZones"][2]
    zones = AwsMocks(region, None).call(
        SimpleNamespace(token="aws:index/getAvailabilityZones:getAvailabilityZones", args=request, provider=None)
    )
    assert zones["zoneIds"][0] == zone_id


def test_the_offline_elasticache_endpoint_has_the_shape_of_a_tls_groups_primary():
    """With in-transit encryption the primary endpoint is `master.<group id>.<6 characters>.<region code>.cache.
    amazonaws.com` (the guide's example: "connect = master.ssltest.wif01h.use1.cache.amazonaws.com:6379",
    https://docs.aws.amazon.com/AmazonElastiCache/latest/red-ug/in-transit-encryption.html#connect-tls)."""
    mocks = AwsMocks("sa-east-1", None)
    args = SimpleNamespace(
        typ="aws:elasticache/replicationGroup:ReplicationGroup",
        name="gcs-store-valkey",
        inputs={"numCacheClusters": 2, "transitEncryptionEnabled": True},
        provider="",
        id="",
    )
    _, state = mocks.new_resource(args)
    assert re.fullmatch(
        r"master\.[a-z][a-z0-9-]*\.[a-z0-9]{6}\.sae1\.cache\.amazonaws\.com", state["primaryEndpointAddress"]
    )


def test_an_offline_run_undoes_pulumis_pickler_patch():
    """Pulumi's serialize_provider (pulumi/dynamic/dynamic.py) leaves pickle._Pickler._batch_setitems patched, one
    wrapper deeper per dynamic resource; the dev stack serializes two (ServeRollout, KubeRayCrds) each run, and a full
    test session once reached Python's recursion limit that way."""
    before = pickle._Pickler._batch_setitems  # type: ignore[attr-defined]
    run_stack({})
    assert pickle._Pickler._batch_setitems is before  # type: ignore[attr-defined]
