"""GPU smoke test: boot the stack's own Serve app on one machine and prove it serves.

`python -m tools.smoke --stack dev --model-dir DIR` (a host with two or more NVIDIA GPUs and
`requirements-gpu.txt` installed) takes the serve config the RayService gets, built by the same
`infra.serving.serve_config.build_serve_config` from the stack's config, and changes only what one host
needs; each change is printed by name. It then starts Ray, deploys the app through the dashboard's
REST API (the call KubeRay makes), waits for RUNNING, lists the models, times a streamed chat
completion, checks the logs for the NIXL backend and a prefill→decode KV transfer, stops Ray and
exits 0 only when every step passed. `--aggregated` serves the same model without disaggregation
(`build_openai_app`, one replica, one GPU) as the baseline; `--share-gpu` puts prefill and decode on one
GPU; `--update-scenario OUT.json` then replays KubeRay's in-place update (a good change, a broken one, the
rollback) under traffic and judges each with the stack's rollout verdict (`infra.serving.rollout_status`);
`--metrics-out FILE` scrapes Ray's metrics export; `--dry-run` only builds, prints and validates the
config. `python -m tools.tiny_model DIR` makes a model for it with no model hub.
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import importlib.util
import json
import logging
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import openai
import yaml

from infra.serving import serve_auth
from infra.serving.rollout_status import FAILED, FAILED_APP_STATUSES, READY, WAITING, Verdict, serve_verdict
from infra.serving.serve_config import KV_ROLES, PD_IMPORT_PATH, PD_SIDES, build_serve_config, serve_app_args
from infra.settings.capacity import vllm_default_gpu_memory_utilization
from infra.settings.config import API_KEYS_SETTING
from serve_ext.ray_llm_eks_auth import RELOAD_SECONDS
from tools.offline import load_stack_config, stack_file
from tools.probe import NIXL_BACKEND_LINE, CheckResult, EmptyCompletion, Report, client, model_ids, stream_chat
from tools.project import PROJECT, key_value_pairs

if TYPE_CHECKING:
    from infra.settings.config import StackConfig

AGGREGATED_IMPORT_PATH = "ray.serve.llm:build_openai_app"
DASHBOARD_URL = "http://127.0.0.1:8265"
SERVE_URL = "http://127.0.0.1:8000"
# vLLM 0.26 puts a TCPStore on VLLM_DP_MASTER_PORT + 100 in every engine: two engines on one host
# collide on the default unless each side gets its own (on EKS they are on separate pods).
DP_MASTER_PORTS = {"prefill": 29500, "decode": 31500}
# --api-key-auth: the keys file beside the package zip, and how many keys (two, as while a key is rotated).
AUTH_KEYS_FILE = "api-keys"
AUTH_KEY_COUNT = 2
# A rotated keys file is honoured within the ingress's reload interval; three of them is a generous bound.
AUTH_ROTATION_TIMEOUT_S = 3 * RELOAD_SECONDS
# Both engines on one GPU (measured in ../shared/notes/serve-updates.md): each replica's one bundle holds half
# of it (Ray 2.58 PlacementGroupConfig takes `bundles` or `bundle_per_worker`, ray/llm/_internal/common/
# placement.py), and vLLM's Ray executor asks for the same half per worker: it requests
# VLLM_RAY_PER_WORKER_GPUS (default 1.0) GPUs per worker (vllm/v1/executor/ray_executor_v2.py,
# `_get_actor_resource_kwargs`), which a half-GPU bundle cannot hold.
# The two engines' gpu_memory_utilization together must leave room for both on the one GPU.
KV_ROLE_CHOICES = {
    "both": {"prefill": "kv_both", "decode": "kv_both"},
    "producer-consumer": KV_ROLES,
}
# The NIXL connector logs each finished KV read only at DEBUG. This turns DEBUG on for its modules
# alone, so the proof of a transfer does not cost the engines a flood of unrelated log lines.
NIXL_LOGGER = "vllm.distributed.kv_transfer.kv_connector.v1.nixl"
NIXL_DEBUG_LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"vllm": {"format": "%(levelname)s %(asctime)s [%(name)s:%(lineno)d] %(message)s"}},
    "handlers": {
        "vllm": {"class": "logging.StreamHandler", "formatter": "vllm", "level": "DEBUG", "stream": "ext://sys.stdout"}
    },
    "loggers": {
        "vllm": {"handlers": ["vllm"], "level": "INFO", "propagate": False},
        NIXL_LOGGER: {"level": "DEBUG"},
    },
}
NIXL_HANDSHAKE_LINE = re.compile(r"NIXL compatibility check passed")
# Which engine a NIXL worker process serves: "prefill-<host>-<port>" or "decode-<host>-<port>".
NIXL_WORKER_LINE = re.compile(r"Initializing NIXL worker ((\w+)-\S+)")
# The DEBUG lines that prove a transfer: decode's worker starts a read from prefill's engine...
KV_READ_LINE = re.compile(r"start_load_kv for request (\S+) from remote engine (\S+?)\.? Num")
# ...its scheduler reserved room for the prompt tokens whose KV comes from prefill...
KV_TOKENS_LINE = re.compile(r"update_state_after_alloc: num_external_tokens=([1-9]\d*)")
# ...and each worker reports finished transfers ("done recving" counts the failed ones too).
KV_FINISHED_LINE = re.compile(
    r"get_finished: (\d+) requests done sending and (\d+) requests done recving \((\d+) failed\)"
)
# Ray prefixes forwarded lines with every hop, "(EngineCore pid=1) (RayWorkerProc pid=2) (Worker pid=2) ...".
RAY_LOG_PREFIX = re.compile(r"^(?:\([^()]*\)\s*)*")
PROMPT_WORDS = (
    "Prefill computes the key and value cache of the whole prompt on one GPU, then decode reads it "
    "over NIXL and generates the answer token by token on the other GPU. "
) * 4

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
# What vLLM logs about each engine's memory at start: weights, the KV cache it could allocate, how many
# tokens and requests that holds, and the hybrid layout's attention block size.
ENGINE_MEMORY_LINE = re.compile(
    r"(Model loading took .*|Available KV cache memory: .*|GPU KV cache size: .*|Maximum concurrency for .*"
    r"|Setting attention block size to .*|Graph capturing finished in .*|init engine .* took .*)"
)

Path_ = tuple[str | int, ...]


# NIXL's LIBFABRIC plugin needs libfabric >= 1.21 (AWS EC2 User Guide, "Elastic Fabric Adapter": "NIXL
# integrates with Libfabric 1.21.0 and later"); NIXL 1.3.1's plugin links symbol version FABRIC_1.7,
# which libfabric 1.17 lacks ("unsupported backend 'LIBFABRIC'", docs/gpu-end-to-end.md).
NIXL_MIN_LIBFABRIC = (1, 21)
# What vLLM 0.26 gives an engine the stack leaves unset, and so what a smaller GPU gets on its own: the share
# of GPU memory (`CacheConfig.gpu_memory_utilization`, vllm/config/cache.py) and, below 70 GiB, the batch
# limits for the OpenAI server context Ray Serve LLM starts engines in (`EngineArgs.get_batch_defaults`,
# vllm/engine/arg_utils.py; ray/llm/_internal/serve/engines/vllm/vllm_engine.py passes OPENAI_API_SERVER).
VLLM_DEFAULT_GPU_MEMORY_UTILIZATION = vllm_default_gpu_memory_utilization()
VLLM_LARGE_GPU_MIB = 70 * 1024
VLLM_SMALL_GPU_BATCH_DEFAULTS = {"max_num_batched_tokens": 2048, "max_num_seqs": 256}


@dataclass(frozen=True)
class HostFacts:
    """What the one-host overrides depend on, read from the machine (tests pass their own)."""

    has_efa: bool
    has_flashinfer: bool
    libfabric: tuple[int, int] | None = None  # the libfabric.so.1 the dynamic loader finds, if any

    @property
    def nixl_libfabric_usable(self) -> bool:
        return self.libfabric is not None and self.libfabric >= NIXL_MIN_LIBFABRIC


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
    auth_dir: Path | None = None  # --api-key-auth: the auth package's zip and the keys file, written here


@dataclass(frozen=True)
class Override:
    """One change to the production serve config, printed by name with its reason."""

    name: str
    path: Path_
    value: Any
    reason: str
    remove: bool = False  # drop the path instead of setting it

    def apply(self, document: dict[str, Any]) -> None:
        if self.remove:
            node: Any = document
            for key in self.path[:-1]:
                node = node[key]
            del node[self.path[-1]]
        else:
            set_path(document, self.path, copy.deepcopy(self.value))

    def describe(self) -> str:
        change = "removed" if self.remove else f"= {json.dumps(self.value)}"
        return f"{self.name}: {format_path(self.path)} {change}  ({self.reason})"


def format_path(path: Path_) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def set_path(document: Any, path: Path_, value: Any) -> None:
    node = document
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(key, str) else node[key]
    node[path[-1]] = value


def _has_path(document: Any, path: Path_) -> bool:
    node: Any = document
    for key in path:
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and -len(node) <= key < len(node):
            node = node[key]
        else:
            return False
    return True


_MISSING = object()


def changed_paths(before: Any, after: Any, prefix: Path_ = ()) -> set[Path_]:
    """Paths of the leaves that differ between two JSON-like documents (added and removed too)."""
    before_dict = before if isinstance(before, dict) else ({} if before is _MISSING else None)
    after_dict = after if isinstance(after, dict) else ({} if after is _MISSING else None)
    if before_dict is not None and after_dict is not None and (before is not _MISSING or after is not _MISSING):
        keys = list(before_dict) + [k for k in after_dict if k not in before_dict]
        return set().union(
            *(changed_paths(before_dict.get(k, _MISSING), after_dict.get(k, _MISSING), (*prefix, k)) for k in keys)
        )
    nested_lists = isinstance(before, list) and isinstance(after, list) and len(before) == len(after)
    if nested_lists and any(isinstance(item, (dict, list)) for item in before + after):
        return set().union(
            *(changed_paths(b, a, (*prefix, i)) for i, (b, a) in enumerate(zip(before, after, strict=True)))
        )
    return set() if before == after else {prefix}


def unexplained_changes(before: Any, after: Any, overrides: list[Override]) -> set[Path_]:
    """Changed paths that no override names, itself or as a parent (the baseline replaces `args` whole)."""
    return {
        path
        for path in changed_paths(before, after)
        if not any(path[: len(override.path)] == override.path for override in overrides)
    }


def model_has_mamba_state(model_dir: Path) -> bool:
    """Linear-attention (Gated DeltaNet) layers, which vLLM caches as Mamba state (`MambaSpec`)."""
    config = json.loads((model_dir / "config.json").read_text())
    return "linear_attention" in config.get("text_config", config).get("layer_types", [])


def detect_host() -> HostFacts:
    return HostFacts(
        has_efa=has_efa_device(),
        has_flashinfer=importlib.util.find_spec("flashinfer") is not None,
        libfabric=libfabric_version(),
    )


def libfabric_version() -> tuple[int, int] | None:
    """(major, minor) of the libfabric NIXL's plugin would load: `fi_version()` returns
    FI_VERSION(major, minor) = major << 16 | minor (ofiwg/libfabric include/rdma/fabric.h)."""
    try:
        library = ctypes.CDLL("libfabric.so.1")
    except OSError:
        return None
    library.fi_version.restype = ctypes.c_uint32
    version = library.fi_version()
    return version >> 16, version & 0xFFFF


def has_efa_device() -> bool:
    """An EFA shows up as an RDMA device bound to the `efa` driver, or as libfabric's efa provider."""
    infiniband = Path("/sys/class/infiniband")
    if infiniband.is_dir():
        for device in infiniband.iterdir():
            if (device / "device" / "driver").resolve().name == "efa":
                return True
    if shutil.which("fi_info"):
        probe = subprocess.run(["fi_info", "-p", "efa"], capture_output=True, check=False, timeout=30)
        return probe.returncode == 0
    return False


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
    env = (*llm, "runtime_env", "env_vars")
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
    for name in opts.unset_env:
        overrides.append(
            Override("unset_env", (*env, name), None, f"{side}: --unset-env {name}, to show what it is for", True)
        )
    if not host.has_flashinfer:
        overrides.append(
            Override(
                "flashinfer_sampler_off",
                (*env, "VLLM_USE_FLASHINFER_SAMPLER"),
                "0",
                f"{side}: flashinfer is not installed here; vLLM's sampler imports it unless told not to",
            )
        )
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


def side_config(cfg_doc: dict[str, Any], side: str) -> dict[str, Any]:
    config: dict[str, Any] = cfg_doc["applications"][0]["args"][f"{side}_config"]
    return config


def engine_replicas(llm_config: dict[str, Any]) -> int:
    """An engine's replicas as the stack deploys them: fixed, or an autoscaling deployment's minimum."""
    deployment = llm_config["deployment_config"]
    return int(deployment.get("num_replicas") or deployment["autoscaling_config"]["min_replicas"])


def side_replicas(cfg_doc: dict[str, Any], side: str) -> int:
    return engine_replicas(side_config(cfg_doc, side))


def env_of(cfg_doc: dict[str, Any], side: str) -> dict[str, str]:
    env: dict[str, str] = side_config(cfg_doc, side).get("runtime_env", {}).get("env_vars", {})
    return env


def engines_of(cfg_doc: dict[str, Any]) -> int:
    return sum(side_replicas(cfg_doc, side) for side in PD_SIDES)


def shared_gpu_bundles(fraction: float) -> dict[str, Any]:
    """Ray 2.58's PlacementGroupConfig (`bundles`): one bundle of the GPU share and a CPU per replica."""
    return {"bundles": [{"GPU": fraction, "CPU": 1}]}


def _pd_overrides(cfg_doc: dict[str, Any], opts: SmokeOptions, host: HostFacts) -> list[Override]:
    overrides: list[Override] = []
    for side in PD_SIDES:
        llm: Path_ = ("applications", 0, "args", f"{side}_config")
        kv = (*llm, "engine_kwargs", "kv_transfer_config")
        env = (*llm, "runtime_env", "env_vars")
        engine_kwargs = cfg_doc["applications"][0]["args"][f"{side}_config"]["engine_kwargs"]
        overrides += _engine_overrides(llm, side, engine_kwargs, opts, host)
        overrides += _transport_overrides(
            llm, side, engine_kwargs["kv_transfer_config"], host, opts.model_has_mamba_state
        )
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
            if engine_kwargs["kv_transfer_config"]["kv_role"] != role:
                overrides.append(Override("kv_role", (*kv, "kv_role"), role, f"{side}: --kv-roles {opts.kv_roles}"))
        if opts.share_gpu:
            fraction = 1 / engines_of(cfg_doc)
            overrides += [
                Override(
                    "share_gpu_bundle",
                    (*llm, "placement_group_config"),
                    shared_gpu_bundles(fraction),
                    f"{side}: --share-gpu, every engine on one GPU, {fraction:g} of it for each replica",
                ),
                Override(
                    "share_gpu_worker_gpus",
                    (*env, "VLLM_RAY_PER_WORKER_GPUS"),
                    f"{fraction:g}",
                    f"{side}: --share-gpu, vLLM's Ray worker asks for the bundle's share of the GPU, not a whole one "
                    "(Ray 2.58 derives the same from the bundle when unset; set as measured)",
                ),
            ]
            if (
                side_replicas(cfg_doc, side) > 1
                and env_of(cfg_doc, side).get("VLLM_USE_RAY_V2_EXECUTOR_BACKEND") != "0"
            ):
                overrides.append(
                    Override(
                        "share_gpu_executor",
                        (*env, "VLLM_USE_RAY_V2_EXECUTOR_BACKEND"),
                        "0",
                        f"{side}: --share-gpu puts this side's replicas on one host, where vLLM 0.26's RayExecutorV2 "
                        "starts every engine's TCPStore port search at the same port (infra/serving/serve_config.py "
                        "SHARED_POD_ENGINE_ENV, which the stack sets where replicas share a pod)",
                    )
                )
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


def _transport_overrides(
    llm: Path_, side: str, built_kv: dict[str, Any], host: HostFacts, mamba_state: bool
) -> list[Override]:
    """Keep the production backend, LIBFABRIC, wherever it can carry this model's KV on this host.

    Without an EFA device libfabric offers only its tcp provider, which has no FI_HMEM: NIXL can then
    register host memory only ("Memory type 1 is not supported by libfabric backend" for CUDA tensors,
    docs/gpu-end-to-end.md), so the KV is staged in host memory. vLLM 0.26 cannot stage a hybrid
    model's Mamba state there (`initialize_host_xfer_buffer` takes every layer's cache for one tensor:
    "'list' object has no attribute 'shape'", measured), so such a model, like a host without a
    libfabric >= 1.21, falls back to UCX.
    """
    if host.has_efa:
        return []
    kv = (*llm, "engine_kwargs", "kv_transfer_config")
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
            (*llm, "runtime_env", "env_vars", "FI_PROVIDER"),
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


def _aggregated_overrides(cfg_doc: dict[str, Any], opts: SmokeOptions, host: HostFacts) -> list[Override]:
    # The baseline engine is the decode side's, without the KV connector: same model and settings.
    args = cfg_doc["applications"][0]["args"]
    engine = copy.deepcopy(args["decode_config"])
    del engine["engine_kwargs"]["kv_transfer_config"]
    app: Path_ = ("applications", 0)
    # build_openai_app takes the same ingress_cls_config as the PD builder (ray/llm/_internal/serve/core/ingress/
    # builder.py, LLMServingArgs), so the baseline sits behind the same API-key ingress when the stack emits it.
    ingress = {key: copy.deepcopy(args[key]) for key in ("ingress_cls_config",) if key in args}
    return [
        Override(
            "aggregated_app", (*app, "import_path"), AGGREGATED_IMPORT_PATH, "baseline: one engine, no disaggregation"
        ),
        Override(
            "aggregated_app",
            (*app, "args"),
            {"llm_configs": [engine], **ingress},
            "baseline: the decode engine's config without kv_transfer_config, one replica on one GPU"
            + (", behind the stack's ingress class" if ingress else ""),
        ),
        *_engine_overrides((*app, "args", "llm_configs", 0), "aggregated", engine["engine_kwargs"], opts, host),
    ]


def _auth_overrides(cfg_doc: dict[str, Any], opts: SmokeOptions) -> list[Override]:
    """The API-key ingress as the stack emits it, its two in-pod paths pointed at files on this host: the package zip
    (a ConfigMap mount in the cluster) and the keys file (the mounted Secret)."""
    app = cfg_doc["applications"][0]
    if "ingress_cls_config" not in app["args"]:
        return []
    if opts.auth_dir is None:
        raise ValueError("the stack's serve config asks for API keys: run with --api-key-auth")
    return [
        Override(
            "auth_package",
            ("applications", 0, "runtime_env", "py_modules"),
            [f"file://{opts.auth_dir / serve_auth.package_zip_name()}"],
            "the auth package's zip from this host, where the cluster mounts it from a ConfigMap",
        ),
        Override(
            "auth_keys_file",
            ("applications", 0, "args", "ingress_cls_config", "ingress_extra_kwargs", "api_keys_file"),
            str(opts.auth_dir / AUTH_KEYS_FILE),
            "the keys file on this host, where the cluster mounts the serve-api-keys Secret",
        ),
    ]


def smoke_serve_config(
    cfg: StackConfig, opts: SmokeOptions, host: HostFacts
) -> tuple[dict[str, Any], dict[str, Any], list[Override]]:
    """(production config, smoke config, the overrides that turn one into the other)."""
    production = build_serve_config(serve_app_args(cfg))
    if production["applications"][0]["import_path"] != PD_IMPORT_PATH:
        raise ValueError(f"expected the prefill/decode app ({PD_IMPORT_PATH}) from build_serve_config")
    build = _aggregated_overrides if opts.aggregated else _pd_overrides
    overrides = build(production, opts, host) + _auth_overrides(production, opts)
    smoke = copy.deepcopy(production)
    for override in overrides:
        if override.remove and not _has_path(production, override.path):
            raise ValueError(f"the stack's serve config has no {format_path(override.path)} to leave out")
        override.apply(smoke)
    return production, smoke, overrides


def validate_with_ray(smoke: dict[str, Any]) -> None:
    """Ray's own schemas for what the dashboard and the app builder accept (no Ray started, no vLLM)."""
    from ray.llm._internal.serve.core.configs.llm_config import LLMConfig
    from ray.serve.schema import ServeDeploySchema

    ServeDeploySchema.model_validate(smoke)
    for engine in engine_configs(smoke):
        LLMConfig.model_validate(copy.deepcopy(engine))


def engine_configs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The LLMConfigs of a serve config: prefill and decode, or the baseline's one (the documents themselves)."""
    args = config["applications"][0]["args"]
    return args["llm_configs"] if "llm_configs" in args else [args[f"{side}_config"] for side in PD_SIDES]


# --- running it -------------------------------------------------------------------------------


def _http(
    method: str, url: str, body: Any = None, timeout: float = 30, headers: Mapping[str, str] | None = None
) -> tuple[int, str]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        return 0, str(error)


def _ray_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ray.scripts.scripts", *args], capture_output=True, text=True, check=False
    )


def wait_for(what: str, check: Callable[[], bool], timeout_s: float, interval_s: float = 1.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() >= deadline:
            break
        time.sleep(interval_s)
    else:
        return True
    print(f"timed out after {timeout_s:.0f}s waiting for {what}", flush=True)
    return False


def serve_status(app_name: str) -> tuple[str, str]:
    """(application status, a one-line summary of its deployments) from the dashboard."""
    code, text = _http("GET", f"{DASHBOARD_URL}/api/serve/applications/")
    if code != 200:
        return "UNREACHABLE", text[:200]
    app = json.loads(text).get("applications", {}).get(app_name)
    if app is None:
        return "NOT_STARTED", ""
    deployments = ", ".join(f"{name} {d['status']}" for name, d in app.get("deployments", {}).items())
    return app["status"], deployments


def serve_failure_details(app_name: str) -> str:
    code, text = _http("GET", f"{DASHBOARD_URL}/api/serve/applications/")
    if code != 200:
        return text
    app = json.loads(text).get("applications", {}).get(app_name, {})
    lines = [f"application: {app.get('message', '')}"]
    lines += [f"{name}: {d.get('message', '')}" for name, d in app.get("deployments", {}).items()]
    return "\n".join(lines)


def deploy_and_wait(smoke: dict[str, Any], timeout_s: float) -> tuple[bool, float, str]:
    """PUT the config to the dashboard (as KubeRay does) and poll until RUNNING or failure."""
    app_name = smoke["applications"][0]["name"]
    start = time.monotonic()
    code, text = _http("PUT", f"{DASHBOARD_URL}/api/serve/applications/", smoke, timeout=120)
    if code != 200:
        return False, 0.0, f"deploy refused ({code}): {text[:2000]}"
    last_line = ""
    last_print = 0.0
    while (elapsed := time.monotonic() - start) < timeout_s:
        status, deployments = serve_status(app_name)
        line = f"{status}; {deployments}"
        if line != last_line or elapsed - last_print >= 15:
            print(f"  [{elapsed:5.0f}s] {app_name} {line}", flush=True)
            last_line, last_print = line, elapsed
        if status == "RUNNING":
            return True, elapsed, "RUNNING"
        if status in ("DEPLOY_FAILED", "UNHEALTHY"):
            return False, elapsed, f"{status}\n{serve_failure_details(app_name)}"
        time.sleep(2)
    return False, timeout_s, f"not RUNNING after {timeout_s:.0f}s\n{serve_failure_details(app_name)}"


def log_files(ray_temp_dir: Path) -> list[Path]:
    logs = ray_temp_dir / "session_latest" / "logs"
    return sorted(p for p in logs.rglob("*") if p.is_file() and p.suffix in (".log", ".out", ".err"))


@dataclass(frozen=True)
class LogLine:
    process: str  # the process that wrote it (the last pid Ray's prefixes name), else the log file
    message: str  # without Ray's prefixes and colours
    match: re.Match[str]


def read_logs(ray_temp_dir: Path) -> list[tuple[str, str, str]]:
    """Every line of the Ray session's logs as (log file, Ray's prefixes, message), without colours."""
    lines = []
    for path in log_files(ray_temp_dir):
        for raw in path.read_text(errors="replace").splitlines():
            line = ANSI_ESCAPE.sub("", raw).strip()
            prefix = RAY_LOG_PREFIX.match(line)
            end = prefix.end() if prefix else 0
            lines.append((path.name, line[:end], line[end:]))
    return lines


def grep_lines(lines: list[tuple[str, str, str]], pattern: re.Pattern[str]) -> list[LogLine]:
    """Matching lines of `read_logs`, each once although Ray copies them into its parents' logs."""
    hits: dict[tuple[str, str], LogLine] = {}
    for source, prefixes, message in lines:
        match = pattern.search(message)
        if match:
            pids = re.findall(r"pid=(\d+)", prefixes)
            process = f"pid {pids[-1]}" if pids else source
            hits.setdefault((process, message), LogLine(process, message, match))
    return list(hits.values())


def _show(hits: list[LogLine], limit: int = 6) -> None:
    for hit in hits[:limit]:
        print(f"    {hit.process}: {hit.message[:300]}", flush=True)


def check_nixl_logs(report: Report, ray_temp_dir: Path, backend: str, wait_s: float = 30) -> None:
    """The NIXL backend of each side, then a finished prefill→decode KV read, from the engines' logs."""
    # Each poll reads the logs once; the checks after a wait use that poll's lines.
    logs: list[tuple[str, str, str]] = []
    sides: dict[str, str] = {}
    backends: list[LogLine] = []

    def both_sides_up() -> bool:
        logs[:] = read_logs(ray_temp_dir)
        sides.clear()
        sides.update({hit.process: hit.match.group(2) for hit in grep_lines(logs, NIXL_WORKER_LINE)})
        backends[:] = grep_lines(logs, NIXL_BACKEND_LINE)
        return {sides.get(hit.process) for hit in backends} >= set(PD_SIDES)

    wait_for("NIXL backend log lines of prefill and decode", both_sides_up, wait_s)
    order = {side: i for i, side in enumerate(PD_SIDES)}
    backends.sort(key=lambda hit: order.get(sides.get(hit.process, ""), len(order)))
    by_side = {f"{sides.get(hit.process, '?')} ({hit.process})": hit.match.group(1) for hit in backends}
    report.record(
        "nixl_backend",
        CheckResult(
            {sides.get(hit.process) for hit in backends} >= set(PD_SIDES) and set(by_side.values()) == {backend},
            f"'Backend {backend} was instantiated' expected in prefill and decode: {by_side or 'no backend line'}",
        ),
    )
    _show(backends)
    _show(grep_lines(logs, NIXL_HANDSHAKE_LINE), 2)

    def on(side: str, hits: list[LogLine]) -> list[LogLine]:
        return [hit for hit in hits if sides.get(hit.process) == side]

    finished: list[LogLine] = []

    def decode_received() -> bool:
        logs[:] = read_logs(ray_temp_dir)
        finished[:] = grep_lines(logs, KV_FINISHED_LINE)
        return any(int(hit.match.group(2)) > int(hit.match.group(3)) for hit in on("decode", finished))

    wait_for("decode's finished KV reads", decode_received, wait_s)
    reads = [hit for hit in on("decode", grep_lines(logs, KV_READ_LINE)) if hit.match.group(2).startswith("prefill")]
    token_lines = grep_lines(logs, KV_TOKENS_LINE)
    tokens = sorted({int(hit.match.group(1)) for hit in token_lines})
    received = sum(int(hit.match.group(2)) - int(hit.match.group(3)) for hit in on("decode", finished))
    failed = sum(int(hit.match.group(3)) for hit in on("decode", finished))
    sent = sum(int(hit.match.group(1)) for hit in on("prefill", finished))
    report.record(
        "kv_transfer",
        CheckResult(
            bool(reads) and received > 0 and failed == 0,
            f"decode started {len({hit.match.group(1) for hit in reads})} NIXL read(s) from "
            f"{sorted({hit.match.group(2) for hit in reads}) or 'no prefill engine'}, finished {received} "
            f"({failed} failed); prompt tokens whose KV came from prefill: {tokens or 'none logged'}; "
            f"prefill logged {sent} done-sending notification(s)",
        ),
    )
    _show(reads, 2)
    _show(token_lines, 2)
    _show(on("decode", finished), 2)


def run_requests(
    report: Report, model_id: str, max_tokens: int, count: int, timeout_s: float = 120, api_key: str | None = None
) -> None:
    api = client(f"{SERVE_URL}/v1", timeout_s, api_key)
    try:
        models = model_ids(api)
    except openai.OpenAIError as error:
        report.record("models", CheckResult(False, f"/v1/models did not answer: {error}"))
        return
    report.record("models", CheckResult(model_id in models, f"/v1/models lists {models}"))
    timings = []
    for i in range(count + 1):
        # A different first block per request: no prefix-cache hit hides the KV transfer.
        prompt = f"Request {i} of the smoke test. {PROMPT_WORDS}"
        try:
            # Random weights may emit EOS at once; a fixed length (vLLM's ignore_eos) makes tokens/s comparable.
            timing, _ = stream_chat(api, model_id, prompt, max_tokens, extra_body={"ignore_eos": True})
        except (openai.OpenAIError, EmptyCompletion) as error:
            report.record("chat", CheckResult(False, f"request {i} failed: {error}"))
            return
        kind = "first (warm-up; in PD it includes the NIXL handshake)" if i == 0 else f"timed {i}/{count}"
        print(
            f"  chat {kind}: TTFT {timing.ttft_s * 1000:.1f} ms, {timing.completion_tokens} tokens "
            f"({timing.counted_from}) in "
            f"{timing.total_s:.3f} s, {timing.tokens_per_s:.1f} tok/s, decode {timing.decode_tokens_per_s:.1f} tok/s",
            flush=True,
        )
        timings.append(timing)
    measured = timings[1:] or timings
    ttft = statistics.median(t.ttft_s for t in measured) * 1000
    tps = statistics.median(t.tokens_per_s for t in measured)
    decode_tps = statistics.median(t.decode_tokens_per_s for t in measured)
    report.record(
        "chat",
        CheckResult(
            all(t.completion_tokens > 0 for t in timings),
            f"streamed {len(timings)} completions ({max_tokens} tokens asked, ignore_eos); median of {len(measured)}: "
            f"TTFT {ttft:.1f} ms, {tps:.1f} tok/s end to end, {decode_tps:.1f} tok/s after the first token "
            f"(first request TTFT {timings[0].ttft_s * 1000:.1f} ms)",
        ),
    )


def write_auth_files(auth_dir: Path, api_keys: tuple[str, ...]) -> None:
    """What the cluster mounts into the Ray pods, here as files: the auth package's zip (its ConfigMap) and the keys
    (the serve-api-keys Secret), the keys file readable by this user alone."""
    (auth_dir / serve_auth.package_zip_name()).write_bytes(serve_auth.package_zip())
    keys_file = auth_dir / AUTH_KEYS_FILE
    keys_file.touch(mode=0o600)
    keys_file.write_text(serve_auth.keys_file_content(list(api_keys)))


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _error_code(body: str) -> str | None:
    try:
        code = json.loads(body)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
    return code if isinstance(code, str) else None


def check_auth(report: Report, model_id: str, api_keys: tuple[str, ...], keys_file: Path) -> str:
    """The API-key ingress in front of the real app: no key, a wrong key or a chat without a key get OpenAI's 401,
    each key is served, Serve's health route needs none; then the first key is retired and a new one added in the
    keys file (a rotation) and the time until the ingress honours both is measured. Returns the new key (for the
    log check); the keys file is put back afterwards."""
    models = f"{SERVE_URL}/v1/models"
    chat = {"model": model_id, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 1}
    no_key, body = _http("GET", models)
    wrong = _http("GET", models, headers=_bearer(secrets.token_hex(32)))[0]
    chat_no_key = _http("POST", f"{SERVE_URL}/v1/chat/completions", chat)[0]
    served = [_http("GET", models, headers=_bearer(key))[0] for key in api_keys]
    health = _http("GET", f"{SERVE_URL}/-/healthz")[0]
    passed = (no_key, _error_code(body), wrong, chat_no_key, health) == (401, "invalid_api_key", 401, 401, 200)
    report.record(
        "auth",
        CheckResult(
            passed and served == [200] * len(api_keys),
            f"/v1/models without a key {no_key} ({_error_code(body)}), with a wrong key {wrong}; chat without a key "
            f"{chat_no_key}; each of {len(api_keys)} keys {served}; /-/healthz without a key {health}",
        ),
    )

    def status_with(key: str) -> int:
        return _http("GET", models, headers=_bearer(key))[0]

    new_key = secrets.token_hex(32)
    keys_file.write_text(serve_auth.keys_file_content([new_key, *api_keys[1:]]))
    start = time.monotonic()
    rotated = wait_for(
        "the rotated keys file",
        lambda: status_with(new_key) == 200 and status_with(api_keys[0]) == 401,
        AUTH_ROTATION_TIMEOUT_S,
        interval_s=0.5,
    )
    report.record(
        "auth_rotation",
        CheckResult(
            rotated,
            f"new key served and retired key refused {time.monotonic() - start:.1f} s after the keys file changed (the "
            f"ingress re-reads it every {RELOAD_SECONDS:g} s; in the cluster the kubelet's refresh of the mounted "
            "Secret comes first)",
        ),
    )
    keys_file.write_text(serve_auth.keys_file_content(list(api_keys)))
    restored = wait_for("the restored keys file", lambda: status_with(api_keys[0]) == 200, AUTH_ROTATION_TIMEOUT_S)
    report.record("auth_restored", CheckResult(restored, "the first key is served again"))
    return new_key


def check_no_key_in_logs(report: Report, ray_temp_dir: Path, api_keys: tuple[str, ...]) -> None:
    """No key in any of the Ray session's log files after all the traffic: not even its first 16 characters."""
    files = log_files(ray_temp_dir)
    leaked = sorted(
        path.name for path in files if any(key[:16] in path.read_text(errors="replace") for key in api_keys)
    )
    report.record(
        "auth_logs",
        CheckResult(not leaked, f"no key in {len(files)} Ray log files" if not leaked else f"a key in {leaked}"),
    )


def report_engine_memory(ray_temp_dir: Path) -> None:
    """vLLM's own account of each engine's memory, and what nvidia-smi sees on every GPU."""
    for hit in grep_lines(read_logs(ray_temp_dir), ENGINE_MEMORY_LINE):
        print(f"  memory {hit.process}: {hit.match.group(1)[:200]}", flush=True)
    if shutil.which("nvidia-smi"):
        query = ["nvidia-smi", "--query-gpu=index,memory.used,memory.total", "--format=csv,noheader"]
        used = subprocess.run(query, capture_output=True, text=True, check=False).stdout.strip()
        print(f"  nvidia-smi (index, used, total): {'; '.join(used.splitlines())}", flush=True)


def bench_command(model_id: str, model_dir: Path, concurrency: int, args: argparse.Namespace) -> list[str]:
    """vLLM's own load generator against the app's OpenAI chat endpoint, random prompts of fixed length."""
    return [
        sys.executable,
        "-m",
        "vllm.entrypoints.cli.main",
        "bench",
        "serve",
        "--backend",
        "openai-chat",
        "--base-url",
        SERVE_URL,
        "--endpoint",
        "/v1/chat/completions",
        "--model",
        model_id,
        "--tokenizer",
        str(model_dir),
        "--dataset-name",
        "random",
        "--random-input-len",
        str(args.bench_input_len),
        "--random-output-len",
        str(args.bench_output_len),
        "--ignore-eos",
        "--num-prompts",
        str(args.bench_requests or max(16, 4 * concurrency)),
        "--max-concurrency",
        str(concurrency),
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,99",
        "--save-result",
        "--result-dir",
        str(args.bench_dir),
        "--result-filename",
        f"{args.bench_label}-c{concurrency}.json",
        "--disable-tqdm",
    ]


def bench_env(api_key: str | None) -> dict[str, str]:
    """vLLM's bench client sends `Authorization: Bearer $OPENAI_API_KEY` when it is set (vllm/benchmarks/lib/
    endpoint_request_func.py, `_get_headers`): the key goes by environment, never on the command line."""
    return {**os.environ, "OPENAI_API_KEY": api_key} if api_key else dict(os.environ)


def run_bench(
    report: Report, model_id: str, model_dir: Path, args: argparse.Namespace, api_key: str | None = None
) -> None:
    args.bench_dir.mkdir(parents=True, exist_ok=True)
    for concurrency in args.bench:
        command = bench_command(model_id, model_dir, concurrency, args)
        start = time.monotonic()
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, check=False, timeout=args.bench_timeout, env=bench_env(api_key)
            )
            print(done.stdout[-2500:], done.stderr[-1500:] if done.returncode else "", sep="\n", flush=True)
            passed, outcome = done.returncode == 0, f"exit {done.returncode} in {time.monotonic() - start:.0f} s"
        except subprocess.TimeoutExpired:
            # A stalled level must not hold the host (and the levels after it) forever.
            passed, outcome = False, f"no result within {args.bench_timeout:.0f} s"
        summary = f"vllm bench serve, concurrency {concurrency}: {outcome}"
        report.record(f"bench_c{concurrency}", CheckResult(passed, summary))


# --- updating the running app (issue 19) --------------------------------------------------------
# KubeRay 1.4.0 applies a `serveConfigV2`-only change in place: it PUTs the whole new config to the
# dashboard's /api/serve/applications/ (ray-operator/controllers/ray/utils/dashboardclient,
# UpdateDeployments), the call `deploy_and_wait` makes. The scenario replays three such changes while a
# client keeps calling the app, and judges each with the verdict the stack's rollout wait uses.
TRAFFIC_INTERVAL_S = 0.5
TRAFFIC_TIMEOUT_S = 5.0
TRAFFIC_MAX_TOKENS = 4
VERDICT_INTERVAL_S = 2.0


@dataclass(frozen=True)
class UpdateStep:
    name: str  # also the stem of its files
    change: str  # what the step changes, in words
    config: dict[str, Any]  # the whole serve config PUT to the dashboard
    expected: str  # the verdict it should end with (rollout_status READY or FAILED)


def missing_model_dir(model_dir: Path) -> Path:
    """Where the broken change points the engines: beside the model, a directory that is not there."""
    return model_dir.with_name(f"{model_dir.name}-missing")


UPDATE_STEP_NAMES = ("good", "broken", "rollback")


def update_steps(smoke: dict[str, Any], missing_model_dir: Path) -> list[UpdateStep]:
    """A good change, a broken one on top of it, and the rollback to the config that ran first."""
    good = copy.deepcopy(smoke)
    lengths = set()
    for engine in engine_configs(good):
        lengths.add(engine["engine_kwargs"]["max_model_len"])
        engine["engine_kwargs"]["max_model_len"] *= 2
    broken = copy.deepcopy(good)
    for engine in engine_configs(broken):
        engine["model_loading_config"]["model_source"] = str(missing_model_dir)
    (length,) = lengths
    return [
        UpdateStep("good", f"each side's engine_kwargs.max_model_len {length} -> {2 * length}", good, READY),
        UpdateStep("broken", f"each side's model_source -> {missing_model_dir} (does not exist)", broken, FAILED),
        UpdateStep(
            "rollback", "the config that ran first, again (pulumi up with the previous stack config)", smoke, READY
        ),
    ]


@dataclass(frozen=True)
class TrafficResult:
    t_s: float  # when it was sent, seconds after the step's PUT
    ok: bool
    latency_s: float
    error: str = ""


class Traffic:
    """A client calling the app all through a step: a short chat completion every interval, each recorded."""

    def __init__(
        self,
        model_id: str,
        start: float,
        interval_s: float = TRAFFIC_INTERVAL_S,
        timeout_s: float = TRAFFIC_TIMEOUT_S,
        api_key: str | None = None,
    ) -> None:
        self.model_id, self.start, self.interval_s, self.timeout_s = model_id, start, interval_s, timeout_s
        self._api_key = api_key
        self.results: list[TrafficResult] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="update-traffic", daemon=True)

    def __enter__(self) -> Traffic:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        api = client(f"{SERVE_URL}/v1", self.timeout_s, self._api_key)
        due = time.monotonic()
        while not self._stop.is_set():
            sent = time.monotonic()
            try:
                stream_chat(api, self.model_id, "Are you there?", TRAFFIC_MAX_TOKENS, extra_body={"ignore_eos": True})
                ok, error = True, ""
            except (openai.OpenAIError, httpx.HTTPError, EmptyCompletion) as failure:
                ok, error = False, f"{type(failure).__name__}: {str(failure)[-300:]}"
            self.results.append(
                TrafficResult(round(sent - self.start, 2), ok, round(time.monotonic() - sent, 3), error)
            )
            due = max(due + self.interval_s, time.monotonic())
            self._stop.wait(due - time.monotonic())


def longest_outage(results: list[TrafficResult], end_s: float) -> tuple[float, bool]:
    """(the longest stretch of failing requests, from the first failure's send to the next success's send or to
    the step's end; whether requests were still failing at the end)."""
    longest, failing_since = 0.0, None
    for result in results:
        if not result.ok and failing_since is None:
            failing_since = result.t_s
        elif result.ok and failing_since is not None:
            longest, failing_since = max(longest, result.t_s - failing_since), None
    if failing_since is not None:
        return max(longest, end_s - failing_since), True
    return longest, False


@dataclass
class VerdictPoll:
    t_s: float
    state: str
    app_status: str
    message: str


@dataclass
class StepRecord:
    name: str
    change: str
    expected: str
    put_status: int
    verdicts: list[VerdictPoll] = field(default_factory=list)  # every poll whose verdict or app status changed
    final: VerdictPoll | None = None
    traffic: list[TrafficResult] = field(default_factory=list)
    end_s: float = 0.0
    # Raw `GET /api/serve/applications/` answers: the first poll, the first with a failed app, the last.
    first_details: dict[str, Any] | None = None
    failed_details: dict[str, Any] | None = None
    final_details: dict[str, Any] | None = None

    def first_time(self, state: str) -> float | None:
        return next((poll.t_s for poll in self.verdicts if poll.state == state), None)

    def summary(self) -> dict[str, Any]:
        outage, still_failing = longest_outage(self.traffic, self.end_s)
        ready_at = self.first_time(READY)
        final = self.final or VerdictPoll(self.end_s, WAITING, "", "no answer from the dashboard")
        return {
            "step": self.name,
            "change": self.change,
            "put_status": self.put_status,
            "expected_verdict": self.expected,
            "verdict": final.state,
            "verdict_at_s": final.t_s,
            "verdict_message": final.message,
            "final_app_status": final.app_status,
            "seconds_to_final_state": final.t_s,
            "verdict_right_after_put": asdict(self.verdicts[0]) if self.verdicts else None,
            "first_ready_s": ready_at,
            "first_failed_s": self.first_time(FAILED),
            "requests_ok": sum(r.ok for r in self.traffic),
            "requests_failed": sum(not r.ok for r in self.traffic),
            "requests_failed_after_ready": sum(
                not r.ok for r in self.traffic if ready_at is not None and r.t_s >= ready_at
            ),
            "longest_outage_s": round(outage, 1),
            "still_failing_at_end": still_failing,
            "last_error": next((r.error for r in reversed(self.traffic) if not r.ok), ""),
            "verdict_timeline": [asdict(poll) for poll in self.verdicts],
            "traffic": [asdict(r) for r in self.traffic],
        }


def serve_details() -> dict[str, Any] | None:
    code, text = _http("GET", f"{DASHBOARD_URL}/api/serve/applications/")
    return json.loads(text) if code == 200 else None


def judge(details: dict[str, Any] | None, applications: list[dict[str, Any]]) -> tuple[Verdict, str]:
    """The stack's verdict on one dashboard answer, and the application's status in it."""
    if details is None:
        return Verdict(WAITING, "the dashboard did not answer"), ""
    app = (details.get("applications") or {}).get(applications[0]["name"]) or {}
    return serve_verdict(details, applications), app.get("status", "")


def run_update_step(
    step: UpdateStep, model_id: str, timeout_s: float, settle_s: float, api_key: str | None = None
) -> StepRecord:
    """PUT the step's config (as KubeRay does) under traffic and poll the verdict until it is final or times out;
    then `settle_s` more of traffic, to see whether requests come back."""
    applications = step.config["applications"]
    start = time.monotonic()
    with Traffic(model_id, start, api_key=api_key) as traffic:
        code, text = _http("PUT", f"{DASHBOARD_URL}/api/serve/applications/", step.config, timeout=120)
        record = StepRecord(step.name, step.change, step.expected, code)
        if code != 200:
            print(f"  update {step.name}: PUT refused ({code}): {text[:500]}", flush=True)
        while code == 200:
            t_s = round(time.monotonic() - start, 1)
            details = serve_details()
            verdict, app_status = judge(details, applications)
            poll = VerdictPoll(t_s, verdict.state, app_status, verdict.message[-600:])
            if not record.verdicts or (poll.state, poll.app_status) != (
                record.verdicts[-1].state,
                record.verdicts[-1].app_status,
            ):
                record.verdicts.append(poll)
                print(
                    f"  update {step.name} [{t_s:5.0f}s] {app_status}: {verdict.state}: {poll.message[:300]}",
                    flush=True,
                )
            record.first_details = record.first_details or details
            if app_status in FAILED_APP_STATUSES and record.failed_details is None:
                record.failed_details = details
            record.final, record.final_details = poll, details
            if verdict.state != WAITING or t_s >= timeout_s:
                break
            time.sleep(VERDICT_INTERVAL_S)
        time.sleep(settle_s)
        record.end_s = round(time.monotonic() - start, 1)
    record.traffic = list(traffic.results)
    return record


def run_update_scenario(
    report: Report,
    smoke: dict[str, Any],
    model_id: str,
    missing_model_dir: Path,
    args: argparse.Namespace,
    api_key: str | None = None,
) -> None:
    """The three updates, their records in `args.update_scenario` and the raw dashboard answers beside it."""
    out_dir = args.update_scenario.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    if missing_model_dir.exists():
        raise ValueError(f"{missing_model_dir} exists; the broken change needs a model source that does not")
    steps = [step for step in update_steps(smoke, missing_model_dir) if step.name in args.update_steps]

    def save(stage: str, details: dict[str, Any] | None) -> None:
        if details is not None:
            (out_dir / f"serve-details-{stage}.json").write_text(json.dumps(details, indent=2, sort_keys=True))

    save("running-v1", serve_details())
    for step in steps[:2]:
        (out_dir / f"serve-config-{step.name}.json").write_text(json.dumps(step.config, indent=2))
    (out_dir / "serve-config-v1.json").write_text(json.dumps(smoke, indent=2))
    summaries = []
    for step in steps:
        print(f"  update {step.name}: {step.change}", flush=True)
        record = run_update_step(step, model_id, args.update_step_timeout, args.update_settle, api_key)
        summary = record.summary()
        summaries.append(summary)
        if step.name == "good":
            save("deploying", record.first_details)
        if step.name == "broken":
            save("deploy-failed", record.failed_details)
        if step.name == "rollback" and summary["verdict"] == READY:
            save("running-rollback", record.final_details)
        report.record(
            f"update_{step.name}",
            CheckResult(
                summary["verdict"] == step.expected,
                f"{step.change}: verdict {summary['verdict']} after {summary['verdict_at_s']} s "
                f"(expected {step.expected}), app {summary['final_app_status']}; right after the PUT: "
                f"{(summary['verdict_right_after_put'] or {}).get('state')}; requests {summary['requests_ok']} ok, "
                f"{summary['requests_failed']} failed, longest outage {summary['longest_outage_s']} s"
                + (" (still failing at the end)" if summary["still_failing_at_end"] else ""),
            ),
        )
    args.update_scenario.write_text(json.dumps({"command": sys.argv, "steps": summaries}, indent=2))
    print(f"  update scenario written to {args.update_scenario}", flush=True)


# --- what Ray exports (issue 22) ----------------------------------------------------------------
# `ray start --metrics-export-port` serves every node's metrics in Prometheus' text format; the Serve and
# engine metrics reach it from the processes on each report interval (10 s by default).
METRICS_PORT = 8080
METRICS_URL = f"http://127.0.0.1:{METRICS_PORT}/metrics"
METRICS_REPORT_WAIT_S = 20.0
# A sample line: name, optional {labels} (quoted values may hold braces), value.
METRIC_SAMPLE_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)')
# What prefill/decode metrics are named after.
PD_METRIC_WORDS = ("nixl", "kv", "ttft", "time_to_first_token", "request")


def parse_metric_samples(text: str) -> dict[str, float]:
    """`name{labels}` -> value for each sample of a Prometheus text exposition."""
    samples = {}
    for line in text.splitlines():
        match = METRIC_SAMPLE_LINE.match(line)
        if match and not line.startswith("#"):
            samples[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return samples


def sample_name(sample: str) -> str:
    return sample.split("{", 1)[0]


def scrape_metrics() -> dict[str, float]:
    code, text = _http("GET", METRICS_URL)
    if code != 200:
        print(f"  metrics: {METRICS_URL} answered {code}: {text[:200]}", flush=True)
        return {}
    return parse_metric_samples(text)


def package_versions() -> str:
    found = []
    for package in ("ray", "vllm", "nixl-cu13"):
        try:
            found.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            found.append(f"{package} not installed")
    return ", ".join(found)


def write_metrics(path: Path, scrapes: dict[str, dict[str, float]]) -> None:
    """The sorted exposition names of every scrape, and beside them the PD-related samples scrape by scrape."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = [
        f"# Metric names on {METRICS_URL} (ray start --metrics-export-port={METRICS_PORT}), {package_versions()}",
        f"# command: python -m tools.smoke {' '.join(sys.argv[1:])}",
        f"# union of the scrapes: {', '.join(f'{stage} ({len(s)} samples)' for stage, s in scrapes.items())}",
    ]
    names = sorted({sample_name(sample) for samples in scrapes.values() for sample in samples})
    path.write_text("\n".join([*header, *names]) + "\n")
    stages = list(scrapes)
    related = sorted(
        {
            sample
            for samples in scrapes.values()
            for sample in samples
            if any(w in sample_name(sample).lower() for w in PD_METRIC_WORDS)
        }
    )
    rows = []
    for sample in related:
        values = [scrapes[stage].get(sample) for stage in stages]
        moved = len({v for v in values if v is not None}) > 1 or None in values
        cells = " ".join("-" if v is None else f"{v:g}" for v in values)
        rows.append(f"{'moved' if moved else 'same '} {cells} {sample}")
    samples_path = path.with_name(f"{path.stem}-pd-samples.txt")
    samples_path.write_text(
        "\n".join(
            [
                *header,
                f"# samples whose name holds one of {', '.join(PD_METRIC_WORDS)}; columns: moved/same, "
                f"{' '.join(stages)} ('-': not exported then), name{{labels}}",
                *rows,
            ]
        )
        + "\n"
    )
    print(f"  metrics: {len(names)} names written to {path}, {len(rows)} PD samples to {samples_path}", flush=True)


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


def served_engine(smoke: dict[str, Any]) -> dict[str, Any]:
    """The engine config the ingress routes to: decode in the PD app, the one engine in the baseline."""
    args = smoke["applications"][0]["args"]
    engine: dict[str, Any] = args["decode_config"] if "decode_config" in args else args["llm_configs"][0]
    return engine


def gpu_memory_mib() -> int:
    """Total memory of GPU 0 as nvidia-smi reports it (the unit `--gpu-memory-of` takes)."""
    query = ["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits", "-i", "0"]
    return int(subprocess.run(query, capture_output=True, text=True, check=True).stdout.strip())


def gpu_count() -> int:
    if not shutil.which("nvidia-smi"):
        return 0
    listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    return sum(1 for line in listing.stdout.splitlines() if line.startswith("GPU "))


def run_smoke(
    smoke: dict[str, Any], opts: SmokeOptions, args: argparse.Namespace, api_keys: tuple[str, ...] = ()
) -> Report:
    report = Report()
    needed = gpus_needed(smoke, opts)
    gpus = gpu_count()
    if not report.record("gpus", CheckResult(gpus >= needed, f"{gpus} NVIDIA GPU(s), {needed} needed")):
        return report
    ray_temp_dir = Path(args.ray_temp_dir)
    start = time.monotonic()
    metrics_port = [f"--metrics-export-port={METRICS_PORT}"] if args.metrics_out else []
    started = _ray_cli(
        "start",
        "--head",
        "--temp-dir",
        str(ray_temp_dir),
        "--dashboard-host",
        "127.0.0.1",
        "--disable-usage-stats",
        *metrics_port,
    )
    if not report.record("ray_start", CheckResult(started.returncode == 0, f"{time.monotonic() - start:.1f} s")):
        print(started.stdout[-3000:], started.stderr[-3000:], sep="\n")
        return report
    scrapes: dict[str, dict[str, float]] = {}

    def scrape(stage: str) -> None:
        if args.metrics_out:
            if stage != "running":  # let the processes report what the load just did
                time.sleep(METRICS_REPORT_WAIT_S)
            scrapes[stage] = scrape_metrics()

    try:
        dashboard = wait_for(
            "the dashboard", lambda: _http("GET", f"{DASHBOARD_URL}/api/serve/applications/")[0] == 200, 120
        )
        if not report.record("dashboard", CheckResult(dashboard, DASHBOARD_URL)):
            return report
        running, elapsed, detail = deploy_and_wait(smoke, args.deploy_timeout)
        summary = f"{elapsed:.0f} s from deploy to RUNNING" if running else detail
        if not report.record("running", CheckResult(running, summary)):
            return report
        served = served_engine(smoke)
        report_engine_memory(ray_temp_dir)
        model_id = served["model_loading_config"]["model_id"]
        scrape("running")
        api_key = api_keys[0] if api_keys else None
        if api_keys and opts.auth_dir is not None:
            api_keys = (*api_keys, check_auth(report, model_id, api_keys, opts.auth_dir / AUTH_KEYS_FILE))
        run_requests(report, model_id, args.max_tokens, args.requests, api_key=api_key)
        if not opts.aggregated:
            backend = served["engine_kwargs"]["kv_transfer_config"]["kv_connector_extra_config"]["backends"][0]
            check_nixl_logs(report, ray_temp_dir, backend)
        if args.bench:
            run_bench(report, model_id, opts.model_dir, args, api_key)
        scrape("after-requests")
        if api_keys:
            check_no_key_in_logs(report, ray_temp_dir, api_keys)
        if args.update_scenario and report.ok:
            run_update_scenario(report, smoke, model_id, missing_model_dir(opts.model_dir), args, api_key)
            scrape("after-update")
    finally:
        if scrapes:
            write_metrics(args.metrics_out, scrapes)
        stopped = _ray_cli("stop")
        last_line = (stopped.stdout + stopped.stderr).strip().splitlines()[-1:] or [""]
        report.record("ray_stop", CheckResult(stopped.returncode == 0, ANSI_ESCAPE.sub("", last_line[0])))
    return report


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="dev", help="stack whose config builds the app (Pulumi.<stack>.yaml)")
    parser.add_argument("--model-dir", type=Path, required=True, help="local model directory (tools.tiny_model)")
    parser.add_argument("--aggregated", action="store_true", help="baseline: build_openai_app, one replica, one GPU")
    parser.add_argument(
        "--kv-roles",
        choices=sorted(KV_ROLE_CHOICES),
        help=f"kv_role of prefill/decode (default: what the stack emits, {KV_ROLES['prefill']}/{KV_ROLES['decode']})",
    )
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.3)
    parser.add_argument(
        "--gpu-memory-of",
        type=int,
        metavar="MIB",
        help="stand in for a smaller GPU (23034 for a g6's L4, as nvidia-smi reports it): vLLM's default share of "
        "that much memory, and the batch limits vLLM picks for it; replaces --gpu-memory-utilization",
    )
    parser.add_argument(
        "--max-model-len",
        type=lambda text: None if text == "stack" else int(text),
        default=512,
        help="context length of the engines; 'stack' keeps the stack's maxModelLen",
    )
    parser.add_argument(
        "--enforce-eager",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="skip torch.compile and CUDA graphs (--no-enforce-eager runs them, as production does)",
    )
    parser.add_argument(
        "--unset-env",
        action="append",
        default=[],
        metavar="NAME",
        help="leave out an env var the stack sets on the engines, to show what it is for",
    )
    parser.add_argument(
        "--bench",
        type=lambda text: [int(c) for c in text.split(",")],
        default=[],
        metavar="C1,C2,...",
        help="after the checks, run `vllm bench serve` at each concurrency",
    )
    parser.add_argument("--bench-input-len", type=int, default=1024)
    parser.add_argument("--bench-output-len", type=int, default=128)
    parser.add_argument("--bench-dir", type=Path, default=Path("bench-results"))
    parser.add_argument("--bench-label", default="pd", help="prefix of the result files")
    parser.add_argument("--bench-timeout", type=float, default=600, help="seconds one concurrency level may take")
    parser.add_argument("--max-tokens", type=int, default=64, help="tokens per timed completion")
    parser.add_argument("--requests", type=int, default=5, help="timed completions after the first")
    parser.add_argument("--deploy-timeout", type=float, default=600, help="seconds to wait for RUNNING")
    parser.add_argument("--ray-temp-dir", default="/tmp/ray", help="Ray's temp dir; its logs are checked")
    parser.add_argument(
        "--share-gpu",
        action="store_true",
        help="prefill and decode on one GPU: a half-GPU placement bundle each (PD app only)",
    )
    parser.add_argument(
        "--update-scenario",
        type=Path,
        metavar="OUT.json",
        help="after the checks, replay KubeRay's in-place update three times (a good change, a broken one, the "
        "rollback) under traffic; the record goes to OUT.json, the dashboard's raw answers beside it",
    )
    parser.add_argument("--update-step-timeout", type=float, default=300, help="seconds one update step may take")
    parser.add_argument(
        "--update-steps",
        type=lambda text: tuple(text.split(",")),
        default=UPDATE_STEP_NAMES,
        help=f"which of the update steps to run, in order (default {','.join(UPDATE_STEP_NAMES)})",
    )
    parser.add_argument(
        "--update-settle", type=float, default=5, help="seconds of traffic after an update step's final verdict"
    )
    parser.add_argument(
        "--metrics-out",
        type=Path,
        metavar="FILE",
        help=f"start Ray with --metrics-export-port={METRICS_PORT}, scrape it before and after the load, write the "
        "metric names to FILE and the PD-related samples to FILE's stem + '-pd-samples.txt'",
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a stack setting changed for this run, as `pulumi config set` would (e.g. prefillReplicas=2)",
    )
    parser.add_argument(
        "--api-key-auth",
        action="store_true",
        help="serve the app as a stack with an exposed endpoint emits it, behind the API-key ingress, with two fresh "
        "keys; check that a request without one is refused, each key is served, a rotated keys file is honoured, and "
        "no key reaches Ray's logs",
    )
    parser.add_argument(
        "--bench-requests",
        type=positive_int,
        metavar="N",
        help="requests per concurrency level (default: four per concurrent request, at least 16)",
    )
    parser.add_argument("--dry-run", action="store_true", help="build, print and validate the config; start nothing")
    args = parser.parse_args(argv)
    if args.share_gpu and args.aggregated:
        parser.error("--share-gpu puts prefill and decode on one GPU; the aggregated baseline has one engine")
    args.config = key_value_pairs(args.config, "--config", parser)
    unknown_steps = set(args.update_steps) - set(UPDATE_STEP_NAMES)
    if unknown_steps:
        parser.error(f"--update-steps {','.join(sorted(unknown_steps))}: allowed are {','.join(UPDATE_STEP_NAMES)}")
    return args


# The API allow-list shapes the cluster's endpoint, never the serve config; a stack file that has none yet (the
# shipped ones: each user adds their own address) still builds the app, on a stand-in range that is never applied:
# 192.88.99.0/24, the 6to4 relay anycast prefix RFC 7526 deprecated (an internet range, so the config accepts it).
ALLOW_LIST_STAND_IN = {"apiPublicAccessCidrs": ["192.88.99.0/24"]}
# The certificate --api-key-auth stands in for: the documentation account (IAM's examples use 123456789012) and a
# nil UUID, never an issued certificate.
STAND_IN_ACCOUNT = "123456789012"
STAND_IN_CERTIFICATE = "00000000-0000-0000-0000-000000000000"


def serve_stack_config(
    stack: str, settings: Mapping[str, str] | None = None, api_keys: tuple[str, ...] = ()
) -> StackConfig:
    """The stack's validated config for building the serve app, with `settings` changed (`--config`, as strings the
    CLI would hand over); the allow-list stood in for where the file has none. With `api_keys`, the app is the one a
    stack with an exposed endpoint emits: those keys as the secret serveApiKeys, the exposure and its certificate
    stood in for (they shape the load balancer, never the serve config)."""
    has_allow_list = f"{PROJECT}:apiPublicAccessCidrs" in stack_file(stack).config
    overrides: dict[str, Any] = {} if has_allow_list else dict(ALLOW_LIST_STAND_IN)
    overrides.update({key: yaml.safe_load(value) for key, value in (settings or {}).items()})
    if not api_keys:
        return load_stack_config(overrides, stack=stack)
    region = load_stack_config(overrides, stack=stack).region
    overrides.update(
        serveExposure="internal",
        serveApiKeyAuth=True,
        serveApiKeys=json.dumps(list(api_keys)),
        serveCertificateArn=f"arn:aws:acm:{region}:{STAND_IN_ACCOUNT}:certificate/{STAND_IN_CERTIFICATE}",
    )
    return load_stack_config(overrides, stack=stack, secret_keys=(API_KEYS_SETTING,))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # Once Ray is imported, its root logger prints every request of the OpenAI client (httpx) at INFO: a line per
    # request of the update scenario's traffic (measured), whose results are recorded anyway.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if not (args.model_dir / "config.json").is_file():
        print(f"{args.model_dir} holds no config.json: make one with `python -m tools.tiny_model DIR`")
        return 2
    work_dir = Path(tempfile.mkdtemp(prefix="ray-llm-smoke-"))
    # Fresh keys for this run, never printed: the auth check and the log check use them.
    api_keys = tuple(secrets.token_hex(32) for _ in range(AUTH_KEY_COUNT)) if args.api_key_auth else ()
    if api_keys:
        write_auth_files(work_dir, api_keys)
    logging_config = work_dir / "nixl-debug-logging.json"
    logging_config.write_text(json.dumps(NIXL_DEBUG_LOGGING, indent=2))
    opts = SmokeOptions(
        model_dir=args.model_dir.resolve(),
        model_has_mamba_state=model_has_mamba_state(args.model_dir),
        aggregated=args.aggregated,
        kv_roles=args.kv_roles,
        gpu_memory_utilization=args.gpu_memory_utilization,
        emulated_gpu=None if args.gpu_memory_of is None else (args.gpu_memory_of, gpu_memory_mib()),
        max_model_len=args.max_model_len,
        enforce_eager=args.enforce_eager,
        unset_env=tuple(args.unset_env),
        logging_config_path=None if args.aggregated else logging_config,
        share_gpu=args.share_gpu,
        auth_dir=work_dir if api_keys else None,
    )
    host = detect_host()
    libfabric = ".".join(map(str, host.libfabric)) if host.libfabric else "missing"
    print(
        f"host: EFA device {'found' if host.has_efa else 'absent'}, flashinfer {host.has_flashinfer}, "
        f"libfabric {libfabric}"
    )
    production, smoke, overrides = smoke_serve_config(serve_stack_config(args.stack, args.config, api_keys), opts, host)
    if opts.share_gpu and opts.gpu_memory_utilization * engines_of(production) > VLLM_DEFAULT_GPU_MEMORY_UTILIZATION:
        print(
            f"--share-gpu runs {engines_of(production)} engines on one GPU: --gpu-memory-utilization at most "
            f"{VLLM_DEFAULT_GPU_MEMORY_UTILIZATION / engines_of(production):.2f} each"
        )
        return 2
    print(f"serve config of stack {args.stack!r} from infra.serving.serve_config.build_serve_config, with overrides:")
    for override in overrides:
        print(f"  override {override.describe()}")
    unexplained = unexplained_changes(production, smoke, overrides)
    if unexplained:
        print(f"config differs where no override says: {sorted(map(format_path, unexplained))}")
        return 1
    (work_dir / "serve-config.json").write_text(json.dumps(smoke, indent=2))
    validate_with_ray(smoke)
    print(f"config valid for Ray's ServeDeploySchema and LLMConfig; written to {work_dir / 'serve-config.json'}")
    if args.update_scenario:
        for step in update_steps(smoke, missing_model_dir(opts.model_dir)):
            validate_with_ray(step.config)
            print(f"update {step.name} ({step.change}): config valid, expected verdict {step.expected}")
    if args.dry_run:
        print(json.dumps(smoke, indent=2))
        return 0
    report = run_smoke(smoke, opts, args, api_keys)
    print(report.verdict("SMOKE"), flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
