"""Serving: the KubeRay operator, the inference namespace, the RayService and its endpoint."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from infra.cluster import Cluster
from infra.kuberay import KubeRayOperator, KubeRayOperatorArgs
from infra.rayservice import HF_TOKEN_KEY, HF_TOKEN_SECRET


@dataclass(frozen=True)
class ServingArgs:
    """The serving objects: plain manifests (`infra.rayservice` builds them), the operator that runs them, and the
    token the RayService reads from the `hf-token` Secret when it refers to one."""

    namespace: str
    operator: KubeRayOperatorArgs
    rayservice: Mapping[str, Any]
    hf_token: pulumi.Input[str] | None = None
    load_balancer: Mapping[str, Any] | None = None  # a Service in front of the serve pods


class Serving(pulumi.ComponentResource):
    load_balancer_hostname: pulumi.Output[str] | None

    def __init__(
        self,
        name: str,
        args: ServingArgs,
        cluster: Cluster,
        system_nodes: pulumi.Resource,
        device_plugins: pulumi.Resource,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("ray-llm-eks:serving:Serving", name, None, opts)
        in_cluster = pulumi.ResourceOptions(parent=self, provider=cluster.provider)

        operator = KubeRayOperator(
            "kuberay", args.operator, cluster, depends_on=[system_nodes], opts=pulumi.ResourceOptions(parent=self)
        )
        namespace = k8s.core.v1.Namespace(
            "namespace", metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace), opts=in_cluster
        )
        rayservice_deps: list[pulumi.Resource] = [operator.release, device_plugins, namespace]
        if args.hf_token is not None:
            rayservice_deps.append(
                k8s.core.v1.Secret(
                    "hf-token",
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=HF_TOKEN_SECRET, namespace=args.namespace),
                    type="Opaque",
                    string_data={HF_TOKEN_KEY: args.hf_token},
                    opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[namespace])),
                )
            )

        manifest = args.rayservice
        k8s.apiextensions.CustomResource(
            "rayservice",
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            # The operator's CRDs, the device plugins' resources and the namespace must exist first.
            opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=rayservice_deps)),
        )

        self.load_balancer_hostname = None
        if args.load_balancer is not None:
            service = args.load_balancer
            load_balancer = k8s.core.v1.Service(
                "serve-load-balancer",
                metadata=service["metadata"],
                spec=service["spec"],
                opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[namespace])),
            )
            self.load_balancer_hostname = load_balancer.status.load_balancer.ingress[0].hostname
        self.register_outputs({})
