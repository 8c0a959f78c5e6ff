"""`--bench`: `vllm bench serve` at each concurrency against the served app, each level with its own timeout.

Three workloads: `chat` (random prompts of --bench-input-len through the chat endpoint), and the two of the prefix-cache
measurements, of one prompt length, greedy, through the completions endpoint: `prefix` (vLLM's shared-prefix dataset:
`num_prefixes` random prefixes, each followed by its own random suffix in `num_prompts / num_prefixes` requests,
shuffled; vllm/benchmarks/datasets/datasets.py `PrefixRepetitionRandomDataset`) and `random` (no shared prefix). Each
level draws new prompts (its own seed), the same for every setup, so no level hits what an earlier one left in a cache.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from lab.smoke import deploy
from lab.smoke.metrics import engine_counts
from tools.probe import CheckResult, Report

CHAT = "chat"
BENCH_WORKLOADS = (CHAT, "prefix", "random")
VLLM_BENCH_SERVE = ["-m", "vllm.entrypoints.cli.main", "bench", "serve"]


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


def completions_args(
    workload: Workload,
    name: str,
    concurrency: int,
    requests: int,
    base_url: str,
    model_id: str,
    tokenizer: Path,
    result_dir: Path,
    label: str,
) -> list[str]:
    """`vllm bench serve`'s arguments (after `vllm bench serve`) for one level of a `prefix` or `random` workload:
    greedy, a fixed output length, the level's own prompts."""
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
        *level_args(requests, concurrency, result_dir, f"{label}-c{concurrency}"),
    ]


def chat_args(model_id: str, model_dir: Path, concurrency: int, requests: int, args: argparse.Namespace) -> list[str]:
    """Random prompts of fixed length through the app's OpenAI chat endpoint."""
    return [
        "--backend",
        "openai-chat",
        "--base-url",
        deploy.SERVE_URL,
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
        *level_args(requests, concurrency, args.bench_dir, f"{args.bench_label}-c{concurrency}"),
    ]


def bench_command(
    model_id: str, model_dir: Path, concurrency: int, args: argparse.Namespace, workload: str = CHAT
) -> list[str]:
    """vLLM's own load generator against the app, one level of one workload; a prefix-cache workload's results are
    named `<workload>_<bench label>-c<concurrency>.json`."""
    requests = args.bench_requests or max(16, 4 * concurrency)
    if workload == CHAT:
        level = chat_args(model_id, model_dir, concurrency, requests, args)
    else:
        label = f"{workload}_{args.bench_label}"
        level = completions_args(
            Workload(), workload, concurrency, requests, deploy.SERVE_URL, model_id, model_dir, args.bench_dir, label
        )
    return [sys.executable, *VLLM_BENCH_SERVE, *level]


def level_args(requests: int, concurrency: int, result_dir: Path, label: str) -> list[str]:
    """One level of `vllm bench serve`: its requests and concurrency, p50/p99 of every latency, the result saved as
    `<label>.json` (lab.bench_plot reads `<setup>-c<concurrency>.json`)."""
    return [
        "--num-prompts",
        str(requests),
        "--max-concurrency",
        str(concurrency),
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,99",
        "--save-result",
        "--result-dir",
        str(result_dir),
        "--result-filename",
        f"{label}.json",
        "--disable-tqdm",
    ]


def bench_env(api_key: str | None) -> dict[str, str]:
    """vLLM's bench client sends `Authorization: Bearer $OPENAI_API_KEY` when it is set (vllm/benchmarks/lib/
    endpoint_request_func.py, `_get_headers`): the key goes by environment, never on the command line."""
    return {**os.environ, "OPENAI_API_KEY": api_key} if api_key else dict(os.environ)


def run_bench(
    report: Report,
    model_id: str,
    model_dir: Path,
    args: argparse.Namespace,
    api_key: str | None = None,
    scrape: Callable[[], Mapping[str, float]] | None = None,
) -> None:
    """Every level of every workload; with `scrape` (Ray's metrics, reported since the last call), what each level
    added to each engine's counters, beside the level's result as `<result name>-engines.json`."""
    args.bench_dir.mkdir(parents=True, exist_ok=True)
    before = scrape() if scrape else None
    for concurrency in args.bench:
        for workload in args.bench_workload:
            command = bench_command(model_id, model_dir, concurrency, args, workload)
            summary = f"vllm bench serve, {workload}, concurrency {concurrency}: "
            passed, outcome = run_level(command, args.bench_timeout, api_key)
            if scrape and before is not None:
                after = scrape()
                counts = engine_counts(before, after)
                result = Path(command[command.index("--result-filename") + 1])
                (args.bench_dir / f"{result.stem}-engines.json").write_text(json.dumps(counts, indent=2) + "\n")
                outcome += "; " + "; ".join(f"{engine}: {engine_summary(c)}" for engine, c in counts.items())
                before = after
            name = f"bench_c{concurrency}" if workload == CHAT else f"bench_{workload}_c{concurrency}"
            report.record(name, CheckResult(passed, summary + outcome))


def run_level(command: list[str], timeout_s: float, api_key: str | None) -> tuple[bool, str]:
    start = time.monotonic()
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, check=False, timeout=timeout_s, env=bench_env(api_key)
        )
    except subprocess.TimeoutExpired:
        # A stalled level must not hold the host (and the levels after it) forever.
        return False, f"no result within {timeout_s:.0f} s"
    print(done.stdout[-2500:], done.stderr[-1500:] if done.returncode else "", sep="\n", flush=True)
    return done.returncode == 0, f"exit {done.returncode} in {time.monotonic() - start:.0f} s"


def engine_summary(counts: Mapping[str, float]) -> str:
    """An engine's requests and prefix-cache hits in one level."""
    queries = counts.get("prefix_cache_queries", 0.0)
    hits = counts.get("prefix_cache_hits", 0.0)
    rate = f"{hits / queries:.1%}" if queries else "no lookups"
    return f"{counts.get('request_success', 0.0):g} requests, prefix cache {hits:g}/{queries:g} ({rate})"
