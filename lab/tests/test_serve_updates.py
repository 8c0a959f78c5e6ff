"""What Ray Serve 2.58 does with a changed serve config, as docs/serve-updates.md reads it in Ray's source, checked
with Ray's own code where it runs without a cluster; and the arithmetic of lab/serve_update_cpu.py's record."""

from __future__ import annotations

import ast
import copy
import importlib.util
from pathlib import Path

from ray.serve._private.config import DeploymentConfig
from ray.serve._private.constants import MAX_PER_REPLICA_RETRY_COUNT
from ray.serve._private.deploy_utils import get_app_code_version
from ray.serve.config import AutoscalingConfig
from ray.serve.schema import ServeApplicationSchema

from lab.serve_update_cpu import Answer, longest_gap, longest_outage, replica_states
from tests.rayservice_parts import serve_config


def code_version(config: dict) -> str:
    (application,) = config["applications"]
    return get_app_code_version(ServeApplicationSchema.model_validate(application))


def test_one_sides_engine_change_is_a_new_code_version_for_the_whole_app(dev):
    """Serve hashes an app's import path, runtime_env and `args` into one code version
    (ray/serve/_private/deploy_utils.py get_app_code_version), builds every deployment of the app with it
    (application_state.py build_serve_application, `version=code_version`) and restarts a replica whose code version
    differs (version.py DeploymentVersion.requires_actor_restart): the stack's engine kwargs are in `args`, so a change
    to prefill's alone restarts Decode and the OpenAI ingress too."""
    changed = copy.deepcopy(serve_config(dev))
    changed["applications"][0]["args"]["prefill_config"]["engine_kwargs"]["max_num_seqs"] = 7
    assert code_version(changed) != code_version(serve_config(dev))


def test_the_same_config_again_is_the_same_code_version(dev):
    """The hash is of the config's JSON with sorted keys (get_app_code_version), so a rollback to the config that ran
    gives the version it ran with."""
    assert code_version(copy.deepcopy(serve_config(dev))) == code_version(serve_config(dev))


def test_a_rolling_update_moves_one_replica_of_two_at_a_time():
    """rollout_size = max(int(rolling_update_percentage * target), 1) (deployment_state.py
    _check_and_stop_outdated_version_replicas), 20% by default (constants.py DEFAULT_ROLLING_UPDATE_PERCENTAGE)."""
    percentage = DeploymentConfig().rolling_update_percentage
    assert [max(int(percentage * replicas), 1) for replicas in (1, 2, 4, 5, 10)] == [1, 1, 1, 1, 2]


def test_a_broken_version_is_tried_three_times_a_replica_before_deploy_failed():
    """DEPLOY_FAILED after min(max_constructor_retry_count, replicas x RAY_SERVE_MAX_PER_REPLICA_RETRY_COUNT) failed
    starts (deployment_state.py _failed_to_start_threshold), 20 and 3 by default (constants.py)."""
    assert (DeploymentConfig().max_constructor_retry_count, MAX_PER_REPLICA_RETRY_COUNT) == (20, 3)


def test_the_pd_apps_ingress_is_one_replica_unless_the_config_says_more():
    """The PD builder gives the ingress OpenAiIngress' options merged with `ingress_deployment_config`
    (serving_patterns/prefill_decode/builder.py build_pd_openai_app): an `autoscaling_config` with neither minimum nor
    maximum (core/ingress/ingress.py DEFAULT_INGRESS_OPTIONS; the module imports vLLM, so it is read, not imported),
    which Serve's AutoscalingConfig fills with 1 and 1."""
    spec = importlib.util.find_spec("ray.llm._internal.serve.core.ingress.ingress")
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text())
    (options,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DEFAULT_INGRESS_OPTIONS"
    ]
    assert isinstance(options, ast.Dict)
    keys = {ast.literal_eval(key): value for key, value in zip(options.keys, options.values, strict=True) if key}
    autoscaling = keys["autoscaling_config"]
    assert isinstance(autoscaling, ast.Dict)
    assert {ast.literal_eval(key) for key in autoscaling.keys if key} == {"target_ongoing_requests"}
    assert (AutoscalingConfig().min_replicas, AutoscalingConfig().max_replicas) == (1, 1)


def answers(*sent: tuple[float, bool]) -> list[Answer]:
    return [Answer(t_s, ok, 0.1) for t_s, ok in sent]


def test_the_longest_gap_runs_from_an_answer_to_the_next():
    assert longest_gap(answers((0.0, True), (0.2, False), (3.3, True)), end_s=4.0) == 3.3


def test_the_longest_gap_counts_from_the_put_and_to_the_end():
    assert longest_gap(answers((2.0, True)), end_s=10.0) == 10.0 - 2.1


def test_an_outage_still_on_at_the_end_runs_to_the_end():
    assert longest_outage(answers((0.0, True), (1.0, False), (2.0, False)), end_s=5.0) == (4.0, True)


def test_replicas_started_after_the_put_count_as_new():
    details = {
        "applications": {
            "pd-standin": {
                "deployments": {
                    "Prefill": {
                        "status": "UPDATING",
                        "replicas": [
                            {"state": "RUNNING", "start_time_s": 90.0},
                            {"state": "STOPPING", "start_time_s": 95.0},
                            {"state": "STARTING", "start_time_s": 101.0},
                        ],
                    }
                }
            }
        }
    }
    assert (
        replica_states(details, since_wall=100.0) == "Prefill UPDATING [1 new STARTING, 1 old RUNNING, 1 old STOPPING]"
    )
