"""The exposed serve endpoint: API keys (settings, the Secret and ConfigMap the pods mount, the serve config that
names the auth ingress, the key output) and HTTPS on the load balancer. The auth component itself is proven on
Ray Serve in tests/test_serve_auth.py."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from infra.serving import serve_auth
from infra.serving.code_package import SERVE_EXT, ZIP_TOP
from infra.serving.rayservice import TLS_CERT_ANNOTATION, TLS_POLICY_ANNOTATION, TLS_PORTS_ANNOTATION
from infra.settings.changes import KEYS_RELOADED
from infra.settings.stack_config import ConfigError
from infra.settings.table import CHANGE_EFFECTS
from tests.conftest import API_KEYS, EXPOSED_SECRET_KEYS, OPERATOR_CERTIFICATE, exposed
from tests.rayservice_parts import configmap_zip, mounted_volume, pod_specs, serve_config
from tools.offline import StackRun, load_stack_config, run_stack

SECRET = "kubernetes:core/v1:Secret"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
SERVICE = "kubernetes:core/v1:Service"
DEV_CERTIFICATE = OPERATOR_CERTIFICATE.format(region="sa-east-1")


@pytest.fixture(scope="module")
def internal() -> StackRun:
    return run_stack(exposed(), secret_keys=EXPOSED_SECRET_KEYS)


def rejected(overrides: dict, secret_keys: tuple[str, ...] = EXPOSED_SECRET_KEYS) -> str:
    with pytest.raises(ConfigError) as caught:
        load_stack_config(overrides, secret_keys=secret_keys)
    return str(caught.value)


# --- settings ---


def test_an_exposed_endpoint_asks_for_keys_by_default():
    cfg = load_stack_config(exposed(), secret_keys=EXPOSED_SECRET_KEYS)
    assert (cfg.serve_exposure, cfg.serve_api_key_auth, cfg.serve_certificate_arn) == (
        "internal",
        True,
        DEV_CERTIFICATE,
    )


def test_an_endpoint_kept_in_the_cluster_asks_for_none(dev):
    (app,) = serve_config(dev)["applications"]
    assert "ingress_cls_config" not in app["args"] and "runtime_env" not in app
    assert not [r for r in dev.resources if r.name in ("serve-auth-code", "serve-api-keys")]


def test_keys_in_plain_text_are_refused_and_never_echoed():
    message = rejected(exposed(), secret_keys=())
    assert "serveApiKeys is set in plain text: set it with `pulumi config set --secret serveApiKeys" in message
    assert not any(key in message for key in API_KEYS)


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ([API_KEYS[0], "short"], "serveApiKeys[1] is invalid: allowed is 32 to 256 printable ASCII characters"),
        ([API_KEYS[0], API_KEYS[0]], "serveApiKeys[1] is invalid: it repeats serveApiKeys[0]"),
        ([f"{API_KEYS[0][:40]} {API_KEYS[0][:40]}"], "serveApiKeys[0] is invalid"),
        ({"key": API_KEYS[0]}, "serveApiKeys is invalid: allowed is a JSON list of keys"),
    ],
    ids=["short", "repeated", "space", "not-a-list"],
)
def test_a_bad_key_is_named_by_its_index_never_shown(keys, expected):
    message = rejected(exposed(serveApiKeys=keys))
    assert expected in message
    assert API_KEYS[0] not in message and API_KEYS[0][:40] not in message


def test_an_exposed_endpoint_needs_a_key_while_auth_is_on():
    message = rejected({**exposed(), "serveApiKeys": ""}, secret_keys=())
    assert "serveExposure='internal' needs serveApiKeys (serveApiKeyAuth is true)" in message


def test_auth_may_be_switched_off_on_an_internal_endpoint_only():
    cfg = load_stack_config({**exposed(), "serveApiKeys": "", "serveApiKeyAuth": False})
    assert cfg.serve_api_key_auth is False and cfg.serve_api_keys is None
    message = rejected(exposed("internet-facing", serveSourceCidrs=["100.24.20.0/24"], serveApiKeyAuth=False))
    assert "serveApiKeyAuth=false is invalid with serveExposure='internet-facing'" in message


def test_any_exposure_needs_a_certificate():
    message = rejected({**exposed(), "serveCertificateArn": ""})
    assert "serveExposure='internal' needs serveCertificateArn: the load balancer serves HTTPS only" in message


def test_a_certificate_must_be_an_acm_arn():
    message = rejected(exposed(serveCertificateArn="arn:aws:iam::123456789012:server-certificate/web"))
    assert "serveCertificateArn='arn:aws:iam::123456789012:server-certificate/web' is invalid" in message


def test_a_certificate_of_another_region_is_refused():
    """ACM certificates are regional: "To use a certificate with Elastic Load Balancing for the same ... FQDN in
    more than one AWS region, you must request or import a certificate for each region"
    (https://docs.aws.amazon.com/acm/latest/userguide/acm-regions.html)."""
    message = rejected(exposed(serveCertificateArn=OPERATOR_CERTIFICATE.format(region="us-east-1")))
    assert "it is in us-east-1, and a load balancer takes only a certificate of its own region" in message


# --- what the cluster gets ---


def test_the_app_names_the_auth_ingress_and_ships_its_package(internal):
    (app,) = serve_config(internal)["applications"]
    assert app["args"]["ingress_cls_config"] == {
        "ingress_cls": serve_auth.INGRESS_CLS,
        "ingress_extra_kwargs": {"api_keys_file": serve_auth.KEYS_FILE},
    }
    assert app["runtime_env"] == {"py_modules": [serve_auth.CODE.uri()]}


def test_the_ingress_arguments_are_ones_ray_serve_llm_reads():
    """IngressClsConfig (ray/llm/_internal/serve/core/ingress/builder.py) imports vLLM, which the test venv lacks:
    its fields are read from the installed Ray's source, and the class our config names is found in serve_ext/ by
    its own source, as the ingress module's `load_class` would import it."""
    spec = importlib.util.find_spec("ray.llm._internal.serve.core.ingress")
    source = Path(spec.submodule_search_locations[0], "builder.py").read_text()
    (config_class,) = [
        n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == "IngressClsConfig"
    ]
    fields = {n.target.id for n in config_class.body if isinstance(n, ast.AnnAssign)}
    assert set(serve_auth.ingress_args()["ingress_cls_config"]) <= fields
    module, _, name = serve_auth.INGRESS_CLS.partition(":")
    ingress_source = SERVE_EXT / f"{module.replace('.', '/')}.py"
    assert name in {n.name for n in ast.parse(ingress_source.read_text()).body if isinstance(n, ast.ClassDef)}


def test_every_ray_pod_mounts_the_code_and_the_keys(internal):
    for spec in pod_specs(internal):
        assert mounted_volume(spec, serve_auth.CODE.mount)["configMap"] == {"name": serve_auth.CODE.configmap_name()}
        assert mounted_volume(spec, serve_auth.KEYS_MOUNT)["secret"] == {"secretName": serve_auth.KEYS_SECRET}


def test_the_configmap_holds_the_zip_the_uri_names(internal):
    name, entries = configmap_zip(internal, "serving-serve-auth-code")
    assert f"file://{serve_auth.CODE.mount}/{name}" == serve_auth.CODE.uri()
    assert f"{ZIP_TOP}/{serve_auth.PACKAGE}/ingress.py" in entries


def test_the_keys_secret_holds_every_key_a_line_and_is_a_pulumi_secret(internal):
    secret = internal.get(SECRET, "serving-serve-api-keys")
    assert secret.inputs["stringData"] == {serve_auth.KEYS_SECRET_KEY: f"{API_KEYS[0]}\n{API_KEYS[1]}\n"}
    assert "stringData" in secret.secret_inputs


def test_the_rayservice_waits_for_the_code_and_the_keys(internal):
    dependencies = set(internal.get("kubernetes:ray.io/v1:RayService", "serving-rayservice").dependencies)
    assert {
        internal.get(CONFIG_MAP, "serving-serve-auth-code").urn,
        internal.get(SECRET, "serving-serve-api-keys").urn,
    } <= (dependencies)


def test_the_first_key_is_the_only_secret_output_that_carries_one(internal):
    assert internal.outputs["serveApiKey"] == API_KEYS[0]
    assert "serveApiKey" in internal.secret_outputs
    plain = [name for name, value in internal.outputs.items() if name not in internal.secret_outputs]
    assert not [name for name in plain if any(key in str(internal.outputs[name]) for key in API_KEYS)]


def test_the_curl_command_sends_the_key_from_the_secret_output(internal):
    assert (
        '--header "Authorization: Bearer $(pulumi stack output --show-secrets serveApiKey)"'
        in (internal.outputs["curlModelsCommand"])
    )


# --- HTTPS on the load balancer ---


def test_the_load_balancer_listens_for_tls_only_with_a_modern_policy(internal):
    """EKS's cloud provider (no AWS Load Balancer Controller here) makes a TLS listener of each `nlb` Service port
    listed in aws-load-balancer-ssl-ports when aws-load-balancer-ssl-cert is set, with the SslPolicy of
    aws-load-balancer-ssl-negotiation-policy (kubernetes/cloud-provider-aws pkg/providers/v1/aws.go,
    EnsureLoadBalancer: nlbPortMapping FrontendProtocol TLS, SSLCertificateARN, SSLPolicy). Without a policy the
    API's default is ELBSecurityPolicy-2016-08, which takes TLS 1.0
    (https://docs.aws.amazon.com/elasticloadbalancing/latest/network/describe-ssl-policies.html)."""
    service = internal.get(SERVICE, "serving-serve-load-balancer").inputs
    annotations = service["metadata"]["annotations"]
    assert annotations[TLS_CERT_ANNOTATION] == DEV_CERTIFICATE
    assert annotations[TLS_POLICY_ANNOTATION] == "ELBSecurityPolicy-TLS13-1-2-2021-06"
    (port,) = service["spec"]["ports"]
    assert annotations[TLS_PORTS_ANNOTATION] == str(int(port["port"])) == "443"
    assert port["targetPort"] == 8000


def test_the_load_balancer_endpoint_output_is_https(internal):
    assert internal.outputs["serveLoadBalancerEndpoint"].startswith("https://")


# --- what a change does ---


def test_a_new_key_updates_only_the_keys_secret(internal):
    """A mounted Secret is updated in place in the pods ("Mounted Secrets are updated automatically",
    https://kubernetes.io/docs/concepts/configuration/secret/#using-secrets-as-files-from-a-pod); the ingress
    re-reads the file (tests/test_serve_auth.py), so no pod restarts."""
    rotated = run_stack(exposed(serveApiKeys=[API_KEYS[1]]), secret_keys=EXPOSED_SECRET_KEYS, existing=internal)
    before = {(r.type, r.name): r.inputs for r in internal.resources}
    moved = {(r.type, r.name) for r in rotated.resources if before.get((r.type, r.name)) != r.inputs}
    assert moved == {(SECRET, "serving-serve-api-keys")}
    assert CHANGE_EFFECTS["serveApiKeys"] == (KEYS_RELOADED,)


def test_new_auth_code_comes_with_a_new_configmap_name():
    """A ConfigMap updated in place reaches a mounted volume only at the kubelet's next periodic sync
    (https://kubernetes.io/docs/concepts/configuration/configmap/#mounted-configmaps-are-updated-automatically)
    while the serve config names the new zip at once; a name of its own per package digest makes new code a pod
    volume change, which replaces the RayService, so no replica looks for a zip its volume does not hold yet."""
    digest = serve_auth.CODE.zip_name().removeprefix(f"{serve_auth.PACKAGE}-").removesuffix(".zip")
    assert serve_auth.CODE.configmap_name() == f"serve-auth-code-{digest[:10]}"
