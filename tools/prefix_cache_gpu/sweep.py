"""`vllm bench serve` per workload, engine and concurrency, and the engine's prefix-cache counters around each level.

Two workloads of the same prompt length: `prefix_repetition` (vLLM's shared-prefix dataset: `num_prefixes` random
prefixes, each followed by its own random suffix in `num_prompts / num_prefixes` requests, shuffled;
vllm/benchmarks/datasets/datasets.py `PrefixRepetitionRandomDataset`) and `random` (no shared prefix). Each level
draws new prompts (its own seed), the same for both engines, so no level hits what an earlier one left in the cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.smoke.bench import level_args

WORKLOADS = ("prefix", "random")
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


@dataclass(frozen=True)
class Workload:
    prefix_len: int = 1536
    suffix_len: int = 64
    num_prefixes: int = 4
    output_len: int = 32

    def dataset_args(self, name: str) -> list[str]:
        if name == "prefix":
            return [
                "--dataset-name",
                "prefix_repetition",
                "--prefix-repetition-prefix-len",
                str(self.prefix_len),
                "--prefix-repetition-suffix-len",
                str(self.suffix_len),
                "--prefix-repetition-num-prefixes",
                str(self.num_prefixes),
                "--prefix-repetition-output-len",
                str(self.output_len),
            ]
        return [
            "--dataset-name",
            "random",
            "--random-input-len",
            str(self.prefix_len + self.suffix_len),
            "--random-output-len",
            str(self.output_len),
        ]


def label(workload: str, engine: str) -> str:
    """A tools.bench_plot label (letters, digits, `_` and `.`): `prefix_on`."""
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
    """`vllm bench serve`'s arguments (after `vllm bench serve`) for one level: greedy, fixed output length."""
    return [
        "--backend",
        "openai",
        "--base-url",
        base_url,
        "--endpoint",
        "/v1/completions",
        "--model",
        model_id,
        "--tokenizer",
        str(tokenizer),
        *workload.dataset_args(name),
        "--ignore-eos",
        "--temperature",
        "0",
        "--seed",
        str(1000 + concurrency),
        *level_args(requests, concurrency, result_dir, f"{label(name, engine)}-c{concurrency}"),
    ]


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
