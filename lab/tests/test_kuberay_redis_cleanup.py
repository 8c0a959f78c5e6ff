"""What KubeRay does with a GCS fault-tolerant RayCluster on Redis when it is deleted, and what it lets the head carry,
read in its vendored source (vendor/kuberay-v<version>/raycluster_controller.go, validation.go, util.go, pod.go,
service.go; ray-project/kuberay ray-operator/controllers/ray/ at the tags): the facts the stack's ElastiCache wiring
and its `pulumi destroy` order rest on (docs/head-fault-tolerance.md, "KubeRay's cleanup and pulumi destroy, read in
source").
"""

from __future__ import annotations

import re

import pytest

from lab.tests.kuberay_source import go_function, kuberay_source

VERSIONS = ("1.4.0", "1.7.0")


def controller(version: str) -> str:
    return kuberay_source(version, "raycluster_controller.go")


def cleanup_job(version: str) -> str:
    return go_function(controller(version), "buildRedisCleanupJob")


def finalizer_handling(version: str) -> str:
    """The part of rayClusterReconcile that runs while a GCS FT RayCluster is deleted, up to its Job's creation."""
    reconcile = go_function(controller(version), "rayClusterReconcile")
    start = reconcile.index(
        '"The RayCluster with GCS enabled is being deleted. Start to handle the Redis cleanup finalizer."'
    )
    return reconcile[start : reconcile.index("r.buildRedisCleanupJob(ctx, *instance)", start)]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_cleanup_job_is_the_head_pod_with_its_ray_container_alone(version):
    """The Job's pod is built as the head pod is (buildHeadPod: the head group's template, then the GCS FT env,
    RAY_REDIS_ADDRESS and REDIS_PASSWORD from its Secret) and keeps its spec, volumes included, and its Ray
    container's env, which it only appends to: RAY_REDIS_CA_CERT and a CA volume on the head reach the Job."""
    job = cleanup_job(version)
    assert "pod := r.buildHeadPod(ctx, instance)" in job
    assert "pod.Spec.Containers = []corev1.Container{pod.Spec.Containers[utils.RayContainerIndex]}" in job
    assert (
        "pod.Spec.Containers[utils.RayContainerIndex].Env = append(pod.Spec.Containers[utils.RayContainerIndex].Env,"
        in job
    )
    assert "Spec:       pod.Spec," in job
    assert not re.search(r"\.(Volumes|VolumeMounts|Env) = (nil|\[\])", job)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_cleanup_job_runs_once_and_for_at_most_five_minutes(version):
    """No retry (BackoffLimit 0, restartPolicy Never) and a 300 s deadline, which counts from the Job's start, so a pod
    that never runs (no node, no image, a missing Secret) fails the Job too; the command itself waits up to 60 s for
    Redis (120 x 500 ms)."""
    job = cleanup_job(version)
    assert "BackoffLimit: ptr.To[int32](0)," in job
    assert "ActiveDeadlineSeconds: ptr.To[int64](300)," in job
    assert "pod.Spec.RestartPolicy = corev1.RestartPolicyNever" in job
    assert re.search(r'Name:\s+"RAY_redis_db_connect_retries",\s+Value: "120",', job)
    assert re.search(r'Name:\s+"RAY_redis_db_connect_wait_milliseconds",\s+Value: "500",', job)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_cleanup_job_starts_only_once_the_head_pod_is_gone(version):
    """The operator deletes the head and worker pods, then requeues every 10 s while a head pod is listed: a head pod
    that never terminates (its node gone, its kubelet unreachable) holds the RayCluster with no Job at all."""
    handling = finalizer_handling(version)
    assert "headPods, err := r.deleteAllPods(ctx, common.RayClusterHeadPodsAssociationOptions(instance))" in handling
    assert re.search(
        r"if len\(headPods\.Items\) > 0 \{(?s:.*?)return ctrl\.Result\{RequeueAfter: 10 \* time\.Second\}", handling
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_the_finalizer_goes_when_the_job_ends_whether_it_succeeded_or_failed(version):
    """A failed Job (Redis unreachable, a certificate not trusted, the deadline) removes the finalizer as a complete one
    does, and only logs that the namespace must be deleted by hand: the RayCluster never hangs on the Job while the
    operator runs."""
    reconcile = go_function(controller(version), "rayClusterReconcile")
    assert re.search(
        r"if condition, finished := utils\.IsJobFinished\(&redisCleanupJob\); finished \{\s*"
        r"controllerutil\.RemoveFinalizer\(instance, utils\.GCSFaultToleranceRedisCleanupFinalizer\)",
        reconcile,
    )
    finished = go_function(kuberay_source(version, "util.go"), "IsJobFinished")
    assert (
        "(c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue" in finished
    )


def test_1_7_also_removes_the_finalizer_300_s_after_the_delete_and_1_4_does_not():
    """1.7.0 adds a timeout (the `ray.io/gcs-ft-deletion-timeout` annotation, 300 s by default) past which it removes
    the finalizer whatever the Job does; it is checked after the head-pod wait, so it does not help a head pod that
    never goes. 1.4.0 has none."""
    handling = finalizer_handling("1.7.0")
    assert "if deletionAge >= getGCSFTDeletionTimeout(instance) {" in handling
    assert handling.index("if len(headPods.Items) > 0 {") < handling.index("getGCSFTDeletionTimeout(instance)")
    assert "RAYCLUSTER_GCS_FT_DELETION_TIMEOUT_DEFAULT = 300" in kuberay_source("1.7.0", "constant.go")
    assert "GCSFTDeletionTimeout" not in controller("1.4.0")


@pytest.mark.parametrize("version", VERSIONS)
def test_gcs_ft_options_refuse_only_kuberays_own_redis_settings_beside_them(version):
    """With gcsFaultToleranceOptions ValidateRayClusterSpec (run for a RayService's cluster too: ValidateRayServiceSpec)
    refuses `redis-password` / `redis-username` in rayStartParams, REDIS_PASSWORD / RAY_REDIS_ADDRESS /
    REDIS_USERNAME in the head's env and the external-storage-namespace annotation: what the options set. The TLS
    variables the stack adds (RAY_REDIS_CA_CERT and the rest, SSL_CERT_FILE) are nowhere in it."""
    validation = go_function(kuberay_source(version, "validation.go"), "ValidateRayClusterSpec")
    for refused in (
        'RayStartParams["redis-password"]',
        "EnvVarExists(REDIS_PASSWORD, headContainer.Env)",
        "EnvVarExists(RAY_REDIS_ADDRESS, headContainer.Env)",
        "annotations[RayExternalStorageNSAnnotationKey]",
        'RayStartParams["redis-username"] != "" || EnvVarExists(REDIS_USERNAME, headContainer.Env)',
    ):
        assert refused in validation
    source = kuberay_source(version, "validation.go")
    assert not re.search(r"REDIS_CA|REDIS_SERVER_NAME|REDIS_CLIENT|SSL_CERT", source)


@pytest.mark.parametrize("version", VERSIONS)
def test_workers_reach_the_head_by_the_head_services_name_which_follows_a_new_head_pod(version):
    """A worker's `ray start --address` is the head Service's DNS name (setMissingRayStartParams with fqdnRayIP from
    GenerateFQDNServiceName), and that Service is headless with not-ready addresses published: its name resolves to the
    head pod's IP, whichever pod that is, as soon as the pod has one. Ray 2.58 passes the host name on as given
    (ray/scripts/scripts.py start: `ray_params.gcs_address = bootstrap_address`, from
    ray/_private/services.py canonicalize_bootstrap_address, which resolves only localhost), so the raylet's GCS
    address is the name, not an IP fixed at start (that its reconnect asks DNS again is read, not measured: the CPU run
    has no pods)."""
    pod = kuberay_source(version, "pod.go")
    assert re.search(
        r'address := fmt\.Sprintf\("%s:%s", fqdnRayIP, headPort\)\s*rayStartParams\["address"\] = address', pod
    )
    assert "fqdnRayIP := utils.GenerateFQDNServiceName(ctx, instance, instance.Namespace)" in controller(version)
    service = go_function(kuberay_source(version, "service.go"), "BuildServiceForHeadPod")
    assert "headService.Spec.ClusterIP = corev1.ClusterIPNone" in service
    assert "headService.Spec.PublishNotReadyAddresses = true" in service


@pytest.mark.parametrize("version", VERSIONS)
def test_the_operators_enable_gcs_ft_redis_cleanup_false_leaves_no_finalizer_to_wait_for(version):
    """The finalizer (and the Job) exist only while the operator's ENABLE_GCS_FT_REDIS_CLEANUP is not "false"; the
    chart renders its `env` value into the operator's container (templates/deployment.yaml `.Values.env`). Without it
    a deleted RayCluster goes with no wait, and its namespace's keys stay in Redis until Redis itself goes."""
    reconcile = go_function(controller(version), "rayClusterReconcile")
    assert (
        'enableGCSFTRedisCleanup := strings.ToLower(os.Getenv(utils.ENABLE_GCS_FT_REDIS_CLEANUP)) != "false"'
        in reconcile
    )
    gate = reconcile.index(
        "if enableGCSFTRedisCleanup && utils.IsGCSFaultToleranceEnabled(&instance.Spec, instance.Annotations)"
    )
    assert gate < reconcile.index("controllerutil.AddFinalizer(instance, utils.GCSFaultToleranceRedisCleanupFinalizer)")
    assert "{{- with .Values.env }}\n          env:" in kuberay_source(version, "kuberay-operator-deployment.yaml")
