"""ServeRollout: `pulumi up` returns once the live RayService runs the config just applied, and fails otherwise.

A small waiting resource (a Pulumi dynamic resource) after the RayService: its create and update poll the
cluster until `infra.serving.rollout_status` gives its verdict, so a `pulumi up` that changes the serve config waits
for the new engines, fails with Serve's own message on DEPLOY_FAILED (on UNHEALTHY that lasts), and fails at
`serveReadyTimeoutMinutes` naming what was still missing. Its inputs carry the stack settings that shape the
RayService, grouped by what changing them does (`infra.settings.changes`), so `pulumi preview --diff` shows which
settings change and what that costs a running stack.

Runs on the deploying machine, through the cluster's kubeconfig (the `aws eks get-token` exec the Kubernetes
provider uses too) and a port-forward to the Ray dashboard on the RayCluster's running head pod
(infra/serving/dashboard_forward.py: the serving namespace's NetworkPolicies let no one but the operator reach the
dashboard over the network). A RayCluster with Ray's token
authentication (`authOptions.mode: token`, KubeRay 1.7.0) gets its token from its Secret in `x-ray-authorization`,
as KubeRay 1.7.0's client sends it (`utils/dashboardclient/dashboard_httpclient.go`; docs/ray-token-auth.md); the
token goes in that header only, never in a message. Each new verdict is written to stderr, which the engine shows
for a dynamic provider (`pulumi/log.py` falls back to it there).
"""

from __future__ import annotations

import http.client
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.dynamic

from infra.serving.dashboard_forward import forwarded_get
from infra.serving.rayservice import DASHBOARD_PORT, RAY_CLUSTER_LABEL, RAY_ORIGINATED_FROM_CR_NAME_LABEL
from infra.serving.rollout_status import ClusterRefused, await_rollout, ray_token, ray_token_headers, ray_token_secret
from infra.settings.pod_labels import RAY_NODE_TYPE_LABEL

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


@dataclass(frozen=True)
class ServeRolloutArgs:
    """What to wait for and how long.

    namespace, name: the RayService. pod_selector: a label selector of the RayService's pods,
    read only to say at the deadline which of them cannot be scheduled. applications: `serveConfigV2`'s
    `applications`, as submitted. spec_sha256: a digest of the whole RayService spec, so any change to it waits
    again. rayservice_generation: the RayService's metadata.generation as Pulumi last wrote it, which moves with
    every spec change Pulumi makes (a rollback to the config the rollout last saw included, so it waits then
    too), and not with KubeRay's status writes, so a `pulumi refresh` leaves it. rayservice_uid: the RayService's
    metadata.uid, which the API server sets anew on every create: a replaced RayService starts again at generation 1,
    so after a failed replacement a rollback (another replacement) to a config last created at generation 1 would
    give the rollout the very inputs it stored, and nothing would wait; the uid differs, so it waits. A stack
    deployed before this input holds none: its next `pulumi up` waits once.
    changes: setting -> value, grouped by what a change does (shown by `pulumi preview --diff`).
    cluster_spec_sha256: with upgradeStrategy NewCluster, the digest the applied cluster spec carries
    (infra/serving/rayservice.py CLUSTER_SPEC_ANNOTATION): the wait ends only once a RayCluster built from it is
    active, the previous one having served meanwhile; "" with None.
    """

    kubeconfig: pulumi.Input[str]
    namespace: str
    name: str
    pod_selector: str
    applications: Sequence[Mapping[str, Any]]
    spec_sha256: str
    timeout_seconds: int
    changes: Mapping[str, Mapping[str, Any]]
    rayservice_generation: pulumi.Input[int] = 0
    rayservice_uid: pulumi.Input[str] = ""
    cluster_spec_sha256: str = ""


class KubernetesReader:
    """The reads `infra.serving.rollout_status` makes, as raw JSON from the Kubernetes API.

    Paths are written out, not built by the generated client, which the reads need no more of. The exec
    token (`aws eks get-token`, valid 15 minutes, with its expirationTimestamp) is renewed by the client itself
    before a request once it has expired (kubernetes `config/kube_config.py` `_set_config`,
    refresh_api_key_hook), so a wait of 45 minutes keeps one client; each request has a timeout, so a hung read
    cannot outlast the deadline."""

    def __init__(self, kubeconfig: str, namespace: str, name: str, pod_selector: str) -> None:
        from kubernetes import config

        self._api = config.new_client_from_config_dict(json.loads(kubeconfig))
        self.namespace, self.name, self.pod_selector = namespace, name, pod_selector

    def _get(self, path: str, query: list[tuple[str, str]] | None = None) -> Mapping[str, Any] | None:
        method, url, headers, _, _ = self._api.param_serialize(
            "GET",
            path,
            query_params=query or [],
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        response = self._api.call_api(method, url, header_params=headers, _request_timeout=REQUEST_TIMEOUT_SECONDS)
        response.read()
        return _answer(f"GET {path}", response.status, response.data)

    def rayservice(self) -> Mapping[str, Any] | None:
        return self._get(f"/apis/ray.io/v1/namespaces/{self.namespace}/rayservices/{self.name}")

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
        return ray_token_headers(ray_token(found, secret, cluster))

    def raycluster(self, cluster: str) -> Mapping[str, Any] | None:
        return self._get(f"/apis/ray.io/v1/namespaces/{self.namespace}/rayclusters/{cluster}")

    def pods(self) -> Mapping[str, Any]:
        return self._get(f"/api/v1/namespaces/{self.namespace}/pods", [("labelSelector", self.pod_selector)]) or {}

    def rayclusters_of_rayservice(self) -> Mapping[str, Any]:
        """The RayClusters KubeRay made for the RayService: it labels each ray.io/originated-from-cr-name=<name>
        (kuberay v1.4.0 rayservice_controller.go constructRayClusterForRayService, utils/constant.go)."""
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

    def _wait(self, props: dict[str, Any]) -> dict[str, Any]:
        verdict = await_rollout(
            self._reader(props),
            props["applications"],
            float(props["timeoutSeconds"]),
            poll_s=self._poll_seconds,
            report=report_to_stderr,
            cluster_spec=props.get("clusterSpecSha256", ""),
        )
        outs = {key: value for key, value in props.items() if key != "kubeconfig"}
        outs["verdict"] = verdict.message
        # The RayCluster whose apps run the applied config: the stack's NLB selects it with newCluster.
        outs["cluster"] = verdict.cluster
        return outs

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        outs = self._wait(props)
        return pulumi.dynamic.CreateResult(id_=f"{props['namespace']}/{props['name']}", outs=outs)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(outs=self._wait(news))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        changed = sorted(
            key for key in (set(olds) | set(news)) - UNCOMPARED_INPUTS - OUTPUTS if olds.get(key) != news.get(key)
        )
        # Never a replacement: the waiting is all an update does.
        return pulumi.dynamic.DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None


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
