"""Ray's token authentication as KubeRay 1.7.0 runs it (`authOptions` on the RayCluster spec, the RayService's
`rayClusterConfig`), read in its vendored sources (vendor/kuberay-v1.7.0/: raycluster_types.go, pod.go,
raycluster_controller.go, constant.go, util.go, validation.go, dashboard_httpclient.go, rayservice_controller.go;
ray-project/kuberay at the tag, paths in SOURCE.txt), and held to what the stack's clients do
(infra/serving/rollout_status.py: which Secret, which key, which header). docs/ray-token-auth.md tells the same story
in prose; lab/tests/test_ray_token_auth.py shows Ray's side on a real Ray 2.58 head."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import ray
from packaging.version import Version

from infra.serving.rollout_status import (
    RAY_TOKEN_HEADER,
    RAY_TOKEN_MODE,
    RAY_TOKEN_SECRET_KEY,
    kuberay_checked_name,
    ray_token_secret,
)
from lab.tests.kuberay_source import go_function, kuberay_source
from tests.rayservice_parts import rayservice
from tests.schemas import crd_schema, kuberay_dir, rayservice_crd_schema

KUBERAY = "1.7.0"
RAY_DIR = Path(ray.__file__).parent


def source(file: str) -> str:
    return kuberay_source(KUBERAY, file)


def function(name: str, file: str) -> str:
    return go_function(source(file), name)


def auth_options_schema(crd: str) -> dict:
    return crd_schema(kuberay_dir(KUBERAY) / crd)["properties"]["spec"]["properties"]["authOptions"]


# --- when auth is on ---


def test_auth_is_on_only_with_mode_token():
    """IsAuthEnabled decides whether the pods get RAY_AUTH_MODE (pod.go) and is the dashboard client's own test."""
    assert "return spec.AuthOptions != nil && spec.AuthOptions.Mode == rayv1.AuthModeToken" in function(
        "IsAuthEnabled", "util.go"
    )
    client = function("GetRayDashboardClientFunc", "util.go")
    assert "rayCluster.Spec.AuthOptions != nil && rayCluster.Spec.AuthOptions.Mode == rayv1.AuthModeToken" in client
    assert 'AuthModeToken AuthMode = "token"' in source("raycluster_types.go") and RAY_TOKEN_MODE == "token"


def test_an_absent_mode_is_no_token_mode():
    """The type's comment says `Defaults to "token"`, but no marker gives the CRDs a default, so the API server stores
    no mode and KubeRay reads "" (not token): `authOptions: {}` leaves Ray open. The stack's clients agree."""
    comment = source("raycluster_types.go").split("type AuthOptions struct", 1)[1].split("}", 1)[0]
    assert '// Defaults to "token".' in comment and "+kubebuilder:default" not in comment
    mode = {"enum": ["disabled", "token"], "type": "string"}
    assert auth_options_schema("ray.io_rayclusters.yaml")["properties"]["mode"] == mode
    assert rayservice_cluster_properties(KUBERAY)["authOptions"]["properties"]["mode"] == mode
    assert ray_token_secret({"metadata": {"name": "c"}, "spec": {"authOptions": {}}}) is None


def rayservice_cluster_properties(version: str) -> dict:
    return rayservice_crd_schema(version)["properties"]["spec"]["properties"]["rayClusterConfig"]["properties"]


def test_kuberay_1_4_has_no_auth_options():
    """The operator a stack may pin (the default before 1.7.0): its CRD has no such field, and the API server drops a
    field its CRD's schema does not know (a warning at most), so `authOptions` given to 1.4.0 would be lost and Ray
    left open."""
    assert "authOptions" not in rayservice_cluster_properties("1.4.0")
    assert "authOptions" in rayservice_cluster_properties(KUBERAY)


# --- the token's Secret ---


def test_the_token_secret_is_the_clusters_own_unless_one_is_named():
    """One name everywhere KubeRay uses it: the Secret it creates, the pods' RAY_AUTH_TOKEN and its dashboard client
    each take `authOptions.secretName`, else CheckName(<RayCluster name>)."""
    assert "secretName := utils.CheckName(instance.Name)" in function("reconcileAuthSecret", "raycluster_controller.go")
    assert "secretName := utils.CheckName(clusterName)" in function("SetContainerTokenAuthEnvVars", "pod.go")
    assert "secretName := CheckName(rayCluster.Name)" in function("GetRayDashboardClientFunc", "util.go")
    for body in (function("SetContainerTokenAuthEnvVars", "pod.go"), function("GetRayDashboardClientFunc", "util.go")):
        assert re.search(r"secretName = \*(authOptions|rayCluster\.Spec\.AuthOptions)\.SecretName", body)
    named = 'if instance.Spec.AuthOptions.SecretName != nil && *instance.Spec.AuthOptions.SecretName != "" {'
    assert f"{named}\n\t\treturn nil" in function("reconcileAuthSecret", "raycluster_controller.go")


@pytest.mark.parametrize(
    ("name", "checked"),
    [
        ("ray-llm-abcde", "ray-llm-abcde"),
        ("inference-" * 5 + "abcde", "ence-inference-inference-inference-inference-abcde"),
        ("prod-eu-" + "inference-" * 4 + "llm-abcde", "rinference-inference-inference-inference-llm-abcde"),
        ("7th-ray-llm-abcde", "rth-ray-llm-abcde"),
    ],
    ids=["short", "long", "long-cut-at-a-dash", "digit"],
)
def test_the_secret_name_is_kuberays_checked_cluster_name(name, checked):
    """utils/util.go CheckName: at most 50 characters, the front cut off; a leading digit or punctuation mark
    becomes `r` (a RayService's clusters are `<name>-<5 characters>`: GenerateRayClusterName)."""
    body = function("CheckName", "util.go")
    assert "maxLength := 50" in body and "s = s[offset:]" in body
    assert "unicode.IsDigit(rune(s[0]))" in body and "unicode.IsPunct(rune(s[0]))" in body
    assert kuberay_checked_name(name) == checked
    assert ray_token_secret({"metadata": {"name": name}, "spec": {"authOptions": {"mode": "token"}}}) == checked


def test_the_token_is_under_auth_token():
    assert 'RAY_AUTH_TOKEN_SECRET_KEY = "auth_token"' in source("constant.go")
    assert '"auth_token": token,' in function("createAuthSecret", "raycluster_controller.go")
    assert "secret.Data[RAY_AUTH_TOKEN_SECRET_KEY]" in function("GetRayDashboardClientFunc", "util.go")
    assert "Key:                  utils.RAY_AUTH_TOKEN_SECRET_KEY," in function(
        "SetContainerTokenAuthEnvVars", "pod.go"
    )
    assert RAY_TOKEN_SECRET_KEY == "auth_token"


def test_the_generated_secret_goes_with_its_cluster():
    """The RayCluster is the Secret's controller owner, so Kubernetes' garbage collector deletes the Secret with the
    cluster (a replaced RayService's cluster takes its token with it); the token is 32 random bytes in base64."""
    create = function("createAuthSecret", "raycluster_controller.go")
    assert '*metav1.NewControllerRef(rayCluster, rayv1.SchemeGroupVersion.WithKind("RayCluster")),' in create
    assert "token, err := generateRandomToken(32)" in create
    assert "base64.StdEncoding.EncodeToString(bytes)" in function("generateRandomToken", "raycluster_controller.go")


def test_the_secret_is_made_before_the_pods():
    order = source("raycluster_controller.go").split("reconcileFuncs := []reconcileFunc{", 1)[1].split("}", 1)[0]
    assert order.index("r.reconcileAuthSecret") < order.index("r.reconcilePods")


# --- who gets the token ---


def test_the_head_workers_autoscaler_and_gcs_wait_get_the_token():
    head, worker = function("DefaultHeadPodTemplate", "pod.go"), function("DefaultWorkerPodTemplate", "pod.go")
    on = "if utils.IsAuthEnabled(&instance.Spec) {\n\t\t"
    assert f"{on}configureTokenAuth(instance.Name, &podTemplate, instance.Spec.AuthOptions)" in head
    assert f"{on}configureTokenAuth(instance.Name, &podTemplate, instance.Spec.AuthOptions)" in worker
    assert "SetContainerTokenAuthEnvVars(instance.Name, &autoscalerContainer, instance.Spec.AuthOptions)" in head
    configure = function("configureTokenAuth", "pod.go")
    assert (
        "SetContainerTokenAuthEnvVars(clusterName, &podTemplate.Spec.Containers[utils.RayContainerIndex]" in configure
    )
    assert 'if initContainer.Name != "wait-gcs-ready" {' in configure


def test_the_token_env_comes_from_the_secret_and_yields_to_the_users():
    """RAY_AUTH_MODE=token and RAY_AUTH_TOKEN from the Secret, each only where the container does not set it already:
    a RAY_AUTH_* of the stack's own would win over KubeRay's, silently (validation.go checks none)."""
    env = function("SetContainerTokenAuthEnvVars", "pod.go")
    assert "if !utils.EnvVarExists(utils.RAY_AUTH_MODE_ENV_VAR, container.Env) {" in env
    assert "if !utils.EnvVarExists(utils.RAY_AUTH_TOKEN_ENV_VAR, container.Env) {" in env
    assert "Value: string(rayv1.AuthModeToken)," in env and "SecretKeyRef: &corev1.SecretKeySelector{" in env
    assert "RAY_AUTH" not in function("ValidateRayClusterSpec", "validation.go")


def test_the_stacks_pods_set_no_ray_auth_env(shipped):
    """So KubeRay's RAY_AUTH_MODE and RAY_AUTH_TOKEN are the ones the pods get, once the stack sets authOptions."""
    cluster = rayservice(shipped)["spec"]["rayClusterConfig"]
    templates = [cluster["headGroupSpec"]["template"], *(group["template"] for group in cluster["workerGroupSpecs"])]
    names = [env["name"] for t in templates for c in t["spec"]["containers"] for env in c.get("env", [])]
    assert names and [name for name in names if name.startswith("RAY_AUTH")] == []


# --- what KubeRay checks ---


def test_token_mode_needs_ray_2_52_and_the_stack_runs_newer(shipped):
    rules = function("ValidateRayClusterSpec", "validation.go")
    assert 'minVersion := version.MustParseGeneric("2.52.0")' in rules
    assert "authOptions.mode is 'token' but RayVersion was not specified" in rules
    assert Version(rayservice(shipped)["spec"]["rayClusterConfig"]["rayVersion"]) >= Version("2.52.0")


def test_a_rayservice_may_not_use_kubernetes_token_auth():
    rules = function("ValidateRayServiceSpec", "validation.go")
    assert "K8s token auth mode is currently not supported for RayService" in rules


# --- how the operator reads each cluster's dashboard ---


def test_kuberays_dashboard_client_sends_the_token_in_x_ray_authorization():
    client = source("dashboard_httpclient.go")
    assert 'req.Header.Set("x-ray-authorization", fmt.Sprintf("Bearer %s", r.authToken))' in function(
        "setAuthHeader", "dashboard_httpclient.go"
    )
    assert client.count("r.setAuthHeader(req)") == client.count("http.NewRequestWithContext(")
    assert RAY_TOKEN_HEADER == "x-ray-authorization"


def test_each_cluster_gets_a_dashboard_client_with_its_own_token():
    """reconcileServe builds the client from the RayCluster it reconciles, the active one or the pending one of a
    NewCluster upgrade; the client reads that cluster's Secret, and a missing Secret is an error that keeps the serve
    config from that cluster until the Secret exists."""
    serve = function("reconcileServe", "rayservice_controller.go")
    assert "rayDashboardClient, err := r.dashboardClientFunc(rayClusterInstance, clientURL)" in serve
    assert "if err != nil {\n\t\treturn false, serveApplications, err" in serve.split("r.dashboardClientFunc(", 1)[1]
    client = function("GetRayDashboardClientFunc", "util.go")
    assert 'return nil, fmt.Errorf("failed to get auth secret %s/%s: %w"' in client
    assert "dashboardClient.InitClient(httpClient, dashboardURL, authToken)" in client


# --- the probes, with auth on ---


def test_the_probes_ask_health_paths_ray_leaves_open():
    """KubeRay's probes (pod.go initLivenessAndReadinessProbe) send no token; Ray exempts each path they ask
    (ray/dashboard/http_server_agent.py PUBLIC_EXACT_PATHS, http_server_head.py public_exact_paths; Serve's proxy
    has no token check), so they keep passing with auth on (lab/tests/test_ray_token_auth.py)."""
    constants = source("constant.go")
    probed = {
        "agent": re.findall(r'(?:RayNodeHealthPath|RayAgentRayletHealthPath)\s+= "/?([^"]+)"', constants),
        "head": re.findall(r'RayDashboardGCSHealthPath\s+= "([^"]+)"', constants),
    }
    assert probed == {"agent": ["api/local_raylet_healthz", "api/healthz"], "head": ["api/gcs_healthz"]}
    agent = (RAY_DIR / "dashboard" / "http_server_agent.py").read_text().split("PUBLIC_EXACT_PATHS = [", 1)[1]
    head = (RAY_DIR / "dashboard" / "http_server_head.py").read_text().split("public_exact_paths = {", 1)[1]
    assert all(f'"/{path}"' in agent.split("]", 1)[0] for path in probed["agent"])
    assert all(f'"/{path}"' in head.split("}", 1)[0] for path in probed["head"])
    assert 'version.MustParseGeneric("2.53.0")' in function("supportsUnifiedHealthCheck", "pod.go")
