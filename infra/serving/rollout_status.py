"""Whether a running RayService serves the config `pulumi up` just applied: the verdict the rollout waits on.

KubeRay's `Ready` condition cannot tell; a `RUNNING` application whose `deployed_app_config` is ours runs ours
(docs/changes.md#changing-a-running-stack has both sources). Plain functions of the API's JSON, with no Pulumi or
Kubernetes client, so the GPU smoke test and the unit tests judge live and recorded states with the deploy's code."""

from __future__ import annotations

import base64
import dataclasses
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

WAITING, READY, FAILED, UNHEALTHY = "waiting", "ready", "failed", "unhealthy"
# infra/serving/rayservice.py CLUSTER_SPEC_ANNOTATION (this module imports nothing of the stack: the GPU smoke test
# runs it alone).
CLUSTER_SPEC_ANNOTATION = "ray-llm-eks/cluster-spec-sha256"
# DEPLOY_FAILED stays until a new config is applied (measured:
# lab/records/gpu-end-to-end.md); UNHEALTHY is recomputed from the deployments on every controller loop and Serve
# replaces unhealthy replicas (ray/serve/_private/application_state.py), so it fails the rollout only when it lasts.
FAILED_APP_STATUSES = ("DEPLOY_FAILED", "UNHEALTHY")
UNHEALTHY_GRACE_S = 300.0
HEALTHY_DEPLOYMENT = "HEALTHY"
VALIDATION_FAILED = "ValidationFailed"  # rayv1.RayServiceValidationFailed (vendor/kuberay-v1.7.0/rayservice_types.go)
RUNNING_REPLICA = "RUNNING"
# Serve's messages carry whole tracebacks; the end names the cause.
MESSAGE_TAIL_CHARS = 1200
# What a rollback costs depends on the change that failed (docs/changes.md#rolling-back).
SET_PREVIOUS_VALUES = (
    "To roll back, set the previous values again (`pulumi config set KEY OLD_VALUE`, or restore Pulumi.<stack>.yaml "
    "from version control) and run `pulumi up`"
)
ROLLBACK_HINT = (
    f"{SET_PREVIOUS_VALUES}. After a serve-config change (the preview showed the RayService `update`) that is in "
    "place: KubeRay sends the previous config to the running cluster and Serve loads its engines again, minutes with "
    "no new nodes. After a change that replaced the RayService (`replace`: its cluster spec) the old cluster is gone "
    "and nothing serves: the rollback replaces it again, another delete and a cold start (image pull and model load), "
    "and `pulumi up` waits for it"
)
# With newCluster KubeRay compares the RayService with the failed pending cluster, so the previous spec is yet another
# new cluster (docs/kuberay-versions.md#a-the-newcluster-upgrade-path-140-and-170).
NEW_CLUSTER_ROLLBACK_HINT = (
    f"The active RayCluster keeps serving the previous version. {SET_PREVIOUS_VALUES}: KubeRay compares the "
    "RayService with the failed pending cluster, not the active one, so it builds yet another cluster of the previous "
    "spec beside the active one (another surge: GPU nodes, image pull, model load), moves the serve Service to it "
    "once its apps run and deletes the failed cluster after its deletion delay (the RayService's "
    "rayClusterDeletionDelaySeconds; 60 s with KubeRay 1.4.0), which the new cluster's pods may wait for; "
    "`pulumi up` waits for it. A fix of the serve config alone is sent to the pending cluster, not the active one"
)


@dataclass(frozen=True)
class Verdict:
    state: str  # WAITING, READY, FAILED or UNHEALTHY
    message: str
    cluster: str = ""  # the RayCluster whose Serve apps decide, once KubeRay names one


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


def _refusal(rayservice: Mapping[str, Any]) -> str:
    """The error of a spec KubeRay refused, "" for none: KubeRay 1.7.0 writes it into the Ready condition (reason
    ValidationFailed) and leaves status.observedGeneration as it was (vendor/kuberay-v1.7.0/rayservice_controller.go
    Reconcile, validateRayService); 1.4.0 writes no status for it. The condition stays until the endpoints count
    again, so it may be an earlier generation's: the wait names it and goes on."""
    for condition in (rayservice.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("reason") == VALIDATION_FAILED:
            return str(condition.get("message") or "")
    return ""


def _unobserved(rayservice: Mapping[str, Any]) -> Verdict | None:
    generation = rayservice.get("metadata", {}).get("generation", 0)
    observed = (rayservice.get("status") or {}).get("observedGeneration", 0)
    if observed < generation:
        refused = _refusal(rayservice)
        said = f"; KubeRay refused a spec of this RayService: {_tail(refused)}" if refused else ""
        return Verdict(WAITING, f"KubeRay has not reconciled generation {generation} yet (observed {observed}){said}")
    return None


def cluster_names(rayservice: Mapping[str, Any]) -> tuple[str, str]:
    """The active and the pending RayCluster KubeRay names in the status ("" for none)."""
    status = rayservice.get("status") or {}
    active = (status.get("activeServiceStatus") or {}).get("rayClusterName") or ""
    pending = (status.get("pendingServiceStatus") or {}).get("rayClusterName") or ""
    return active, pending


def cluster_verdict(rayservice: Mapping[str, Any]) -> Verdict:
    """What KubeRay's status says: READY with the RayCluster to read Serve on, once KubeRay has seen this generation and
    names one cluster. A first cluster is KubeRay's *pending* one until its apps run, so on a first create and after
    a replacement that is the one to read; both at once is a zero-downtime upgrade, which `upgradeStrategy: None`
    keeps from happening: wait it out (docs/kuberay-versions.md#a-the-newcluster-upgrade-path-140-and-170)."""
    if unobserved := _unobserved(rayservice):
        return unobserved
    active, pending = cluster_names(rayservice)
    if pending and active:
        return Verdict(WAITING, f"KubeRay is starting a second RayCluster {pending} beside the active {active}")
    cluster = pending or active
    if not cluster:
        return Verdict(WAITING, "KubeRay has not created a RayCluster for this RayService yet")
    return Verdict(READY, f"RayCluster {cluster} {'is starting' if pending else 'is active'}", cluster=cluster)


def built_from(raycluster: Mapping[str, Any]) -> str:
    """The digest of the RayService cluster spec a RayCluster was built from: KubeRay copies the RayService's
    rayClusterConfig into the RayCluster's spec (constructRayClusterForRayService), the head's pod template and its
    annotations with it (infra/serving/rayservice.py CLUSTER_SPEC_ANNOTATION)."""
    head = ((raycluster.get("spec") or {}).get("headGroupSpec") or {}).get("template") or {}
    return str(((head.get("metadata") or {}).get("annotations") or {}).get(CLUSTER_SPEC_ANNOTATION, ""))


def _deployment_problems(app: Mapping[str, Any]) -> list[str]:
    """Deployments short of what they should run: their target, or for an autoscaling deployment its minimum
    (Serve reports UPSCALING while it asks for more, which may wait on a new GPU node)."""
    problems = []
    for name, deployment in sorted((app.get("deployments") or {}).items()):
        status = deployment.get("status", "")
        running = sum(1 for r in deployment.get("replicas") or [] if r.get("state") == RUNNING_REPLICA)
        autoscaling = (deployment.get("deployment_config") or {}).get("autoscaling_config")
        if autoscaling:
            target = int(autoscaling.get("min_replicas") or 0)
            short = status in ("UNHEALTHY", "DEPLOY_FAILED") or running < target
        else:
            target = deployment.get("target_num_replicas", 0)
            short = status != HEALTHY_DEPLOYMENT or running < target
        if short:
            message = _tail(deployment.get("message") or "")
            summary = f"deployment {name} {status}, {running}/{target} replicas running"
            problems.append(summary + (f": {message}" if message else ""))
    return problems


def serve_verdict(
    serve_details: Mapping[str, Any], applications: Sequence[Mapping[str, Any]], hint: str = ROLLBACK_HINT
) -> Verdict:
    """What Ray's dashboard says of each application we submitted (`serveConfigV2`'s `applications`); a failure ends
    with `hint`, how to roll back."""
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
            return Verdict(FAILED if status == "DEPLOY_FAILED" else UNHEALTHY, "; ".join(parts) + ". " + hint)
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


class ClusterRefused(RuntimeError):
    """The API server refused a read for good (401, 403, another 4xx): credentials or RBAC, not a slow cluster."""


# Ray's token authentication on a RayCluster (KubeRay 1.7.0 `authOptions`; docs/ray-token-auth.md): KubeRay's own
# dashboard client reads the cluster's Secret and sends its token in this header (vendor/kuberay-v1.7.0/
# dashboard_httpclient.go setAuthHeader, util.go GetRayDashboardClientFunc); the rollout sends it the same way.
RAY_TOKEN_HEADER = "x-ray-authorization"
RAY_TOKEN_SECRET_KEY = "auth_token"  # utils/constant.go RAY_AUTH_TOKEN_SECRET_KEY
RAY_TOKEN_MODE = "token"  # rayv1.AuthModeToken
KUBERAY_NAME_MAX = 50  # utils/util.go CheckName's maxLength


class TokenUnavailable(Exception):
    """A RayCluster runs with token auth but its token cannot be read yet: no Secret, or one without the key."""


def kuberay_checked_name(name: str) -> str:
    """utils/util.go CheckName, which KubeRay applies to a RayCluster's name to name its token Secret: at most 50
    characters (the front cut off), never starting with a digit or a punctuation mark (replaced by `r`)."""
    name = name[max(len(name) - KUBERAY_NAME_MAX, 0) :]
    for category in ("Nd", "P"):  # unicode.IsDigit, then unicode.IsPunct
        if unicodedata.category(name[:1] or " ").startswith(category):
            name = "r" + name[1:]
    return name


def ray_token_secret(raycluster: Mapping[str, Any]) -> str | None:
    """The Secret that holds a RayCluster's Ray token, None when it runs without token auth. Auth is on only with
    `authOptions.mode: token`: the CRD gives `mode` no default, and KubeRay sets RAY_AUTH_MODE and sends a token only
    for that value (utils/util.go IsAuthEnabled, GetRayDashboardClientFunc). The Secret is `authOptions.secretName`,
    else the one KubeRay generates, named after the cluster (raycluster_controller.go reconcileAuthSecret)."""
    options = (raycluster.get("spec") or {}).get("authOptions") or {}
    if options.get("mode") != RAY_TOKEN_MODE:
        return None
    return str(options.get("secretName") or kuberay_checked_name(raycluster["metadata"]["name"]))


def ray_token(secret: Mapping[str, Any] | None, name: str, cluster: str) -> str:
    """The token in a Secret as the API server returns it (`data` is base64), trimmed as Ray trims the token it
    loads (src/ray/rpc/authentication/authentication_token_loader.cc TrimWhitespace)."""
    if secret is None:
        raise TokenUnavailable(
            f"RayCluster {cluster} runs with Ray token authentication and its Secret {name} does not exist yet "
            "(KubeRay creates it with the cluster, unless authOptions.secretName names one of yours)"
        )
    encoded = (secret.get("data") or {}).get(RAY_TOKEN_SECRET_KEY)
    if not encoded:
        raise TokenUnavailable(f"Secret {name} of RayCluster {cluster} has no `{RAY_TOKEN_SECRET_KEY}` key")
    return base64.b64decode(encoded).decode().strip()


class RayServiceReader(Protocol):
    """The reads the wait makes, each answering the API's own JSON (or None where it is not there yet). Any error
    but ClusterRefused counts as the cluster not answering this time; TokenUnavailable says why."""

    def rayservice(self) -> Mapping[str, Any] | None: ...
    def serve_details(self, cluster: str) -> Mapping[str, Any] | None: ...
    def raycluster(self, cluster: str) -> Mapping[str, Any] | None: ...
    def pods(self) -> Mapping[str, Any]: ...


class _NoAnswer(Exception):
    pass


def _read(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except ClusterRefused:
        raise
    except TokenUnavailable as unavailable:  # KubeRay creates the Secret before the cluster's pods
        raise _NoAnswer(str(unavailable)) from unavailable
    except Exception as error:  # connection, TLS, timeout, 5xx, 429: the next poll asks again
        raise _NoAnswer(f"the cluster did not answer ({type(error).__name__}: {error})") from error


def new_cluster_verdict(
    reader: RayServiceReader, rayservice: Mapping[str, Any], applications: Sequence[Mapping[str, Any]], spec: str
) -> Verdict:
    """upgradeStrategy NewCluster: READY with the cluster to read Serve on once KubeRay has promoted a RayCluster
    built from the applied spec (digest `spec`) and has no pending one (the steps:
    docs/changes.md#keeping-serving-through-a-cluster-shape-change-newcluster). A pending cluster's DEPLOY_FAILED
    fails the wait: it stays pending, never switched to."""
    if unobserved := _unobserved(rayservice):
        return unobserved
    active, pending = cluster_names(rayservice)
    beside = f"beside the active {active}, which keeps serving" if active else "(no active cluster yet)"
    if pending:
        details = _read(lambda: reader.serve_details(pending))
        verdict = serve_verdict(details, applications, NEW_CLUSTER_ROLLBACK_HINT) if details is not None else None
        if verdict is not None and verdict.state in (FAILED, UNHEALTHY):
            return Verdict(verdict.state, f"the new RayCluster {pending} {beside}: {verdict.message}", cluster=pending)
        progress = f": {verdict.message}" if verdict is not None and verdict.state == WAITING else ""
        return Verdict(
            WAITING,
            f"KubeRay is building RayCluster {pending} {beside}; it switches the serve Service to it once every "
            f"application there is RUNNING{progress}",
        )
    if not active:
        return Verdict(WAITING, "KubeRay has not created a RayCluster for this RayService yet")
    raycluster = _read(lambda: reader.raycluster(active))
    if raycluster is None or built_from(raycluster) != spec:
        earlier = f"the active RayCluster {active} was built from an earlier spec"
        return Verdict(WAITING, f"{earlier}; KubeRay has not started the new one")
    heads = cluster_pods(_read(reader.pods), active, "head")
    running = _annotations(heads[0]).get(CLUSTER_SPEC_ANNOTATION) if heads else None
    if running and running != spec:
        return Verdict(FAILED, _updated_in_place(active, str(heads[0]["metadata"]["name"]), rayservice))
    return Verdict(READY, f"RayCluster {active} is active, built from the applied spec", cluster=active)


def _updated_in_place(cluster: str, head: str, rayservice: Mapping[str, Any]) -> str:
    """A new operator updates another KubeRay version's active RayCluster in place, a new spec included when it
    arrived first, and builds no new cluster, while its running pods keep the spec they were made from
    (docs/kuberay-versions.md#moving-a-running-stack-from-140)."""
    namespace = (rayservice.get("metadata") or {}).get("namespace", "")
    return (
        f"RayCluster {cluster} took the applied spec in place, but its head pod {head} runs an earlier one: the new "
        "KubeRay operator updated the running cluster for its own version with the new spec (kuberayVersion and a "
        "cluster-spec change in one `pulumi up`) and built no new cluster, so its pods lack the change (Ray's token, "
        f"a new image). Restart them on it (`kubectl -n {namespace} delete pod -l {RAY_CLUSTER_LABEL}={cluster}`: an "
        "outage), or undo the cluster-spec change (keeping kuberayVersion), `pulumi up`, then make it again: two new "
        "clusters beside it. Move kuberayVersion alone first (docs/kuberay-versions.md)"
    )


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def current_verdict(
    reader: RayServiceReader, applications: Sequence[Mapping[str, Any]], cluster_spec: str = ""
) -> Verdict:
    """`cluster_spec`: the applied cluster spec's digest with upgradeStrategy NewCluster ("" with None)."""
    try:
        rayservice = _read(reader.rayservice)
        if rayservice is None:
            return Verdict(WAITING, "the RayService does not exist yet")
        if cluster_spec:
            cluster = new_cluster_verdict(reader, rayservice, applications, cluster_spec)
        else:
            cluster = cluster_verdict(rayservice)
        if cluster.state != READY:
            return cluster
        details = _read(lambda: reader.serve_details(cluster.cluster))
    except _NoAnswer as no_answer:
        return Verdict(WAITING, str(no_answer))
    if details is None:
        return silent_dashboard(reader, rayservice, cluster.cluster)
    verdict = serve_verdict(details, applications, NEW_CLUSTER_ROLLBACK_HINT if cluster_spec else ROLLBACK_HINT)
    return dataclasses.replace(verdict, cluster=cluster.cluster)


# KubeRay's pod labels (kuberay v1.4.0 common/pod.go labelPod; the Ray container first: utils.RayContainerIndex),
# restated because this module imports nothing of the stack; a test holds them equal to the stack's.
RAY_CLUSTER_LABEL, NODE_TYPE_LABEL = "ray.io/cluster", "ray.io/node-type"


@dataclass(frozen=True)
class HeadState:
    """A RayCluster's head pod as the API reports it: why its dashboard may not answer."""

    pod: str  # "" when the cluster has no head pod
    phase: str = ""
    ready: bool = False
    restarts: int = 0
    # The Ray container's last exit: "<reason> (exit <code>) at <finishedAt>", "" before its first restart.
    last_exit: str = ""
    last_exit_at: str = ""  # RFC 3339, as the API writes it: compared as text with another of its times
    waiting: str = ""  # why the container is not running now (ContainerCreating, CrashLoopBackOff), if it is not

    def describe(self, cluster: str) -> str:
        if not self.pod:
            return f"RayCluster {cluster} has no head pod (KubeRay creates it)"
        parts = [f"head pod {self.pod} {self.phase or 'Unknown'}{'' if self.ready else ', not ready'}"]
        if self.restarts:
            parts.append(f"restarted {self.restarts} time(s), last {self.last_exit}")
        if self.waiting:
            parts.append(f"now {self.waiting}")
        return ", ".join(parts)


def _pod_labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def cluster_pods(pods: Mapping[str, Any], cluster: str, node_type: str) -> list[Mapping[str, Any]]:
    """The pods of a PodList that belong to `cluster` as `node_type` ("head" or "worker")."""
    return [
        pod
        for pod in pods.get("items") or []
        if _pod_labels(pod).get(RAY_CLUSTER_LABEL) == cluster and _pod_labels(pod).get(NODE_TYPE_LABEL) == node_type
    ]


def ray_container_status(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return statuses[0] if statuses else {}


def head_state(pods: Mapping[str, Any], cluster: str) -> HeadState:
    heads = cluster_pods(pods, cluster, "head")
    if not heads:
        return HeadState(pod="")
    pod = heads[0]
    status = ray_container_status(pod)
    terminated = (status.get("lastState") or {}).get("terminated") or {}
    reason, code, at = (terminated.get(key, "?") for key in ("reason", "exitCode", "finishedAt"))
    last_exit = f"{reason} (exit {code}) at {at}" if terminated else ""
    return HeadState(
        pod=str(pod["metadata"]["name"]),
        phase=str((pod.get("status") or {}).get("phase") or ""),
        ready=bool(status.get("ready")),
        restarts=int(status.get("restartCount") or 0),
        last_exit=last_exit,
        last_exit_at=str(terminated.get("finishedAt") or ""),
        waiting=str(((status.get("state") or {}).get("waiting") or {}).get("reason") or ""),
    )


def has_gcs_fault_tolerance(rayservice: Mapping[str, Any]) -> bool:
    """KubeRay's GCS fault tolerance on an external store (spec.rayClusterConfig.gcsFaultToleranceOptions)."""
    return "gcsFaultToleranceOptions" in ((rayservice.get("spec") or {}).get("rayClusterConfig") or {})


def head_restart_consequence(fault_tolerant: bool) -> str:
    """What a head restart costs the GPU workers (docs/head-fault-tolerance.md, measured on CPU)."""
    if fault_tolerant:
        return (
            "with GCS fault tolerance the GPU workers keep serving through it, for up to their 600 s reconnect timeout"
        )
    return "without GCS fault tolerance every GPU worker restarts with it and loads the model again"


def silent_dashboard(reader: RayServiceReader, rayservice: Mapping[str, Any], cluster: str) -> Verdict:
    """The wait's word while the head's dashboard does not answer: what the head pod is doing, and, once it has
    restarted, what that costs this cluster."""
    try:
        head = head_state(reader.pods(), cluster)
    except Exception:  # the pods' read is only for the message
        return Verdict(WAITING, f"Ray's dashboard on RayCluster {cluster} does not answer yet")
    message = f"Ray's dashboard on RayCluster {cluster} does not answer yet: {head.describe(cluster)}"
    if head.restarts:
        message += f"; {head_restart_consequence(has_gcs_fault_tolerance(rayservice))}"
    return Verdict(WAITING, message)


class RolloutFailed(RuntimeError):
    """The applied config did not come up: Serve's own words, or what was still missing at the deadline."""


def _unplaced(reader: RayServiceReader) -> str:
    try:
        stuck = unschedulable_pods(reader.pods())
    except Exception:  # the deadline's message must not be lost to a failed extra read
        return ""
    return f"; pods the scheduler cannot place: {'; '.join(stuck)}" if stuck else ""


def await_rollout(
    reader: RayServiceReader,
    applications: Sequence[Mapping[str, Any]],
    timeout_s: float,
    poll_s: float = 10.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    report: Callable[[str], None] = lambda _message: None,
    cluster_spec: str = "",
) -> Verdict:
    """Polls until every application runs the applied config; raises RolloutFailed on DEPLOY_FAILED, on UNHEALTHY
    that lasts UNHEALTHY_GRACE_S, on a refused read, or at the deadline, naming what it last saw (and the pods
    that cannot be scheduled). `report` hears each new verdict: the progress `pulumi up` shows. `cluster_spec`: as for
    current_verdict."""
    deadline = clock() + timeout_s
    unhealthy_since: float | None = None
    last = ""
    while True:
        try:
            verdict = current_verdict(reader, applications, cluster_spec)
        except ClusterRefused as refused:
            raise RolloutFailed(f"the cluster refused the rollout's read: {refused}") from refused
        if verdict.message != last:
            report(verdict.message)
            last = verdict.message
        if verdict.state == READY:
            return verdict
        if verdict.state == FAILED:
            raise RolloutFailed(verdict.message)
        if verdict.state != UNHEALTHY:
            unhealthy_since = None
        elif unhealthy_since is None:
            unhealthy_since = clock()
        if unhealthy_since is not None and clock() - unhealthy_since >= UNHEALTHY_GRACE_S:
            raise RolloutFailed(f"unhealthy for {UNHEALTHY_GRACE_S / 60:g} minutes: {verdict.message}")
        if clock() >= deadline:
            raise RolloutFailed(
                f"not ready after {timeout_s / 60:g} minutes (serveReadyTimeoutMinutes): {verdict.message}"
                f"{_unplaced(reader)}. " + (NEW_CLUSTER_ROLLBACK_HINT if cluster_spec else ROLLBACK_HINT)
            )
        sleep(poll_s)
