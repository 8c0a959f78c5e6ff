"""`--bench`: `vllm bench serve` at each concurrency against the served app, each level with its own timeout."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from tools.probe import CheckResult, Report
from tools.smoke import deploy


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
        *level_args(
            args.bench_requests or max(16, 4 * concurrency),
            concurrency,
            args.bench_dir,
            f"{args.bench_label}-c{concurrency}",
        ),
    ]


def level_args(requests: int, concurrency: int, result_dir: Path, label: str) -> list[str]:
    """One level of `vllm bench serve`: its requests and concurrency, p50/p99 of every latency, the result saved as
    `<label>.json` (tools.bench_plot reads `<setup>-c<concurrency>.json`)."""
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
