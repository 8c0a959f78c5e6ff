"""A stack's life on its running cluster, step by step (tests/cluster_model.py): at each `pulumi up` every pod that
runs on the system node at once finds room, and the config check that refuses a system node type
(`infra.settings.footprint`) counts exactly what the stack declares."""

from __future__ import annotations

import pytest

from infra.serving.rollout import ServeRolloutProvider
from infra.settings.config import ConfigError
from infra.settings.footprint import NOTHING, Requests, system_node_load, unplaced
from infra.settings.topology import DAEMONSET_CPU_MILLIS, DAEMONSET_MEMORY_MIB
from tests.cluster_model import Step, declared_system_pods, gpu_node_daemonsets, pods_during, system_nodes
from tests.conftest import SERVE_AUTOSCALING
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
    [{}, SERVE_AUTOSCALING, {"observability": False}, {"modelCache": False}],
    ids=["default", "serveAutoscaling", "no-observability", "no-cache"],
)
def test_the_config_check_counts_what_the_stack_declares(overrides):
    run = run_stack(overrides)
    load = system_node_load(
        observability=overrides.get("observability", True),
        serve_autoscaling=overrides.get("serveAutoscaling", False),
        model_cache=overrides.get("modelCache", True),
    )
    assert declared_system_pods(run) == load


def test_a_system_node_type_too_small_for_what_must_run_there_is_refused():
    """m7i.large: 2 vCPUs (EC2 DescribeInstanceTypes), 1,930m left to pods, and the Ray head alone asks 2,000m."""
    with pytest.raises(ConfigError) as refused:
        run_stack({"systemNodeType": "m7i.large"})
    message = str(refused.value)
    assert "systemNodeType='m7i.large' with systemNodeCount=1 is too small" in message
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
