"""clusterUpgradeStrategy newCluster: a cluster-spec change updates the RayService in place and KubeRay 1.4.0's
NewCluster upgrade builds the new RayCluster beside the active one (lab/tests/test_kuberay_new_cluster.py reads it in
the operator's source). What the stack declares for it, what it refuses, and what the rollout waits for, on states
shaped as KubeRay writes them (tests/rollout_states.py)."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
import yaml

from infra.nodes.node_groups import GpuNodesArgs, gpu_nodes_args_errors
from infra.preview_notes import cluster_change_path, rollback_wait_warning, surge_minutes
from infra.serving import rayservice as rayservice_module
from infra.serving import rollout_status
from infra.serving.rayservice import CLUSTER_SPEC_ANNOTATION, RAY_CLUSTER_LABEL, build_rayservice, cluster_spec_digest
from infra.serving.rollout import KubernetesReader, ServeRolloutProvider
from infra.serving.rollout_status import (
    FAILED,
    NEW_CLUSTER_ROLLBACK_HINT,
    READY,
    WAITING,
    RolloutFailed,
    await_rollout,
    current_verdict,
)
from infra.serving.serve_config import longest_stream_s
from infra.settings.changes import (
    RAYSERVICE_NEW_CLUSTER,
    RAYSERVICE_REPLACED,
    SERVE_NEW_CLUSTER,
    SURGE_DELETION_DELAY_S,
    SURGE_MINUTES_PER_GPU_NODE,
)
from infra.settings.kinds import VALIDATED_KUBERAY_VERSIONS
from infra.settings.table import CHANGE_EFFECTS, settings_by_effect
from tests.conftest import (
    API_KEYS,
    EXPOSED_SECRET_KEYS,
    NEW_CLUSTER,
    SERVE_AUTOSCALING,
    exposed,
    rejection,
)
from tests.rayservice_parts import RAYSERVICE, ROLLOUT, rayservice, serve_config
from tests.rollout_states import raycluster, rayservice_status, running_head, serve_details
from tests.schemas import raycluster_errors, rayservice_errors
from tools.offline import load_stack_config, run_stack
from tools.project import PROJECT_DIR

NODE_GROUP = ("eks:index:ManagedNodeGroup", "gpu-nodes-gpu")
LOAD_BALANCER = ("kubernetes:core/v1:Service", "serving-serve-load-balancer")
FAILED_MESSAGE = "Deploying application ray-llm failed: FileNotFoundError: /models/missing/config.json"
OLD, NEW = "ray-llm-bcdfg", "ray-llm-hjklm"


@pytest.fixture(scope="module")
def stack():
    return run_stack(NEW_CLUSTER)


@pytest.fixture(scope="module")
def manifest(stack) -> dict[str, Any]:
    return rayservice(stack)


@pytest.fixture(scope="module")
def manifest_on_1_4() -> dict[str, Any]:
    """The same stack on KubeRay 1.4.0, which a stack may pin (no authOptions, no deletion delay)."""
    return rayservice(run_stack({**NEW_CLUSTER, "kuberayVersion": "1.4.0"}))


@pytest.fixture(scope="module")
def applications(stack) -> list[dict[str, Any]]:
    return serve_config(stack)["applications"]


# --- the setting ---


def test_replace_stays_the_default(dev):
    """replace needs no GPU node beyond the cluster's: the shipped stacks keep it."""
    assert load_stack_config().cluster_upgrade_strategy == "replace"
    assert rayservice(dev)["spec"]["upgradeStrategy"] == {"type": "None"}


def test_a_bad_strategy_is_refused_naming_key_value_and_what_is_allowed():
    message = str(rejection({"clusterUpgradeStrategy": "rolling"}))
    assert "clusterUpgradeStrategy" in message and "'rolling'" in message
    assert "replace" in message and "newCluster" in message


def test_the_default_system_node_cannot_hold_a_second_head():
    """Two heads ask 4,000m; an m7i.xlarge leaves 3,920m to pods (infra/kube/node_allocatable.py allocatable)."""
    message = str(rejection({"clusterUpgradeStrategy": "newCluster"}))
    assert "ray-head-new-cluster would find no room" in message
    assert "systemNodeCount 2 of m7i.xlarge holds the default stack" in message


def test_a_capacity_block_cannot_hold_the_surge():
    message = str(
        rejection(
            {
                **NEW_CLUSTER,
                "gpuCapacityType": "capacity-block",
                "capacityReservationId": "cr-02168da1478b509e0",
                "gpuAz": "sa-east-1a",
            }
        )
    )
    assert "clusterUpgradeStrategy='newCluster' is invalid with gpuCapacityType='capacity-block'" in message


def test_a_surge_beyond_the_node_groups_quota_is_refused_naming_the_keys():
    """EKS allows 450 nodes per managed node group; 300 of them would serve, and an upgrade 300 more."""
    message = str(rejection({**NEW_CLUSTER, "prefillReplicas": 150, "decodeReplicas": 150}))
    assert "needs up to 600 GPU nodes (300 for the active cluster at its most + 300 for the new one)" in message
    assert "prefillReplicas/decodeReplicas" in message


def test_the_cluster_autoscalers_kubernetes_version_is_checked_for_the_surge_too():
    message = str(rejection({**NEW_CLUSTER, "kubernetesVersion": "1.33"}))
    assert "kubernetesVersion='1.33' is invalid with clusterUpgradeStrategy='newCluster'" in message


def test_a_reservation_is_warned_to_hold_both_clusters(monkeypatch):
    import pulumi

    said: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: said.append(message))
    load_stack_config({**NEW_CLUSTER, "capacityReservationId": "cr-0123456789abcdef0"})
    assert any("launches up to 4 GPU nodes into the reservation" in message for message in said)


# --- the capacity of the surge ---


def test_the_gpu_node_group_holds_both_clusters(stack, dev):
    """The new cluster's workers start at the worker group's replicas (the layout's GPU nodes) beside the active
    cluster's; the group's maximum holds both and its desired size is the Cluster Autoscaler's."""
    scaling = stack.get(*NODE_GROUP).inputs["scalingConfig"]
    assert (scaling["maxSize"], scaling["desiredSize"]) == (4, 2)
    assert stack.get(*NODE_GROUP).inputs["ignoreScalingChanges"] is True
    assert dev.get(*NODE_GROUP).inputs["scalingConfig"]["maxSize"] == 2


def test_with_autoscaling_the_surge_comes_on_top_of_serves_ceiling():
    """The active cluster may have scaled to its maximum (2 + 2 replicas, one a node) when the upgrade starts."""
    run = run_stack({**NEW_CLUSTER, **SERVE_AUTOSCALING})
    assert run.get(*NODE_GROUP).inputs["scalingConfig"]["maxSize"] == 4 + 2


def test_the_node_group_keeps_no_minimum_a_scale_up_could_not_raise(stack):
    """EKS refuses a minimum above the desired size (UpdateNodegroupConfig: "Minimum capacity N can't be greater than
    desired size"), and Pulumi leaves the desired size to the Cluster Autoscaler: a minimum of the replicas would
    stop every scale-up at the node group."""
    assert stack.get(*NODE_GROUP).inputs["scalingConfig"]["minSize"] == 0


def test_a_minimum_above_the_count_is_refused_by_the_component():
    args = GpuNodesArgs("gpu", "g6.8xlarge", 2, "vpc-1", "subnet-1", max_count=4, min_count=3)
    assert any(error["property_path"] == "min_count" for error in gpu_nodes_args_errors(args, None))


def test_the_cluster_autoscaler_adds_and_removes_the_surge_nodes(stack, dev):
    releases = {r.name for r in stack.of_type("kubernetes:helm.sh/v3:Release")}
    assert "cluster-autoscaler-cluster-autoscaler" in releases
    assert "cluster-autoscaler-cluster-autoscaler" not in {r.name for r in dev.of_type("kubernetes:helm.sh/v3:Release")}


def test_the_quota_preflight_counts_the_surge():
    from infra.preflight.quota import gpu_vcpu_need, quota_problem

    cfg = load_stack_config(NEW_CLUSTER)
    need = gpu_vcpu_need(cfg)
    assert need.vcpus == 4 * 32
    assert "4 x g6.8xlarge of 32 vCPUs: 2 for the active RayCluster and 2 for the new one" in str(
        quota_problem(cfg, need, 64)
    )


# --- the RayService ---


def test_the_rayservice_is_updated_in_place_by_kubernetes_own_upgrade(stack, manifest):
    """No replaceOnChanges or deleteBeforeReplace: Pulumi updates the object and KubeRay builds the new cluster
    (upgradeStrategy NewCluster, isZeroDowntimeUpgradeEnabled)."""
    resource = stack.get(RAYSERVICE, "serving-rayservice")
    assert manifest["spec"]["upgradeStrategy"] == {"type": "NewCluster"}
    assert resource.replace_on_changes == () and not resource.delete_before_replace


def test_the_rayservice_is_valid_for_kuberay_1_4(manifest):
    assert rayservice_errors(manifest) == []


def test_the_cluster_spec_carries_its_own_digest_on_the_heads_template():
    """The digest is of the spec replace would apply (built here, not read off the mock: Pulumi sends numbers as
    floats), and the digest is all that newCluster adds to it."""
    stamped = build_rayservice(load_stack_config(NEW_CLUSTER), with_hf_token=False)["spec"]["rayClusterConfig"]
    plain = build_rayservice(load_stack_config({"systemNodeCount": 2}), with_hf_token=False)["spec"]["rayClusterConfig"]
    annotations = stamped["headGroupSpec"]["template"]["metadata"].pop("annotations")
    serve = yaml.safe_load(
        build_rayservice(load_stack_config(NEW_CLUSTER), with_hf_token=False)["spec"]["serveConfigV2"]
    )
    assert annotations == {CLUSTER_SPEC_ANNOTATION: cluster_spec_digest(plain, serve)}
    assert stamped == plain


def test_the_annotation_is_the_one_the_rollout_reads():
    """rollout_status imports nothing of the stack (the GPU smoke test runs it alone): the same text, twice."""
    assert rollout_status.CLUSTER_SPEC_ANNOTATION == rayservice_module.CLUSTER_SPEC_ANNOTATION


def test_an_in_place_upgrade_without_the_digest_is_refused_by_the_component(manifest):
    """Without it the wait could not tell the new cluster from the one serving (infra/serving/serve_app.py)."""
    from infra.serving.kuberay import KubeRayOperatorArgs
    from infra.serving.serve_app import GcsStoreAccess, ServingArgs, serving_args_errors

    bare = copy.deepcopy(manifest)
    bare["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["metadata"].pop("annotations")
    store = GcsStoreAccess(endpoint="master.gcs.xk4jqz.sae1.cache.amazonaws.com", auth_token="t0ken")
    args = ServingArgs(
        namespace="inference", operator=KubeRayOperatorArgs(version="1.4.0"), rayservice=bare, gcs_store=store
    )
    assert [error["property_path"] for error in serving_args_errors(args)] == ["rayservice"]


def test_a_cluster_shape_change_is_an_update_of_the_same_object(stack):
    """The mock keeps an object's uid across updates and gives a replaced one a new uid (tools/offline_aws.py)."""
    changed = run_stack({**NEW_CLUSTER, "decodeReplicas": 2}, existing=stack)
    urn = changed.get(RAYSERVICE, "serving-rayservice").urn
    assert changed.uids[urn].uid == stack.uids[urn].uid
    assert changed.uids[urn].generation == stack.uids[urn].generation + 1


# --- the NLB ---


@pytest.fixture(scope="module")
def exposed_stack():
    return run_stack({**exposed(), **NEW_CLUSTER}, secret_keys=EXPOSED_SECRET_KEYS)


def test_the_nlb_selects_the_cluster_the_rollout_saw_serving(exposed_stack):
    """After the ServeRollout, with the RayCluster its wait ended on: a new cluster's pods are marked
    ray.io/serve=true before all its apps run (lab/tests/test_kuberay_new_cluster.py)."""
    service = exposed_stack.get(*LOAD_BALANCER)
    rollout = exposed_stack.get(ROLLOUT, "serving-rollout")
    assert service.inputs["spec"]["selector"][RAY_CLUSTER_LABEL].startswith("ray-llm-")
    assert rollout.urn in service.dependencies


def test_the_nlb_stays_the_stacks_own_https_service(exposed_stack):
    """TLS on 443 in front of 8000 with the stack's annotations, updated by Pulumi: KubeRay would write only a
    spec.serveService's spec, and only at a switch (lab/tests/test_kuberay_new_cluster.py)."""
    service = exposed_stack.get(*LOAD_BALANCER).inputs
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": 8000, "protocol": "TCP"}]
    assert "service.beta.kubernetes.io/aws-load-balancer-ssl-cert" in service["metadata"]["annotations"]
    assert "serveService" not in rayservice(exposed_stack)["spec"]
    assert exposed_stack.outputs["serveLoadBalancerEndpoint"].startswith("https://")


def test_with_replace_the_nlb_selects_by_label_alone():
    run = run_stack(exposed(), secret_keys=EXPOSED_SECRET_KEYS)
    assert RAY_CLUSTER_LABEL not in run.get(*LOAD_BALANCER).inputs["spec"]["selector"]


def test_the_nlb_follows_a_new_cluster(exposed_stack):
    """A new cluster spec, a new cluster and so a new selector (offline, the mock names the cluster after the spec)."""
    changed = run_stack({**exposed(), **NEW_CLUSTER, "decodeReplicas": 2}, secret_keys=EXPOSED_SECRET_KEYS)
    before = exposed_stack.get(*LOAD_BALANCER).inputs["spec"]["selector"][RAY_CLUSTER_LABEL]
    assert changed.get(*LOAD_BALANCER).inputs["spec"]["selector"][RAY_CLUSTER_LABEL] != before


# --- the rollout: states as KubeRay 1.4.0 writes them ---


def live(manifest: dict[str, Any], generation: int, **status: Any) -> dict[str, Any]:
    return {
        **manifest,
        "metadata": {**manifest["metadata"], "generation": generation},
        "status": rayservice_status(**status),
    }


class Reader:
    """One poll's answers: the RayService, each cluster's Serve details and each RayCluster."""

    def __init__(self, states: list[tuple[dict, dict[str, dict | None], dict[str, dict]]]) -> None:
        self.states = iter(states)
        self.current: tuple[dict, dict[str, dict | None], dict[str, dict]] = ({}, {}, {})

    def rayservice(self) -> dict:
        self.current = next(self.states, self.current)
        return self.current[0]

    def serve_details(self, cluster: str) -> dict | None:
        return self.current[1].get(cluster)

    def raycluster(self, cluster: str) -> dict | None:
        return self.current[2].get(cluster)

    def pods(self) -> dict:
        return {"items": []}


@pytest.fixture(scope="module")
def previous(manifest) -> dict[str, Any]:
    """The RayService one `pulumi up` earlier: another cluster spec (one decode replica fewer)."""
    earlier = copy.deepcopy(manifest)
    template = earlier["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]
    template["metadata"]["annotations"][CLUSTER_SPEC_ANNOTATION] = "0" * 64
    return earlier


@pytest.fixture(scope="module")
def digest(manifest) -> str:
    return manifest["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["metadata"]["annotations"][
        CLUSTER_SPEC_ANNOTATION
    ]


@pytest.fixture(scope="module")
def manifests(manifest, manifest_on_1_4) -> dict[str, dict[str, Any]]:
    return {"1.4.0": manifest_on_1_4, "1.7.0": manifest}


@pytest.mark.parametrize(
    "status",
    [
        {"observed": 2, "active": OLD, "pending": NEW},
        {"observed": 2, "active": OLD, "pending": NEW, "pending_app_status": "DEPLOY_FAILED"},
        {"observed": 2, "active": NEW},
    ],
)
@pytest.mark.parametrize("version", VALIDATED_KUBERAY_VERSIONS)
def test_the_upgrades_states_are_kuberay_objects(manifests, version, status):
    assert rayservice_errors(live(manifests[version], 2, **status), version) == []


@pytest.mark.parametrize("version", VALIDATED_KUBERAY_VERSIONS)
def test_the_clusters_are_kuberay_objects(manifests, version):
    assert raycluster_errors(raycluster(NEW, manifests[version]), version) == []


def test_the_previous_cluster_is_a_kuberay_object(previous):
    assert raycluster_errors(raycluster(OLD, previous)) == []


def test_a_new_cluster_being_built_is_waited_for_naming_both(manifest, previous, applications, digest):
    reader = Reader(
        [(live(manifest, 2, observed=2, active=OLD, pending=NEW), {OLD: serve_details(applications[0])}, {})]
    )
    verdict = current_verdict(reader, applications, digest)
    assert verdict.state == WAITING
    assert f"building RayCluster {NEW} beside the active {OLD}, which keeps serving" in verdict.message


def test_the_active_cluster_running_the_same_serve_config_is_not_yet_the_change(
    manifest, previous, applications, digest
):
    """A cluster-only change leaves the serve config as it was: the old cluster runs it RUNNING, but it was built
    from the previous spec (its digest), so the wait goes on until KubeRay has promoted the new one."""
    reader = Reader(
        [
            (
                live(manifest, 2, observed=2, active=OLD),
                {OLD: serve_details(applications[0])},
                {OLD: raycluster(OLD, previous)},
            )
        ]
    )
    verdict = current_verdict(reader, applications, digest)
    assert verdict.state == WAITING and "built from an earlier spec" in verdict.message


def test_the_promoted_cluster_built_from_the_applied_spec_running_it_is_ready(manifest, applications, digest):
    reader = Reader(
        [
            (
                live(manifest, 2, observed=2, active=NEW),
                {NEW: serve_details(applications[0])},
                {NEW: raycluster(NEW, manifest)},
            )
        ]
    )
    verdict = current_verdict(reader, applications, digest)
    assert (verdict.state, verdict.cluster) == (READY, NEW)


def test_a_failed_new_cluster_fails_saying_the_active_one_keeps_serving(manifest, applications, digest):
    failed = serve_details(applications[0], status="DEPLOY_FAILED", message=FAILED_MESSAGE)
    state = live(manifest, 2, observed=2, active=OLD, pending=NEW, pending_app_status="DEPLOY_FAILED")
    verdict = current_verdict(Reader([(state, {NEW: failed}, {})]), applications, digest)
    assert verdict.state == FAILED
    assert f"the new RayCluster {NEW} beside the active {OLD}, which keeps serving" in verdict.message
    assert FAILED_MESSAGE in verdict.message and verdict.message.endswith(NEW_CLUSTER_ROLLBACK_HINT)


def test_the_whole_upgrade_is_waited_through_and_ends_on_the_new_cluster(manifest, previous, applications, digest):
    """Pulumi's update (generation 2) → KubeRay names the pending cluster with the generation → its apps deploy →
    KubeRay switches and promotes it; the wait ends on it, and the provider hands its name to the NLB."""
    old_cluster, new_cluster = raycluster(OLD, previous), raycluster(NEW, manifest)
    running = serve_details(applications[0])
    deploying = serve_details(applications[0], status="DEPLOYING", deployments=(("Decode", "UPDATING", 0, 1, ""),))
    reader = Reader(
        [
            (live(manifest, 2, observed=1, active=OLD), {OLD: running}, {OLD: old_cluster}),
            (live(manifest, 2, observed=2, active=OLD, pending=NEW), {OLD: running}, {OLD: old_cluster}),
            (live(manifest, 2, observed=2, active=OLD, pending=NEW), {OLD: running, NEW: deploying}, {}),
            (live(manifest, 2, observed=2, active=NEW), {NEW: running}, {NEW: new_cluster, OLD: old_cluster}),
        ]
    )
    seen: list[str] = []
    verdict = await_rollout(
        reader, applications, 600, poll_s=0, sleep=lambda _s: None, report=seen.append, cluster_spec=digest
    )
    assert (verdict.state, verdict.cluster) == (READY, NEW)
    assert len(seen) == 4


def test_a_failed_upgrade_fails_the_wait_at_once(manifest, applications, digest):
    failed = serve_details(applications[0], status="DEPLOY_FAILED", message=FAILED_MESSAGE)
    state = live(manifest, 2, observed=2, active=OLD, pending=NEW, pending_app_status="DEPLOY_FAILED")
    with pytest.raises(RolloutFailed, match="keeps serving"):
        await_rollout(
            Reader([(state, {NEW: failed}, {})]),
            applications,
            600,
            poll_s=0,
            sleep=lambda _s: None,
            cluster_spec=digest,
        )


def test_the_deadline_of_an_upgrade_gives_the_new_cluster_rollback(manifest, applications, digest):
    state = live(manifest, 2, observed=2, active=OLD, pending=NEW)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(RolloutFailed) as failed:
        await_rollout(
            Reader([(state, {}, {})]),
            applications,
            60,
            poll_s=10,
            clock=lambda: now[0],
            sleep=sleep,
            cluster_spec=digest,
        )
    assert str(failed.value).endswith(NEW_CLUSTER_ROLLBACK_HINT)


def test_the_rollout_carries_the_digest_only_with_new_cluster(stack, dev, digest):
    """A replace stack's rollout keeps the inputs it stored: its next `pulumi up` waits for nothing new."""
    assert stack.get(ROLLOUT, "serving-rollout").inputs["clusterSpecSha256"] == digest
    assert "clusterSpecSha256" not in dev.get(ROLLOUT, "serving-rollout").inputs


def test_the_provider_reports_the_cluster_and_never_compares_it(manifest, applications, digest):
    reader = Reader(
        [
            (
                live(manifest, 1, observed=1, active=NEW),
                {NEW: serve_details(applications[0])},
                {NEW: raycluster(NEW, manifest)},
            )
        ]
    )
    props = {
        "kubeconfig": "{}",
        "applications": applications,
        "timeoutSeconds": 60,
        "clusterSpecSha256": digest,
        "namespace": "inference",
        "name": "ray-llm",
    }
    outs = ServeRolloutProvider(reader=lambda _props: reader, poll_seconds=0).create(props).outs
    assert outs["cluster"] == NEW
    assert not ServeRolloutProvider().diff("id", outs, {**props, "cluster": None}).changes


def test_the_raycluster_is_read_from_ray_io_v1(monkeypatch):
    from types import SimpleNamespace

    from kubernetes.client import rest

    from tests.test_rollout import eks_kubeconfig

    asked = []

    def request(self, method, url, **kwargs):
        asked.append((method, url.split(".amazonaws.com", 1)[1]))
        return rest.RESTResponse(SimpleNamespace(status=200, reason="OK", data=b"{}", headers={}))

    monkeypatch.setattr(rest.RESTClientObject, "request", request)
    KubernetesReader(eks_kubeconfig(), "inference", "ray-llm", "app=ray-llm").raycluster(NEW)
    assert asked == [("GET", f"/apis/ray.io/v1/namespaces/inference/rayclusters/{NEW}")]


# --- what the change table and the preview say ---


def test_the_settings_that_replace_the_rayservice_build_a_new_cluster_instead(stack):
    grouped = stack.get(ROLLOUT, "serving-rollout").inputs["changes"]
    assert grouped["rayservice-new-cluster"]["decodeReplicas"] == "1"
    assert "rayservice-replaced" not in grouped or "decodeReplicas" not in grouped["rayservice-replaced"]


def test_the_strategy_itself_is_grouped_under_the_replacement_it_may_cause():
    """Back to replace is a replacement (replaceOnChanges again, the digest gone from the spec)."""
    grouped = settings_by_effect({"clusterUpgradeStrategy": "newCluster"}, "newCluster")
    assert grouped == {"rayservice-replaced": {"clusterUpgradeStrategy": "newCluster"}}
    assert {RAYSERVICE_NEW_CLUSTER, RAYSERVICE_REPLACED} <= set(CHANGE_EFFECTS["clusterUpgradeStrategy"])


def test_the_preview_says_which_path_applies_and_what_it_costs():
    assert "replaces the RayService, a full outage" in cluster_change_path(load_stack_config())
    cfg = load_stack_config(NEW_CLUSTER)
    said = cluster_change_path(cfg)
    assert "keeps serving" in said and "2 more g6.8xlarge GPU node(s)" in said
    minutes = math.ceil(
        SURGE_MINUTES_PER_GPU_NODE + (longest_stream_s(cfg.max_model_len) - SURGE_DELETION_DELAY_S) / 60
    )
    assert f"about {2 * minutes / 60:.1f} extra GPU node-hours (modelled" in said


def test_the_previewed_surge_lasts_as_long_as_the_stacks_own_deletion_delay():
    """KubeRay 1.7.0 keeps the old cluster rayClusterDeletionDelaySeconds after the switch
    (vendor/kuberay-v1.7.0/rayservice_controller.go cleanUpRayClusterInstance), which the stack sets to the longest
    stream: a longer context keeps the old GPU nodes longer; 1.4.0 keeps them a fixed 60 s."""
    long_context = load_stack_config({**NEW_CLUSTER, "maxModelLen": 32768})
    extra_minutes = (longest_stream_s(32768) - SURGE_DELETION_DELAY_S) / 60
    assert surge_minutes(long_context) == math.ceil(SURGE_MINUTES_PER_GPU_NODE + extra_minutes)
    assert f"about {surge_minutes(long_context)} minutes each" in cluster_change_path(long_context)
    assert surge_minutes(load_stack_config({**NEW_CLUSTER, "kuberayVersion": "1.4.0"})) < SURGE_MINUTES_PER_GPU_NODE


def test_a_rollback_that_outlasts_the_ready_timeout_is_warned_of():
    """A rollback's cluster waits for the failed one's deletion delay (vendor/kuberay-v1.7.0/rayservice_controller.go
    cleanUpRayClusterInstance: every dropped cluster), then an engine start: a context whose longest stream outlasts
    serveReadyTimeoutMinutes would time out that `pulumi up`."""
    assert rollback_wait_warning(load_stack_config(NEW_CLUSTER)) is None
    long_context = {**NEW_CLUSTER, "maxModelLen": 65536}
    warned = rollback_wait_warning(load_stack_config(long_context))
    assert warned is not None and "set serveReadyTimeoutMinutes to 70 or more" in warned
    assert rollback_wait_warning(load_stack_config({**long_context, "serveReadyTimeoutMinutes": 70})) is None


def test_the_preview_says_which_path_an_engine_change_takes():
    """replace: in place, with the rollout's own rollback; newCluster: the surge path, under its own group."""
    said_in_place = cluster_change_path(load_stack_config())
    assert "`serve-in-place`" in said_in_place and "rolled back by the rollout itself" in said_in_place
    assert "`serve-new-cluster`" in cluster_change_path(load_stack_config(NEW_CLUSTER))
    assert f"each about {SURGE_MINUTES_PER_GPU_NODE} minutes" in SERVE_NEW_CLUSTER.keeps_serving
    assert "the active cluster keeps serving the previous version, untouched" in SERVE_NEW_CLUSTER.if_it_fails


def test_the_new_cluster_path_names_the_surge_minutes():
    assert f"about {SURGE_MINUTES_PER_GPU_NODE} minutes" in RAYSERVICE_NEW_CLUSTER.keeps_serving


def test_the_new_cluster_path_keeps_serving_and_says_what_a_failure_leaves():
    assert RAYSERVICE_NEW_CLUSTER.keeps_serving.startswith("yes with the extra capacity")
    assert "the active cluster keeps serving" in RAYSERVICE_NEW_CLUSTER.if_it_fails


def test_api_keys_still_reach_the_new_clusters_pods():
    """The auth volumes are part of the cluster spec, so a key-bearing stack's new cluster mounts them too."""
    run = run_stack({**exposed(), **NEW_CLUSTER, "serveApiKeys": [API_KEYS[0]]}, secret_keys=EXPOSED_SECRET_KEYS)
    head = rayservice(run)["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
    assert {volume["name"] for volume in head["volumes"]} >= {"serve-auth-code", "serve-api-keys"}


# --- the old cluster's streams after the switch ---


def test_with_kuberay_1_7_the_old_cluster_stays_for_the_longest_stream():
    """KubeRay 1.7.0 deletes the cluster an upgrade left rayClusterDeletionDelaySeconds after the switch
    (cleanUpRayClusterInstance, read in lab/tests/test_kuberay_new_cluster.py), which the stack sets to the longest
    stream the config allows, as for a replica replaced in place (serve_config.longest_stream_s), never below
    KubeRay's own 60 s."""
    from infra.serving.serve_config import longest_stream_s

    manifest = rayservice(run_stack({**NEW_CLUSTER, "kuberayVersion": "1.7.0"}))
    (app,) = yaml.safe_load(manifest["spec"]["serveConfigV2"])["applications"]
    max_model_len = app["args"]["decode_config"]["engine_kwargs"]["max_model_len"]
    assert manifest["spec"]["rayClusterDeletionDelaySeconds"] == longest_stream_s(max_model_len) > 60
    assert rayservice_errors(manifest, kuberay_version="1.7.0") == []


def test_the_old_cluster_stays_for_the_longest_stream_of_any_model():
    """Every model of the app streams on the old cluster until KubeRay 1.7.0 deletes it (cleanUpRayClusterInstance),
    an aggregated model with a longer context than the PD pair's too, as the ingress's graceful shutdown counts it
    (serve_config.ingress_deployment_config)."""
    from infra.serving.serve_config import longest_stream_s

    longer = {"id": "small", "source": "Qwen/Qwen3-8B", "serving": "aggregated", "maxModelLen": 8192}
    pair = {"id": "qwen3.5-9b", "source": "Qwen/Qwen3.5-9B", "serving": "pd"}
    manifest = rayservice(run_stack({**NEW_CLUSTER, "models": json.dumps([pair, longer])}))
    assert manifest["spec"]["rayClusterDeletionDelaySeconds"] == longest_stream_s(8192)


def test_with_kuberay_1_4_the_delay_is_not_set_its_crd_has_no_such_field(manifest_on_1_4):
    """KubeRay 1.4.0's 60 s is fixed (RayClusterDeletionDelayDuration): a stream longer than that on the old cluster
    is cut at its deletion (docs/serve-updates.md). The API server would prune the unknown field."""
    crd = (PROJECT_DIR / "vendor" / "kuberay-v1.4.0" / "ray.io_rayservices.yaml").read_text()
    assert "rayClusterDeletionDelaySeconds" not in crd
    assert "rayClusterDeletionDelaySeconds" not in manifest_on_1_4["spec"]


def test_without_new_cluster_there_is_no_old_cluster_to_keep():
    """A replaced RayService's clusters go with it (KubeRay deletes them at once when the RayService is deleted)."""
    assert "rayClusterDeletionDelaySeconds" not in rayservice(run_stack({"kuberayVersion": "1.7.0"}))["spec"]


class ReaderWithHead(Reader):
    """A poll's answers with the active cluster's head pod, made from the spec whose digest it carries (KubeRay copies
    the head template's metadata into the pod it creates: vendor/kuberay-v1.7.0/pod.go BuildPod)."""

    def __init__(self, states, cluster: str, digest: str) -> None:
        super().__init__(states)
        self.head = running_head(cluster, f"{cluster}-head-x7k2p")
        self.head["metadata"]["annotations"] = {CLUSTER_SPEC_ANNOTATION: digest}

    def pods(self) -> dict:
        return {"items": [self.head]}


def test_an_active_cluster_updated_in_place_by_a_new_operator_fails_naming_its_stale_pods(
    manifest, previous, applications, digest
):
    """A new operator updates the active RayCluster made by another KubeRay version in place from the RayService's
    spec, a new one included if it arrived first, and builds no new cluster (vendor/kuberay-v1.7.0/
    rayservice_controller.go reconcileRayCluster, shouldUpdateCluster); the RayCluster then says the applied spec
    while its pods run the earlier one (docs/kuberay-versions.md, Moving a running stack): the wait must not call
    that done."""
    earlier = previous["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["metadata"]["annotations"][
        CLUSTER_SPEC_ANNOTATION
    ]
    state = (
        live(manifest, 2, observed=2, active=OLD),
        {OLD: serve_details(applications[0])},
        {OLD: raycluster(OLD, manifest)},
    )
    verdict = current_verdict(ReaderWithHead([state], OLD, earlier), applications, digest)
    assert verdict.state == FAILED
    assert (
        f"RayCluster {OLD} took the applied spec in place, but its head pod {OLD}-head-x7k2p runs an earlier one"
        in (verdict.message)
    )
    assert f"kubectl -n inference delete pod -l ray.io/cluster={OLD}" in verdict.message


def test_a_promoted_cluster_whose_head_was_made_from_the_applied_spec_is_ready(manifest, applications, digest):
    state = (
        live(manifest, 2, observed=2, active=NEW),
        {NEW: serve_details(applications[0])},
        {NEW: raycluster(NEW, manifest)},
    )
    verdict = current_verdict(ReaderWithHead([state], NEW, digest), applications, digest)
    assert (verdict.state, verdict.cluster) == (READY, NEW)
