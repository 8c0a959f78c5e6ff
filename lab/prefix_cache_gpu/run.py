"""The GPU run: both engines up one after the other, the teacher-forced passes, the sweep, each written as it ends.

The engines start one at a time and nothing runs on the first while the second starts: vLLM sizes its KV cache
from the GPU memory it sees change while it profiles (vllm/v1/worker/gpu_worker.py `determine_available_memory`),
so traffic on the other engine then would move the second one's block count.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lab.prefix_cache_gpu import sweep, teacher
from lab.prefix_cache_gpu.engine import aggregated_engine, serve_command, serve_env
from lab.smoke.host import detect_host, gpu_memory_mib

PORTS = {"off": 8100, "on": 8200}
# Engine log lines that say how the cache was laid out and chosen (vllm/model_executor/models/config.py,
# vllm/v1/core/kv_cache_utils.py, vllm/platforms/interface.py, vllm/v1/worker/gpu_worker.py).
LOG_FACTS = (
    "Mamba cache mode",
    "mamba_cache_mode",
    "Prefix caching in Mamba",
    "attention block size",
    "Available KV cache memory",
    "GPU KV cache size",
    "Maximum concurrency",
    "num_gpu_blocks",
    "Model loading took",
    "init engine",
    "Graph capturing finished",
    "prefix caching",
)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def http_get(url: str, timeout: float = 10) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return str(answer.read().decode())


def start_engine(command: Sequence[str], env: Mapping[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    with log_path.open("wb") as sink:
        return subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=dict(env), start_new_session=True)


def wait_ready(process: subprocess.Popen[bytes], port: int, timeout: float) -> float:
    """Seconds until the engine's /health answers; an engine that exits or outlasts `timeout` fails the run."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if process.poll() is not None:
            raise RuntimeError(f"the engine on port {port} exited with {process.returncode} before it was ready")
        try:
            http_get(f"http://127.0.0.1:{port}/health", timeout=2)
            return time.monotonic() - start
        except OSError:
            time.sleep(2)
    raise TimeoutError(f"the engine on port {port} was not ready within {timeout:.0f} s")


def stop_engine(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


async def _post_all(url: str, bodies: Sequence[Mapping[str, Any]], concurrency: int) -> list[dict[str, Any]]:
    import aiohttp

    gate = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as session:

        async def post(body: Mapping[str, Any]) -> dict[str, Any]:
            async with gate, session.post(url, json=body) as answer:
                answer.raise_for_status()
                answer_body: dict[str, Any] = await answer.json()
                return answer_body

        return await asyncio.gather(*(post(body) for body in bodies))


def post_all(port: int, bodies: Sequence[Mapping[str, Any]], concurrency: int) -> list[dict[str, Any]]:
    """Completions for `bodies` in order, at most `concurrency` in flight (1: one request at a time)."""
    return asyncio.run(_post_all(f"http://127.0.0.1:{port}/v1/completions", bodies, concurrency))


def run_teacher(model_id: str, plan: teacher.TeacherPlan, args: argparse.Namespace) -> dict[str, Any]:
    out = args.out
    vocab_size = json.loads((args.model_dir / "config.json").read_text())["text_config"]["vocab_size"]
    prompts = teacher.prompts(plan, vocab_size)
    generations = post_all(PORTS["off"], [teacher.generation_body(model_id, p, plan.continuation) for p in prompts], 1)
    continuations = [teacher.continuation(g) for g in generations]
    bodies = teacher.forced_bodies(model_id, prompts, continuations, plan.top_k)
    reference = [token for tokens in continuations for token in tokens]
    passes, raw = {}, {}
    for name in (*teacher.UNCACHED_PASSES, *teacher.CACHED_PASSES):
        engine, kind = name.split(".")
        start = time.monotonic()
        answers = post_all(PORTS[engine], bodies, 1 if kind.startswith("seq") else len(bodies))
        passes[name] = [teacher.position(answer) for answer in answers]
        raw[name] = [{**asdict(p), "top": {str(k): v for k, v in p.top.items()}} for p in passes[name]]
        (out / "teacher-raw.json").write_text(json.dumps({"reference": reference, "passes": raw}))
        log(f"teacher pass {name}: {len(answers)} answers in {time.monotonic() - start:.1f} s")
    result = {"plan": asdict(plan), **teacher.report(passes, reference)}
    (out / "teacher.json").write_text(json.dumps(result, indent=2))
    return result


def vllm_bench_serve(argv: Sequence[str]) -> dict[str, Any]:
    """`vllm bench serve ARGV`, in this process: the CLI's own parser and entry point
    (vllm/entrypoints/cli/benchmark/serve.py calls `vllm.benchmarks.serve.main`), without a new import per level."""
    from vllm.benchmarks.serve import add_cli_args, main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(prog="vllm bench serve")
    add_cli_args(parser)
    result: dict[str, Any] = main(parser.parse_args(list(argv)))
    return result


def run_sweep(args: argparse.Namespace, model_id: str, deadline: float) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for concurrency in args.levels:
        for name in sweep.WORKLOADS:
            for engine, port in PORTS.items():
                if time.monotonic() > deadline:
                    log(f"deadline passed: no more levels from {name} {engine} c{concurrency} on")
                    return records
                argv = sweep.bench_argv(
                    args.workload,
                    name,
                    engine,
                    concurrency,
                    args.requests,
                    f"http://127.0.0.1:{port}",
                    model_id,
                    args.model_dir,
                    args.out / "bench",
                )
                before = sweep.counters(http_get(f"http://127.0.0.1:{port}/metrics"))
                start = time.monotonic()
                try:
                    vllm_bench_serve(argv)
                    error = None
                except Exception as failure:  # a failed level is recorded and the sweep goes on
                    error = repr(failure)
                after = sweep.counters(http_get(f"http://127.0.0.1:{port}/metrics"))
                record = {"workload": name, "engine": engine, "concurrency": concurrency, "error": error}
                records.append({**record, "seconds": time.monotonic() - start, **sweep.level_counts(before, after)})
                log(f"sweep {name} {engine} c{concurrency}: {records[-1]}")
                (args.out / "sweep.json").write_text(json.dumps(records, indent=2))
    return records


def log_facts(text: str) -> list[str]:
    return [line for line in text.splitlines() if any(fact in line for fact in LOG_FACTS)]


def plan(args: argparse.Namespace) -> dict[str, Any]:
    """Everything the run will start and send, resolved on this host: written first, printed by --dry-run."""
    production = json.loads(args.serve_config.read_text())
    host_mib = args.host_gpu_mib or gpu_memory_mib()
    engine, overrides = aggregated_engine(production, args.model_dir, (args.gpu_memory_of, host_mib), detect_host())
    env = serve_env(engine, {})
    return {
        "engine": engine,
        "overrides": [override.describe() for override in overrides],
        "serve": {name: serve_command(engine, port, name == "on") for name, port in PORTS.items()},
        "serve_env": env,
        "teacher": asdict(args.teacher),
        "workload": asdict(args.workload),
        "levels": args.levels,
        "requests_per_level": args.requests,
        "bench_example": [
            "vllm",
            "bench",
            "serve",
            *sweep.bench_argv(
                args.workload,
                "prefix",
                "on",
                args.levels[0],
                args.requests,
                f"http://127.0.0.1:{PORTS['on']}",
                engine["model_loading_config"]["model_id"],
                args.model_dir,
                args.out / "bench",
            ),
        ],
    }


def record_plan(args: argparse.Namespace, resolved: dict[str, Any]) -> bool:
    """A dry run prints the plan and runs nothing (False); a run writes it beside its results first (True)."""
    if args.dry_run:
        print(json.dumps(resolved, indent=2))
        return False
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "plan.json").write_text(json.dumps(resolved, indent=2))
    return True


def run(args: argparse.Namespace) -> int:
    deadline = time.monotonic() + args.deadline_s
    resolved = plan(args)
    if not record_plan(args, resolved):
        return 0
    model_id = resolved["engine"]["model_loading_config"]["model_id"]
    engines = {}
    try:
        for name, port in PORTS.items():
            env = serve_env(resolved["engine"], os.environ)
            engines[name] = start_engine(resolved["serve"][name], env, args.out / f"engine-{name}.log")
            log(f"engine {name} ready in {wait_ready(engines[name], port, args.start_timeout):.0f} s")
        if "teacher" in args.parts:
            try:
                verdicts = run_teacher(model_id, args.teacher, args).get("within_uncached_spread")
                log(f"teacher: within the uncached spread: {json.dumps(verdicts)}")
            except Exception as failure:  # the sweep still runs: device time is not spent twice
                log(f"teacher failed: {failure!r}")
        if "sweep" in args.parts:
            run_sweep(args, model_id, deadline)
    finally:
        for process in engines.values():
            stop_engine(process)
        facts = {name: log_facts((args.out / f"engine-{name}.log").read_text(errors="replace")) for name in engines}
        (args.out / "engines.json").write_text(json.dumps(facts, indent=2))
    return 0
