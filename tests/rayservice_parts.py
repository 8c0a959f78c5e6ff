"""The RayService a stack run declares, and the parts of it the tests read."""

from __future__ import annotations

import yaml

from infra.serving.rollout import ServeRollout
from tools.offline import StackRun
from tools.render import RAYSERVICE

# The dynamic resource's type as the Python SDK registers it (pulumi/dynamic/dynamic.py, Resource).
ROLLOUT = f"pulumi-python:{ServeRollout._resource_type_name}"


def rayservice(run: StackRun) -> dict:
    """The manifest as applied: the custom resource's inputs less Pulumi's own."""
    inputs = run.get(RAYSERVICE, "serving-rayservice").inputs
    return {key: inputs[key] for key in ("apiVersion", "kind", "metadata", "spec")}


def serve_config(run: StackRun) -> dict:
    return yaml.safe_load(rayservice(run)["spec"]["serveConfigV2"])


def pd_args(run: StackRun) -> dict:
    (application,) = serve_config(run)["applications"]
    return application["args"]


def worker_group(run: StackRun) -> dict:
    (group,) = rayservice(run)["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    return group
