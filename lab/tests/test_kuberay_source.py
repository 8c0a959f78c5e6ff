"""What the stack's RayService rests on in KubeRay's vendored Go (vendor/kuberay-v<version>/, ray-project/kuberay at the
tag, paths in SOURCE.txt), read as text by lab/tests/kuberay_source.py: how the operator builds the RayCluster
(tests/test_serving.py), what it does for GCS fault tolerance (tests/test_head_fault_tolerance.py), and the Ray
version it asks of token authentication (tests/test_in_cluster_security.py)."""

from __future__ import annotations

import re

import pytest

from infra.serving.edge import EDGE_PORT
from infra.settings.config import VALIDATED_KUBERAY_VERSIONS
from infra.settings.kinds import RAY_TOKEN_AUTH_SINCE
from lab.tests.kuberay_source import go_function, kuberay_source


@pytest.mark.parametrize("version", VALIDATED_KUBERAY_VERSIONS)
def test_the_operator_creates_the_raycluster_from_the_rayclusterconfig_as_given(version):
    """constructRayClusterForRayService (rayservice_controller.go) sets `Spec: rayClusterConfig` as given (1.7.0 clears
    worker `replicas` for an incremental upgrade's pending cluster only): why tests/test_serving.py validates the
    config as a RayCluster spec of that release's CRD."""
    construct = go_function(kuberay_source(version), "constructRayClusterForRayService")
    spec = re.search(r"\n\t\tSpec: +(rayService\.Spec\.RayClusterSpec|\*clusterSpec),\n", construct)
    assert spec
    if spec[1] == "*clusterSpec":
        assert "clusterSpec := rayService.Spec.RayClusterSpec.DeepCopy()" in construct


def test_kuberay_gives_the_head_the_address_and_password_and_the_workers_ten_minutes():
    """kuberay v1.4.0 common/pod.go configureGCSFaultTolerance: RAY_REDIS_ADDRESS from redisAddress, REDIS_PASSWORD
    from redisPassword (its valueFrom kept) with `--redis-password $REDIS_PASSWORD`, the storage namespace the
    RayCluster's UID, and each worker's RAY_gcs_rpc_server_reconnect_timeout_s at 600 s unless set."""
    body = go_function(kuberay_source("1.4.0", "pod.go"), "configureGCSFaultTolerance")
    assert "Value: options.RedisAddress" in body
    assert 'RayStartParams["redis-password"] = "$REDIS_PASSWORD"' in body
    assert "ValueFrom: options.RedisPassword.ValueFrom" in body
    assert "storageNS := string(instance.UID)" in body
    assert "rayNodeType == rayv1.WorkerNode" in body and "DefaultWorkerRayGcsReconnectTimeoutS" in body
    assert 'DefaultWorkerRayGcsReconnectTimeoutS = "600"' in kuberay_source("1.4.0", "constant.go")


def test_the_head_is_out_of_the_serve_service():
    """kuberay v1.4.0 rayservice_controller.go updateHeadPodServeLabel: with excludeHeadPodFromServeSvc the head's
    ray.io/serve label is "false" whatever its proxy says, and the serve Service (and the stack's NLB) select "true"."""
    body = go_function(kuberay_source("1.4.0"), "updateHeadPodServeLabel")
    assert "newLabel := utils.EnableRayClusterServingServiceFalse" in body
    assert "if !excludeHeadPodFromServeSvc {" in body


def test_the_ray_version_floor_is_the_operators():
    """KubeRay 1.7.0 refuses authOptions mode token below Ray 2.52.0 (ray-operator/controllers/ray/utils/
    validation.go ValidateRayClusterSpec, vendored)."""
    source = kuberay_source("1.7.0", "validation.go")
    floor = ".".join(map(str, RAY_TOKEN_AUTH_SINCE))
    assert f'minVersion := version.MustParseGeneric("{floor}")' in source
    assert "authOptions.mode is 'token' but minimum Ray version is" in source


@pytest.mark.parametrize("version", VALIDATED_KUBERAY_VERSIONS)
def test_the_workers_readiness_probe_asks_port_8000_without_a_serve_port(version):
    """A RayService's worker pods get a readiness probe on the Ray container (the first: RayContainerIndex 0) that
    asks localhost at its `serve` port, or DefaultServingPort 8000 without one (common/pod.go
    initLivenessAndReadinessProbe): why the edge (infra/serving/edge.py) binds 8000 and the Ray container declares no
    `serve` port, so the probe goes through the edge (tests/test_serve_edge.py)."""
    probe = go_function(kuberay_source(version, "pod.go"), "initLivenessAndReadinessProbe")
    assert "utils.FindContainerPort(rayContainer, utils.ServingPortName, utils.DefaultServingPort)" in probe
    assert "creatorCRDType == utils.RayServiceCRD && rayNodeType == rayv1.WorkerNode" in probe
    constants = kuberay_source(version, "constant.go")
    assert re.search(rf"DefaultServingPort\s+=\s+{EDGE_PORT}\b", constants)
    assert re.search(r"RayContainerIndex\s+=\s+0\b", constants)
