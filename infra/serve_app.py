"""Serving: the KubeRay operator, the inference namespace, the RayService and its endpoint."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from infra.cluster import Cluster
from infra.config import StackConfig
from infra.kuberay import KubeRayOperator
from infra.rayservice import HF_TOKEN_KEY, HF_TOKEN_SECRET, build_rayservice, build_serve_load_balancer


class Serving(pulumi.ComponentResource):
    load_balancer_hostname: pulumi.Output[str] | None

    def __init__(
        self,
        name: str,
        cfg: StackConfig,
        cluster: Cluster,
        system_nodes: pulumi.Resource,
        device_plugins: pulumi.Resource,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("ray-llm-eks:serving:Serving", name, None, opts)
        in_cluster = pulumi.ResourceOptions(parent=self, provider=cluster.provider)

        operator = KubeRayOperator(
            "kuberay", cfg, cluster, depends_on=[system_nodes], opts=pulumi.ResourceOptions(parent=self)
        )
        namespace = k8s.core.v1.Namespace(
            "namespace", metadata=k8s.meta.v1.ObjectMetaArgs(name=cfg.namespace), opts=in_cluster
        )
        rayservice_deps: list[pulumi.Resource] = [operator.release, device_plugins, namespace]
        if cfg.hf_token is not None:
            rayservice_deps.append(
                k8s.core.v1.Secret(
                    "hf-token",
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=HF_TOKEN_SECRET, namespace=cfg.namespace),
                    type="Opaque",
                    string_data={HF_TOKEN_KEY: cfg.hf_token},
                    opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[namespace])),
                )
            )

        manifest = build_rayservice(cfg, with_hf_token=cfg.hf_token is not None)
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
        if cfg.serve_exposure != "none":
            service = build_serve_load_balancer(cfg)
            load_balancer = k8s.core.v1.Service(
                "serve-load-balancer",
                metadata=service["metadata"],
                spec=service["spec"],
                opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[namespace])),
            )
            self.load_balancer_hostname = load_balancer.status.load_balancer.ingress[0].hostname
        self.register_outputs({})
