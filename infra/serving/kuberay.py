"""The KubeRay operator: it turns the RayService into a Ray cluster and wires its Serve endpoint."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from infra import PROJECT_DIR
from infra.cluster.eks import Cluster
from infra.cluster.helm import Chart, pinned_release, pod_security_patch
from infra.components import Children, raise_input_errors, unmatched
from infra.settings.footprint import KUBERAY_OPERATOR_RESOURCES
from infra.settings.pod_security import OPERATOR_LEVEL
from infra.settings.scheduling import OPERATOR_NAMESPACE
from infra.settings.table import SEMVER_PATTERN

KUBERAY_REPO = "https://ray-project.github.io/kuberay-helm/"
# The CRDs of the kinds the stack makes: the RayService, and the RayCluster KubeRay builds from it (the vendored copies
# are the chart's crds/ at the tag: vendor/kuberay-v<version>/SOURCE.txt).
STACK_CRD_FILES = ("ray.io_rayservices.yaml", "ray.io_rayclusters.yaml")
# A server-side apply that takes the fields over from the manager holding them (Helm's first install), as `kubectl
# apply --server-side --force-conflicts` does (https://www.pulumi.com/registry/packages/kubernetes/how-to-guides/
# managing-resources-with-server-side-apply/).
PATCH_FORCE = {"pulumi.com/patchForce": "true"}


@dataclass(frozen=True)
class KubeRayOperatorArgs:
    """Which KubeRay operator to install."""

    version: str  # of the kuberay-operator chart, which is the operator's version, e.g. "1.4.0"


@functools.cache
def vendored_crds(version: str) -> tuple[dict[str, Any], ...]:
    """The release's CRDs of STACK_CRD_FILES as vendored, or none for a release not vendored (an unvalidated one).
    Read once: each is about 1 MB of YAML."""
    folder = PROJECT_DIR / "vendor" / f"kuberay-v{version}"
    if not folder.is_dir():
        return ()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return tuple(yaml.load((folder / name).read_text(), Loader=loader) for name in STACK_CRD_FILES)


def kuberay_values() -> dict[str, Any]:
    # The chart has no nodeSelector; the GPU taint already keeps the operator on the system nodes.
    return {"resources": KUBERAY_OPERATOR_RESOURCES}


class KubeRayOperator(pulumi.ComponentResource):
    # The name Serving gives it in this project's stack ("<serving>-kuberay"); under it the release keeps its old name.
    STACK_NAME = "serving-kuberay"

    def __init__(
        self,
        name: str,
        args: KubeRayOperatorArgs,
        cluster: Cluster,
        depends_on: list[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        raise_input_errors(
            "KubeRayOperator", unmatched({"version": args.version}, SEMVER_PATTERN, "a version such as 1.4.0")
        )
        super().__init__("ray-llm-eks:serving:KubeRayOperator", name, None, opts)
        children = Children(self, name, self.STACK_NAME)
        crds = [_crd_patch(children, crd, cluster.provider) for crd in vendored_crds(args.version)]
        self.release = pinned_release(
            children,
            "kuberay-operator",
            Chart("kuberay-operator", KUBERAY_REPO, args.version),
            OPERATOR_NAMESPACE,
            kuberay_values(),
            cluster.provider,
            [*depends_on, *crds],
        )
        pod_security_patch(children, OPERATOR_NAMESPACE, OPERATOR_LEVEL, cluster.provider, self.release)
        self.register_outputs({})


def _crd_patch(
    children: Children, crd: dict[str, Any], provider: k8s.Provider
) -> k8s.apiextensions.v1.CustomResourceDefinitionPatch:
    """A CRD of the release, applied by the stack before the chart: Helm installs a chart's crds/ on the first install
    only and skips one that exists ("There is no support at this time for upgrading or deleting CRDs using Helm",
    https://helm.sh/docs/chart_best_practices/custom_resource_definitions/), so a stack moved to a newer kuberayVersion
    would keep the first release's schema, which prunes the newer fields (authOptions). A server-side apply creates
    the CRD where none exists. Retained on delete: deleting a CRD deletes every object of its kind, and a Patch that
    owns a CRD's required fields cannot relinquish them (pulumi-kubernetes provider.go Delete: "Either set the
    `retainOnDelete` resource option")."""
    metadata = crd["metadata"]
    return k8s.apiextensions.v1.CustomResourceDefinitionPatch(
        children.name(f"crd-{metadata['name']}"),
        metadata=k8s.meta.v1.ObjectMetaPatchArgs(
            name=metadata["name"], annotations={**metadata.get("annotations", {}), **PATCH_FORCE}
        ),
        spec=crd["spec"],
        opts=children.new_opts(provider=provider, retain_on_delete=True),
    )
