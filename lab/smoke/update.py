"""`--update-scenario`: KubeRay's in-place update replayed (a good change, a broken one, the rollback) under steady
traffic, each step judged by the stack's rollout verdict (`infra.serving.rollout_status`) and recorded.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import openai

from infra.serving.rollout_status import FAILED, FAILED_APP_STATUSES, READY, WAITING, Verdict, serve_verdict
from lab.smoke import deploy
from lab.smoke.document import engine_configs
from lab.traffic import Answer, longest_outage
from lab.traffic import Traffic as PacedTraffic
from tools.probe import CheckResult, EmptyCompletion, Report, client, stream_chat

# KubeRay 1.4.0 applies a `serveConfigV2`-only change in place: it PUTs the whole new config to the
# dashboard's /api/serve/applications/ (ray-operator/controllers/ray/utils/dashboardclient,
# UpdateDeployments), the call `deploy_and_wait` makes. The scenario replays three such changes while a
# client keeps calling the app, and judges each with the verdict the stack's rollout wait uses.
TRAFFIC_INTERVAL_S = 0.5
TRAFFIC_TIMEOUT_S = 5.0
TRAFFIC_MAX_TOKENS = 4
VERDICT_INTERVAL_S = 2.0


@dataclass(frozen=True)
class UpdateStep:
    name: str  # also the stem of its files
    change: str  # what the step changes, in words
    config: dict[str, Any]  # the whole serve config PUT to the dashboard
    expected: str  # the verdict it should end with (rollout_status READY or FAILED)


def missing_model_dir(model_dir: Path) -> Path:
    """Where the broken change points the engines: beside the model, a directory that is not there."""
    return model_dir.with_name(f"{model_dir.name}-missing")


UPDATE_STEP_NAMES = ("good", "broken", "rollback")


def update_steps(smoke: dict[str, Any], missing_model_dir: Path) -> list[UpdateStep]:
    """A good change, a broken one on top of it, and the rollback to the config that ran first."""
    good = copy.deepcopy(smoke)
    lengths = set()
    for engine in engine_configs(good):
        lengths.add(engine["engine_kwargs"]["max_model_len"])
        engine["engine_kwargs"]["max_model_len"] *= 2
    broken = copy.deepcopy(good)
    for engine in engine_configs(broken):
        engine["model_loading_config"]["model_source"] = str(missing_model_dir)
    (length,) = lengths
    return [
        UpdateStep("good", f"each side's engine_kwargs.max_model_len {length} -> {2 * length}", good, READY),
        UpdateStep("broken", f"each side's model_source -> {missing_model_dir} (does not exist)", broken, FAILED),
        UpdateStep(
            "rollback", "the config that ran first, again (pulumi up with the previous stack config)", smoke, READY
        ),
    ]


# Each traffic answer (lab.traffic.Answer: send time, ok, latency, error).
TrafficResult = Answer


class Traffic(PacedTraffic):
    """A client calling the app all through a step: a short chat completion every interval, each recorded."""

    def __init__(
        self,
        model_id: str,
        start: float,
        interval_s: float = TRAFFIC_INTERVAL_S,
        timeout_s: float = TRAFFIC_TIMEOUT_S,
        api_key: str | None = None,
    ) -> None:
        self.model_id, self.timeout_s = model_id, timeout_s
        self._api_key = api_key
        self._api: openai.OpenAI | None = None
        super().__init__(self._chat, start, interval_s, name="update-traffic")

    @property
    def results(self) -> list[Answer]:
        return self.answers

    def _chat(self) -> tuple[bool, str, str]:
        # Made on the traffic's thread, on its first call, and kept for the step.
        self._api = self._api or client(f"{deploy.SERVE_URL}/v1", self.timeout_s, self._api_key)
        try:
            stream_chat(self._api, self.model_id, "Are you there?", TRAFFIC_MAX_TOKENS, extra_body={"ignore_eos": True})
            return True, "", ""
        except (openai.OpenAIError, httpx.HTTPError, EmptyCompletion) as failure:
            return False, "", f"{type(failure).__name__}: {str(failure)[-300:]}"


@dataclass
class VerdictPoll:
    t_s: float
    state: str
    app_status: str
    message: str


@dataclass
class StepRecord:
    name: str
    change: str
    expected: str
    put_status: int
    verdicts: list[VerdictPoll] = field(default_factory=list)  # every poll whose verdict or app status changed
    final: VerdictPoll | None = None
    traffic: list[TrafficResult] = field(default_factory=list)
    end_s: float = 0.0
    # Raw `GET /api/serve/applications/` answers: the first poll, the first with a failed app, the last.
    first_details: dict[str, Any] | None = None
    failed_details: dict[str, Any] | None = None
    final_details: dict[str, Any] | None = None

    def first_time(self, state: str) -> float | None:
        return next((poll.t_s for poll in self.verdicts if poll.state == state), None)

    def summary(self) -> dict[str, Any]:
        outage, still_failing = longest_outage(self.traffic, self.end_s)
        ready_at = self.first_time(READY)
        final = self.final or VerdictPoll(self.end_s, WAITING, "", "no answer from the dashboard")
        return {
            "step": self.name,
            "change": self.change,
            "put_status": self.put_status,
            "expected_verdict": self.expected,
            "verdict": final.state,
            "verdict_at_s": final.t_s,
            "verdict_message": final.message,
            "final_app_status": final.app_status,
            "seconds_to_final_state": final.t_s,
            "verdict_right_after_put": asdict(self.verdicts[0]) if self.verdicts else None,
            "first_ready_s": ready_at,
            "first_failed_s": self.first_time(FAILED),
            "requests_ok": sum(r.ok for r in self.traffic),
            "requests_failed": sum(not r.ok for r in self.traffic),
            "requests_failed_after_ready": sum(
                not r.ok for r in self.traffic if ready_at is not None and r.t_s >= ready_at
            ),
            "longest_outage_s": round(outage, 1),
            "still_failing_at_end": still_failing,
            "last_error": next((r.error for r in reversed(self.traffic) if not r.ok), ""),
            "verdict_timeline": [asdict(poll) for poll in self.verdicts],
            "traffic": [asdict(r) for r in self.traffic],
        }


def judge(details: dict[str, Any] | None, applications: list[dict[str, Any]]) -> tuple[Verdict, str]:
    """The stack's verdict on one dashboard answer, and the application's status in it."""
    if details is None:
        return Verdict(WAITING, "the dashboard did not answer"), ""
    app = (details.get("applications") or {}).get(applications[0]["name"]) or {}
    return serve_verdict(details, applications), app.get("status", "")


def run_update_step(
    step: UpdateStep, model_id: str, timeout_s: float, settle_s: float, api_key: str | None = None
) -> StepRecord:
    """PUT the step's config (as KubeRay does) under traffic and poll the verdict until it is final or times out;
    then `settle_s` more of traffic, to see whether requests come back."""
    applications = step.config["applications"]
    start = time.monotonic()
    with Traffic(model_id, start, api_key=api_key) as traffic:
        code, text = deploy.http_request(
            "PUT", f"{deploy.DASHBOARD_URL}/api/serve/applications/", step.config, timeout=120
        )
        record = StepRecord(step.name, step.change, step.expected, code)
        if code != 200:
            print(f"  update {step.name}: PUT refused ({code}): {text[:500]}", flush=True)
        while code == 200:
            t_s = round(time.monotonic() - start, 1)
            details = deploy.serve_details()
            verdict, app_status = judge(details, applications)
            poll = VerdictPoll(t_s, verdict.state, app_status, verdict.message[-600:])
            if not record.verdicts or (poll.state, poll.app_status) != (
                record.verdicts[-1].state,
                record.verdicts[-1].app_status,
            ):
                record.verdicts.append(poll)
                print(
                    f"  update {step.name} [{t_s:5.0f}s] {app_status}: {verdict.state}: {poll.message[:300]}",
                    flush=True,
                )
            record.first_details = record.first_details or details
            if app_status in FAILED_APP_STATUSES and record.failed_details is None:
                record.failed_details = details
            record.final, record.final_details = poll, details
            if verdict.state != WAITING or t_s >= timeout_s:
                break
            time.sleep(VERDICT_INTERVAL_S)
        time.sleep(settle_s)
        record.end_s = round(time.monotonic() - start, 1)
    record.traffic = list(traffic.results)
    return record


def run_update_scenario(
    report: Report,
    smoke: dict[str, Any],
    model_id: str,
    missing_model_dir: Path,
    args: argparse.Namespace,
    api_key: str | None = None,
) -> None:
    """The three updates, their records in `args.update_scenario` and the raw dashboard answers beside it."""
    out_dir = args.update_scenario.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    if missing_model_dir.exists():
        raise ValueError(f"{missing_model_dir} exists; the broken change needs a model source that does not")
    steps = [step for step in update_steps(smoke, missing_model_dir) if step.name in args.update_steps]

    def save(stage: str, details: dict[str, Any] | None) -> None:
        if details is not None:
            (out_dir / f"serve-details-{stage}.json").write_text(json.dumps(details, indent=2, sort_keys=True))

    save("running-v1", deploy.serve_details())
    for step in steps[:2]:
        (out_dir / f"serve-config-{step.name}.json").write_text(json.dumps(step.config, indent=2))
    (out_dir / "serve-config-v1.json").write_text(json.dumps(smoke, indent=2))
    summaries = []
    for step in steps:
        print(f"  update {step.name}: {step.change}", flush=True)
        record = run_update_step(step, model_id, args.update_step_timeout, args.update_settle, api_key)
        summary = record.summary()
        summaries.append(summary)
        if step.name == "good":
            save("deploying", record.first_details)
        if step.name == "broken":
            save("deploy-failed", record.failed_details)
        if step.name == "rollback" and summary["verdict"] == READY:
            save("running-rollback", record.final_details)
        report.record(
            f"update_{step.name}",
            CheckResult(
                summary["verdict"] == step.expected,
                f"{step.change}: verdict {summary['verdict']} after {summary['verdict_at_s']} s "
                f"(expected {step.expected}), app {summary['final_app_status']}; right after the PUT: "
                f"{(summary['verdict_right_after_put'] or {}).get('state')}; requests {summary['requests_ok']} ok, "
                f"{summary['requests_failed']} failed, longest outage {summary['longest_outage_s']} s"
                + (" (still failing at the end)" if summary["still_failing_at_end"] else ""),
            ),
        )
    args.update_scenario.write_text(json.dumps({"command": sys.argv, "steps": summaries}, indent=2))
    print(f"  update scenario written to {args.update_scenario}", flush=True)
