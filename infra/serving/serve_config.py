"""The whole application: Ray Serve LLM's prefill/decode app as a `serveConfigV2` document.

A plain function of its own args (`ServeAppArgs`; `serve_app_args` reads them from the stack config), so the
RayService, the offline render and the GPU smoke test all use exactly the same document.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from infra.serving import edge, prefix_routing, serve_auth
from infra.serving.code_package import CodePackage
from infra.settings.autoscaling import ScalingPace, policy_kwargs
from infra.settings.kv_offload import with_host_tier
from infra.settings.model_sources import split_s3_uri
from infra.settings.models import ModelSpec
from infra.settings.prefix_caching import PD_MAMBA_CACHE_MODE

if TYPE_CHECKING:
    from infra.settings.stack_config import ServeSide, StackConfig

PD_IMPORT_PATH = "ray.serve.llm:build_pd_openai_app"
# Ray 2.58's PD builder binds one model to its ingress (prefill_decode/builder.py build_pd_openai_app: llm_deployments
# of the decode config's model alone), and build_openai_app no PD pair: the stack's builder binds both to one ingress.
MODELS_CODE = CodePackage("ray_llm_eks_models", "models-builder-code", "/opt/ray-llm-eks/models-builder")
MODELS_IMPORT_PATH = f"{MODELS_CODE.package}.builder:build_models_app"
KV_CONNECTOR = "NixlConnector"
# NIXL picks UCX by default, which runs at TCP speed on EKS without an error. LIBFABRIC rides EFA.
NIXL_EFA_BACKEND = "LIBFABRIC"
PD_SIDES = ("prefill", "decode")
# Ray Serve LLM's base port of each side's NIXL handshake listener; a replica's lies at its base plus rank times GPUs
# (docs/security.md#port-by-port).
NIXL_SIDE_CHANNEL_BASES = {"prefill": 20000, "decode": 22000}
# vLLM 0.26 deprecates kv_both for NixlConnector; Ray 2.58's PD builder passes the roles through, and
# prefill as kv_producer / decode as kv_consumer booted and served (lab/records/gpu-end-to-end.md).
KV_ROLES = {"prefill": "kv_producer", "decode": "kv_consumer"}
# vLLM 0.26's NIXL worker refuses a model with Mamba-type state unless its conv state is laid out "DS" (its default
# is "SD"); pure-attention models are unaffected (lab/records/gpu-end-to-end.md). The engines keep vLLM's default
# Ray executor (docs/scaling.md).
PD_ENGINE_ENV = {"VLLM_SSM_CONV_STATE_LAYOUT": "DS"}
# A replica's GPUs on one node, where tensor parallelism rides NVLink/PCIe (docs/scaling.md).
PLACEMENT_STRATEGY = "STRICT_PACK"
# Two ingress replicas keep one answering while a serve-config change restarts the other; set only where both sides
# have two replicas (docs/serve-updates.md#what-the-stack-sets-for-two-replicas-to-keep-serving).
ROLLING_INGRESS_REPLICAS = 2
# The slowest decode pace the project has a figure for (an L4, estimated), which times the longest stream a replica
# being replaced may finish (docs/serve-updates.md#what-the-stack-sets-for-two-replicas-to-keep-serving, item 3).
DECODE_SECONDS_PER_TOKEN = 0.060
# The stack's latency-objective autoscaling policy (serve_ext/ray_llm_eks_autoscale), which Serve 2.58 imports by
# `policy_function` and builds with `policy_kwargs` (ray/serve/config.py AutoscalingPolicy).
AUTOSCALE_CODE = CodePackage("ray_llm_eks_autoscale", "autoscale-policy-code", "/opt/ray-llm-eks/autoscale-policy")
AUTOSCALE_POLICY = f"{AUTOSCALE_CODE.package}.policy:LatencyObjectivePolicy"
# Serve 2.58's own delays (ray/serve/config.py AutoscalingConfig: upscale_delay_s 30.0, downscale_delay_s 600.0): a
# config that states them anew would change the app's args and so restart every engine for nothing.
SERVE_DEFAULT_DELAYS = {"upscale_delay_s": 30, "downscale_delay_s": 600}
# The engine arguments of prefix caching (prefix_caching_kwargs).
PREFIX_CACHING_KEYS = ("enable_prefix_caching", "mamba_cache_mode")


@dataclass(frozen=True)
class ServeAppArgs:
    """What the prefill/decode application is made of."""

    name: str  # the Serve application's name (the RayService's)
    model_id: str  # the name clients ask for
    # Where the engines load the weights: a Hugging Face repo id, s3:// prefix (the stack's model cache's copy of
    # the repo, infra/serving/model_cache.py, or the user's own) or path in the image.
    model_source: str
    max_model_len: int
    language_model_only: bool  # vLLM language_model_only: no vision tower
    prefill: ServeSide
    decode: ServeSide
    tensor_parallel_size: int
    pipeline_parallel_size: int
    kv_buffer_device: str  # "cuda" or "cpu" (resolve_kv_buffer_device)
    kv_cache_dtype: str  # "auto" or an FP8 dtype, both sides alike
    api_key_auth: bool  # our ingress asks for a key (infra/serving/serve_auth.py)
    scaling_pace: ScalingPace  # Serve's delays and the objectives' percentile, with serveAutoscaling
    model_hybrid: bool | None = None  # the model has Mamba-type state; None where the project does not know
    # The models served by an engine each beside the PD pair (infra/settings/models.py), and the model cache bucket
    # their adapters load from.
    aggregated_models: tuple[ModelSpec, ...] = ()
    adapter_bucket: str | None = None


def serve_app_args(
    cfg: StackConfig, model_cache_uri: str | None = None, adapter_bucket: str | None = None
) -> ServeAppArgs:
    """`model_cache_uri`: the model cache's copy of modelSource, which the engines load instead when it is set; its
    bucket holds the adapters, unless `adapter_bucket` names another (the GPU smoke's local S3 server)."""
    return ServeAppArgs(
        name=cfg.ray_service_name,
        model_id=cfg.model_id,
        model_source=model_cache_uri or cfg.model_source,
        max_model_len=cfg.max_model_len,
        language_model_only=cfg.language_model_only,
        prefill=cfg.prefill,
        decode=cfg.decode,
        tensor_parallel_size=cfg.topology.tensor_parallel_size,
        pipeline_parallel_size=cfg.topology.pipeline_parallel_size,
        kv_buffer_device=cfg.kv_buffer_device,
        kv_cache_dtype=cfg.kv_cache_dtype,
        api_key_auth=cfg.serve_api_key_auth,
        scaling_pace=cfg.scaling_pace,
        model_hybrid=cfg.model_hybrid,
        aggregated_models=cfg.aggregated_models,
        adapter_bucket=adapter_bucket or (split_s3_uri(model_cache_uri)[0] if model_cache_uri else None),
    )


def _side(args: ServeAppArgs, side: str) -> ServeSide:
    return {"prefill": args.prefill, "decode": args.decode}[side]


def deployment_config(side: ServeSide, pace: ScalingPace, name: str) -> dict[str, Any]:
    """A fixed replica count, or Ray Serve's autoscaling between the side's minimum and maximum; the prefix-aware
    router where the side routes by prefix (infra/serving/prefix_routing.py)."""
    router = {"request_router_config": prefix_routing.request_router_config()} if side.prefix_routing else {}
    if side.max_replicas is None:
        return {"num_replicas": side.replicas, **router}
    return {"autoscaling_config": autoscaling_config(side, pace, name), **router}


def autoscaling_config(side: ServeSide, pace: ScalingPace, name: str) -> dict[str, Any]:
    """Serve's autoscaling between the side's minimum and maximum, at its target of ongoing requests; with a latency
    objective, the stack's policy on it (infra/settings/autoscaling.py); the delays where they differ from Serve's."""
    config: dict[str, Any] = {
        "min_replicas": side.replicas,
        "max_replicas": side.max_replicas,
        "target_ongoing_requests": side.target_ongoing_requests,
    }
    delays = {"upscale_delay_s": pace.upscale_delay_s, "downscale_delay_s": pace.downscale_delay_s}
    config.update({key: value for key, value in delays.items() if value != SERVE_DEFAULT_DELAYS[key]})
    if side.latency_objective_ms:
        kwargs = policy_kwargs(name, side.latency_objective_ms, pace.percentile)
        config["policy"] = {"policy_function": AUTOSCALE_POLICY, "policy_kwargs": kwargs}
    return config


def longest_stream_s(max_model_len: int) -> int:
    """A whole context at the slowest decode pace (DECODE_SECONDS_PER_TOKEN), in whole seconds."""
    return math.ceil(max_model_len * DECODE_SECONDS_PER_TOKEN)


def longest_context(max_model_len: int, aggregated_models: tuple[ModelSpec, ...]) -> int:
    """The longest context any model of the app serves: the PD pair's and each aggregated model's."""
    return max([max_model_len, *(model.max_model_len for model in aggregated_models)])


def ingress_deployment_config(args: ServeAppArgs) -> dict[str, Any]:
    """Every stream passes through an ingress replica, which each serve-config change replaces: it gets the longest
    stream's time to finish (the builder merges these into its own options, ray/llm/_internal/common/dict_utils.py
    `maybe_apply_llm_deployment_config_defaults`). Two ingress replicas where both sides have two or more, else the
    builder's default; a `num_replicas` drops OpenAiIngress's autoscaling default, which Serve refuses beside it."""
    longest = longest_context(args.max_model_len, args.aggregated_models)
    options: dict[str, Any] = {"graceful_shutdown_timeout_s": longest_stream_s(longest)}
    if min(args.prefill.replicas, args.decode.replicas) >= ROLLING_INGRESS_REPLICAS:
        options["num_replicas"] = ROLLING_INGRESS_REPLICAS
    return {"ingress_deployment_config": options}


def _engine_overrides(args: ServeAppArgs, side: ServeSide) -> dict[str, int | str | bool]:
    """What the side sets instead of vLLM's default; an FP8 KV cache on both sides alike (NIXL's compatibility
    hash holds `cache_dtype`, infra/settings/quantization.py)."""
    overrides = {
        "max_num_seqs": side.max_num_seqs,
        "max_num_batched_tokens": side.max_num_batched_tokens,
        "quantization": side.quantization,
        "kv_cache_dtype": None if args.kv_cache_dtype == "auto" else args.kv_cache_dtype,
        **prefix_caching_kwargs(side.prefix_caching, args.model_hybrid),
    }
    return {key: value for key, value in overrides.items() if value is not None}


def prefix_caching_kwargs(enabled: bool | None, model_hybrid: bool | None) -> dict[str, bool | str | None]:
    """vLLM's `enable_prefix_caching` where the side's differs from vLLM's own default (stating the default anew would
    restart every engine for nothing), and `mamba_cache_mode` align on a cached side of a model that is or may be
    hybrid, so the PD pair's block sizes stay equal
    (docs/prefix-caching.md#each-side-of-pd-read-in-vllm-026s-nixlconnector-vllmdistributedkv_transferkv_connectorv1nixl)."""
    vllm_default = None if model_hybrid is None else not model_hybrid
    enable = None if enabled == vllm_default else enabled
    mode = PD_MAMBA_CACHE_MODE if enabled and model_hybrid is not False else None
    return dict(zip(PREFIX_CACHING_KEYS, (enable, mode), strict=True))


def model_loading_config(model_id: str, model_source: str) -> dict[str, str]:
    """Where the engines load the weights from; an `s3://` source is Ray Serve LLM 2.58's cloud loading
    (docs/model-cache.md#model-cache-and-cold-start), which the GPU proof (lab/s3_load.py) loads through this
    function."""
    return {"model_id": model_id, "model_source": model_source}


def llm_config(args: ServeAppArgs, side: str) -> dict[str, Any]:
    """One side of the PD pair: same model, context and parallelism on both, its own NIXL engine id; with a host
    KV tier, NIXL and the tier together (infra/settings/kv_offload.py)."""
    serve_side = _side(args, side)
    return {
        "model_loading_config": model_loading_config(args.model_id, args.model_source),
        "engine_kwargs": {
            "max_model_len": args.max_model_len,
            "language_model_only": args.language_model_only,
            "tensor_parallel_size": args.tensor_parallel_size,
            "pipeline_parallel_size": args.pipeline_parallel_size,
            **_engine_overrides(args, serve_side),
            "kv_transfer_config": with_host_tier(
                {
                    "kv_connector": KV_CONNECTOR,
                    "kv_role": KV_ROLES[side],
                    "engine_id": side,
                    "kv_buffer_device": args.kv_buffer_device,
                    "kv_connector_extra_config": {"backends": [NIXL_EFA_BACKEND]},
                },
                serve_side.kv_offload_gib,
            ),
        },
        "placement_group_config": {"bundle_per_worker": {"CPU": 1, "GPU": 1}, "strategy": PLACEMENT_STRATEGY},
        "deployment_config": {
            **deployment_config(serve_side, args.scaling_pace, side),
            "graceful_shutdown_timeout_s": longest_stream_s(args.max_model_len),
        },
        "runtime_env": {"env_vars": dict(PD_ENGINE_ENV)},
    }


def code_packages(args: ServeAppArgs) -> list[CodePackage]:
    """The stack code the app loads (infra/serving/code_package.py): the API-key ingress, the prefix router, the
    latency-objective policy, the several-model builder."""
    wanted = {
        serve_auth.CODE: args.api_key_auth,
        prefix_routing.CODE: routes_by_prefix(args),
        AUTOSCALE_CODE: scales_on_latency(args),
        MODELS_CODE: bool(args.aggregated_models),
    }
    return [package for package, used in wanted.items() if used]


def scales_on_latency(args: ServeAppArgs) -> bool:
    return any(_side(args, side).latency_objective_ms for side in PD_SIDES)


def routes_by_prefix(args: ServeAppArgs) -> bool:
    return args.prefill.prefix_routing or args.decode.prefix_routing


def build_serve_config(args: ServeAppArgs) -> dict[str, Any]:
    """The app; with API keys on, the PD builder's ingress is ours (serve_auth.py), a side that routes by prefix names
    the stack's router (prefix_routing.py), aggregated models are bound to the one ingress by the stack's builder
    (serve_ext/ray_llm_eks_models), and Serve's proxy listens behind the edge, on each pod's loopback (edge.py)."""
    import_path = MODELS_IMPORT_PATH if args.aggregated_models else PD_IMPORT_PATH
    app: dict[str, Any] = {"name": args.name, "import_path": import_path, "route_prefix": "/"}
    code = [package.uri() for package in code_packages(args)]
    if code:
        app["runtime_env"] = {"py_modules": code}
    pd_pair = {f"{side}_config": llm_config(args, side) for side in PD_SIDES}
    models = {"llm_configs": [aggregated_llm_config(args, model) for model in args.aggregated_models]}
    app["args"] = {
        **(models | {"pd_config": pd_pair} if args.aggregated_models else pd_pair),
        **ingress_deployment_config(args),
        **(serve_auth.ingress_args() if args.api_key_auth else {}),
    }
    return {"http_options": edge.serve_http_options(), "applications": [app]}


def aggregated_llm_config(args: ServeAppArgs, model: ModelSpec) -> dict[str, Any]:
    """One engine of the model per replica (Ray Serve LLM's LLMServer); with adapters, vLLM's LoRA (enable_lora: a
    batch of at most max_loras adapters of rank max_lora_rank or less) and Ray's dynamic loading of each adapter from
    its folder under the model's prefix in the cache bucket, on the first request that names it."""
    engine: dict[str, Any] = {
        "max_model_len": model.max_model_len,
        "language_model_only": model.language_model_only,
        "tensor_parallel_size": model.tensor_parallel_size,
    }
    if model.max_num_seqs is not None:
        engine["max_num_seqs"] = model.max_num_seqs
    config: dict[str, Any] = {
        "model_loading_config": model_loading_config(model.id, model.source),
        "engine_kwargs": engine,
        "placement_group_config": {"bundle_per_worker": {"CPU": 1, "GPU": 1}, "strategy": PLACEMENT_STRATEGY},
        "deployment_config": {
            "num_replicas": model.replicas,
            "graceful_shutdown_timeout_s": longest_stream_s(model.max_model_len),
        },
    }
    if model.adapters:
        engine.update(enable_lora=True, max_loras=model.max_adapters_per_replica, max_lora_rank=model.max_adapter_rank)
        config["lora_config"] = {
            "dynamic_lora_loading_path": f"s3://{args.adapter_bucket}/{model.adapter_prefix}",
            "max_num_adapters_per_replica": model.max_adapters_per_replica,
        }
    return config


# What Serve 2.58 hashes into an application's code version, whose change restarts every replica of it
# (docs/serve-updates.md#what-serve-258-does-read-in-its-source).
CODE_VERSION_KEYS = ("import_path", "runtime_env", "args")


def engine_restart_digest(serve_config: dict[str, Any]) -> str:
    """A digest that changes exactly when a new serve config restarts the engines: each application's code-version
    inputs, by name. With clusterUpgradeStrategy newCluster it goes on the head's pod template
    (infra/serving/rayservice.py), so such a change is a new RayCluster beside the serving one."""
    versions = {app["name"]: {key: app.get(key) for key in CODE_VERSION_KEYS} for app in serve_config["applications"]}
    return hashlib.sha256(json.dumps(versions, sort_keys=True).encode()).hexdigest()
