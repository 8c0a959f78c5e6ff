"""ServeRollout: `pulumi up` returns once the live RayService runs the config just applied, and fails otherwise.

A Pulumi dynamic resource after the RayService whose create and update poll the cluster, from the deploying machine
through a port-forward to the head's dashboard, until `infra.serving.rollout_status` gives its verdict; it rolls a
failed serve config back itself, and its inputs group the settings by what changing them costs
(docs/changes.md#changing-a-running-stack, docs/changes.md#rolling-back). The token goes in `x-ray-authorization`
only, never in a message (docs/ray-token-auth.md)."""

from __future__ import annotations

import hashlib
import http.client
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.dynamic
import yaml

from infra.kube.pod_labels import RAY_NODE_TYPE_LABEL
from infra.serving.dashboard_forward import forwarded_get
from infra.serving.rayservice import DASHBOARD_PORT, RAY_CLUSTER_LABEL, RAY_ORIGINATED_FROM_CR_NAME_LABEL
from infra.serving.rollout_status import (
    RAY_TOKEN_HEADER,
    ClusterRefused,
    RolloutFailed,
    await_rollout,
    ray_token,
    ray_token_secret,
)

# Never compared: the credential (it rotates) and the dynamic provider's own serialized code.
UNCOMPARED_INPUTS = frozenset({"kubeconfig", "__provider"})
# What the wait found, not what it was asked: never compared either.
OUTPUTS = frozenset({"verdict", "cluster"})
POLL_SECONDS = 10.0
SERVE_APPLICATIONS = "/api/serve/applications/"
# Not an error while the cluster comes up: no such object yet, or the dashboard not answering.
NOT_THERE_YET = (404, 502, 503)
# A read refused for good: the identity's credentials or RBAC.
REFUSED = (400, 401, 403, 405)
REQUEST_TIMEOUT_SECONDS = 30
# The rollback's own marks on the RayService: the digest of the serve config it took back out (serve_config_digest),
# and Serve's words on why. Pulumi's apply leaves annotations it does not set, so the next `pulumi up` can tell that
# the config it would apply again is one that failed and was rolled back.
ROLLED_BACK_ANNOTATION = "ray-llm-eks/rolled-back-serve-config-sha256"
ROLLBACK_CAUSE_ANNOTATION = "ray-llm-eks/rolled-back-because"
# The field manager of the rollback's patch (Kubernetes server-side field management): Pulumi's next apply of
# serveConfigV2 takes the field back with the RayService's pulumi.com/patchForce (infra/serving/rayservice.py).
ROLLBACK_FIELD_MANAGER = "ray-llm-eks-rollout"
CAUSE_CHARS = 1000


@dataclass(frozen=True)
class ServeRolloutArgs:
    """What to wait for and how long (why each input, docs/changes.md#changing-a-running-stack).

    pod_selector: the RayService's pods, read only to name at the deadline those that cannot be scheduled.
    applications: `serveConfigV2`'s `applications`, as submitted. spec_sha256: the whole spec's digest, so any
    change waits again. rayservice_generation: metadata.generation as Pulumi last wrote it (it moves with every spec
    change Pulumi makes, a rollback included, not with KubeRay's status writes, so `pulumi refresh` leaves it).
    rayservice_uid: metadata.uid, new on every create, so a rollback by replacement to a config last created at
    generation 1 still waits. changes: setting -> value, grouped by what a change does. cluster_spec_sha256: with
    NewCluster, the digest the applied cluster spec carries (CLUSTER_SPEC_ANNOTATION); the wait ends once a
    RayCluster built from it is active; "" with None.
    """

    kubeconfig: pulumi.Input[str]
    namespace: str
    name: str
    pod_selector: str
    applications: Sequence[Mapping[str, Any]]
    spec_sha256: str
    timeout_seconds: int
    changes: Mapping[str, Mapping[str, Any]]
    rayservice_generation: pulumi.Input[int]
    rayservice_uid: pulumi.Input[str]
    cluster_spec_sha256: str


def api_request(
    api: Any, method: str, path: str, query: list[tuple[str, str]], content_type: str = "", body: Any = None
) -> Any:
    """One request to the Kubernetes API, its answer read whole; the caller judges the status."""
    method, url, headers, serialized, _ = api.param_serialize(
        method,
        path,
        query_params=query,
        header_params={"Accept": "application/json", **({"Content-Type": content_type} if content_type else {})},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(
        method, url, header_params=headers, body=serialized, _request_timeout=REQUEST_TIMEOUT_SECONDS
    )
    response.read()
    return response


class KubernetesReader:
    """The reads `infra.serving.rollout_status` makes, as raw JSON from the Kubernetes API, paths written out. The
    client renews the exec token itself once it expires (kubernetes `config/kube_config.py` `_set_config`,
    refresh_api_key_hook), so a 45-minute wait keeps one client; each request has a timeout."""

    def __init__(self, kubeconfig: str, namespace: str, name: str, pod_selector: str) -> None:
        from kubernetes import config

        self._api = config.new_client_from_config_dict(json.loads(kubeconfig))
        self.namespace, self.name, self.pod_selector = namespace, name, pod_selector
        self._rayservice_path = f"/apis/ray.io/v1/namespaces/{namespace}/rayservices/{name}"

    def _get(self, path: str, query: list[tuple[str, str]] | None = None) -> Mapping[str, Any] | None:
        response = api_request(self._api, "GET", path, query or [])
        return _answer(f"GET {path}", response.status, response.data)

    def rayservice(self) -> Mapping[str, Any] | None:
        return self._get(self._rayservice_path)

    def roll_back(self, serve_config_v2: str, annotations: Mapping[str, str]) -> None:
        """Writes `serve_config_v2` into the RayService, with `annotations`: a JSON merge patch of those fields alone,
        through the object, not Ray's dashboard, whose config KubeRay would replace at its next start
        (docs/changes.md#rolling-back)."""
        body = {"metadata": {"annotations": dict(annotations)}, "spec": {"serveConfigV2": serve_config_v2}}
        query = [("fieldManager", ROLLBACK_FIELD_MANAGER)]
        response = api_request(self._api, "PATCH", self._rayservice_path, query, "application/merge-patch+json", body)
        if _answer(f"PATCH {self._rayservice_path}", response.status, response.data) is None:
            raise ConnectionError(f"PATCH {self._rayservice_path}: HTTP {response.status}")

    def serve_details(self, cluster: str) -> Mapping[str, Any] | None:
        """Serve's applications as the cluster's dashboard reports them, read on the running head pod through a
        port-forward (infra/serving/dashboard_forward.py says why not the service proxy); None while there is no
        running head or its dashboard does not answer yet."""
        from kubernetes.client.exceptions import ApiException

        headers = self.dashboard_headers(cluster)
        head = self.head_pod(cluster) if headers is not None else None
        if headers is None or head is None:
            return None
        try:
            status, data = self.forwarded_get(head, DASHBOARD_PORT, SERVE_APPLICATIONS, headers)
        except ApiException as error:
            # The API's websocket refused: RBAC (websocket-client's "Handshake status 403 Forbidden") fails the
            # rollout, anything else (the pod gone, the API busy) is asked again.
            if any(f"Handshake status {code}" in str(error.reason) for code in (401, 403)):
                raise ClusterRefused(f"port-forward to pod {head}: {error.reason}") from error
            return None
        except (OSError, http.client.HTTPException):
            return None  # nothing listens on the port yet: the forwarded connection is closed
        return _answer(f"GET {SERVE_APPLICATIONS} on pod {head}:{DASHBOARD_PORT}", status, data)

    def head_pod(self, cluster: str) -> str | None:
        """The cluster's running head pod: KubeRay labels it ray.io/cluster=<cluster>, ray.io/node-type=head."""
        selector = f"{RAY_CLUSTER_LABEL}={cluster},{RAY_NODE_TYPE_LABEL}=head"
        pods = self._get(f"/api/v1/namespaces/{self.namespace}/pods", [("labelSelector", selector)]) or {}
        running = [pod for pod in pods.get("items", []) if (pod.get("status") or {}).get("phase") == "Running"]
        return str(running[0]["metadata"]["name"]) if running else None

    def forwarded_get(self, pod: str, port: int, path: str, headers: Mapping[str, str]) -> tuple[int, bytes]:
        from kubernetes import client, stream

        connect = client.CoreV1Api(self._api).connect_get_namespaced_pod_portforward
        return forwarded_get(
            stream.portforward, connect, self.namespace, pod, port, path, headers, REQUEST_TIMEOUT_SECONDS
        )

    def dashboard_headers(self, cluster: str) -> dict[str, str] | None:
        """What this cluster's dashboard needs beside the API server's own credential: its Ray token when the
        RayCluster runs with token auth (read from its Secret each time: a replaced cluster has a new one), nothing
        without; None while the RayCluster does not exist. Raises TokenUnavailable before KubeRay made the Secret."""
        raycluster = self.raycluster(cluster)
        if raycluster is None:
            return None
        secret = ray_token_secret(raycluster)
        if secret is None:
            return {}
        found = self._get(f"/api/v1/namespaces/{self.namespace}/secrets/{secret}")
        return {RAY_TOKEN_HEADER: f"Bearer {ray_token(found, secret, cluster)}"}

    def raycluster(self, cluster: str) -> Mapping[str, Any] | None:
        return self._get(f"/apis/ray.io/v1/namespaces/{self.namespace}/rayclusters/{cluster}")

    def pods(self) -> Mapping[str, Any]:
        return self._get(f"/api/v1/namespaces/{self.namespace}/pods", [("labelSelector", self.pod_selector)]) or {}

    def rayclusters_of_rayservice(self) -> Mapping[str, Any]:
        """The RayClusters KubeRay made for the RayService: it labels each ray.io/originated-from-cr-name=<name>
        (kuberay v1.4.0 and v1.7.0 rayservice_controller.go constructRayClusterForRayService, utils/constant.go)."""
        selector = f"{RAY_ORIGINATED_FROM_CR_NAME_LABEL}={self.name}"
        path = f"/apis/ray.io/v1/namespaces/{self.namespace}/rayclusters"
        return self._get(path, [("labelSelector", selector)]) or {}


def _answer(what: str, status: int, data: bytes) -> Mapping[str, Any] | None:
    if status in NOT_THERE_YET:
        return None
    answer = f"{what}: HTTP {status} {data[:300]!r}"
    if status in REFUSED:
        raise ClusterRefused(answer)
    if not 200 <= status <= 299:
        raise ConnectionError(answer)  # 5xx, 429: ask again at the next poll
    document: Mapping[str, Any] = json.loads(data)
    return document


Reader = Callable[[Mapping[str, Any]], Any]


def changed_inputs(
    olds: Mapping[str, Any], news: Mapping[str, Any], ignored: frozenset[str] = frozenset()
) -> list[str]:
    """A dynamic resource's inputs that differ, but for UNCOMPARED_INPUTS and `ignored`."""
    compared = (set(olds) | set(news)) - UNCOMPARED_INPUTS - ignored
    return sorted(key for key in compared if olds.get(key) != news.get(key))


def plain_numbers(value: Any) -> Any:
    """`value` with each whole float an int: Pulumi hands a dynamic provider its numbers as floats (protobuf's Struct),
    and the engines take what the config says (vLLM's max_model_len is an int)."""
    if isinstance(value, Mapping):
        return {key: plain_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain_numbers(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def serve_config_digest(applications: Sequence[Mapping[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(plain_numbers(list(applications)), sort_keys=True).encode()).hexdigest()


def rolls_back_in_place(olds: Mapping[str, Any], news: Mapping[str, Any]) -> bool:
    """Whether the cluster that ran the last config still runs it beside the failed one, so putting it back restores
    service without a new cluster: the same RayService (not replaced, its uid), the same cluster spec (no new
    cluster: with newCluster a failed one is pending and the active one serves), a config that ran (a verdict
    stored) and differs from the applied one."""
    return bool(
        olds.get("verdict")
        and olds.get("rayserviceUid")
        and olds.get("rayserviceUid") == news.get("rayserviceUid")
        and olds.get("clusterSpecSha256", "") == news.get("clusterSpecSha256", "")
        and plain_numbers(olds.get("applications")) != plain_numbers(news.get("applications"))
    )


def _read_quietly(read: Callable[[], Mapping[str, Any] | None]) -> Mapping[str, Any] | None:
    """A read before the wait, for a check the wait does not need: a refusal fails, anything else is left to the
    wait, which asks again."""
    try:
        return read()
    except ClusterRefused:
        raise
    except Exception:
        return None


def refuse_rolled_back(rayservice: Mapping[str, Any] | None, applications: Sequence[Mapping[str, Any]]) -> None:
    """Fails at once where the config to apply is one a rollback took out and the RayService still runs the one put
    back: an unchanged `pulumi up` after a rollback (Pulumi's state holds the failed config as applied, so it sends
    nothing and there is nothing to wait for). `pulumi up --refresh` reads the live object and sends it again."""
    if rayservice is None:
        return
    annotations = (rayservice.get("metadata") or {}).get("annotations") or {}
    if annotations.get(ROLLED_BACK_ANNOTATION) != serve_config_digest(applications):
        return
    live = yaml.safe_load((rayservice.get("spec") or {}).get("serveConfigV2") or "{}") or {}
    if plain_numbers(live.get("applications")) == plain_numbers(list(applications)):
        return
    raise RolloutFailed(
        "this serve config failed before and the rollout put back the last config that ran, which the RayService "
        f"still runs; the failure: {annotations.get(ROLLBACK_CAUSE_ANNOTATION, '(not recorded)')}. Fix the config, or "
        "set the previous values, and run `pulumi up`; `pulumi up --refresh` tries this config again"
    )


def kubernetes_reader(props: Mapping[str, Any]) -> KubernetesReader:
    return KubernetesReader(props["kubeconfig"], props["namespace"], props["name"], props["podSelector"])


def report_to_stderr(message: str) -> None:
    print(f"ServeRollout: {message}", file=sys.stderr, flush=True)


class ServeRolloutProvider(pulumi.dynamic.ResourceProvider):
    """Create and update wait for the rollout; delete has nothing to undo."""

    def __init__(self, reader: Reader = kubernetes_reader, poll_seconds: float = POLL_SECONDS) -> None:
        super().__init__()
        self._reader = reader
        self._poll_seconds = poll_seconds

    def _wait(self, props: dict[str, Any], reader: Any) -> dict[str, Any]:
        verdict = await_rollout(
            reader,
            props["applications"],
            float(props["timeoutSeconds"]),
            poll_s=self._poll_seconds,
            report=report_to_stderr,
            cluster_spec=props.get("clusterSpecSha256", ""),
        )
        outs = {key: value for key, value in props.items() if key != "kubeconfig"}
        # `cluster`: the RayCluster whose apps run the applied config; the stack's NLB selects it with newCluster.
        return {**outs, "verdict": verdict.message, "cluster": verdict.cluster}

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        outs = self._wait(props, self._reader(props))
        return pulumi.dynamic.CreateResult(id_=f"{props['namespace']}/{props['name']}", outs=outs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        """Waits for the applied config; where it fails on the cluster that ran the last config (its state: Pulumi
        keeps a resource's last stored outputs when an update fails, so `olds` is always the last config that ran),
        puts that config back, waits for it and fails naming the cause."""
        reader = self._reader(news)
        refuse_rolled_back(_read_quietly(reader.rayservice), news["applications"])
        try:
            return pulumi.dynamic.UpdateResult(outs=self._wait(news, reader))
        except RolloutFailed as failed:
            if not rolls_back_in_place(olds, news):
                raise
            raise self._roll_back(reader, olds, news, failed) from failed

    def _roll_back(
        self, reader: Any, olds: dict[str, Any], news: dict[str, Any], failed: RolloutFailed
    ) -> RolloutFailed:
        previous = plain_numbers(olds["applications"])
        cause = str(failed)
        report_to_stderr(f"the applied serve config failed; putting back the last config that ran: {cause}")
        try:
            reader.roll_back(
                yaml.safe_dump({"applications": previous}, sort_keys=False),
                {
                    ROLLED_BACK_ANNOTATION: serve_config_digest(news["applications"]),
                    ROLLBACK_CAUSE_ANNOTATION: cause[-CAUSE_CHARS:],
                },
            )
        except Exception as error:  # the cause must reach the operator with the rollback's own failure
            return RolloutFailed(
                f"{cause}. The rollout could not put back the last config that ran ({type(error).__name__}: {error}): "
                "nothing may be serving. Set the previous values and run `pulumi up`"
            )
        try:
            back = self._wait({**olds, "applications": previous, "timeoutSeconds": news["timeoutSeconds"]}, reader)
        except RolloutFailed as also:
            return RolloutFailed(f"{cause}. The rollout put back the last config that ran, and it failed too: {also}")
        return RolloutFailed(
            f"{cause}. The rollout put back the last config that ran, which serves again ({back['verdict']}); the "
            "failed one stays recorded on the RayService. Fix the config, or set the previous values, and run "
            "`pulumi up`"
        )

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        # Never a replacement: the waiting is all an update does.
        changed = changed_inputs(olds, news, OUTPUTS)
        return pulumi.dynamic.DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)


class ServeRollout(pulumi.dynamic.Resource, module="ray-llm-eks", name="ServeRollout"):
    """Waits, on every `pulumi up` that changes the RayService, for the live app to run what was applied."""

    verdict: pulumi.Output[str]
    cluster: pulumi.Output[str]

    def __init__(self, name: str, args: ServeRolloutArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {
            "kubeconfig": pulumi.Output.secret(args.kubeconfig),
            "namespace": args.namespace,
            "name": args.name,
            "podSelector": args.pod_selector,
            "applications": [dict(app) for app in args.applications],
            "specSha256": args.spec_sha256,
            "rayserviceGeneration": args.rayservice_generation,
            "rayserviceUid": args.rayservice_uid,
            "timeoutSeconds": args.timeout_seconds,
            "changes": {effect: dict(settings) for effect, settings in args.changes.items()},
            "verdict": None,
            "cluster": None,
        }
        # Only with NewCluster: a stack on replace keeps the inputs it stored, so its next `pulumi up` waits for
        # nothing.
        if args.cluster_spec_sha256:
            props["clusterSpecSha256"] = args.cluster_spec_sha256
        super().__init__(ServeRolloutProvider(), name, props, opts)
