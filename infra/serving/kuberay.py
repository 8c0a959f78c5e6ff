"""The KubeRay operator: it turns the RayService into a Ray cluster and wires its Serve endpoint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from infra.cluster.eks import Cluster
from infra.cluster.helm import Chart, pinned_release, pod_security_patch
from infra.components import Children
from infra.kube.pod_resources import KUBERAY_OPERATOR_RESOURCES
from infra.kube.pod_security import OPERATOR_LEVEL
from infra.kube.scheduling import OPERATOR_NAMESPACE
from infra.serving.crds import KubeRayCrds, KubeRayCrdsArgs, vendored_crd_digests

KUBERAY_REPO = "https://ray-project.github.io/kuberay-helm/"


@dataclass(frozen=True)
class KubeRayOperatorArgs:
    """Which KubeRay operator to install."""

    version: str  # of the kuberay-operator chart, which is the operator's version, e.g. "1.4.0"


def kuberay_values() -> dict[str, Any]:
    # The chart has no nodeSelector; the GPU taint already keeps the operator on the system nodes.
    return {"resources": KUBERAY_OPERATOR_RESOURCES}


class KubeRayOperator(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        args: KubeRayOperatorArgs,
        cluster: Cluster,
        depends_on: list[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("ray-llm-eks:serving:KubeRayOperator", name, None, opts)
        children = Children(self, name)
        # The release's CRDs, applied before it (infra/serving/crds.py); an unvalidated release has none vendored
        # and keeps the CRDs of Helm's first install.
        crds: list[pulumi.Resource] = []
        digests = vendored_crd_digests(args.version)
        if digests:
            crds_args = KubeRayCrdsArgs(kubeconfig=cluster.kubeconfig, kuberay_version=args.version, crds=digests)
            crds.append(KubeRayCrds(children.name("crds"), crds_args, opts=children.opts(depends_on=depends_on)))
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
