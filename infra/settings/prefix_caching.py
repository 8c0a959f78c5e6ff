"""Prefix caching and prefix-aware routing: which engine keeps a prefix cache, and which side routes by prefix.

vLLM 0.26's defaults, the hybrid model's "align" mode and what each PD side gains are read in its source in
docs/prefix-caching.md#what-vllm-0260-does-read-in-its-wheel-the-version-rayllm2580-pins; prefix-aware routing
(Ray Serve LLM 2.58's PrefixCacheAffinityRouter, run through serve_ext/ray_llm_eks_routing for its livelock fix) in
docs/prefix-caching.md#prefix-aware-routing-ray-serve-llm-258."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

PREFIX_CACHING_MODES = ("auto", "on", "off")
# What decides `auto`: whether the model has Mamba-type state (vLLM's `is_hybrid`).
HYBRID, ATTENTION_ONLY = True, False
# The mode a cached hybrid engine of a PD pair runs (see the module's docstring, NIXL).
PD_MAMBA_CACHE_MODE = "align"


@dataclass(frozen=True)
class CacheRule:
    enabled: bool
    basis: str  # the measurement or the reading it rests on


# prefixCaching `auto` on an engine that prefills (the prefill side of PD, an aggregated engine): on where measured
# correct and faster, off otherwise. Hybrid: off, measured on the GPU host (docs/prefix-caching.md, "Measured on the GPU
# host"; lab/records/bench/2026-12-06-prefix-cache/).
AUTO_PREFILL: Mapping[bool, CacheRule] = {
    HYBRID: CacheRule(
        False,
        "measured on the default model's shape at an L4's memory: the cached path (mamba_cache_mode align) is slower "
        "(TTFT p50 at 16 concurrent 805 against 533 ms) and its logprobs just outside batching's spread "
        "(docs/prefix-caching.md)",
    ),
    ATTENTION_ONLY: CacheRule(True, "vLLM 0.26's own default for attention-only models"),
}
# The decode side of PD, from reading the NIXL connector (the module's docstring); `on` does not change it.
DECODE: Mapping[bool, CacheRule] = {
    HYBRID: CacheRule(
        False,
        "read in vLLM 0.26's NIXL connector: the prefill sends the whole KV and the Gated DeltaNet state either way, "
        "the decode's own cache would hit only at states kept while decoding, and align mode doubles its state "
        "blocks and copies state every step",
    ),
    ATTENTION_ONLY: CacheRule(
        True,
        "vLLM 0.26's own default; read in its NIXL connector: the decode then pulls only the blocks its cache lacks",
    ),
}


def engine_prefix_caching(mode: str, side: str, hybrid: bool | None) -> bool | None:
    """`enable_prefix_caching` of a PD side ("prefill" or "decode") for prefixCaching `mode`; None leaves vLLM's
    default, where the model's kind is not known (the project measured only KNOWN_MODELS; vLLM's default is the
    table's today)."""
    if mode == "off":
        return False
    table = DECODE if side == "decode" else AUTO_PREFILL
    if side == "decode" or mode == "auto":
        return None if hybrid is None else table[hybrid].enabled
    return True


def cache_rule(mode: str, side: str, hybrid: bool | None) -> str:
    """Why the side gets what engine_prefix_caching gives it, for the preview."""
    if mode == "off":
        return "prefixCaching is off"
    if side != "decode" and mode == "on":
        return "prefixCaching is on"
    if hybrid is None:
        return "vLLM 0.26's default for the model (on for attention-only models, off for hybrid ones)"
    return (DECODE if side == "decode" else AUTO_PREFILL)[hybrid].basis


def routes_by_prefix(routing: bool, prefix_caching: bool | None, most_replicas: int) -> bool:
    """A side routes by prefix where asked, where its engines may keep a prefix cache and where there is more than
    one replica to choose from (with one, the router would only add its prefix tree's round trips to each call)."""
    return routing and prefix_caching is not False and most_replicas > 1


def prefix_routing_problem(
    routing: bool, mode: str, model_source: str, prefill: bool | None, decode: bool | None
) -> str | None:
    """prefixAwareRouting where no engine keeps a prefix cache: nothing to route toward."""
    if not routing or prefill is not False or decode is not False:
        return None
    if mode == "off":
        why = "prefixCaching='off' keeps no prefix cache on any engine"
    else:
        why = (
            f"prefixCaching={mode!r} keeps no prefix cache on either side of modelSource={model_source!r}, a hybrid "
            f"model (prefill: {AUTO_PREFILL[HYBRID].basis}; decode: {DECODE[HYBRID].basis})"
        )
    return (
        f"prefixAwareRouting=true is invalid with prefixCaching={mode!r}: {why}, so no replica holds a prefix to route "
        "toward; allowed is prefixAwareRouting false, or prefixCaching 'on' (the prefill side caches)"
    )
