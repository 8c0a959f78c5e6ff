"""Prefix caching and prefix-aware routing: which engine keeps a prefix cache, and which side routes by prefix.

Read in vLLM 0.26.0 (the wheel ray[llm]==2.58.0 pins; docs/prefix-caching.md has the whole reading):
- the default: `EngineArgs._set_default_chunked_prefill_and_prefix_caching_args` (`vllm/engine/arg_utils.py`) turns
  prefix caching on where it is supported and the model is not hybrid (`default_prefix_caching =
  is_prefix_caching_supported and not is_hybrid`); an explicit `enable_prefix_caching` wins;
- a hybrid model with the cache on: `MambaModelConfig.verify_and_update_config` (`model_executor/models/config.py`)
  picks `mamba_cache_mode` "all" where the model class supports Mamba prefix caching and "align" otherwise; Qwen3.5
  does not (`models/qwen3_5.py` raises for "all"), so it runs "align": the Gated DeltaNet state is kept only at
  block boundaries that end a scheduler step, and the scheduler cuts prefill chunks at block boundaries to make
  them (`v1/core/sched/scheduler.py` `_mamba_block_aligned_split`). The attention block size is the one vLLM picks
  without the cache ("align" and "none" share `_align_hybrid_block_size`'s branch, `platforms/interface.py`; "all"
  rounds it to the Mamba chunk size);
- the prefill side of PD: NIXL's pull connector hands the decode side every block of the request's computed tokens,
  those that hit the prefill's cache included (`v1/core/sched/scheduler.py` `_connector_finished` ->
  `get_block_ids_for_computed_tokens`; `nixl/pull_scheduler.py` `request_finished`), and the decode reads only the
  last Gated DeltaNet block, the state at the prompt's second-last token (`nixl/base_worker.py`
  `_apply_prefix_caching`; `nixl/base_scheduler.py` `_truncate_mamba_request_for_prefill`). A prefill cache hit saves
  the prefill's compute, never a byte of the transfer, and the decode gets the whole KV either way;
- the decode side of PD: `get_num_new_matched_tokens` asks the prefill only for the tokens past the decode's own
  cache hit, and `_apply_prefix_caching` reads only the attention blocks the decode lacks. For an attention-only
  model a turn that the same decode engine served before then moves only the new blocks. For a hybrid model the
  decode's cache can hit only where it holds a Gated DeltaNet state at a block boundary: it gets the prompt's state
  at the second-last token, not at a boundary, and keeps boundary states only as decoding crosses them; meanwhile
  "align" doubles each request's state blocks (`v1/kv_cache_interface.py` `MambaSpec.max_memory_usage_bytes`) and
  adds a state copy to every decode step (`v1/worker/gpu_model_runner.py`, `postprocess_mamba_align_gpu`). So the
  decode side of a hybrid model keeps no cache; nothing in the transfer needs it (the prefill-side rule above).
- NIXL: prefix caching and `mamba_cache_mode` are not in the compatibility hash (`nixl/metadata.py`
  `compute_nixl_compatibility_hash`), but a hybrid pair must have equal block sizes ("HMA does not support
  different remote block size yet", `nixl/base_worker.py`), so a cached hybrid prefill runs "align", whose block
  size is the uncached decode's.

Prefix-aware routing is Ray Serve LLM 2.58's PrefixCacheAffinityRouter (`ray/llm/_internal/serve/routing_policies/
prefix_aware/prefix_aware_router.py`): the router of a deployment's callers (the ingress for decode, each decode
replica for prefill) sends a request to the replica whose earlier prompts share the longest prefix with it, kept in
one prefix-tree actor per deployment. The stack runs it through serve_ext/ray_llm_eks_routing, which fixes a
livelock of Ray's class (docs/prefix-caching.md; tests/test_prefix_routing.py shows both on CPU).
"""

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
    if hybrid is None:
        return "vLLM 0.26's default for the model (on for attention-only models, off for hybrid ones)"
    if side != "decode" and mode == "on":
        return "prefixCaching is on"
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
