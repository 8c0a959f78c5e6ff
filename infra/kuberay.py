"""The KubeRay operator: it turns the RayService into a Ray cluster and wires its Serve endpoint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from infra.cluster import Cluster
from infra.helm import Chart, pinned_release
from infra.scheduling import OPERATOR_NAMESPACE

KUBERAY_REPO = "https://ray-project.github.io/kuberay-helm/"


@dataclass(frozen=True)
class KubeRayOperatorArgs:
    version: str  # of the kuberay-operator chart, which is the operator's version


def kuberay_values() -> dict[str, Any]:
    # The chart has no nodeSelector; the GPU taint already keeps the operator on the system nodes.
    # Its default 100m CPU limit throttles reconciles while a model-sized RayService comes up.
    return {"resources": {"limits": {"cpu": "500m", "memory": "512Mi"}}}


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
        self.release = pinned_release(
            "kuberay-operator",
            Chart("kuberay-operator", KUBERAY_REPO, args.version),
            OPERATOR_NAMESPACE,
            kuberay_values(),
            cluster.provider,
            self,
            depends_on,
        )
        self.register_outputs({})
