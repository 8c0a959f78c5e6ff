"""The GPU run: three engines started together, the teacher-forced passes, the chat levels, each written as it ends.

The engines start at once because each has its KV cache fixed in bytes (`kv_cache_memory_bytes`, an L4's share as
the earlier run measured it): vLLM then skips the memory profiling that another engine's start would disturb
(vllm/v1/worker/gpu_worker.py `determine_available_memory`).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from lab.kv_offload_gpu.chat import chat_level, random_tokens
from lab.prefix_cache_gpu import teacher
from lab.prefix_cache_gpu.engine import aggregated_engine, serve_command, serve_env
from lab.prefix_cache_gpu.run import (
    http_get,
    log,
    log_facts,
    post_all,
    record_plan,
    start_engine,
    stop_engine,
    wait_ready,
)
from lab.smoke.host import detect_host, gpu_memory_mib

# In this order at each level: the default against the tier first, should device time run short.
PORTS = {"off": 8100, "tier": 8300, "on": 8200}
# Prompt tokens looked up in the GPU's prefix cache and found there, in the connector's (the host tier's), the
# tier's bytes moved each way, preemptions, and the totals they are shares of (vllm/v1/metrics/loggers.py;
# kv_connector/v1/offloading/metrics.py; prometheus_client adds _total to counters).
COUNTER_PREFIXES = (
    "vllm:prefix_cache_",
    "vllm:external_prefix_cache_",
    "vllm:kv_offload_",
    "vllm:num_preemptions",
    "vllm:prompt_tokens",
    "vllm:generation_tokens",
    "vllm:request_success",
)
# A flush: prompts enough to take every one of the L4's 89 blocks, so the next request finds its prefix in host
# memory only.
FLUSH_PROMPTS, FLUSH_LEN = 12, 2048


def counters(metrics_text: str) -> dict[str, float]:
    """Every counter (and histogram sum/count) under COUNTER_PREFIXES, summed over its label sets."""
    totals: dict[str, float] = {}
    for line in metrics_text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name.startswith(COUNTER_PREFIXES) and name.endswith(("_total", "_sum", "_count")):
            totals[name] = totals.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return totals


def added(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    return {name.removeprefix("vllm:"): value - before.get(name, 0.0) for name, value in after.items()}


def engines(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The three engines: the stack's default (prefixCaching auto: off for the hybrid model), and the tiered stack's
    baseline with and without its tier, each with an L4's KV bytes."""
    host_mib = args.host_gpu_mib or gpu_memory_mib()
    emulated = (args.gpu_memory_of, host_mib)
    default, _ = aggregated_engine(json.loads(args.default_config.read_text()), args.model_dir, emulated, detect_host())
    tiered, _ = aggregated_engine(json.loads(args.tiered_config.read_text()), args.model_dir, emulated, detect_host())
    cached = json.loads(json.dumps(tiered))
    del cached["engine_kwargs"]["kv_offloading_size"]
    found = {"off": default, "on": cached, "tier": tiered}
    for engine in found.values():
        engine["engine_kwargs"]["kv_cache_memory_bytes"] = args.kv_cache_bytes
    return found


def plan(args: argparse.Namespace) -> dict[str, Any]:
    resolved = engines(args)
    return {
        "engines": resolved,
        "serve": {name: serve_command(engine, PORTS[name], name != "off") for name, engine in resolved.items()},
        "serve_env": serve_env(resolved["off"], {}),
        "teacher": asdict(args.teacher),
        "chat": asdict(args.chat),
        "levels": args.levels,
    }


def flush(port: int, model: str, vocab_size: int, seed: int) -> None:
    import random

    rng = random.Random(seed)
    bodies = [
        {"model": model, "prompt": random_tokens(rng, FLUSH_LEN, vocab_size), "max_tokens": 1, "temperature": 0}
        for _ in range(FLUSH_PROMPTS)
    ]
    post_all(port, bodies, 4)


def run_teacher(model: str, args: argparse.Namespace, vocab_size: int) -> dict[str, Any]:
    """The uncached engine's spread and the tiered engine against it: on.seq1 fills both tiers, on.seq2 flushes the
    GPU before each prompt (its first position reads the prefix from host memory), on.batch1 all at once."""
    plan = args.teacher
    prompts = teacher.prompts(plan, vocab_size)
    generations = post_all(PORTS["off"], [teacher.generation_body(model, p, plan.continuation) for p in prompts], 1)
    continuations = [teacher.continuation(g) for g in generations]
    bodies = teacher.forced_bodies(model, prompts, continuations, plan.top_k)
    reference = [token for tokens in continuations for token in tokens]
    answers: dict[str, list[dict[str, Any]]] = {}
    for name in (*teacher.UNCACHED_PASSES, *teacher.CACHED_PASSES):
        engine, kind = name.split(".")
        port = PORTS["off" if engine == "off" else "tier"]
        if name == "on.seq2":
            answers[name] = []
            for index, request in enumerate(bodies):
                if index % plan.continuation == 0:
                    flush(port, model, vocab_size, seed=index)
                answers[name] += post_all(port, [request], 1)
        else:
            answers[name] = post_all(port, bodies, 1 if kind.startswith("seq") else len(bodies))
        log(f"teacher pass {name}: {len(answers[name])} answers")
    passes = {name: [teacher.position(a) for a in got] for name, got in answers.items()}
    host_reads = list(range(0, len(bodies), plan.continuation))
    subset = {name: [passes[name][i] for i in host_reads] for name in ("on.seq2", "off.seq1", "off.batch1")}
    host_reference = [reference[i] for i in host_reads]
    raw = {
        name: [{**asdict(p), "top": {str(k): v for k, v in p.top.items()}} for p in got] for name, got in passes.items()
    }
    (args.out / "teacher-raw.json").write_text(json.dumps({"reference": reference, "passes": raw}))
    result = {
        "plan": asdict(plan),
        "host_read_positions": host_reads,
        "host_reads_vs_uncached": teacher.compare(subset["on.seq2"], subset["off.seq1"], host_reference),
        "host_reads_batching_spread": teacher.compare(subset["off.batch1"], subset["off.seq1"], host_reference),
        **teacher.report(passes, reference),
    }
    (args.out / "teacher.json").write_text(json.dumps(result, indent=2))
    return result


def run_chat(args: argparse.Namespace, model: str, vocab_size: int, deadline: float) -> None:
    records = []
    for concurrency in args.levels:
        for name, port in PORTS.items():
            if time.monotonic() > deadline:
                log(f"deadline passed: no chat level from {name} c{concurrency} on")
                return
            before = counters(http_get(f"http://127.0.0.1:{port}/metrics"))
            try:
                result = chat_level(port, model, args.chat, concurrency, vocab_size)
                error = None
            except Exception as failure:  # a failed level is recorded and the sweep goes on
                result, error = {}, repr(failure)
            counts = added(before, counters(http_get(f"http://127.0.0.1:{port}/metrics")))
            (args.out / f"chat_{name}-c{concurrency}.json").write_text(json.dumps({**result, "engine": counts}))
            brief = {k: v for k, v in result.items() if k not in ("turns", "plan")}
            records.append({"engine_name": name, "concurrency": concurrency, "error": error, **brief, "engine": counts})
            log(f"chat {name} c{concurrency}: {json.dumps(records[-1])}")
            (args.out / "chat.json").write_text(json.dumps(records, indent=2))


def run(args: argparse.Namespace) -> int:
    deadline = time.monotonic() + args.deadline_s
    resolved = plan(args)
    if not record_plan(args, resolved):
        return 0
    model = resolved["engines"]["off"]["model_loading_config"]["model_id"]
    vocab_size = json.loads((args.model_dir / "config.json").read_text())["text_config"]["vocab_size"]
    processes = {}
    try:
        for name in PORTS:
            # each engine compiles into its own caches: three starting at once would write the same entries
            caches = {"VLLM_CACHE_ROOT": f"/tmp/vllm-cache-{name}", "TRITON_CACHE_DIR": f"/tmp/triton-cache-{name}"}
            env = serve_env(resolved["engines"][name], {**os.environ, **caches})
            processes[name] = start_engine(resolved["serve"][name], env, args.out / f"engine-{name}.log")
        for name, port in PORTS.items():
            log(f"engine {name} ready after {wait_ready(processes[name], port, args.start_timeout):.0f} s more")
        if "teacher" in args.parts:
            try:
                verdicts = run_teacher(model, args, vocab_size)["within_uncached_spread"]
                log(f"teacher: within the uncached spread: {json.dumps(verdicts)}")
            except Exception as failure:  # the chat load still runs: device time is not spent twice
                log(f"teacher failed: {failure!r}")
        if "chat" in args.parts:
            run_chat(args, model, vocab_size, deadline)
        (args.out / "metrics-tier.txt").write_text(http_get(f"http://127.0.0.1:{PORTS['tier']}/metrics"))
    finally:
        for process in processes.values():
            stop_engine(process)
        facts = {n: log_facts((args.out / f"engine-{n}.log").read_text(errors="replace")) for n in processes}
        (args.out / "engines.json").write_text(json.dumps(facts, indent=2))
    return 0
