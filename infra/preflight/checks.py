"""The deploy-time checks: every lookup the stack makes before it declares a resource, with every problem in one report.

Each check sits beside what it protects and raises its own error when used alone; here they all run and what they
found is raised as one `PreflightError`, so three bad values need one run, not three. docs/deploy-time-lookups.md
lists each lookup and the IAM action it needs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pulumi
import pulumi_aws as aws

from infra.cluster.eks import check_admin_principals, discover_partition
from infra.network.placement import Placement, discover_placement
from infra.preflight.offerings import AddonVersions, check_offerings
from infra.preflight.quota import check_gpu_vcpu_quota
from infra.preflight.reservation import check_capacity_reservation
from infra.serving.model_cache import cache_bucket_name
from infra.serving.model_source import ModelFacts, ModelSourceError, read_model
from infra.settings.capacity import (
    CapacityError,
    EngineCapacity,
    KvLayout,
    align_block_problem,
    capacity_problem,
    kv_layout,
    vllm_default_gpu_memory_utilization,
)
from infra.settings.kv_offload import prefix_caching_problem
from infra.settings.model_sources import is_hub_repo
from infra.settings.models import ModelSpec
from infra.settings.quantization import checkpoint_problems, checkpoint_quantization, loaded_weight_bytes
from infra.settings.regions import Partition
from infra.settings.stack_config import ConfigError, StackConfig

T = TypeVar("T")


class PreflightError(ConfigError):
    """What the deploy-time lookups found wrong, all of it: config values AWS refuses, a quota too small, a model
    that cannot load or does not fit. A ConfigError, so that it reads (and is caught) like the config's own."""


@dataclass(frozen=True)
class DeployFacts:
    """What the lookups answered, for the components' args."""

    partition: Partition
    placement: Placement
    addons: AddonVersions
    # What each side's engine holds (the `engineCapacity` output); None without modelPreflight or where the model's
    # layout or weights are not known.
    capacity: dict[str, Any] | None
    # The model cache's bucket (infra/serving/model_cache.py) when a Hub modelSource is mirrored into it, else None.
    model_cache_bucket: str | None = None


def engine_capacity(cfg: StackConfig, model: ModelFacts) -> dict[str, Any] | None:
    """What each side's engine holds, printed in preview; raises CapacityError where not one request of
    maxModelLen fits. None, with a warning, where the model's layout or weights are not known."""
    tp = cfg.topology.tensor_parallel_size
    config = model.config
    layout = kv_layout(config, tp, cfg.kv_cache_dtype) if config else None
    # A path in the image or an unreadable S3 config (no config) warned already.
    if config is None or layout is None or model.tensors is None:
        if config:
            pulumi.log.warn(
                f"modelSource={cfg.model_source!r}: capacity not estimated (its "
                f"{'layer kinds' if layout is None else 'safetensors weights'} are not known here)"
            )
        return None
    # A pre-quantized checkpoint is loaded as its tensors are stored, whatever <side>Quantization says.
    online = checkpoint_quantization(config) is None
    summaries = {}
    for side in ("prefill", "decode"):
        serve_side = getattr(cfg, side)
        capacity = EngineCapacity(
            layout=layout,
            tensor_parallel_size=tp,
            gpu_memory_mib=cfg.topology.node.gpu_memory_mib,
            gpu_memory_utilization=vllm_default_gpu_memory_utilization(),
            weight_bytes=loaded_weight_bytes(model.tensors, online and serve_side.quantization == "fp8"),
            max_model_len=cfg.max_model_len,
            prefix_caching=caches_prefixes(serve_side.prefix_caching, layout),
            host_kv_gib=serve_side.kv_offload_gib,
        )
        problem = (
            capacity_problem(capacity)
            or align_block_problem(side, capacity, serve_side.max_num_batched_tokens)
            or prefix_caching_problem(f"{side}KvOffloadGiB", capacity.host_kv_gib, side, capacity.prefix_caching)
        )
        if problem:
            raise CapacityError(f"{side}: {problem}")
        pulumi.log.info(f"capacity of {side} {capacity.describe()}")
        summaries[side] = capacity.summary()
    return summaries


def caches_prefixes(prefix_caching: bool | None, layout: KvLayout) -> bool:
    """The side's prefix caching, vLLM's default where the stack leaves it: on unless the model is hybrid
    (infra/settings/prefix_caching.py), which the layout's Gated DeltaNet layers say."""
    return (not layout.state_layers) if prefix_caching is None else prefix_caching


def model_capacity(cfg: StackConfig) -> dict[str, Any] | None:
    """The model preflight: the source loads (ModelSourceError), its checkpoint takes the sides' quantization
    (ModelSourceError), and one request of maxModelLen fits each engine (CapacityError)."""
    model = read_model(cfg.model_source, cfg.max_model_len, cfg.hf_token_value, cfg.language_model_only)
    for warning in model.warnings:
        pulumi.log.warn(warning)
    sides = {side: getattr(cfg, side).quantization or "none" for side in ("prefill", "decode")}
    problems = checkpoint_problems(cfg.model_source, model.config or {}, sides, cfg.topology.node.gpu_name)
    if problems:
        raise ModelSourceError("; ".join(problems))
    return engine_capacity(cfg, model)


def models_capacity(cfg: StackConfig) -> dict[str, Any]:
    """The model preflight of each aggregated model (infra/settings/models.py): its source loads (ModelSourceError)
    and one request of its maxModelLen fits one of its engines (CapacityError), each named by its id."""
    summaries: dict[str, Any] = {}
    problems = []
    for spec in cfg.aggregated_models:
        try:
            model = read_model(spec.source, spec.max_model_len, cfg.hf_token_value, spec.language_model_only)
            for warning in model.warnings:
                pulumi.log.warn(f"models[id={spec.id!r}]: {warning}")
            summaries[spec.id] = model_engine_capacity(cfg, spec, model)
        except (ModelSourceError, CapacityError) as error:
            problems.append(f"models[id={spec.id!r}]: {error}")
    if problems:
        raise ModelSourceError("; ".join(problems))
    return summaries


def model_engine_capacity(cfg: StackConfig, spec: ModelSpec, model: ModelFacts) -> dict[str, Any] | None:
    """What one engine of an aggregated model holds on a GPU of gpuNodeType, as engine_capacity estimates a side's;
    None, with a warning, where the model's layout or weights are not known. LoRA's adapter slots are not counted."""
    layout = kv_layout(model.config, spec.tensor_parallel_size) if model.config else None
    if model.config is None or layout is None or model.tensors is None:
        if model.config:
            pulumi.log.warn(f"models[id={spec.id!r}]: capacity not estimated (its layer kinds or weights are unknown)")
        return None
    capacity = EngineCapacity(
        layout=layout,
        tensor_parallel_size=spec.tensor_parallel_size,
        gpu_memory_mib=cfg.topology.node.gpu_memory_mib,
        gpu_memory_utilization=vllm_default_gpu_memory_utilization(),
        weight_bytes=loaded_weight_bytes(model.tensors, False),
        max_model_len=spec.max_model_len,
        prefix_caching=caches_prefixes(None, layout),
    )
    problem = capacity_problem(capacity)
    if problem:
        raise CapacityError(problem)
    pulumi.log.info(f"capacity of models[id={spec.id!r}] {capacity.describe()}")
    return capacity.summary()


def mirrors_model(cfg: StackConfig) -> bool:
    """Whether the stack mirrors modelSource into its own bucket: only a Hub repo is (an s3:// source is read as it
    is, a path in the image needs nothing)."""
    return cfg.model_cache and is_hub_repo(cfg.model_source)


def model_cache_bucket(cfg: StackConfig) -> str:
    """The model cache's bucket, whose name holds the deploying account (STS), so the serve config can name it
    before the bucket exists."""
    return cache_bucket_name(cfg.cluster_name, aws.get_caller_identity().account_id, cfg.region)


def preflight(cfg: StackConfig) -> DeployFacts:
    """Makes every deploy-time lookup; raises PreflightError naming every problem they found."""
    problems: list[str] = []

    def attempt(check: Callable[[StackConfig], T]) -> T | None:
        try:
            return check(cfg)
        except ConfigError as error:
            problems.extend(error.problems)
        except (ModelSourceError, CapacityError) as error:
            problems.append(str(error))
        except Exception as error:
            # A lookup AWS refuses outright (an invoke error such as AccessDenied on servicequotas:GetServiceQuota)
            # leaves nothing to check against: it ends the preflight, with the problems found before it.
            raise PreflightError([*problems, f"{check.__name__}: {error}"]) from error
        return None

    partition = attempt(discover_partition)
    attempt(check_admin_principals)
    placement = attempt(discover_placement)
    addons = attempt(check_offerings)
    attempt(check_capacity_reservation)
    attempt(check_gpu_vcpu_quota)
    capacity = attempt(model_capacity) if cfg.model_preflight else None
    if cfg.model_preflight and cfg.aggregated_models:
        capacity = {**(capacity or {}), "models": attempt(models_capacity)}
    bucket = model_cache_bucket(cfg) if mirrors_model(cfg) else None
    if problems:
        raise PreflightError(problems)
    assert partition is not None and placement is not None and addons is not None
    return DeployFacts(
        partition=partition, placement=placement, addons=addons, capacity=capacity, model_cache_bucket=bucket
    )
