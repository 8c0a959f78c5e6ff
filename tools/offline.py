"""Evaluates the whole Pulumi program offline, in-process under Pulumi's official mocks.

The test suite and `tools.render` both use it, so what a user renders is what the tests checked.

Config is built the way the CLI builds it: the project defaults from `Pulumi.yaml`, then a shipped
`Pulumi.<stack>.yaml`, then the test's overrides. Every registered resource is captured with its
type, name, inputs, parent, dependencies and provider; stack outputs are resolved with their secrecy.
AWS lookups (Availability Zones, instance-type offerings) get realistic answers, from tables here and in
tools/instance_type_facts.py; a lookup those tables refuse (or a quota they invent) is noted (AwsMocks.offline_notes),
so that tools.render can say which refusal rests on an offline table, which the live lookup of `pulumi preview` may
answer otherwise.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import runpy
import string
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import pulumi
from google.protobuf import json_format
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime.stack import Stack

from infra.nodes import node_groups
from infra.preflight.quota import ON_DEMAND_VCPU_QUOTAS
from infra.serving import model_source
from infra.settings.config import API_KEYS_SETTING, SECRET_SETTINGS, StackConfig, load_config
from tools.instance_type_facts import INSTANCE_TYPES, describe_instance_type
from tools.project import PROJECT, PROJECT_DIR, declared_defaults
from tools.stack_yaml import StackFileError, cli_string, read_stack_file

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
# What an offline run may stand in for an unset API allow-list, which `pulumi up` requires (infra.settings.config
# refuses it empty): 192.88.99.0/24, the 6to4 relay anycast prefix RFC 7526 deprecated, no host's own address.
# RFC 5737's documentation ranges are the usual placeholder, but the allow-list's own check refuses them (they reach
# no one), and the stand-in must pass that check for the program to run on.
ALLOW_LIST_PLACEHOLDER = "192.88.99.0/24"
# An account whose GPU quotas were raised: enough for two p5.48xlarge (2 x 192 vCPUs) and more.
DEFAULT_VCPU_QUOTA = 768.0


def _qualified(key: str) -> str:
    return key if ":" in key else f"{PROJECT}:{key}"


def project_config() -> dict[str, str]:
    """Project-level config of Pulumi.yaml: `default` of typed keys, the value of namespaced ones."""
    return {_qualified(key): cli_string(default) for key, default in declared_defaults().items()}


def _is_encrypted(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"secure"}


def _stack_file_values(stack: str) -> dict[str, Any]:
    """`Pulumi.<stack>.yaml`'s `config:` as the CLI decodes it (tools/stack_yaml.py); raises StackFileError naming
    the file and line of what is wrong, or of a key only `hfToken` may be: encrypted."""
    path = PROJECT_DIR / f"Pulumi.{stack}.yaml"
    if not path.exists():
        return {}
    values, lines = read_stack_file(path, PROJECT)
    for key, value in values.items():
        if _is_encrypted(value) and key.removeprefix(f"{PROJECT}:") not in SECRET_SETTINGS:
            raise StackFileError(
                f"{path.name}:{lines[key]}: {key} is encrypted (secure:) but is not a secret setting; only "
                f"{', '.join(sorted(SECRET_SETTINGS))} may be (`pulumi config set {key} <value>`)"
            )
    return values


class StoredObject(NamedTuple):
    """A Kubernetes object as the API server keeps it across `pulumi up`s: what replacing it would change (its
    replacement identity), its uid, its generation, and the spec that generation stands for."""

    identity: str
    uid: str
    generation: int
    spec: str


@dataclass(frozen=True)
class StackFile:
    """`Pulumi.<stack>.yaml` as the program sees it, from one read of the file."""

    # Its values; encrypted (`secure:`) ones, which offline cannot decrypt, as a placeholder.
    config: dict[str, str]
    # Keys it holds encrypted: the program sees them as secrets, as under the CLI.
    secret_keys: set[str]


def _encrypted_placeholder(key: str, stack: str) -> str:
    """What offline shows for a value it cannot decrypt, in the setting's own shape (the keys are a JSON list)."""
    if key == f"{PROJECT}:{API_KEYS_SETTING}":
        return json.dumps([f"<encrypted:Pulumi.{stack}.yaml:offline-stand-in>"])  # a key's length, no spaces
    return f"<encrypted in Pulumi.{stack}.yaml>"


def stack_file(stack: str) -> StackFile:
    values = _stack_file_values(stack)
    return StackFile(
        config={
            key: _encrypted_placeholder(key, stack) if _is_encrypted(value) else cli_string(value)
            for key, value in values.items()
        },
        secret_keys={key for key, value in values.items() if _is_encrypted(value)},
    )


def region_azs(region: str) -> list[str]:
    return [f"{region}{letter}" for letter in "abc"]


@dataclass(frozen=True)
class Resource:
    type: str
    name: str
    urn: str
    inputs: dict[str, Any]
    parent: str
    dependencies: tuple[str, ...]
    provider: str
    custom: bool
    protect: bool = False
    # Top-level inputs that carry a Pulumi secret anywhere inside them.
    secret_inputs: frozenset[str] = frozenset()
    # The `transforms` resource option: the engine applies them to this resource and its children.
    transforms: tuple[Callable[..., Any], ...] = ()
    # Inputs that were resource references (dotted path -> the referenced URN); `inputs` holds their id/URN.
    references: Mapping[str, str] = field(default_factory=dict)
    # The provider plugin version the SDK asks the engine for (its package version), "" when none.
    plugin_version: str = ""
    # The `replaceOnChanges` and `deleteBeforeReplace` resource options.
    replace_on_changes: tuple[str, ...] = ()
    delete_before_replace: bool = False
    # The `retain_on_delete` option: `pulumi destroy` drops it from the state and leaves it in the cloud.
    retain_on_delete: bool = False


@dataclass(frozen=True)
class OfflineNote:
    """A lookup answered from a table here: what it was about (an instance type, a repository, an object, a quota
    code) and what the user is told."""

    subject: str
    text: str


class EngineMessage(NamedTuple):
    """What the program told the engine (pulumi.log.info / warn / error), which `pulumi preview` prints under the
    stack's Diagnostics: `severity` is "info", "warning" or "error"."""

    severity: str
    text: str


class EngineLog(logging.Handler):
    """Pulumi's mock engine hands each message to a logger (pulumi/runtime/mocks.py MockEngine.Log: logger.info,
    logger.warning, ...); this keeps them, in order, for the run."""

    SEVERITIES: ClassVar[dict[int, str]] = {
        logging.DEBUG: "debug",
        logging.INFO: "info",
        logging.WARNING: "warning",
        logging.ERROR: "error",
    }

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[EngineMessage] = []
        self.logger = logging.getLogger(f"{__name__}.engine")
        self.logger.handlers[:] = [self]
        self.logger.setLevel(logging.INFO)
        self.logger.propagate = False

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(EngineMessage(self.SEVERITIES.get(record.levelno, "error"), record.getMessage()))


@dataclass
class StackRun:
    resources: list[Resource]
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: set[str] = field(default_factory=set)
    # Lookups answered from the tables here (AwsMocks.offline_notes), which the live services may answer otherwise.
    offline_notes: list[OfflineNote] = field(default_factory=list)
    # The Kubernetes objects' uids the API server gave (AwsMocks.uids): what the next run's `existing` reads.
    uids: dict[str, StoredObject] = field(default_factory=dict)
    # What the program told the engine, in order: the notes and warnings `pulumi preview` prints.
    messages: list[EngineMessage] = field(default_factory=list)

    @property
    def notes(self) -> list[str]:
        """The INFO messages: what the preview says about the plan (alerts, Ray's token, a change's cost, the capacity
        estimate)."""
        return [message.text for message in self.messages if message.severity == "info"]

    def of_type(self, type_: str) -> list[Resource]:
        return [r for r in self.resources if r.type == type_]

    def get(self, type_: str, name: str) -> Resource:
        matches = [r for r in self.resources if r.type == type_ and r.name == name]
        assert len(matches) == 1, f"expected one {type_} named {name!r}, found {len(matches)}"
        return matches[0]


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


# Model repositories the offline Hub holds, as huggingface.co serves their config.json: the default model with
# the full Qwen3.5-9B dimensions (tools/offline_hub/: the config the lab's tiny model writes in its "full" shape,
# lab/tests/test_tiny_model.py holds the two equal), and Llama 3.1 8B, a gated repository whose
# config stretches 8192 positions to 131072 by RoPE scaling (its published config.json).
HUB_CONFIGS: dict[str, dict[str, Any]] = {
    "Qwen/Qwen3.5-9B": json.loads((PROJECT_DIR / "tools" / "offline_hub" / "Qwen3.5-9B.config.json").read_text()),
    # A public dense model (its published config.json, the keys vLLM reads for the length check).
    "Qwen/Qwen3-8B": {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "max_position_embeddings": 40960,
        "rope_scaling": None,
        "rope_theta": 1000000,
    },
    "meta-llama/Llama-3.1-8B": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "max_position_embeddings": 131072,
        "rope_scaling": {
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        },
    },
}
GATED_REPOS = frozenset({"meta-llama/Llama-3.1-8B"})
# The tensors of the default model's checkpoint (name -> safetensors dtype and shape): transformers 5.17's
# Qwen3_5ForConditionalGeneration built on the meta device from that config, its state_dict as `save_pretrained`
# writes it (17.53 GiB in all, vLLM's "Checkpoint size: 17.53 GiB" for the checkpoint the GPU runs wrote,
# lab/records/gpu-end-to-end.md). The other offline repos have no weights: the Hub answers EntryNotFound.
HUB_TENSORS = {"Qwen/Qwen3.5-9B": PROJECT_DIR / "tools" / "offline_hub" / "Qwen3.5-9B.tensors.json"}
SAFETENSORS_DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4}
# save_pretrained's max_shard_size="5GB" (lab/tiny_model.py), in bytes.
MAX_SHARD_BYTES = 5 * 10**9


@functools.cache
def hub_checkpoint(repo: str) -> dict[str, bytes]:
    """A sharded safetensors checkpoint as the Hub holds it: the index (`metadata.total_size`, `weight_map`) and
    each shard's first bytes, the 8-byte header length and the JSON header with every tensor's `data_offsets`
    (the safetensors format, huggingface.co/docs/safetensors); the tensor data itself is left out."""
    tensors = json.loads(HUB_TENSORS[repo].read_text())
    shards: list[dict[str, Any]] = [{}]
    sizes = [0]
    for name, (dtype, shape) in tensors.items():
        size = SAFETENSORS_DTYPE_BYTES[dtype] * math.prod(shape)
        if sizes[-1] and sizes[-1] + size > MAX_SHARD_BYTES:
            shards.append({})
            sizes.append(0)
        shards[-1][name] = {"dtype": dtype, "shape": shape, "data_offsets": [sizes[-1], sizes[-1] + size]}
        sizes[-1] += size
    names = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    files = {
        name: len(header).to_bytes(8, "little") + header
        for name, shard in zip(names, shards, strict=True)
        for header in [json.dumps({"__metadata__": {"format": "pt"}, **shard}).encode()]
    }
    weight_map = {tensor: name for name, shard in zip(names, shards, strict=True) for tensor in shard}
    index = {"metadata": {"total_size": sum(sizes)}, "weight_map": weight_map}
    return {model_source.SAFETENSORS_INDEX: json.dumps(index).encode(), **files}


def _byte_range(body: bytes, headers: Mapping[str, str]) -> model_source.HttpAnswer:
    """A file's answer: whole (200), or the bytes a `Range: bytes=a-b` asks (206, `Content-Range`)."""
    asked = headers.get("Range")
    if not asked:
        return model_source.HttpAnswer(200, {}, body)
    start, _, end = asked.removeprefix("bytes=").partition("-")
    part = body[int(start) : int(end) + 1]
    return model_source.HttpAnswer(206, {"Content-Range": f"bytes {start}-{int(start) + len(part) - 1}/*"}, part)


# Objects the offline S3 holds: (bucket, key) -> (Content-Type, body); a model mirrored as `aws s3 sync` writes it
# (application/json for .json).
S3_OBJECTS: dict[tuple[str, str], tuple[str, str]] = {
    ("example-models", "qwen3.5-9b/config.json"): ("application/json", json.dumps(HUB_CONFIGS["Qwen/Qwen3.5-9B"])),
}
# pulumi-aws's getObject returns the body only for these content types (pulumi_aws/s3/get_object.py).
S3_TEXT_TYPES = ("text/", "application/json")


def hub_fetch(url: str, headers: Mapping[str, str]) -> model_source.HttpAnswer:
    """huggingface.co's answers for a file of a repo: 200 and the file, or the status and `X-Error-Code` the Hub
    sends (huggingface_hub `utils/_http.py` `hf_raise_for_status`): 401 RepoNotFound for a repo it does not
    show this caller, 401 GatedRepo for a gated repo asked without a token, 404 EntryNotFound for a file."""
    repo, _, filename = url.removeprefix(f"{model_source.HUB}/").partition("/resolve/main/")
    if repo not in HUB_CONFIGS:
        return model_source.HttpAnswer(401, {"X-Error-Code": "RepoNotFound"}, b'{"error":"Repository not found"}')
    if repo in GATED_REPOS and "Authorization" not in headers:
        # Anonymous: 401 (a signed-in user who has not accepted the conditions gets 403), both with GatedRepo.
        message = f"Access to model {repo} is restricted. You must have access to it and be authenticated."
        return model_source.HttpAnswer(401, {"X-Error-Code": "GatedRepo"}, json.dumps({"error": message}).encode())
    if filename != "config.json":
        files = hub_checkpoint(repo) if repo in HUB_TENSORS else {}
        if filename in files:
            return _byte_range(files[filename], headers)
        return model_source.HttpAnswer(404, {"X-Error-Code": "EntryNotFound"}, b'{"error":"Entry not found"}')
    return model_source.HttpAnswer(200, {"Content-Type": "application/json"}, json.dumps(HUB_CONFIGS[repo]).encode())


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
        gpu_offering_azs: list[str] | None,
        vcpu_quota: float = DEFAULT_VCPU_QUOTA,
        caller_arn: str = DEPLOYER_ARN,
        existing_clusters: tuple[str, ...] = (),
        existing_uids: Mapping[str, StoredObject] | None = None,
    ) -> None:
        self.region = region
        self.azs = region_azs(region)
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

    def _note(self, subject: str, text: str) -> None:
        note = OfflineNote(subject, f"{subject}: {text}")
        if note not in self.offline_notes:
            self.offline_notes.append(note)

    def fetch_from_hub(self, url: str, headers: Mapping[str, str]) -> model_source.HttpAnswer:
        """hub_fetch's answer, noting a repository the offline Hub refuses (it holds a few, HUB_CONFIGS)."""
        answer = hub_fetch(url, headers)
        repo = url.removeprefix(f"{model_source.HUB}/").partition("/resolve/")[0]
        refusal = answer.headers.get("X-Error-Code")
        if refusal == "RepoNotFound":
            self._note(repo, f"not in the offline Hugging Face table (tools/offline.py HUB_CONFIGS){ASKS_THE_HUB}")
        elif refusal == "GatedRepo":
            self._note(repo, f"gated in the offline Hugging Face table (tools/offline.py GATED_REPOS){ASKS_THE_HUB}")
        return answer

    def service_quota(self, service_code: str, quota_code: str) -> dict:
        """A Service Quotas answer in pulumi-aws's GetServiceQuotaResult shape (camelCase)."""
        names = {code: name for code, name in ON_DEMAND_VCPU_QUOTAS.values()}
        self._note(
            quota_code,
            f"{self.vcpu_quota:g} vCPUs is the offline account's quota (tools/offline.py DEFAULT_VCPU_QUOTA); "
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
            "aws:servicequotas/getServiceQuota:getServiceQuota": lambda request: self.service_quota(
                request["serviceCode"], request["quotaCode"]
            ),
            "aws:s3/getObject:getObject": lambda request: self.s3_object(request["bucket"], request["key"]),
            "aws:eks/getClusterVersions:getClusterVersions": lambda request: {
                **request,
                "region": self.region,
                "clusterVersions": self._cluster_versions(),
            },
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
        zone_ids = [f"{self.region[:2]}{self.region.split('-')[1][0]}{self.region[-1]}-az{i + 1}" for i in range(3)]
        return {
            **request,
            "id": self.region,
            "region": self.region,
            "names": self.azs,
            "zoneIds": zone_ids,
            "groupNames": [self.region],
        }

    def _instance_type_offerings(self, request: dict[str, Any]) -> LookupAnswer:
        """Region-wide: the types in OFFERED_INSTANCE_TYPES; by AZ: the AZs that offer the GPU type."""
        instance_type = request["filters"][0]["values"][0]
        if request.get("locationType") == "region":
            offered = instance_type in OFFERED_INSTANCE_TYPES
            if not offered:
                self._note(
                    instance_type,
                    "not among the types the offline region offers (tools/offline.py OFFERED_INSTANCE_TYPES)"
                    + ASKS_EC2,
                )
            return {
                **request,
                "id": self.region,
                "region": self.region,
                "locations": [self.region] if offered else [],
                "locationTypes": ["region"] if offered else [],
                "instanceTypes": [instance_type] if offered else [],
            }
        return {
            **request,
            "id": self.region,
            "region": self.region,
            "locations": self.gpu_offering_azs,
            "locationTypes": [request["locationType"]] * len(self.gpu_offering_azs),
            "instanceTypes": [instance_type] * len(self.gpu_offering_azs),
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
        if reservation_id not in CAPACITY_BLOCKS:
            self._note(
                reservation_id,
                "not among the offline account's Capacity Blocks (tools/offline.py CAPACITY_BLOCKS)" + ASKS_EC2,
            )
            return {}, [
                (
                    "id",
                    f"reading EC2 Capacity Block Reservation: couldn't find resource (InvalidCapacityReservationId."
                    f"NotFound: The capacity reservation ID '{reservation_id}' does not exist)",
                )
            ]
        instance_type, az_letter, count, state = CAPACITY_BLOCKS[reservation_id]
        self._note(
            reservation_id, "one of the offline account's Capacity Blocks (tools/offline.py CAPACITY_BLOCKS)" + ASKS_EC2
        )
        return {
            **request,
            "arn": f"arn:aws:ec2:{self.region}:{ACCOUNT_ID}:capacity-reservation/{reservation_id}",
            "availabilityZone": f"{self.region}{az_letter}",
            "availabilityZoneId": f"{self.region[:2]}{self.region.split('-')[1][0]}{self.region[-1]}-az1",
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

    def s3_object(self, bucket: str, key: str) -> LookupAnswer:
        """GetObject in pulumi-aws's GetObjectResult shape; S3's NoSuchKey for an object it does not hold."""
        if (bucket, key) not in S3_OBJECTS:
            self._note(
                f"s3://{bucket}/{key}",
                "not in the offline S3 table (tools/offline.py S3_OBJECTS); `pulumi preview` reads the bucket",
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

    @staticmethod
    def _cluster_versions() -> list[dict]:
        """DescribeClusterVersions' answer in GetClusterVersionsClusterVersionResult's shape."""
        return [
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

    def stored_object(self, urn: str, identity: str, spec: str) -> StoredObject:
        """A Kubernetes object's metadata.uid: "generated by the server on successful creation of a resource and is
        not allowed to change on PUT operations" (kubernetes api-conventions.md, Metadata), a random UUID
        (k8s.io/apiserver pkg/registry/rest/meta.go FillObjectMetaSystemFields: `uuid.NewUUID()`). An object the
        earlier run (`existing`) created under the same URN and replacement identity is the same object, updated in
        place, and keeps its uid; any other is created now and gets a new one. metadata.generation, "a sequence
        number representing a specific generation of the desired state" (the same page), starts at 1 and moves with
        each update that changes more than metadata and status."""
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
        if args.typ == "aws:elasticache/replicationGroup:ReplicationGroup":
            state.update(self._replication_group(args.name, state))
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
        (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html): IAM is global, so its ARNs have no
        region, and name the resource type and path (`arn:aws:iam::<account>:role/<path><name>`,
        https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-arns); a bucket's
        has neither region nor account (`arn:aws:s3:::<bucket>`,
        https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-arn-format.html); a KMS key's names its id, a UUID
        (`arn:aws:kms:<region>:<account>:key/<id>`, https://docs.aws.amazon.com/kms/latest/developerguide/
        concepts.html#key-id-key-ARN); a replication group's `replicationgroup:<id>`
        (https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/IAM.ResourceLevelPermissions.html). Other types: the
        service, region, account and resource name, which the program never parses."""
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
            group_id = state.get("replicationGroupId") or f"{name}-{ELASTICACHE_ID_SUFFIX}"
            return f"arn:aws:elasticache:{self.region}:{ACCOUNT_ID}:replicationgroup:{group_id}"
        return f"arn:aws:{service}:{self.region}:{ACCOUNT_ID}:{name}"

    def _replication_group(self, name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """What ElastiCache answers for a cluster-mode-disabled group: its id (the resource name and seven random
        letters, lower-cased, when none is given), the primary endpoint of a group with in-transit encryption,
        `master.<id>.<6 letters>.<region code>.cache.amazonaws.com` (the guide's TLS example: "connect =
        master.ssltest.wif01h.use1.cache.amazonaws.com:6379", https://docs.aws.amazon.com/AmazonElastiCache/latest/
        red-ug/in-transit-encryption.html#connect-tls; a group without TLS has `<id>.<6>.ng.0001.<code>...` instead),
        the reader endpoint beside it, a member per cache cluster (`<id>-00N`) and the engine version it chose
        (https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/Endpoints.html; pulumi-aws
        elasticache/replication_group.py outputs)."""
        group_id = inputs.get("replicationGroupId") or f"{name}-{ELASTICACHE_ID_SUFFIX}"
        country, direction, number = self.region.split("-")[0], self.region.split("-")[-2], self.region.split("-")[-1]
        code = f"{country}{COMPASS_CODES.get(direction, direction[0])}{number}"  # us-east-1: use1
        domain = f"{group_id}.{ELASTICACHE_ENDPOINT_LETTERS}.{code}.cache.amazonaws.com"
        return {
            "replicationGroupId": group_id,
            "primaryEndpointAddress": f"master.{domain}",
            "readerEndpointAddress": f"replica.{domain}",
            "memberClusters": [f"{group_id}-{n:03d}" for n in range(1, int(inputs.get("numCacheClusters") or 1) + 1)],
            "engineVersionActual": f"{inputs.get('engineVersion', '8.0')}.1",
        }


# The letters KubeRay names a RayService's clusters with: `<name>-` and five of k8s.io/apimachinery's rand.String
# (kuberay v1.4.0 ray-operator/controllers/ray/utils/util.go GenerateRayClusterName; apimachinery
# pkg/util/rand/rand.go alphanums).
CLUSTER_NAME_LETTERS = "bcdfghjklmnpqrstvwxz2456789"


# How AWS shortens a region's direction in its host names (ElastiCache endpoints: us-east-1 is use1, ap-southeast-2
# apse2).
COMPASS_CODES = {"northeast": "ne", "southeast": "se", "northwest": "nw", "southwest": "sw"}


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


def _holds_secret(value: Any) -> bool:
    if isinstance(value, dict):
        return value.get(rpc._special_sig_key) == rpc._special_secret_sig or any(map(_holds_secret, value.values()))
    return isinstance(value, list) and any(map(_holds_secret, value))


def _replace_special(value: Any, signature: str, replace: Callable[[dict[str, Any]], Any]) -> Any:
    """The value with every dict marked by the RPC `signature` (a secret, a resource reference) replaced."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == signature:
            return replace(value)
        return {k: _replace_special(v, signature, replace) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_special(v, signature, replace) for v in value]
    return value


def _reveal_secrets(value: Any) -> Any:
    """Inputs as the provider receives them; which ones were secret is kept in `secret_inputs`."""
    return _replace_special(value, rpc._special_secret_sig, lambda secret: _reveal_secrets(secret["value"]))


def _resource_references(value: Any, path: str = "") -> dict[str, str]:
    """Dotted path of every resource reference in a wire-form value (list items by index) -> its URN."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_resource_sig:
            return {path: value["urn"]}
        items: Iterable[tuple[str, Any]] = value.items()
    elif isinstance(value, list):
        items = ((str(index), item) for index, item in enumerate(value))
    else:
        return {}
    return {
        found: urn
        for key, item in items
        for found, urn in _resource_references(item, f"{path}.{key}" if path else key).items()
    }


def _replace_resource_references(value: Any) -> Any:
    """Resource references rebuilt by the stock monitor land on another event loop; keep their id/URN."""
    return _replace_special(value, rpc._special_resource_sig, lambda reference: reference.get("id") or reference["urn"])


class CapturingMonitor(mocks.MockMonitor):
    def __init__(self, mocks_: AwsMocks) -> None:
        super().__init__(mocks_)
        self.aws = mocks_
        self.captured: list[Resource] = []
        self.engine_log = EngineLog()

    def RegisterResource(self, request: Any) -> Any:
        if request.type != "pulumi:pulumi:Stack":
            wire = json_format.MessageToDict(request.object)
            plain = _replace_resource_references(wire)
            request.object.Clear()
            request.object.update(plain)
            self.captured.append(
                Resource(
                    type=request.type,
                    name=request.name,
                    urn=self.make_urn(request.parent, request.type, request.name),
                    inputs=_reveal_secrets(rpc.deserialize_properties(request.object)),
                    parent=request.parent,
                    dependencies=tuple(request.dependencies),
                    provider=request.provider,
                    custom=request.custom,
                    protect=request.protect,
                    secret_inputs=frozenset(key for key, value in plain.items() if _holds_secret(value)),
                    transforms=tuple(mocks._resolve_callbacks(request.transforms)),
                    references=_resource_references(wire),
                    plugin_version=request.version,
                    replace_on_changes=tuple(request.replaceOnChanges),
                    delete_before_replace=request.deleteBeforeReplace,
                    retain_on_delete=bool(request.retainOnDelete),
                )
            )
            self.aws.registering = (self.captured[-1].urn, tuple(request.replaceOnChanges))
        return super().RegisterResource(request)

    def Call(self, request: Any) -> Any:
        # Component methods (eks.Cluster.get_kubeconfig) are calls; the stock monitor has no Call.
        return self.Invoke(type("CallRequest", (), {"tok": request.tok, "args": request.args, "provider": ""})())


def _configure_runtime(
    overrides: Mapping[str, Any] | None,
    stack: str,
    secret_keys: tuple[str, ...],
    gpu_offering_azs: list[str] | None,
    preview: bool,
    vcpu_quota: float = DEFAULT_VCPU_QUOTA,
    caller_arn: str = DEPLOYER_ARN,
    existing_clusters: tuple[str, ...] = (),
    existing: StackRun | None = None,
) -> CapturingMonitor:
    """Points the Pulumi runtime at fresh mocks with the stack's config, as `pulumi up` would see it."""
    stack_values = stack_file(stack)
    config = {**project_config(), **stack_values.config}
    config.update({_qualified(k): cli_string(v) for k, v in (overrides or {}).items()})
    monitor = CapturingMonitor(
        AwsMocks(
            config["aws:region"],
            gpu_offering_azs,
            vcpu_quota,
            caller_arn,
            existing_clusters,
            existing_uids=existing.uids if existing else None,
        )
    )
    model_source.https_get = monitor.aws.fetch_from_hub  # no network: the model preflight asks the offline Hub
    settings.ROOT.set(None)
    pulumi.runtime.set_mocks(
        monitor.mocks, project=PROJECT, stack=stack, preview=preview, logger=monitor.engine_log.logger, monitor=monitor
    )
    pulumi.runtime.set_all_config(config, [*stack_values.secret_keys, *(_qualified(k) for k in secret_keys)])
    return monitor


def load_stack_config(
    overrides: Mapping[str, Any] | None = None, *, stack: str = "dev", secret_keys: tuple[str, ...] = ()
) -> StackConfig:
    """The validated StackConfig of a stack, without running the program (raises ConfigError)."""
    _configure_runtime(overrides, stack, secret_keys, None, preview=False)
    return load_config(describe_instance_type=node_groups.describe_instance_type)


def run_stack(
    overrides: Mapping[str, Any] | None = None,
    *,
    stack: str = "dev",
    secret_keys: tuple[str, ...] = (),
    gpu_offering_azs: list[str] | None = None,
    preview: bool = False,
    vcpu_quota: float = DEFAULT_VCPU_QUOTA,
    caller_arn: str = DEPLOYER_ARN,
    existing_clusters: tuple[str, ...] = (),
    program_file: Path = PROJECT_DIR / "__main__.py",
    existing: StackRun | None = None,
) -> StackRun:
    """Runs a Pulumi program (the project's `__main__.py`) with the given stack's config; returns what it declared.

    `vcpu_quota` is what Service Quotas answers for the GPU family's On-Demand vCPU quota, `caller_arn` what STS
    answers for the deploying identity, `existing_clusters` the EKS clusters the region already has. `existing`: the
    run whose objects the stack's state already holds (a change to a running stack); without it every object is
    created, as on a first deploy.
    """
    monitor = _configure_runtime(
        overrides, stack, secret_keys, gpu_offering_azs, preview, vcpu_quota, caller_arn, existing_clusters, existing
    )
    run = StackRun(
        resources=monitor.captured,
        offline_notes=monitor.aws.offline_notes,
        uids=monitor.aws.uids,
        messages=monitor.engine_log.messages,
    )

    async def resolve_outputs() -> None:
        stack = pulumi.runtime.get_root_resource()
        assert isinstance(stack, Stack), "the program ran outside a Pulumi stack"
        for name, value in stack.outputs.items():
            output = pulumi.Output.from_input(value)
            run.outputs[name] = await output.future()
            if await output.is_secret():
                run.secret_outputs.add(name)

    @pulumi.runtime.test
    def program() -> pulumi.Output[None]:
        runpy.run_path(str(program_file), run_name="__main__")
        return pulumi.Output.from_input(resolve_outputs())

    try:
        program()
    except Exception as error:
        # Lets a caller check what was declared before the failure (for config errors: nothing).
        error.declared_resources = list(monitor.captured)  # type: ignore[attr-defined]
        # What of the refusal came from the tables here, not from the live services.
        error.offline_notes = list(monitor.aws.offline_notes)  # type: ignore[attr-defined]
        # What the program said before it failed (its warnings among them).
        error.engine_messages = list(monitor.engine_log.messages)  # type: ignore[attr-defined]
        raise
    return run
