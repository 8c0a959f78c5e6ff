"""The host-memory KV tier: each engine keeps KV blocks evicted from its GPU in pinned host memory, and a prompt that
starts like an earlier one loads them back instead of prefilling them again.

vLLM 0.26's OffloadingConnector, beside NIXL through MultiConnector on a PD side, needs prefix caching on a hybrid
model and room in the worker pod's memory
(docs/prefix-caching.md#host-memory-kv-tier-prefillkvoffloadgib-decodekvoffloadgib)."""

from __future__ import annotations

import math
from typing import Any

from infra.settings.capacity import GIB
from infra.settings.instance_types import InstanceShape
from infra.settings.topology import ray_worker_memory_gib

OFFLOADING_CONNECTOR = "OffloadingConnector"
MULTI_CONNECTOR = "MultiConnector"
# Ray's object store takes this share of the memory Ray sees, the pod's (ray/_private/ray_constants.py
# DEFAULT_OBJECT_STORE_MEMORY_PROPORTION); it lives in /dev/shm, which counts against the pod's memory limit.
RAY_OBJECT_STORE_SHARE = 0.3
# Host memory of one engine's processes besides its tier (the vLLM API server and engine core, Ray's replica actor).
# Estimated, not measured: lab/records/2026-12-07-kv-offload/README.md says how the GPU run would measure it.
ENGINE_HOST_MEMORY_GIB = 12


def cpu_bytes_to_use(tier_gib: int) -> int:
    """vLLM's `cpu_bytes_to_use` for a tier of `tier_gib`, as `kv_offloading_size` computes it (GiB x 2**30)."""
    return tier_gib * GIB


def with_host_tier(nixl: dict[str, Any], tier_gib: int) -> dict[str, Any]:
    """A PD side's `kv_transfer_config`: NIXL alone, or NIXL first (its protocol governs Ray's PD routing) and the tier
    (vLLM's native CPU offloading) second, each a MultiConnector child with its own role and extra config. With the
    tier no engine id is set, so each replica's NIXL child gets its own
    (docs/prefix-caching.md#host-memory-kv-tier-prefillkvoffloadgib-decodekvoffloadgib)."""
    if not tier_gib:
        return nixl
    child = {key: value for key, value in nixl.items() if key != "engine_id"}
    tier = {
        "kv_connector": OFFLOADING_CONNECTOR,
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"cpu_bytes_to_use": cpu_bytes_to_use(tier_gib)},
    }
    return {
        "kv_connector": MULTI_CONNECTOR,
        "kv_role": nixl["kv_role"],
        "kv_connector_extra_config": {"connectors": [child, tier]},
    }


def nixl_config(kv_transfer_config: dict[str, Any]) -> dict[str, Any]:
    """The NIXL connector's config in a side's `kv_transfer_config`, alone or as the MultiConnector's first child."""
    if kv_transfer_config.get("kv_connector") == MULTI_CONNECTOR:
        first: dict[str, Any] = kv_transfer_config["kv_connector_extra_config"]["connectors"][0]
        return first
    return kv_transfer_config


# Measured: vLLM 0.26's tier killed the engine of the hybrid default (Qwen3.5-9B, Gated DeltaNet + attention, prefix
# caching in align mode) under 16 concurrent chats, in both runs: an AssertionError in the offloading scheduler's
# `update_state_after_alloc` (kv_connector/v1/offloading/scheduler.py), lab/records/2026-12-07-kv-offload/README.md.
HYBRID_TIER_RECORD = "lab/records/2026-12-07-kv-offload/README.md"


def hybrid_model_problem(key: str, tier_gib: int, hybrid: bool | None) -> str | None:
    """A tier for a model with Mamba-style state, which vLLM 0.26's offloading scheduler fails on under load."""
    if not tier_gib or hybrid is not True:
        return None
    return (
        f"{key}={tier_gib} is invalid with a hybrid model (attention and Gated DeltaNet layers): vLLM 0.26's host "
        "tier stopped the engine under 16 concurrent chats in both GPU runs (AssertionError in "
        f"kv_connector/v1/offloading/scheduler.py update_state_after_alloc; {HYBRID_TIER_RECORD}); allowed is 0, "
        "or a tier for a model of attention layers only"
    )


def prefix_caching_problem(key: str, tier_gib: int, side: str, prefix_caching: bool | None) -> str | None:
    """A tier on a side that keeps no prefix cache (the module's docstring)."""
    if not tier_gib or prefix_caching is not False:
        return None
    return (
        f"{key}={tier_gib} is invalid with prefix caching off on the {side} side: vLLM 0.26's host-memory tier finds "
        "blocks by their prefix-cache hashes, and a hybrid model needs prefix caching for it to start "
        "(kv_connector/v1/offloading/config.py); allowed is 0, or prefixCaching 'on' for the prefill side (the decode "
        "side of a hybrid model keeps no cache, see Prefix caching)"
    )


def node_host_memory(node: InstanceShape, engines_per_node: int) -> tuple[int, float, int]:
    """The worker pod's Ray container's memory, Ray's object store's share of it and one node's engines' own, in GiB."""
    pod_gib = ray_worker_memory_gib(node)
    return pod_gib, round(pod_gib * RAY_OBJECT_STORE_SHARE, 2), engines_per_node * ENGINE_HOST_MEMORY_GIB


def largest_tier_gib(node: InstanceShape, engines_per_node: int) -> int:
    """The largest tier each engine on a node can have."""
    pod_gib, object_store_gib, engines_gib = node_host_memory(node, engines_per_node)
    return max(0, math.floor((pod_gib - object_store_gib - engines_gib) / engines_per_node))


def node_memory_problem(
    node: InstanceShape, engines_per_node: int, tiers: dict[str, int], gpu_node_type: str
) -> str | None:
    """Tiers that one GPU node's worker pod cannot hold: a node may carry `engines_per_node` engines of either side,
    so the largest tier counts for each of them."""
    key, tier_gib = max(tiers.items(), key=lambda item: (item[1], item[0]))
    largest = largest_tier_gib(node, engines_per_node)
    if tier_gib <= largest:
        return None
    pod_gib, object_store_gib, engines_gib = node_host_memory(node, engines_per_node)
    return (
        f"{key}={tier_gib} is invalid on gpuNodeType={gpu_node_type!r}: its worker pod gets {pod_gib} GiB, of which "
        f"Ray's object store takes {object_store_gib} GiB and {engines_per_node} engine(s) about {engines_gib} GiB, so "
        f"{engines_per_node} tier(s) of {tier_gib} GiB ({engines_per_node * tier_gib} GiB) do not fit; allowed is at "
        f"most {largest} per engine, or a gpuNodeType with more memory"
    )
