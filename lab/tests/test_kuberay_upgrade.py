"""How KubeRay upgrades a running RayService, read in its vendored source at each validated release
(vendor/kuberay-v<version>/: rayservice_controller.go, and at 1.7.0 util.go, validation.go, features.go, service.go,
rayservice_types.go; ray-project/kuberay at the tag, paths in each folder's SOURCE.txt). docs/kuberay-versions.md
tells the same story in prose; these tests hold it to the source, since no operator runs here.

The stack runs `upgradeStrategy: None` (infra/serving/rayservice.py) and replaces the RayService on a cluster change;
what follows is what the other strategies would do, the evidence for choosing one."""

from __future__ import annotations

import re

import pytest
import yaml

from infra.settings.kinds import VALIDATED_KUBERAY_VERSIONS
from infra.settings.table import SETTINGS_BY_KEY
from lab.tests.kuberay_source import go_function, kuberay_source
from tests.schemas import kuberay_dir, rayservice_crd_schema

# Where each release keeps the hash of a cluster spec with the replica counts muted.
HASH_FUNCTION = {
    "1.4.0": ("rayservice_controller.go", "generateHashWithoutReplicasAndWorkersToDelete"),
    "1.7.0": ("util.go", "GenerateHashWithoutReplicasAndWorkersToDelete"),
}


def function(version: str, name: str, file: str = "rayservice_controller.go") -> str:
    return go_function(kuberay_source(version, file), name)


# --- NewCluster (and None), both releases ---


@pytest.mark.parametrize("version", VALIDATED_KUBERAY_VERSIONS)
def test_ready_counts_serve_endpoints_only(version):
    """`Ready` is true once the `-serve-svc` has an endpoint, whatever the apps' state: at both releases the stack's own
    rollout wait (infra/serving/rollout_status.py, `pulumi.com/skipAwait`) is what tells a failed config."""
    conditions = function(version, "calculateConditions")
    assert re.search(
        r"if rayServiceInstance\.Status\.NumServeEndpoints > 0 \{\n\t\tsetCondition\(rayServiceInstance, "
        r"rayv1\.RayServiceReady, metav1\.ConditionTrue",
        conditions,
    )
    assert "DEPLOY_FAILED" not in conditions


@pytest.mark.parametrize("version", VALIDATED_KUBERAY_VERSIONS)
def test_replica_counts_are_muted_from_the_cluster_hash(version):
    """A replicas-only change leaves the hash as it was: neither a new cluster nor an update of the running one."""
    body = function(version, HASH_FUNCTION[version][1], HASH_FUNCTION[version][0])
    for field in ("Replicas", "MaxReplicas", "MinReplicas", "ScaleStrategy.WorkersToDelete"):
        assert f"updatedRayClusterSpec.WorkerGroupSpecs[i].{field} = nil" in body
    update = function(version, "shouldUpdateCluster")
    assert re.search(r"if isClusterSpecHashEqual\(rayServiceInstance, cluster, false\) \{\n.*\n\s*return false", update)


def test_1_7_also_mutes_tolerations_and_scheduling_gates():
    body = function("1.7.0", "GenerateHashWithoutReplicasAndWorkersToDelete", "util.go")
    assert "updatedRayClusterSpec.WorkerGroupSpecs[i].Template.Spec.Tolerations = nil" in body
    assert "updatedRayClusterSpec.HeadGroupSpec.Template.Spec.Tolerations = nil" in body
    assert "Tolerations = nil" not in function("1.4.0", "generateHashWithoutReplicasAndWorkersToDelete")


@pytest.mark.parametrize("version", VALIDATED_KUBERAY_VERSIONS)
def test_a_cluster_change_prepares_a_pending_cluster_only_with_a_zero_downtime_type(version):
    """With `None` a rayClusterConfig change reaches no cluster (the stack replaces the RayService instead)."""
    prepare = function(version, "shouldPrepareNewCluster")
    assert prepare.rstrip().endswith(
        "return isZeroDowntimeUpgradeEnabled(ctx, rayServiceInstance.Spec.UpgradeStrategy)"
    )
    enabled = function(version, "isZeroDowntimeUpgradeEnabled")
    assert "return false" in enabled.split("return true", 1)[0]
    assert re.search(r"\*upgradeType != rayv1\.(RayService)?NewCluster\b", enabled)


@pytest.mark.parametrize("version", VALIDATED_KUBERAY_VERSIONS)
def test_a_change_is_compared_with_the_pending_cluster_first(version):
    """A rollback to the active cluster's spec while a pending cluster exists differs from the pending one, so a
    NewCluster upgrade prepares a third cluster with the active's spec rather than keeping the active."""
    prepare = function(version, "shouldPrepareNewCluster")
    assert "cluster := pendingRayCluster\n\tif cluster == nil {\n\t\tcluster = activeRayCluster\n\t}" in prepare
    assert "utils.GenerateRayClusterName(rayServiceInstance.Name)" in function(version, "calculateStatus")


@pytest.mark.parametrize("version", VALIDATED_KUBERAY_VERSIONS)
def test_the_active_cluster_serves_until_every_app_of_the_pending_one_runs(version):
    """Only a pending cluster whose every application is RUNNING gets the Services; a DEPLOY_FAILED one never does."""
    status = function(version, "getAndCheckServeStatus")
    assert "if app.Status != rayv1.ApplicationStatusEnum.RUNNING {\n\t\t\tisReady = false" in status
    reconcile = function(version, "Reconcile")
    assert "if isPendingClusterReady || isActiveClusterReady {" in reconcile
    assert re.search(r"if isPendingClusterReady( && !isIncrementalUpgradeInProgress)? \{", reconcile)


@pytest.mark.parametrize("version", VALIDATED_KUBERAY_VERSIONS)
def test_a_failed_pending_cluster_is_neither_resubmitted_nor_deleted(version):
    """The serve config goes again only when nothing is cached, no app is left, or the config changed; a cluster is
    deleted only once neither status names it (a new pending cluster, or a promotion, drops the name)."""
    submit = function(version, "checkIfNeedSubmitServeApplications")
    assert submit.count("return true") == 3
    cleanup = function(version, "cleanUpRayClusterInstance")
    assert (
        "rayClusterInstance.Name != rayServiceInstance.Status.ActiveServiceStatus.RayClusterName && "
        "rayClusterInstance.Name != rayServiceInstance.Status.PendingServiceStatus.RayClusterName"
    ) in cleanup


@pytest.mark.parametrize("version", VALIDATED_KUBERAY_VERSIONS)
def test_the_serve_service_is_switched_by_its_cluster_selector(version):
    """The `-serve-svc` is updated in place (its ClusterIP kept) only when the cluster it selects changes."""
    services = function(version, "reconcileServices")
    assert "if newSvc.Spec.Selector[utils.RayClusterLabelKey] == oldSvc.Spec.Selector[utils.RayClusterLabelKey] {" in (
        services
    )
    assert "newSvc.Spec.ClusterIP = oldSvc.Spec.ClusterIP" in services


@pytest.mark.parametrize("version", VALIDATED_KUBERAY_VERSIONS)
def test_the_old_cluster_is_deleted_a_minute_after_it_was_dropped(version):
    """60 s by default (kept in the operator's memory); 1.7.0 reads `rayClusterDeletionDelaySeconds` too."""
    assert "RayClusterDeletionDelayDuration = 60 * time.Second" in kuberay_source(version)
    configurable = "rayServiceInstance.Spec.RayClusterDeletionDelaySeconds" in function(
        version, "cleanUpRayClusterInstance"
    )
    assert configurable == (version != "1.4.0")
    spec = rayservice_crd_schema(version)["properties"]["spec"]["properties"]
    assert ("rayClusterDeletionDelaySeconds" in spec) == configurable


# --- NewClusterWithIncrementalUpgrade, 1.7.0 ---


def test_the_incremental_upgrade_is_beta_and_on_by_default_in_1_7():
    features = kuberay_source("1.7.0", "features.go")
    assert "RayServiceIncrementalUpgrade:     {Default: true, PreRelease: featuregate.Beta}," in features
    gates = yaml.safe_load((kuberay_dir("1.7.0") / "kuberay-operator-values.yaml").read_text())["featureGates"]
    assert {"name": "RayServiceIncrementalUpgrade", "enabled": True} in gates
    enabled = function("1.7.0", "IsIncrementalUpgradeEnabled", "util.go")
    assert "features.Enabled(features.RayServiceIncrementalUpgrade)" in enabled
    assert "*spec.UpgradeStrategy.Type == rayv1.RayServiceNewClusterWithIncrementalUpgrade" in enabled


def test_it_needs_the_in_tree_autoscaler_and_a_gateway_class():
    options = function("1.7.0", "ValidateClusterUpgradeOptions", "validation.go")
    assert "if !IsAutoscalingEnabled(&rayService.Spec.RayClusterSpec) {" in options
    assert 'options.GatewayClassName == ""' in options
    assert "*options.StepSizePercent > *options.MaxSurgePercent" in options
    assert "options.IntervalSeconds == nil || *options.IntervalSeconds <= 0" in options


def test_its_options_are_fields_of_the_1_7_crd_only():
    """`clusterUpgradeOptions` (maxSurgePercent defaulting to 100): a 1.4.0 CRD left in a cluster would prune it."""
    for version, present in (("1.4.0", False), ("1.7.0", True)):
        strategy = rayservice_crd_schema(version)["properties"]["spec"]["properties"]["upgradeStrategy"]
        assert ("clusterUpgradeOptions" in strategy["properties"]) == present
    options = rayservice_crd_schema("1.7.0")["properties"]["spec"]["properties"]["upgradeStrategy"]["properties"]
    fields = options["clusterUpgradeOptions"]
    assert set(fields["required"]) == {"gatewayClassName", "intervalSeconds", "stepSizePercent"}
    assert fields["properties"]["maxSurgePercent"]["default"] == 100


def test_it_creates_a_gateway_and_an_httproute_named_after_the_rayservice():
    assert 'gatewayName := rayServiceInstance.Name + "-gateway"' in function("1.7.0", "createGateway")
    route = function("1.7.0", "createHTTPRoute")
    assert 'httpRouteName := rayServiceInstance.Name + "-httproute"' in route
    assert route.count("Weight: new(") == 2  # one backend per cluster's own serve Service
    assert "utils.GenerateServeServiceName(activeRayCluster.Name)" in route


def test_it_waits_for_a_programmed_gateway_and_an_accepted_route():
    """A Gateway API controller must own the GatewayClass: no step is taken before it programs the Gateway."""
    assert "GatewayConditionAccepted" in function("1.7.0", "IsGatewayReady", "util.go")
    assert "GatewayConditionProgrammed" in function("1.7.0", "IsGatewayReady", "util.go")
    assert "RouteConditionResolvedRefs" in function("1.7.0", "IsHTTPRouteReady", "util.go")
    need = function("1.7.0", "checkIfNeedTargetCapacityUpdate")
    assert need.index("IsGatewayReady") < need.index("TargetCapacity == nil")


def test_the_stable_serve_service_is_not_managed_during_an_incremental_upgrade():
    """Under NewClusterWithIncrementalUpgrade every serve Service is named after its RayCluster, so a `<name>-serve-svc`
    left from before keeps selecting the old cluster (ray-project/kuberay#5148: no endpoints for ~20 min)."""
    build = function("1.7.0", "BuildServeService", "service.go")
    assert "if !utils.IsIncrementalUpgradeEnabled(&rayService.Spec) {\n\t\t\tname = rayService.Name\n\t\t}" in build


def test_the_pending_cluster_of_an_upgrade_starts_at_its_minimum_and_zero_capacity():
    """Replicas cleared, so the worker group starts at minReplicas (the stack's is its whole GPU node count: a pending
    cluster would ask for every GPU node at once), Serve's target_capacity 0 %, then raised by maxSurgePercent while
    traffic moves stepSizePercent every intervalSeconds."""
    construct = function("1.7.0", "constructRayClusterForRayService")
    assert "clusterSpec.WorkerGroupSpecs[i].Replicas = nil" in construct
    desired = function("1.7.0", "GetWorkerGroupDesiredReplicas", "util.go")
    assert "if workerGroupSpec.Replicas == nil || *workerGroupSpec.Replicas < minReplicas {\n" in desired
    assert "workerReplicas = minReplicas" in desired
    status = function("1.7.0", "calculateStatus")
    assert "rayServiceInstance.Status.PendingServiceStatus.TargetCapacity = new(int32(0))" in status
    assert 'serveConfig["target_capacity"] = goalTargetCapacity' in function("1.7.0", "applyServeTargetCapacity")


def test_traffic_waits_for_a_ready_pending_cluster():
    """A pending cluster whose apps are not all RUNNING gets no traffic, and the active one keeps its capacity."""
    traffic = function("1.7.0", "calculateTrafficRoutedPercent")
    assert 'logger.Info("Upgrade in progress, but pending cluster is not ready. Pausing traffic migration.")' in traffic
    capacity = function("1.7.0", "reconcileServeTargetCapacity")
    assert "if pendingTargetCapacity != pendingTrafficRoutedPercent {" in capacity


def test_the_upgrade_completes_when_the_old_cluster_has_no_capacity_and_the_new_all_traffic():
    complete = function("1.7.0", "IsIncrementalUpgradeComplete", "util.go")
    assert "TargetCapacity, -1) == 0" in complete
    assert "TrafficRoutedPercent, -1) == 100" in complete


def test_reverting_the_spec_mid_upgrade_rolls_back_to_the_active_cluster():
    """The active cluster is kept (RollbackInProgress), unlike NewCluster's third cluster."""
    rollback = function("1.7.0", "reconcileRollbackState")
    assert re.search(
        r"if targetHash == originalHash \{\n\t\tif !isRollbackInProgress \{\n.*\n\t\t\tsetCondition\("
        r"rayServiceInstance, rayv1\.RollbackInProgress, metav1\.ConditionTrue",
        rollback,
    )
    assert "RollbackInProgress" in function("1.7.0", "shouldPrepareNewCluster")


def test_the_states_a_rollout_wait_could_follow_are_in_the_1_7_status():
    types = kuberay_source("1.7.0", "rayservice_types.go")
    for condition in (
        'UpgradeInProgress RayServiceConditionType = "UpgradeInProgress"',
        'RollbackInProgress RayServiceConditionType = "RollbackInProgress"',
    ):
        assert condition in types
    cluster_status = rayservice_crd_schema("1.7.0")["properties"]["status"]["properties"]["pendingServiceStatus"]
    assert {"targetCapacity", "trafficRoutedPercent", "lastTrafficMigratedTime"} <= cluster_status["properties"].keys()
    assert "BothActivePendingClustersExist" in function("1.7.0", "calculateConditions")


def test_a_change_of_release_on_a_running_stack_applies_the_crds_helm_leaves():
    """The chart ships its CRDs in crds/ (each SOURCE.txt: identical to helm-chart/kuberay-operator/crds/), which Helm
    installs once and never upgrades ("There is no support at this time for upgrading or deleting CRDs using Helm",
    https://helm.sh/docs/topics/charts/#limitations-on-crds); the 1.7.0 operator's new RayService fields would be
    pruned by a 1.4.0 CRD (test_its_options_are_fields_of_the_1_7_crd_only), so the stack applies the vendored ones
    itself (infra/serving/crds.py, tests/test_kuberay_crds.py) and the change table says so."""
    for version in VALIDATED_KUBERAY_VERSIONS:
        assert (
            "identical to helm-chart/kuberay-operator/crds/*.yaml" in (kuberay_dir(version) / "SOURCE.txt").read_text()
        )
    assert "applies the release's RayService and RayCluster CRDs first" in SETTINGS_BY_KEY["kuberayVersion"].change_note
