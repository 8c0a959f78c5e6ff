"""A stack's life on its running cluster, step by step (tests/cluster_model.py): at each `pulumi up` every pod that
runs on the system node at once finds room, and the config check that refuses a system node type
(`infra.settings.footprint`) counts exactly what the stack declares."""

from __future__ import annotations

import pytest

from infra.serving.rollout import ServeRolloutProvider
from infra.settings.config import ConfigError
from infra.settings.footprint import NOTHING, Requests, system_node_load, unplaced
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
from tests.rayservice_parts import RAYSERVICE, ROLLOUT
from tools.offline import run_stack

OTHER_MODEL = "Qwen/Qwen3-8B"  # a public dense model the offline Hub answers for (tools/offline.py HUB_CONFIGS)
LIFE = [
    Step("first deploy", {}, head_running=False, mirrors=True),
    Step("model change", {"modelSource": OTHER_MODEL}, mirrors=True),
    Step("serve-only change", {"modelSource": OTHER_MODEL, "maxModelLen": 8192}),
    Step(
        "cluster-shape change",
        {"modelSource": OTHER_MODEL, "maxModelLen": 8192, "decodeReplicas": 2, "gpuNodeCount": 3},
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
    load = system_node_load(
        observability=overrides.get("observability", True),
        serve_autoscaling=overrides.get("serveAutoscaling", False),
        model_cache=overrides.get("modelCache", True),
        new_cluster=overrides.get("clusterUpgradeStrategy") == "newCluster",
    )
    assert declared_system_pods(run) == load


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
    Step("model change", {**EXPOSED_NEW_CLUSTER, "modelSource": OTHER_MODEL}, mirrors=True),
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
    rollback for KubeRay's 60 s with a third, which waits Pending that long: not counted)."""
    step, run = new_cluster_life[index]
    assert unplaced(pods_during(run, step), system_nodes(run)) == []


@pytest.mark.parametrize("index", range(1, len(NEW_CLUSTER_LIFE)), ids=[s.name for s in NEW_CLUSTER_LIFE[1:]])
def test_with_new_cluster_the_surge_fits_the_gpu_node_group(new_cluster_life, index):
    """The active cluster (the last step that succeeded: a failed new cluster is never switched to) at its most beside
    the new one's workers: within the group's maximum, which the Cluster Autoscaler fills (a rollback's new cluster
    takes the failed one's nodes once KubeRay deletes it, 60 s on)."""
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
    cluster-shape change, the same across a serve-only one (offline the mock names the cluster after the spec)."""
    selected = [
        run.get("kubernetes:core/v1:Service", "serving-serve-load-balancer").inputs["spec"]["selector"][
            "ray.io/cluster"
        ]
        for _, run in new_cluster_life
    ]
    assert selected[0] == selected[1]  # the model change is serve-only
    assert selected[2] != selected[1]  # a decode replica more: a new cluster
