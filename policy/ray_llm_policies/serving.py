"""Rules on what serves: the Ray Serve LLM prefill/decode app, pinned charts and images, the endpoint."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from pulumi_policy import EnforcementLevel, PolicyResource

from .internet import covers_the_internet
from .nodes import efa_interface_count, gpu_node_groups, launch_template_of
from .pinning import unpinned_image_reason
from .props import as_number, get, known_children, mappings
from .resource_types import HELM_RELEASE, KUBERNETES_SERVICE, RAY_SERVICE
from .rules import Inspected, ResourceCheck, StackCheck, kind_of, of_type, resource_policy, stack_policy
from .services import selects, services_of

NIXL_CONNECTOR = "NixlConnector"
MULTI_CONNECTOR = "MultiConnector"
# NIXL's default backend; on EKS it runs over TCP without any error.
NIXL_DEFAULT_BACKEND = "UCX"
NIXL_EFA_BACKENDS = ["LIBFABRIC"]
EFA_DEVICE_RESOURCE = "vpc.amazonaws.com/efa"
# Which stack-config key pins each chart the stack installs.
CHART_VERSION_KEYS = {
    "kuberay-operator": "kuberayVersion",
    "nvidia-device-plugin": "nvidiaDevicePluginVersion",
    "aws-efa-k8s-device-plugin": "efaDevicePluginVersion",
}
EXACT_CHART_VERSION = re.compile(r"^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]+)?$")
# The in-tree/cloud-controller annotation, and the AWS Load Balancer Controller's scheme annotation.
INTERNAL_LB_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-internal"
LB_SCHEME_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-scheme"
# EKS's cloud provider makes a TLS listener of a port with this certificate when the ports annotation lists it by
# number or name, or is absent or "*" (kubernetes/cloud-provider-aws pkg/providers/v1/aws.go getPortSets and
# EnsureLoadBalancer); any other port is plain TCP.
TLS_CERT_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-ssl-cert"
TLS_PORTS_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-ssl-ports"
# ... and gives that listener this annotation's security policy; without one AWS makes it ELBSecurityPolicy-2016-08,
# which takes TLS 1.0 and 1.1 (https://docs.aws.amazon.com/elasticloadbalancing/latest/network/describe-ssl-policies.html).
TLS_POLICY_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-ssl-negotiation-policy"
# The policies the pack lets a TLS listener use, a conservative allow-list (a new or unlisted policy fails until it is
# added here): those AWS names for a floor of TLS 1.2 (TLS13-1-2: TLS 1.3 and 1.2; TLS13-1-3: 1.3 only; TLS-1-2 and
# FS-1-2: 1.2 only, the describe-ssl-policies page above), less the TLS13-1-2-Ext1/Ext2 ones, which keep legacy CBC
# ciphers and which Trivy's AVD-AWS-0047 calls outdated (aquasecurity/trivy-checks
# checks/cloud/aws/elb/use_secure_tls_policy.rego). The stack's own is infra/serving/rayservice.py TLS_POLICY.
TLS_1_2_POLICIES = frozenset(
    {
        "ELBSecurityPolicy-TLS13-1-2-2021-06",
        "ELBSecurityPolicy-TLS13-1-2-Res-2021-06",
        "ELBSecurityPolicy-TLS13-1-2-Res-PQ-2025-09",
        "ELBSecurityPolicy-TLS13-1-2-FIPS-PQ-2025-09",
        "ELBSecurityPolicy-TLS13-1-3-2021-06",
        "ELBSecurityPolicy-TLS-1-2-2017-01",
        "ELBSecurityPolicy-FS-1-2-2019-08",
        "ELBSecurityPolicy-FS-1-2-Res-2019-08",
        "ELBSecurityPolicy-FS-1-2-Res-2020-10",
    }
)
# The ingress class that asks every request for an API key (serve_ext/ray_llm_eks_auth; the pack cannot import
# infra/, a test holds this equal to infra/serving/serve_auth.py INGRESS_CLS).
AUTH_INGRESS_CLS = "ray_llm_eks_auth.ingress:ApiKeyIngress"
CERTIFICATE_FIX = (
    "Fix: set serveCertificateArn to an ACM certificate of the stack's region (the stack then listens on 443)."
)


class ServeConfigError(ValueError):
    """The RayService's serveConfigV2 cannot be read as a Serve config."""


@dataclass(frozen=True)
class PdApplication:
    """A prefill/decode app of serveConfigV2 and the LLM config of each side."""

    name: str
    prefill: Mapping[str, Any]
    decode: Mapping[str, Any]

    def sides(self) -> tuple[tuple[str, Mapping[str, Any]], ...]:
        return (("prefill", self.prefill), ("decode", self.decode))


def pd_applications(rayservice: Mapping[str, Any]) -> list[PdApplication]:
    """The prefill/decode apps of a RayService (serveConfigV2 is a YAML document in a string)."""
    text = get(rayservice, "spec", "serveConfigV2")
    if text is None:
        return []
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ServeConfigError(f"spec.serveConfigV2 is not valid YAML ({error.__class__.__name__})") from error
    if not isinstance(document, Mapping):
        raise ServeConfigError("spec.serveConfigV2 is not a mapping with `applications`")
    apps = []
    for app in mappings(get(document, "applications")):
        args = get(app, "args", default={})
        # The stack's several-model builder nests the pair under pd_config (serve_ext/ray_llm_eks_models).
        pair = get(args, "pd_config", default=args) if isinstance(args, Mapping) else None
        if isinstance(pair, Mapping) and "prefill_config" in pair and "decode_config" in pair:
            apps.append(PdApplication(str(get(app, "name", default="")), pair["prefill_config"], pair["decode_config"]))
    return apps


def containers(manifest: Any) -> Iterator[Mapping[str, Any]]:
    """Every container of every pod template inside a Kubernetes manifest, skipping unknown parts."""
    for key, value in known_children(manifest):
        if key in ("containers", "initContainers"):
            yield from mappings(value)
        else:
            yield from containers(value)


def efa_enabled(resources: Sequence[PolicyResource]) -> bool:
    """EFA is on when the GPU nodes launch with EFA interfaces or the Ray workers ask for EFA devices."""
    templates = (launch_template_of(group) for group in gpu_node_groups(resources))
    return any(template is not None and efa_interface_count(template.props) for template in templates) or any(
        (as_number(get(container, "resources", kind, EFA_DEVICE_RESOURCE)) or 0) > 0
        for rayservice in of_type(resources, RAY_SERVICE)
        for container in containers(rayservice.props)
        for kind in ("requests", "limits")
    )


def _nixl_backends_off_efa(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    if not efa_enabled(resources):
        return
    for rayservice in of_type(resources, RAY_SERVICE):
        try:
            apps = pd_applications(rayservice.props)
        except ServeConfigError as error:
            yield rayservice, f"RayService '{rayservice.name}': {error}."
            continue
        for app in apps:
            for side, llm_config in app.sides():
                transfer = nixl_transfer(get(llm_config, "engine_kwargs", "kv_transfer_config", default={}))
                if get(transfer, "kv_connector") != NIXL_CONNECTOR:
                    continue
                backends = get(transfer, "kv_connector_extra_config", "backends")
                if backends is None or list(backends) != NIXL_EFA_BACKENDS:
                    found = (
                        list(backends) if backends is not None else f"unset (NIXL's default: {NIXL_DEFAULT_BACKEND})"
                    )
                    yield (
                        rayservice,
                        f"RayService '{rayservice.name}' app '{app.name}': the {side} side's NIXL backends are "
                        f"{found}, but the nodes have EFA: NIXL must use {NIXL_EFA_BACKENDS}, since UCX runs at TCP "
                        "speed on EKS. Fix: no stack config sets this; restore NIXL_EFA_BACKEND in "
                        "infra/serving/serve_config.py.",
                    )


def nixl_transfer(transfer: Any) -> Any:
    """NIXL's config in a side's kv_transfer_config: itself, or the first child of the MultiConnector that adds the
    host KV tier (infra/settings/kv_offload.py). Such a side sets no engine id: vLLM gives each engine a uuid, where
    Ray's per-replica suffix would miss it."""
    if get(transfer, "kv_connector") == MULTI_CONNECTOR:
        return get(transfer, "kv_connector_extra_config", "connectors", 0, default={})
    return transfer


def _prefill_decode_mismatches(resource: Inspected) -> Iterator[str]:
    try:
        apps = pd_applications(resource.props)
    except ServeConfigError as error:
        yield f"RayService '{resource.name}': {error}."
        return
    shared_settings = (
        ("model id", ("model_loading_config", "model_id"), "modelId"),
        ("model source", ("model_loading_config", "model_source"), "modelSource"),
        ("max_model_len", ("engine_kwargs", "max_model_len"), "maxModelLen"),
    )
    for app in apps:
        where = f"RayService '{resource.name}' app '{app.name}'"
        for label, path, config_key in shared_settings:
            prefill_value, decode_value = get(app.prefill, *path), get(app.decode, *path)
            if prefill_value != decode_value:
                yield (
                    f"{where}: prefill {label} {prefill_value!r} differs from decode {decode_value!r}; the KV cache "
                    f"prefill hands over only fits the same model and context. Fix: set {config_key} once in stack "
                    "config; both sides take it from there (infra/serving/serve_config.py must not set one side apart)."
                )
        # A side with the host tier sets none: vLLM gives each of its engines a uuid (nixl_transfer).
        engine_ids = {
            side: get(transfer, "engine_id")
            for side, config in app.sides()
            if (transfer := get(config, "engine_kwargs", "kv_transfer_config", default={})) is nixl_transfer(transfer)
        }
        if None in engine_ids.values() or len(set(engine_ids.values())) < len(engine_ids):
            found = ", ".join(f"{side} {engine_id!r}" for side, engine_id in engine_ids.items())
            yield (
                f"{where}: NIXL engine ids must be set and distinct ({found}), or the two sides cannot address each "
                "other. Fix: no stack config sets them; infra/serving/serve_config.py gives each side its own "
                "engine_id."
            )


def _unpinned_images(resource: Inspected) -> Iterator[str]:
    for container in containers(resource.props):
        image = get(container, "image")
        problem = unpinned_image_reason(image) if isinstance(image, str) else "is not set"
        if problem:
            yield (
                f"{kind_of(resource)} '{resource.name}': container '{get(container, 'name')}' image {image!r} "
                f"{problem}, so nodes may run different builds. Fix: set dlcImage to an image pinned by tag or digest "
                "(empty uses the pinned default image)."
            )


def _unpinned_charts(resource: Inspected) -> Iterator[str]:
    chart = str(get(resource.props, "chart", default=""))
    version = str(get(resource.props, "version", default=""))
    if EXACT_CHART_VERSION.match(version):
        return
    config_key = CHART_VERSION_KEYS.get(chart.rsplit("/", 1)[-1])
    fix = f"set {config_key} to an exact chart version" if config_key else "pin the release's version exactly"
    found = f"version {version!r}, which is not an exact version" if version else "no version"
    yield (
        f"Helm release '{resource.name}' installs chart '{chart}' at {found}: a later install may get another "
        f"chart. Fix: {fix}."
    )


def _is_internal_load_balancer(annotations: Mapping[str, Any]) -> bool:
    internal = str(get(annotations, INTERNAL_LB_ANNOTATION, default="")).lower()
    return internal not in ("", "false") or get(annotations, LB_SCHEME_ANNOTATION) == "internal"


def _of_each_service(check: ResourceCheck) -> ResourceCheck:
    """`check` on each Service a resource puts in front of pods (services.py services_of)."""
    return lambda resource: (problem for service in services_of(resource) for problem in check(service))


def _open_load_balancer(resource: Inspected) -> Iterator[str]:
    annotations = _load_balancer_annotations(resource)
    if annotations is None or _is_internal_load_balancer(annotations):
        return
    spec = get(resource.props, "spec", default={})
    fix = "Fix: set serveSourceCidrs to the CIDRs of the clients, or serveExposure to internal (or none)."
    source_ranges = list(get(spec, "loadBalancerSourceRanges", default=[]))
    if not source_ranges:
        yield (
            f"Service '{resource.name}' is an internet-facing load balancer with no loadBalancerSourceRanges: "
            f"anyone can call the model. {fix}"
        )
    elif covers_the_internet(source_ranges):
        yield (
            f"Service '{resource.name}' is an internet-facing load balancer open to the whole internet "
            f"({', '.join(map(str, source_ranges))}). {fix}"
        )


def _load_balancer_annotations(resource: Inspected) -> Mapping[str, Any] | None:
    """A LoadBalancer Service's annotations; None for any other Service."""
    if get(resource.props, "spec", "type") != "LoadBalancer":
        return None
    return get(resource.props, "metadata", "annotations", default={}) or {}


def _plain_text_ports(resource: Inspected) -> Iterator[str]:
    annotations = _load_balancer_annotations(resource)
    if annotations is None:
        return
    if not get(annotations, TLS_CERT_ANNOTATION):
        yield (
            f"Service '{resource.name}' is a load balancer without a TLS certificate: the model API is plain HTTP. "
            f"{CERTIFICATE_FIX}"
        )
        return
    yield from _weak_tls_policy(resource, annotations)
    yield from _ports_without_tls(resource, annotations)


def _weak_tls_policy(resource: Inspected, annotations: Mapping[str, Any]) -> Iterator[str]:
    policy = get(annotations, TLS_POLICY_ANNOTATION)
    if policy in TLS_1_2_POLICIES:
        return
    found = repr(policy) if policy else "AWS's default, ELBSecurityPolicy-2016-08 (it names none)"
    yield (
        f"Service '{resource.name}' listens for TLS under {found}, not a security policy known to refuse TLS 1.0 and "
        f"1.1 ({TLS_POLICY_ANNOTATION}). Fix: no stack config sets it; name one of TLS_1_2_POLICIES "
        "(policy/ray_llm_policies/serving.py), as infra/serving/rayservice.py TLS_POLICY does."
    )


def _ports_without_tls(resource: Inspected, annotations: Mapping[str, Any]) -> Iterator[str]:
    listed = str(get(annotations, TLS_PORTS_ANNOTATION, default="*") or "*")
    if listed == "*":
        return
    names = set(listed.split(","))
    for port in mappings(get(resource.props, "spec", "ports", default=[])):
        number = as_number(get(port, "port"))
        if str(get(port, "name", default="")) not in names and (number is None or str(int(number)) not in names):
            yield (
                f"Service '{resource.name}' serves port {get(port, 'port')} in plain text: "
                f"{TLS_PORTS_ANNOTATION} ({listed}) leaves it out. {CERTIFICATE_FIX}"
            )


def serve_config(rayservice: Mapping[str, Any]) -> Any:
    """The RayService's serveConfigV2 document; None where it is absent or unreadable (prefill-decode-consistent
    reports that)."""
    text = get(rayservice, "spec", "serveConfigV2")
    try:
        return yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError:
        return None


def _unauthenticated_apps(rayservice: PolicyResource) -> list[str]:
    document = serve_config(rayservice.props)
    return [
        str(get(app, "name", default=""))
        for app in mappings(get(document, "applications"))
        if get(app, "args", "ingress_cls_config", "ingress_cls") != AUTH_INGRESS_CLS
    ]


def _exposed_without_keys(internet_facing: bool) -> StackCheck:
    def check(resources: Sequence[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
        rayservices = of_type(resources, RAY_SERVICE)
        # A Service in front of the RayServices it selects; the Services KubeRay makes of a RayService in front of it.
        fronts: list[tuple[Inspected, list[PolicyResource]]] = [
            (service, [r for r in rayservices if selects(service, r)])
            for service in of_type(resources, KUBERNETES_SERVICE)
        ]
        fronts += [(view, [r]) for r in rayservices for view in services_of(r)]
        for service, behind in fronts:
            annotations = _load_balancer_annotations(service)
            if annotations is None or _is_internal_load_balancer(annotations) is internet_facing:
                continue
            for rayservice in behind:
                apps = _unauthenticated_apps(rayservice)
                if apps:
                    yield (
                        rayservice,
                        f"RayService '{rayservice.name}' is reached through load balancer '{service.name}' and its "
                        f"application(s) {', '.join(apps)} take requests without an API key. Fix: set "
                        "serveApiKeyAuth to true and serveApiKeys (`pulumi config set --secret serveApiKeys ...`).",
                    )

    return check


NIXL_LIBFABRIC_ON_EFA = stack_policy(
    "nixl-libfabric-on-efa",
    "With EFA on, the RayService's NIXL KV transfer uses the LIBFABRIC backend (UCX would run at TCP speed).",
    EnforcementLevel.MANDATORY,
    _nixl_backends_off_efa,
)
PREFILL_DECODE_CONSISTENT = resource_policy(
    "prefill-decode-consistent",
    "Prefill and decode load the same model with the same max_model_len, under distinct NIXL engine ids.",
    EnforcementLevel.MANDATORY,
    {RAY_SERVICE},
    _prefill_decode_mismatches,
)
HELM_CHARTS_PINNED = resource_policy(
    "helm-charts-pinned",
    "Every Helm release installs an exact chart version (no missing version, no 'latest', no range).",
    EnforcementLevel.MANDATORY,
    {HELM_RELEASE},
    _unpinned_charts,
)
IMAGES_PINNED = resource_policy(
    "images-pinned",
    "Every container image, the DLC image included, is pinned by tag or digest (no 'latest', no missing tag).",
    EnforcementLevel.MANDATORY,
    lambda resource_type: resource_type.startswith("kubernetes:") and resource_type != HELM_RELEASE,
    _unpinned_images,
)
SERVE_ENDPOINT_NOT_OPEN = resource_policy(
    "serve-endpoint-not-open",
    "The serve endpoint (a LoadBalancer Service, or a RayService's serveService) is not internet-facing without "
    "source CIDRs, a gate in front of its API keys.",
    EnforcementLevel.MANDATORY,
    {KUBERNETES_SERVICE, RAY_SERVICE},
    _of_each_service(_open_load_balancer),
)
SERVE_ENDPOINT_TLS = resource_policy(
    "serve-endpoint-tls",
    "A load balancer in front of the model API (a Service, or one KubeRay makes of a RayService) listens for TLS only: "
    "a certificate, on every port, under a security policy of TLS 1.2 or later.",
    EnforcementLevel.MANDATORY,
    {KUBERNETES_SERVICE, RAY_SERVICE},
    _of_each_service(_plain_text_ports),
)
SERVE_ENDPOINT_AUTHENTICATED = stack_policy(
    "serve-endpoint-authenticated",
    "A RayService behind an internet-facing load balancer asks every request for an API key (the auth ingress).",
    EnforcementLevel.MANDATORY,
    _exposed_without_keys(internet_facing=True),
)
SERVE_ENDPOINT_AUTHENTICATED_INTERNAL = stack_policy(
    "serve-endpoint-authenticated-internal",
    "A RayService behind an internal load balancer asks for an API key (serveApiKeyAuth false turns it off).",
    EnforcementLevel.ADVISORY,
    _exposed_without_keys(internet_facing=False),
)
