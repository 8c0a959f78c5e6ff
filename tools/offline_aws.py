"""The AWS an offline run answers from: Pulumi mocks (AwsMocks) for every lookup the program makes, in the shape the
real API returns, and the outputs the program reads of what it declares. A refusal or quota that rests on the tables
here is noted (AwsMocks.offline_notes), so tools.render can say the live lookup of `pulumi preview` may answer
otherwise."""

from __future__ import annotations

import hashlib
import json
import string
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import pulumi
from pulumi.runtime import mocks

from infra.preflight.quota import ON_DEMAND_VCPU_QUOTAS
from infra.serving import model_source
from tools.instance_type_facts import INSTANCE_TYPES, describe_instance_type
from tools.offline_models import S3_OBJECTS, hub_fetch

ACCOUNT_ID = "123456789012"
# The letters the offline ElastiCache puts in its endpoints and generated group ids (AWS draws its own).
ELASTICACHE_ENDPOINT_LETTERS = "xk4jqz"
ELASTICACHE_ID_SUFFIX = "a1b2c3d"
# Values only the offline answers hold, which `pulumi up` replaces with the real ones: (a part that marks such a value,
# what it stands for). tools.render names them in every file that holds one.
OFFLINE_PLACEHOLDERS = (
    (ACCOUNT_ID, "the offline AWS account id; yours at `pulumi up`"),
    (
        f".{ELASTICACHE_ENDPOINT_LETTERS}.",
        "the offline ElastiCache endpoint; the replication group's own at `pulumi up`",
    ),
)
# Who deploys offline: an assumed role, as a CI job or an SSO user is (STS GetCallerIdentity's Arn).
DEPLOYER_ARN = f"arn:aws:sts::{ACCOUNT_ID}:assumed-role/ray-llm-eks-deployer/offline"
# An account whose GPU quotas were raised: enough for two p5.48xlarge (2 x 192 vCPUs) and more.
DEFAULT_VCPU_QUOTA = 768.0


class StoredObject(NamedTuple):
    """A Kubernetes object as the API server keeps it across `pulumi up`s: what replacing it would change (its
    replacement identity), its uid, its generation, and the spec that generation stands for."""

    identity: str
    uid: str
    generation: int
    spec: str


@dataclass(frozen=True)
class OfflineNote:
    """A lookup answered from a table here: what it was about (an instance type, a repository, an object, a quota
    code) and what the user is told."""

    subject: str
    text: str


# EKS's Kubernetes versions on the day this was written (2026-11-30), from the EKS release calendar
# (https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html, as tabulated by
# https://endoflife.date/amazon-eks): version, status, release date, end of standard support, end of
# extended support. 1.31 left extended support on 2026-11-26.
EKS_CLUSTER_VERSIONS = (
    ("1.35", "STANDARD_SUPPORT", "2026-01-28", "2027-03-27", "2028-03-27"),
    ("1.34", "STANDARD_SUPPORT", "2025-10-06", "2026-12-02", "2027-12-02"),
    ("1.33", "EXTENDED_SUPPORT", "2025-05-28", "2026-07-29", "2027-07-29"),
    ("1.32", "EXTENDED_SUPPORT", "2025-01-25", "2026-03-23", "2027-03-23"),
)
# The default builds an offline region publishes for the add-ons whose line does not follow Kubernetes';
# kube-proxy's does (v<kubernetesVersion>.x-eksbuild.N).
DEFAULT_ADDON_BUILDS = {"vpc-cni": "v1.21.1-eksbuild.1", "coredns": "v1.13.2-eksbuild.1"}
# Instance types an offline region offers: exactly those DescribeInstanceTypes is answered for, so that what the stack
# checks on EC2's description of a type (the system nodes' room and architecture, the GPU nodes' layout) is never
# skipped for a type the offerings table lets through; any other type is refused, with a note that a table decided.
OFFERED_INSTANCE_TYPES = frozenset(INSTANCE_TYPES)


# Capacity Blocks the offline account holds (DescribeCapacityReservations): id -> (instance type, the region's AZ
# letter, instances, state). One active block of two p5.48xlarge, a type Capacity Blocks sell
# (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html); any other id is EC2's NotFound.
CAPACITY_BLOCKS = {"cr-02168da1478b509e0": ("p5.48xlarge", "a", 2, "active")}
# pulumi-aws's getObject returns the body only for these content types (pulumi_aws/s3/get_object.py).
S3_TEXT_TYPES = ("text/", "application/json")


# What each offline note ends with: the live lookup that decides at `pulumi preview` and `pulumi up`.
ASKS_EC2 = "; `pulumi preview` asks EC2"
ASKS_THE_HUB = "; `pulumi preview` asks huggingface.co"
# A lookup's answer: its result's fields, or none and the provider's failures ((property, reason) pairs).
LookupAnswer = dict[str, Any] | tuple[dict[str, Any], list[tuple[str, str]]]


class AwsMocks(pulumi.runtime.Mocks):
    """Answers AWS lookups like a real region and gives resources the outputs the program reads."""

    def __init__(
        self,
        region: str,
        gpu_offering_azs: list[str] | None = None,
        vcpu_quota: float = DEFAULT_VCPU_QUOTA,
        caller_arn: str = DEPLOYER_ARN,
        existing_clusters: tuple[str, ...] = (),
        existing_uids: Mapping[str, StoredObject] | None = None,
    ) -> None:
        self.region = region
        self.azs = [f"{region}{letter}" for letter in "abc"]
        self.gpu_offering_azs = self.azs[:2] if gpu_offering_azs is None else gpu_offering_azs
        self.vcpu_quota = vcpu_quota
        self.caller_arn = caller_arn
        self.existing_clusters = existing_clusters
        # Kubernetes objects as the API server stores them (URN -> StoredObject): the state's, and this run's.
        self.existing_uids: Mapping[str, StoredObject] = existing_uids or {}
        self.uids: dict[str, StoredObject] = {}
        # The URN and replaceOnChanges paths of the resource being registered (CapturingMonitor sets them).
        self.registering: tuple[str, tuple[str, ...]] = ("", ())
        # What this run answered from the tables here rather than as the live service would, for the user.
        self.offline_notes: list[OfflineNote] = []

    @property
    def zone_ids(self) -> list[str]:
        """EC2's zone ids (us-east-1: use1-az1, ap-southeast-2: apse2-az1), in the order of the AZ names; read when
        asked, as a region the config refuses still starts a run."""
        return [f"{region_code(self.region)}-az{i + 1}" for i in range(len(self.azs))]

    def _note(self, subject: str, text: str) -> None:
        note = OfflineNote(subject, f"{subject}: {text}")
        if note not in self.offline_notes:
            self.offline_notes.append(note)

    def fetch_from_hub(self, url: str, headers: Mapping[str, str]) -> model_source.HttpAnswer:
        """hub_fetch's answer, noting a repository the offline Hub refuses (it holds a few, HUB_CONFIGS)."""
        answer = hub_fetch(url, headers)
        repo = url.removeprefix(f"{model_source.HUB}/").partition("/resolve/")[0]
        refusal = {"RepoNotFound": ("not in", "HUB_CONFIGS"), "GatedRepo": ("gated in", "GATED_REPOS")}
        noted = refusal.get(answer.headers.get("X-Error-Code", ""))
        if noted:
            how, table = noted
            self._note(repo, f"{how} the offline Hugging Face table (tools/offline_models.py {table}){ASKS_THE_HUB}")
        return answer

    def _service_quota(self, request: dict[str, Any]) -> LookupAnswer:
        """A Service Quotas answer in pulumi-aws's GetServiceQuotaResult shape (camelCase)."""
        service_code, quota_code = request["serviceCode"], request["quotaCode"]
        names = {code: name for code, name in ON_DEMAND_VCPU_QUOTAS.values()}
        self._note(
            quota_code,
            f"{self.vcpu_quota:g} vCPUs is the offline account's quota (tools/offline_aws.py DEFAULT_VCPU_QUOTA); "
            "`pulumi preview` asks Service Quotas for yours",
        )
        return {
            "adjustable": True,
            "arn": f"arn:aws:servicequotas:{self.region}:{ACCOUNT_ID}:{service_code}/{quota_code}",
            "defaultValue": 0.0,
            "globalQuota": False,
            "id": f"{service_code}/{quota_code}",
            "quotaCode": quota_code,
            "quotaName": names[quota_code],
            "region": self.region,
            "serviceCode": service_code,
            "serviceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
            "usageMetrics": [
                {
                    "metricDimensions": [
                        {"class": "Standard/OnDemand", "resource": "vCPU", "service": "EC2", "type": "Resource"}
                    ],
                    "metricName": "ResourceCount",
                    "metricNamespace": "AWS/Usage",
                    "metricStatisticRecommendation": "Maximum",
                }
            ],
            "value": self.vcpu_quota,
        }

    # pulumi runtime/mocks.py `MockMonitor.Invoke` takes a plain dict as well as Mocks.call's declared
    # (outputs, failures) pair: `if isinstance(tup, dict): (ret, failures) = (tup, None)`.
    def call(self, args: mocks.MockCallArgs) -> LookupAnswer:  # type: ignore[override]
        """Each lookup answered with every field pulumi-aws's result type has (camelCase, same nesting),
        unset optional ones left out, as the provider does; tests/test_offline_mocks.py checks the shape."""
        lookup = self._lookups().get(args.token)
        if lookup is None:
            raise NotImplementedError(
                f"no offline answer for the lookup {args.token}: add one in the real result shape"
            )
        return lookup(dict(args.args))

    def _lookups(self) -> dict[str, Callable[[dict[str, Any]], LookupAnswer]]:
        """The invoke token of each lookup the program makes -> its offline answer, from the request's arguments."""
        return {
            "aws:index/getPartition:getPartition": self._partition,
            "aws:index/getCallerIdentity:getCallerIdentity": self._caller_identity,
            "aws:eks/getClusters:getClusters": self._clusters,
            "aws:index/getAvailabilityZones:getAvailabilityZones": self._availability_zones,
            "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings": self._instance_type_offerings,
            "aws:ec2/getInstanceType:getInstanceType": self._instance_type,
            "aws:servicequotas/getServiceQuota:getServiceQuota": self._service_quota,
            "aws:s3/getObject:getObject": self._s3_object,
            "aws:eks/getClusterVersions:getClusterVersions": self._cluster_versions,
            "aws:eks/getAddonVersion:getAddonVersion": self._addon_version,
            "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation": self._capacity_block_reservation,
        }

    @staticmethod
    def _partition(request: dict[str, Any]) -> LookupAnswer:
        return {"id": "aws", "partition": "aws", "dnsSuffix": "amazonaws.com", "reverseDnsPrefix": "com.amazonaws"}

    def _caller_identity(self, request: dict[str, Any]) -> LookupAnswer:
        # An assumed role's UserId is the role's unique id (AROA...) and the session name.
        return {
            "accountId": ACCOUNT_ID,
            "arn": self.caller_arn,
            "id": ACCOUNT_ID,
            "userId": f"AROA3XFRBF535PLBIFPI4:{self.caller_arn.rsplit('/', 1)[-1]}",
        }

    def _clusters(self, request: dict[str, Any]) -> LookupAnswer:
        return {"id": self.region, "names": list(self.existing_clusters), "region": self.region}

    def _availability_zones(self, request: dict[str, Any]) -> LookupAnswer:
        return {
            **request,
            "id": self.region,
            "region": self.region,
            "names": self.azs,
            "zoneIds": self.zone_ids,
            "groupNames": [self.region],
        }

    def _instance_type_offerings(self, request: dict[str, Any]) -> LookupAnswer:
        """Region-wide: the types in OFFERED_INSTANCE_TYPES; by AZ: the AZs that offer the GPU type."""
        instance_type = request["filters"][0]["values"][0]
        locations = self.gpu_offering_azs
        if request.get("locationType") == "region":
            locations = [self.region] if instance_type in OFFERED_INSTANCE_TYPES else []
            if not locations:
                self._note(
                    instance_type,
                    "not among the types the offline region offers (tools/offline_aws.py OFFERED_INSTANCE_TYPES)"
                    + ASKS_EC2,
                )
        return {
            **request,
            "id": self.region,
            "region": self.region,
            "locations": locations,
            "locationTypes": [request["locationType"]] * len(locations),
            "instanceTypes": [instance_type] * len(locations),
        }

    def _instance_type(self, request: dict[str, Any]) -> LookupAnswer:
        name = request["instanceType"]
        if name not in INSTANCE_TYPES:
            self._note(name, f"not in the offline table of instance types (tools/instance_type_facts.py){ASKS_EC2}")
            # EC2's own error for a name it does not know, which the provider passes on.
            return {}, [
                ("instanceType", f"InvalidInstanceType: The following supplied instance types do not exist: [{name}]")
            ]
        return describe_instance_type(name, self.region)

    def _capacity_block_reservation(self, request: dict[str, Any]) -> LookupAnswer:
        """DescribeCapacityReservations by id in GetCapacityBlockReservationResult's shape; EC2's NotFound, which the
        provider passes on as a failed read (terraform-provider-aws `findCapacityReservations`), for an id the offline
        account does not hold. The commitment and interruption blocks, which a block bought outright has no use for,
        hold empty values of their fields' types."""
        reservation_id = request["id"]
        held = reservation_id in CAPACITY_BLOCKS
        blocks = "the offline account's Capacity Blocks (tools/offline_aws.py CAPACITY_BLOCKS)"
        self._note(reservation_id, f"{'one of' if held else 'not among'} {blocks}{ASKS_EC2}")
        if not held:
            return {}, [
                (
                    "id",
                    f"reading EC2 Capacity Block Reservation: couldn't find resource (InvalidCapacityReservationId."
                    f"NotFound: The capacity reservation ID '{reservation_id}' does not exist)",
                )
            ]
        instance_type, az_letter, count, state = CAPACITY_BLOCKS[reservation_id]
        return {
            **request,
            "arn": f"arn:aws:ec2:{self.region}:{ACCOUNT_ID}:capacity-reservation/{reservation_id}",
            "availabilityZone": f"{self.region}{az_letter}",
            "availabilityZoneId": self.zone_ids[0],
            "availableInstanceCount": count,
            "capacityBlockId": "cb-0123456789abcdef0",
            "commitmentInfo": {"commitmentEndDate": "", "committedInstanceCount": 0},
            "createdDate": "2026-12-01T08:00:00Z",
            "deliveryPreference": "fixed",
            "ebsOptimized": True,
            "endDate": "2026-12-15T11:30:00Z",
            "endDateType": "limited",
            "instanceCount": count,
            "instanceMatchCriteria": "targeted",
            "instancePlatform": "Linux/UNIX",
            "instanceType": instance_type,
            "interruptibleCapacityAllocation": {
                "instanceCount": 0,
                "interruptibleCapacityReservationId": "",
                "interruptionType": "",
                "status": "",
                "targetInstanceCount": 0,
            },
            "interruptionInfo": {"interruptionType": "", "sourceCapacityReservationId": ""},
            "outpostArn": "",
            "ownerId": ACCOUNT_ID,
            "placementGroupArn": "",
            "region": self.region,
            "reservationType": "capacity-block",
            "startDate": "2026-12-01T11:30:00Z",
            "state": state,
            "tags": {},
            "tenancy": "default",
        }

    def _addon_version(self, request: dict[str, Any]) -> LookupAnswer:
        name, kubernetes_version = request["addonName"], request["kubernetesVersion"]
        build = f"v{kubernetes_version}.0-eksbuild.1" if name == "kube-proxy" else DEFAULT_ADDON_BUILDS[name]
        return {**request, "id": name, "region": self.region, "version": build}

    def _s3_object(self, request: dict[str, Any]) -> LookupAnswer:
        """GetObject in pulumi-aws's GetObjectResult shape; S3's NoSuchKey for an object it does not hold."""
        bucket, key = request["bucket"], request["key"]
        if (bucket, key) not in S3_OBJECTS:
            self._note(
                f"s3://{bucket}/{key}",
                "not in the offline S3 table (tools/offline_models.py S3_OBJECTS); `pulumi preview` reads the bucket",
            )
            return {}, [
                ("key", f"reading S3 Object (s3://{bucket}/{key}): NoSuchKey: The specified key does not exist.")
            ]
        content_type, body = S3_OBJECTS[bucket, key]
        return {
            "arn": f"arn:aws:s3:::{bucket}/{key}",
            "body": body if content_type.startswith(S3_TEXT_TYPES) else "",
            "bodyBase64": "",
            "bucket": bucket,
            "bucketKeyEnabled": False,
            "cacheControl": "",
            "checksumCrc32": "",
            "checksumCrc32c": "",
            "checksumCrc64nvme": "",
            "checksumSha1": "",
            "checksumSha256": "",
            "contentDisposition": "",
            "contentEncoding": "",
            "contentLanguage": "",
            "contentLength": len(body.encode()),
            "contentType": content_type,
            "etag": "0123456789abcdef0123456789abcdef",
            "expiration": "",
            "expires": "",
            "id": f"{bucket}/{key}",
            "key": key,
            "lastModified": "Tue, 01 Dec 2026 08:00:00 GMT",
            "metadata": {},
            "objectLockLegalHoldStatus": "",
            "objectLockMode": "",
            "objectLockRetainUntilDate": "",
            "region": self.region,
            "serverSideEncryption": "AES256",
            "sseKmsKeyId": "",
            "storageClass": "STANDARD",
            "tags": {},
            "versionId": "",
            "websiteRedirectLocation": "",
        }

    def _cluster_versions(self, request: dict[str, Any]) -> LookupAnswer:
        """DescribeClusterVersions' answer in GetClusterVersionsResult's shape, each version in
        GetClusterVersionsClusterVersionResult's."""
        versions = [
            {
                "clusterType": "eks",
                "clusterVersion": version,
                "controlPlaneComponentConfigs": [],
                "controlPlaneScalingTiers": [],
                "defaultPlatformVersion": "eks.1",
                "defaultVersion": version == "1.34",
                "endOfExtendedSupportDate": extended_end,
                "endOfStandardSupportDate": standard_end,
                "kubernetesPatchVersion": f"{version}.0",
                "releaseDate": released,
                "versionStatus": status,
            }
            for version, status, released, standard_end, extended_end in EKS_CLUSTER_VERSIONS
        ]
        return {**request, "region": self.region, "clusterVersions": versions}

    def stored_object(self, urn: str, identity: str, spec: str) -> StoredObject:
        """A Kubernetes object's metadata.uid and generation: an object the earlier run (`existing`) created under the
        same URN and replacement identity is updated in place and keeps its uid; any other gets a new one
        (docs/testing.md#the-shapes-the-offline-aws-and-kubernetes-answer-in)."""
        earlier = self.existing_uids.get(urn)
        if earlier is None or earlier.identity != identity:
            stored = StoredObject(identity, str(uuid.uuid4()), 1, spec)
        else:
            stored = earlier._replace(generation=earlier.generation + (earlier.spec != spec), spec=spec)
        self.uids[urn] = stored
        return stored

    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str | None, dict]:
        state = dict(args.inputs)
        if args.typ == "aws:iam/role:Role":
            state.setdefault("name", f"{args.name}-role")
        if args.typ == "aws:elasticache/replicationGroup:ReplicationGroup":
            state.update(self._replication_group(args.name, state))
        state.setdefault("arn", self._arn(args.typ, args.name, state))
        if args.typ == "aws:ec2/placementGroup:PlacementGroup":
            state.setdefault("name", f"{args.name}-pg")
        if args.typ == "aws:ec2/launchTemplate:LaunchTemplate":
            state["latestVersion"] = 1
        if args.typ == "eks:index:Cluster":
            kubeconfig = {"apiVersion": "v1", "kind": "Config", "users": [{"name": "aws", "user": {"token": "t0ken"}}]}
            issuer = f"oidc.eks.{self.region}.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"
            state.update(
                kubeconfig=kubeconfig,
                kubeconfigJson=json.dumps(kubeconfig),
                oidcIssuer=issuer,
                oidcProviderArn=f"arn:aws:iam::{ACCOUNT_ID}:oidc-provider/{issuer}",
                clusterSecurityGroupId="sg-eks-cluster",
            )
        if args.typ == "random:index/randomPassword:RandomPassword":
            # Letters and digits only (special=False), `length` of them; the same for a name, as the state keeps it.
            alphabet = string.ascii_letters + string.digits
            digest = hashlib.sha512(args.name.encode()).digest() * 4
            state["result"] = "".join(alphabet[b % len(alphabet)] for b in digest[: int(state["length"])])
        if args.typ.startswith("kubernetes:") and isinstance(state.get("metadata"), dict):
            # The API server stamps every object it stores with a resourceVersion, a generation and a uid.
            spec = json.dumps({k: v for k, v in args.inputs.items() if k not in ("metadata", "status")}, sort_keys=True)
            stored = self.stored_object(
                self.registering[0], _replacement_identity(args.inputs, self.registering[1]), spec
            )
            state["metadata"] = {
                **state["metadata"],
                "resourceVersion": str(stored.generation),
                "generation": stored.generation,
                "uid": stored.uid,
            }
        if args.typ.endswith(":ServeRollout"):
            state["cluster"] = _serving_cluster(args.inputs)
        if args.typ == "kubernetes:core/v1:Service":
            state["status"] = {
                "loadBalancer": {"ingress": [{"hostname": f"{args.name}.elb.{self.region}.amazonaws.com"}]}
            }
        return f"{args.name}-id", state

    def _arn(self, typ: str, name: str, state: Mapping[str, Any]) -> str:
        """The ARN AWS gives a resource of this type, in its documented shape
        (docs/testing.md#the-shapes-the-offline-aws-and-kubernetes-answer-in)."""
        service = typ.split(":")[1].split("/")[0]
        if typ == "aws:iam/role:Role":
            return f"arn:aws:iam::{ACCOUNT_ID}:role{state.get('path') or '/'}{state['name']}"
        if typ == "aws:iam/policy:Policy":
            return f"arn:aws:iam::{ACCOUNT_ID}:policy{state.get('path') or '/'}{state.get('name') or name}"
        if typ in ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"):
            return f"arn:aws:s3:::{state.get('bucket') or name}"
        if typ == "aws:kms/key:Key":
            return f"arn:aws:kms:{self.region}:{ACCOUNT_ID}:key/{uuid.uuid5(uuid.NAMESPACE_URL, name)}"
        if typ == "aws:elasticache/replicationGroup:ReplicationGroup":
            return f"arn:aws:elasticache:{self.region}:{ACCOUNT_ID}:replicationgroup:{state['replicationGroupId']}"
        return f"arn:aws:{service}:{self.region}:{ACCOUNT_ID}:{name}"

    def _replication_group(self, name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """What ElastiCache answers for a cluster-mode-disabled group: its id, TLS primary and reader endpoints, members
        and engine version (docs/testing.md#the-shapes-the-offline-aws-and-kubernetes-answer-in)."""
        group_id = inputs.get("replicationGroupId") or f"{name}-{ELASTICACHE_ID_SUFFIX}"
        domain = f"{group_id}.{ELASTICACHE_ENDPOINT_LETTERS}.{region_code(self.region)}.cache.amazonaws.com"
        return {
            "replicationGroupId": group_id,
            "primaryEndpointAddress": f"master.{domain}",
            "readerEndpointAddress": f"replica.{domain}",
            "memberClusters": [f"{group_id}-{n:03d}" for n in range(1, int(inputs.get("numCacheClusters") or 1) + 1)],
            "engineVersionActual": f"{inputs.get('engineVersion', '8.0')}.1",
        }


# The letters KubeRay names a RayService's clusters with: `<name>-` and five of k8s.io/apimachinery's rand.String
# (kuberay v1.4.0 and v1.7.0 ray-operator/controllers/ray/utils/util.go GenerateRayClusterName; apimachinery
# pkg/util/rand/rand.go alphanums).
CLUSTER_NAME_LETTERS = "bcdfghjklmnpqrstvwxz2456789"


# How AWS shortens a region's direction in its zone ids and host names (us-east-1 is use1, ap-southeast-2 apse2:
# https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-availability-zones.html).
COMPASS_CODES = {"northeast": "ne", "southeast": "se", "northwest": "nw", "southwest": "sw"}


def region_code(region: str) -> str:
    """The region's short code in AZ ids and ElastiCache endpoints: us-east-1 is use1, ap-southeast-2 apse2."""
    country, *_, direction, number = region.split("-")
    return f"{country}{COMPASS_CODES.get(direction, direction[0])}{number}"


def _serving_cluster(inputs: Mapping[str, Any]) -> str:
    """The RayCluster the ServeRollout reports serving (its `cluster` output), named as KubeRay names one; offline
    a function of the cluster spec, so that a new spec is a new cluster."""
    digest = hashlib.sha256(str(inputs.get("clusterSpecSha256") or inputs.get("specSha256")).encode()).digest()
    return f"{inputs['name']}-" + "".join(CLUSTER_NAME_LETTERS[b % len(CLUSTER_NAME_LETTERS)] for b in digest[:5])


def _replacement_identity(inputs: Mapping[str, Any], replace_on_changes: Sequence[str]) -> str:
    """What the engine replaces a Kubernetes object for (not updates it in place): its name and namespace
    (pulumi-kubernetes provider/pkg/provider forceNewProperties: `metadataForceNewProperties(".metadata")`, the
    name and namespace, for every kind) and each `replaceOnChanges` path (pulumi pkg/resource/deploy/step_generator.go
    applyReplaceOnChanges). Kinds' own immutable fields are not modelled: no input reads those objects' uids."""
    metadata = inputs.get("metadata") or {}
    values: list[Any] = [metadata.get("name"), metadata.get("namespace")]
    for path in replace_on_changes:
        value: Any = inputs
        for key in path.split("."):
            value = value.get(key) if isinstance(value, Mapping) else None
        values.append(value)
    return json.dumps(values, sort_keys=True, default=str)
