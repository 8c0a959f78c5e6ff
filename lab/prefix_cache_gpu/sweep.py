"""`vllm bench serve` per workload (lab.smoke.bench's `prefix` and `random`: one prompt length, with and without a
shared prefix), engine and concurrency, and the engine's prefix-cache counters around each level."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lab.smoke.bench import BENCH_WORKLOADS, CHAT, Workload, completions_args

WORKLOADS = tuple(name for name in BENCH_WORKLOADS if name != CHAT)
# vLLM's counters (vllm/v1/metrics/loggers.py; prometheus_client adds _total): prompt tokens looked up in the prefix
# cache and found there, preemptions, and the token and request totals they are shares of.
COUNTERS = (
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
    "vllm:prompt_tokens_cached_total",
    "vllm:num_preemptions_total",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:request_success_total",
)


def label(workload: str, engine: str) -> str:
    """A lab.bench_plot label (letters, digits, `_` and `.`): `prefix_on`."""
    return f"{workload}_{engine}"


def bench_argv(
    workload: Workload,
    name: str,
    engine: str,
    concurrency: int,
    requests: int,
    base_url: str,
    model_id: str,
    tokenizer: Path,
    result_dir: Path,
) -> list[str]:
    """`vllm bench serve`'s arguments (after `vllm bench serve`) for one level of one engine."""
    return completions_args(
        workload, name, concurrency, requests, base_url, model_id, tokenizer, result_dir, label(name, engine)
    )


def counters(metrics_text: str) -> dict[str, float]:
    """COUNTERS summed over their label sets, from Prometheus' text format."""
    totals = dict.fromkeys(COUNTERS, 0.0)
    for line in metrics_text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in totals:
            totals[name] += float(line.rsplit(" ", 1)[1])
    return totals


def level_counts(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, Any]:
    """What one level added to each counter, and the share of looked-up prompt tokens the cache held."""
    added = {name.removeprefix("vllm:"): after[name] - before[name] for name in COUNTERS}
    queries = added["prefix_cache_queries_total"]
    return {**added, "hit_rate": added["prefix_cache_hits_total"] / queries if queries else None}
