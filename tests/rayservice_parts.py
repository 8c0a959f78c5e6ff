"""The RayService a stack run declares, and the parts of it the tests read."""

from __future__ import annotations

import base64
import io
import zipfile

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


def pod_specs(run: StackRun) -> list[dict]:
    cluster = rayservice(run)["spec"]["rayClusterConfig"]
    return [cluster["headGroupSpec"]["template"]["spec"], worker_group(run)["template"]["spec"]]


def ray_container(spec: dict) -> dict:
    """The pod's Ray container: KubeRay takes the first as it (kuberay v1.4.0 constant.go RayContainerIndex = 0); a
    worker pod's other is the edge (infra/serving/edge.py)."""
    return spec["containers"][0]


def mounted_volume(spec: dict, mount_path: str) -> dict:
    """The volume the pod's Ray container mounts at `mount_path`."""
    mounts = {m["mountPath"]: m["name"] for m in ray_container(spec)["volumeMounts"]}
    return {v["name"]: v for v in spec["volumes"]}[mounts[mount_path]]


def configmap_zip(run: StackRun, name: str) -> tuple[str, list[str]]:
    """A ConfigMap holding one zip (stack code, infra/serving/code_package.py): its key and the zip's entries."""
    config_map = run.get("kubernetes:core/v1:ConfigMap", name).inputs
    ((key, data),) = config_map["binaryData"].items()
    return key, zipfile.ZipFile(io.BytesIO(base64.b64decode(data))).namelist()
