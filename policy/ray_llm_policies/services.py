"""The Services in front of the Ray pods: a Service the stack declares, or the ones KubeRay makes of a RayService."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .props import get, mappings
from .resource_types import KUBERNETES_SERVICE, RAY_SERVICE
from .rules import Inspected


@dataclass(frozen=True)
class ServeServiceView:
    """A RayService's spec.serveService as the Service KubeRay makes of it, for the load balancer rules: KubeRay 1.4.0
    keeps its metadata and spec but replaces its ports by the head's container port named `serve` when there is one
    (no targetPort), or keeps only its own port named `serve` (vendor/kuberay-v1.4.0/service.go BuildServeService)."""

    resource_type: str
    name: str
    props: Mapping[str, Any]


def serve_port(rayservice: Inspected) -> Mapping[str, Any] | None:
    head = get(rayservice.props, "spec", "rayClusterConfig", "headGroupSpec", "template", "spec", "containers", 0)
    for port in mappings(get(head, "ports", default=[])):
        if get(port, "name") == "serve":
            return {"name": "serve", "port": get(port, "containerPort")}
    return None


def load_balancer_views(resource: Inspected) -> list[Inspected]:
    """The Services a resource puts in front of the model: a Service itself, or a RayService's serveService."""
    if resource.resource_type != RAY_SERVICE:
        return [resource]
    service = get(resource.props, "spec", "serveService")
    if not isinstance(service, Mapping):
        return []
    head_port = serve_port(resource)
    own = [port for port in mappings(get(service, "spec", "ports", default=[])) if get(port, "name") == "serve"]
    ports = [head_port] if head_port else [{"name": "serve", "port": get(own[0], "port")}] if own else []
    props = {**service, "spec": {**(get(service, "spec", default={}) or {}), "ports": ports}}
    return [ServeServiceView(KUBERNETES_SERVICE, f"{resource.name} spec.serveService", props)]
