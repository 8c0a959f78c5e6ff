"""What one host needs changed in the stack's serve config, each change a named `Override`: a local model, a share
of the GPU, distinct ports for two engines, a transport this host can carry, the API-key ingress's paths here.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from infra.serving.code_package import CodePackage
from infra.serving.serve_config import KV_ROLES, PD_SIDES, PREFIX_CACHING_KEYS
from infra.settings.capacity import vllm_default_gpu_memory_utilization
from infra.settings.kv_offload import GIB, MULTI_CONNECTOR, OFFLOADING_CONNECTOR, nixl_config
from lab.smoke.document import (
    Override,
    Path_,
    engine_configs,
    engine_replicas,
    engines_of,
    pair_path,
    side_config,
    side_replicas,
)
from lab.smoke.host import HostFacts

# --api-key-auth: the keys file beside the package zip, where the cluster mounts the serve-api-keys Secret.
AUTH_KEYS_FILE = "api-keys"
AGGREGATED_IMPORT_PATH = "ray.serve.llm:build_openai_app"


def nixl_path(kv_transfer_config: dict[str, Any]) -> tuple[str | int, ...]:
    """Where nixl_config finds NIXL's config, below `kv_transfer_config`."""
    if kv_transfer_config.get("kv_connector") == MULTI_CONNECTOR:
        return ("kv_connector_extra_config", "connectors", 0)
    return ()


def host_tier_gib(kv_transfer_config: dict[str, Any]) -> int:
    """The tier a side's `kv_transfer_config` (as with_host_tier wrote it) holds, in GiB; 0 without one."""
    if kv_transfer_config.get("kv_connector") != MULTI_CONNECTOR:
        return 0
    children = kv_transfer_config["kv_connector_extra_config"]["connectors"]
    tiers = [c for c in children if c["kv_connector"] == OFFLOADING_CONNECTOR]
    return int(tiers[0]["kv_connector_extra_config"]["cpu_bytes_to_use"] // GIB) if tiers else 0


# vLLM 0.26 puts a TCPStore on VLLM_DP_MASTER_PORT + 100 in every engine: two engines on one host
# collide on the default unless each side gets its own (on EKS they are on separate pods).
DP_MASTER_PORTS = {"prefill": 29500, "decode": 31500}
# The models beside the pair (docs/models.md) take the next ones, one every 2000 like the sides'.
MODEL_DP_MASTER_PORT_BASE, DP_MASTER_PORT_STEP = 33500, 2000


# Both engines on one GPU (measured: lab/records/gpu-end-to-end.md, "Updating a running app"): each replica's one
# bundle holds half of it (Ray 2.58 PlacementGroupConfig takes `bundles` or `bundle_per_worker`,
# ray/llm/_internal/common/ placement.py), and vLLM's Ray executor asks for the same half per worker: it requests
# VLLM_RAY_PER_WORKER_GPUS (default 1.0) GPUs per worker (vllm/v1/executor/ray_executor_v2.py,
# `_get_actor_resource_kwargs`), which a half-GPU bundle cannot hold.
# The two engines' gpu_memory_utilization together must leave room for both on the one GPU.
KV_ROLE_CHOICES = {
    "both": {"prefill": "kv_both", "decode": "kv_both"},
    "producer-consumer": KV_ROLES,
}


# What vLLM 0.26 gives an engine the stack leaves unset, and so what a smaller GPU gets on its own: the share
# of GPU memory (`CacheConfig.gpu_memory_utilization`, vllm/config/cache.py) and, below 70 GiB, the batch
# limits for the OpenAI server context Ray Serve LLM starts engines in (`EngineArgs.get_batch_defaults`,
# vllm/engine/arg_utils.py; ray/llm/_internal/serve/engines/vllm/vllm_engine.py passes OPENAI_API_SERVER).
VLLM_DEFAULT_GPU_MEMORY_UTILIZATION = vllm_default_gpu_memory_utilization()
VLLM_LARGE_GPU_MIB = 70 * 1024
# With --share-gpu, several replicas of one engine config share the host: "v2" is vLLM 0.26's default Ray executor,
# which the stack keeps where replicas share a pod (infra/serving/serve_config.py PD_ENGINE_ENV); "classic" the one
# whose engines died on their first request there (lab/records/gpu-end-to-end.md), to run that again.
SHARED_GPU_EXECUTORS = ("v2", "classic")
INGRESS_ARGS = ("ingress_cls_config", "ingress_deployment_config")
VLLM_SMALL_GPU_BATCH_DEFAULTS = {"max_num_batched_tokens": 2048, "max_num_seqs": 256}


@dataclass(frozen=True)
class SmokeOptions:
    model_dir: Path
    model_has_mamba_state: bool = False  # hybrid models (Qwen3.5's Gated DeltaNet layers): see model_has_mamba_state
    aggregated: bool = False
    kv_roles: str | None = None  # a KV_ROLE_CHOICES key; None keeps what the stack emits
    gpu_memory_utilization: float = 0.3
    # (MiB of the GPU the run stands in for, MiB of this host's GPU): its share of memory and its batch defaults
    emulated_gpu: tuple[int, int] | None = None
    max_model_len: int | None = 512  # None keeps the stack's maxModelLen
    enforce_eager: bool = True
    unset_env: tuple[str, ...] = ()  # env vars the stack sets that this run leaves out (to show why)
    logging_config_path: Path | None = None  # NIXL debug logging for the KV-transfer proof
    share_gpu: bool = False  # prefill and decode on one GPU, half of it each
    shared_gpu_executor: str = "v2"  # a SHARED_GPU_EXECUTORS key: the Ray executor of replicas sharing the GPU
    auth_dir: Path | None = None  # --api-key-auth: the keys file, written here
    code_dir: Path | None = None  # the zips of the stack code the app loads (infra/serving/code_package.py)
    # The local directory of each model beside the pair, by its id (docs/models.md): --model-dir-of ID=DIR.
    model_dirs: tuple[tuple[str, Path], ...] = ()


def _emulated_gpu_overrides(
    llm: Path_, side: str, engine_kwargs: dict[str, Any], emulated_gpu: tuple[int, int]
) -> list[Override]:
    """The memory and batch limits vLLM would give this engine on a GPU of `emulated_gpu[0]` MiB."""
    emulated_mib, host_mib = emulated_gpu
    utilization = engine_kwargs.get("gpu_memory_utilization", VLLM_DEFAULT_GPU_MEMORY_UTILIZATION)
    overrides = [
        Override(
            "gpu_memory_utilization",
            (*llm, "engine_kwargs", "gpu_memory_utilization"),
            round(utilization * emulated_mib / host_mib, 4),
            f"{side}: {utilization} of a {emulated_mib} MiB GPU, as a share of this one's {host_mib} MiB",
        )
    ]
    if emulated_mib < VLLM_LARGE_GPU_MIB:
        overrides += [
            Override(
                "small_gpu_batch_defaults",
                (*llm, "engine_kwargs", key),
                value,
                f"{side}: vLLM's default below 70 GiB of GPU memory; on this larger GPU it would pick more",
            )
            for key, value in VLLM_SMALL_GPU_BATCH_DEFAULTS.items()
            if key not in engine_kwargs
        ]
    return overrides


def _engine_overrides(
    llm: Path_, side: str, engine_kwargs: dict[str, Any], opts: SmokeOptions, host: HostFacts
) -> list[Override]:
    """What every engine on this host needs, prefill, decode and the aggregated baseline alike."""
    overrides = [
        Override(
            "model_source",
            (*llm, "model_loading_config", "model_source"),
            str(opts.model_dir),
            f"{side}: a local model directory, no model hub",
        ),
    ]
    if opts.emulated_gpu is None:
        overrides.append(
            Override(
                "gpu_memory_utilization",
                (*llm, "engine_kwargs", "gpu_memory_utilization"),
                opts.gpu_memory_utilization,
                f"{side}: a small share of the GPU is plenty for a smoke test",
            )
        )
    else:
        overrides += _emulated_gpu_overrides(llm, side, engine_kwargs, opts.emulated_gpu)
    return overrides + _startup_overrides(llm, side, opts) + _missing_flashinfer_overrides(llm, side, opts, host)


def _startup_overrides(llm: Path_, side: str, opts: SmokeOptions) -> list[Override]:
    """A short context, an eager start and the env vars left out, as the options ask."""
    overrides = []
    if opts.max_model_len is not None:
        overrides.append(
            Override(
                "max_model_len",
                (*llm, "engine_kwargs", "max_model_len"),
                opts.max_model_len,
                f"{side}: a short context keeps the KV cache and start-up small",
            )
        )
    if opts.enforce_eager:
        overrides.append(
            Override(
                "enforce_eager",
                (*llm, "engine_kwargs", "enforce_eager"),
                True,
                f"{side}: no torch.compile or CUDA-graph capture, a faster start",
            )
        )
    env = (*llm, "runtime_env", "env_vars")
    return overrides + [
        Override("unset_env", (*env, name), None, f"{side}: --unset-env {name}, to show what it is for", True)
        for name in opts.unset_env
    ]


def _missing_flashinfer_overrides(llm: Path_, side: str, opts: SmokeOptions, host: HostFacts) -> list[Override]:
    if host.has_flashinfer:
        return []
    overrides = [
        Override(
            "flashinfer_sampler_off",
            (*llm, "runtime_env", "env_vars", "VLLM_USE_FLASHINFER_SAMPLER"),
            "0",
            f"{side}: flashinfer is not installed here; vLLM's sampler imports it unless told not to",
        )
    ]
    if opts.model_has_mamba_state:
        overrides.append(
            Override(
                "gdn_prefill_triton",
                (*llm, "engine_kwargs", "additional_config", "gdn_prefill_backend"),
                "triton",
                f"{side}: flashinfer is not installed here; vLLM 0.26 runs Gated DeltaNet prefill on it on "
                "Hopper unless additional_config picks its Triton kernels",
            )
        )
    return overrides


def shared_gpu_bundles(fraction: float) -> dict[str, Any]:
    """Ray 2.58's PlacementGroupConfig (`bundles`): one bundle of the GPU share and a CPU per replica."""
    return {"bundles": [{"GPU": fraction, "CPU": 1}]}


def pd_overrides(cfg_doc: dict[str, Any], opts: SmokeOptions, host: HostFacts) -> list[Override]:
    overrides: list[Override] = []
    for side in PD_SIDES:
        llm: Path_ = (*pair_path(cfg_doc), f"{side}_config")
        env = (*llm, "runtime_env", "env_vars")
        engine_kwargs = side_config(cfg_doc, side)["engine_kwargs"]
        transfer = engine_kwargs["kv_transfer_config"]
        kv = (*llm, "engine_kwargs", "kv_transfer_config", *nixl_path(transfer))
        overrides += _engine_overrides(llm, side, engine_kwargs, opts, host)
        overrides += _transport_overrides(kv, side, nixl_config(transfer), host, opts.model_has_mamba_state)
        overrides.append(
            Override(
                "dp_master_port",
                (*env, "VLLM_DP_MASTER_PORT"),
                str(DP_MASTER_PORTS[side]),
                f"{side}: two engines on one host need distinct TCPStore ports",
            )
        )
        if opts.kv_roles is not None:
            role = KV_ROLE_CHOICES[opts.kv_roles][side]
            if nixl_config(transfer)["kv_role"] != role:
                overrides.append(Override("kv_role", (*kv, "kv_role"), role, f"{side}: --kv-roles {opts.kv_roles}"))
        if opts.share_gpu:
            overrides += _share_gpu_overrides(cfg_doc, side, opts.shared_gpu_executor)
        if opts.logging_config_path is not None:
            overrides.append(
                Override(
                    "nixl_debug_logging",
                    (*env, "VLLM_LOGGING_CONFIG_PATH"),
                    str(opts.logging_config_path),
                    f"{side}: DEBUG for the NIXL connector only, which logs each finished KV transfer",
                )
            )
    return overrides


def _share_gpu_overrides(cfg_doc: dict[str, Any], side: str, executor: str) -> list[Override]:
    """--share-gpu: every engine of the app on the one GPU, each replica's bundle an equal share of it."""
    llm: Path_ = (*pair_path(cfg_doc), f"{side}_config")
    replicas = side_replicas(cfg_doc, side)
    return shared_gpu_overrides(llm, side, engines_of(cfg_doc), replicas, executor)


def shared_gpu_overrides(llm: Path_, label: str, engines: int, replicas: int, executor: str) -> list[Override]:
    """One engine config's share of the one GPU among `engines` engines, `replicas` of them this config's, on the
    `executor` (a SHARED_GPU_EXECUTORS key) where there are several."""
    env_path = (*llm, "runtime_env", "env_vars")
    fraction = 1 / engines
    overrides = [
        Override(
            "share_gpu_bundle",
            (*llm, "placement_group_config"),
            shared_gpu_bundles(fraction),
            f"{label}: --share-gpu, every engine on one GPU, {fraction:g} of it for each replica",
        ),
        Override(
            "share_gpu_worker_gpus",
            (*env_path, "VLLM_RAY_PER_WORKER_GPUS"),
            f"{fraction:g}",
            f"{label}: --share-gpu, vLLM's Ray worker asks for the bundle's share of the GPU, not a whole one "
            "(Ray 2.58 derives the same from the bundle when unset; set as measured)",
        ),
    ]
    if replicas > 1 and executor == "classic":
        overrides.append(
            Override(
                "share_gpu_executor",
                (*env_path, "VLLM_USE_RAY_V2_EXECUTOR_BACKEND"),
                "0",
                f"{label}: --shared-gpu-executor classic: vLLM's classic Ray executor for these replicas on one host "
                '(its engines died on their first request in the runs of lab/records/gpu-end-to-end.md, "Two replicas '
                'through an update")',
            )
        )
    return overrides


def _transport_overrides(
    kv: Path_, side: str, built_kv: dict[str, Any], host: HostFacts, mamba_state: bool
) -> list[Override]:
    """Keep the production backend, LIBFABRIC, wherever it can carry this model's KV on this host.

    Without an EFA device libfabric offers only its tcp provider, which has no FI_HMEM: NIXL can then
    register host memory only ("Memory type 1 is not supported by libfabric backend" for CUDA tensors,
    lab/records/gpu-end-to-end.md), so the KV is staged in host memory. vLLM 0.26 cannot stage a hybrid
    model's Mamba state there (`initialize_host_xfer_buffer` takes every layer's cache for one tensor:
    "'list' object has no attribute 'shape'", measured), so such a model, like a host without a
    libfabric >= 1.21, falls back to UCX.
    """
    if host.has_efa:
        return []
    if not host.nixl_libfabric_usable or mamba_state:
        found = "missing" if host.libfabric is None else ".".join(map(str, host.libfabric))
        why = (
            f"libfabric {found} (NIXL needs >= 1.21)"
            if not host.nixl_libfabric_usable
            else "a hybrid model, whose Mamba state vLLM 0.26 cannot stage in host memory for libfabric's tcp provider"
        )
        return [
            Override(
                "nixl_backend",
                (*kv, "kv_connector_extra_config", "backends"),
                ["UCX"],
                f"{side}: no EFA device and {why}; UCX moves the KV between local GPUs",
            )
        ]
    overrides = [
        Override(
            "libfabric_provider",
            (*kv[: kv.index("engine_kwargs")], "runtime_env", "env_vars", "FI_PROVIDER"),
            "tcp",
            f"{side}: no EFA device on this host; libfabric's tcp provider carries NIXL's transfers",
        )
    ]
    if built_kv.get("kv_buffer_device") != "cpu":
        overrides.append(
            Override(
                "kv_buffer_device",
                (*kv, "kv_buffer_device"),
                "cpu",
                f"{side}: libfabric's tcp provider registers host memory only (no FI_HMEM); KV staged in host memory",
            )
        )
    return overrides


def prefilling_engine(decode: dict[str, Any], prefill: dict[str, Any]) -> dict[str, Any]:
    """The baseline engine: the decode side's config without the KV connector (same model and settings), caching
    prefixes, with the host KV tier, as the prefill side does, since it prefills too (infra/settings/prefix_caching.py),
    and routing by them where the prefill side does and it has replicas to choose from."""
    engine = copy.deepcopy(decode)
    del engine["engine_kwargs"]["kv_transfer_config"]
    # The prefill side's host KV tier, by vLLM's own switch for an engine without another connector
    # (infra/settings/kv_offload.py).
    tier_gib = host_tier_gib(prefill["engine_kwargs"]["kv_transfer_config"])
    if tier_gib:
        engine["engine_kwargs"]["kv_offloading_size"] = tier_gib
    for key in PREFIX_CACHING_KEYS:
        engine["engine_kwargs"].pop(key, None)
        if key in prefill["engine_kwargs"]:
            engine["engine_kwargs"][key] = prefill["engine_kwargs"][key]
    engine["deployment_config"].pop("request_router_config", None)
    deployment = engine["deployment_config"]
    most_replicas = deployment.get("num_replicas") or deployment["autoscaling_config"]["max_replicas"]
    router = prefill["deployment_config"].get("request_router_config")
    if router and most_replicas > 1:
        engine["deployment_config"]["request_router_config"] = copy.deepcopy(router)
    return engine


def aggregated_overrides(cfg_doc: dict[str, Any], opts: SmokeOptions, host: HostFacts) -> list[Override]:
    args = cfg_doc["applications"][0]["args"]
    engine = prefilling_engine(args["decode_config"], args["prefill_config"])
    app: Path_ = ("applications", 0)
    llm: Path_ = (*app, "args", "llm_configs", 0)
    replicas = engine_replicas(engine)
    # build_openai_app takes the same ingress_cls_config and ingress_deployment_config as the PD builder
    # (ray/llm/_internal/serve/core/ingress/builder.py, LLMServingArgs), so the baseline sits behind the same API-key
    # ingress and as many ingress replicas as the stack emits.
    ingress = {key: copy.deepcopy(args[key]) for key in INGRESS_ARGS if key in args}
    return [
        Override(
            "aggregated_app", (*app, "import_path"), AGGREGATED_IMPORT_PATH, "baseline: one engine, no disaggregation"
        ),
        Override(
            "aggregated_app",
            (*app, "args"),
            {"llm_configs": [engine], **ingress},
            "baseline: the decode engine's config without kv_transfer_config, with the prefill side's prefix caching "
            "(and prefix routing, with more than one replica), a GPU for each of its replicas"
            + (f", with the stack's {' and '.join(ingress)}" if ingress else ""),
        ),
        *_engine_overrides(llm, "aggregated", engine["engine_kwargs"], opts, host),
        *(
            shared_gpu_overrides(llm, "aggregated", replicas, replicas, opts.shared_gpu_executor)
            if opts.share_gpu
            else []
        ),
    ]


def model_overrides(cfg_doc: dict[str, Any], opts: SmokeOptions, host: HostFacts) -> list[Override]:
    """Each model beside the pair (the several-model builder's llm_configs) as every engine on this host needs it, from
    its own local directory, with a TCPStore port of its own."""
    dirs = dict(opts.model_dirs)
    overrides: list[Override] = []
    for index, engine in enumerate(cfg_doc["applications"][0]["args"].get("llm_configs", [])):
        model_id = engine["model_loading_config"]["model_id"]
        if model_id not in dirs:
            raise ValueError(f"the stack serves model {model_id!r} beside the pair: give --model-dir-of {model_id}=DIR")
        llm: Path_ = ("applications", 0, "args", "llm_configs", index)
        own = replace(opts, model_dir=dirs[model_id])
        overrides += _engine_overrides(llm, model_id, engine["engine_kwargs"], own, host)
        overrides.append(
            Override(
                "dp_master_port",
                (*llm, "runtime_env", "env_vars", "VLLM_DP_MASTER_PORT"),
                str(MODEL_DP_MASTER_PORT_BASE + DP_MASTER_PORT_STEP * index),
                f"{model_id}: engines on one host need distinct TCPStore ports",
            )
        )
        if opts.share_gpu:
            replicas = engine_replicas(engine)
            overrides += shared_gpu_overrides(llm, model_id, engines_of(cfg_doc), replicas, opts.shared_gpu_executor)
    return overrides


def code_overrides(packages: list[CodePackage], opts: SmokeOptions) -> list[Override]:
    """The stack code the app loads (the API-key ingress, the prefix router, the autoscaling policy), from zips on this
    host, where the cluster mounts them from ConfigMaps."""
    if not packages:
        return []
    if opts.code_dir is None:
        raise ValueError(f"the stack's serve config loads {[p.package for p in packages]}: give the code's folder")
    return [
        Override(
            "code_packages",
            ("applications", 0, "runtime_env", "py_modules"),
            [package.uri(str(opts.code_dir)) for package in packages],
            "the stack's code zips from this host, where the cluster mounts them from ConfigMaps",
        )
    ]


def auth_overrides(cfg_doc: dict[str, Any], opts: SmokeOptions) -> list[Override]:
    """The API-key ingress as the stack emits it, its keys file (the mounted Secret in the cluster) on this host."""
    app = cfg_doc["applications"][0]
    if "ingress_cls_config" not in app["args"]:
        return []
    if opts.auth_dir is None:
        raise ValueError("the stack's serve config asks for API keys: run with --api-key-auth")
    return [
        Override(
            "auth_keys_file",
            ("applications", 0, "args", "ingress_cls_config", "ingress_extra_kwargs", "api_keys_file"),
            str(opts.auth_dir / AUTH_KEYS_FILE),
            "the keys file on this host, where the cluster mounts the serve-api-keys Secret",
        ),
    ]


def gpus_needed(smoke: dict[str, Any], opts: SmokeOptions) -> int:
    """The GPUs the app's engines take: each replica one per tensor x pipeline parallel rank (Ray Serve LLM 2.58's
    default placement bundles: python/ray/llm/_internal/serve/engines/vllm/vllm_models.py `num_devices`), so the
    aggregated baseline at `decodeReplicas` 2 needs two, like 1P1D; with --share-gpu both sides fit on one."""
    if opts.share_gpu:
        return 1
    return sum(
        engine_replicas(engine)
        * int(engine["engine_kwargs"].get("tensor_parallel_size", 1))
        * int(engine["engine_kwargs"].get("pipeline_parallel_size", 1))
        for engine in engine_configs(smoke)
    )
