"""RayServiceDrain: `pulumi destroy` removes what KubeRay needs to delete a RayService's clusters once they are gone.

The RayService is deleted in the background, and KubeRay's finalizers (the GCS FT Redis cleanup; 1.7.0's on the
RayService) need the operator, the namespace, the password's Secret and the store until its RayClusters are gone. So
the RayService depends on this resource and it on all of those: its delete runs between them and waits for the
clusters (docs/head-fault-tolerance.md#kuberays-cleanup-and-pulumi-destroy-read-in-source). Create and update do
nothing."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pulumi
import pulumi.dynamic

from infra.serving.rollout import KubernetesReader, changed_inputs
from infra.serving.rollout_status import ClusterRefused

# The operator's cleanup Job runs for at most its activeDeadlineSeconds, after the head pod is gone; the pods' own
# grace periods come before it. Past this, something holds a finalizer that no one will remove.
DRAIN_TIMEOUT_SECONDS = 15 * 60
POLL_SECONDS = 5.0
# What names the objects it waits for: another value is another RayService's drain.
IDENTITY_INPUTS = ("namespace", "name")


class DrainReader(Protocol):
    def rayservice(self) -> Mapping[str, Any] | None: ...
    def rayclusters_of_rayservice(self) -> Mapping[str, Any]: ...


class DrainTimeout(RuntimeError):
    """Objects of the RayService were still there at the deadline."""


class DrainRefused(RuntimeError):
    """The API server refused the drain's read for good (401, 403, another 4xx): asking again cannot help."""


def _described(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    finalizers = metadata.get("finalizers") or []
    held = f" (finalizers: {', '.join(finalizers)})" if finalizers else ""
    return f"{obj.get('kind', 'object')} {metadata.get('name', '?')}{held}"


def remaining(reader: DrainReader) -> list[str]:
    """The RayService and its RayClusters that still exist, each with the finalizers holding it."""
    rayservice = reader.rayservice()
    found = [{"kind": "RayService", **rayservice}] if rayservice is not None else []
    found += [{"kind": "RayCluster", **cluster} for cluster in reader.rayclusters_of_rayservice().get("items") or []]
    return [_described(obj) for obj in found]


def await_drained(
    reader: DrainReader,
    timeout_s: float = DRAIN_TIMEOUT_SECONDS,
    poll_s: float = POLL_SECONDS,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    report: Callable[[str], None] = lambda _message: None,
) -> None:
    """Returns once nothing of the RayService is left; raises DrainTimeout at the deadline naming what is. A read that
    fails (the API busy, a connection reset) is asked again at the next poll; a refused one (the kubeconfig's identity
    without access or RBAC: infra.serving.rollout REFUSED) raises DrainRefused at once, naming the refusal."""
    deadline = clock() + timeout_s
    last = ""
    while True:
        try:
            left = remaining(reader)
        except ClusterRefused as refused:
            raise DrainRefused(
                f"the cluster refused the drain's read ({refused}): asking again cannot help. The identity running "
                "`pulumi destroy` (through the kubeconfig the stack keeps) needs read access to RayServices and "
                "RayClusters in the serving namespace (an EKS access entry, RBAC); grant it, then run `pulumi destroy` "
                "again"
            ) from refused
        except Exception as error:  # the next poll asks again; the deadline still holds
            left = [f"no answer from the cluster ({type(error).__name__}: {error})"]
        if not left:
            return
        message = "waiting for KubeRay to delete " + "; ".join(left)
        if message != last:
            report(message)
            last = message
        if clock() >= deadline:
            raise DrainTimeout(
                f"after {timeout_s / 60:g} minutes these are still there: {'; '.join(left)}. KubeRay's operator "
                "removes its finalizers (the GCS store's cleanup Job runs first, kubectl -n <namespace> get jobs); "
                "once they are gone run `pulumi destroy` again"
            )
        sleep(poll_s)


def drain_reader(props: Mapping[str, Any]) -> KubernetesReader:
    return KubernetesReader(props["kubeconfig"], props["namespace"], props["name"], pod_selector="")


class RayServiceDrainProvider(pulumi.dynamic.ResourceProvider):
    def __init__(
        self, reader: Callable[[Mapping[str, Any]], DrainReader] = drain_reader, poll_seconds: float = POLL_SECONDS
    ) -> None:
        super().__init__()
        self._reader = reader
        self._poll_seconds = poll_seconds

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(id_=f"{props['namespace']}/{props['name']}", outs=props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        changed = changed_inputs(olds, news)
        # Another RayService is another drain, the old one waiting for the old RayService on its way out; anything
        # else is updated in place (a replaced drain of the same RayService would wait for one that stays).
        replaces = [key for key in changed if key in IDENTITY_INPUTS]
        return pulumi.dynamic.DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=False)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(outs=news)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        await_drained(
            self._reader(props),
            float(props.get("timeoutSeconds", DRAIN_TIMEOUT_SECONDS)),
            poll_s=self._poll_seconds,
            report=lambda message: print(f"RayServiceDrain: {message}", file=sys.stderr, flush=True),
        )


@dataclass(frozen=True)
class RayServiceDrainArgs:
    kubeconfig: pulumi.Input[str]
    namespace: str
    name: str  # the RayService


class RayServiceDrain(pulumi.dynamic.Resource, module="ray-llm-eks", name="RayServiceDrain"):
    """Make the RayService depend on it, and it on what deleting the RayService's clusters needs."""

    def __init__(self, name: str, args: RayServiceDrainArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {
            # Kept in the state (a secret) for the delete, which sees only what create stored.
            "kubeconfig": pulumi.Output.secret(args.kubeconfig),
            "namespace": args.namespace,
            "name": args.name,
            "timeoutSeconds": DRAIN_TIMEOUT_SECONDS,
        }
        super().__init__(
            RayServiceDrainProvider(),
            name,
            props,
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])),
        )
