"""Pod Security Admission on every namespace the stack makes, and each pod the stack declares held to its namespace's
level (issue 51), by the Pod Security Standards' rules (tests/pod_security.py). Each level is the lowest its pods
allow: the pod that needs it fails the level below, on the named fields only."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
import yaml

from infra.kube.namespaces import MODEL_CACHE_NAMESPACE, MONITORING_NAMESPACE
from infra.kube.pod_security import (
    AUDIT_LABEL,
    BASELINE,
    ENFORCE_LABEL,
    MODEL_CACHE_LEVEL,
    MONITORING_LEVEL,
    OPERATOR_LEVEL,
    PRIVILEGED,
    RESTRICTED,
    SERVING_LEVEL,
)
from infra.kube.scheduling import OPERATOR_NAMESPACE
from tests.conftest import SERVE_AUTOSCALING
from tests.pod_security import violations
from tests.rayservice_parts import rayservice
from tools.offline import StackRun, run_stack

VENDOR = Path(__file__).parent.parent / "vendor"
NAMESPACE = "kubernetes:core/v1:Namespace"
NAMESPACE_PATCH = "kubernetes:core/v1:NamespacePatch"


@cache
def cached_run() -> StackRun:
    return run_stack({"modelCache": True, "hfToken": "hf_abc"}, secret_keys=("hfToken",))


def namespace_labels(run: StackRun) -> dict[str, dict[str, str]]:
    """Every namespace the stack makes or labels, and its labels."""
    found = {}
    for resource in [*run.of_type(NAMESPACE), *run.of_type(NAMESPACE_PATCH)]:
        metadata = resource.inputs["metadata"]
        found[metadata["name"]] = metadata.get("labels", {})
    return found


def pod_specs(run: StackRun) -> dict[str, tuple[str, dict]]:
    """Each pod the stack declares: its namespace and spec."""
    manifest = rayservice(run)
    cluster, namespace = manifest["spec"]["rayClusterConfig"], manifest["metadata"]["namespace"]
    pods = {
        "ray-head": (namespace, cluster["headGroupSpec"]["template"]["spec"]),
        "ray-worker": (namespace, cluster["workerGroupSpecs"][0]["template"]["spec"]),
    }
    for kind in ("kubernetes:apps/v1:DaemonSet", "kubernetes:batch/v1:Job"):
        for resource in run.of_type(kind):
            metadata = resource.inputs["metadata"]
            pods[metadata["name"]] = (metadata["namespace"], resource.inputs["spec"]["template"]["spec"])
    return pods


def test_every_namespace_the_stack_makes_enforces_its_level_and_audits_restricted():
    run = cached_run()
    namespace = rayservice(run)["metadata"]["namespace"]
    expected = {
        namespace: SERVING_LEVEL,
        MODEL_CACHE_NAMESPACE: MODEL_CACHE_LEVEL,
        MONITORING_NAMESPACE: MONITORING_LEVEL,
        OPERATOR_NAMESPACE: OPERATOR_LEVEL,
    }
    labels = namespace_labels(run)
    assert set(labels) == set(expected)
    for name, level in expected.items():
        assert (labels[name][ENFORCE_LABEL], labels[name][AUDIT_LABEL]) == (level, RESTRICTED), name


def test_every_pod_passes_its_namespaces_level():
    run = cached_run()
    labels = namespace_labels(run)
    pods = pod_specs(run)
    assert len(pods) == 4  # head, workers, the image pre-puller, the model mirror
    for name, (namespace, spec) in pods.items():
        assert violations(labels[namespace][ENFORCE_LABEL], spec) == [], name


def test_the_serving_namespace_is_privileged_for_the_gpu_workers_alone():
    """Baseline forbids hostPath volumes and capabilities beyond its list; the workers' compile cache and EFA's
    IPC_LOCK are what they need. The head passes baseline, the pre-puller restricted."""
    pods = pod_specs(cached_run())
    assert SERVING_LEVEL == PRIVILEGED
    assert violations(BASELINE, pods["ray-worker"][1]) == ["ray-worker: adds IPC_LOCK", "volume vllm-cache: hostPath"]
    assert violations(BASELINE, pods["ray-head"][1]) == []
    assert violations(RESTRICTED, pods["image-prepull"][1]) == []


def test_the_ray_pods_and_the_mirror_fail_restricted_only_on_the_images_user():
    """Every container (the workers' edge too) drops every capability (the workers' Ray container adds IPC_LOCK back),
    escalates no privilege and runs under the runtime's default seccomp filter; what is left of restricted is
    runAsNonRoot, the DLC image's user."""
    pods = pod_specs(cached_run())
    mirror = next(name for name in pods if name.startswith("model-mirror"))
    assert violations(RESTRICTED, pods["ray-head"][1]) == ["ray-head: runAsNonRoot not true"]
    assert violations(RESTRICTED, pods[mirror][1]) == ["mirror: runAsNonRoot not true"]
    assert MODEL_CACHE_LEVEL == BASELINE and violations(BASELINE, pods[mirror][1]) == []
    assert violations(RESTRICTED, pods["ray-worker"][1]) == [
        "edge: runAsNonRoot not true",
        "ray-worker: adds IPC_LOCK",
        "ray-worker: runAsNonRoot not true",
        "volume vllm-cache: hostPath",
    ]


def test_the_operator_namespace_is_restricted_as_the_kuberay_chart_ships_its_pod():
    """kuberay-operator values.yaml (vendored, 1.4.0 and 1.7.0): the container's securityContext, no pod one."""
    for version in ("1.4.0", "1.7.0"):
        values = yaml.safe_load((VENDOR / f"kuberay-v{version}/kuberay-operator-values.yaml").read_text())
        container = {"name": "kuberay-operator", "securityContext": values["securityContext"]}
        spec = {"securityContext": values.get("podSecurityContext") or {}, "containers": [container]}
        assert violations(OPERATOR_LEVEL, spec) == [], version


def test_the_monitoring_namespace_is_privileged_for_the_dcgm_exporter_and_node_exporter():
    """The DCGM exporter adds SYS_ADMIN (dcgm-exporter values.yaml, vendored) and mounts the kubelet's pod-resources
    socket; node-exporter runs on the host's network and PID namespace (prometheus-node-exporter chart)."""
    values = yaml.safe_load((VENDOR / "dcgm-exporter-4.8.2/values.yaml").read_text())
    spec = {"containers": [{"name": "exporter", "securityContext": values["securityContext"]}]}
    assert violations(BASELINE, spec) == ["exporter: adds SYS_ADMIN"]
    assert MONITORING_LEVEL == PRIVILEGED


@pytest.mark.parametrize(("overrides", "head_token"), [({}, False), (SERVE_AUTOSCALING, True)])
def test_a_service_account_token_is_mounted_only_where_an_api_call_is_made(overrides, head_token):
    """Ray's autoscaler sidecar, which KubeRay adds to the head pod with in-tree autoscaling, calls the Kubernetes API;
    nothing else does. IRSA's credentials (the workers' S3 reader, the mirror) come from EKS's webhook, which mounts a
    token of its own (github.com/aws/amazon-eks-pod-identity-webhook README: the aws-iam-token volume)."""
    run = run_stack(overrides) if overrides else cached_run()
    for name, (_, spec) in pod_specs(run).items():
        assert spec["automountServiceAccountToken"] is (head_token and name == "ray-head"), name
