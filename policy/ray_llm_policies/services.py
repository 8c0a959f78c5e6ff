"""The Services in front of the Ray pods: a Service the stack declares, or the ones KubeRay makes of a RayService.

KubeRay's head and serve Services can be load balancers or NodePorts of the RayService's own choosing, so the rules
read them as they read a declared Service (docs/policy.md#what-a-policy-can-and-cannot-see)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .props import as_number, get, known_children, mappings
from .resource_types import KUBERNETES_SERVICE, RAY_SERVICE
from .rules import Inspected

LOAD_BALANCER, NODE_PORT, CLUSTER_IP = "LoadBalancer", "NodePort", "ClusterIP"
# KubeRay's names and defaults (vendor/kuberay-v1.4.0/constant.go, the same in v1.7.0): the serve port by name and
# number, the ports a head without container ports gets, and the metrics port it adds to any head that names none.
SERVE_PORT_NAME = "serve"
DEFAULT_SERVE_PORT = 8000
METRICS_PORT = {"name": "metrics", "port": 8080}
DEFAULT_HEAD_PORTS = (
    {"name": "client", "port": 10001},
    {"name": "gcs-server", "port": 6379},
    {"name": "dashboard", "port": 8265},
    METRICS_PORT,
    {"name": SERVE_PORT_NAME, "port": DEFAULT_SERVE_PORT},
)
RAY_LABEL_PREFIX = "ray.io/"
# KubeRay's label of the pods whose Serve proxy serves (docs/changes.md#the-labels-kuberay-sets); the pack cannot import
# infra/, so a test holds this equal to infra/serving/rayservice.py SERVE_LABEL.
SERVE_LABEL = "ray.io/serve"
# KubeRay's own selectors, in words: the cluster's name is known only once KubeRay has made the cluster.
THE_CLUSTER = "<the RayService's cluster>"


@dataclass(frozen=True)
class KubeRayService:
    """A Service KubeRay makes of a RayService, shaped as a declared Service for the rules. `serving`: whether KubeRay's
    own selector picks only the pods whose Serve proxy serves (the serve Service) or not (the head Service)."""

    resource_type: str
    name: str
    props: Mapping[str, Any]
    serving: bool


def _head_group(rayservice: Inspected) -> Any:
    return get(rayservice.props, "spec", "rayClusterConfig", "headGroupSpec", default={})


def _kuberay_service(
    rayservice: Inspected, what: str, service: Any, ports: list[Mapping[str, Any]], selector: Mapping[str, str]
) -> KubeRayService:
    """`service` (the RayService's own spec of it, or {}) with KubeRay's ports and selector, and its type: the Service's
    own, else the head group's serviceType (setServiceTypeForUserProvidedService), else Kubernetes' default."""
    spec = {**(get(service, "spec", default={}) or {})}
    service_type = get(service, "spec", "type") or get(_head_group(rayservice), "serviceType") or CLUSTER_IP
    spec.update(type=str(service_type), ports=ports, selector=selector)
    props = {**(service or {}), "spec": spec}
    return KubeRayService(KUBERNETES_SERVICE, f"{rayservice.name} {what}", props, SERVE_LABEL in selector)


def _serve_service(rayservice: Inspected) -> KubeRayService | None:
    """The serve Service with every port either validated KubeRay release gives it: the pack cannot tell which operator
    runs, so a rule sees all of them (BuildServeService, vendor/kuberay-v1.7.0/service.go and v1.4.0's). The head's
    ports are its container ports, KubeRay's defaults where it has none (_head_ports). KubeRay 1.7.0 takes each one
    named `serve` or `serve-*` (isServingPort), where spec.serveService has a port of the same name that port whole
    (its targetPort too), and without any such head port spec.serveService's ports as given. 1.4.0 takes the head's
    `serve` port alone (no targetPort), else spec.serveService's own port named `serve`. Neither makes one without
    spec.serveService or such a head port."""
    service = get(rayservice.props, "spec", "serveService")
    service = service if isinstance(service, Mapping) else None
    made = [
        port
        for port in _head_ports(rayservice)
        if port["name"] == SERVE_PORT_NAME or str(port["name"]).startswith(f"{SERVE_PORT_NAME}-")
    ]
    if service is None and not made:
        return None
    given = mappings(get(service, "spec", "ports", default=[]))
    by_name = {get(port, "name"): port for port in given}
    on_1_7 = [by_name.get(port["name"], port) for port in made] if made else given
    given_serve = [
        {"name": SERVE_PORT_NAME, "port": get(port, "port")} for port in given if get(port, "name") == SERVE_PORT_NAME
    ]
    on_1_4 = [port for port in made if port["name"] == SERVE_PORT_NAME][:1] or given_serve[:1]
    ports = [*on_1_7, *(port for port in on_1_4 if port not in on_1_7)]
    what = "spec.serveService" if service is not None else "serve Service"
    return _kuberay_service(rayservice, what, service, ports, {"ray.io/cluster": THE_CLUSTER, SERVE_LABEL: "true"})


def _head_ports(rayservice: Inspected) -> list[Mapping[str, Any]]:
    """Every container port of the head's Ray container (an unnamed one as `<number>-port`), KubeRay's defaults where it
    has none, and the metrics port unless one is named so (getServicePorts, getPortsFromCluster)."""
    head = get(_head_group(rayservice), "template", "spec", "containers", 0)
    ports: list[Mapping[str, Any]] = [
        {"name": get(port, "name") or f"{get(port, 'containerPort')}-port", "port": get(port, "containerPort")}
        for port in mappings(get(head, "ports", default=[]))
    ] or list(DEFAULT_HEAD_PORTS)
    if not any(port["name"] == METRICS_PORT["name"] for port in ports):
        ports.append(METRICS_PORT)
    return ports


def _head_service(rayservice: Inspected) -> KubeRayService:
    """The head Service: a given headGroupSpec.headService keeps its own ports and gets every head port besides, under
    KubeRay's selector of the head pod (BuildServiceForHeadPod)."""
    service = get(_head_group(rayservice), "headService")
    service = service if isinstance(service, Mapping) else None
    ports = [*mappings(get(service, "spec", "ports", default=[])), *_head_ports(rayservice)]
    return _kuberay_service(
        rayservice, "head Service", service, ports, {"ray.io/cluster": THE_CLUSTER, "ray.io/node-type": "head"}
    )


def services_of(resource: Inspected) -> list[Inspected]:
    """The Services a resource puts in front of pods: a Service itself, or the ones KubeRay makes of a RayService."""
    if resource.resource_type == KUBERNETES_SERVICE:
        return [resource]
    if resource.resource_type != RAY_SERVICE:
        return []
    serve = _serve_service(resource)
    return [_head_service(resource), *([serve] if serve else [])]


def service_type(service: Inspected) -> str:
    return str(get(service.props, "spec", "type") or CLUSTER_IP)


def target_ports(service: Inspected) -> Iterator[Any]:
    """Where each port of the Service goes on the pods: its targetPort (a number, or a container port's name), else
    the port's own number (https://kubernetes.io/docs/reference/kubernetes-api/service-resources/service-v1/)."""
    for port in mappings(get(service.props, "spec", "ports", default=[])):
        target = get(port, "targetPort", default=get(port, "port"))
        yield target if isinstance(target, str) else as_number(target)


def selector(service: Inspected) -> dict[str | int, Any]:
    """The Service's selector, less the values unknown until the update runs."""
    return dict(known_children(get(service.props, "spec", "selector", default={})))


def selects(service: Inspected, rayservice: Inspected) -> bool:
    """Whether the Service's selector picks the RayService's pods (KubeRay's own ray.io/* labels aside)."""
    if get(service.props, "metadata", "namespace") != get(rayservice.props, "metadata", "namespace"):
        return False
    labels = get(_head_group(rayservice), "template", "metadata", "labels")
    wanted = {key: value for key, value in selector(service).items() if not str(key).startswith(RAY_LABEL_PREFIX)}
    return bool(wanted) and all(get(labels, key) == value for key, value in wanted.items())


def selects_serving_pods(service: Inspected, rayservice: Inspected) -> bool:
    """Whether the Service picks only the RayService's pods that KubeRay marks as serving."""
    return selector(service).get(SERVE_LABEL) == "true" and selects(service, rayservice)


def serve_port_numbers(rayservices: Sequence[Inspected]) -> set[float]:
    """The port Serve listens on in each RayService's pods (the head's `serve` container port, else KubeRay's)."""
    numbers: set[float | None] = set()
    for rayservice in rayservices:
        head = get(_head_group(rayservice), "template", "spec", "containers", 0)
        serve = [port for port in mappings(get(head, "ports", default=[])) if get(port, "name") == SERVE_PORT_NAME]
        numbers.add(as_number(get(serve[0], "containerPort")) if serve else None)
    return {number for number in numbers if number is not None} or {float(DEFAULT_SERVE_PORT)}
