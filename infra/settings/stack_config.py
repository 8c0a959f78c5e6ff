"""The frozen stack config (`StackConfig`, one side of the serve app, `ServeSide`), the error that lists every
problem (`ConfigError`), and the facts of the models the capacity estimate knows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi

from infra.settings.autoscaling import ScalingPace
from infra.settings.kinds import GCS_REDIS, NEW_CLUSTER
from infra.settings.models import AGGREGATED, ModelSpec
from infra.settings.topology import Topology


@dataclass(frozen=True)
class MeasuredModel:
    """What the project measured of a model it ships as a default (lab/records/gpu-end-to-end.md)."""

    hybrid: bool  # layers with Mamba-type state (Qwen3.5's Gated DeltaNet), which vLLM 0.26's NIXL cannot stage on CPU
    text_weights_gib: float  # vLLM's "Model loading took ... GiB" with languageModelOnly
    vision_weights_gib: float  # the same with the vision tower
    # The most GPU memory per replica on which the vision tower left vLLM no KV cache (an L4, 22888 MiB).
    vision_does_not_fit_mib: int


# The default modelSource, measured at its full dimensions on an L4's share of an H200 (lab/records/gpu-end-to-end.md,
# sessions B and C): weights 17.66 GiB with the vision tower ("Available KV cache memory: -0.07 GiB"), 16.80 GiB
# text only; its Gated DeltaNet layers make it hybrid.
KNOWN_MODELS = {"Qwen/Qwen3.5-9B": MeasuredModel(True, 16.80, 17.66, 22888)}


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
    # The side's latency objective in ms (prefillTtftObjectiveMs, decodeItlObjectiveMs); None scales on ongoing
    # requests alone (infra/settings/autoscaling.py).
    latency_objective_ms: int | None = None
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
    """Every setting, typed; a field a row feeds means what that row's description says (`rows_*.py`)."""

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
    scaling_pace: ScalingPace  # Serve's upscale/downscale delays and the objectives' percentile
    cluster_autoscaler_version: str
    kv_buffer_device: str  # "cuda" or "cpu": kvBufferDevice with "auto" resolved for gpuNodeType
    kv_cache_dtype: str
    hf_token: pulumi.Output[str] | None
    # The same token in plain text, for the model preflight's request only; never printed.
    hf_token_value: str | None = field(repr=False)
    # Ray's token authentication (rayAuthMode with "auto" resolved for kuberayVersion): authOptions on the RayCluster.
    ray_token_auth: bool
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
    serve_max_request_mib: int
    model_preflight: bool
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
    def scales_on_latency(self) -> bool:
        """Some side scales on a latency objective: the pods load the policy's code."""
        return bool(self.prefill.latency_objective_ms or self.decode.latency_objective_ms)

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
