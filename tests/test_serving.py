"""Serving: the KubeRay operator, the RayService against the real CRD, the token, the endpoint."""

from __future__ import annotations

import copy
import hashlib

import pytest
import yaml

from infra.serving.crds import KubeRayCrds
from infra.settings.rules_serving import has_ray_token_auth
from tests.chart_values import kuberay_operator_defaults, unknown_value_keys
from tests.conftest import EXPOSED_SECRET_KEYS, exposed, kuberay_run
from tests.rayservice_parts import RAYSERVICE, ROLLOUT, ray_container, rayservice, worker_group
from tests.schemas import kuberay_dir, raycluster_errors, rayservice_errors
from tools.offline import run_stack

RELEASE = "kubernetes:helm.sh/v3:Release"
SERVICE = "kubernetes:core/v1:Service"
SECRET = "kubernetes:core/v1:Secret"
OPERATOR_RELEASE = "serving-kuberay-kuberay-operator"
KUBERAY_CRDS = f"pulumi-python:{KubeRayCrds._resource_type_name}"


def head(run) -> dict:
    return rayservice(run)["spec"]["rayClusterConfig"]["headGroupSpec"]


def container(group: dict) -> dict:
    return ray_container(group["template"]["spec"])


def env(group: dict) -> dict:
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container(group).get("env", [])}


# --- KubeRay operator ---


def test_operator_chart_is_pinned_from_the_kuberay_repo(kuberay_stack):
    inputs = kuberay_stack.run.get(RELEASE, OPERATOR_RELEASE).inputs
    assert inputs["chart"] == "kuberay-operator"
    assert inputs["repositoryOpts"]["repo"] == "https://ray-project.github.io/kuberay-helm/"
    assert inputs["version"] == kuberay_stack.version
    assert inputs["namespace"] == "kuberay-system"


def test_the_default_operator_is_kuberay_1_7_0_and_rays_token_is_on(dev):
    """The newest validated release, the one whose RayCluster takes authOptions (vendor/kuberay-v1.7.0/
    ray.io_rayservices.yaml; docs/ray-token-auth.md): with rayAuthMode auto the default stack runs Ray with its
    token."""
    assert dev.get(RELEASE, OPERATOR_RELEASE).inputs["version"] == "1.7.0"
    assert rayservice(dev)["spec"]["rayClusterConfig"]["authOptions"] == {"mode": "token"}


def test_the_stack_applies_the_releases_crds_of_its_kinds_before_the_operator(kuberay_stack):
    """Helm installs a chart's crds/ on the first install only ("There is no support at this time for upgrading or
    deleting CRDs using Helm", https://helm.sh/docs/chart_best_practices/custom_resource_definitions/), so the stack
    applies the RayService and RayCluster CRDs of the release itself (the vendored files, which are the chart's crds/
    at the tag: vendor/kuberay-v<version>/SOURCE.txt), and the operator's release waits for them: the new schema is
    in place before the new operator, and before the RayService, which depends on the release."""
    crds = kuberay_stack.run.get(KUBERAY_CRDS, "serving-kuberay-crds")
    assert crds.inputs["kuberayVersion"] == kuberay_stack.version
    assert crds.inputs["crds"] == {
        name: hashlib.sha256(
            (kuberay_dir(kuberay_stack.version) / f"ray.io_{name.split('.')[0]}.yaml").read_bytes()
        ).hexdigest()
        for name in ("rayservices.ray.io", "rayclusters.ray.io")
    }
    assert crds.urn in kuberay_stack.run.get(RELEASE, OPERATOR_RELEASE).dependencies
    assert "kubeconfig" in crds.secret_inputs


def test_an_unvalidated_release_leaves_its_crds_to_helm():
    """No vendored CRDs to apply: Helm's first install puts in the chart's own, as before."""
    run = run_stack({"kuberayVersion": "1.6.2", "allowUnvalidatedKuberayVersion": True})
    assert not [r for r in run.resources if r.type == KUBERAY_CRDS]


def test_operator_values_exist_in_the_real_chart(kuberay_stack):
    """`resources` is the container's ResourceRequirements as given: the chart renders `{{- with .Values.resources }}
    resources: {{- toYaml . }}` (vendor/kuberay-v<version>/kuberay-operator-deployment.yaml, at 1.4.0 and 1.7.0), and
    its values.yaml leaves `requests` commented out beside the `limits` it sets."""
    values = kuberay_stack.run.get(RELEASE, OPERATOR_RELEASE).inputs["values"]
    defaults = kuberay_operator_defaults(kuberay_stack.version)
    assert unknown_value_keys({k: v for k, v in values.items() if k != "resources"}, defaults) == []
    assert set(values["resources"]) <= {"requests", "limits"}
    template = (kuberay_dir(kuberay_stack.version) / "kuberay-operator-deployment.yaml").read_text()
    assert "{{- with .Values.resources }}\n          resources:\n            {{- toYaml . | nindent 12 }}" in template


def test_operator_version_is_the_one_whose_schemas_are_checked(kuberay_stack):
    chart = yaml.safe_load((kuberay_dir(kuberay_stack.version) / "kuberay-operator-Chart.yaml").read_text())
    assert kuberay_stack.run.get(RELEASE, OPERATOR_RELEASE).inputs["version"] == chart["version"]


def test_operator_waits_for_the_system_nodes(dev):
    system = dev.get("eks:index:ManagedNodeGroup", "system-nodes-system")
    assert system.urn in dev.get(RELEASE, "serving-kuberay-kuberay-operator").dependencies


# --- the RayService document ---


def test_rayservice_validates_against_the_kuberay_crd(kuberay_stack):
    assert rayservice_errors(rayservice(kuberay_stack.run), kuberay_stack.version) == []


def test_its_cluster_config_validates_as_the_raycluster_the_operator_creates(kuberay_stack):
    """The operator creates the RayCluster with `Spec: rayClusterConfig` as given (constructRayClusterForRayService in
    vendor/kuberay-v<version>/rayservice_controller.go, lab/tests/test_kuberay_source.py; 1.7.0 clears worker
    `replicas` for an incremental upgrade's pending cluster only), so the config must also be a valid RayCluster spec
    of that release's RayCluster CRD."""
    cluster = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "ray-llm-abcde", "namespace": "inference"},
        "spec": rayservice(kuberay_stack.run)["spec"]["rayClusterConfig"],
    }
    assert raycluster_errors(cluster, kuberay_stack.version) == []


def test_an_unknown_field_fails_validation(kuberay_stack):
    broken = copy.deepcopy(rayservice(kuberay_stack.run))
    broken["spec"]["rayClusterConfig"]["headGroupSpec"]["rayStartParam"] = {}
    assert rayservice_errors(broken, kuberay_stack.version)


def test_the_rayservice_differs_between_kuberay_versions_only_by_rays_token(kuberay_stack):
    """What differs between 1.4.0 and 1.7.0 leaves the stack's RayService as it is (docs/kuberay-versions.md) but
    authOptions, which rayAuthMode auto sets where the operator has it; each release's CRD checks its document."""
    without_token = rayservice(kuberay_run(kuberay_stack.stack, "1.4.0"))
    at_version = copy.deepcopy(rayservice(kuberay_stack.run))  # the run is shared by the session
    auth = at_version["spec"]["rayClusterConfig"].pop("authOptions", None)
    assert auth == ({"mode": "token"} if has_ray_token_auth(kuberay_stack.version) else None)
    assert at_version == without_token


def test_rayservice_is_named_and_placed_from_config(dev):
    metadata = rayservice(dev)["metadata"]
    assert (metadata["name"], metadata["namespace"]) == ("ray-llm", "inference")
    renamed = rayservice(run_stack({"rayServiceName": "chat", "namespace": "llm"}))["metadata"]
    assert (renamed["name"], renamed["namespace"]) == ("chat", "llm")


def test_ray_version_and_image_come_from_config(dev):
    spec = rayservice(dev)["spec"]["rayClusterConfig"]
    assert spec["rayVersion"] == "2.58.0"
    image = "763104351884.dkr.ecr.sa-east-1.amazonaws.com/ray:serve-llm-cuda-v1.0"
    assert container(head(dev))["image"] == image
    assert container(worker_group(dev))["image"] == image


def test_image_override_reaches_every_ray_container():
    run = run_stack({"dlcImage": "example.com/ray/llm:2.58.0"})
    assert {container(head(run))["image"], container(worker_group(run))["image"]} == {"example.com/ray/llm:2.58.0"}


def test_head_runs_on_system_nodes_without_model_work(dev):
    group = head(dev)
    assert group["template"]["spec"]["nodeSelector"] == {"role": "system"}
    assert group["rayStartParams"]["num-gpus"] == "0"
    assert group["rayStartParams"]["num-cpus"] == "0"
    assert group["rayStartParams"]["dashboard-host"] == "0.0.0.0"


def test_head_fits_a_system_node(dev):
    """m7i.xlarge: 4 vCPUs, 16 GiB (https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html, as
    tools/instance_type_facts.py cites it), less what the system pods take."""
    requests = container(head(dev))["resources"]["requests"]
    assert int(requests["cpu"]) <= 4 - 1
    assert int(requests["memory"].removesuffix("Gi")) <= 16 - 4


def test_worker_group_is_one_pod_per_gpu_node(dev):
    group = worker_group(dev)
    assert group["replicas"] == group["minReplicas"] == group["maxReplicas"] == 2
    assert worker_group(run_stack({"decodeReplicas": 2}))["replicas"] == 3


def test_worker_requests_a_gpu_and_the_nodes_efa_interfaces(dev):
    resources = container(worker_group(dev))["resources"]
    assert resources["requests"] == resources["limits"]
    assert resources["limits"]["nvidia.com/gpu"] == "1"
    assert resources["limits"]["vpc.amazonaws.com/efa"] == "1"
    g6e_workers = worker_group(run_stack({"gpuNodeType": "g6e.48xlarge"}))
    assert g6e_workers["template"]["spec"]["containers"][0]["resources"]["limits"]["vpc.amazonaws.com/efa"] == "4"


def test_worker_fits_what_a_g6_8xlarge_leaves_allocatable(dev):
    limits = container(worker_group(dev))["resources"]["limits"]
    assert 16 <= int(limits["cpu"]) < 32
    assert 64 <= int(limits["memory"].removesuffix("Gi")) < 128


def test_worker_lands_on_gpu_nodes_through_their_taint(dev):
    spec = worker_group(dev)["template"]["spec"]
    assert spec["nodeSelector"] == {"role": "gpu-worker"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]


def test_worker_has_a_memory_backed_dev_shm(dev):
    spec = worker_group(dev)["template"]["spec"]
    (volume,) = [v for v in spec["volumes"] if v["name"] == "dshm"]
    assert volume["emptyDir"]["medium"] == "Memory"
    assert {"name": volume["name"], "mountPath": "/dev/shm"} in container(worker_group(dev))["volumeMounts"]


def test_worker_environment_for_nixl_over_efa(dev):
    variables = env(worker_group(dev))
    assert variables["VLLM_HOST_IP"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert variables["FI_PROVIDER"] == "efa"
    assert "IPC_LOCK" in container(worker_group(dev))["securityContext"]["capabilities"]["add"]


def test_the_kubernetes_provider_does_not_wait_on_the_rayservice(dev):
    """pulumi-kubernetes's `condition=Ready` wait holds on KubeRay 1.4.0's Ready, which stays true over a failed
    or not yet applied serve config (rayservice_controller.go calculateConditions: Ready = serve endpoints > 0);
    the ServeRollout waits instead, and `pulumi.com/skipAwait` keeps the provider from a second, misleading wait
    (pulumi-kubernetes provider/pkg/metadata/overrides.go, SkipAwaitLogic)."""
    annotations = rayservice(dev)["metadata"]["annotations"]
    assert annotations["pulumi.com/skipAwait"] == "true"


def test_up_waits_for_the_rollout_as_long_as_configured(dev):
    assert dev.get(ROLLOUT, "serving-rollout").inputs["timeoutSeconds"] == 45 * 60
    patient = run_stack({"serveReadyTimeoutMinutes": 90})
    assert patient.get(ROLLOUT, "serving-rollout").inputs["timeoutSeconds"] == 90 * 60


def test_rayservice_comes_after_operator_plugins_and_namespace(dev):
    dependencies = dev.get(RAYSERVICE, "serving-rayservice").dependencies
    for type_, name in [
        (RELEASE, "serving-kuberay-kuberay-operator"),
        (RELEASE, "device-plugins-nvidia-device-plugin"),
        (RELEASE, "device-plugins-efa-device-plugin"),
        ("kubernetes:core/v1:Namespace", "serving-namespace"),
    ]:
        assert dev.get(type_, name).urn in dependencies


# --- Hugging Face token ---


def test_no_token_no_secret(dev):
    assert [secret for secret in dev.of_type(SECRET) if "hf-token" in secret.name] == []
    assert "HF_TOKEN" not in env(worker_group(dev))


@pytest.fixture(scope="module")
def with_token():
    """The workers read the Hub (no model cache), with a token."""
    return run_stack({"hfToken": "hf_abc", "modelCache": False}, secret_keys=("hfToken",))


def test_token_becomes_a_kubernetes_secret_kept_secret(with_token):
    secret = with_token.get(SECRET, "serving-hf-token")
    assert secret.inputs["stringData"] == {"HF_TOKEN": "hf_abc"}
    assert "stringData" in secret.secret_inputs
    assert secret.inputs["metadata"] == {"name": "hf-token", "namespace": "inference"}


def test_token_reaches_the_workers_by_reference(with_token):
    reference = {"secretKeyRef": {"name": "hf-token", "key": "HF_TOKEN"}}
    assert env(worker_group(with_token))["HF_TOKEN"] == reference
    assert "hf_abc" not in yaml.safe_dump(rayservice(with_token))


def test_token_never_reaches_a_stack_output(with_token):
    assert "hf_abc" not in repr({k: v for k, v in with_token.outputs.items() if k not in with_token.secret_outputs})


# --- endpoint ---


def test_endpoint_outputs(dev):
    assert dev.outputs["serveEndpoint"] == "http://ray-llm-serve-svc.inference.svc.cluster.local:8000/v1"
    assert dev.outputs["portForwardCommand"] == "kubectl port-forward -n inference svc/ray-llm-serve-svc 8000:8000"
    assert dev.outputs["modelId"] == "qwen3.5-9b"
    assert dev.outputs["curlModelsCommand"] == "curl --silent http://127.0.0.1:8000/v1/models"


def test_no_load_balancer_by_default(dev):
    assert [service for service in dev.of_type(SERVICE) if service.inputs["spec"]["type"] == "LoadBalancer"] == []
    assert "serveLoadBalancerHostname" not in dev.outputs


def test_internal_load_balancer_is_restricted_to_source_cidrs(prod):
    service = prod.get(SERVICE, "serving-serve-load-balancer").inputs
    assert service["metadata"]["annotations"]["service.beta.kubernetes.io/aws-load-balancer-internal"] == "true"
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["spec"]["loadBalancerSourceRanges"] == ["10.0.0.0/8"]
    assert service["spec"]["selector"] == {"app.kubernetes.io/instance": "ray-llm", "ray.io/serve": "true"}
    assert prod.outputs["serveLoadBalancerHostname"].endswith(".elb.us-east-1.amazonaws.com")


def test_load_balancer_selects_pods_the_rayservice_labels(prod):
    selector = prod.get(SERVICE, "serving-serve-load-balancer").inputs["spec"]["selector"]
    for group in (head(prod), worker_group(prod)):
        assert (
            group["template"]["metadata"]["labels"]["app.kubernetes.io/instance"]
            == selector["app.kubernetes.io/instance"]
        )


def test_internet_facing_load_balancer_is_public_but_restricted():
    run = run_stack(exposed("internet-facing", serveSourceCidrs=["100.24.20.0/24"]), secret_keys=EXPOSED_SECRET_KEYS)
    service = run.get(SERVICE, "serving-serve-load-balancer").inputs
    assert "service.beta.kubernetes.io/aws-load-balancer-internal" not in service["metadata"]["annotations"]
    assert service["spec"]["loadBalancerSourceRanges"] == ["100.24.20.0/24"]
