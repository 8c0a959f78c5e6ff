"""Rules on what leaves the cluster: a load balancer onto Serve's port of the serving pods, and nothing else (not the
head's dashboard, Ray client, GCS or metrics, none behind the API keys), for every Service the stack declares and
every one KubeRay makes of a RayService (services.py); serving.py judges the load balancer's own settings."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource

from .props import get, mappings
from .resource_types import KUBERNETES_SERVICE, NETWORK_POLICY, RAY_SERVICE
from .rules import Inspected, of_type, resource_policy, stack_policy
from .services import (
    LOAD_BALANCER,
    NODE_PORT,
    SERVE_LABEL,
    SERVE_PORT_NAME,
    KubeRayService,
    selector,
    selects_serving_pods,
    serve_port_numbers,
    service_type,
    services_of,
    target_ports,
)

FIX = (
    "Fix: no stack config makes it; the stack's one load balancer is the serve endpoint (serveExposure, "
    "infra/serving/rayservice.py build_serve_load_balancer), onto the pods labelled "
    f"{SERVE_LABEL}=true and app.kubernetes.io/instance=<the RayService> at Serve's port; reach the dashboard with "
    "`kubectl port-forward`."
)
# KubeRay's own Services take their type from the RayService (services.py).
KUBERAY_FIX = (
    "Fix: no stack config makes it; leave the RayService's headGroupSpec.serviceType, headGroupSpec.headService and "
    "spec.serveService without a type (ClusterIP): the stack's load balancer is its own Service (serveExposure)."
)


def _reach_problems(service: Inspected, behind: Sequence[Inspected], serving: bool) -> Iterator[str]:
    """What a load balancer reaches beyond Serve's port of the serving pods of `behind`."""
    fix = KUBERAY_FIX if isinstance(service, KubeRayService) else FIX
    if not serving:
        yield (
            f"Service '{service.name}' is a load balancer onto pods other than a RayService's serving ones (selector "
            f"{selector(service)}): it needs {SERVE_LABEL}: 'true' and the RayService's instance label, or it reaches "
            f"the Ray head's other ports and pods whose Serve proxy is not serving. {fix}"
        )
    numbers = serve_port_numbers(behind)
    serve = " or ".join([*(str(int(number)) for number in sorted(numbers)), f"`{SERVE_PORT_NAME}`"])
    for target in target_ports(service):
        if target != SERVE_PORT_NAME and target not in numbers:
            yield (
                f"Service '{service.name}' is a load balancer onto port {_shown(target)} of the Ray pods, not Serve's "
                f"({serve}): the dashboard, the Ray client, GCS and metrics take no API key. {fix}"
            )


def _shown(target: Any) -> str:
    return str(int(target)) if isinstance(target, float) else repr(target)


def _load_balancers_beyond_serve(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    rayservices = of_type(resources, RAY_SERVICE)
    for service in of_type(resources, KUBERNETES_SERVICE):
        if service_type(service) == LOAD_BALANCER:
            behind = [rayservice for rayservice in rayservices if selects_serving_pods(service, rayservice)]
            yield from ((service, problem) for problem in _reach_problems(service, behind, bool(behind)))
    for rayservice in rayservices:
        for made in services_of(rayservice):
            if isinstance(made, KubeRayService) and service_type(made) == LOAD_BALANCER:
                yield from ((rayservice, problem) for problem in _reach_problems(made, [rayservice], made.serving))


def _node_port_services(resource: Inspected) -> Iterator[str]:
    for service in services_of(resource):
        if service_type(service) == NODE_PORT:
            ports = ", ".join(_shown(target) for target in target_ports(service))
            yield (
                f"Service '{service.name}' is of type NodePort: every node opens it (onto pod ports {ports}) to "
                "whatever reaches the nodes, in the clear, with no source ranges or API keys in front "
                "(https://kubernetes.io/docs/concepts/services-networking/service/#type-nodeport). Fix: no stack "
                "config makes one; make it ClusterIP and reach it with `kubectl port-forward` (the portForwardCommand "
                "output), or expose the model through serveExposure's load balancer."
            )


def denies_all_ingress(policy: Inspected) -> bool:
    """A NetworkPolicy that selects every pod of its namespace for Ingress and admits nothing: the namespace's default
    deny (https://kubernetes.io/docs/concepts/services-networking/network-policies/#default-deny-all-ingress-traffic)."""
    spec = get(policy.props, "spec", default={})
    selects_all = not get(spec, "podSelector", "matchLabels") and not get(spec, "podSelector", "matchExpressions")
    return selects_all and "Ingress" in (get(spec, "policyTypes") or ["Ingress"]) and not mappings(get(spec, "ingress"))


def _unguarded_ray_namespaces(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    guarded = {
        get(policy.props, "metadata", "namespace")
        for policy in of_type(resources, NETWORK_POLICY)
        if denies_all_ingress(policy)
    }
    for rayservice in of_type(resources, RAY_SERVICE):
        namespace = get(rayservice.props, "metadata", "namespace")
        if namespace not in guarded:
            yield (
                rayservice,
                f"RayService '{rayservice.name}' runs in namespace {namespace!r}, which has no default-deny ingress "
                "NetworkPolicy: every pod in the cluster reaches its dashboard (job submission), Ray client and GCS. "
                "Fix: no stack config removes it; restore infra/serving/network_policy.py's policies (the stack "
                "declares them with the RayService).",
            )


LOAD_BALANCERS_SERVE_ONLY = stack_policy(
    "load-balancers-serve-only",
    "A load balancer (a LoadBalancer Service, or one KubeRay makes of a RayService) reaches only a RayService's "
    "serving pods (ray.io/serve 'true' with its instance label), at Serve's port (8000, `serve`).",
    EnforcementLevel.MANDATORY,
    _load_balancers_beyond_serve,
)
NO_NODE_PORT_SERVICES = resource_policy(
    "no-node-port-services",
    "No Service is of type NodePort (a RayService's head or serve Service included): it opens its ports on every node.",
    EnforcementLevel.MANDATORY,
    {KUBERNETES_SERVICE, RAY_SERVICE},
    _node_port_services,
)
RAY_NAMESPACE_DEFAULT_DENY = stack_policy(
    "ray-namespace-default-deny",
    "Every RayService's namespace denies ingress by default (a NetworkPolicy selecting all its pods and admitting "
    "nothing); the paths serving needs are allowed by policies of their own.",
    EnforcementLevel.MANDATORY,
    _unguarded_ray_namespaces,
)
