"""The ServeRollout: `pulumi up` returns once the live app runs the config just applied, and fails otherwise.

Its verdicts are judged on API answers in the real shapes (tests/rollout_states.py, each held to its schema here),
and the RayService it follows is replaced, never upgraded, when its cluster spec changes.
"""

from __future__ import annotations

import base64
import copy
import http.client
import json
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from kubernetes.client import rest
from kubernetes.client.exceptions import ApiException
from pulumi.dynamic.dynamic import serialize_provider
from ray.serve.schema import ServeInstanceDetails

from infra.serving.rollout import (
    ROLLBACK_FIELD_MANAGER,
    ROLLED_BACK_ANNOTATION,
    KubernetesReader,
    ServeRolloutProvider,
    plain_numbers,
    refuse_rolled_back,
    rolls_back_in_place,
    serve_config_digest,
)
from infra.serving.rollout_status import (
    FAILED,
    READY,
    UNHEALTHY,
    UNHEALTHY_GRACE_S,
    WAITING,
    ClusterRefused,
    RolloutFailed,
    await_rollout,
    cluster_verdict,
    config_matches,
    current_verdict,
    serve_verdict,
    unschedulable_pods,
)
from infra.settings.kinds import VALIDATED_KUBERAY_VERSIONS
from tests.conftest import kuberay_run
from tests.rayservice_parts import RAYSERVICE, ROLLOUT, rayservice, serve_config
from tests.rollout_states import (
    pod_list,
    raycluster,
    rayservice_status,
    running_head,
    serve_details,
    token_secret,
    with_token_auth,
)
from tests.schemas import core_object_errors, raycluster_errors, rayservice_errors
from tools.offline import run_stack
from tools.project import PROJECT_DIR

INSUFFICIENT_GPU = "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity."
FAILED_MESSAGE = (
    "Deploying application ray-llm failed: The deployments ['Decode'] failed to start 3 times in a row. "
    "FileNotFoundError: /models/missing/config.json"
)


@pytest.fixture(scope="module")
def applications(dev) -> list[dict[str, Any]]:
    return serve_config(dev)["applications"]


@pytest.fixture(scope="module")
def previous_applications(applications) -> list[dict[str, Any]]:
    """The same app one `pulumi up` earlier, before maxModelLen changed."""
    previous = copy.deepcopy(applications)
    for side in ("prefill_config", "decode_config"):
        previous[0]["args"][side]["engine_kwargs"]["max_model_len"] = 1024
    return previous


def live(dev, generation: int, **status: Any) -> dict[str, Any]:
    """The stack's own RayService as the API server returns it: its generation and KubeRay's status."""
    manifest = rayservice(dev)
    return {
        **manifest,
        "metadata": {**manifest["metadata"], "generation": generation},
        "status": rayservice_status(**status),
    }


class Reader:
    """Answers the rollout's reads from a script of states, one per poll."""

    def __init__(self, states: list[tuple[dict[str, Any] | None, dict[str, Any] | None]], pods: dict | None = None):
        self.states: Iterator[tuple[dict[str, Any] | None, dict[str, Any] | None]] = iter(states)
        self.current: tuple[dict[str, Any] | None, dict[str, Any] | None] = (None, None)
        self.pod_list = pods or pod_list({})

    def rayservice(self) -> dict[str, Any] | None:
        self.current = next(self.states, self.current)
        return self.current[0]

    def serve_details(self, cluster: str) -> dict[str, Any] | None:
        self.asked_cluster = cluster
        return self.current[1]

    def pods(self) -> dict[str, Any]:
        return self.pod_list


# More polls than any wait here makes (the longest: an hour at 10 s): a wait that never ends fails, not hangs.
MAX_POLLS = 1000


class Clock:
    """Time that passes only when the wait sleeps, so a wait of an hour takes no time; a wait that polls on past
    MAX_POLLS fails the test instead of spinning forever."""

    def __init__(self) -> None:
        self.now = 0.0
        self.polls = 0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.polls += 1
        if self.polls > MAX_POLLS:
            raise AssertionError(f"the wait polled {MAX_POLLS} times and did not end")
        self.now += seconds


# --- the states are the APIs' own shapes ---


@pytest.mark.parametrize(
    "status",
    [
        {"generation": 2, "observed": 1},
        {"generation": 2, "observed": 2, "pending": "ray-llm-fghij"},
        {"generation": 1, "observed": 1, "active": ""},
        {"generation": 2, "observed": 2, "app_status": "DEPLOY_FAILED"},
        {"generation": 3, "observed": 2, "refused": "The RayService spec is invalid"},
    ],
)
@pytest.mark.parametrize("kuberay_version", VALIDATED_KUBERAY_VERSIONS)
def test_rayservice_states_are_kuberay_objects(status, kuberay_version):
    """The vendored ray.io_rayservices.yaml schema of each validated release (v1.4.0, v1.7.0), status included: the
    fields the wait reads (observedGeneration, the active and pending rayClusterName, the apps' statuses) are in
    both; dev's RayService at that release."""
    assert rayservice_errors(live(kuberay_run("dev", kuberay_version), **status), kuberay_version) == []


@pytest.mark.parametrize(
    "state",
    [
        {},
        {"status": "DEPLOY_FAILED", "message": FAILED_MESSAGE},
        {"status": "DEPLOYING", "deployments": (("Decode", "UPDATING", 0, 1, ""),)},
        None,
    ],
)
def test_serve_details_are_ray_2_58_answers(applications, state):
    """Ray 2.58.0's ServeInstanceDetails is "the response JSON schema for v2 REST API `GET
    /api/serve/applications`" (ray/serve/schema.py); its models forbid unknown fields."""
    details = serve_details(None) if state is None else serve_details(applications[0], **state)
    ServeInstanceDetails.model_validate(details)


def test_pending_pods_are_kubernetes_pods():
    for pod in pod_list({"ray-llm-gpu-workers-x1": INSUFFICIENT_GPU})["items"]:
        assert core_object_errors(pod) == []


# --- what KubeRay's status says ---


def test_a_generation_kuberay_has_not_seen_is_waited_for(dev):
    verdict = cluster_verdict(live(dev, generation=3, observed=2))
    assert (verdict.state, verdict.message) == (WAITING, "KubeRay has not reconciled generation 3 yet (observed 2)")


def test_a_spec_kuberay_refused_is_named_while_the_wait_goes_on(dev):
    """KubeRay 1.7.0 writes a refused spec's error into the Ready condition without observing its generation
    (vendor/kuberay-v1.7.0/rayservice_controller.go Reconcile, validateRayService); the condition may be an earlier
    generation's, so the wait names it and does not fail on it."""
    refused = "The RayService spec is invalid: Spec.RayClusterDeletionDelaySeconds should be a non-negative integer"
    verdict = cluster_verdict(live(dev, generation=3, observed=2, refused=refused))
    assert verdict.state == WAITING
    assert verdict.message.endswith(f"KubeRay refused a spec of this RayService: {refused}")


def test_a_second_cluster_beside_the_active_one_is_waited_for(dev):
    """KubeRay 1.4.0 sets pendingServiceStatus while it builds a new cluster (rayservice_controller.go
    calculateConditions: UpgradeInProgress, BothActivePendingClustersExist)."""
    verdict = cluster_verdict(live(dev, generation=2, observed=2, pending="ray-llm-fghij"))
    assert verdict.state == WAITING and "ray-llm-fghij" in verdict.message


def test_a_first_cluster_is_read_while_it_is_still_pending(dev):
    """KubeRay 1.4.0 starts a RayService's first cluster as the pending one (rayservice_controller.go
    shouldPrepareNewCluster: neither active nor pending → prepare one; calculateStatus names it in
    pendingServiceStatus) and makes it active only once its apps run: a create, or a replacement, is judged there."""
    verdict = cluster_verdict(live(dev, generation=1, observed=1, active="", pending="ray-llm-abcde"))
    assert (verdict.state, verdict.cluster) == (READY, "ray-llm-abcde")


def test_no_cluster_yet_is_waited_for(dev):
    assert cluster_verdict(live(dev, generation=1, observed=1, active="")).state == WAITING


def test_an_active_cluster_of_this_generation_passes_to_serve(dev):
    verdict = cluster_verdict(live(dev, generation=2, observed=2))
    assert (verdict.state, verdict.cluster) == (READY, "ray-llm-abcde")


# --- what Ray's dashboard says ---


def test_the_previous_config_still_running_is_not_the_applied_one(applications, previous_applications):
    """KubeRay 1.4.0 reads the app statuses before it submits a new config, so one status write carries the new
    generation with the old config's RUNNING (vendor/kuberay-v1.4.0/rayservice_controller.go reconcileServe); the
    dashboard's `deployed_app_config` still holds the previous config then."""
    verdict = serve_verdict(serve_details(previous_applications[0]), applications)
    assert verdict.state == WAITING
    assert "still runs the previous config" in verdict.message


def test_the_applied_config_running_healthy_is_ready(applications):
    """Serve sets the new config and DEPLOYING in one step (ray/serve/_private/application_state.py,
    `apply_app_config` → `_set_target_state`), so RUNNING beside our config means ours runs."""
    verdict = serve_verdict(serve_details(applications[0]), applications)
    assert verdict == verdict.__class__(READY, "application ray-llm RUNNING the applied config")


def test_deploying_is_waited_for_with_each_deployment_named(applications):
    details = serve_details(applications[0], status="DEPLOYING", deployments=(("Decode", "UPDATING", 0, 1, ""),))
    verdict = serve_verdict(details, applications)
    assert verdict.state == WAITING
    assert "deployment Decode UPDATING, 0/1 replicas running" in verdict.message


def test_a_deployment_short_of_its_replicas_is_waited_for(applications):
    details = serve_details(applications[0], deployments=(("Decode", "UPSCALING", 1, 2, ""),))
    assert serve_verdict(details, applications).state == WAITING


def test_a_healthy_deployment_short_of_its_running_replicas_is_waited_for(applications):
    """Serve writes a deployment's status only at transitions: once HEALTHY it skips the check while it is steady
    (ray/serve/_private/deployment_state.py `check_curr_status`: "Fast path… status is already HEALTHY"), and it moves
    replicas without leaving HEALTHY (`_in_transition = True` after stopping stale replicas, no status transition).
    So the replicas are counted: one RUNNING of a target of two is not the applied config running."""
    details = serve_details(applications[0], deployments=(("Decode", "HEALTHY", 1, 2, ""),))
    ServeInstanceDetails.model_validate(details)
    verdict = serve_verdict(details, applications)
    assert verdict.state == WAITING
    assert "deployment Decode HEALTHY, 1/2 replicas running" in verdict.message


def test_an_autoscaling_side_below_its_minimum_is_waited_for(applications):
    """An autoscaling deployment counts at its `min_replicas` (DeploymentDetails.deployment_config.autoscaling_config,
    Ray 2.58 ray/serve/schema.py): UPSCALING with none of them RUNNING yet (a replica waiting on a new GPU node) is not
    the applied config running."""
    details = serve_details(applications[0], deployments=(("Decode", "UPSCALING", 0, 1, ""),))
    details["applications"]["ray-llm"]["deployments"]["Decode"]["deployment_config"] = {
        "name": "Decode",
        "autoscaling_config": {"min_replicas": 1, "max_replicas": 4, "target_ongoing_requests": 8},
    }
    ServeInstanceDetails.model_validate(details)
    verdict = serve_verdict(details, applications)
    assert verdict.state == WAITING
    assert "deployment Decode UPSCALING, 0/1 replicas running" in verdict.message


@pytest.mark.parametrize(("status", "state"), [("DEPLOY_FAILED", FAILED), ("UNHEALTHY", UNHEALTHY)])
def test_a_failed_application_is_judged_with_serves_own_words(applications, status, state):
    """Measured: a broken model source reached DEPLOY_FAILED and stayed there, every request 503
    (lab/records/gpu-end-to-end.md, "Updating a running app"): nothing waits it out."""
    details = serve_details(
        applications[0],
        status=status,
        message=FAILED_MESSAGE,
        deployments=(("Decode", "DEPLOY_FAILED", 0, 1, "Replica failed to start: FileNotFoundError"),),
    )
    verdict = serve_verdict(details, applications)
    assert verdict.state == state
    assert f"application ray-llm is {status}: {FAILED_MESSAGE}" in verdict.message
    assert "deployment Decode DEPLOY_FAILED, 0/1 replicas running: Replica failed to start" in verdict.message
    assert "To roll back, set the previous values again" in verdict.message


def test_an_application_not_yet_deployed_is_waited_for(applications):
    assert serve_verdict(serve_details(None), applications).state == WAITING


def test_fields_serve_fills_in_beside_ours_do_not_count_as_a_change():
    assert config_matches({"args": {"a": 1}}, {"args": {"a": 1}, "runtime_env": None})
    assert not config_matches({"args": {"a": 1}}, {"args": {"a": 2}})
    assert not config_matches({"args": [1, 2]}, {"args": [1]})


def test_unschedulable_pods_are_named_with_the_schedulers_reason():
    assert unschedulable_pods(pod_list({"w-1": INSUFFICIENT_GPU})) == [f"pod w-1: {INSUFFICIENT_GPU}"]


# --- the wait ---


def test_the_wait_ends_when_the_applied_config_runs(dev, applications, previous_applications):
    clock = Clock()
    reader = Reader(
        [
            (live(dev, generation=2, observed=1), None),
            (live(dev, generation=2, observed=2), serve_details(previous_applications[0])),
            (live(dev, generation=2, observed=2), serve_details(applications[0], status="DEPLOYING")),
            (live(dev, generation=2, observed=2), serve_details(applications[0])),
        ]
    )
    verdict = await_rollout(reader, applications, timeout_s=600, poll_s=10, clock=clock, sleep=clock.sleep)
    assert verdict.state == READY
    assert clock.now == 30


def test_the_wait_fails_at_once_on_a_failed_deploy(dev, applications):
    clock = Clock()
    failed = serve_details(applications[0], status="DEPLOY_FAILED", message=FAILED_MESSAGE)
    reader = Reader([(live(dev, generation=2, observed=2), failed)])
    with pytest.raises(RolloutFailed, match="application ray-llm is DEPLOY_FAILED"):
        await_rollout(reader, applications, timeout_s=600, clock=clock, sleep=clock.sleep)
    assert clock.now == 0


def test_the_deadline_names_what_was_missing_and_the_pods_that_cannot_be_placed(dev, applications):
    clock = Clock()
    first = live(dev, generation=1, observed=1, active="", pending="ray-llm-abcde")
    reader = Reader([(first, None)], pods=pod_list({"ray-llm-w-1": INSUFFICIENT_GPU}))
    with pytest.raises(RolloutFailed) as failed:
        await_rollout(reader, applications, timeout_s=300, clock=clock, sleep=clock.sleep)
    message = str(failed.value)
    assert message.startswith(
        "not ready after 5 minutes (serveReadyTimeoutMinutes): Ray's dashboard on RayCluster ray-llm-abcde"
    )
    assert f"pod ray-llm-w-1: {INSUFFICIENT_GPU}" in message


def test_a_wait_that_never_sees_the_config_run_ends_at_its_deadline(dev, applications):
    """`serveReadyTimeoutMinutes` bounds `pulumi up`: a RayService whose app never runs fails it after exactly that
    long (10 minutes here, polled every 10 s), never waits on."""
    clock = Clock()
    reader = Reader([(live(dev, generation=2, observed=1), None)])
    with pytest.raises(RolloutFailed, match="not ready after 10 minutes"):
        await_rollout(reader, applications, timeout_s=600, poll_s=10, clock=clock, sleep=clock.sleep)
    assert (clock.now, clock.polls) == (600, 60)


def test_a_first_deploy_that_fails_fails_at_once(dev, applications):
    """The reviewer's case: the first cluster is pending and Serve's app on it DEPLOY_FAILED; the wait reads the
    pending cluster's dashboard (`<cluster>-head-svc`) and fails without waiting out the deadline."""
    clock = Clock()
    first = live(dev, generation=1, observed=1, active="", pending="ray-llm-abcde")
    failed = serve_details(applications[0], status="DEPLOY_FAILED", message=FAILED_MESSAGE)
    reader = Reader([(first, failed)])
    with pytest.raises(RolloutFailed, match="application ray-llm is DEPLOY_FAILED"):
        await_rollout(reader, applications, timeout_s=600, clock=clock, sleep=clock.sleep)
    assert (clock.now, reader.asked_cluster) == (0, "ray-llm-abcde")


def test_unhealthy_fails_only_when_it_lasts(dev, applications):
    """Serve recomputes an app's status from its deployments every loop and replaces unhealthy replicas
    (ray/serve/_private/application_state.py): a replica lost for a moment must not fail `pulumi up`."""
    unhealthy = serve_details(applications[0], status="UNHEALTHY", message="replica died")
    recovered = Reader(
        [(live(dev, generation=1, observed=1), unhealthy)] * 3
        + [(live(dev, generation=1, observed=1), serve_details(applications[0]))]
    )
    clock = Clock()
    assert await_rollout(recovered, applications, timeout_s=3600, clock=clock, sleep=clock.sleep).state == READY
    lasting = Reader([(live(dev, generation=1, observed=1), unhealthy)])
    clock = Clock()
    with pytest.raises(RolloutFailed, match="unhealthy for 5 minutes: application ray-llm is UNHEALTHY"):
        await_rollout(lasting, applications, timeout_s=3600, clock=clock, sleep=clock.sleep)
    assert clock.now == UNHEALTHY_GRACE_S


def test_an_autoscaling_side_asking_for_more_replicas_counts_at_its_minimum(applications):
    """With serveAutoscaling Serve reports UPSCALING while it asks for replicas that may wait on a new GPU node;
    the applied config runs once each deployment has its `min_replicas` (DeploymentDetails.deployment_config)."""
    details = serve_details(applications[0], deployments=(("Decode", "UPSCALING", 1, 3, ""),))
    details["applications"]["ray-llm"]["deployments"]["Decode"]["deployment_config"] = {
        "name": "Decode",
        "autoscaling_config": {"min_replicas": 1, "max_replicas": 4, "target_ongoing_requests": 8},
    }
    ServeInstanceDetails.model_validate(details)
    assert serve_verdict(details, applications).state == READY


def test_each_new_verdict_is_reported(dev, applications):
    heard: list[str] = []
    clock = Clock()
    reader = Reader(
        [
            (live(dev, generation=2, observed=1), None),
            (live(dev, generation=2, observed=2), serve_details(applications[0])),
        ]
    )
    await_rollout(reader, applications, timeout_s=600, clock=clock, sleep=clock.sleep, report=heard.append)
    assert heard == [
        "KubeRay has not reconciled generation 2 yet (observed 1)",
        "application ray-llm RUNNING the applied config",
    ]


@pytest.mark.parametrize(
    "error",
    [ConnectionResetError("connection reset by peer"), ConnectionError("HTTP 500"), TimeoutError("read timed out")],
)
def test_a_cluster_that_does_not_answer_is_waited_for(dev, applications, error):
    """Ray's dashboard answers 500 for any handler exception (ray/dashboard/optional_utils.py), e.g. while the Serve
    controller restarts; urllib3 and the kubernetes client raise their own errors for resets and timeouts."""

    class Flaky(Reader):
        calls = 0

        def rayservice(self) -> dict[str, Any] | None:
            self.calls += 1
            if self.calls == 1:
                raise error
            return super().rayservice()

    clock = Clock()
    reader = Flaky([(live(dev, generation=1, observed=1), serve_details(applications[0]))])
    assert await_rollout(reader, applications, timeout_s=600, clock=clock, sleep=clock.sleep).state == READY


# --- the provider ---


def test_the_provider_compares_everything_but_the_credential_and_its_own_code():
    provider = ServeRolloutProvider()
    olds = {"kubeconfig": "old", "__provider": "a", "verdict": "x", "specSha256": "1"}
    assert not provider.diff("id", olds, {"kubeconfig": "new", "__provider": "b", "specSha256": "1"}).changes
    changed = provider.diff("id", olds, {"kubeconfig": "old", "__provider": "a", "specSha256": "2"})
    assert changed.changes and changed.replaces == []


def test_the_provider_keeps_the_kubeconfig_out_of_its_state(dev, applications):
    props = {
        "kubeconfig": "{}",
        "namespace": "inference",
        "name": "ray-llm",
        "applications": applications,
        "timeoutSeconds": 60,
    }
    reader = Reader([(live(dev, generation=1, observed=1), serve_details(applications[0]))])
    outs = ServeRolloutProvider(reader=lambda _props: reader, poll_seconds=0).create(props).outs
    assert "kubeconfig" not in outs
    assert outs["verdict"] == "application ray-llm RUNNING the applied config"


def test_the_provider_loads_where_the_dynamic_provider_host_runs():
    """The engine starts the provider plugin in the program's directory (pulumi pkg/resource/plugin/
    provider_plugin.go, NewProvider: `newPlugin(ctx, ctx.Pwd, …)`), and the Python host runs `python -u -m
    pulumi.dynamic` there (sdk/python/dist/pulumi-resource-pulumi-python, which also resolves the relative
    `virtualenv: venv` against $PWD), so `infra` is importable: dill pickles a module-level provider class by
    reference (pulumi/dynamic/dynamic.py serialize_provider)."""
    code = (
        "import base64, dill, sys; "
        "provider = dill.loads(base64.b64decode(sys.stdin.read())); print(type(provider).__qualname__)"
    )
    serialized = serialize_provider(ServeRolloutProvider())
    base64.b64decode(serialized)  # the engine stores it base64-encoded
    here = subprocess.run(
        [sys.executable, "-c", code], input=serialized, cwd=PROJECT_DIR, capture_output=True, text=True, check=False
    )
    assert (here.returncode, here.stdout.strip()) == (0, "ServeRolloutProvider"), here.stderr


# --- the program ---


def test_the_rollout_follows_the_rayservice(dev):
    rollout = dev.get(ROLLOUT, "serving-rollout")
    assert dev.get(RAYSERVICE, "serving-rayservice").urn in rollout.dependencies


def test_the_rollout_waits_for_the_rayservices_own_applications(dev):
    inputs = dev.get(ROLLOUT, "serving-rollout").inputs
    manifest = rayservice(dev)
    assert inputs["applications"] == yaml.safe_load(manifest["spec"]["serveConfigV2"])["applications"]
    assert (inputs["namespace"], inputs["name"]) == (manifest["metadata"]["namespace"], manifest["metadata"]["name"])


def test_the_rollout_reaches_the_cluster_with_a_secret_kubeconfig(dev):
    rollout = dev.get(ROLLOUT, "serving-rollout")
    assert "kubeconfig" in rollout.secret_inputs


def test_a_cluster_spec_change_replaces_the_rayservice(dev):
    """KubeRay 1.4.0 builds a second RayCluster for any rayClusterConfig change but replicas (upgrade strategy
    NewCluster, the default) and ignores replica changes (generateHashWithoutReplicasAndWorkersToDelete); the GPU
    node group holds one cluster. So Pulumi replaces the object: every path under spec.rayClusterConfig is
    contained by the replaceOnChanges path (pulumi pkg/resource/deploy/step_generator.go applyReplaceOnChanges),
    and the fixed name makes it delete the old one first."""
    resource = dev.get(RAYSERVICE, "serving-rayservice")
    assert resource.replace_on_changes == ("spec.rayClusterConfig",)
    assert resource.delete_before_replace


def test_kuberay_never_starts_a_second_cluster(dev):
    """KubeRay 1.4.0 `rayservice_types.go`: upgrade strategies NewCluster and None; `isZeroDowntimeUpgradeEnabled`
    (rayservice_controller.go) turns the pending-cluster upgrade off for any type but NewCluster."""
    assert rayservice(dev)["spec"]["upgradeStrategy"] == {"type": "None"}


def test_the_rollout_is_waited_on_again_after_any_spec_change(dev):
    changed = run_stack({"dlcImage": "123456789012.dkr.ecr.sa-east-1.amazonaws.com/ray:serve-llm-custom"})
    assert (
        changed.get(ROLLOUT, "serving-rollout").inputs["specSha256"]
        != dev.get(ROLLOUT, "serving-rollout").inputs["specSha256"]
    )


# --- the reads, as requests to the API server ---


def eks_kubeconfig() -> str:
    """pulumi-eks's kubeconfig (nodejs/eks/cluster/cluster.ts generateKubeconfig): an `aws eks get-token` exec user."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "clusters": [
                {
                    "cluster": {
                        "server": "https://EXAMPLE0123.gr7.sa-east-1.eks.amazonaws.com",
                        "certificate-authority-data": base64.b64encode(b"not a real CA").decode(),
                    },
                    "name": "kubernetes",
                }
            ],
            "contexts": [{"context": {"cluster": "kubernetes", "user": "aws"}, "name": "aws"}],
            "current-context": "aws",
            "kind": "Config",
            "users": [
                {
                    "name": "aws",
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": "aws",
                            "args": [
                                "--region",
                                "sa-east-1",
                                "eks",
                                "get-token",
                                "--cluster-name",
                                "c",
                                "--output",
                                "json",
                            ],
                            "env": [
                                {
                                    "name": "KUBERNETES_EXEC_INFO",
                                    "value": '{"apiVersion": "client.authentication.k8s.io/v1beta1"}',
                                }
                            ],
                        }
                    },
                }
            ],
        }
    )


CLUSTER = "ray-llm-abcde"
# A token as KubeRay 1.7.0 generates one: 32 random bytes in base64 (raycluster_controller.go generateRandomToken).
RAY_TOKEN = base64.b64encode(bytes(range(7, 39))).decode()
RAYSERVICE_PATH = "/apis/ray.io/v1/namespaces/inference/rayservices/ray-llm"


def raycluster_path(cluster: str) -> str:
    return f"/apis/ray.io/v1/namespaces/inference/rayclusters/{cluster}"


def head_pod_name(cluster: str) -> str:
    return f"{cluster}-head-x7k2p"


def dashboard_path(cluster: str) -> str:
    """The dashboard read through a port-forward to the cluster's head pod (infra/serving/rollout.py), as the fake
    API server below keys it."""
    return f"portforward inference/{head_pod_name(cluster)}:8265/api/serve/applications/"


def head_pods_path(cluster: str) -> str:
    return f"/api/v1/namespaces/inference/pods?labelSelector=ray.io/cluster%3D{cluster}%2Cray.io/node-type%3Dhead"


def secret_path(name: str) -> str:
    return f"/api/v1/namespaces/inference/secrets/{name}"


RAYCLUSTER_PATH, DASHBOARD_PATH = raycluster_path(CLUSTER), dashboard_path(CLUSTER)


@pytest.fixture(scope="module")
def on_1_4():
    """dev on KubeRay 1.4.0, whose RayCluster (tests/rollout_states.py raycluster) has no authOptions: the reads
    without Ray's token; the token's tests add KubeRay 1.7.0's (with_token_auth)."""
    return kuberay_run("dev", "1.4.0")


class ApiServer:
    """The API server's answers by path (a document is a 200, a `(status, body)` pair anything else, a path not
    listed a 404), under the real client with its HTTP layer replaced, and the dashboard reads through a port-forward
    answered from the same table (dashboard_path); each request's path and headers recorded. A cluster whose
    dashboard has an answer has a running head pod."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, dict[str, str]]] = []

    def _answer(self, path: str, headers: Mapping[str, str] | None) -> tuple[int, bytes]:
        self.asked.append((path, dict(headers or {})))
        answer = self.answers.get(path, (404, {"kind": "Status", "code": 404}))
        status, body = answer if isinstance(answer, tuple) else (200, answer)
        return status, body.encode() if isinstance(body, str) else json.dumps(body).encode()

    def request(self, method: str, url: str, headers: dict[str, str] | None = None, **_: Any) -> rest.RESTResponse:
        path = url.split(".amazonaws.com", 1)[1]
        for cluster in self._clusters_with_a_dashboard():
            self.answers.setdefault(head_pods_path(cluster), {"items": [running_head(cluster, head_pod_name(cluster))]})
        status, data = self._answer(path, headers)
        return rest.RESTResponse(SimpleNamespace(status=status, reason="", data=data, headers={}))

    def forwarded_get(self, pod: str, port: int, path: str, headers: Mapping[str, str]) -> tuple[int, bytes]:
        return self._answer(f"portforward inference/{pod}:{port}{path}", headers)

    def _clusters_with_a_dashboard(self) -> list[str]:
        return [
            cluster
            for cluster in (path.split("/")[-1] for path in self.answers if "/rayclusters/" in path)
            if dashboard_path(cluster) in self.answers
        ]

    def headers_of(self, path: str) -> list[dict[str, str]]:
        return [headers for asked, headers in self.asked if asked == path]


@pytest.fixture
def api_server(monkeypatch) -> Callable[[dict[str, Any]], ApiServer]:
    def install(answers: dict[str, Any]) -> ApiServer:
        server = ApiServer(answers)
        monkeypatch.setattr(
            rest.RESTClientObject, "request", lambda _client, *args, **kwargs: server.request(*args, **kwargs)
        )
        monkeypatch.setattr(KubernetesReader, "forwarded_get", lambda _reader, *args: server.forwarded_get(*args))
        return server

    return install


def eks_reader() -> KubernetesReader:
    return KubernetesReader(eks_kubeconfig(), "inference", "ray-llm", "app=ray-llm")


def test_the_reads_go_to_the_api_and_the_dashboard_to_the_running_head_pod(monkeypatch):
    """The RayService from ray.io/v1, the RayCluster (read before its dashboard, for its `authOptions`: Ray's token
    auth, below), then the cluster's head pod by KubeRay's labels (common/pod.go labelPod: ray.io/cluster,
    ray.io/node-type), whose dashboard is read through a port-forward (infra/serving/dashboard_forward.py); pods by
    label."""
    asked = []

    def request(self, method, url, **kwargs):
        path = url.split(".amazonaws.com", 1)[1]
        asked.append((method, path))
        pods = {"items": [running_head("ray-llm-abcde", "ray-llm-abcde-head-x7k2p")]} if "node-type" in path else {}
        return rest.RESTResponse(SimpleNamespace(status=200, reason="OK", data=json.dumps(pods).encode(), headers={}))

    forwarded = []
    monkeypatch.setattr(rest.RESTClientObject, "request", request)
    monkeypatch.setattr(
        KubernetesReader, "forwarded_get", lambda _reader, *args: forwarded.append(args) or (200, b"{}")
    )
    reader = KubernetesReader(eks_kubeconfig(), "inference", "ray-llm", "app=ray-llm")
    reader.rayservice(), reader.serve_details("ray-llm-abcde"), reader.pods()
    assert asked == [
        ("GET", "/apis/ray.io/v1/namespaces/inference/rayservices/ray-llm"),
        ("GET", "/apis/ray.io/v1/namespaces/inference/rayclusters/ray-llm-abcde"),
        ("GET", head_pods_path("ray-llm-abcde")),
        ("GET", "/api/v1/namespaces/inference/pods?labelSelector=app%3Dray-llm"),
    ]
    assert forwarded == [("ray-llm-abcde-head-x7k2p", 8265, "/api/serve/applications/", {})]


def test_without_a_running_head_the_dashboard_is_not_there_yet(on_1_4, api_server):
    """A head pod still Pending (or none yet): nothing to forward to, so the cluster is still coming up."""
    pending_head = {**running_head(CLUSTER, head_pod_name(CLUSTER)), "status": {"phase": "Pending"}}
    server = api_server(
        {RAYCLUSTER_PATH: raycluster(CLUSTER, rayservice(on_1_4)), head_pods_path(CLUSTER): {"items": [pending_head]}}
    )
    assert eks_reader().serve_details(CLUSTER) is None
    assert [path for path, _ in server.asked if path.startswith("portforward")] == []


def test_the_forwarded_read_opens_the_head_pods_dashboard_port(monkeypatch):
    """KubernetesReader.forwarded_get: CoreV1Api.connect_get_namespaced_pod_portforward through kubernetes.stream's
    portforward, on the pod and port asked, the request's timeout carried."""
    import kubernetes.stream

    calls = []
    monkeypatch.setattr(
        "infra.serving.rollout.forwarded_get", lambda forward, connect, *args: calls.append((forward, connect, args))
    )
    eks_reader().forwarded_get("ray-llm-abcde-head-x7k2p", 8265, "/api/serve/applications/", {"x": "y"})
    ((forward, connect, args),) = calls
    assert forward is kubernetes.stream.portforward
    assert connect.__name__ == "connect_get_namespaced_pod_portforward"
    assert args == ("inference", "ray-llm-abcde-head-x7k2p", 8265, "/api/serve/applications/", {"x": "y"}, 30)


@pytest.mark.parametrize(
    "raised",
    [OSError("connection closed"), http.client.RemoteDisconnected("closed"), ApiException(0, "Handshake status 404")],
    ids=["socket", "http", "pod-gone"],
)
def test_a_dashboard_that_cannot_be_reached_yet_is_not_there_yet(on_1_4, api_server, monkeypatch, raised):
    """Nothing listening on the forwarded port (the forwarded socket closes), or the pod gone: asked again."""
    api_server({RAYCLUSTER_PATH: raycluster(CLUSTER, rayservice(on_1_4)), DASHBOARD_PATH: {}})

    def fail(*_args):
        raise raised

    monkeypatch.setattr(KubernetesReader, "forwarded_get", fail)
    assert eks_reader().serve_details(CLUSTER) is None


def test_a_port_forward_refused_by_rbac_fails_the_rollout(on_1_4, api_server, monkeypatch):
    """websocket-client reports the API's refusal of the upgrade as "Handshake status 403 Forbidden", which
    kubernetes-client wraps in ApiException(status=0) (kubernetes/stream/ws_client.py portforward_call)."""
    api_server({RAYCLUSTER_PATH: raycluster(CLUSTER, rayservice(on_1_4)), DASHBOARD_PATH: {}})

    def refuse(*_args):
        raise ApiException(0, "Handshake status 403 Forbidden -+-+- {'content-type': 'application/json'}")

    monkeypatch.setattr(KubernetesReader, "forwarded_get", refuse)
    with pytest.raises(ClusterRefused, match="Handshake status 403"):
        eks_reader().serve_details(CLUSTER)


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (404, None),
        (503, None),
        (500, ConnectionError),
        (429, ConnectionError),
        (403, ClusterRefused),
        (401, ClusterRefused),
    ],
)
def test_an_object_not_there_yet_is_none_a_hiccup_is_asked_again_and_a_refusal_fails(
    on_1_4, api_server, status, outcome
):
    """404 (no RayService yet) and 502/503 (Ray's dashboard not up yet) mean not there yet; 5xx and 429 are asked
    again at the next poll; 401/403 (the API's credentials or RBAC, Ray's token) fail."""
    api_server({RAYCLUSTER_PATH: raycluster(CLUSTER, rayservice(on_1_4)), DASHBOARD_PATH: (status, {"kind": "Status"})})
    if outcome is None:
        assert eks_reader().serve_details(CLUSTER) is None
    else:
        with pytest.raises(outcome, match=f"HTTP {status}"):
            eks_reader().serve_details(CLUSTER)


# --- Ray's token auth: KubeRay 1.7.0's `authOptions` (docs/ray-token-auth.md) ---


def test_the_token_states_are_kuberay_1_7_and_kubernetes_objects(on_1_4):
    assert raycluster_errors(with_token_auth(raycluster(CLUSTER, rayservice(on_1_4)), mode="token"), "1.7.0") == []
    assert core_object_errors(token_secret(CLUSTER, CLUSTER, RAY_TOKEN)) == []


def test_with_token_auth_the_dashboard_is_read_with_the_clusters_token(on_1_4, api_server):
    """KubeRay's own client sends `x-ray-authorization: Bearer <token>` (vendor/kuberay-v1.7.0/dashboard_httpclient.go
    setAuthHeader); the rollout sends it the same way."""
    cluster = with_token_auth(raycluster(CLUSTER, rayservice(on_1_4)), mode="token")
    server = api_server(
        {RAYCLUSTER_PATH: cluster, secret_path(CLUSTER): token_secret(CLUSTER, CLUSTER, RAY_TOKEN), DASHBOARD_PATH: {}}
    )
    assert eks_reader().serve_details(CLUSTER) == {}
    assert [headers.get("x-ray-authorization") for headers in server.headers_of(DASHBOARD_PATH)] == [
        f"Bearer {RAY_TOKEN}"
    ]


def test_a_secret_named_in_auth_options_is_the_one_read(on_1_4, api_server):
    cluster = with_token_auth(raycluster(CLUSTER, rayservice(on_1_4)), mode="token", secretName="ray-token")
    server = api_server(
        {
            RAYCLUSTER_PATH: cluster,
            secret_path("ray-token"): token_secret("ray-token", CLUSTER, "t0k"),
            DASHBOARD_PATH: {},
        }
    )
    eks_reader().serve_details(CLUSTER)
    assert [path for path, _ in server.asked if "/secrets/" in path] == [secret_path("ray-token")]
    assert server.headers_of(DASHBOARD_PATH)[0]["x-ray-authorization"] == "Bearer t0k"


@pytest.mark.parametrize("auth_options", [None, {}, {"mode": "disabled"}], ids=["none", "no-mode", "disabled"])
def test_without_token_auth_no_secret_is_read_and_no_token_sent(on_1_4, api_server, auth_options):
    """Auth is on only with `mode: token`: the CRD gives `mode` no default, and without it KubeRay sets no
    RAY_AUTH_MODE in the pods and sends no token (utils/util.go IsAuthEnabled; lab/tests/test_kuberay_auth.py)."""
    cluster = raycluster(CLUSTER, rayservice(on_1_4))
    if auth_options is not None:
        cluster = with_token_auth(cluster, **auth_options)
    server = api_server({RAYCLUSTER_PATH: cluster, DASHBOARD_PATH: {}})
    assert eks_reader().serve_details(CLUSTER) == {}
    assert [path for path, _ in server.asked if "/secrets/" in path] == []
    assert "x-ray-authorization" not in server.headers_of(DASHBOARD_PATH)[0]


def test_each_cluster_is_read_with_its_own_token(on_1_4, api_server):
    """With clusterUpgradeStrategy newCluster the pending cluster is read beside the active one
    (rollout_status.new_cluster_verdict); KubeRay generates a Secret per RayCluster, named after it, and builds each
    cluster's dashboard client from that cluster's (rayservice_controller.go reconcileServe: dashboardClientFunc)."""
    pending = "ray-llm-fghij"
    answers = {DASHBOARD_PATH: {}, dashboard_path(pending): {}}
    for name, token in ((CLUSTER, "active-token"), (pending, "pending-token")):
        answers[raycluster_path(name)] = with_token_auth(raycluster(name, rayservice(on_1_4)), mode="token")
        answers[secret_path(name)] = token_secret(name, name, token)
    server = api_server(answers)
    reader = eks_reader()
    reader.serve_details(pending), reader.serve_details(CLUSTER)
    sent = {path: headers["x-ray-authorization"] for path, headers in server.asked if "x-ray-authorization" in headers}
    assert sent == {dashboard_path(pending): "Bearer pending-token", DASHBOARD_PATH: "Bearer active-token"}


def test_a_token_secret_not_there_yet_is_waited_for_by_name(on_1_4, api_server, applications):
    """KubeRay creates the Secret in the RayCluster's first reconcile, before its pods (raycluster_controller.go:
    reconcileAuthSecret comes before reconcilePods), so a missing one is a cluster still starting."""
    cluster = with_token_auth(raycluster(CLUSTER, rayservice(on_1_4)), mode="token")
    api_server({RAYSERVICE_PATH: live(on_1_4, generation=1, observed=1), RAYCLUSTER_PATH: cluster, DASHBOARD_PATH: {}})
    verdict = current_verdict(eks_reader(), applications)
    assert (verdict.state, verdict.message) == (
        WAITING,
        f"RayCluster {CLUSTER} runs with Ray token authentication and its Secret {CLUSTER} does not exist yet (KubeRay "
        "creates it with the cluster, unless authOptions.secretName names one of yours)",
    )


def test_a_token_secret_without_the_key_is_waited_for_by_name(on_1_4, api_server, applications):
    cluster = with_token_auth(raycluster(CLUSTER, rayservice(on_1_4)), mode="token", secretName="mine")
    keyless = {**token_secret("mine", CLUSTER, RAY_TOKEN), "data": {"token": "eA=="}}
    answers = {RAYSERVICE_PATH: live(on_1_4, generation=1, observed=1), RAYCLUSTER_PATH: cluster}
    api_server({**answers, secret_path("mine"): keyless})
    verdict = current_verdict(eks_reader(), applications)
    assert (verdict.state, verdict.message) == (WAITING, f"Secret mine of RayCluster {CLUSTER} has no `auth_token` key")


def test_the_token_reaches_no_message(on_1_4, api_server, applications):
    """Every verdict the wait reports and the failure it ends with, with the token Secret there: a dashboard that does
    not answer until the deadline, and one that refuses the token (Ray's 403). Neither the
    token nor its base64 appears."""
    cluster = with_token_auth(raycluster(CLUSTER, rayservice(on_1_4)), mode="token")
    secret = token_secret(CLUSTER, CLUSTER, RAY_TOKEN)
    answers = {
        RAYSERVICE_PATH: live(on_1_4, generation=1, observed=1),
        RAYCLUSTER_PATH: cluster,
        secret_path(CLUSTER): secret,
    }
    reported: list[str] = []
    clock = Clock()
    for dashboard in [(503, "no endpoints available"), (403, "Forbidden: Invalid authentication token")]:
        api_server({**answers, DASHBOARD_PATH: dashboard})
        with pytest.raises(RolloutFailed) as failed:
            await_rollout(eks_reader(), applications, 60, clock=clock, sleep=clock.sleep, report=reported.append)
        reported.append(str(failed.value))
    assert reported[1].startswith("not ready after 1 minutes") and "Invalid authentication token" in reported[2]
    assert [text for text in reported for token in (RAY_TOKEN, secret["data"]["auth_token"]) if token in text] == []


def test_the_rollout_waits_again_whenever_pulumi_changes_the_rayservice_spec(dev):
    """The rollout's inputs carry the RayService's metadata.generation as Pulumi last wrote it: the API server
    moves it on every spec change and never on status writes (https://kubernetes.io/docs/reference/using-api/
    api-concepts/, metadata.generation), so a `pulumi refresh` after KubeRay's status writes leaves the rollout
    unchanged. After a failed update the engine keeps the rollout's previous state (pulumi pkg/resource/deploy/
    step.go UpdateStep.Apply returns before recording outputs); a rollback to that config then differs from it only
    here, and without it `pulumi up` would not wait for the rolled-back app."""
    assert dev.get(ROLLOUT, "serving-rollout").inputs["rayserviceGeneration"] == 1


def test_a_rollback_after_a_failed_replacement_waits_again(dev):
    """A replacement creates the RayService anew, at `metadata.generation` 1 again ("a sequence number representing
    a specific generation of the desired state. Set by the system", kubernetes api-conventions.md, Metadata) and with
    a new `metadata.uid` ("generated by the server on successful creation of a resource", same page). After a failed
    update the engine keeps the rollout's previous state (pulumi pkg/resource/deploy/step.go UpdateStep.Apply
    returns before recording outputs), so rolling a failed cluster-shape change back (another replacement, to the
    config the rollout stored) gives it the stored spec digest and generation: only the new object's uid tells
    the rollout's diff that there is something to wait for; without it `pulumi up` reports success at once over a
    cold cluster, the RayService's own wait being off (pulumi.com/skipAwait)."""
    failed = run_stack({"dlcImage": "123456789012.dkr.ecr.sa-east-1.amazonaws.com/ray:serve-llm-2"}, existing=dev)
    rolled_back = run_stack(existing=failed)
    stored = {**dev.get(ROLLOUT, "serving-rollout").inputs, "verdict": "application ray-llm RUNNING the applied config"}
    news = rolled_back.get(ROLLOUT, "serving-rollout").inputs
    assert ServeRolloutProvider().diff("inference/ray-llm", stored, news).changes


def test_the_rollout_names_the_rayservice_object_the_api_server_created(dev):
    """The rollout's uid input is the RayService's own metadata.uid, as the API server (here tools/offline_aws.py's
    mock) gave it on creation."""
    rayservice_urn = dev.get(RAYSERVICE, "serving-rayservice").urn
    assert dev.get(ROLLOUT, "serving-rollout").inputs["rayserviceUid"] == dev.uids[rayservice_urn][1]


def test_an_in_place_change_keeps_the_rayservices_uid(dev):
    """A serve-config change patches the RayService in place (no replaceOnChanges path moves), and the uid "is not
    allowed to change on PUT operations" (kubernetes api-conventions.md, Metadata): the rollout waits for it through
    its spec digest, not because the object is new."""
    changed = run_stack({"maxModelLen": 4096}, existing=dev)
    uid = "rayserviceUid"
    assert changed.get(ROLLOUT, "serving-rollout").inputs[uid] == dev.get(ROLLOUT, "serving-rollout").inputs[uid]


def test_a_cluster_spec_change_gives_the_rollout_a_new_rayservice_uid(dev):
    """The replaceOnChanges path spec.rayClusterConfig moves (pulumi pkg/resource/deploy/step_generator.go
    applyReplaceOnChanges): the RayService is deleted and created again, a new object with a new uid."""
    changed = run_stack({"dlcImage": "123456789012.dkr.ecr.sa-east-1.amazonaws.com/ray:serve-llm-2"}, existing=dev)
    uid = "rayserviceUid"
    assert changed.get(ROLLOUT, "serving-rollout").inputs[uid] != dev.get(ROLLOUT, "serving-rollout").inputs[uid]


def test_the_rollback_hint_tells_an_in_place_rollback_from_a_replacements(applications):
    """A serve-config change keeps the cluster, and KubeRay sends a changed `serveConfigV2` to it in place
    (vendor/kuberay-v1.4.0/rayservice_controller.go updateServeDeployment); a cluster-spec change deleted the old
    RayService and its cluster before creating the new one (`deleteBeforeReplace`,
    test_a_cluster_spec_change_replaces_the_rayservice), so what a failed deploy says must not promise the in-place
    rollback to a replaced one."""
    failed = serve_details(applications[0], status="DEPLOY_FAILED", message=FAILED_MESSAGE)
    message = serve_verdict(failed, applications).message
    assert "KubeRay sends the previous config to the running cluster" in message
    assert "the rollback replaces it again, another delete and a cold start" in message


def test_an_older_stacks_rollout_state_without_the_uid_waits_once(dev):
    """A rollout stored before the uid input has no `rayserviceUid`; the provider's diff compares every input but the
    credential and its code, so the first `pulumi up` after the upgrade waits for the running app once (it is already
    RUNNING, so the wait ends at its first poll), and the stored state then holds the uid."""
    news = dev.get(ROLLOUT, "serving-rollout").inputs
    older = {key: value for key, value in news.items() if key != "rayserviceUid"}
    assert ServeRolloutProvider().diff("inference/ray-llm", older, news).changes


# --- the rollback of a failed serve config ---


def test_the_rollback_is_a_merge_patch_of_the_rayservice_by_its_own_field_manager(monkeypatch):
    """Through the RayService object, not the dashboard: KubeRay 1.4.0 sends the spec's serveConfigV2 again whenever
    its cache is empty or differs (vendor/kuberay-v1.4.0/rayservice_controller.go checkIfNeedSubmitServeApplications),
    so a config put back on the dashboard alone would be replaced by the broken one at the operator's next start."""
    sent = []

    def request(self, method, url, headers=None, body=None, **_kwargs):
        sent.append((method, url.split(".amazonaws.com", 1)[1], headers, body))
        return rest.RESTResponse(SimpleNamespace(status=200, reason="OK", data=b"{}", headers={}))

    monkeypatch.setattr(rest.RESTClientObject, "request", request)
    eks_reader().roll_back("applications: []\n", {ROLLED_BACK_ANNOTATION: "0" * 64})
    ((method, path, headers, body),) = sent
    assert method == "PATCH"
    assert path == f"/apis/ray.io/v1/namespaces/inference/rayservices/ray-llm?fieldManager={ROLLBACK_FIELD_MANAGER}"
    assert headers["Content-Type"] == "application/merge-patch+json"
    assert body == {
        "metadata": {"annotations": {ROLLED_BACK_ANNOTATION: "0" * 64}},
        "spec": {"serveConfigV2": "applications: []\n"},
    }


def test_the_next_apply_takes_serve_config_v2_back_from_the_rollback(dev):
    """pulumi-kubernetes forces a server-side apply over another field manager's field only with this annotation
    (pulumi/pulumi-kubernetes provider/pkg/await/await.go ssaUpdate, patchForce); without it the repair's apply would
    fail on the rollback's serveConfigV2."""
    assert rayservice(dev)["metadata"]["annotations"]["pulumi.com/patchForce"] == "true"


STORED = {"verdict": "ran", "rayserviceUid": "u1", "applications": [{"name": "ray-llm", "args": {"n": 1.0}}]}


@pytest.mark.parametrize(
    ("news", "in_place"),
    [
        ({"rayserviceUid": "u1", "applications": [{"name": "ray-llm", "args": {"n": 2}}]}, True),
        ({"rayserviceUid": "u2", "applications": [{"name": "ray-llm", "args": {"n": 2}}]}, False),
        (
            {"rayserviceUid": "u1", "clusterSpecSha256": "d2", "applications": [{"name": "ray-llm", "args": {"n": 2}}]},
            False,
        ),
        ({"rayserviceUid": "u1", "applications": [{"name": "ray-llm", "args": {"n": 1}}]}, False),
    ],
    ids=["serve-change", "replaced", "new-cluster", "same-config"],
)
def test_a_failed_config_is_rolled_back_in_place_only_onto_the_cluster_that_ran_the_last_one(news, in_place):
    """A replaced RayService (a new uid) has no old cluster left, and a new cluster leaves the active one serving."""
    assert rolls_back_in_place(STORED, news) is in_place


def test_the_rollback_writes_the_configs_numbers_as_the_engines_take_them():
    """Pulumi hands a dynamic provider its numbers as floats; vLLM's max_model_len is an int."""
    assert plain_numbers({"max_model_len": 4096.0, "gpu_memory_utilization": 0.92}) == {
        "max_model_len": 4096,
        "gpu_memory_utilization": 0.92,
    }


def test_a_config_that_runs_again_after_its_rollback_is_not_refused(dev, applications):
    """`pulumi up --refresh` sent the rolled-back config again: it is live, so the wait judges it."""
    live_object = copy.deepcopy(live(dev, generation=3, observed=3))
    live_object["metadata"]["annotations"][ROLLED_BACK_ANNOTATION] = serve_config_digest(applications)
    refuse_rolled_back(live_object, applications)


class RefusingCluster(Reader):
    """The cluster of a failed deploy whose RayService refuses the rollback's patch (RBAC without `patch`)."""

    def roll_back(self, *_args: Any) -> None:
        raise ClusterRefused("PATCH /apis/ray.io/v1/namespaces/inference/rayservices/ray-llm: HTTP 403")


def test_a_rollback_the_cluster_refuses_fails_with_both_causes(dev, applications, previous_applications):
    failed = serve_details(applications[0], status="DEPLOY_FAILED", message=FAILED_MESSAGE)
    reader = RefusingCluster([(live(dev, generation=2, observed=2), failed)])
    provider = ServeRolloutProvider(reader=lambda _props: reader, poll_seconds=0)
    olds = {"verdict": "ran", "rayserviceUid": "u1", "applications": previous_applications, "timeoutSeconds": 60}
    news = {**olds, "verdict": None, "applications": applications, "namespace": "inference", "name": "ray-llm"}
    with pytest.raises(RolloutFailed) as raised:
        provider.update("inference/ray-llm", olds, news)
    assert "failed to start 3 times in a row" in str(raised.value)
    assert "could not put back the last config that ran (ClusterRefused: PATCH" in str(raised.value)
