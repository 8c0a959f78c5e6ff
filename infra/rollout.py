"""ServeRollout: `pulumi up` returns once the live RayService runs the config just applied, and fails otherwise.

A small waiting resource (a Pulumi dynamic resource) after the RayService: its create and update poll the
cluster until `infra.rollout_status` gives its verdict, so a `pulumi up` that changes the serve config waits
for the new engines, fails with Serve's own message on DEPLOY_FAILED/UNHEALTHY, and fails at
`serveReadyTimeoutMinutes` naming what was still missing. Its inputs carry the stack settings that shape the
RayService, grouped by what changing them does (`infra.changes`), so `pulumi preview --diff` shows which
settings change and what that costs a running stack.

Runs on the deploying machine, through the cluster's kubeconfig (the `aws eks get-token` exec the Kubernetes
provider uses too) and the Kubernetes API server's service proxy to Ray's dashboard, the path KubeRay's own
dashboard client takes (`ray-operator/controllers/ray/utils/dashboard_httpclient.go`, `InitClient`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.dynamic

# Never compared: the credential (it rotates) and the dynamic provider's own serialized code.
UNCOMPARED_INPUTS = frozenset({"kubeconfig", "__provider"})
POLL_SECONDS = 10.0


@dataclass(frozen=True)
class ServeRolloutArgs:
    """What to wait for and how long.

    namespace, name: the RayService. head_service: KubeRay's `<name>-head-svc`, in front of the active
    cluster's head (`utils.GenerateHeadServiceName`). pod_selector: a label selector of the RayService's pods,
    read only to say at the deadline which of them cannot be scheduled. applications: `serveConfigV2`'s
    `applications`, as submitted. spec_sha256: a digest of the whole RayService spec, so any change to it waits
    again. changes: setting -> value, grouped by what a change does (shown by `pulumi preview --diff`).
    """

    kubeconfig: pulumi.Input[str]
    namespace: str
    name: str
    head_service: str
    pod_selector: str
    applications: Sequence[Mapping[str, Any]]
    spec_sha256: str
    timeout_seconds: int
    changes: Mapping[str, Mapping[str, Any]]


class KubernetesReader:
    """The reads `infra.rollout_status` makes, as raw JSON through the Kubernetes API."""

    def __init__(self, kubeconfig: str, namespace: str, name: str, head_service: str, pod_selector: str) -> None:
        from kubernetes import client, config

        self._api = config.new_client_from_config_dict(json.loads(kubeconfig))
        self._core = client.CoreV1Api(self._api)
        self._custom = client.CustomObjectsApi(self._api)
        self._client = client
        self.namespace, self.name, self.head_service, self.pod_selector = namespace, name, head_service, pod_selector

    def _json(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        # Unparsed bodies: the client's own deserialisation turns a proxied JSON body into a Python repr.
        response = call(*args, _preload_content=False, **kwargs)
        return json.loads(response.data)

    def _absent(self, error: Exception) -> bool:
        return isinstance(error, self._client.ApiException) and error.status in (404, 502, 503)

    def rayservice(self) -> Mapping[str, Any] | None:
        try:
            return self._json(
                self._custom.get_namespaced_custom_object, "ray.io", "v1", self.namespace, "rayservices", self.name
            )
        except Exception as error:
            if self._absent(error):
                return None
            raise

    def serve_details(self) -> Mapping[str, Any] | None:
        try:
            return self._json(
                self._core.connect_get_namespaced_service_proxy_with_path,
                f"{self.head_service}:dashboard",
                self.namespace,
                "api/serve/applications/",
            )
        except Exception as error:
            if self._absent(error):
                return None
            raise

    def pods(self) -> Mapping[str, Any]:
        return self._json(self._core.list_namespaced_pod, self.namespace, label_selector=self.pod_selector)


Reader = Callable[[Mapping[str, Any]], Any]


def kubernetes_reader(props: Mapping[str, Any]) -> KubernetesReader:
    return KubernetesReader(
        props["kubeconfig"], props["namespace"], props["name"], props["headService"], props["podSelector"]
    )


class ServeRolloutProvider(pulumi.dynamic.ResourceProvider):
    """Create and update wait for the rollout; delete has nothing to undo."""

    def __init__(self, reader: Reader = kubernetes_reader, poll_seconds: float = POLL_SECONDS) -> None:
        super().__init__()
        self._reader = reader
        self._poll_seconds = poll_seconds

    def _wait(self, props: dict[str, Any]) -> dict[str, Any]:
        from infra.rollout_status import await_rollout

        verdict = await_rollout(
            self._reader(props), props["applications"], float(props["timeoutSeconds"]), poll_s=self._poll_seconds
        )
        outs = {key: value for key, value in props.items() if key != "kubeconfig"}
        outs["verdict"] = verdict.message
        return outs

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        outs = self._wait(props)
        return pulumi.dynamic.CreateResult(id_=f"{props['namespace']}/{props['name']}", outs=outs)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(outs=self._wait(news))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        changed = sorted(
            key for key in (set(olds) | set(news)) - UNCOMPARED_INPUTS - {"verdict"} if olds.get(key) != news.get(key)
        )
        # Never a replacement: the waiting is all an update does.
        return pulumi.dynamic.DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None


class ServeRollout(pulumi.dynamic.Resource, module="ray-llm-eks", name="ServeRollout"):
    """Waits, on every `pulumi up` that changes the RayService, for the live app to run what was applied."""

    verdict: pulumi.Output[str]

    def __init__(self, name: str, args: ServeRolloutArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {
            "kubeconfig": pulumi.Output.secret(args.kubeconfig),
            "namespace": args.namespace,
            "name": args.name,
            "headService": args.head_service,
            "podSelector": args.pod_selector,
            "applications": [dict(app) for app in args.applications],
            "specSha256": args.spec_sha256,
            "timeoutSeconds": args.timeout_seconds,
            "changes": {effect: dict(settings) for effect, settings in args.changes.items()},
            "verdict": None,
        }
        super().__init__(ServeRolloutProvider(), name, props, opts)
