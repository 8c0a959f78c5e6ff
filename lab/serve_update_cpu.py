"""What Ray Serve 2.58 does to a running app whose serve config changes, measured on CPU with the real Ray.

    ./.venv-test/bin/python -m lab.serve_update_cpu --out lab/records/updates/DATE/serve-update-cpu.json

(ray[serve]==2.58.0 from requirements-test.txt; no GPU, no vLLM, no KubeRay.) It starts a local Ray with its
dashboard (`ray.init`, stopped with `ray.shutdown` at the end: only what it started), deploys the stand-in PD app
(lab/serve_update_app.py) through the dashboard's `PUT /api/serve/applications/`, the call KubeRay 1.4.0 makes for
a `serveConfigV2`-only change, and replays three changes under traffic, each a whole config PUT: good (both sides'
`arg` changes, as an engine-kwargs change), broken (prefill's constructor raises), rollback (the first config again).
A client GETs the app through Serve's HTTP proxy every `--interval` s. Each step ends at the stack's verdict
(infra.serving.rollout_status.serve_verdict: ready or failed) or `--step-timeout`, then `--settle` s more of traffic.
The same three steps run for each variant: replicas a side and ingress replicas (docs/serve-updates.md).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import re
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import ray

from infra.serving.rollout_status import FAILED, READY, WAITING
from lab.smoke.deploy import http_request
from lab.smoke.update import judge
from lab.traffic import Answer, Traffic, get_json, longest_gap, longest_outage
from tools.project import PROJECT_DIR

APP = "pd-standin"
TIERS = ("ingress", "decode", "prefill")
IMPORT_PATH = "lab.serve_update_app:build_app"
POLL_INTERVAL_S = 0.5
# The controller's log lines that say what the rollout did, replica by replica.
ROLLOUT_LOG = re.compile(
    r"Deploying new version|Adding \d+ replica|Stopping|started successfully|failed to start|Retrying|"
    r"force-killing|Removing \d+ replica|Importing and building|Received new config"
)


@dataclass(frozen=True)
class Variant:
    name: str
    replicas: int  # a side (prefill and decode)
    ingress_replicas: int


VARIANTS = {
    "1-a-side": Variant("1-a-side", 1, 1),
    "2-a-side": Variant("2-a-side", 2, 1),
    "2-a-side-2-ingress": Variant("2-a-side-2-ingress", 2, 2),
}


@dataclass(frozen=True)
class Settings:
    load_s: float  # each side's constructor: the engine load
    ingress_load_s: float
    broken_load_s: float  # how long the broken side's constructor runs before it raises
    interval_s: float
    timeout_s: float
    settle_s: float
    step_timeout_s: float


@dataclass(frozen=True)
class Step:
    name: str
    change: str
    config: dict[str, Any]
    expected: str  # READY or FAILED


@dataclass(frozen=True)
class Endpoints:
    dashboard: str
    serve: str
    serve_port: int
    log_dir: Path


def app_config(endpoints: Endpoints, args: dict[str, Any]) -> dict[str, Any]:
    application = {"name": APP, "import_path": IMPORT_PATH, "route_prefix": "/", "args": args}
    return {"http_options": {"host": "127.0.0.1", "port": endpoints.serve_port}, "applications": [application]}


def app_args(variant: Variant, settings: Settings, label: str, args: dict[str, str], broken: bool = False) -> Any:
    """The app's args: each side's `arg` from `args`; with `broken`, prefill's constructor raises."""
    sides = {side: {"arg": arg, "load_s": settings.load_s} for side, arg in args.items()}
    if broken:
        sides["prefill"] |= {"load_s": settings.broken_load_s, "fail": True}
    return {
        "replicas": variant.replicas,
        "ingress_replicas": variant.ingress_replicas,
        "label": label,
        "ingress_load_s": settings.ingress_load_s,
        **sides,
    }


def update_steps(variant: Variant, settings: Settings, endpoints: Endpoints) -> tuple[dict[str, Any], list[Step]]:
    """The first config, then a good change, a broken one on top of it, and the rollback to the first."""
    first = app_config(endpoints, app_args(variant, settings, "v1", {"prefill": "v1", "decode": "v1"}))
    good = app_config(endpoints, app_args(variant, settings, "v2", {"prefill": "v2", "decode": "v2"}))
    broken_args = app_args(variant, settings, "v3", {"prefill": "v3", "decode": "v2"}, broken=True)
    return first, [
        Step("good", "both sides' arg v1 -> v2 (an engine-kwargs change in the app's args)", good, READY),
        Step(
            "broken",
            "prefill's arg -> v3, whose constructor raises; decode unchanged",
            app_config(endpoints, broken_args),
            FAILED,
        ),
        Step("rollback", "the first config again", first, READY),
    ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def local_ray(temp_dir: Path) -> Iterator[Endpoints]:
    """Ray on 2 CPUs with its dashboard, on free ports (other Rays may run on this machine); shut down after."""
    dashboard_port, serve_port = free_port(), free_port()
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_DIR), os.environ.get("PYTHONPATH")]))
    ray.init(
        num_cpus=2,
        include_dashboard=True,
        dashboard_host="127.0.0.1",
        dashboard_port=dashboard_port,
        _temp_dir=str(temp_dir),
    )
    try:
        dashboard = f"http://127.0.0.1:{dashboard_port}"
        deadline = time.monotonic() + 120
        while http_request("GET", f"{dashboard}/api/serve/applications/")[0] != 200:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the dashboard at {dashboard} did not answer in 120 s")
            time.sleep(1)
        yield Endpoints(dashboard, f"http://127.0.0.1:{serve_port}/", serve_port, temp_dir / "session_latest" / "logs")
    finally:
        ray.shutdown()


def get_once(url: str, timeout_s: float) -> tuple[bool, str, str]:
    """(ok, which version each tier answered with, e.g. "ingress=v1 decode=v1 prefill=v1", the error)."""
    return get_json(url, timeout_s, lambda body: " ".join(f"{tier}={body[tier]}" for tier in TIERS))


def replica_states(details: dict[str, Any] | None, since_wall: float) -> str:
    """Each deployment's status and its replicas by state, `old` (started before the PUT) or `new`."""
    app = ((details or {}).get("applications") or {}).get(APP) or {}
    parts = []
    for name, deployment in sorted((app.get("deployments") or {}).items()):
        counts: dict[str, int] = {}
        for replica in deployment.get("replicas", []):
            age = "new" if replica.get("start_time_s", 0) >= since_wall else "old"
            key = f"{age} {replica.get('state')}"
            counts[key] = counts.get(key, 0) + 1
        replicas = ", ".join(f"{count} {key}" for key, count in sorted(counts.items()))
        parts.append(f"{name} {deployment.get('status')} [{replicas}]")
    return "; ".join(parts)


@dataclass
class StepRecord:
    name: str
    change: str
    expected: str
    put_status: int = 0
    put_wall: float = 0.0  # time.time() at the PUT, to read the controller's log against
    verdict: str = WAITING
    verdict_at_s: float | None = None
    verdict_message: str = ""
    app_status: str = ""
    end_s: float = 0.0
    timeline: list[dict[str, Any]] = field(default_factory=list)  # every poll whose states changed
    answers: list[Answer] = field(default_factory=list)


def poll_until_final(record: StepRecord, step: Step, endpoints: Endpoints, start: float, timeout_s: float) -> None:
    """Poll the dashboard until the stack's verdict is final (ready/failed) or `timeout_s` passed."""
    applications = step.config["applications"]
    while True:
        t_s = round(time.monotonic() - start, 1)
        code, text = http_request("GET", f"{endpoints.dashboard}/api/serve/applications/")
        details = json.loads(text) if code == 200 else None
        verdict, app_status = judge(details, applications)
        states = replica_states(details, record.put_wall)
        if not record.timeline or (record.timeline[-1]["verdict"], record.timeline[-1]["states"]) != (
            verdict.state,
            states,
        ):
            record.timeline.append({"t_s": t_s, "verdict": verdict.state, "app": app_status, "states": states})
            print(f"    [{t_s:6.1f}s] {app_status or '-'} {verdict.state}: {states}", flush=True)
        record.verdict, record.app_status, record.verdict_message = verdict.state, app_status, verdict.message[-400:]
        if verdict.state != WAITING or t_s >= timeout_s:
            record.verdict_at_s = t_s if verdict.state != WAITING else None
            return
        time.sleep(POLL_INTERVAL_S)


def run_step(step: Step, endpoints: Endpoints, settings: Settings, traffic_on: bool = True) -> StepRecord:
    """PUT the step's config as KubeRay does, under traffic; poll to the verdict, then settle."""
    record = StepRecord(step.name, step.change, step.expected)
    start = time.monotonic()
    interval = settings.interval_s if traffic_on else 3600.0
    call = functools.partial(get_once, endpoints.serve, settings.timeout_s)
    with Traffic(call, start, interval, name="serve-update-traffic") as traffic:
        record.put_wall = time.time()
        record.put_status, text = http_request(
            "PUT", f"{endpoints.dashboard}/api/serve/applications/", step.config, timeout=120
        )
        if record.put_status == 200:
            poll_until_final(record, step, endpoints, start, settings.step_timeout_s)
        else:
            print(f"    PUT refused ({record.put_status}): {text[:300]}", flush=True)
        time.sleep(settings.settle_s if traffic_on else 0)
        record.end_s = round(time.monotonic() - start, 1)
    record.answers = list(traffic.answers) if traffic_on else []
    return record


def served_versions(answers: list[Answer]) -> list[dict[str, Any]]:
    """Each combination of versions that answered: how often, first and last send time."""
    seen: dict[str, dict[str, Any]] = {}
    for answer in (a for a in answers if a.ok):
        entry = seen.setdefault(answer.served, {"served": answer.served, "count": 0, "first_s": answer.t_s})
        entry["count"] += 1
        entry["last_s"] = answer.t_s
    return list(seen.values())


def summary(record: StepRecord) -> dict[str, Any]:
    outage, still_failing = longest_outage(record.answers, record.end_s)
    final_at = record.verdict_at_s
    failures = [a for a in record.answers if not a.ok]
    return {
        "step": record.name,
        "change": record.change,
        "put_status": record.put_status,
        "put_wall": round(record.put_wall, 3),
        "expected_verdict": record.expected,
        "verdict": record.verdict,
        "final_app_status": record.app_status,
        "seconds_to_final_state": final_at,
        "verdict_message": record.verdict_message,
        "requests_ok": sum(a.ok for a in record.answers),
        "requests_failed": len(failures),
        "requests_failed_after_final": sum(final_at is not None and a.t_s >= final_at for a in failures),
        "longest_outage_s": round(outage, 1),
        "still_failing_at_end": still_failing,
        "longest_gap_s": round(longest_gap(record.answers, record.end_s), 2),
        "step_end_s": record.end_s,
        "errors": sorted({a.error.split(":")[0] + ": " + a.error[-120:] for a in failures})[:5],
        "served_versions": served_versions(record.answers),
        "timeline": record.timeline,
        "answers": [asdict(a) for a in record.answers],
    }


def controller_log(log_dir: Path, offset: int) -> tuple[list[str], int]:
    """The controller's rollout lines written since `offset` (bytes), and the new offset."""
    files = sorted((log_dir / "serve").glob("controller_[0-9]*.log"))
    if not files:
        return [], offset
    data = files[-1].read_bytes()
    lines = data[offset:].decode(errors="replace").splitlines()
    return [line[:300] for line in lines if ROLLOUT_LOG.search(line)], len(data)


def with_step_times(lines: list[str], steps: list[dict[str, Any]]) -> list[str]:
    """Each log line prefixed with its step and seconds after that step's PUT."""
    out = []
    for line in lines:
        match = re.match(r"\w+ (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})", line)
        wall = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp() if match else None
        # The log's stamps are to the millisecond; a line belongs to the last step PUT before it.
        step = next((s for s in reversed(steps) if wall is not None and wall >= s["put_wall"] - 0.001), None)
        prefix = f"{step['step']} +{wall - step['put_wall']:.1f}s" if step and wall else "-"
        out.append(f"[{prefix}] {line.split(' -- ', 1)[-1]}")
    return out


def clear_apps(endpoints: Endpoints) -> None:
    """Delete the app and wait until it is gone. A PUT deletes the apps its config leaves out and keeps Serve running
    (ray/serve/_private/application_state.py ApplicationStateManager.apply_app_configs); the dashboard's DELETE would
    shut Serve down (ray/dashboard/modules/serve/serve_head.py delete_serve_applications)."""
    config = {**app_config(endpoints, {}), "applications": []}
    http_request("PUT", f"{endpoints.dashboard}/api/serve/applications/", config, timeout=120)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        code, text = http_request("GET", f"{endpoints.dashboard}/api/serve/applications/")
        if code == 200 and APP not in (json.loads(text).get("applications") or {}):
            return
        time.sleep(1)
    raise RuntimeError(f"{APP} was not deleted in 120 s")


def run_variant(variant: Variant, settings: Settings, endpoints: Endpoints) -> dict[str, Any]:
    print(f"== {variant.name}: {variant.replicas} replica(s) a side, {variant.ingress_replicas} ingress", flush=True)
    _, offset = controller_log(endpoints.log_dir, 0)
    first, steps = update_steps(variant, settings, endpoints)
    print("  first deploy", flush=True)
    initial = run_step(Step("first", "the first config", first, READY), endpoints, settings, traffic_on=False)
    if initial.verdict != READY:
        raise RuntimeError(f"the first config did not run: {initial.verdict_message}")
    summaries = [summary(initial) | {"answers": []}]
    for step in steps:
        print(f"  {step.name}: {step.change}", flush=True)
        summaries.append(summary(run_step(step, endpoints, settings)))
    lines, _ = controller_log(endpoints.log_dir, offset)
    clear_apps(endpoints)
    return {**asdict(variant), "steps": summaries, "controller_log": with_step_times(lines, summaries)}


def table(variants: list[dict[str, Any]]) -> str:
    """The markdown table docs/serve-updates.md shows."""
    rows = [
        "| replicas a side / ingress | step | final app status | time to it | requests ok / failed | "
        "failed after it | longest outage | longest gap without an answer |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for variant in variants:
        for step in variant["steps"][1:]:
            at = step["seconds_to_final_state"]
            rows.append(
                f"| {variant['replicas']} / {variant['ingress_replicas']} | {step['step']} | "
                f"`{step['final_app_status']}` | {'-' if at is None else f'{at} s'} | "
                f"{step['requests_ok']} / {step['requests_failed']} | {step['requests_failed_after_final']} | "
                f"{step['longest_outage_s']} s{' (still failing)' if step['still_failing_at_end'] else ''} | "
                f"{step['longest_gap_s']} s |"
            )
    return "\n".join(rows)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the JSON record")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--load-s", type=float, default=20.0, help="each side's constructor time (engine load)")
    parser.add_argument("--ingress-load-s", type=float, default=5.0, help="the ingress constructor's time")
    parser.add_argument("--broken-load-s", type=float, default=5.0, help="the broken constructor's time to raise")
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between requests")
    parser.add_argument("--timeout", type=float, default=3.0, help="each request's timeout")
    parser.add_argument("--settle", type=float, default=5.0, help="traffic after the verdict")
    parser.add_argument("--step-timeout", type=float, default=150.0, help="the longest a step waits for a verdict")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = Settings(
        args.load_s,
        args.ingress_load_s,
        args.broken_load_s,
        args.interval,
        args.timeout,
        args.settle,
        args.step_timeout,
    )
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="serveupd", dir="/tmp") as temp, local_ray(Path(temp)) as endpoints:
        variants = [run_variant(VARIANTS[name], settings, endpoints) for name in args.variants]
    record = {
        "command": ["python", "-m", "lab.serve_update_cpu", *(argv if argv is not None else sys.argv[1:])],
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "versions": {"ray": ray.__version__, "ray_commit": ray.__commit__},
        "settings": asdict(settings),
        "wall_s": round(time.monotonic() - started, 1),
        "variants": variants,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(table(variants))
    expected = all(step["verdict"] == step["expected_verdict"] for v in variants for step in v["steps"])
    return 0 if expected else 1


if __name__ == "__main__":
    sys.exit(main())
