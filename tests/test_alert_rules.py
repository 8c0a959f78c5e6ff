"""Every rule of the stack's PrometheusRule through Prometheus's own rule tester, `promtool test rules`
(https://prometheus.io/docs/prometheus/latest/configuration/unit_testing_rules/): the rule file is the `spec` of the
PrometheusRule the dev stack renders, and each case below is one promtool test group of series sampled every minute.

The cases: a steady healthy stack (every alert silent), a first deploy that takes as long as the modelled cold start
(MODELLED_FIRST_DEPLOY_MINUTES: silent until `pulumi up` would have given up), the failure each alert is
for (it fires within its `for`, plus Prometheus' 5-minute lookback where a series goes away), and counters that first
appear mid-test. Debian's and Ubuntu's `prometheus` package ships promtool; without it these tests skip, except under
CI=true, where they fail.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.observability.alerts import KV_FAILURE_COUNTERS
from infra.stack import deploy_deadline_seconds
from tests.promql import promtool
from tools.offline import StackRun, load_stack_config

PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
# The modelled first deploy, in whole minutes from the serving namespace's creation, rounded up: the mirror Job done
# (no Ray pod before it) and the app RUNNING (docs/model-cache.md "The first `pulumi up`"; the lab's
# lab/tests/test_cold_start.py holds them to the model).
MODELLED_MIRROR_MINUTES = 6
MODELLED_FIRST_DEPLOY_MINUTES = 12
# Prometheus' default lookback: an instant query sees a series' last sample for 5 minutes
# (https://prometheus.io/docs/prometheus/latest/querying/basics/#staleness); absent() and `or vector(0)` see a
# series that stopped only after it.
LOOKBACK = 5
# The stack's `for` of each alert, in minutes (the rendered rule says the same: test_each_case_plays_the_rules_for).
FOR = {
    "ServeAppDeployFailed": 1,
    "ServeAppNotRunning": 15,
    "PrefillNoHealthyReplica": 10,
    "DecodeNoHealthyReplica": 10,
    "ModelNoHealthyReplica": 10,
    "KvTransferFailures": 0,
    "TtftP99OverObjective": 10,
    "GpuMemoryExhausted": 10,
    "RayHeadRestarted": 0,
    "RayHeadNotReady": 5,
}
ALERTS = tuple(FOR)
# A stack that has run for a day when Prometheus' history starts (kube-state-metrics' kube_namespace_created is
# the namespace's creation in seconds since the epoch; promtool's clock starts at 0).
A_DAY_AGO = -24 * 60 * 60
TTFT_BUCKETS = ("0.5", "1", "2.5", "5", "+Inf")
WORKERS = {"prefill": "worker-prefill", "decode": "worker-decode"}
ENGINE_TARGET = {"job": "monitoring/ray-workers", "instance": "10.0.1.5:8080"}
HEAD_POD = "ray-llm-abcde-head-x1x2y"
GPU = {"Hostname": "gpu-node-1", "gpu": "0"}


# --- what the stack renders, and its facts the cases play ---


@dataclass(frozen=True)
class Stack:
    application: str
    namespace: str
    model_id: str
    deadline_minutes: int  # deploy_deadline_seconds, in minutes
    rules: Mapping[str, dict[str, Any]]  # by alert name, as rendered
    groups: list[dict[str, Any]]  # the PrometheusRule's spec.groups: promtool's rule file


MIRROR_JOB = ("kubernetes:batch/v1:Job", "model-cache-mirror")


def stack_of(run: StackRun) -> Stack:
    """The dev stack as its alerts see it. It mirrors its Hub model into the stack's bucket (modelCache, on by
    default), so the deadline counts the mirror's timeout."""
    cfg = load_stack_config()
    assert [job.name for job in run.of_type(MIRROR_JOB[0])] == [MIRROR_JOB[1]]
    deadline = deploy_deadline_seconds(cfg, mirrored=True)
    assert deadline % 60 == 0
    (rule,) = run.of_type(PROMETHEUS_RULE)
    groups = rule.inputs["spec"]["groups"]
    rules = {r["alert"]: r for group in groups for r in group["rules"]}
    return Stack(cfg.ray_service_name, cfg.namespace, cfg.model_id, deadline // 60, rules, groups)


# --- series, sampled once a minute: a value per minute, None where the scrape has none ---

Values = list[float | None]


def notation(values: Values) -> str:
    """promtool's expanding notation: `vxN` is v N+1 times, `_xN` N missing samples."""
    runs: list[tuple[float | None, int]] = []
    for value in values:
        if runs and runs[-1][0] == value:
            runs[-1] = (value, runs[-1][1] + 1)
        else:
            runs.append((value, 1))
    parts = []
    for value, count in runs:
        if value is None:
            parts.append("_" if count == 1 else f"_x{count}")
        else:
            parts.append(f"{value:g}" if count == 1 else f"{value:g}x{count - 1}")
    return " ".join(parts)


def steps(total: int, *changes: tuple[int, float | None]) -> Values:
    """A value from each change's minute on (None before the first)."""
    values: Values = [None] * total
    for start, value in changes:
        values[start:] = [value] * (total - start)
    return values


def counting(total: int, start: int, per_minute: float, first: float = 0, stop: int | None = None) -> Values:
    """A counter from `start` (first value `first`), growing by `per_minute` until `stop`, flat after."""
    values: Values = [None] * start
    for minute in range(start, total):
        values.append(first + per_minute * (min(minute, stop or total) - start))
    return values


def selector(name: str, labels: Mapping[str, str]) -> str:
    inside = ", ".join(f'{key}="{value}"' for key, value in labels.items())
    return f"{name}{{{inside}}}"


@dataclass(frozen=True)
class Check:
    minute: int
    alert: str
    firing: tuple[Mapping[str, str], ...] = ()  # the labels of each firing alert, beyond the rule's own


@dataclass
class Case:
    name: str
    total: int  # minutes of series
    series: dict[str, Values] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)

    def silent(self, minutes: Sequence[int], alerts: Sequence[str] = ALERTS) -> Case:
        self.checks += [Check(minute, alert) for minute in minutes for alert in alerts]
        return self

    def fires(self, minute: int, alert: str, *labels: Mapping[str, str]) -> Case:
        self.checks.append(Check(minute, alert, labels or ({},)))
        return self


def promtool_tests(stack: Stack, case: Case) -> dict[str, Any]:
    """The case as a promtool test file; each firing alert is expected with its rule's labels and annotations."""

    def expected(check: Check) -> list[dict[str, Any]]:
        rule = stack.rules[check.alert]
        return [
            {"exp_labels": {**rule["labels"], **labels}, "exp_annotations": rule["annotations"]}
            for labels in check.firing
        ]

    return {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": notation(v)} for s, v in case.series.items()],
                "alert_rule_test": [
                    {"eval_time": f"{c.minute}m", "alertname": c.alert, "exp_alerts": expected(c)} for c in case.checks
                ],
            }
        ],
    }


def run_promtool(stack: Stack, case: Case, folder: Path) -> subprocess.CompletedProcess[str]:
    (folder / "rules.yaml").write_text(yaml.safe_dump({"groups": stack.groups}, sort_keys=False))
    (folder / "tests.yaml").write_text(yaml.safe_dump(promtool_tests(stack, case), sort_keys=False))
    return subprocess.run(
        [promtool(), "test", "rules", "tests.yaml"], cwd=folder, capture_output=True, text=True, timeout=120
    )


# --- the stack's series ---


class Series:
    """The selectors of the stack's series, with the labels the alerts read."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        app = {"application": stack.application}
        self.status = selector("ray_serve_application_status", app)
        self.namespace_created = selector("kube_namespace_created", {"namespace": stack.namespace})
        self.healthy = {
            side: selector("ray_serve_deployment_replica_healthy", {**app, "deployment": self.deployment(side)})
            for side in WORKERS
        }
        self.requests = {
            side: selector(
                "ray_serve_deployment_request_counter_total",
                {**app, "deployment": self.deployment(side), "WorkerId": worker},
            )
            for side, worker in WORKERS.items()
        }
        self.up = selector("up", ENGINE_TARGET)
        self.kv = {
            counter: selector(counter, {**ENGINE_TARGET, "WorkerId": WORKERS["decode"]})
            for counter in KV_FAILURE_COUNTERS
        }
        self.fb_used = selector("DCGM_FI_DEV_FB_USED", GPU)
        self.fb_free = selector("DCGM_FI_DEV_FB_FREE", GPU)

    def deployment(self, side: str) -> str:
        # Ray Serve LLM's PD builder names them <Side>:<model id> (infra/observability/pd_queries.py).
        return f"{side.capitalize()}:{self.stack.model_id}"

    def head_restarts(self, pod: str = HEAD_POD) -> str:
        return selector(
            "kube_pod_container_status_restarts_total",
            {"namespace": self.stack.namespace, "pod": pod, "container": "ray-head"},
        )

    def head_ready(self, pod: str = HEAD_POD) -> str:
        return selector("kube_pod_container_status_ready", self.head_restart_labels(pod))

    def ttft(self, side: str, le: str) -> str:
        return selector("ray_vllm_time_to_first_token_seconds_bucket", {"WorkerId": WORKERS[side], "le": le})

    def head_restart_labels(self, pod: str = HEAD_POD) -> dict[str, str]:
        return {"namespace": self.stack.namespace, "pod": pod, "container": "ray-head"}


def serving(s: Series, total: int, start: int, slow_from: Mapping[str, int] | None = None) -> dict[str, Values]:
    """Both sides serving from `start`: 10 requests a minute, each side's first token under 0.5 s (2.5 to 5 s from
    the minute `slow_from` gives the side), a healthy replica each, the head's restart counter at 0, a GPU at vLLM's
    90%."""
    series: dict[str, Values] = {}
    for side in WORKERS:
        series[s.healthy[side]] = steps(total, (start, 1))
        series[s.requests[side]] = counting(total, start, 10)
        slow = (slow_from or {}).get(side, total)
        for le in TTFT_BUCKETS:
            # Cumulative buckets: a fast request counts in every bucket, a slow one in le=5 and +Inf only.
            fast_per_minute, slow_per_minute = 10, 10 * (le in ("5", "+Inf"))
            series[s.ttft(side, le)] = [
                None
                if minute < start
                else fast_per_minute * (min(minute, slow) - start) + slow_per_minute * max(0, minute - slow)
                for minute in range(total)
            ]
    series[s.head_restarts()] = steps(total, (start, 0))
    series[s.head_ready()] = steps(total, (start, 1))
    series[s.up] = steps(total, (start, 1))
    series[s.fb_used] = steps(total, (start, 90))
    series[s.fb_free] = steps(total, (start, 10))
    return series


def steady(s: Series, total: int, **status: Values) -> dict[str, Values]:
    """A stack that has served for a day: its namespace a day old, the app RUNNING from the first sample."""
    return {
        s.namespace_created: steps(total, (0, A_DAY_AGO)),
        s.status: status.get("status") or steps(total, (0, 6)),
        **serving(s, total, 0),
    }


# --- the cases ---


def cases(stack: Stack) -> list[Case]:
    return [build(stack) for build in CASES]


def steady_healthy(stack: Stack) -> Case:
    s, total = Series(stack), 180
    return Case("steady_healthy", total, steady(s, total)).silent(range(0, total, 10))


def first_deploy(stack: Stack) -> Case:
    """The modelled first `pulumi up`: the namespace at 0, the mirror (no Ray yet), the head and engines DEPLOYING,
    RUNNING at the modelled cold start; silent throughout and past the deadline."""
    s = Series(stack)
    mirror = MODELLED_MIRROR_MINUTES
    running = MODELLED_FIRST_DEPLOY_MINUTES
    total = stack.deadline_minutes + 60
    series = {
        s.namespace_created: steps(total, (0, 0)),
        s.status: steps(total, (mirror, 5), (running, 6)),
        **serving(s, total, running),
    }
    series[s.head_restarts()] = steps(total, (mirror, 0))
    series[s.up] = steps(total, (mirror, 1))
    return Case("first_deploy", total, series).silent(range(0, total, 5))


def first_deploy_never_runs(stack: Stack) -> Case:
    """The app stays DEPLOYING (its engines never load): silent until the deadline, then late."""
    s, deadline = Series(stack), stack.deadline_minutes
    mirror, total = MODELLED_MIRROR_MINUTES, deadline + 30
    series = {s.namespace_created: steps(total, (0, 0)), s.status: steps(total, (mirror, 5))}
    app = {"application": stack.application}
    case = Case("first_deploy_never_runs", total, series).silent(range(0, deadline + 1, 5))
    case.silent([deadline], ("ServeAppNotRunning", "PrefillNoHealthyReplica", "DecodeNoHealthyReplica"))
    # The namespace is older than the deadline from the first evaluation after it.
    case.fires(deadline + 1 + FOR["ServeAppNotRunning"], "ServeAppNotRunning", app)
    for side in ("Prefill", "Decode"):
        case.fires(deadline + 1 + FOR[f"{side}NoHealthyReplica"], f"{side}NoHealthyReplica")
    return case


def first_deploy_fails(stack: Stack) -> Case:
    """The first deploy ends DEPLOY_FAILED: `pulumi up` reports it; the alert waits for the deadline."""
    s, deadline = Series(stack), stack.deadline_minutes
    mirror, total = MODELLED_MIRROR_MINUTES, deadline + 10
    series = {s.namespace_created: steps(total, (0, 0)), s.status: steps(total, (mirror, 5), (mirror + 8, 1))}
    app = {"application": stack.application}
    case = Case("first_deploy_fails", total, series).silent(range(0, deadline + 1, 5), ("ServeAppDeployFailed",))
    return case.fires(deadline + 1 + FOR["ServeAppDeployFailed"], "ServeAppDeployFailed", app)


def first_deploy_then_lost(stack: Stack) -> Case:
    """The app ran, then its head went away before the deadline: having been RUNNING arms the alerts."""
    s = Series(stack)
    running = MODELLED_FIRST_DEPLOY_MINUTES
    lost, total = running + 30, running + 90
    series = {s.namespace_created: steps(total, (0, 0)), s.status: steps(total, (running, 6), (lost, None))}
    series |= serving(s, total, running)
    for side in WORKERS:
        series[s.healthy[side]] = steps(total, (running, 1), (lost, None))
    case = Case("first_deploy_then_lost", total, series).silent(range(running, lost + LOOKBACK, 5))
    case.fires(lost + LOOKBACK + FOR["ServeAppNotRunning"], "ServeAppNotRunning", {"application": stack.application})
    for side in ("Prefill", "Decode"):
        case.fires(lost + LOOKBACK + FOR[f"{side}NoHealthyReplica"], f"{side}NoHealthyReplica")
    return case


def deploy_failed(stack: Stack) -> Case:
    """A change to a running app ends DEPLOY_FAILED (nothing serves; Serve does not roll back)."""
    s, total, broken = Series(stack), 60, 30
    case = Case("deploy_failed", total, steady(s, total, status=steps(total, (0, 6), (broken, 1))))
    case.silent([broken - 1], ("ServeAppDeployFailed",))
    return case.fires(broken + FOR["ServeAppDeployFailed"], "ServeAppDeployFailed", {"application": stack.application})


def stuck_deploying(stack: Stack) -> Case:
    s, total, stuck = Series(stack), 80, 30
    case = Case("stuck_deploying", total, steady(s, total, status=steps(total, (0, 6), (stuck, 5))))
    case.silent([stuck + FOR["ServeAppNotRunning"] - 1], ("ServeAppNotRunning",))
    return case.fires(stuck + FOR["ServeAppNotRunning"], "ServeAppNotRunning", {"application": stack.application})


def head_gone(stack: Stack) -> Case:
    """No status at all (the head down or no longer scraped): absent() once the last sample is past the lookback."""
    s, total, gone = Series(stack), 90, 30
    case = Case("head_gone", total, steady(s, total, status=steps(total, (0, 6), (gone, None))))
    case.silent([gone + LOOKBACK + FOR["ServeAppNotRunning"] - 1], ("ServeAppNotRunning",))
    return case.fires(
        gone + LOOKBACK + FOR["ServeAppNotRunning"], "ServeAppNotRunning", {"application": stack.application}
    )


def side_lost(side: str, reported: bool) -> Callable[[Stack], Case]:
    """A side's replicas unhealthy (Serve reports 0) or gone from the metrics (`or vector(0)` after the lookback)."""

    def build(stack: Stack) -> Case:
        s, total, lost = Series(stack), 60, 20
        series = steady(s, total)
        series[s.healthy[side]] = steps(total, (0, 1), (lost, 0 if reported else None))
        alert, after = f"{side.capitalize()}NoHealthyReplica", lost + (0 if reported else LOOKBACK)
        case = Case(build.__name__, total, series)
        case.silent([after + FOR[alert] - 1], (alert,))
        return case.fires(after + FOR[alert], alert)

    build.__name__ = f"{side}_replica_{'unhealthy' if reported else 'gone'}"
    return build


def aggregated_model_lost(stack: Stack) -> Case:
    """An aggregated model beside the pair (docs/models.md) serving, then its replicas unhealthy: the alert names its
    deployment, LLMServer:<model> (ray/llm/_internal/serve/core/server/builder.py build_llm_deployment)."""
    s, total, lost = Series(stack), 60, 20
    series = steady(s, total)
    model = {"application": stack.application, "deployment": "LLMServer:small"}
    series[selector("ray_serve_deployment_replica_healthy", model)] = steps(total, (0, 1), (lost, 0))
    case = Case("aggregated_model_lost", total, series).silent([lost + FOR["ModelNoHealthyReplica"] - 1])
    return case.fires(lost + FOR["ModelNoHealthyReplica"], "ModelNoHealthyReplica", {"deployment": "LLMServer:small"})


def kv_first_burst(counter: str) -> Callable[[Stack], Case]:
    """A quiet engine's first failures: Ray exports the counter from its first increment, at 3 here, flat after."""

    def build(stack: Stack) -> Case:
        s, total, burst = Series(stack), 90, 60
        series = steady(s, total)
        series[s.kv[counter]] = steps(total, (burst, 3))
        case = Case(build.__name__, total, series).silent([burst - 1, burst + 11], ("KvTransferFailures",))
        return case.fires(burst, "KvTransferFailures").fires(burst + 5, "KvTransferFailures")

    build.__name__ = f"kv_first_burst_{counter.removeprefix('ray_vllm_nixl_num_').removesuffix('_total')}"
    return build


def kv_burst_on_a_new_engine(stack: Stack) -> Case:
    """An engine whose target appeared at 30 fails at 33: counted once its target has the window's history (40),
    until the counter has it too (43)."""
    s, total = Series(stack), 60
    series = steady(s, total)
    series[s.up] = steps(total, (30, 1))
    series[s.kv[KV_FAILURE_COUNTERS[0]]] = steps(total, (33, 2))
    case = Case("kv_burst_on_a_new_engine", total, series).silent([39, 43], ("KvTransferFailures",))
    return case.fires(40, "KvTransferFailures").fires(42, "KvTransferFailures")


def kv_failing(stack: Stack) -> Case:
    """Transfers failing on and on: the counter grows from its first sample."""
    s, total, start = Series(stack), 60, 30
    series = steady(s, total)
    series[s.kv[KV_FAILURE_COUNTERS[0]]] = counting(total, start, 2, first=1)
    case = Case("kv_failing", total, series).silent([start - 1], ("KvTransferFailures",))
    return case.fires(start + 15, "KvTransferFailures").fires(total - 1, "KvTransferFailures")


def kv_old_failures_on_a_new_prometheus(stack: Stack) -> Case:
    """A counter from failures before Prometheus started (its storage is an emptyDir, so a moved pod starts empty):
    every series is new to Prometheus at once; nothing failed since."""
    s, total = Series(stack), 40
    series = steady(s, total)
    series[s.kv[KV_FAILURE_COUNTERS[0]]] = steps(total, (0, 4))
    return Case("kv_old_failures_on_a_new_prometheus", total, series).silent(range(total), ("KvTransferFailures",))


def kv_scrape_gap(stack: Stack) -> Case:
    """The engine's target unreachable for 15 minutes (up 0, no samples): its old counter comes back, not new."""
    s, total, gap = Series(stack), 80, (30, 45)
    series = steady(s, total)
    series[s.up] = steps(total, (0, 1), (gap[0], 0), (gap[1], 1))
    series[s.kv[KV_FAILURE_COUNTERS[0]]] = steps(total, (0, 4), (gap[0], None), (gap[1], 4))
    return Case("kv_scrape_gap", total, series).silent(range(total), ("KvTransferFailures",))


def ttft_slow(stack: Stack) -> Case:
    """The prefill side's first tokens take 2.5 to 5 s from minute 30 (the objective is 2 s)."""
    s, total, slow = Series(stack), 60, 30
    series = {**steady(s, total), **serving(s, total, 0, slow_from={"prefill": slow})}
    case = Case("ttft_slow", total, series).silent([slow - 1], ("TtftP99OverObjective",))
    # The 5-minute rate sees the first slow minute at once; the alert fires `for` later, plus a sample's margin.
    return case.fires(
        slow + FOR["TtftP99OverObjective"] + 2, "TtftP99OverObjective", {"deployment": s.deployment("prefill")}
    )


def gpu_memory_full(stack: Stack) -> Case:
    s, total, full = Series(stack), 60, 20
    series = steady(s, total)
    series[s.fb_used] = steps(total, (0, 90), (full, 98))
    series[s.fb_free] = steps(total, (0, 10), (full, 2))
    case = Case("gpu_memory_full", total, series).silent(
        [full + FOR["GpuMemoryExhausted"] - 1], ("GpuMemoryExhausted",)
    )
    return case.fires(full + FOR["GpuMemoryExhausted"], "GpuMemoryExhausted", GPU)


def head_restarted(stack: Stack) -> Case:
    s, total, restart = Series(stack), 60, 30
    series = steady(s, total)
    series[s.head_restarts()] = steps(total, (0, 0), (restart, 1))
    case = Case("head_restarted", total, series).silent([restart - 1, restart + 16], ("RayHeadRestarted",))
    return case.fires(restart, "RayHeadRestarted", s.head_restart_labels())


def head_down(stack: Stack) -> Case:
    """The head crashes at minute 30 and stays down (CrashLoopBackOff: its container not ready, its restarts
    counting): RayHeadNotReady fires after its 5 minutes, long before the workers' 600 s reconnect timeout ends."""
    s, total, down = Series(stack), 60, 30
    series = steady(s, total)
    series[s.head_ready()] = steps(total, (0, 1), (down, 0))
    series[s.head_restarts()] = steps(total, (0, 0), (down, 1), (down + 2, 2), (down + 4, 3))
    case = Case("head_down", total, series).silent([down + FOR["RayHeadNotReady"] - 1], ("RayHeadNotReady",))
    return case.fires(down + FOR["RayHeadNotReady"], "RayHeadNotReady", {"namespace": stack.namespace, "pod": HEAD_POD})


def head_back_within_minutes(stack: Stack) -> Case:
    """A head restart that GCS fault tolerance rides through (back and ready in about 30 s, measured on CPU, here
    within two one-minute scrapes): RayHeadRestarted only, RayHeadNotReady silent."""
    s, total, restart = Series(stack), 60, 30
    series = steady(s, total)
    series[s.head_ready()] = steps(total, (0, 1), (restart, 0), (restart + 2, 1))
    series[s.head_restarts()] = steps(total, (0, 0), (restart, 1))
    return Case("head_back_within_minutes", total, series).silent(range(total), ("RayHeadNotReady",))


def head_replaced(stack: Stack) -> Case:
    """A new head pod (a replaced RayService): its restart counter is a new series at 0, not a restart."""
    s, total, replaced = Series(stack), 60, 30
    series = steady(s, total)
    series[s.head_restarts()] = steps(total, (0, 0), (replaced, None))
    series[s.head_restarts("ray-llm-fghij-head-z9")] = steps(total, (replaced, 0))
    series[s.head_ready()] = steps(total, (0, 1), (replaced, None))
    series[s.head_ready("ray-llm-fghij-head-z9")] = steps(total, (replaced, 0), (replaced + 1, 1))
    return Case("head_replaced", total, series).silent(range(total), ("RayHeadRestarted", "RayHeadNotReady"))


CASES: tuple[Callable[[Stack], Case], ...] = (
    steady_healthy,
    first_deploy,
    first_deploy_never_runs,
    first_deploy_fails,
    first_deploy_then_lost,
    deploy_failed,
    stuck_deploying,
    head_gone,
    *(side_lost(side, reported) for side in WORKERS for reported in (True, False)),
    aggregated_model_lost,
    *(kv_first_burst(counter) for counter in KV_FAILURE_COUNTERS),
    kv_burst_on_a_new_engine,
    kv_failing,
    kv_old_failures_on_a_new_prometheus,
    kv_scrape_gap,
    ttft_slow,
    gpu_memory_full,
    head_restarted,
    head_down,
    head_back_within_minutes,
    head_replaced,
)
CASE_NAMES = [build.__name__ for build in CASES]


@pytest.fixture(scope="module")
def stack(dev) -> Stack:
    return stack_of(dev)


@pytest.mark.parametrize("index", range(len(CASES)), ids=CASE_NAMES)
def test_promtool_passes_the_case(stack, tmp_path, index):
    case = CASES[index](stack)
    result = run_promtool(stack, case, tmp_path)
    assert result.returncode == 0, f"{case.name}:\n{result.stdout}{result.stderr}"


def test_promtool_reads_the_rendered_rules(stack, tmp_path):
    """`promtool check rules`: Prometheus' own parser and checks over every rule as rendered."""
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": stack.groups}, sort_keys=False))
    result = subprocess.run([promtool(), "check", "rules", "rules.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(stack.rules)} rules found" in result.stdout


def test_a_wrong_expectation_fails_promtool(stack, tmp_path):
    """The tester is not vacuous: the steady stack with an alert expected to fire fails."""
    case = steady_healthy(stack)
    case.checks = [Check(60, "ServeAppNotRunning", ({"application": stack.application},))]
    assert run_promtool(stack, case, tmp_path).returncode != 0


def test_every_alert_is_played_silent_steady_and_through_a_first_deploy_and_firing(stack):
    built = cases(stack)
    assert set(stack.rules) == set(ALERTS)
    for name in ("steady_healthy", "first_deploy"):
        (case,) = [case for case in built if case.name == name]
        assert {check.alert for check in case.checks if not check.firing} == set(ALERTS)
    assert {check.alert for case in built for check in case.checks if check.firing} == set(ALERTS)


def test_each_case_plays_the_rules_for(stack):
    assert {name: int(rule["for"].removesuffix("m")) for name, rule in stack.rules.items()} == FOR


def test_the_modelled_first_deploy_ends_well_before_the_deadline(stack):
    """The case plays the modelled first deploy; the alerts wait for the deadline `pulumi up` itself keeps."""
    assert MODELLED_FIRST_DEPLOY_MINUTES < stack.deadline_minutes
    assert f"[{stack.deadline_minutes * 60}s]" in stack.rules["ServeAppNotRunning"]["expr"]


def test_the_notation_writes_what_promtool_expands():
    assert notation([None, None, 1, 1, 1, 2, None]) == "_x2 1x2 2 _"


def test_without_promtool_ci_fails_and_elsewhere_the_tests_skip_saying_why(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the alert rules through promtool"):
        promtool()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="apt-get install prometheus"):
        promtool()
