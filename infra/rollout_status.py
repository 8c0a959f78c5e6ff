"""Whether a running RayService serves the config `pulumi up` just applied: the verdict the rollout waits on.

KubeRay 1.4.0's `Ready` condition only counts serve endpoints, and one status write after an update carries
the new generation with the previous config's `RUNNING` (../shared/notes/kuberay-1.4-updates-and-waits.md),
so neither tells whether the new config runs. Ray's dashboard does: `GET /api/serve/applications/` returns,
per application, the config Serve was last given (`deployed_app_config`, "the exact copy of the application
config that was submitted") beside its status, and Serve sets that config and `DEPLOYING` in one step
(`ApplicationState.apply_app_config` → `_set_target_state`). A `RUNNING` application whose deployed config is
ours therefore runs ours.

Plain functions of the API's JSON (KubeRay's RayService object, Ray's `ServeInstanceDetails`, Kubernetes
pods), with no Pulumi or Kubernetes client, so the GPU smoke test and the unit tests judge live and recorded
states with the same code the deploy waits with.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

WAITING, READY, FAILED = "waiting", "ready", "failed"
# Ray Serve's ApplicationStatus values from which an application does not recover by itself
# (ray/serve/schema.py ApplicationStatus; DEPLOY_FAILED stays until a new config is applied, measured in
# ../shared/notes/serve-updates.md).
FAILED_APP_STATUSES = ("DEPLOY_FAILED", "UNHEALTHY")
HEALTHY_DEPLOYMENT = "HEALTHY"
RUNNING_REPLICA = "RUNNING"
# Serve's messages carry whole tracebacks; the end names the cause.
MESSAGE_TAIL_CHARS = 1200
ROLLBACK_HINT = (
    "To roll back, set the previous values again (e.g. `git checkout HEAD~1 -- Pulumi.<stack>.yaml`) and run "
    "`pulumi up`: Serve deploys the previous config in place"
)


@dataclass(frozen=True)
class Verdict:
    state: str  # WAITING, READY or FAILED
    message: str


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MESSAGE_TAIL_CHARS else "…" + text[-MESSAGE_TAIL_CHARS:]


def config_matches(submitted: Any, deployed: Any) -> bool:
    """Every option we submitted stands in the deployed config with the same value (Serve keeps only the
    options that were set, so a deployed config has no keys of its own to ignore, but pydantic may add
    `null`s for unset nested fields)."""
    if isinstance(submitted, Mapping):
        return isinstance(deployed, Mapping) and all(
            key in deployed and config_matches(value, deployed[key]) for key, value in submitted.items()
        )
    if isinstance(submitted, list):
        return (
            isinstance(deployed, list)
            and len(submitted) == len(deployed)
            and all(config_matches(a, b) for a, b in zip(submitted, deployed, strict=True))
        )
    return bool(submitted == deployed)


def cluster_verdict(rayservice: Mapping[str, Any]) -> Verdict:
    """What KubeRay's status says: READY once it has seen this generation and one RayCluster serves."""
    generation = rayservice.get("metadata", {}).get("generation", 0)
    status = rayservice.get("status") or {}
    observed = status.get("observedGeneration", 0)
    if observed < generation:
        return Verdict(WAITING, f"KubeRay has not reconciled generation {generation} yet (observed {observed})")
    pending = (status.get("pendingServiceStatus") or {}).get("rayClusterName")
    if pending:
        return Verdict(WAITING, f"KubeRay is starting a second RayCluster {pending} beside the active one")
    active = (status.get("activeServiceStatus") or {}).get("rayClusterName")
    if not active:
        return Verdict(WAITING, "no RayCluster of this RayService is ready yet")
    return Verdict(READY, f"RayCluster {active} is active")


def _deployment_problems(app: Mapping[str, Any]) -> list[str]:
    problems = []
    for name, deployment in sorted((app.get("deployments") or {}).items()):
        status = deployment.get("status", "")
        running = sum(1 for r in deployment.get("replicas") or [] if r.get("state") == RUNNING_REPLICA)
        target = deployment.get("target_num_replicas", 0)
        if status != HEALTHY_DEPLOYMENT or running < target:
            message = _tail(deployment.get("message") or "")
            summary = f"deployment {name} {status}, {running}/{target} replicas running"
            problems.append(summary + (f": {message}" if message else ""))
    return problems


def serve_verdict(serve_details: Mapping[str, Any], applications: Sequence[Mapping[str, Any]]) -> Verdict:
    """What Ray's dashboard says of each application we submitted (`serveConfigV2`'s `applications`)."""
    live_apps = serve_details.get("applications") or {}
    waiting = []
    for submitted in applications:
        name = submitted["name"]
        live = live_apps.get(name)
        if live is None:
            waiting.append(f"application {name} is not deployed yet")
            continue
        if not config_matches(submitted, live.get("deployed_app_config")):
            waiting.append(f"application {name} still runs the previous config (KubeRay has not submitted this one)")
            continue
        status = live.get("status", "")
        details = _deployment_problems(live)
        if status in FAILED_APP_STATUSES:
            message = _tail(live.get("message") or "")
            parts = [f"application {name} is {status}" + (f": {message}" if message else ""), *details]
            return Verdict(FAILED, "; ".join(parts) + ". " + ROLLBACK_HINT)
        if status != "RUNNING" or details:
            waiting.append(f"application {name} is {status}" + (f" ({'; '.join(details)})" if details else ""))
    if waiting:
        return Verdict(WAITING, "; ".join(waiting))
    return Verdict(READY, ", ".join(f"application {a['name']} RUNNING the applied config" for a in applications))


def unschedulable_pods(pods: Mapping[str, Any]) -> list[str]:
    """Pods (a Kubernetes PodList) the scheduler cannot place, with its reason: why a cluster never starts."""
    found = []
    for pod in pods.get("items") or []:
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                found.append(f"pod {pod['metadata']['name']}: {condition.get('message') or condition.get('reason')}")
    return found


class RayServiceReader(Protocol):
    """The three reads the wait makes, each answering the API's own JSON (or None where it is not there yet)."""

    def rayservice(self) -> Mapping[str, Any] | None: ...
    def serve_details(self) -> Mapping[str, Any] | None: ...
    def pods(self) -> Mapping[str, Any]: ...


def current_verdict(reader: RayServiceReader, applications: Sequence[Mapping[str, Any]]) -> Verdict:
    rayservice = reader.rayservice()
    if rayservice is None:
        return Verdict(WAITING, "the RayService does not exist yet")
    cluster = cluster_verdict(rayservice)
    if cluster.state != READY:
        return cluster
    details = reader.serve_details()
    if details is None:
        return Verdict(WAITING, "Ray's dashboard does not answer yet")
    return serve_verdict(details, applications)


class RolloutFailed(RuntimeError):
    """The applied config did not come up: Serve's own words, or what was still missing at the deadline."""


def await_rollout(
    reader: RayServiceReader,
    applications: Sequence[Mapping[str, Any]],
    timeout_s: float,
    poll_s: float = 10.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Verdict:
    """Polls until every application runs the applied config; raises RolloutFailed on a failed application or
    at the deadline, naming what it last saw (and the pods that cannot be scheduled, if any)."""
    deadline = clock() + timeout_s
    while True:
        try:
            verdict = current_verdict(reader, applications)
        except OSError as error:  # the API server or the dashboard proxy did not answer this time
            verdict = Verdict(WAITING, f"the cluster did not answer ({error})")
        if verdict.state == READY:
            return verdict
        if verdict.state == FAILED:
            raise RolloutFailed(verdict.message)
        if clock() >= deadline:
            stuck = unschedulable_pods(reader.pods())
            extra = f"; pods the scheduler cannot place: {'; '.join(stuck)}" if stuck else ""
            raise RolloutFailed(
                f"not ready after {timeout_s / 60:g} minutes (serveReadyTimeoutMinutes): {verdict.message}{extra}. "
                + ROLLBACK_HINT
            )
        sleep(poll_s)
