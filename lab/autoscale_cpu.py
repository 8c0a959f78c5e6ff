"""The latency-objective policy scaling real Ray Serve 2.58 deployments on CPU: stand-ins whose latency grows with load.

    ./.venv-test/bin/python -m lab.autoscale_cpu --out lab/records/2026-12-07-autoscale-cpu/run.json

(ray[serve]==2.58.0 from requirements-test.txt; no GPU, no vLLM.) A local Ray (tests/conftest.py `start_local_ray`,
stopped with `ray.shutdown` at the end: only what it started) runs two stand-ins shaped like the PD app: `Decode`
takes each request, asks `Prefill` for its first token, then streams TOKENS tokens. Each sleeps as long as its load
makes it: a prefill takes PREFILL_BASE_S plus PREFILL_PER_REQUEST_S for every request the replica holds, a decode
token DECODE_BASE_S plus DECODE_PER_REQUEST_S for every request it holds. Each replica reports the p99 of its last
requests' latency through `record_autoscaling_stats` (`ttft_s`, `itl_s`: the metrics the stack's policy reads, ray/
serve/_private/replica.py `_fetch_custom_autoscaling_metrics`), so the policy acts on measured latency and queue.
Each side's `autoscaling_config` is the stack's own (infra/serving/serve_config.py `autoscaling_config`, policy
serve_ext/ray_llm_eks_autoscale), with the stand-in's latency curve and the rig's short delays in place of the
engine's. A driver holds LOAD_CONCURRENCY requests in flight for LOAD_S seconds, then none for IDLE_S, sampling each
side's running replicas every SAMPLE_S.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from infra.serving.code_package import SERVE_EXT
from infra.serving.serve_config import autoscaling_config
from infra.settings.autoscaling import ScalingPace
from infra.settings.stack_config import ServeSide
from tools.project import PROJECT_DIR

APP = "autoscale-standin"
TOKENS = 8
PREFILL_BASE_S, PREFILL_PER_REQUEST_S = 0.1, 0.1
DECODE_BASE_S, DECODE_PER_REQUEST_S = 0.01, 0.005
OBJECTIVES_S = {"prefill": 0.4, "decode": 0.03}  # p99 TTFT of a prefill, p99 time per decode token
RECENT = 50  # requests a replica's p99 is taken over
MAX_REPLICAS = 3
# The rig's own pace: Serve's delays and look-back shortened from the stack's 30 s / 600 s so a run takes minutes;
# replicas and handles push their metrics every second (ray/serve/_private/constants.py, 10 s by default).
PACE = ScalingPace(upscale_delay_s=2, downscale_delay_s=15, percentile="p99")
# Serve 2.58 warns (FutureWarning) of a look-back shorter than the deprecated metrics_interval_s's 10 s; the metrics
# come every second here (PUSH_INTERVAL_ENV), which is what the look-back must exceed.
LOOK_BACK_S = 3
PUSH_INTERVAL_ENV = {
    "RAY_SERVE_REPLICA_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "1",
    "RAY_SERVE_HANDLE_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "1",
}
LOAD_CONCURRENCY, LOAD_S, IDLE_S, SAMPLE_S = 12, 60, 75, 2.0
DECISION = re.compile(r"custom autoscaling policy|Upscaling|Downscaling")


def standin_latency(side: str, holding: int) -> float:
    """Seconds a prefill (or one decode token) takes on a replica holding `holding` requests, this one included."""
    if side == "prefill":
        return PREFILL_BASE_S + PREFILL_PER_REQUEST_S * holding
    return DECODE_BASE_S + DECODE_PER_REQUEST_S * holding


def standin_curve(side: str) -> list[list[float]]:
    """The stand-in's latency by requests held, as the policy reads it (the engines': infra/settings/autoscaling.py)."""
    return [[float(n), standin_latency(side, n)] for n in (1, 2, 4, 8, 16)]


def p99(samples: Sequence[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def side_options(side: str) -> dict[str, Any]:
    """The stack's autoscaling_config for the side, the stand-in's curve and objective in its policy."""
    serve_side = ServeSide(
        replicas=1,
        max_num_seqs=None,
        max_num_batched_tokens=None,
        max_replicas=MAX_REPLICAS,
        target_ongoing_requests=2,
        latency_objective_ms=round(OBJECTIVES_S[side] * 1000),
    )
    config = autoscaling_config(serve_side, PACE, side)
    config["policy"]["policy_kwargs"].update(objective_s=OBJECTIVES_S[side], latency_curve=standin_curve(side))
    config["look_back_period_s"] = LOOK_BACK_S
    return {"autoscaling_config": config, "max_ongoing_requests": 64, "ray_actor_options": {"num_cpus": 0}}


def build_app() -> Any:
    from ray import serve

    class Measured:
        """A replica's load now and the latency of its requests of the last LOOK_BACK_S seconds."""

        def __init__(self, metric: str) -> None:
            self.metric, self.holding = metric, 0
            self.recent: deque[tuple[float, float]] = deque(maxlen=RECENT)

        def measured(self, seconds: float) -> None:
            self.recent.append((time.monotonic(), seconds))

        def record_autoscaling_stats(self) -> dict[str, float]:
            since = time.monotonic() - LOOK_BACK_S
            latest = [seconds for at, seconds in self.recent if at >= since]
            return {self.metric: p99(latest)} if latest else {}

    class Prefill(Measured):
        def __init__(self) -> None:
            super().__init__("ttft_s")

        async def __call__(self) -> str:
            self.holding += 1
            try:
                seconds = standin_latency("prefill", self.holding)
                await asyncio.sleep(seconds)
                self.measured(seconds)
                return "first"
            finally:
                self.holding -= 1

    class Decode(Measured):
        def __init__(self, prefill: Any) -> None:
            super().__init__("itl_s")
            self.prefill = prefill

        async def __call__(self) -> int:
            self.holding += 1
            try:
                await self.prefill.remote()
                for _ in range(TOKENS):
                    seconds = standin_latency("decode", self.holding)
                    await asyncio.sleep(seconds)
                    self.measured(seconds)
                return TOKENS
            finally:
                self.holding -= 1

    prefill = serve.deployment(name="Prefill", **side_options("prefill"))(Prefill).bind()
    return serve.deployment(name="Decode", **side_options("decode"))(Decode).bind(prefill)


@dataclass
class Sample:
    t: float
    phase: str
    replicas: dict[str, int]


@dataclass
class Run:
    started: str
    host: dict[str, str]
    settings: dict[str, Any]
    samples: list[Sample] = field(default_factory=list)
    completed: int = 0
    decisions: list[str] = field(default_factory=list)  # the controller's log lines of the policy and its decisions


def running_replicas() -> dict[str, int]:
    from ray import serve
    from ray.serve._private.common import ReplicaState

    deployments = serve.status().applications[APP].deployments
    return {name.lower(): status.replica_states.get(ReplicaState.RUNNING, 0) for name, status in deployments.items()}


async def hold_load(handle: Any, until: float) -> int:
    """One client: a request after another until `until`; how many finished."""
    done = 0
    while time.monotonic() < until:
        await handle.remote()
        done += 1
    return done


async def sample_until(run: Run, phase: str, start: float, until: float) -> None:
    while time.monotonic() < until:
        run.samples.append(Sample(round(time.monotonic() - start, 1), phase, running_replicas()))
        await asyncio.sleep(SAMPLE_S)


async def drive(handle: Any, run: Run) -> None:
    """The load phase, then the idle phase, sampling the replicas throughout."""
    start = time.monotonic()
    load_end = start + LOAD_S
    sampler = asyncio.create_task(sample_until(run, "load", start, load_end))
    run.completed = sum(await asyncio.gather(*(hold_load(handle, load_end) for _ in range(LOAD_CONCURRENCY))))
    await sampler
    await sample_until(run, "idle", start, load_end + IDLE_S)


def controller_decisions(workdir: Path) -> list[str]:
    """What Serve's controller logged of the policy it loaded and each scaling it made (its log in the session)."""
    lines = []
    for log in sorted(workdir.glob("session_latest/logs/serve/controller_*.log")):
        lines += [line.split(" -- ", 1)[-1] for line in log.read_text().splitlines() if DECISION.search(line)]
    return lines


def start_ray(workdir: Path) -> None:
    """A local Ray whose workers import the project (the stand-ins), pushing their metrics every second. The policy's
    package is not on their path: Serve pickles the policy by value where the config is built (ray/serve/config.py
    AutoscalingPolicy.serialize_policy), the driver here, the app's build task in the cluster."""
    from tests.conftest import start_local_ray

    os.environ.update(PUSH_INTERVAL_ENV)
    paths = [str(PROJECT_DIR), os.environ.get("PYTHONPATH", "")]
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    start_local_ray(workdir, num_cpus=2)


def run_rig() -> Run:
    import sys

    import ray
    from ray import serve

    sys.path.insert(0, str(SERVE_EXT))  # Serve imports the policy by its path in the driver, then pickles it
    run = Run(
        started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        host={"python": platform.python_version(), "ray": ray.__version__, "cpus": str(os.cpu_count())},
        settings={
            "objectives_s": OBJECTIVES_S,
            "pace": asdict(PACE),
            "look_back_s": LOOK_BACK_S,
            "load": {"concurrency": LOAD_CONCURRENCY, "load_s": LOAD_S, "idle_s": IDLE_S},
            "curves": {side: standin_curve(side) for side in OBJECTIVES_S},
        },
    )
    with tempfile.TemporaryDirectory(prefix="autoscale-cpu-") as workdir:
        start_ray(Path(workdir))
        try:
            handle = serve.run(build_app(), name=APP, route_prefix=None)
            asyncio.run(drive(handle, run))
            run.decisions = controller_decisions(Path(workdir))
        finally:
            serve.shutdown()
            ray.shutdown()
    return run


def summary(run: Run) -> dict[str, Any]:
    """Each side's replicas: at the start, the most under load, and at the end of the idle phase."""
    sides = run.samples[0].replicas.keys()
    return {
        side: {
            "first": run.samples[0].replicas[side],
            "most_under_load": max(s.replicas[side] for s in run.samples if s.phase == "load"),
            "last": run.samples[-1].replicas[side],
        }
        for side in sides
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="where the run's JSON goes")
    out = parser.parse_args(argv).out
    run = run_rig()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**asdict(run), "summary": summary(run)}, indent=1) + "\n")
    print(json.dumps(summary(run)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
