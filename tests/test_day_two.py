"""A stack's life on its running cluster, step by step (tests/cluster_model.py): at each `pulumi up` every pod that
runs on the system node at once finds room, and the config check that refuses a system node type
(`infra.settings.footprint`) counts exactly what the stack declares."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from infra.kube.node_allocatable import NOTHING, Requests
from infra.serving.crds import KubeRayCrdsProvider, vendored_crd_digests
from infra.serving.rayservice import CLUSTER_SPEC_ANNOTATION
from infra.serving.rollout import ServeRolloutProvider, plain_numbers
from infra.serving.rollout_status import RolloutFailed, built_from
from infra.settings.footprint import system_node_load, unplaced
from infra.settings.stack_config import ConfigError
from infra.settings.topology import DAEMONSET_CPU_MILLIS, DAEMONSET_MEMORY_MIB
from tests.cluster_model import (
    Step,
    declared_system_pods,
    gpu_node_daemonsets,
    gpu_nodes_at_once,
    pods_during,
    system_nodes,
)
from tests.conftest import EXPOSED_SECRET_KEYS, NEW_CLUSTER, SERVE_AUTOSCALING, exposed
from tests.rayservice_parts import RAYSERVICE, ROLLOUT, rayservice, serve_config
from tests.rollout_states import pod_list, raycluster, rayservice_status, serve_details
from tools.offline import load_stack_config, run_stack

OTHER_MODEL = "Qwen/Qwen3-8B"  # a public dense model the offline Hub answers for (tools/offline_models.py HUB_CONFIGS)
# The dev stack's model as the pd entry of a `models` list (docs/models.md), and a second model beside it, later with
# LoRA adapters.
DEV_PD_MODEL = {"id": "qwen3.5-9b", "source": "Qwen/Qwen3.5-9B", "serving": "pd"}
SECOND_MODEL = {"id": "small", "source": OTHER_MODEL, "serving": "aggregated", "maxNumSeqs": 32}


def with_models(*models: dict) -> dict:
    return {"models": json.dumps([DEV_PD_MODEL, *models])}


LIFE = [
    Step("first deploy", {}, head_running=False, mirrors=True),
    Step("model change", {"modelSource": OTHER_MODEL}, mirrors=True),
    Step("serve-only change", {"modelSource": OTHER_MODEL, "maxModelLen": 8192}),
    Step(
        "cluster-shape change",
        {"modelSource": OTHER_MODEL, "maxModelLen": 8192, "decodeReplicas": 2},
    ),
    Step("observability off", {"modelSource": OTHER_MODEL, "observability": False}),
    Step("observability on again, model back", {}, mirrors=True),
    Step("serve autoscaling on", SERVE_AUTOSCALING),
    Step(
        "model change with autoscaling",
        {**SERVE_AUTOSCALING, "modelSource": OTHER_MODEL},
        mirrors=True,
    ),
    Step("scale down, autoscaling off", {}, mirrors=True),
    Step("scale up", {"decodeReplicas": 2}),
    Step("a cluster-shape change that fails", {"decodeReplicas": 3}, fails=True),
    Step("its rollback, another replacement", {"decodeReplicas": 2}),
    Step("a model change that fails", {"decodeReplicas": 2, "modelSource": OTHER_MODEL}, mirrors=True, fails=True),
    Step("its rollback", {"decodeReplicas": 2}, mirrors=True),
    Step("scale down", {}),
    Step("a second model beside the pair", with_models(SECOND_MODEL)),
    Step("an adapter for it", with_models({**SECOND_MODEL, "adapters": ["sql"]})),
    Step("back to one model", {}),
]


@pytest.mark.parametrize("step", LIFE, ids=lambda step: step.name)
def test_every_system_pod_of_the_step_finds_room(step):
    """The system node group is fixed-size (no autoscaler adds a system node): a pod without room waits Pending,
    and the RayService (or `pulumi up` behind the mirror Job) waits with it until its timeout."""
    run = run_stack(step.overrides)
    assert unplaced(pods_during(run, step), system_nodes(run)) == []


def test_a_model_change_runs_the_mirror_beside_the_running_head():
    """The step that hung: on a running stack the head is up when the mirror Job starts."""
    run = run_stack({"modelSource": OTHER_MODEL})
    pods = pods_during(run, Step("model change", {}, mirrors=True))
    assert {"ray-head", "model-mirror", "kuberay-operator", "prometheus"} <= set(pods)


@pytest.mark.parametrize(
    "overrides",
    [{}, SERVE_AUTOSCALING, {"observability": False}, {"modelCache": False}, NEW_CLUSTER],
    ids=["default", "serveAutoscaling", "no-observability", "no-cache", "newCluster"],
)
def test_the_config_check_counts_what_the_stack_declares(overrides):
    run = run_stack(overrides)
    assert declared_system_pods(run) == system_node_load(load_stack_config(overrides))


@pytest.mark.parametrize("system_node_type", ["m7i.large", "m6i.large"])
def test_a_system_node_type_too_small_for_what_must_run_there_is_refused(system_node_type):
    """m7i.large, m6i.large: 2 vCPUs (EC2 DescribeInstanceTypes), 1,930m left to pods, and the Ray head alone asks
    2,000m. The offline render passed m6i.large unchecked while its tables offered it without describing it."""
    with pytest.raises(ConfigError) as refused:
        run_stack({"systemNodeType": system_node_type})
    message = str(refused.value)
    assert f"systemNodeType={system_node_type!r} with systemNodeCount=1 is too small" in message
    assert "ray-head would find no room" in message


def test_more_system_nodes_hold_what_one_small_node_cannot():
    """Each pod needs one node with room; the head still needs a node that holds it alone."""
    with pytest.raises(ConfigError, match="ray-head would find no room"):
        run_stack({"systemNodeType": "m7i.large", "systemNodeCount": 3})


@pytest.mark.parametrize("overrides", [{}, {"observability": False}], ids=["observability", "no-observability"])
def test_the_gpu_nodes_daemonsets_fit_what_the_worker_leaves_them(overrides):
    """The worker pod asks the GPU node's allocatable less a fixed share for the DaemonSets (infra/settings/topology.py
    DAEMONSET_CPU_MILLIS, DAEMONSET_MEMORY_MIB): what they ask must fit that share, or the worker (a whole node's
    GPUs) waits Pending on every node."""
    run = run_stack(overrides)
    asked = sum(gpu_node_daemonsets(run).values(), NOTHING)
    assert "device-plugins-nvidia-device-plugin" in gpu_node_daemonsets(run)
    assert asked.fits(Requests(DAEMONSET_CPU_MILLIS, DAEMONSET_MEMORY_MIB))


def test_a_new_adapter_beside_a_served_one_changes_nothing_running():
    """An adapter is a folder under its model's prefix, loaded on its first request (docs/models.md): listing one more
    leaves the RayService and the workers' read access as they were, so nothing restarts."""
    one = run_stack(with_models({**SECOND_MODEL, "adapters": ["sql"]}))
    two = run_stack(with_models({**SECOND_MODEL, "adapters": ["sql", "legal"]}))
    assert rayservice(two)["spec"] == rayservice(one)["spec"]
    reader = ("aws:iam/rolePolicy:RolePolicy", "model-cache-reader")
    assert two.get(*reader).inputs["policy"] == one.get(*reader).inputs["policy"]


def test_every_step_that_changes_the_rayservice_waits_for_the_app():
    """Played in order on one stack (the mock's objects keep their uids unless replaced: run_stack existing=): where a
    step changes the RayService (its spec, or a new object), the rollout's diff against the state it last stored
    (the last step that succeeded; a failed update records nothing, pulumi pkg/resource/deploy/step.go) finds a
    change, so `pulumi up` waits for the app instead of reporting success over a cold or failing cluster."""
    previous = stored = None
    for step in LIFE:
        run = run_stack(step.overrides, existing=previous)
        rayservice = run.get(RAYSERVICE, "serving-rayservice")
        news = run.get(ROLLOUT, "serving-rollout").inputs
        if previous is not None and (
            rayservice.inputs["spec"] != previous.get(RAYSERVICE, "serving-rayservice").inputs["spec"]
            or run.uids[rayservice.urn] != previous.uids[rayservice.urn]
        ):
            assert ServeRolloutProvider().diff("inference/ray-llm", stored, news).changes, step.name
        if not step.fails:
            stored = {**news, "verdict": "application ray-llm RUNNING the applied config"}
        previous = run


# The same stack with clusterUpgradeStrategy newCluster and an internal NLB (its certificate and keys): each
# cluster-shape change is KubeRay's NewCluster upgrade, a second head and a second set of GPU workers beside the
# active cluster.
EXPOSED_NEW_CLUSTER = {**exposed(), **NEW_CLUSTER}
IMAGE = "123456789012.dkr.ecr.sa-east-1.amazonaws.com/ray:serve-llm-2"
NEW_CLUSTER_LIFE = [
    Step("first deploy", EXPOSED_NEW_CLUSTER, head_running=False, mirrors=True),
    # A new cluster too: the digest on its spec covers the engines' config (infra/serving/rayservice.py).
    Step("model change", {**EXPOSED_NEW_CLUSTER, "modelSource": OTHER_MODEL}, mirrors=True, surge=True),
    Step("a decode replica more", {**EXPOSED_NEW_CLUSTER, "modelSource": OTHER_MODEL, "decodeReplicas": 2}, surge=True),
    Step(
        "image change",
        {**EXPOSED_NEW_CLUSTER, "modelSource": OTHER_MODEL, "decodeReplicas": 2, "dlcImage": IMAGE},
        mirrors=True,
        surge=True,
    ),
    Step("a cluster-shape change that fails", {**EXPOSED_NEW_CLUSTER, "decodeReplicas": 3}, surge=True, fails=True),
    Step("its rollback, yet another new cluster", {**EXPOSED_NEW_CLUSTER, "decodeReplicas": 2}, surge=True),
    Step("serve autoscaling on", {**EXPOSED_NEW_CLUSTER, **SERVE_AUTOSCALING, "decodeReplicas": 2}, surge=True),
]


def _play(life: list[Step]) -> list[tuple[Step, object]]:
    """Each step's run on the one stack, in order (the mock's objects keep their uids unless replaced)."""
    played, previous = [], None
    for step in life:
        previous = run_stack(step.overrides, secret_keys=EXPOSED_SECRET_KEYS, existing=previous)
        played.append((step, previous))
    return played


@pytest.fixture(scope="module")
def new_cluster_life():
    return _play(NEW_CLUSTER_LIFE)


def test_with_new_cluster_every_step_keeps_the_same_rayservice(new_cluster_life):
    """No replacement at any step: the RayService is the object the first deploy created, updated in place."""
    first = new_cluster_life[0][1]
    urn = first.get(RAYSERVICE, "serving-rayservice").urn
    assert {run.uids[urn].uid for _, run in new_cluster_life} == {first.uids[urn].uid}


def test_with_new_cluster_every_step_that_changes_the_rayservice_waits_for_the_app(new_cluster_life):
    stored = None
    for index, (step, run) in enumerate(new_cluster_life):
        news = run.get(ROLLOUT, "serving-rollout").inputs
        before = new_cluster_life[index - 1][1] if index else None
        if (
            before is not None
            and run.get(RAYSERVICE, "serving-rayservice").inputs["spec"]
            != before.get(RAYSERVICE, "serving-rayservice").inputs["spec"]
        ):
            assert ServeRolloutProvider().diff("inference/ray-llm", stored, news).changes, step.name
        if not step.fails:
            stored = {**news, "verdict": "application ray-llm RUNNING the applied config"}


@pytest.mark.parametrize("index", range(len(NEW_CLUSTER_LIFE)), ids=[step.name for step in NEW_CLUSTER_LIFE])
def test_with_new_cluster_every_system_pod_of_the_step_finds_room(new_cluster_life, index):
    """Two heads at once during an upgrade, and a failed new cluster's head until the change after it (at its
    rollback for KubeRay's deletion delay with a third, which waits Pending that long: not counted)."""
    step, run = new_cluster_life[index]
    assert unplaced(pods_during(run, step), system_nodes(run)) == []


@pytest.mark.parametrize("index", range(1, len(NEW_CLUSTER_LIFE)), ids=[s.name for s in NEW_CLUSTER_LIFE[1:]])
def test_with_new_cluster_the_surge_fits_the_gpu_node_group(new_cluster_life, index):
    """The active cluster (the last step that succeeded: a failed new cluster is never switched to) at its most beside
    the new one's workers: within the group's maximum, which the Cluster Autoscaler fills (a rollback's new cluster
    takes the failed one's nodes once KubeRay deletes it, after the deletion delay: the stack's
    rayClusterDeletionDelaySeconds with 1.7.0, 60 s with 1.4.0)."""
    step, run = new_cluster_life[index]
    active = next(earlier for s, earlier in reversed(new_cluster_life[:index]) if not s.fails)
    if step.surge:
        needed, holds = gpu_nodes_at_once(active, run)
        assert needed <= holds, step.name


def test_with_new_cluster_a_scale_down_does_not_fit_its_surge():
    """The limit docs/changes.md states: the group's maximum follows the new layout, so a scale-down's surge (the
    old, larger cluster beside the new one) finds no room: the new workers wait Pending and `pulumi up` fails at its
    deadline while the active cluster keeps serving. Scale down with clusterUpgradeStrategy replace."""
    larger = run_stack({**NEW_CLUSTER, "decodeReplicas": 3})
    needed, holds = gpu_nodes_at_once(larger, run_stack(NEW_CLUSTER))
    assert needed > holds


def test_with_new_cluster_the_nlb_follows_each_cluster_the_rollout_saw(new_cluster_life):
    """The stack's own NLB Service, after the rollout, selecting the RayCluster it ended on: a new cluster at each
    cluster-shape or engine change (offline the mock names the cluster after the spec)."""
    selected = [
        run.get("kubernetes:core/v1:Service", "serving-serve-load-balancer").inputs["spec"]["selector"][
            "ray.io/cluster"
        ]
        for _, run in new_cluster_life
    ]
    assert selected[1] != selected[0]  # the model change: a new cluster, its digest covering the engines
    assert selected[2] != selected[1]  # a decode replica more: a new cluster


# --- a good change, a broken one and its repair, played through the rollout against KubeRay's and Serve's rules ---


class LiveCluster:
    """The RayService, its RayClusters and Serve as the rollout reads them, in the shapes KubeRay (1.4.0 and 1.7.0)
    and Ray 2.58 answer (tests/rollout_states.py), moved by KubeRay's rules at each read, the same at both tags:
    observedGeneration follows the generation (calculateStatus); with NewCluster a spec whose hash (the head
    template's digest) differs from the pending cluster's, else the active one's, gets a new pending cluster
    (shouldPrepareNewCluster), which alone is sent the serve config while it exists and is promoted once its
    application runs (reconcileServe, getAndCheckServeStatus); without it the serve config goes to the one cluster
    whenever it differs from the last one sent (checkIfNeedSubmitServeApplications). Serve runs a config, or fails one
    the test names broken (DEPLOY_FAILED, nothing serving: docs/serve-updates.md). `serving` records, per read,
    whether the active cluster's application answers."""

    def __init__(self, manifest: dict, broken: list[dict]) -> None:
        self.manifest = copy.deepcopy(manifest)
        self.generation = 1
        self.broken = broken
        self.active, self.pending = "", "ray-llm-c1"
        self.built = {"ray-llm-c1": self._digest()}
        self.serve: dict[str, tuple[dict, str]] = {}  # cluster -> (deployed app config, status)
        self.sent: dict[str, str] = {}  # cluster -> the serveConfigV2 KubeRay sent it last
        self.serving: list[bool] = []
        self.patches: list[dict] = []

    def _digest(self) -> str:
        return built_from({"spec": self.manifest["spec"]["rayClusterConfig"]})

    def apply(self, manifest: dict) -> None:
        """Pulumi's server-side apply (the RayService's pulumi.com/patchForce takes serveConfigV2 back from the
        rollout's patch): its fields set, annotations it does not own kept, a new generation for a new spec."""
        annotations = {**self.manifest["metadata"].get("annotations", {}), **manifest["metadata"]["annotations"]}
        if manifest["spec"] != self.manifest["spec"]:
            self.generation += 1
        self.manifest = {**copy.deepcopy(manifest), "metadata": {**manifest["metadata"], "annotations": annotations}}

    def roll_back(self, serve_config_v2: str, annotations: dict) -> None:
        self.patches.append({"serveConfigV2": serve_config_v2, "annotations": annotations})
        self.manifest["metadata"]["annotations"] = {**self.manifest["metadata"]["annotations"], **annotations}
        self.manifest["spec"] = {**self.manifest["spec"], "serveConfigV2": serve_config_v2}
        self.generation += 1

    def _reconcile(self) -> None:
        goal = self._digest()
        if goal and goal != self.built[self.pending or self.active]:
            self.pending = f"ray-llm-c{len(self.built) + 1}"
            self.built[self.pending] = goal
        target = self.pending or self.active
        config = self.manifest["spec"]["serveConfigV2"]
        if self.sent.get(target) != config:
            self.sent[target] = config
            (app,) = yaml.safe_load(config)["applications"]
            failed = any(plain(app) == plain(bad) for bad in self.broken)
            self.serve[target] = (app, "DEPLOY_FAILED" if failed else "RUNNING")
        if self.pending and self.serve[self.pending][1] == "RUNNING":
            self.active, self.pending = self.pending, ""
        self.serving.append(bool(self.active) and self.serve[self.active][1] == "RUNNING")

    def rayservice(self) -> dict:
        self._reconcile()
        status = rayservice_status(
            self.generation,
            active=self.active,
            pending=self.pending,
            app_status=self.serve[self.active][1] if self.active else "",
            pending_app_status=self.serve[self.pending][1] if self.pending else "",
        )
        return {
            **self.manifest,
            "metadata": {**self.manifest["metadata"], "generation": self.generation},
            "status": status,
        }

    def raycluster(self, name: str) -> dict:
        built = copy.deepcopy(self.manifest)
        annotations = built["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["metadata"]["annotations"]
        annotations[CLUSTER_SPEC_ANNOTATION] = self.built[name]
        return raycluster(name, built)

    def serve_details(self, cluster: str) -> dict | None:
        if cluster not in self.serve:
            return None
        app, status = self.serve[cluster]
        message = "The deployments ['Decode'] failed to start 3 times in a row." if status == "DEPLOY_FAILED" else ""
        return serve_details(app, status=status, message=message)

    def pods(self) -> dict:
        return pod_list({})

    def runs(self, step_manifest: dict) -> bool:
        (app,) = yaml.safe_load(step_manifest["spec"]["serveConfigV2"])["applications"]
        return bool(self.active) and plain(self.serve[self.active][0]) == plain(app)


def plain(value):
    return json.loads(json.dumps(plain_numbers(value), sort_keys=True))


GOOD = {"maxModelLen": 8192}
BROKEN = {"maxModelLen": 8192, "modelSource": OTHER_MODEL}  # Serve fails it here, as a model path that is not there


def _pulumi_up(cluster: LiveCluster, applied: dict | None, run, stored: dict | None):
    """One `pulumi up` as the engine plays it: the RayService applied where its inputs differ from Pulumi's state (the
    last manifest it applied; a failed rollout does not undo that), then the rollout's create, or its update where its
    diff against the state it last stored finds a change. Returns what was applied, the rollout's new state (None: it
    failed) and its failure."""
    manifest = rayservice(run)
    if applied is not None and manifest != applied:
        cluster.apply(manifest)
    news = {**run.get(ROLLOUT, "serving-rollout").inputs, "kubeconfig": "{}"}
    provider = ServeRolloutProvider(reader=lambda _props: cluster, poll_seconds=0)
    try:
        if stored is None:
            return manifest, provider.create(news).outs, None
        if not provider.diff("inference/ray-llm", stored, news).changes:
            return manifest, stored, None
        return manifest, provider.update("inference/ray-llm", stored, news).outs, None
    except RolloutFailed as failed:
        return manifest, None, failed


def _life(base: dict):
    """First deploy, a good change, a broken change, the same `pulumi up` again, its repair (the good values set
    again): each step's failure (or None), whether the app ran that step's config after it, and the cluster."""
    first = run_stack(base)
    cluster = LiveCluster(rayservice(first), broken=[serve_config(run_stack({**base, **BROKEN}))["applications"][0]])
    applied, stored, _ = _pulumi_up(cluster, None, first, None)
    steps, previous = [], first
    for name, overrides in (("good", GOOD), ("broken", BROKEN), ("again", BROKEN), ("repair", GOOD)):
        run = run_stack({**base, **overrides}, existing=previous)
        applied, outs, failed = _pulumi_up(cluster, applied, run, stored)
        stored = outs or stored
        steps.append((name, failed, cluster.runs(rayservice(run)), len(cluster.serving)))
        previous = run
    return {name: (failed, runs, reads) for name, failed, runs, reads in steps}, cluster


@pytest.fixture(scope="module")
def in_place_life():
    return _life({})


@pytest.fixture(scope="module")
def surge_life():
    return _life(NEW_CLUSTER)


def test_in_place_a_good_change_runs(in_place_life):
    steps, _ = in_place_life
    assert steps["good"][:2] == (None, True)


def test_in_place_a_broken_change_is_rolled_back_by_the_rollout_and_fails_loudly(in_place_life):
    """The rollout wrote the last config that ran back into the RayService (one patch), which runs again, and
    `pulumi up` failed with Serve's words and what it did."""
    steps, cluster = in_place_life
    failed, runs_broken, _ = steps["broken"]
    assert failed is not None and not runs_broken
    assert "failed to start 3 times in a row" in str(failed)
    assert "put back the last config that ran, which serves again" in str(failed)
    assert len(cluster.patches) == 1


def test_in_place_the_outage_ends_without_a_human(in_place_life):
    """Nothing served from the broken config's DEPLOY_FAILED until the rollback ran; by the end of that `pulumi up`
    the active cluster serves again."""
    steps, cluster = in_place_life
    good_reads, broken_reads = steps["good"][2], steps["broken"][2]
    during = cluster.serving[good_reads:broken_reads]
    assert False in during and during[-1] is True


def test_in_place_the_same_pulumi_up_again_fails_at_once_and_sends_nothing(in_place_life):
    steps, cluster = in_place_life
    failed, runs_broken, _ = steps["again"]
    assert failed is not None and "failed before and the rollout put back" in str(failed)
    assert "failed to start 3 times in a row" in str(failed)
    assert not runs_broken and len(cluster.patches) == 1
    assert cluster.serving[steps["broken"][2] :] and all(cluster.serving[steps["broken"][2] :])


def test_in_place_the_repair_runs(in_place_life):
    steps, _ = in_place_life
    assert steps["repair"][:2] == (None, True)


def test_on_the_surge_path_a_broken_change_never_stops_the_active_cluster(surge_life):
    """newCluster: the broken config went to a pending cluster of its own (its digest on the head's template), which
    failed beside the active one; the active one answered at every read, the rollout never patched."""
    steps, cluster = surge_life
    assert steps["good"][:2] == (None, True)
    failed = steps["broken"][0]
    assert failed is not None and "which keeps serving" in str(failed)
    assert all(cluster.serving[steps["good"][2] :])
    assert cluster.patches == []


def test_on_the_surge_path_the_repair_is_another_new_cluster(surge_life):
    steps, cluster = surge_life
    assert steps["repair"][:2] == (None, True)
    assert len(cluster.built) == 4  # the first, the good change's, the broken one's, the repair's


# --- a stack first deployed on KubeRay 1.4.0 (the default before 1.7.0), moved to the default ---

KUBERAY_CRDS = ("pulumi-python:dynamic/ray-llm-eks:KubeRayCrds", "serving-kuberay-crds")
OPERATOR_RELEASE = ("kubernetes:helm.sh/v3:Release", "serving-kuberay-kuberay-operator")
ON_KUBERAY_1_4 = {"kuberayVersion": "1.4.0"}
KUBERAY_MOVE = [
    Step("first deploy on KubeRay 1.4.0", ON_KUBERAY_1_4, head_running=False, mirrors=True),
    Step("KubeRay 1.7.0, the default: Ray's token on", {}),
]


@pytest.fixture(scope="module")
def kuberay_move():
    return _play(KUBERAY_MOVE)


@pytest.mark.parametrize("index", range(len(KUBERAY_MOVE)), ids=[step.name for step in KUBERAY_MOVE])
def test_moving_kuberay_every_system_pod_of_the_step_finds_room(kuberay_move, index):
    """The operator's Deployment is `strategy: Recreate` at both tags (vendor/kuberay-v<version>/
    kuberay-operator-deployment.yaml): the new operator starts once the old one is gone, never beside it."""
    step, run = kuberay_move[index]
    assert unplaced(pods_during(run, step), system_nodes(run)) == []


def test_moving_kuberay_the_second_pulumi_up_applies_the_new_crds_before_the_new_operator(kuberay_move):
    """helm upgrade leaves the CRDs Helm's first install put in (https://helm.sh/docs/chart_best_practices/
    custom_resource_definitions/): the stack's own KubeRayCrds moves to 1.7.0's files (an update: it applies them,
    tests/test_kuberay_crds.py), and the operator's release waits for it."""
    (_, before), (_, after) = kuberay_move
    crds = after.get(*KUBERAY_CRDS)
    assert KubeRayCrdsProvider().diff("kuberay-crds-1.4.0", before.get(*KUBERAY_CRDS).inputs, crds.inputs).changes
    assert crds.inputs["crds"] == vendored_crd_digests("1.7.0")
    release = after.get(*OPERATOR_RELEASE)
    assert release.inputs["version"] == "1.7.0"
    assert crds.urn in release.dependencies


def test_moving_kuberay_replaces_the_rayservice_with_rays_token_and_waits_for_it(kuberay_move):
    """rayAuthMode auto turns the token on with 1.7.0: a cluster-spec change, so with clusterUpgradeStrategy replace
    the RayService is deleted and created again (a new uid: an outage until the new cluster serves, docs/changes.md),
    after the operator it depends on, and `pulumi up` waits for the new cluster's app."""
    (_, before), (_, after) = kuberay_move
    old, new = before.get(RAYSERVICE, "serving-rayservice"), after.get(RAYSERVICE, "serving-rayservice")
    assert "authOptions" not in old.inputs["spec"]["rayClusterConfig"]
    assert new.inputs["spec"]["rayClusterConfig"]["authOptions"] == {"mode": "token"}
    assert after.uids[new.urn].uid != before.uids[old.urn].uid
    assert after.get(*OPERATOR_RELEASE).urn in new.dependencies
    stored = {**before.get(ROLLOUT, "serving-rollout").inputs, "verdict": "application ray-llm RUNNING"}
    assert (
        ServeRolloutProvider().diff("inference/ray-llm", stored, after.get(ROLLOUT, "serving-rollout").inputs).changes
    )


@pytest.mark.parametrize("strategy", [{}, NEW_CLUSTER], ids=["replace", "newCluster"])
def test_moving_kuberay_with_the_token_held_off_leaves_the_rayservice_where_it_runs(strategy):
    """The move without an outage or a surge (docs/kuberay-versions.md): rayAuthMode disabled first. The second
    `pulumi up` moves the CRDs and the operator only; the RayService's cluster spec stays, so it is neither replaced
    nor given a new cluster (KubeRay 1.7.0 updates the running RayCluster in place for its new version, without new
    pods: vendor/kuberay-v1.7.0/rayservice_controller.go shouldUpdateCluster, raycluster_controller.go
    shouldRecreatePodsForUpgrade, which recreates pods only for a RayCluster upgradeStrategy the stack does not set)."""
    before = run_stack({**strategy, **ON_KUBERAY_1_4})
    after = run_stack({**strategy, "rayAuthMode": "disabled"}, existing=before)
    old, new = before.get(RAYSERVICE, "serving-rayservice"), after.get(RAYSERVICE, "serving-rayservice")
    assert new.inputs["spec"]["rayClusterConfig"] == old.inputs["spec"]["rayClusterConfig"]
    assert "upgradeStrategy" not in new.inputs["spec"]["rayClusterConfig"]
    assert after.uids[new.urn].uid == before.uids[old.urn].uid
    assert after.get(*OPERATOR_RELEASE).inputs["version"] == "1.7.0"
