"""KubeRayCrds: the release's RayService and RayCluster CRDs, applied by the stack itself before the operator's chart,
because Helm never upgrades a CRD; inputs are the files' digests, and delete leaves the CRDs
(docs/kuberay-versions.md#moving-a-running-stack-from-140)."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pulumi
import pulumi.dynamic

from infra import PROJECT_DIR
from infra.serving.rollout import api_request, changed_inputs

# The kinds the stack makes: the RayService, and the RayCluster KubeRay builds from it (their CRD names).
STACK_CRDS = ("rayservices.ray.io", "rayclusters.ray.io")
FIELD_MANAGER = "ray-llm-eks-crds"
APPLY_PATCH = "application/apply-patch+yaml"


def crd_file(version: str, crd: str) -> Path:
    """The vendored CRD `crd` (rayservices.ray.io) of KubeRay `version`: ray.io_rayservices.yaml."""
    plural, group = crd.split(".", 1)
    return PROJECT_DIR / "vendor" / f"kuberay-v{version}" / f"{group}_{plural}.yaml"


def vendored_crd_digests(version: str) -> dict[str, str]:
    """Each CRD of STACK_CRDS by the sha256 of its vendored file; none for a release not vendored (an unvalidated
    one: Helm's first install puts in its CRDs, as before)."""
    files = {crd: crd_file(version, crd) for crd in STACK_CRDS}
    if not all(path.is_file() for path in files.values()):
        return {}
    return {crd: hashlib.sha256(path.read_bytes()).hexdigest() for crd, path in files.items()}


class CrdApplier(Protocol):
    def apply(self, crd: str, document: str) -> None: ...


class KubernetesCrdApplier:
    """Server-side apply of a CRD through the Kubernetes API (https://kubernetes.io/docs/reference/using-api/
    server-side-apply/: a PATCH of Content-Type application/apply-patch+yaml, fieldManager required, force to take
    conflicting fields over)."""

    def __init__(self, kubeconfig: str) -> None:
        from kubernetes import config

        self._api = config.new_client_from_config_dict(json.loads(kubeconfig))

    def apply(self, crd: str, document: str) -> None:
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}"
        query = [("fieldManager", FIELD_MANAGER), ("force", "true")]
        response = api_request(self._api, "PATCH", path, query, APPLY_PATCH, document)
        if not 200 <= response.status <= 299:
            raise RuntimeError(f"server-side apply of CRD {crd}: HTTP {response.status} {response.data[:300]!r}")


# Stored by name in every deployed stack's state (its __provider, which destroy and refresh load): keep the name.
def kubernetes_applier(props: Mapping[str, Any]) -> CrdApplier:
    return KubernetesCrdApplier(props["kubeconfig"])


class KubeRayCrdsProvider(pulumi.dynamic.ResourceProvider):
    def __init__(self, applier: Callable[[Mapping[str, Any]], CrdApplier] = kubernetes_applier) -> None:
        super().__init__()
        self._applier = applier

    def _apply(self, props: Mapping[str, Any]) -> dict[str, Any]:
        applier = self._applier(props)
        for crd, digest in sorted(props["crds"].items()):
            document = crd_file(props["kuberayVersion"], crd).read_bytes()
            if hashlib.sha256(document).hexdigest() != digest:  # the program and its vendor/ must be one checkout
                raise RuntimeError(f"{crd_file(props['kuberayVersion'], crd)} is not the file the program read")
            print(f"KubeRayCrds: applying {crd} of KubeRay {props['kuberayVersion']}", file=sys.stderr, flush=True)
            applier.apply(crd, document.decode())
        return dict(props)

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(id_=f"kuberay-crds-{props['kuberayVersion']}", outs=self._apply(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        return pulumi.dynamic.DiffResult(
            changes=bool(changed_inputs(olds, news)), replaces=[], delete_before_replace=False
        )

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(outs=self._apply(news))


@dataclass(frozen=True)
class KubeRayCrdsArgs:
    kubeconfig: pulumi.Input[str]
    kuberay_version: str
    crds: Mapping[str, str]  # vendored_crd_digests


class KubeRayCrds(pulumi.dynamic.Resource, module="ray-llm-eks", name="KubeRayCrds"):
    """Make the operator's release depend on it: the new schema is in place before the new operator reads objects
    of it, and before the RayService (which depends on the release) is applied with a field only it keeps."""

    def __init__(self, name: str, args: KubeRayCrdsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {
            "kubeconfig": pulumi.Output.secret(args.kubeconfig),
            "kuberayVersion": args.kuberay_version,
            "crds": dict(args.crds),
        }
        super().__init__(
            KubeRayCrdsProvider(),
            name,
            props,
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])),
        )
