"""What KubeRay does while a RayService is deleted, read in its vendored source
(vendor/kuberay-v<version>/rayservice_controller.go, ray-project/kuberay ray-operator/controllers/ray/
rayservice_controller.go at the tag), and why the stack deletes its RayService in the background.

A replacement (a rayClusterConfig change: infra/serving/serve_app.py, deleteBeforeReplace) or `pulumi destroy` deletes
the RayService. KubeRay 1.4.0: with pulumi-kubernetes' default foreground propagation the object stays, marked deleted,
until the garbage collector has removed what it owns; meanwhile the operator keeps reconciling it, and once the
RayCluster is gone it has none, so it prepares and creates a new one, owned by the same RayService, which the delete
must then wait for too (and past pulumi-kubernetes' 10-minute delete wait). KubeRay 1.7.0 (ray-project/kuberay#4807,
also in the 1.6.2 patch release, not in 1.6.0) holds the RayService with a finalizer, deletes every RayCluster of a
RayService being deleted at once and builds none: the background delete stays right for both (docs/kuberay-versions.md).
"""

from __future__ import annotations

import re

from lab.tests.kuberay_source import go_function, kuberay_source

CONTROLLER = kuberay_source("1.4.0")
CONTROLLER_1_7 = kuberay_source("1.7.0")


def test_the_operator_reconciles_a_rayservice_being_deleted():
    """1.4.0's Reconcile reads the RayService and goes on to its clusters with no look at its DeletionTimestamp (1.7.0
    added `if !rayServiceInstance.DeletionTimestamp.IsZero()`, which waits for the clusters to go instead)."""
    reconcile = go_function(CONTROLLER, "Reconcile")
    assert "reconcileRayCluster(ctx, rayServiceInstance)" in reconcile
    assert "rayServiceInstance.DeletionTimestamp" not in reconcile
    assert "rayServiceInstance.ObjectMeta.DeletionTimestamp" not in CONTROLLER


def test_with_no_cluster_left_it_prepares_a_new_one():
    body = go_function(CONTROLLER, "shouldPrepareNewCluster")
    assert re.search(r"if activeRayCluster == nil && pendingRayCluster == nil \{\n(?:\s*//.*\n)*\s*return true", body)
    assert "PendingServiceStatus = rayv1.RayServiceStatus{\n\t\t\tRayClusterName: utils.GenerateRayClusterName(" in (
        go_function(CONTROLLER, "calculateStatus")
    )


def test_a_prepared_cluster_is_created_owned_by_the_rayservice():
    """The next reconcile creates the pending cluster it named; its controller reference (blockOwnerDeletion) makes
    a foreground delete of the RayService wait for it."""
    assert re.search(
        r'if rayServiceInstance\.Status\.PendingServiceStatus\.RayClusterName != "" && pendingRayCluster == nil \{'
        r"\n.*\n\s*pendingRayCluster, err = r\.createRayClusterInstance\(ctx, rayServiceInstance\)",
        go_function(CONTROLLER, "reconcileRayCluster"),
    )
    assert "ctrl.SetControllerReference(rayService, rayCluster, scheme)" in go_function(
        CONTROLLER, "constructRayClusterForRayService"
    )


def test_1_7_stops_at_a_rayservice_being_deleted_until_its_clusters_are_gone():
    """1.7.0's Reconcile returns before reconcileRayCluster for a RayService being deleted, and removes its finalizer
    only once no RayCluster of it is left; any other RayService gets the finalizer first."""
    reconcile = go_function(CONTROLLER_1_7, "Reconcile")
    deleted = reconcile.index("if !rayServiceInstance.DeletionTimestamp.IsZero() {")
    assert deleted < reconcile.index("r.reconcileRayCluster(ctx, rayServiceInstance)")
    assert re.search(
        r"if !hasRayClustersToClean \{\n.*\n\s*controllerutil\.RemoveFinalizer\(rayServiceInstance, "
        r"utils\.RayServiceFinalizer\)",
        reconcile[deleted:],
    )
    assert "controllerutil.AddFinalizer(rayServiceInstance, utils.RayServiceFinalizer)" in reconcile


def test_1_7_deletes_every_cluster_of_a_rayservice_being_deleted_at_once():
    """No deletion delay (rayClusterDeletionDelaySeconds, 60 s by default) once the RayService is being deleted:
    every RayCluster it owns is deleted in the background on that reconcile."""
    cleanup = go_function(CONTROLLER_1_7, "cleanUpRayClusterInstance")
    assert "if rayServiceIsDeleted {\n\t\tdeletionDelay = 0 * time.Second\n\t}" in cleanup
    assert "if rayServiceIsDeleted || (rayClusterInstance.Name != " in cleanup
    assert "client.PropagationPolicy(metav1.DeletePropagationBackground)" in cleanup


def test_the_stack_deletes_its_rayservice_in_the_background(dev):
    """`pulumi.com/deletionPropagationPolicy: background` (https://www.pulumi.com/registry/packages/kubernetes/
    installation-configuration/): with 1.4.0 the RayService goes at once, the operator's next reconcile finds no
    RayService (Reconcile returns on NotFound), and the garbage collector deletes the old RayCluster and its pods;
    with 1.7.0 the finalizer keeps it until the operator has deleted its RayClusters (test above), no new one built."""
    (rayservice,) = dev.of_type("kubernetes:ray.io/v1:RayService")
    assert rayservice.inputs["metadata"]["annotations"]["pulumi.com/deletionPropagationPolicy"] == "background"
    for source in (CONTROLLER, CONTROLLER_1_7):
        assert "return ctrl.Result{}, client.IgnoreNotFound(err)" in go_function(source, "Reconcile")


def test_the_operator_outlives_the_rayservice_it_must_release(dev):
    """1.7.0's finalizer is removed by the operator alone: the RayService depends on the operator's release, so
    `pulumi destroy` deletes the RayService (dependents first) while the operator still runs."""
    (rayservice,) = dev.of_type("kubernetes:ray.io/v1:RayService")
    release = dev.get("kubernetes:helm.sh/v3:Release", "serving-kuberay-kuberay-operator")
    assert release.urn in rayservice.dependencies
