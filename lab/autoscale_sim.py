"""A day of load through the latency-objective policy, against fixed replicas sized for the peak.

./.venv-test/bin/python -m lab.autoscale_sim           # prints the table
./.venv-test/bin/python -m lab.autoscale_sim --write   # rewrites lab/records/<date>-autoscale-sim/ (a test compares)

The model, every figure said with how it was obtained (FIGURES, printed in the record):
- the load: a seeded synthetic day (no open trace ships in an installed package): a diurnal rate between TROUGH and
  PEAK requests/s, its low at 04:00 and high at 16:00, with BURSTS bursts that double it for 10 to 30 minutes; every
  request the sweeps' shape, 1,024 prompt tokens and 128 output tokens;
- each side a fluid queue in 1 s steps, the policy deciding every 10 s. A prefill replica holding x requests
  finishes x / TTFT(x) a second, a decode replica holding c finishes min(c, resident) / (127 x TPOT) a second, from
  the default model's curves on an L4 (infra/settings/autoscaling.py: the H200 sweep, scaled, estimated); requests
  past a decode replica's resident limit wait, and that wait adds to their first token;
- the policy: the stack's own class (serve_ext/ray_llm_eks_autoscale/policy.py) with the side's ongoing requests and
  no measured latency (the engines report none), then Serve's delays and bounds as ray/serve/autoscaling_policy.py
  `_apply_delay_logic` applies them;
- a replica Serve adds starts on a GPU node left warm in 215 s (measured) or on a new one in 528 s
  (docs/model-cache.md); a node left without a replica goes after KubeRay's idle 300 s (infra/serving/rayservice.py)
  and the Cluster Autoscaler's 600 s (cited, docs/model-cache.md); one g6.8xlarge (one L4) per replica.
SLO attainment: the share of the day's requests that arrived in a second whose p99 TTFT and p99 inter-token latency
met both objectives.
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from infra.settings.autoscaling import (
    L4_DECODE_SLOWDOWN,
    L4_PREFILL_SLOWDOWN,
    NEW_NODE_ENGINE_START_S,
    SWEEP_CONCURRENCY,
    SWEEP_MEAN_E2E_MS,
    SWEEP_MEAN_TTFT_MS,
    WARM_ENGINE_START_S,
    latency_curve,
    policy_kwargs,
)
from infra.settings.cost import EKS_CLUSTER_HOURLY, INSTANCE_HOURLY, NAT_GATEWAY_HOURLY, VALKEY_NODE_HOURLY
from serve_ext.ray_llm_eks_autoscale.policy import LatencyObjectivePolicy
from tools.project import PROJECT_DIR

RECORD = PROJECT_DIR / "lab" / "records" / "2026-12-07-autoscale-sim"
DAY_S, STEP_S, DECIDE_S, ROW_S = 24 * 3600, 1, 10, 300
SEED = 55
TROUGH, PEAK = 0.5, 4.0  # requests/s, the day's low and high before bursts (estimated load)
BURSTS = 6
OUTPUT_TOKENS = 128
DECODE_RESIDENT = 12  # requests one L4 decode engine holds at once (lab/records/gpu-end-to-end.md: "about 10 ... (12)")
KUBERAY_IDLE_S = 300  # infra/serving/rayservice.py RAY_AUTOSCALER idleTimeoutSeconds
NODE_UNNEEDED_S = 600  # the Cluster Autoscaler's scale-down-unneeded-time (docs/model-cache.md, cited)
OBJECTIVES_MS = {"prefill": 3000, "decode": 100}
PERCENTILE = "p99"
# The stack's defaults of serveUpscaleDelaySeconds and serveDownscaleDelaySeconds.
DELAYS = {"upscale": 30, "downscale": 600}
GPU_NODE = "g6.8xlarge"
MEASURED, CITED, ESTIMATED = "measured", "cited", "estimated"
FIGURES = (
    ("engine start on a warm GPU node", f"{WARM_ENGINE_START_S} s", MEASURED, "docs/model-cache.md"),
    (
        "engine start on a new GPU node",
        f"{NEW_NODE_ENGINE_START_S} s",
        f"{MEASURED} 342 s + {ESTIMATED} 187 s",
        "docs/model-cache.md",
    ),
    ("KubeRay idle before a worker pod goes", f"{KUBERAY_IDLE_S} s", CITED, "infra/serving/rayservice.py"),
    ("Cluster Autoscaler: unneeded node removed after", f"{NODE_UNNEEDED_S} s", CITED, "docs/model-cache.md"),
    ("engine curves (TTFT, TPOT vs load)", "H200 sweep", MEASURED, "lab/records/bench/2026-11-30/pd-c*.json"),
    ("prefill slowdown H200 to L4", f"x{L4_PREFILL_SLOWDOWN:g}", ESTIMATED, "lab/records/gpu-end-to-end.md"),
    ("decode slowdown H200 to L4", f"x{L4_DECODE_SLOWDOWN:g}", ESTIMATED, "lab/records/gpu-end-to-end.md"),
    ("requests resident per decode engine", f"{DECODE_RESIDENT}", MEASURED, "lab/records/gpu-end-to-end.md"),
    ("the day's load", f"{TROUGH}-{PEAK} req/s, {BURSTS} bursts x2", ESTIMATED, f"synthetic, seed {SEED}"),
    ("g6.8xlarge On-Demand", f"${INSTANCE_HOURLY[GPU_NODE]}/h", ESTIMATED, "infra/settings/cost.py"),
)


def load_rate(seed: int = SEED) -> list[float]:
    """Requests/s in each second of the day: the diurnal rate, doubled during the seeded bursts."""
    rng = random.Random(seed)
    bursts = [(rng.uniform(0, DAY_S), rng.uniform(600, 1800)) for _ in range(BURSTS)]
    rates = []
    for step in range(DAY_S // STEP_S):
        t = step * STEP_S
        diurnal = TROUGH + (PEAK - TROUGH) * (1 - math.cos(2 * math.pi * (t - 4 * 3600) / DAY_S)) / 2
        rates.append(diurnal * (2 if any(start <= t < start + length for start, length in bursts) else 1))
    return rates


def interpolate(points: Sequence[tuple[float, float]], x: float) -> float:
    """Linear between the points, along the end segments beyond them."""
    index = min(max(1, sum(1 for p in points if p[0] <= x)), len(points) - 1)
    (x0, y0), (x1, y1) = points[index - 1], points[index]
    return max(points[0][1], y0 + (x - x0) * (y1 - y0) / (x1 - x0))


def mean_ttft_curve() -> tuple[tuple[float, float], ...]:
    """(prefill ongoing per replica, mean TTFT s) on an L4: the percentile curve's loads with the sweep's means."""
    loads = [point[0] for point in latency_curve("prefill", "p50")]
    return tuple((x, ms * L4_PREFILL_SLOWDOWN / 1000) for x, ms in zip(loads, SWEEP_MEAN_TTFT_MS, strict=True))


def mean_tpot_curve() -> tuple[tuple[float, float], ...]:
    """(decode requests per replica, mean s per output token) on an L4: the sweep's mean decode time per token."""
    per_token = [
        (e2e - ttft) / (OUTPUT_TOKENS - 1) for e2e, ttft in zip(SWEEP_MEAN_E2E_MS, SWEEP_MEAN_TTFT_MS, strict=True)
    ]
    return tuple((float(c), ms * L4_DECODE_SLOWDOWN / 1000) for c, ms in zip(SWEEP_CONCURRENCY, per_token, strict=True))


@dataclass(frozen=True)
class Engine:
    """The default model on an L4, each side's rates and latencies by its load per replica."""

    ttft_mean: tuple[tuple[float, float], ...] = field(default_factory=mean_ttft_curve)
    tpot_mean: tuple[tuple[float, float], ...] = field(default_factory=mean_tpot_curve)
    ttft_slo: tuple[tuple[float, float], ...] = latency_curve("prefill", PERCENTILE)
    itl_slo: tuple[tuple[float, float], ...] = latency_curve("decode", PERCENTILE)

    def prefill_rate(self, per_replica: float) -> float:
        """Prefills a replica finishes a second, never less than at a lighter load (the queue keeps it busy)."""
        peak_load = max(self.ttft_mean, key=lambda p: p[0] / p[1])[0]
        load = min(per_replica, peak_load)
        return load / interpolate(self.ttft_mean, load) if load else 0.0

    def decode_rate(self, per_replica: float) -> float:
        resident = min(per_replica, DECODE_RESIDENT)
        return resident / (OUTPUT_TOKENS * interpolate(self.tpot_mean, resident)) if resident else 0.0

    def latencies(self, prefill_load: float, decode_load: float) -> tuple[float, float]:
        """(p99 TTFT, p99 inter-token latency) in seconds: a decode replica past its resident limit makes the rest
        wait for their first token as long as it takes to finish that many."""
        waiting = max(0.0, decode_load - DECODE_RESIDENT)
        wait = waiting / self.decode_rate(decode_load) if waiting else 0.0
        ttft = interpolate(self.ttft_slo, prefill_load) + wait
        return ttft, interpolate(self.itl_slo, min(decode_load, DECODE_RESIDENT))


@dataclass
class Side:
    """One side's replicas as Serve and the nodes see them: running, starting (when each is ready) and Serve's target,
    with the pending decision `_apply_delay_logic` times."""

    name: str
    minimum: int
    maximum: int
    target: int
    running: int
    starting: list[float] = field(default_factory=list)
    wanting: tuple[str, float] | None = None  # ("up" or "down", since when)

    def decide(self, desired: int, now: float) -> None:
        """Serve's delays: the target moves to the latest decision once the side has wanted to move that way for the
        whole delay (ray/serve/autoscaling_policy.py `_apply_delay_logic`)."""
        desired = min(max(desired, self.minimum), self.maximum)
        direction = "up" if desired > self.target else "down" if desired < self.target else None
        if direction is None:
            self.wanting = None
            return
        if self.wanting is None or self.wanting[0] != direction:
            self.wanting = (direction, now)
        if now - self.wanting[1] >= DELAYS["upscale" if direction == "up" else "downscale"]:
            self.target, self.wanting = desired, None


@dataclass
class Fleet:
    """The GPU nodes: one per replica running or starting, and those left warm until their release time."""

    warm: list[float] = field(default_factory=list)  # release times of nodes with no replica

    def start(self, side: Side, now: float) -> None:
        if self.warm:
            self.warm.pop()
            side.starting.append(now + WARM_ENGINE_START_S)
        else:
            side.starting.append(now + NEW_NODE_ENGINE_START_S)

    def stop(self, side: Side, now: float) -> None:
        if side.starting:
            side.starting.pop()
        else:
            side.running -= 1
        self.warm.append(now + KUBERAY_IDLE_S + NODE_UNNEEDED_S)

    def follow(self, side: Side, now: float) -> None:
        """Replicas started or stopped toward the target; those whose start has run become running."""
        side.running += sum(1 for ready in side.starting if ready <= now)
        side.starting = [ready for ready in side.starting if ready > now]
        while side.running + len(side.starting) < side.target:
            self.start(side, now)
        while side.running + len(side.starting) > side.target:
            self.stop(side, now)

    def nodes(self, sides: Sequence[Side], now: float) -> int:
        self.warm = [release for release in self.warm if release > now]
        return len(self.warm) + sum(side.running + len(side.starting) for side in sides)


@dataclass
class Day:
    """What one fleet did over the day."""

    label: str
    requests: float = 0.0
    in_slo: float = 0.0
    gpu_node_seconds: float = 0.0
    worst_ttft_s: float = 0.0
    worst_itl_s: float = 0.0
    most_replicas: dict[str, int] = field(default_factory=dict)
    timeline: list[tuple[int, float, int, int, int, float, float]] = field(default_factory=list)

    @property
    def slo_attainment(self) -> float:
        return self.in_slo / self.requests

    @property
    def gpu_hours(self) -> float:
        return self.gpu_node_seconds / 3600

    @property
    def gpu_cost(self) -> float:
        return self.gpu_hours * INSTANCE_HOURLY[GPU_NODE]


def policies() -> dict[str, LatencyObjectivePolicy]:
    return {name: LatencyObjectivePolicy(**policy_kwargs(name, ms, PERCENTILE)) for name, ms in OBJECTIVES_MS.items()}


class Context:
    """What the policy reads of Serve's AutoscalingContext (ray/serve/config.py): the side's ongoing requests and
    running replicas; the engines push no metrics."""

    def __init__(self, ongoing: float, replicas: int) -> None:
        self.total_num_requests, self.current_num_replicas = ongoing, replicas
        self.aggregated_metrics: dict[str, dict[str, float]] = {}


def serve_step(engine: Engine, queues: dict[str, float], sides: dict[str, Side], arrived: float) -> tuple[float, float]:
    """One step of both queues (each finishes at the rate its load gives, Euler's method), and the latencies at the
    load the step began with."""
    prefill_load = queues["prefill"] / sides["prefill"].running
    decode_load = queues["decode"] / sides["decode"].running
    prefilled = min(queues["prefill"] + arrived, sides["prefill"].running * engine.prefill_rate(prefill_load) * STEP_S)
    decoded = min(queues["decode"] + prefilled, sides["decode"].running * engine.decode_rate(decode_load) * STEP_S)
    queues["prefill"] += arrived - prefilled
    queues["decode"] += prefilled - decoded
    return engine.latencies(prefill_load, decode_load)


def simulate(label: str, sides: dict[str, Side], rates: Sequence[float], autoscale: bool) -> Day:
    engine, fleet, chosen = Engine(), Fleet(), policies()
    queues = {name: 0.0 for name in sides}
    day = Day(label, most_replicas={name: side.running for name, side in sides.items()})
    for step, rate in enumerate(rates):
        now = step * STEP_S
        for name, side in sides.items():
            if autoscale and now % DECIDE_S == 0:
                desired, _ = chosen[name](Context(queues[name], side.running))
                side.decide(math.ceil(desired), now)
            fleet.follow(side, now)
            day.most_replicas[name] = max(day.most_replicas[name], side.running)
        ttft, itl = serve_step(engine, queues, sides, rate * STEP_S)
        nodes = fleet.nodes(list(sides.values()), now)
        met = ttft <= OBJECTIVES_MS["prefill"] / 1000 and itl <= OBJECTIVES_MS["decode"] / 1000
        day.requests += rate * STEP_S
        day.in_slo += rate * STEP_S if met else 0.0
        day.gpu_node_seconds += nodes * STEP_S
        day.worst_ttft_s, day.worst_itl_s = max(day.worst_ttft_s, ttft), max(day.worst_itl_s, itl)
        if now % ROW_S == 0:
            row = (now // 60, rate, sides["prefill"].running, sides["decode"].running, nodes, ttft, itl)
            day.timeline.append(row)
    return day


def fixed_sides(prefill: int, decode: int) -> dict[str, Side]:
    return {
        "prefill": Side("prefill", prefill, prefill, prefill, prefill),
        "decode": Side("decode", decode, decode, decode, decode),
    }


def steady_load(rate_of: Callable[[float], float], per_replica_rate: float) -> float | None:
    """The load per replica at which a replica finishes `per_replica_rate` a second (the queue's steady state), or
    None where no load reaches it."""
    low, high = 0.0, 64.0
    if rate_of(high) < per_replica_rate:
        return None
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if rate_of(middle) < per_replica_rate else (low, middle)
    return high


def peak_sizing(peak: float) -> tuple[int, int]:
    """The fewest replicas of each side whose steady state at the day's highest rate holds its objective."""
    engine = Engine()

    def prefill_meets(n: int) -> bool:
        load = steady_load(engine.prefill_rate, peak / n)
        return load is not None and engine.latencies(load, 0)[0] <= OBJECTIVES_MS["prefill"] / 1000

    def decode_meets(n: int) -> bool:
        load = steady_load(engine.decode_rate, peak / n)
        return load is not None and engine.latencies(0, load)[1] <= OBJECTIVES_MS["decode"] / 1000

    return next(n for n in range(1, 65) if prefill_meets(n)), next(n for n in range(1, 65) if decode_meets(n))


def scaled_sides(floor: tuple[int, int], ceiling: tuple[int, int]) -> dict[str, Side]:
    return {
        name: Side(name, low, high, low, low)
        for name, low, high in zip(("prefill", "decode"), floor, ceiling, strict=True)
    }


@dataclass(frozen=True)
class Comparison:
    days: tuple[Day, ...]  # the fixed fleet first
    sizing: tuple[int, int]
    peak_rate: float


def compare(seed: int = SEED) -> Comparison:
    """The same day through replicas fixed for its peak, and through the policy between one replica a side (or half
    the peak's) and the peak's."""
    rates = load_rate(seed)
    sizing = peak_sizing(max(rates))
    half = (math.ceil(sizing[0] / 2), math.ceil(sizing[1] / 2))
    return Comparison(
        (
            simulate(
                f"fixed for the peak, {sizing[0]} prefill + {sizing[1]} decode", fixed_sides(*sizing), rates, False
            ),
            simulate(f"policy, 1-{sizing[0]} prefill, 1-{sizing[1]} decode", scaled_sides((1, 1), sizing), rates, True),
            simulate(
                f"policy, {half[0]}-{sizing[0]} prefill, {half[1]}-{sizing[1]} decode",
                scaled_sides(half, sizing),
                rates,
                True,
            ),
        ),
        sizing,
        max(rates),
    )


def fixed_parts_hourly() -> float:
    """The stack's parts besides the GPU nodes (infra/settings/cost.py): one m7i.xlarge, EKS, one NAT gateway, the
    head's two-node store."""
    store = 2 * VALKEY_NODE_HOURLY["cache.t4g.micro"]
    return INSTANCE_HOURLY["m7i.xlarge"] + EKS_CLUSTER_HOURLY + NAT_GATEWAY_HOURLY + store


def table(comparison: Comparison) -> str:
    fixed_cost = fixed_parts_hourly() * 24
    lines = [
        "| fleet | SLO attainment | worst p99 TTFT s | worst p99 ITL ms | GPU-hours | GPU cost $ | day's cost $ |",
        "|---|---|---|---|---|---|---|",
    ]
    for day in comparison.days:
        lines.append(
            f"| {day.label} | {day.slo_attainment:.1%} | {day.worst_ttft_s:.1f} | {day.worst_itl_s * 1000:.0f} | "
            f"{day.gpu_hours:.1f} | {day.gpu_cost:.2f} | {day.gpu_cost + fixed_cost:.2f} |"
        )
    return "\n".join(lines)


def timeline_csv(day: Day) -> str:
    rows = ["minute,requests_per_s,prefill_replicas,decode_replicas,gpu_nodes,p99_ttft_s,p99_itl_s"]
    rows += [f"{m},{r:.3f},{p},{d},{n},{t:.3f},{i:.4f}" for m, r, p, d, n, t, i in day.timeline]
    return "\n".join(rows) + "\n"


def figures_table() -> str:
    rows = ["| figure | value | how obtained | source |", "|---|---|---|---|"]
    rows += [f"| {name} | {value} | {kind} | {source} |" for name, value, kind, source in FIGURES]
    return "\n".join(rows)


def write_record(comparison: Comparison, record: Path = RECORD) -> None:
    record.mkdir(parents=True, exist_ok=True)
    readme = (record / "README.md").read_text() if (record / "README.md").exists() else ""
    generated = f"{table(comparison)}\n\n{figures_table()}"
    start, end = "<!-- autoscale-sim:begin -->", "<!-- autoscale-sim:end -->"
    head, _, rest = readme.partition(start)
    tail = rest.partition(end)[2] if rest else ""
    (record / "README.md").write_text(f"{head}{start}\n{generated}\n{end}{tail}")
    for day, name in zip(comparison.days, ("fixed", "policy", "policy-floor"), strict=True):
        (record / f"timeline-{name}.csv").write_text(timeline_csv(day))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {RECORD.relative_to(PROJECT_DIR)}")
    comparison = compare()
    if parser.parse_args(argv).write:
        write_record(comparison)
    print(f"peak {comparison.peak_rate:g} requests/s; fixed sizing {comparison.sizing}")
    print(table(comparison))


if __name__ == "__main__":
    main()
