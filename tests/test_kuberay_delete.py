"""What KubeRay 1.4.0 does while a RayService is deleted, read in its vendored source
(vendor/kuberay-v1.4.0/rayservice_controller.go, ray-project/kuberay tag v1.4.0
ray-operator/controllers/ray/rayservice_controller.go), and why the stack deletes its RayService in the background.

A replacement (a rayClusterConfig change: infra/serving/serve_app.py, deleteBeforeReplace) or `pulumi destroy` deletes
the RayService. With pulumi-kubernetes' default foreground propagation the object stays, marked deleted, until the
garbage collector has removed what it owns; meanwhile the operator keeps reconciling it, and once the RayCluster is
gone it has none, so it prepares and creates a new one, owned by the same RayService, which the delete must then wait
for too (and past pulumi-kubernetes' 10-minute delete wait)."""

from __future__ import annotations

import re

from tools.project import PROJECT_DIR

CONTROLLER = (PROJECT_DIR / "vendor" / "kuberay-v1.4.0" / "rayservice_controller.go").read_text()


def go_function(name: str) -> str:
    """The body of a Go function or method, from its signature to the closing brace at column 0."""
    start = re.search(rf"^func (?:\([^)]*\) )?{name}\(", CONTROLLER, re.M)
    assert start, name
    end = CONTROLLER.index("\n}\n", start.start())
    return CONTROLLER[start.start() : end]


def test_the_operator_reconciles_a_rayservice_being_deleted():
    """Reconcile reads the RayService and goes on to its clusters with no look at its DeletionTimestamp (v1.6.0 added
    `if !rayServiceInstance.DeletionTimestamp.IsZero()`, which waits for the clusters to go instead)."""
    reconcile = go_function("Reconcile")
    assert "reconcileRayCluster(ctx, rayServiceInstance)" in reconcile
    assert "rayServiceInstance.DeletionTimestamp" not in reconcile
    assert "rayServiceInstance.ObjectMeta.DeletionTimestamp" not in CONTROLLER


def test_with_no_cluster_left_it_prepares_a_new_one():
    body = go_function("shouldPrepareNewCluster")
    assert re.search(r"if activeRayCluster == nil && pendingRayCluster == nil \{\n(?:\s*//.*\n)*\s*return true", body)
    assert "PendingServiceStatus = rayv1.RayServiceStatus{\n\t\t\tRayClusterName: utils.GenerateRayClusterName(" in (
        go_function("calculateStatus")
    )


def test_a_prepared_cluster_is_created_owned_by_the_rayservice():
    """The next reconcile creates the pending cluster it named; its controller reference (blockOwnerDeletion) makes
    a foreground delete of the RayService wait for it."""
    assert re.search(
        r'if rayServiceInstance\.Status\.PendingServiceStatus\.RayClusterName != "" && pendingRayCluster == nil \{'
        r"\n.*\n\s*pendingRayCluster, err = r\.createRayClusterInstance\(ctx, rayServiceInstance\)",
        go_function("reconcileRayCluster"),
    )
    assert "ctrl.SetControllerReference(rayService, rayCluster, scheme)" in go_function(
        "constructRayClusterForRayService"
    )


def test_the_stack_deletes_its_rayservice_in_the_background(dev):
    """`pulumi.com/deletionPropagationPolicy: background` (https://www.pulumi.com/registry/packages/kubernetes/
    installation-configuration/): the RayService goes at once, the operator's next reconcile finds no RayService
    (Reconcile returns on NotFound), and the garbage collector deletes the old RayCluster and its pods."""
    (rayservice,) = dev.of_type("kubernetes:ray.io/v1:RayService")
    assert rayservice.inputs["metadata"]["annotations"]["pulumi.com/deletionPropagationPolicy"] == "background"
    assert "return ctrl.Result{}, client.IgnoreNotFound(err)" in go_function("Reconcile")
