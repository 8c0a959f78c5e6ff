"""KubeRay 1.4.0's NewCluster upgrade, read in its vendored source (vendor/kuberay-v1.4.0/: ray-project/kuberay tag
v1.4.0, ray-operator/controllers/ray/rayservice_controller.go, common/service.go, common/pod.go, utils/util.go,
utils/constant.go): what clusterUpgradeStrategy newCluster rests on. Each test pins one fact the stack's code or text
states, so a KubeRay bump that changes it fails here first."""

from __future__ import annotations

import re

import pytest

from infra.serving.rayservice import CLUSTER_SPEC_ANNOTATION, RAY_CLUSTER_LABEL, SERVE_LABEL, UPGRADE_NEW_CLUSTER
from infra.settings.changes import RAYSERVICE_NEW_CLUSTER
from tests.conftest import NEW_CLUSTER
from tests.rayservice_parts import rayservice
from tools.offline import run_stack
from tools.project import PROJECT_DIR

KUBERAY = PROJECT_DIR / "vendor" / "kuberay-v1.4.0"
SOURCES = {
    name: (KUBERAY / name).read_text() for name in ("rayservice_controller.go", "service.go", "pod.go", "util.go")
}
CONSTANTS = (KUBERAY / "constant.go").read_text()


def go_function(name: str, file: str = "rayservice_controller.go") -> str:
    """The body of a Go function or method, from its signature to the closing brace at column 0."""
    source = SOURCES[file]
    start = re.search(rf"^func (?:\([^)]*\) )?{name}\(", source, re.M)
    assert start, name
    return source[start.start() : source.index("\n}\n", start.start())]


def constant(name: str) -> str:
    found = re.search(rf"^\s*{name}\s*=\s*(.+)$", CONSTANTS, re.M)
    assert found, name
    return found.group(1).strip().strip('"')


# --- what KubeRay hashes, and what a new cluster is built for ---

# The worker group fields generateHashWithoutReplicasAndWorkersToDelete sets to nil before it hashes the spec.
MUTED = ("Replicas", "MaxReplicas", "MinReplicas", "ScaleStrategy.WorkersToDelete")
MUTED_JSON = ("replicas", "maxReplicas", "minReplicas")


def kuberay_hashed(cluster_config: dict) -> dict:
    """What KubeRay 1.4.0 hashes of a rayClusterConfig (generateHashWithoutReplicasAndWorkersToDelete: a deep copy
    with each worker group's replicas, minReplicas, maxReplicas and scaleStrategy.workersToDelete muted, then
    utils.GenerateJsonHash, sha1 of its JSON): two specs hash alike exactly when these are equal."""
    hashed = {**cluster_config, "workerGroupSpecs": []}
    for group in cluster_config["workerGroupSpecs"]:
        kept = {key: value for key, value in group.items() if key not in MUTED_JSON}
        if "scaleStrategy" in kept:
            kept["scaleStrategy"] = {k: v for k, v in kept["scaleStrategy"].items() if k != "workersToDelete"}
        hashed["workerGroupSpecs"].append(kept)
    return hashed


def test_kuberay_hashes_the_spec_less_the_replicas():
    body = go_function("generateHashWithoutReplicasAndWorkersToDelete")
    for field in MUTED:
        assert f"updatedRayClusterSpec.WorkerGroupSpecs[i].{field} = nil" in body
    assert "return utils.GenerateJsonHash(updatedRayClusterSpec)" in body
    assert "json.Marshal(obj)" in go_function("GenerateJsonHash", "util.go")


def test_a_replicas_only_change_would_leave_a_running_cluster_as_it_is():
    """The reason for the digest: without it the spec KubeRay hashes is the same before and after a decode replica
    more (shown on replace's spec, which carries none), so shouldPrepareNewCluster finds the hashes equal and no new
    cluster is built, and shouldUpdateCluster does not update the active one either."""
    before = rayservice(run_stack({"decodeReplicas": 1}))["spec"]["rayClusterConfig"]
    after = rayservice(run_stack({"decodeReplicas": 2}))["spec"]["rayClusterConfig"]
    assert before != after
    assert kuberay_hashed(before) == kuberay_hashed(after)
    assert re.search(
        r"if isClusterSpecHashEqual\(rayServiceInstance, cluster, false\) \{\n(?:\s*//.*\n)*\s*return false",
        go_function("shouldPrepareNewCluster"),
    )


def test_with_new_cluster_a_replicas_only_change_changes_what_kuberay_hashes():
    """The digest of the whole spec, replicas included, sits on the head's pod template (infra/serving/rayservice.py
    CLUSTER_SPEC_ANNOTATION), which KubeRay hashes: a replica more is a new cluster."""
    before = rayservice(run_stack({**NEW_CLUSTER, "decodeReplicas": 1}))["spec"]["rayClusterConfig"]
    after = rayservice(run_stack({**NEW_CLUSTER, "decodeReplicas": 2}))["spec"]["rayClusterConfig"]
    assert kuberay_hashed(before) != kuberay_hashed(after)


def test_with_new_cluster_an_engine_change_alone_changes_what_kuberay_hashes():
    """A serve-config change that restarts the engines (here maxModelLen) moves the digest on the head's template too
    (serve_config.engine_restart_digest), so KubeRay builds a pending cluster for it instead of sending it to the
    serving one; without newCluster the cluster spec is the same before and after."""
    before = rayservice(run_stack(NEW_CLUSTER))["spec"]["rayClusterConfig"]
    after = rayservice(run_stack({**NEW_CLUSTER, "maxModelLen": 8192}))["spec"]["rayClusterConfig"]
    assert kuberay_hashed(before) != kuberay_hashed(after)
    plain = [rayservice(run_stack(change))["spec"]["rayClusterConfig"] for change in ({}, {"maxModelLen": 8192})]
    assert kuberay_hashed(plain[0]) == kuberay_hashed(plain[1])


def test_kuberay_1_7_still_hashes_the_pod_templates_annotations():
    """KubeRay 1.7.0 mutes tolerations and scheduling gates (and the upgrade strategy) beside the replicas, never the
    templates' metadata (vendor/kuberay-v1.7.0/util.go GenerateHashWithoutReplicasAndWorkersToDelete), and still
    builds a new cluster once the hashes differ (rayservice_controller.go shouldPrepareNewCluster)."""
    source = (PROJECT_DIR / "vendor" / "kuberay-v1.7.0" / "util.go").read_text()
    start = source.index("func GenerateHashWithoutReplicasAndWorkersToDelete(")
    body = source[start : source.index("\n}\n", start)]
    muted = re.findall(r"^\s*(updatedRayClusterSpec\.[\w.\[\]]+) = nil", body, re.M)
    assert muted and not [field for field in muted if "Template.ObjectMeta" in field or "Annotations" in field]
    controller = (PROJECT_DIR / "vendor" / "kuberay-v1.7.0" / "rayservice_controller.go").read_text()
    assert "return isZeroDowntimeUpgradeEnabled(ctx, rayServiceInstance.Spec.UpgradeStrategy)" in controller


def test_a_new_cluster_is_built_only_with_upgrade_strategy_new_cluster():
    """isZeroDowntimeUpgradeEnabled: a type given other than NewCluster turns it off (replace's None); NewCluster
    turns it on; shouldPrepareNewCluster returns it once the hashes differ."""
    body = go_function("isZeroDowntimeUpgradeEnabled")
    assert "if *upgradeType != rayv1.NewCluster {" in body and "return false" in body
    assert UPGRADE_NEW_CLUSTER == "NewCluster"
    assert (
        go_function("shouldPrepareNewCluster")
        .rstrip()
        .endswith("return isZeroDowntimeUpgradeEnabled(ctx, rayServiceInstance.Spec.UpgradeStrategy)")
    )


def test_the_new_cluster_carries_the_rayservices_cluster_spec_and_so_its_digest():
    """constructRayClusterForRayService copies the RayService's rayClusterConfig as the RayCluster's spec (pod template
    annotations with it), which the rollout reads back (infra/serving/rollout_status.py built_from)."""
    body = go_function("constructRayClusterForRayService")
    assert re.search(r"\n\t\tSpec: +rayService.Spec.RayClusterSpec,\n", body)
    assert CLUSTER_SPEC_ANNOTATION.startswith("ray-llm-eks/")


def test_a_new_cluster_gets_a_new_name():
    """calculateStatus names the pending cluster GenerateRayClusterName(<rayservice>): `<name>-` and five random
    letters, so a promoted cluster's name differs from the one before."""
    assert "RayClusterName: utils.GenerateRayClusterName(rayServiceInstance.Name)," in go_function("calculateStatus")
    assert 'return fmt.Sprintf("%s-%s", serviceName, rand.String(5))' in go_function(
        "GenerateRayClusterName", "util.go"
    )


# --- the switch, the status the rollout reads, the deletion ---


def test_the_generation_and_the_new_pending_cluster_are_written_together():
    """calculateStatus sets ObservedGeneration first and names the new pending cluster in the same status, so the
    rollout never sees this generation observed with only the old cluster named."""
    body = go_function("calculateStatus")
    observed = body.index("rayServiceInstance.Status.ObservedGeneration = rayServiceInstance.ObjectMeta.Generation")
    assert observed < body.index("if shouldPrepareNewCluster(ctx, rayServiceInstance, activeCluster, pendingCluster")


def test_the_switch_waits_for_every_application_of_the_new_cluster_to_run():
    """getAndCheckServeStatus: isReady is false for any application not RUNNING, and for none; only a ready pending
    cluster gets the Services (Reconcile: reconcileServicesToReadyCluster with the pending cluster)."""
    body = go_function("getAndCheckServeStatus")
    assert "if app.Status != rayv1.ApplicationStatusEnum.RUNNING {\n\t\t\tisReady = false" in body
    assert "if len(newApplications) == 0 {" in body
    assert "if isPendingClusterReady {\n\t\t\ttargetCluster = pendingRayCluster" in go_function("Reconcile")


def test_once_the_services_point_at_it_the_pending_cluster_becomes_the_active_one():
    body = go_function("calculateStatus")
    assert "rayServiceInstance.Status.ActiveServiceStatus = rayServiceInstance.Status.PendingServiceStatus" in body
    assert "rayServiceInstance.Status.PendingServiceStatus = rayv1.RayServiceStatus{}" in body


def test_the_old_cluster_is_deleted_a_minute_after_the_switch():
    """cleanUpRayClusterInstance: a cluster neither active nor pending is scheduled for deletion
    RayClusterDeletionDelayDuration (60 s) later: the time the stack's NLB has to follow, and a part of the surge."""
    assert re.search(r"RayClusterDeletionDelayDuration = 60 \* time.Second", SOURCES["rayservice_controller.go"])
    body = go_function("cleanUpRayClusterInstance")
    assert "rayClusterInstance.Name != rayServiceInstance.Status.ActiveServiceStatus.RayClusterName" in body
    assert "deletionTimestamp := metav1.Now().Add(RayClusterDeletionDelayDuration)" in body
    assert "60 s" in RAYSERVICE_NEW_CLUSTER.what


def test_a_change_while_a_cluster_is_pending_is_compared_with_the_pending_one():
    """shouldPrepareNewCluster compares the RayService with the pending cluster when there is one: a rollback while a
    failed new cluster is pending builds yet another (the effect's and the rollback hint's words)."""
    body = go_function("shouldPrepareNewCluster")
    assert "cluster := pendingRayCluster\n\tif cluster == nil {\n\t\tcluster = activeRayCluster" in body
    assert "yet another cluster" in RAYSERVICE_NEW_CLUSTER.if_it_fails


def test_while_a_cluster_is_pending_the_serve_config_goes_to_it_alone():
    body = go_function("Reconcile")
    assert "if activeRayClusterInstance != nil && pendingRayClusterInstance == nil &&" in body
    assert "reaches the pending cluster, not the active" in RAYSERVICE_NEW_CLUSTER.if_it_fails


# --- the serve Service and the labels a load balancer selects on ---


def test_the_serve_service_selects_the_cluster_by_name_and_the_serve_label():
    body = go_function("BuildServeService", "service.go")
    assert "utils.RayClusterLabelKey: rayCluster.Name," in body
    assert "selectorLabels[utils.RayClusterServingServiceLabelKey] = utils.EnableRayClusterServingServiceTrue" in body
    assert (constant("RayClusterLabelKey"), constant("RayClusterServingServiceLabelKey")) == (
        RAY_CLUSTER_LABEL,
        SERVE_LABEL,
    )


def test_a_new_clusters_workers_carry_the_serve_label_from_their_creation():
    """BuildPod: a RayService's worker pod gets ray.io/serve=true when it is made (its readiness probe then checks
    Serve's proxy), the head false until the controller finds its proxy healthy, on the pending cluster too
    (Reconcile calls updateHeadPodServeLabel for both): a selector on the label alone reaches a new cluster whose
    applications are not all RUNNING."""
    body = go_function("BuildPod", "pod.go")
    assert (
        "podTemplateSpec.Labels[utils.RayClusterServingServiceLabelKey] = utils.EnableRayClusterServingServiceTrue"
        in (body)
    )
    assert "RayServeProxyHealthPath" in go_function("initLivenessAndReadinessProbe", "pod.go")
    assert "r.updateHeadPodServeLabel(ctx, rayServiceInstance, pendingRayClusterInstance," in go_function("Reconcile")


def test_an_existing_serve_service_gets_only_a_new_spec_and_only_at_a_switch():
    """reconcileServices: an existing Service is left alone while its selector names the same cluster, and at a
    switch only its spec is written (`oldSvc.Spec = *newSvc.Spec.DeepCopy()`), never its metadata: the certificate
    and scheme annotations of a spec.serveService would reach the live Service only when KubeRay creates it. Why the
    stack keeps its own load balancer Service (infra/serving/serve_app.py _load_balancer_hostname)."""
    body = go_function("reconcileServices")
    assert "if newSvc.Spec.Selector[utils.RayClusterLabelKey] == oldSvc.Spec.Selector[utils.RayClusterLabelKey] {" in (
        body
    )
    assert "oldSvc.Spec = *newSvc.Spec.DeepCopy()" in body
    assert "oldSvc.Annotations" not in body and "oldSvc.ObjectMeta" not in body


def test_a_custom_serve_service_keeps_only_the_serve_port():
    """BuildServeService: with a `serve` container port, a spec.serveService's own ports are replaced by that one
    port (no targetPort): a TLS listener on 443 in front of 8000 could not be had that way."""
    body = go_function("BuildServeService", "service.go")
    assert "svcPort := corev1.ServicePort{Name: utils.ServingPortName, Port: portsInt[utils.ServingPortName]}" in body
    assert "serveService.Spec.Ports = ports" in body


@pytest.mark.parametrize("strategy", ["replace", "newCluster"])
def test_the_serve_port_is_on_the_head(strategy):
    """BuildServeService needs a container port named `serve` on the head (else no serve Service)."""
    head = rayservice(run_stack({**NEW_CLUSTER, "clusterUpgradeStrategy": strategy}))["spec"]["rayClusterConfig"][
        "headGroupSpec"
    ]["template"]["spec"]["containers"][0]
    assert {"containerPort": 8000, "name": constant("ServingPortName")} in head["ports"]


def test_kuberay_1_4_sends_the_spec_again_when_its_cache_is_empty_or_differs():
    """The fact the choice above rests on, in the vendored operator (1.7.0's function is the same)."""
    for version in ("kuberay-v1.4.0", "kuberay-v1.7.0"):
        source = (PROJECT_DIR / "vendor" / version / "rayservice_controller.go").read_text()
        start = source.index("func checkIfNeedSubmitServeApplications(")
        body = source[start : source.index("\n}\n", start)]
        assert 'if cachedServeConfigV2 == "" {\n\t\treturn true' in body
        assert "if cachedServeConfigV2 != serveConfigV2 {\n\t\treturn true" in body


def test_kuberay_1_7_deletes_an_upgrades_old_cluster_after_the_rayservices_own_delay():
    """cleanUpRayClusterInstance reads rayClusterDeletionDelaySeconds, which the stack sets to the longest stream the
    config allows (tests/test_new_cluster.py)."""
    source = (PROJECT_DIR / "vendor" / "kuberay-v1.7.0" / "rayservice_controller.go").read_text()
    assert "deletionDelay = time.Duration(*rayServiceInstance.Spec.RayClusterDeletionDelaySeconds) * time.Second" in (
        source
    )
