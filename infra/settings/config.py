"""The stack's settings: read once from Pulumi config, validated, frozen.

Every key is a row of the settings table (`infra/settings/table.py`: its type, what one value may be, default,
description, the field it feeds, what a change does), from which `Pulumi.yaml` declares it; this module is the
only reader of `pulumi.Config`. It reads every row, then applies the rules that relate several keys, each a named
function beside the field it protects. All problems are reported together, each naming the key, the value and
what is allowed, and `load_config` raises before the program declares any resource.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pulumi
from pulumi.runtime.config import CONFIG, get_config_env, is_config_secret

from infra.kube.namespaces import CREATED_NAMESPACES
from infra.kube.scheduling import OPERATOR_NAMESPACE, SYSTEM_NODEGROUP_NAME
from infra.settings.config_keys import provider_value_problems, unknown_key_problems
from infra.settings.footprint import system_node_load, system_node_problem
from infra.settings.instance_types import (
    NODE_ARCHITECTURE,
    InstanceShape,
    architecture_reason,
    gpu_node_type_problem,
    resolve_kv_buffer_device,
)
from infra.settings.kv_offload import node_memory_problem, prefix_caching_problem
from infra.settings.model_sources import model_source_problem
from infra.settings.models import (
    AGGREGATED,
    OWN_NODES,
    ModelSpec,
    adapter_bucket_problems,
    model_layout_problems,
    one_way_problems,
    parse_models,
    pd_model_values,
    stack_models,
)
from infra.settings.prefix_caching import engine_prefix_caching, prefix_routing_problem, routes_by_prefix
from infra.settings.quantization import fp8_problems
from infra.settings.regions import (
    DEFAULT_IMAGE_RAY_VERSION,
    SUPPORTED_DNS_SUFFIX,
    SUPPORTED_PARTITION,
    default_dlc_image,
    region_partition,
    region_problem,
)
from infra.settings.table import (
    AMP_WORKSPACE_PATTERN,
    API_ALLOW_LIST_COMMAND,
    CACHE_NODE_TYPE_PATTERN,
    CERTIFICATE_ARN_PATTERN,
    CHECKIP,
    ELASTICACHE_NODE_TYPES,
    GCS_REDIS,
    INSTANCE_TYPE_PATTERN,
    KUBERAY_AUTH_OPTIONS_SINCE,
    KUBERAY_DELETION_DELAY_SINCE,
    KUBERAY_GCS_FT_OPTIONS_SINCE,
    KUBERNETES_VERSION_PATTERN,
    MAINTENANCE_WINDOW_ALLOWED,
    MAINTENANCE_WINDOW_PATTERN,
    MAX_MODEL_LEN,
    MAX_NODES_PER_NODE_GROUP,
    MIN_MAINTENANCE_WINDOW_MINUTES,
    NEW_CLUSTER,
    NOT_ON_THE_INTERNET,
    PROJECT_KEYS,
    RAY_TOKEN_AUTH_SINCE,
    SEMVER_PATTERN,
    SETTINGS,
    SETTINGS_BY_KEY,
    SNS_TOPIC_ARN_PATTERN,
    VALIDATED_KUBERAY_VERSIONS,
    Boolean,
    Choice,
    Integer,
    ProviderValue,
    Secret,
    Setting,
    StringList,
    Text,
    client_cidr,
    internet_client_cidr,
    ipv4_network,
    maintenance_window_minutes,
)
from infra.settings.topology import Topology, node_count_problem, topology_problems

REGION_PATTERN = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d\Z")
MIN_KUBERNETES_MINOR = 29

# Keys whose value is a credential (their rows' kind): the only ones a stack file may hold encrypted (`secure:`).
SECRET_SETTINGS = frozenset(setting.key for setting in SETTINGS if isinstance(setting.kind, Secret))
# The serve endpoint's API keys: one secret setting whose value is a JSON list, so that several keys can be
# valid at once while one is rotated (`pulumi config set --secret serveApiKeys '["<new>", "<old>"]'`).
API_KEYS_SETTING = "serveApiKeys"
# A key travels in an HTTP header and sits on a line of the keys file: printable ASCII, no space; long enough
# that guessing is hopeless (`openssl rand -hex 32` makes 64 characters).
API_KEY_PATTERN = re.compile(r"^[\x21-\x7e]{32,256}\Z")
API_KEY_COMMAND = 'pulumi config set --secret serveApiKeys "[\\"$(openssl rand -hex 32)\\"]"'
# The alert receivers' credentials, checked for their form without being shown: (pattern, what is allowed, the
# placeholder of the `--secret` command). A Slack incoming webhook is an https:// URL
# (https://api.slack.com/messaging/webhooks); PagerDuty's Events API v2 routing_key is "the 32 character Integration
# Key" (https://developer.pagerduty.com/docs/events-api-v2/trigger-events/).
RECEIVER_SECRETS: Mapping[str, tuple[re.Pattern[str], str, str]] = {
    "alertSlackWebhookUrl": (
        re.compile(r"^https://[^\s/]+/\S*\Z"),
        "an https:// URL such as https://hooks.slack.com/services/T0000/B0000/XXXXXXXX",
        "url",
    ),
    "alertPagerDutyRoutingKey": (
        re.compile(r"^[A-Za-z0-9]{32}\Z"),
        "the 32 letters and digits of a PagerDuty Events API v2 integration key",
        "key",
    ),
}
RECEIVER_SETTINGS = ("alertSnsTopicArn", *RECEIVER_SECRETS)

# The Kubernetes minor each known cluster-autoscaler chart's Cluster Autoscaler is built for (the chart's
# appVersion: 9.59.0 runs 1.35.0). Upstream tests a Cluster Autoscaler only on the Kubernetes minor it was
# meant for, "there is always a chance that it won't work as expected" on another (kubernetes/autoscaler
# cluster-autoscaler/README.md, Releases). Another chart version is the user's word.
CLUSTER_AUTOSCALER_KUBERNETES_MINOR = {"9.59.0": "1.35"}

# IPv4 blocks no VPC can use: not unicast, or reserved for the host itself (RFC 6890), or, for
# 172.17.0.0/16, a range the VPC user guide says not to use because Docker and AWS services take it
# (https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html).
NON_VPC_RANGES = {
    "0.0.0.0/8": "'this network' (RFC 1122)",
    "127.0.0.0/8": "loopback",
    "169.254.0.0/16": "link-local, where the instance metadata service lives",
    "172.17.0.0/16": "used by Docker and some AWS services; the VPC user guide says not to use it",
    "224.0.0.0/4": "multicast",
    "240.0.0.0/4": "reserved (RFC 1112)",
}
# EKS quota "Public endpoint access CIDR ranges per cluster": 40, not adjustable
# (https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html).
MAX_API_PUBLIC_ACCESS_CIDRS = 40
# The same for the offline render, which reads the stack file without the Pulumi CLI.
OFFLINE_ALLOW_LIST_OPTION = f'--config "apiPublicAccessCidrs=[\\"{CHECKIP}/32\\"]"'

T = TypeVar("T")


@dataclass(frozen=True)
class ModelFacts:
    """What the project measured of a model it ships as a default (lab/records/gpu-end-to-end.md)."""

    hybrid: bool  # layers with Mamba-type state (Qwen3.5's Gated DeltaNet), which vLLM 0.26's NIXL cannot stage on CPU
    text_weights_gib: float  # vLLM's "Model loading took ... GiB" with languageModelOnly
    vision_weights_gib: float  # the same with the vision tower
    # The most GPU memory per replica on which the vision tower left vLLM no KV cache (an L4, 22888 MiB).
    vision_does_not_fit_mib: int


# The default modelSource, measured at its full dimensions on an L4's share of an H200 (lab/records/gpu-end-to-end.md,
# sessions B and C): weights 17.66 GiB with the vision tower ("Available KV cache memory: -0.07 GiB"), 16.80 GiB
# text only; its Gated DeltaNet layers make it hybrid.
KNOWN_MODELS = {"Qwen/Qwen3.5-9B": ModelFacts(True, 16.80, 17.66, 22888)}


def model_hybrid(model_source: str) -> bool | None:
    """Whether the model has Mamba-type state, where the project knows the model; None otherwise."""
    facts = KNOWN_MODELS.get(model_source)
    return None if facts is None else facts.hybrid


class ConfigError(ValueError):
    """One or more stack-config values are invalid; the message lists every one of them."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("Invalid stack configuration:\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass(frozen=True)
class ServeSide:
    """One side of the prefill/decode pair: how many replicas, and vLLM settings it alone overrides."""

    replicas: int  # the minimum when Ray Serve autoscales the side
    # None leaves vLLM's own default.
    max_num_seqs: int | None
    max_num_batched_tokens: int | None
    # vLLM `quantization` of the weights: None (the checkpoint's own) or "fp8" (online FP8,
    # infra/settings/quantization.py).
    quantization: str | None = None
    # Ray Serve autoscaling (serveAutoscaling): up to max_replicas, aiming at target_ongoing_requests each.
    max_replicas: int | None = None
    target_ongoing_requests: int | None = None
    # vLLM `enable_prefix_caching` (infra/settings/prefix_caching.py); None leaves vLLM's default.
    prefix_caching: bool | None = None
    # Whether the side's callers route to it by prefix (prefixAwareRouting where it can do something).
    prefix_routing: bool = False
    # GiB of pinned host memory each engine of the side keeps KV blocks in (infra/settings/kv_offload.py); 0: none.
    kv_offload_gib: int = 0

    @property
    def most_replicas(self) -> int:
        return self.max_replicas or self.replicas


@dataclass(frozen=True)
class StackConfig:
    project: str
    stack: str
    region: str
    # network
    vpc_cidr: str
    max_azs: int
    nat_gateway_per_az: bool
    # cluster
    cluster_name: str
    kubernetes_version: str
    api_public_access_cidrs: tuple[str, ...]
    admin_principal_arns: tuple[str, ...]
    control_plane_logging: bool
    secrets_encryption: bool
    # Pinned EKS add-on builds; None takes the default build of kubernetes_version (infra/preflight/offerings.py).
    vpc_cni_version: str | None
    coredns_version: str | None
    kube_proxy_version: str | None
    system_node_type: str
    system_node_count: int
    # GPU nodes
    gpu_node_type: str
    gpu_nodegroup_name: str
    gpu_az: str | None
    gpu_root_volume_gib: int
    capacity_reservation_id: str | None
    gpu_capacity_type: str
    quota_preflight: bool
    nvidia_device_plugin_version: str
    efa_device_plugin_version: str
    # serving
    dlc_image: str
    kuberay_version: str
    # How a cluster-spec change reaches a running stack: "replace" or "newCluster" (KubeRay's NewCluster upgrade).
    cluster_upgrade_strategy: str
    ray_version: str
    ray_service_name: str
    namespace: str
    # The PD model: modelId/modelSource, or the `models` list's pd entry.
    model_id: str
    model_source: str
    max_model_len: int
    language_model_only: bool  # vLLM language_model_only: no vision tower, no image inputs
    # Every model behind the endpoint (infra/settings/models.py), the PD one first.
    models: tuple[ModelSpec, ...]
    prefill: ServeSide
    decode: ServeSide
    topology: Topology
    serve_autoscaling: bool
    cluster_autoscaler_version: str
    kv_buffer_device: str  # "cuda" or "cpu": kvBufferDevice with "auto" resolved for gpuNodeType
    # vLLM `kv_cache_dtype` of both sides ("auto": the model dtype); NIXL needs it the same on both.
    kv_cache_dtype: str
    hf_token: pulumi.Output[str] | None
    # The same token in plain text, for the model preflight's request only; never printed.
    hf_token_value: str | None = field(repr=False)
    # Ray's token authentication (rayAuthMode with "auto" resolved for kuberayVersion): authOptions on the RayCluster.
    ray_token_auth: bool
    # GCS fault tolerance of the Ray head: "redis" (the stack's ElastiCache store, infra/serving/gcs_store.py) or "off".
    head_fault_tolerance: str
    gcs_redis_node_type: str
    gcs_redis_maintenance_window: str  # ElastiCache's weekly window, ddd:hh24:mi-ddd:hh24:mi in UTC
    serve_exposure: str
    serve_source_cidrs: tuple[str, ...]
    # API keys on the serve endpoint: on whenever it is exposed (serveApiKeyAuth, default true).
    serve_api_key_auth: bool
    # The keys as one Pulumi secret (the Kubernetes Secret's file, one key a line) and the first key, for the
    # `serveApiKey` output; None when auth is off.
    serve_api_keys: pulumi.Output[list[str]] | None
    serve_certificate_arn: str | None
    serve_ready_timeout_minutes: int
    # The edge's body limit (infra/serving/edge.py).
    serve_max_request_mib: int
    # Check the model source before the RayService changes (infra/serving/model_source.py).
    model_preflight: bool
    # The stack's S3 model cache (infra/serving/model_cache.py): mirror a Hub modelSource into it; keep it on destroy.
    model_cache: bool
    model_cache_retain_on_destroy: bool
    # observability (infra/observability/monitoring.py)
    observability: bool
    kube_prometheus_stack_version: str
    dcgm_exporter_version: str
    ttft_p99_objective_ms: int
    amp_workspace_url: str | None
    # Where the alerts go (infra/observability/receivers.py): an SNS topic, a Slack webhook, a PagerDuty key (the two
    # as Pulumi secrets); and where the runbook opens.
    alert_sns_topic_arn: str | None
    alert_slack_webhook_url: pulumi.Output[str] | None
    alert_pagerduty_routing_key: pulumi.Output[str] | None
    runbook_url: str | None
    # governance
    owner: str
    cost_center: str
    protect_resources: bool
    # Every setting as it was read, by key (secrets only as set or not): what `infra.settings.changes` groups.
    settings: Mapping[str, str]

    @property
    def prefix_routing(self) -> bool:
        """Some side routes by prefix: the pods load the router's code."""
        return self.prefill.prefix_routing or self.decode.prefix_routing

    @property
    def model_hybrid(self) -> bool | None:
        return model_hybrid(self.model_source)

    @property
    def aggregated_models(self) -> tuple[ModelSpec, ...]:
        """The models served by an engine each, beside the PD pair."""
        return tuple(model for model in self.models if model.serving == AGGREGATED)

    @property
    def gpu_node_count(self) -> int:
        """Derived from the prefill/decode layout (gpuNodeCount may only confirm it)."""
        return self.topology.gpu_nodes

    @property
    def gcs_redis(self) -> bool:
        """The head keeps the cluster's tables in the stack's Redis (KubeRay's gcsFaultToleranceOptions)."""
        return self.head_fault_tolerance == GCS_REDIS

    @property
    def new_cluster(self) -> bool:
        """A cluster-spec change builds a second RayCluster beside the active one (KubeRay's NewCluster upgrade)."""
        return self.cluster_upgrade_strategy == NEW_CLUSTER

    @property
    def surge_gpu_nodes(self) -> int:
        """The GPU nodes a newCluster upgrade adds beside the active cluster: the new cluster's worker group starts
        with its replicas (the layout's GPU nodes); none with replace."""
        return self.topology.gpu_nodes if self.new_cluster else 0

    @property
    def gpu_node_group_max(self) -> int:
        """The most GPU nodes the group may run: the most Ray Serve may scale to, and the surge of an upgrade."""
        return self.topology.most_gpu_nodes + self.surge_gpu_nodes

    @property
    def cluster_autoscaler(self) -> bool:
        """Whether GPU nodes come and go (installing the Cluster Autoscaler): Serve autoscaling or the surge."""
        return self.serve_autoscaling or self.new_cluster

    @property
    def tags(self) -> dict[str, str]:
        """Tags for every AWS resource: what it belongs to, and who pays for it when set."""
        tags = {"project": self.project, "stack": self.stack, "managed-by": "pulumi"}
        if self.owner:
            tags["owner"] = self.owner
        if self.cost_center:
            tags["cost-center"] = self.cost_center
        return tags


class _Reader:
    """Reads each row of the settings table and records every problem instead of stopping at the first."""

    def __init__(self, config: pulumi.Config, aws_config: pulumi.Config) -> None:
        self.config = config
        self.aws_config = aws_config
        self.problems: list[str] = []
        # What each key was set to, as read (a secret only as set or not): what a change is judged on.
        self.values: dict[str, str] = {}

    def read(self, setting: Setting) -> Any:
        """The value of one key in the type its row gives, or a fallback of that type with the problem recorded."""
        key, kind = setting.key, setting.kind
        if isinstance(kind, ProviderValue):
            namespace, _, name = key.partition(":")
            assert namespace == "aws", key
            value = self.aws_config.get(name) or ""
            self.values[key] = value
            return value
        if isinstance(kind, Secret):
            return self.plain(key)
        raw = self._raw(key)
        if isinstance(kind, Text):
            return self.text(key, raw, kind)
        if isinstance(kind, Integer):
            return self.integer(key, raw, kind)
        if isinstance(kind, Boolean):
            return self._check(key, raw, _boolean, "true or false", False)
        if isinstance(kind, Choice):
            if raw not in kind.options:
                self.problems.append(f"{key}={raw!r} is invalid: allowed is one of {', '.join(kind.options)}")
            return raw
        return self.string_list(key, raw or "[]", kind)

    def plain(self, key: str) -> str | None:
        value = self.config.get(key)
        self.values[key] = ("[secret]" if value else "") if key in SECRET_SETTINGS else (value or "")
        return value

    def _raw(self, key: str) -> str:
        value = self.plain(key)
        if value is None:
            self.problems.append(f"{key} is not set; Pulumi.yaml declares its default, so the project file was changed")
            return ""
        return value

    def _check(self, key: str, raw: str, parse: Callable[[str], T], allowed: str, fallback: T) -> T:
        try:
            return parse(raw)
        except ValueError:
            self.problems.append(f"{key}={raw!r} is invalid: allowed is {allowed}")
            return fallback

    def text(self, key: str, raw: str, kind: Text) -> str | None:
        if kind.optional and not raw:
            return None
        if kind.pattern is not None and not kind.pattern.fullmatch(raw):
            or_empty = " (or empty)" if kind.optional else ""
            self.problems.append(f"{key}={raw!r} is invalid: allowed is {kind.allowed}{or_empty}")
        return raw

    def integer(self, key: str, raw: str, kind: Integer) -> int:
        bounds = f">= {kind.minimum}" if kind.maximum is None else f"from {kind.minimum} to {kind.maximum}"

        def parse(text: str) -> int:
            value = int(text)
            if value < kind.minimum or (kind.maximum is not None and value > kind.maximum):
                raise ValueError(text)
            return value

        return self._check(key, raw, parse, f"an integer {bounds}{kind.why}{_octal_hint(key, raw)}", kind.minimum)

    def string_list(self, key: str, raw: str, kind: StringList) -> tuple[str, ...]:
        """A JSON list of strings, each checked by the row's `item` (its ValueError says why one is wrong) and given
        in the normal form `item` returns; a problem names the item by its index, and so does a repeated one."""
        values = json_string_list(raw)
        if values is None:
            self.problems.append(f"{key}={raw!r} is invalid: allowed is a JSON list of {kind.allowed}")
            return ()
        first_index: dict[str, int] = {}
        for index, value in enumerate(values):
            try:
                normal = kind.item(value)
            except ValueError as error:
                self.problems.append(f"{key}[{index}]={value!r} is invalid ({error}): allowed is {kind.allowed}")
                continue
            if normal in first_index:
                self.problems.append(
                    f"{key}[{index}]={value!r} is invalid: it repeats {key}[{first_index[normal]}]; "
                    "allowed is each value once"
                )
                continue
            first_index[normal] = index
        return tuple(first_index)


def _octal_hint(key: str, raw: str) -> str:
    """Said where an integer is refused, for a plain-decimal one (so out of bounds) of 8 or more: how the number may
    have come from the stack file: the Pulumi CLI decodes it with go-yaml v3, whose resolver reads a plain scalar with
    Go's strconv.ParseInt(text, 0, 64) (go-yaml/yaml v3 resolve.go), so an unquoted leading 0 is octal, as in YAML 1.1
    (`maxAzs: 010` arrives as '8'); tools/stack_yaml.py reads it so."""
    if not CANONICAL_INTEGER.fullmatch(raw) or int(raw) < 8:
        return ""
    octal = format(int(raw), "o")
    return (
        f"; if the stack file says `{key}: 0{octal}`, the Pulumi CLI read that as octal {raw} (a leading 0 is octal "
        f"in its YAML reader, as in YAML 1.1): write {int(octal)} without the 0"
    )


def json_string_list(raw: str) -> list[str] | None:
    """A list value as the CLI stores it (JSON), or None when it is not a JSON list of strings."""
    try:
        values = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        return None
    return values


def _boolean(text: str) -> bool:
    if text not in ("true", "false"):
        raise ValueError(text)
    return text == "true"


def _vpc_cidr_problem(value: str) -> str | None:
    allowed = (
        "an IPv4 network address with a /16 to /20 prefix and no host bits set, in RFC 1918 private space "
        "(10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16) or another unicast range"
    )
    try:
        network = ipv4_network(value)
    except ValueError as error:
        return f"vpcCidr={value!r} is invalid ({error}): allowed is {allowed}"
    if not 16 <= network.prefixlen <= 20:
        return f"vpcCidr={value!r} is invalid: allowed is {allowed}"
    for block, why in NON_VPC_RANGES.items():
        if network.overlaps(ipaddress.IPv4Network(block)):
            return f"vpcCidr={value!r} is invalid: it overlaps {block}, {why}; allowed is {allowed}"
    return None


def _maintenance_window_problem(value: str | None) -> str | None:
    """A window of the right form that is shorter than ElastiCache's minimum (the form is the row's pattern)."""
    if not value or not MAINTENANCE_WINDOW_PATTERN.fullmatch(value):
        return None
    minutes = maintenance_window_minutes(value)
    if minutes >= MIN_MAINTENANCE_WINDOW_MINUTES:
        return None
    return (
        f"gcsRedisMaintenanceWindow={value!r} is invalid: it lasts {minutes} minutes; allowed is "
        f"{MAINTENANCE_WINDOW_ALLOWED}"
    )


def _subtract(blocks: list[ipaddress.IPv4Network], cidr: ipaddress.IPv4Network) -> list[ipaddress.IPv4Network]:
    rest: list[ipaddress.IPv4Network] = []
    for block in blocks:
        if not block.overlaps(cidr):
            rest.append(block)
        elif not block.subnet_of(cidr):
            rest.extend(block.address_exclude(cidr))
    return rest


def covers_the_internet(cidrs: tuple[str, ...]) -> bool:
    """Whether every globally reachable IPv4 address is inside one of `cidrs` (0.0.0.0/1 + 128.0.0.0/1 is)."""
    uncovered = [ipaddress.IPv4Network("0.0.0.0/0")]
    for block in (*NOT_ON_THE_INTERNET, *(ipaddress.IPv4Network(c) for c in cidrs)):
        uncovered = _subtract(uncovered, block)
    return not uncovered


def _cache_node_type_problem(node_type: str) -> str | None:
    """A well-formed node type ElastiCache has no current generation of (the row's pattern reports a malformed one):
    CreateReplicationGroup would refuse it after the VPC and cluster exist."""
    if not CACHE_NODE_TYPE_PATTERN.fullmatch(node_type) or node_type in ELASTICACHE_NODE_TYPES:
        return None
    families = sorted({name.split(".")[1] for name in ELASTICACHE_NODE_TYPES})
    return (
        f"gcsRedisNodeType={node_type!r} is invalid: it is not among the current-generation ElastiCache node types of "
        "the stack's table (infra/settings/table.py ELASTICACHE_NODE_TYPES, from ElastiCache's API reference; no "
        f"lookup lists them); allowed is a type of family {', '.join(families)} in the sizes ElastiCache lists "
        "(https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/CacheNodes.SupportedTypes.html), e.g. "
        "cache.t4g.micro"
    )


def _kubernetes_version_problem(value: str) -> str | None:
    match = KUBERNETES_VERSION_PATTERN.match(value)
    if match and int(match.group(1)) >= MIN_KUBERNETES_MINOR:
        return None
    return (
        f"kubernetesVersion={value!r} is invalid: allowed is MAJOR.MINOR, 1.{MIN_KUBERNETES_MINOR} or newer (e.g. 1.35)"
    )


def _kube_proxy_version_problem(kube_proxy_version: str | None, kubernetes_version: str) -> str | None:
    """EKS publishes one kube-proxy add-on line per Kubernetes version; another minor is refused."""
    proxy = re.match(r"^v(\d+\.\d+)\.", kube_proxy_version or "")
    if (
        proxy is None
        or not KUBERNETES_VERSION_PATTERN.match(kubernetes_version)
        or proxy.group(1) == kubernetes_version
    ):
        return None
    return (
        f"kubeProxyVersion={kube_proxy_version!r} is invalid: kube-proxy must match kubernetesVersion "
        f"{kubernetes_version}; allowed is a v{kubernetes_version}.x-eksbuild.N version "
        f"(aws eks describe-addon-versions --addon-name kube-proxy --kubernetes-version {kubernetes_version})"
    )


def _gpu_az_problem(gpu_az: str | None, region: str) -> str | None:
    if gpu_az is None or not REGION_PATTERN.match(region):
        return None
    if re.fullmatch(re.escape(region) + r"[a-z]", gpu_az):
        return None
    return (
        f"gpuAz={gpu_az!r} is invalid: it is not an Availability Zone of region {region!r} (e.g. {region}a), or empty"
    )


def _plain_secret_problem(config: pulumi.Config, key: str, value: str | None, placeholder: str) -> str | None:
    if not value or is_config_secret(config.full_key(key)):
        return None
    return f"{key} is set in plain text: set it with `pulumi config set --secret {key} <{placeholder}>`"


def _receiver_secret_problems(config: pulumi.Config, values: Mapping[str, Any]) -> list[str | None]:
    """Each receiver credential set as a secret, in its form; the value is never shown."""
    problems: list[str | None] = []
    for key, (pattern, allowed, placeholder) in RECEIVER_SECRETS.items():
        value = values[key]
        plain = _plain_secret_problem(config, key, value, placeholder)
        if plain or not value:
            problems.append(plain)
        elif not pattern.fullmatch(value):
            problems.append(f"{key} is invalid (the value is a secret, not shown): allowed is {allowed}")
    return problems


def _receiver_partition_problems(values: Mapping[str, Any]) -> list[str]:
    """The SNS topic and the AMP workspace must be in the stack's partition: credentials and ARNs of one partition are
    not valid in another (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html, "partition"), so the
    IRSA role could not be granted the topic nor sign for the workspace. Another region of the partition is allowed:
    the stack signs each request for the topic's or the workspace's own region (infra/observability)."""
    places = []
    topic = SNS_TOPIC_ARN_PATTERN.fullmatch(values["alertSnsTopicArn"] or "")
    if topic:
        # arn:<partition>:sns:<region>:<account>:<name> (https://docs.aws.amazon.com/sns/latest/api/API_CreateTopic.html)
        partition = values["alertSnsTopicArn"].split(":")[1]
        places.append(("alertSnsTopicArn", partition, topic.group("region"), f"arn:{SUPPORTED_PARTITION}:sns:<region>"))
    workspace = AMP_WORKSPACE_PATTERN.fullmatch(values["ampWorkspaceUrl"] or "")
    if workspace:
        # https://aps-workspaces.<region>.<DNS suffix>/workspaces/ws-<id>/, the partition's DNS suffix
        # (https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-onboard-ingest-metrics-remote-write.html).
        partition = "aws-cn" if workspace.group(3) else SUPPORTED_PARTITION
        places.append(
            (
                "ampWorkspaceUrl",
                partition,
                workspace.group(1),
                f"https://aps-workspaces.<region>.{SUPPORTED_DNS_SUFFIX}",
            )
        )
    problems = []
    for key, partition, region, form in places:
        region_in = region_partition(region)
        if partition == SUPPORTED_PARTITION and region_in == SUPPORTED_PARTITION:
            continue
        where = (
            f"partition {partition!r}"
            if partition != SUPPORTED_PARTITION
            else f"region {region!r}, a region of partition {region_in}"
        )
        problems.append(
            f"{key}={values[key]!r} is invalid: it is in {where}, and the stack deploys into partition "
            f"{SUPPORTED_PARTITION!r}, whose credentials are not valid there; allowed is {form} in a region of "
            f"partition {SUPPORTED_PARTITION!r}"
        )
    return problems


def _api_keys(read: _Reader, config: pulumi.Config, raw: str | None) -> tuple[str, ...]:
    """The serve endpoint's keys, each checked without ever being shown: a problem names a key by its index."""
    if not raw:
        return ()
    if not is_config_secret(config.full_key(API_KEYS_SETTING)):
        read.problems.append(
            f"{API_KEYS_SETTING} is set in plain text: set it with `{API_KEY_COMMAND}` (a JSON list of keys)"
        )
        return ()
    keys = json_string_list(raw)
    if keys is None:
        read.problems.append(f"{API_KEYS_SETTING} is invalid: allowed is a JSON list of keys, e.g. `{API_KEY_COMMAND}`")
        return ()
    for index, key in enumerate(keys):
        if not API_KEY_PATTERN.fullmatch(key):
            read.problems.append(
                f"{API_KEYS_SETTING}[{index}] is invalid: allowed is 32 to 256 printable ASCII characters without "
                "spaces (`openssl rand -hex 32`)"
            )
        elif key in keys[:index]:
            read.problems.append(
                f"{API_KEYS_SETTING}[{index}] is invalid: it repeats {API_KEYS_SETTING}[{keys.index(key)}]; "
                "allowed is each key once"
            )
    return tuple(keys)


def _serve_auth_problems(cfg: StackConfig, keys: tuple[str, ...]) -> list[str]:
    """An endpoint that leaves the cluster takes only HTTPS and, unless switched off on an internal one, a key."""
    if cfg.serve_exposure == "none":
        return []
    problems = []
    if cfg.serve_certificate_arn is None:
        problems.append(
            f"serveExposure={cfg.serve_exposure!r} needs serveCertificateArn: the load balancer serves HTTPS only; "
            "allowed is the ARN of an ACM certificate in the stack's region for the DNS name clients use "
            "(`aws acm request-certificate --domain-name <name> --validation-method DNS`)"
        )
    else:
        match = CERTIFICATE_ARN_PATTERN.fullmatch(cfg.serve_certificate_arn)
        if match and cfg.region and match.group("region") != cfg.region:
            problems.append(
                f"serveCertificateArn={cfg.serve_certificate_arn!r} is invalid: it is in {match.group('region')}, "
                f"and a load balancer takes only a certificate of its own region; allowed is an ACM certificate "
                f"in {cfg.region}"
            )
    if not cfg.serve_api_key_auth:
        if cfg.serve_exposure == "internet-facing":
            problems.append(
                "serveApiKeyAuth=false is invalid with serveExposure='internet-facing': an endpoint on the internet "
                "must ask for a key; allowed is true (or serveExposure internal)"
            )
    elif not keys:
        problems.append(
            f"serveExposure={cfg.serve_exposure!r} needs serveApiKeys (serveApiKeyAuth is true): set at least one "
            f"key with `{API_KEY_COMMAND}`"
        )
    return problems


def _serve_side(values: Mapping[str, Any], problems: list[str], side: str, autoscaling: bool) -> ServeSide:
    """One side's settings; the autoscaling keys must agree with serveAutoscaling."""
    replicas = values[f"{side}Replicas"]
    max_key, target_key = f"{side}MaxReplicas", f"{side}TargetOngoingRequests"
    max_replicas, target = values[max_key], values[target_key]
    if autoscaling and max_replicas < replicas:
        problems.append(
            f"{max_key}={max_replicas} is invalid with serveAutoscaling=true: allowed is at least "
            f"{side}Replicas={replicas} (the fewest replicas Ray Serve keeps)"
        )
    if autoscaling and not target:
        # Ray Serve LLM's own default target is 1e9 requests per replica, which never scales up
        # (ray/llm/_internal/serve/constants.py DEFAULT_MAX_TARGET_ONGOING_REQUESTS).
        problems.append(
            f"{target_key}=0 is invalid with serveAutoscaling=true: allowed is an integer >= 1, the ongoing "
            "requests per replica Ray Serve scales toward (Ray Serve LLM's default of 1e9 would never scale up)"
        )
    if not autoscaling and (max_replicas or target):
        problems.append(
            f"{max_key}={max_replicas}, {target_key}={target} are invalid with serveAutoscaling=false: allowed is 0 "
            "(set serveAutoscaling to true to let Ray Serve scale the side)"
        )
    batch_problem = _batched_tokens_problem(side, values[f"{side}MaxNumSeqs"], values[f"{side}MaxNumBatchedTokens"])
    if batch_problem:
        problems.append(batch_problem)
    quantization = values[f"{side}Quantization"]
    prefix_caching = engine_prefix_caching(values["prefixCaching"], side, model_hybrid(values["modelSource"]))
    most_replicas = max_replicas if autoscaling else replicas
    return ServeSide(
        replicas=replicas,
        max_num_seqs=values[f"{side}MaxNumSeqs"] or None,
        max_num_batched_tokens=values[f"{side}MaxNumBatchedTokens"] or None,
        quantization=None if quantization == "none" else quantization,
        max_replicas=max_replicas if autoscaling else None,
        target_ongoing_requests=target if autoscaling else None,
        prefix_caching=prefix_caching,
        prefix_routing=routes_by_prefix(values["prefixAwareRouting"], prefix_caching, most_replicas),
        kv_offload_gib=values[f"{side}KvOffloadGiB"],
    )


def _batched_tokens_problem(side: str, max_num_seqs: int, max_num_batched_tokens: int) -> str | None:
    """vLLM 0.26 refuses to start an engine whose max_num_batched_tokens is below its max_num_seqs
    (`vllm/config/scheduler.py` `SchedulerConfig.verify_max_model_len`: "max_num_batched_tokens (...) must be greater
    than or equal to max_num_seqs"). With max_num_batched_tokens set and max_num_seqs left to vLLM (0), EngineArgs
    caps the default max_num_seqs at it (`vllm/engine/arg_utils.py`,
    `_set_default_max_num_seqs_and_batched_tokens_args`); the other way round, its default batch, the smaller of
    max_num_seqs x max_model_len and 2048 tokens or more (by GPU memory and usage context), holds any max_num_seqs up
    to 2048; one above that is not checked here. The same method refuses max_num_batched_tokens below max_model_len
    only with chunked prefill off, which the stack never sets and vLLM turns on by default for every model that
    supports it (`_set_default_chunked_prefill_and_prefix_caching_args`)."""
    if not max_num_seqs or not max_num_batched_tokens or max_num_batched_tokens >= max_num_seqs:
        return None
    return (
        f"{side}MaxNumBatchedTokens={max_num_batched_tokens} is invalid with {side}MaxNumSeqs={max_num_seqs}: vLLM "
        "refuses to start an engine that batches fewer tokens than sequences (vllm/config/scheduler.py); allowed is "
        f"at least {max_num_seqs}, or 0 for vLLM's default"
    )


def _topology(
    values: Mapping[str, Any],
    problems: list[str],
    shape: InstanceShape | None,
    prefill: ServeSide,
    decode: ServeSide,
    models: tuple[ModelSpec, ...] = (),
) -> Topology | None:
    """The layout on GPU nodes; its problems (and a gpuNodeCount that disagrees) are recorded."""
    # A gpuNodeType unfit for the GPU nodes is reported on its own; the layout cannot be checked against it.
    if shape is None:
        return None
    topology = Topology(
        prefill.replicas,
        decode.replicas,
        values["tensorParallelSize"],
        values["pipelineParallelSize"],
        shape,
        most_replicas=prefill.most_replicas + decode.most_replicas,
        model_gpus=sum(model.gpus for model in models if model.serving == AGGREGATED and model.placement == OWN_NODES),
    )
    layout_problems = topology_problems(topology) + model_layout_problems(topology, models)
    problems.extend(layout_problems)
    if not layout_problems:
        problem = node_count_problem(values["gpuNodeCount"], topology)
        if problem:
            problems.append(problem)
        if topology.most_gpu_nodes > MAX_NODES_PER_NODE_GROUP:
            problems.append(
                f"prefill/decode replicas need up to {topology.most_gpu_nodes} GPU nodes ({topology.arithmetic}, "
                f"at most {topology.peak_replicas} replicas): EKS allows {MAX_NODES_PER_NODE_GROUP} per node group; "
                "lower prefillReplicas/decodeReplicas (or their MaxReplicas), or use a gpuNodeType with more GPUs"
            )
    return topology


def _encrypted_setting_problems(config: pulumi.Config) -> list[str]:
    """A secret value where no secret belongs hides a setting from review and from `pulumi preview`."""
    return [
        f"{key} is stored encrypted (secure:) but is not a secret setting: set it in plain text with "
        f"`pulumi config set {key} <value>` (only {', '.join(sorted(SECRET_SETTINGS))} may be secret)"
        for key in sorted(PROJECT_KEYS)
        if key not in SECRET_SETTINGS and is_config_secret(config.full_key(key))
    ]


def _every_setting() -> dict[str, str]:
    """Every key the stack sets with its value (secrets hidden): the CLI hands them over as PULUMI_CONFIG,
    mocks and automation set them in-process."""
    settings = {**get_config_env(), **CONFIG.get()}
    return {key: "[secret]" if is_config_secret(key) else str(value) for key, value in settings.items()}


def _latest_image_problem(dlc_image: str | None) -> str | None:
    if dlc_image and dlc_image.endswith(":latest"):
        return f"dlcImage={dlc_image!r} is invalid: 'latest' is not a pinned tag"
    return None


def _ray_version_problem(ray_version: str, custom_image: bool) -> str | None:
    if custom_image or ray_version == DEFAULT_IMAGE_RAY_VERSION:
        return None
    return (
        f"rayVersion={ray_version!r} is invalid: the default image runs Ray {DEFAULT_IMAGE_RAY_VERSION}, "
        f"so allowed is {DEFAULT_IMAGE_RAY_VERSION} (or set dlcImage to an image that runs Ray {ray_version})"
    )


def _cluster_autoscaler_problem(cfg: StackConfig) -> str | None:
    chart_version, kubernetes_version = cfg.cluster_autoscaler_version, cfg.kubernetes_version
    built_for = CLUSTER_AUTOSCALER_KUBERNETES_MINOR.get(chart_version)
    if not cfg.cluster_autoscaler or built_for in (None, kubernetes_version):
        return None
    why = "serveAutoscaling=true" if cfg.serve_autoscaling else f"clusterUpgradeStrategy={NEW_CLUSTER!r}"
    return (
        f"kubernetesVersion={kubernetes_version!r} is invalid with {why}: clusterAutoscalerVersion="
        f"{chart_version!r} runs Cluster Autoscaler {built_for}, which is built and tested for Kubernetes {built_for} "
        f"only; allowed is kubernetesVersion {built_for!r}, or a clusterAutoscalerVersion whose Cluster Autoscaler is "
        f"{kubernetes_version}.x"
    )


def _kuberay_version_problem(version: str, allow_unvalidated: bool) -> str | None:
    if version in VALIDATED_KUBERAY_VERSIONS or not SEMVER_PATTERN.match(version):
        return None
    if allow_unvalidated:
        pulumi.log.warn(
            f"kuberayVersion={version!r} was not validated: the RayService was checked against the CRDs of KubeRay "
            f"{', '.join(VALIDATED_KUBERAY_VERSIONS)} only (allowUnvalidatedKuberayVersion=true)"
        )
        return None
    return (
        f"kuberayVersion={version!r} is invalid: allowed is a KubeRay release whose CRDs the RayService is "
        f"validated against ({', '.join(VALIDATED_KUBERAY_VERSIONS)}), or set allowUnvalidatedKuberayVersion "
        "to true to deploy another one unchecked"
    )


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def sets_cluster_deletion_delay(kuberay_version: str) -> bool:
    """Whether this KubeRay release reads spec.rayClusterDeletionDelaySeconds (KUBERAY_DELETION_DELAY_SINCE)."""
    return bool(SEMVER_PATTERN.match(kuberay_version)) and _version(kuberay_version) >= KUBERAY_DELETION_DELAY_SINCE


def has_ray_token_auth(kuberay_version: str) -> bool:
    """Whether this KubeRay release takes authOptions (and its dashboard client sends the token)."""
    return bool(SEMVER_PATTERN.match(kuberay_version)) and _version(kuberay_version) >= KUBERAY_AUTH_OPTIONS_SINCE


def _ray_auth_problem(mode: str, kuberay_version: str, ray_version: str) -> str | None:
    if mode != "token" or not SEMVER_PATTERN.match(kuberay_version) or not SEMVER_PATTERN.match(ray_version):
        return None
    since = ".".join(map(str, KUBERAY_AUTH_OPTIONS_SINCE))
    if not has_ray_token_auth(kuberay_version):
        return (
            f"rayAuthMode='token' is invalid with kuberayVersion={kuberay_version!r}: KubeRay takes authOptions from "
            f"{since} on, and an older operator's dashboard client sends no token, so it could not submit the serve "
            f"config; allowed is kuberayVersion {since} or later (validated: {VALIDATED_KUBERAY_VERSIONS[-1]}), or "
            "rayAuthMode 'disabled'"
        )
    if _version(ray_version) < RAY_TOKEN_AUTH_SINCE:
        ray_since = ".".join(map(str, RAY_TOKEN_AUTH_SINCE))
        return (
            f"rayAuthMode='token' is invalid with rayVersion={ray_version!r}: KubeRay refuses authOptions below Ray "
            f"{ray_since}; allowed is rayVersion {ray_since} or later, or rayAuthMode 'disabled'"
        )
    return None


def _head_fault_tolerance_problem(mode: str, kuberay_version: str) -> str | None:
    """An operator older than gcsFaultToleranceOptions: its CRD prunes the field (an unknown field of a structural
    schema, https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/
    #field-pruning), so the head would run without its store and nothing would say so."""
    if mode != GCS_REDIS or not SEMVER_PATTERN.match(kuberay_version):
        return None
    if _version(kuberay_version) >= KUBERAY_GCS_FT_OPTIONS_SINCE:
        return None
    since = ".".join(map(str, KUBERAY_GCS_FT_OPTIONS_SINCE))
    return (
        f"headFaultTolerance='redis' is invalid with kuberayVersion={kuberay_version!r}: KubeRay takes "
        f"gcsFaultToleranceOptions from {since} on; allowed is kuberayVersion {since} or later (validated: "
        f"{', '.join(VALIDATED_KUBERAY_VERSIONS)}), or headFaultTolerance 'off'"
    )


def _api_allow_list_problem(cidrs: tuple[str, ...], raw: str) -> str | None:
    if len(cidrs) > MAX_API_PUBLIC_ACCESS_CIDRS:
        return (
            f"apiPublicAccessCidrs has {len(cidrs)} CIDRs: EKS allows at most {MAX_API_PUBLIC_ACCESS_CIDRS} "
            "(quota 'Public endpoint access CIDR ranges per cluster', not adjustable) and would refuse the cluster "
            "mid-deploy; allowed is at most 40: list fixed egress addresses (a NAT gateway's, a self-hosted CI "
            "runner's), not a CI provider's published ranges (docs/policy.md, Deploying from CI)"
        )
    if covers_the_internet(cidrs):
        return (
            f"apiPublicAccessCidrs={list(cidrs)} is invalid: together they admit every internet address; allowed "
            "is the public CIDRs `pulumi up`, kubectl and CI connect from"
        )
    if cidrs or raw not in ("", "[]"):
        return None
    # With no publicAccessCidrs EKS opens the public endpoint to 0.0.0.0/0
    # (https://docs.aws.amazon.com/eks/latest/APIReference/API_VpcConfigRequest.html).
    return (
        "apiPublicAccessCidrs is empty: EKS would then open the public API endpoint to 0.0.0.0/0. "
        "Allowed is a list of the public CIDRs `pulumi up`, kubectl and CI connect from; add yours with "
        f"`{API_ALLOW_LIST_COMMAND}` (your address: `curl https://checkip.amazonaws.com`); offline, without the "
        f"Pulumi CLI, pass `python -m tools.render ... {OFFLINE_ALLOW_LIST_OPTION}`"
    )


def _serve_source_problem(exposure: str, cidrs: tuple[str, ...]) -> str | None:
    """The load balancer's sources are also whom its NodePort answers on every node, in plain HTTP: cloud-provider-aws
    opens the nodes' security group on the NodePort to loadBalancerSourceRanges, or to 0.0.0.0/0 when there are none
    (kubernetes/cloud-provider-aws pkg/providers/v1/aws.go EnsureLoadBalancer, updateInstanceSecurityGroupsForNLB),
    for an internal load balancer too."""
    if exposure == "none" or (cidrs and not covers_the_internet(cidrs)):
        return None
    if exposure == "internal" and not cidrs:
        return (
            "serveExposure='internal' needs serveSourceCidrs: without them the cloud provider opens the load "
            "balancer's NodePort on every node to 0.0.0.0/0, and the NodePort answers in plain HTTP, past the TLS "
            "listener; allowed is the private CIDRs the clients connect from (e.g. the VPC's or 10.0.0.0/8)"
        )
    return (
        f"serveExposure={exposure!r} needs serveSourceCidrs narrower than the whole internet "
        f"(got {list(cidrs)}, which together admit every internet address): an open inference endpoint is not allowed"
    )


# Namespaces every cluster already has; Kubernetes reserves the `kube-` prefix for its own
# (https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/).
EXISTING_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def _collision_problems(namespace: str, gpu_nodegroup_name: str) -> list[str]:
    """Names this program creates that another object already holds."""
    problems = []
    if namespace in EXISTING_NAMESPACES or namespace.startswith("kube-"):
        problems.append(
            f"namespace={namespace!r} is invalid: every cluster already has it or Kubernetes reserves its kube- "
            "prefix, and the program creates (and on destroy deletes) the namespace it names; allowed is a "
            "namespace of its own such as 'inference'"
        )
    elif namespace == OPERATOR_NAMESPACE:
        problems.append(
            f"namespace={namespace!r} is invalid: it is the KubeRay operator's, which its Helm release creates; "
            "allowed is a namespace of its own such as 'inference'"
        )
    if gpu_nodegroup_name == SYSTEM_NODEGROUP_NAME:
        problems.append(
            f"gpuNodegroupName={gpu_nodegroup_name!r} is invalid: it is the system node group's name, and node group "
            "names are unique in a cluster; allowed is another name such as 'gpu-workers'"
        )
    return problems


def _system_node_problems(
    cfg: StackConfig, describe_instance_type: Callable[[str], InstanceShape | None]
) -> list[str | None]:
    """The system node type as EC2 describes it, asked once (a type EC2 does not know is left to the region's
    offerings check): an x86_64 CPU type, with room for what runs there."""
    if region_problem(cfg.region) or not INSTANCE_TYPE_PATTERN.fullmatch(cfg.system_node_type):
        return []
    shape = describe_instance_type(cfg.system_node_type)
    if shape is None:
        return []
    if NODE_ARCHITECTURE not in shape.architectures:
        return [
            f"systemNodeType={cfg.system_node_type!r} is invalid: {architecture_reason(shape)} (EC2's answer, asked "
            f"before any resource); allowed is an {NODE_ARCHITECTURE} instance type such as m7i.xlarge"
        ]
    if shape.gpus:
        return [_system_node_type_problem(cfg.system_node_type, shape)]
    return [_system_node_room_problem(cfg, shape)]


def _system_node_type_problem(system_node_type: str, shape: InstanceShape) -> str:
    """A GPU type for the CPU system nodes: EC2's answer says so."""
    return (
        f"systemNodeType={system_node_type!r} is invalid: it has {shape.gpus} NVIDIA GPU(s) ({shape.gpu_name}), "
        "but the system nodes run the standard AL2023 AMI (no NVIDIA driver) and CPU pods only; allowed is a CPU "
        "instance type such as m7i.xlarge (gpuNodeType sets the GPU nodes)"
    )


def _system_node_room_problem(cfg: StackConfig, shape: InstanceShape) -> str | None:
    """What runs on the system nodes at once, a model change's mirror Job beside the head included, fits them."""
    load = system_node_load(
        observability=cfg.observability,
        serve_autoscaling=cfg.serve_autoscaling,
        model_cache=cfg.model_cache,
        new_cluster=cfg.new_cluster,
    )
    return system_node_problem(cfg.system_node_type, cfg.system_node_count, shape.vcpus, shape.memory_mib, load)


def _surge_problems(cfg: StackConfig) -> list[str]:
    """newCluster runs both clusters at once for the length of an upgrade: the GPU node group's maximum holds the
    active cluster at its most and the new one's workers (infra/nodes/node_groups.py takes it as the group's max), and
    nodes must be able to come (the system node check counts the second head)."""
    if not cfg.new_cluster or cfg.topology is None:
        return []
    problems = []
    if cfg.gpu_capacity_type == "capacity-block":
        problems.append(
            f"clusterUpgradeStrategy={NEW_CLUSTER!r} is invalid with gpuCapacityType='capacity-block': an upgrade runs "
            f"{cfg.surge_gpu_nodes} GPU node(s) beside the active cluster's, and a Capacity Block holds a fixed number "
            "of instances for its window; allowed is clusterUpgradeStrategy 'replace' (or on-demand GPU nodes)"
        )
    if cfg.gpu_node_group_max > MAX_NODES_PER_NODE_GROUP:
        problems.append(
            f"clusterUpgradeStrategy={NEW_CLUSTER!r} is invalid with these replicas: an upgrade needs up to "
            f"{cfg.gpu_node_group_max} GPU nodes ({cfg.topology.most_gpu_nodes} for the active cluster at its most + "
            f"{cfg.surge_gpu_nodes} for the new one) and EKS allows {MAX_NODES_PER_NODE_GROUP} per node group; "
            "allowed is clusterUpgradeStrategy 'replace', or lower prefillReplicas/decodeReplicas (or their "
            "MaxReplicas)"
        )
    return problems


def _capacity_block_autoscaling_problem(capacity_type: str, serve_autoscaling: bool) -> str | None:
    if capacity_type != "capacity-block" or not serve_autoscaling:
        return None
    return (
        "serveAutoscaling=true is invalid with gpuCapacityType='capacity-block': a Capacity Block holds a fixed "
        "number of instances for its window, so the Cluster Autoscaler could add no node beyond it; allowed is "
        "serveAutoscaling=false with replicas that fill the block"
    )


def _capacity_block_problem(capacity_type: str, reservation_id: str | None, gpu_az: str | None) -> str | None:
    """A Capacity Block is one reservation in one Availability Zone: the node group targets both."""
    if capacity_type != "capacity-block" or (reservation_id and gpu_az):
        return None
    return (
        "gpuCapacityType='capacity-block' needs capacityReservationId (the Capacity Block's cr-... id) and "
        f"gpuAz (the Availability Zone it was bought in); got capacityReservationId={reservation_id or ''!r}, "
        f"gpuAz={gpu_az or ''!r}"
    )


def _host_tier_problems(cfg: StackConfig) -> list[str | None]:
    """A host KV tier on a side without prefix caching, or tiers the GPU node's worker pod cannot hold
    (infra/settings/kv_offload.py)."""
    tiers = {f"{side}KvOffloadGiB": getattr(cfg, side).kv_offload_gib for side in ("prefill", "decode")}
    problems = [
        prefix_caching_problem(key, tier, side, getattr(cfg, side).prefix_caching)
        for (key, tier), side in zip(tiers.items(), ("prefill", "decode"), strict=True)
    ]
    if cfg.topology is not None and any(tiers.values()):
        problems.append(
            node_memory_problem(cfg.topology.node, cfg.topology.replicas_per_node, tiers, cfg.gpu_node_type)
        )
    return problems


def _model_fit_problems(cfg: StackConfig, kv_setting: str) -> list[str]:
    """Settings the project's own measurements of the model (KNOWN_MODELS) call impossible; other models are the
    user's word."""
    facts = KNOWN_MODELS.get(cfg.model_source)
    if facts is None or cfg.topology is None:
        return []
    problems = []
    if facts.hybrid and cfg.kv_buffer_device == "cpu":
        resolved = (
            "" if kv_setting == "cpu" else f" (auto resolves to cpu on {cfg.gpu_node_type}: its EFA has no RDMA read)"
        )
        problems.append(
            f"kvBufferDevice={kv_setting!r} is invalid with modelSource={cfg.model_source!r}{resolved}: the model is "
            "hybrid (Mamba-type state), and vLLM 0.26's NIXL connector cannot stage its KV cache in host memory; "
            "allowed is cuda, on a gpuNodeType whose EFA supports RDMA read (g6, g6e, p4d, p5)"
        )
    # The measurements are of bf16 weights; FP8 on both sides is sized by the capacity estimate in preview.
    if cfg.prefill.quantization and cfg.decode.quantization:
        return problems
    replica_mib = cfg.topology.node.gpu_memory_mib * cfg.topology.gpus_per_replica
    weights_gib = facts.text_weights_gib if cfg.language_model_only else facts.vision_weights_gib
    if weights_gib * 1024 > replica_mib:
        problems.append(
            f"gpuNodeType={cfg.gpu_node_type!r} is invalid with modelSource={cfg.model_source!r} and "
            f"tensorParallelSize={cfg.topology.tensor_parallel_size}: a replica gets {replica_mib} MiB of GPU memory, "
            f"less than the model's {weights_gib} GiB of weights; allowed is a larger GPU or a larger "
            "tensorParallelSize"
        )
    elif not cfg.language_model_only and replica_mib <= facts.vision_does_not_fit_mib:
        problems.append(
            f"languageModelOnly=false is invalid with modelSource={cfg.model_source!r} on {replica_mib} MiB of GPU "
            f"memory per replica: with its vision tower ({facts.vision_weights_gib} GiB of weights) vLLM had no KV "
            f"cache left on {facts.vision_does_not_fit_mib} MiB (lab/records/gpu-end-to-end.md); allowed is "
            "languageModelOnly=true, a larger GPU or a larger tensorParallelSize"
        )
    return problems


def _fp8_problems(cfg: StackConfig) -> list[str]:
    """FP8 weights or KV cache on a GPU where vLLM 0.26 would refuse them (infra/settings/quantization.py)."""
    if cfg.topology is None:
        return []
    quantized = [side for side in ("prefill", "decode") if getattr(cfg, side).quantization]
    return fp8_problems(cfg.gpu_node_type, cfg.topology.node.gpu_name, quantized, cfg.kv_cache_dtype)


def _remote_write_problem(observability: bool, workspace_url: str | None) -> str | None:
    if observability or not workspace_url:
        return None
    return (
        f"ampWorkspaceUrl={workspace_url!r} is invalid with observability=false: the Prometheus that would "
        "remote-write is installed only with observability; set observability to true, or ampWorkspaceUrl to empty"
    )


def _receivers_problems(cfg: StackConfig) -> list[str]:
    """A receiver without the metrics stack would never be sent an alert."""
    if cfg.observability:
        return []
    return [
        f"{_assignment(key, cfg.settings)} is invalid with observability=false: the Alertmanager that would send it "
        f"the alerts is installed only with observability; set observability to true, or {key} to empty"
        for key in RECEIVER_SETTINGS
        if cfg.settings[key]
    ]


def amp_workspace_region(workspace_url: str) -> str:
    """The workspace's region, which SigV4 signs the remote writes for."""
    match = AMP_WORKSPACE_PATTERN.match(workspace_url)
    assert match is not None, workspace_url
    return match.group(1)


# The StackConfig fields a row feeds with its value as read; the rest load_config derives.
STACK_FIELDS = frozenset(f.name for f in dataclasses.fields(StackConfig))
# The fields load_config composes from several settings or resolves (a row may name one as what it feeds): passed
# by keyword, never from the rows. A field missing here or there fails every load_config call (a missing or a
# repeated keyword argument).
COMPOSED_FIELDS = frozenset(
    {
        "dlc_image",
        "kv_buffer_device",
        "serve_api_key_auth",
        "serve_api_keys",
        "hf_token",
        "hf_token_value",
        "ray_token_auth",
        "alert_slack_webhook_url",
        "alert_pagerduty_routing_key",
        "models",
    }
)


def load_config(
    config: pulumi.Config | None = None,
    aws_config: pulumi.Config | None = None,
    *,
    describe_instance_type: Callable[[str], InstanceShape | None],
) -> StackConfig:
    """Builds the frozen stack config, or raises ConfigError naming every bad key.

    `describe_instance_type` is EC2's answer for the GPU type (`infra.nodes.node_groups.describe_instance_type`,
    None when EC2 does not know it): the layout is checked against what the type really has.
    """
    config = config or pulumi.Config()
    read = _Reader(config, aws_config or pulumi.Config("aws"))
    values = {setting.key: read.read(setting) for setting in SETTINGS}
    listed, model_problems = parse_models(values["models"], MAX_MODEL_LEN)
    defaults = {setting.key: setting.default for setting in SETTINGS}
    read.problems.extend([*model_problems, *one_way_problems(values, listed, defaults)])
    values.update(pd_model_values(listed))
    models = stack_models(values, listed)
    read.problems.extend(adapter_bucket_problems(models, values["modelCache"], values["modelSource"]))
    api_keys = _api_keys(read, config, values[API_KEYS_SETTING])
    read.problems.extend(p for p in _value_problems(config, values) if p)
    prefill = _serve_side(values, read.problems, "prefill", values["serveAutoscaling"])
    decode = _serve_side(values, read.problems, "decode", values["serveAutoscaling"])
    shape = _gpu_shape(values, read.problems, describe_instance_type)
    cfg = _stack_config(config, read, values, shape, prefill, decode, api_keys, models)
    read.problems.extend(p for p in _relation_problems(cfg, values, api_keys, describe_instance_type) if p)
    read.problems.extend(_encrypted_setting_problems(config))
    settings = _every_setting()
    read.problems[:0] = [
        *unknown_key_problems(settings, config.name, PROJECT_KEYS),
        *provider_value_problems(settings),
    ]
    _warn([*_nested_cidr_warnings(cfg.settings), *_ignored_setting_warnings(cfg, values)])
    if read.problems:
        raise ConfigError(read.problems)
    return cfg


def _value_problems(config: pulumi.Config, values: Mapping[str, Any]) -> list[str | None]:
    """What is wrong with a value on its own, beyond its row's kind."""
    region = values["aws:region"]
    return [
        region_problem(region),
        _vpc_cidr_problem(values["vpcCidr"]),
        _kubernetes_version_problem(values["kubernetesVersion"]),
        _gpu_az_problem(values["gpuAz"], region),
        model_source_problem(values["modelSource"]),
        _cache_node_type_problem(values["gcsRedisNodeType"]),
        *_receiver_partition_problems(values),
        _plain_secret_problem(config, "hfToken", values["hfToken"], "token"),
        *_receiver_secret_problems(config, values),
        _kuberay_version_problem(values["kuberayVersion"], values["allowUnvalidatedKuberayVersion"]),
        _ray_auth_problem(values["rayAuthMode"], values["kuberayVersion"], values["rayVersion"]),
        _head_fault_tolerance_problem(values["headFaultTolerance"], values["kuberayVersion"]),
        _maintenance_window_problem(values["gcsRedisMaintenanceWindow"]),
        _ray_version_problem(values["rayVersion"], custom_image=values["dlcImage"] is not None),
        _latest_image_problem(values["dlcImage"]),
        *_integer_form_problems(config),
    ]


def _gpu_shape(
    values: Mapping[str, Any], problems: list[str], describe_instance_type: Callable[[str], InstanceShape | None]
) -> InstanceShape | None:
    """EC2's shape of the GPU type; None (and a problem recorded) where it is unfit. Asked only for a well-formed
    name in a supported region: EC2 cannot answer for anything else."""
    gpu_node_type, region = values["gpuNodeType"], values["aws:region"]
    if not gpu_node_type or region_problem(region) or not INSTANCE_TYPE_PATTERN.match(gpu_node_type):
        return None
    shape = describe_instance_type(gpu_node_type)
    problem = gpu_node_type_problem(gpu_node_type, shape, region)
    if problem:
        problems.append(problem)
        return None
    return shape


def _stack_config(
    config: pulumi.Config,
    read: _Reader,
    values: Mapping[str, Any],
    shape: InstanceShape | None,
    prefill: ServeSide,
    decode: ServeSide,
    api_keys: tuple[str, ...],
    models: tuple[ModelSpec, ...],
) -> StackConfig:
    """The fields a row feeds as read come from the rows (each row's kind checked its value); the composed ones are
    keyword arguments, so that mypy checks their types."""
    region, dlc_image = values["aws:region"], values["dlcImage"]
    # Auth guards only an endpoint that leaves the cluster: with serveExposure none nothing reaches it from outside.
    serve_api_key_auth = values["serveApiKeyAuth"] and values["serveExposure"] != "none"
    fed = {
        setting.feeds: values[setting.key]
        for setting in SETTINGS
        if setting.feeds in STACK_FIELDS and setting.feeds not in COMPOSED_FIELDS
    }
    return StackConfig(
        **fed,
        project=pulumi.get_project(),
        stack=pulumi.get_stack(),
        dlc_image=dlc_image or (default_dlc_image(region) if not region_problem(region) else ""),
        prefill=prefill,
        decode=decode,
        # None only where gpuNodeType is unfit, a problem already recorded: this config is refused below, after the
        # other checks (which skip what needs the layout) have added theirs.
        topology=_topology(values, read.problems, shape, prefill, decode, models),  # type: ignore[arg-type]
        models=models,
        kv_buffer_device=resolve_kv_buffer_device(values["kvBufferDevice"], values["gpuNodeType"]),
        ray_token_auth=values["rayAuthMode"] == "token"
        or (values["rayAuthMode"] == "auto" and has_ray_token_auth(values["kuberayVersion"])),
        hf_token=_secret_output(config, "hfToken", values),
        hf_token_value=values["hfToken"] or None,
        serve_api_key_auth=serve_api_key_auth,
        serve_api_keys=pulumi.Output.secret(list(api_keys)) if serve_api_key_auth and api_keys else None,
        alert_slack_webhook_url=_secret_output(config, "alertSlackWebhookUrl", values),
        alert_pagerduty_routing_key=_secret_output(config, "alertPagerDutyRoutingKey", values),
        settings=dict(read.values),
    )


def _secret_output(config: pulumi.Config, key: str, values: Mapping[str, Any]) -> pulumi.Output[str] | None:
    return config.get_secret(key) if values[key] else None


def _relation_problems(
    cfg: StackConfig,
    values: Mapping[str, Any],
    api_keys: tuple[str, ...],
    describe_instance_type: Callable[[str], InstanceShape | None],
) -> list[str | None]:
    """What is wrong with several values together, read on the composed config."""
    return [
        _api_allow_list_problem(cfg.api_public_access_cidrs, cfg.settings["apiPublicAccessCidrs"]),
        _serve_source_problem(cfg.serve_exposure, cfg.serve_source_cidrs),
        *_serve_auth_problems(cfg, api_keys),
        _kube_proxy_version_problem(cfg.kube_proxy_version, cfg.kubernetes_version),
        _capacity_block_problem(cfg.gpu_capacity_type, cfg.capacity_reservation_id, cfg.gpu_az),
        _cluster_autoscaler_problem(cfg),
        _capacity_block_autoscaling_problem(cfg.gpu_capacity_type, cfg.serve_autoscaling),
        *_surge_problems(cfg),
        *_collision_problems(cfg.namespace, cfg.gpu_nodegroup_name),
        _created_namespace_problem(cfg.namespace),
        *_model_fit_problems(cfg, values["kvBufferDevice"]),
        prefix_routing_problem(
            values["prefixAwareRouting"],
            values["prefixCaching"],
            cfg.model_source,
            cfg.prefill.prefix_caching,
            cfg.decode.prefix_caching,
        ),
        *_fp8_problems(cfg),
        *_host_tier_problems(cfg),
        *_system_node_problems(cfg, describe_instance_type),
        _remote_write_problem(cfg.observability, cfg.amp_workspace_url),
        *_receivers_problems(cfg),
    ]


# --- values the checks above let through but a reader, a cluster or a later change would take otherwise ---

# An integer as plain ASCII decimal digits. The reader takes Python's int(), as pulumi.Config.get_int does
# (pulumi/config.py `_get_int`: `return int(v)`), and int() also reads '4_096', '+3', ' 3', '03' and other
# scripts' digits; the plan and the change history would then show the text, not the number, and the same
# text in the stack file is read otherwise by the CLI (tools/stack_yaml.py: an unquoted 010 is octal 8).
CANONICAL_INTEGER = re.compile(r"(0|[1-9][0-9]*)\Z")


def _integer_form_problems(config: pulumi.Config) -> list[str]:
    """An integer setting written in a form int() takes but that is not the number's own text; a value int()
    refuses, or one out of bounds, is already reported by the reader."""
    problems = []
    for setting in SETTINGS:
        kind = setting.kind
        if not isinstance(kind, Integer):
            continue
        raw = config.get(setting.key)
        if raw is None or CANONICAL_INTEGER.fullmatch(raw):
            continue
        try:
            value = int(raw)
        except ValueError:
            continue
        if value < kind.minimum or (kind.maximum is not None and value > kind.maximum):
            continue
        problems.append(
            f"{setting.key}={raw!r} is invalid: allowed is an integer in plain decimal digits, here {value} (no "
            "sign, '_', space, leading zero or non-ASCII digit, which Python reads but the plan would show as typed)"
        )
    return problems


def _created_namespace_problem(namespace: str) -> str | None:
    """The RayService's namespace is a Namespace object of the program's, deleted on destroy with all it holds; a
    namespace the stack also creates would be created twice (the second create fails: a name is unique per kind,
    https://kubernetes.io/docs/concepts/overview/working-with-objects/names/) or, created first, take the other
    part's objects with it on destroy. Refused whether or not that part is on now: turning it on later would fail
    mid-deploy, and moving the RayService then replaces it."""
    owner = CREATED_NAMESPACES.get(namespace)
    if owner is None:
        return None
    return (
        f"namespace={namespace!r} is invalid: it is {owner}, and the program creates (and on destroy deletes) the "
        "namespace it names; allowed is a namespace of its own such as 'inference'"
    )


def _warn(messages: list[str]) -> None:
    for message in messages:
        pulumi.log.warn(message)


# The list settings of CIDRs: each admits the union of its ranges (EKS publicAccessCidrs, the Service's
# loadBalancerSourceRanges).
CIDR_LIST_SETTINGS = tuple(
    setting.key
    for setting in SETTINGS
    if isinstance(setting.kind, StringList) and setting.kind.item in (client_cidr, internet_client_cidr)
)


def _nested_cidr_warnings(settings: Mapping[str, str]) -> list[str]:
    """A range inside another of the same list: two CIDR blocks that overlap at all are one inside the other. The
    list admits the union, so the inner one changes nothing (a warning, not a refusal: nothing is admitted that the
    list does not say), but it is usually a slip: a wider range than meant, or a range listed twice. An exact
    repeat is refused by the reader."""
    warnings = []
    for key in CIDR_LIST_SETTINGS:
        networks = _cidr_items(settings[key])
        for index, network in networks.items():
            outer = next((i for i, other in networks.items() if i != index and network.subnet_of(other)), None)
            if outer is not None and networks[outer] != network:
                warnings.append(
                    f"{key}[{index}]={str(network)!r} lies inside {key}[{outer}]={str(networks[outer])!r}: the list "
                    "admits the union of its ranges, so it adds nothing; allowed and meant is each range once, none "
                    f"inside another: drop {key}[{index}], or narrow {key}[{outer}] if it admits more than you meant"
                )
    return warnings


def _cidr_items(raw: str) -> dict[int, ipaddress.IPv4Network]:
    """The list's well-formed items by their index as typed (a bad one is the reader's problem)."""
    networks = {}
    for index, text in enumerate(json_string_list(raw or "[]") or []):
        try:
            networks[index] = ipv4_network(text)
        except ValueError:
            continue
    return networks


# Settings that act only under another setting's value, by that setting: (the value that switches them off, why
# nothing reads them then, the values that switch them on, the settings). With the other setting off, nothing is
# built for them, so the value is harmless and takes effect when it is switched on: warned, not refused (a stack
# can turn its endpoint off and on again without re-entering its secrets). A value that states an outcome the user
# would miss without a word is refused instead, by its own rule: ampWorkspaceUrl (a workspace that receives no
# metrics), the alert receivers (a receiver that is sent no alert), <side>MaxReplicas and
# <side>TargetOngoingRequests (a side that never scales).
SWITCHED_OFF = {
    "serveExposure": (
        "none",
        "no load balancer is built, and inside the cluster the serve Service asks no key",
        "internal or internet-facing",
        ("serveApiKeys", "serveCertificateArn", "serveSourceCidrs", "serveApiKeyAuth"),
    ),
    "observability": (
        False,
        "the metrics stack is not installed",
        "true",
        ("kubePrometheusStackVersion", "dcgmExporterVersion", "ttftP99ObjectiveMs", "runbookUrl"),
    ),
    "serveAutoscaling": (False, "the Cluster Autoscaler is not installed", "true", ("clusterAutoscalerVersion",)),
    "modelCache": (False, "the stack makes no bucket", "true", ("modelCacheRetainOnDestroy",)),
    "headFaultTolerance": ("off", "the stack makes no GCS store", "redis", ("gcsRedisNodeType",)),
}


def _ignored_setting_warnings(cfg: StackConfig, values: Mapping[str, Any]) -> list[str]:
    """Each setting given a value other than its default while the setting it acts under switches it off."""
    warnings = []
    for switch, (off, why, on, keys) in SWITCHED_OFF.items():
        # The surge of a newCluster upgrade installs the Cluster Autoscaler too.
        if values[switch] != off or (switch == "serveAutoscaling" and cfg.new_cluster):
            continue
        for key in keys:
            if _differs_from_default(key, values[key]):
                warnings.append(
                    f"{_assignment(key, cfg.settings)} is ignored with {_assignment(switch, cfg.settings)}: {why}; "
                    f"allowed and meant is the default ({_default_text(key)}) until {switch} is {on}"
                )
    if cfg.new_cluster and cfg.capacity_reservation_id and cfg.topology is not None:
        warnings.append(
            f"clusterUpgradeStrategy={NEW_CLUSTER!r} with capacityReservationId={cfg.capacity_reservation_id!r}: an "
            f"upgrade launches up to {cfg.gpu_node_group_max} GPU nodes into the reservation (the active cluster's and "
            "the new one's); a targeted reservation with fewer instances leaves the new cluster's workers Pending and "
            "`pulumi up` fails at serveReadyTimeoutMinutes naming them, while the active cluster keeps serving"
        )
    if values["allowUnvalidatedKuberayVersion"] and cfg.kuberay_version in VALIDATED_KUBERAY_VERSIONS:
        warnings.append(
            f"allowUnvalidatedKuberayVersion=true is ignored with kuberayVersion={cfg.kuberay_version!r}: that "
            "release is validated; allowed and meant is false, so that a later unvalidated version is refused"
        )
    return warnings


def _differs_from_default(key: str, value: Any) -> bool:
    default = SETTINGS_BY_KEY[key].default
    if isinstance(default, list):
        return tuple(value) != tuple(default)
    if default == "":
        return bool(value)
    return bool(value != default)


def _assignment(key: str, settings: Mapping[str, str]) -> str:
    """`key=value` as the other messages write it: a string or list quoted, a boolean or integer bare."""
    kind = SETTINGS_BY_KEY[key].kind
    return f"{key}={settings[key]}" if isinstance(kind, Boolean | Integer) else f"{key}={settings[key]!r}"


def _default_text(key: str) -> str:
    default = SETTINGS_BY_KEY[key].default
    if isinstance(default, bool):
        return str(default).lower()
    return "empty" if default in ("", []) else str(default)
