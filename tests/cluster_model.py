"""The running cluster's system node, modelled from what a stack run declares: every pod the stack and its charts
place there (the Ray head and its autoscaler sidecar, the KubeRay operator, the metrics stack, the mirror Job), the
EKS add-ons' pods, and the node group's nodes with what the EKS AMI leaves to pods. A day-two step says which of
them run at once; `unplaced` says which would wait Pending.

The stack's own answer to the same question is `infra.settings.footprint.system_node_load`, which `load_config`
checks a system node type against; `tests/test_day_two.py` holds the two equal, so neither can drift."""

from __future__ import annotations

from dataclasses import dataclass

from infra.kube.node_allocatable import NOTHING, SYSTEM_MAX_PODS_BOUND, Requests, allocatable, requests_of
from infra.kube.pod_resources import EKS_ADDON_RESOURCES
from tests.chart_values import chart_defaults
from tools.instance_type_facts import INSTANCE_TYPES
from tools.offline import StackRun

RELEASE = "kubernetes:helm.sh/v3:Release"
RAYSERVICE = "kubernetes:ray.io/v1:RayService"
JOB = "kubernetes:batch/v1:Job"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
SYSTEM_NODE_GROUP = ("eks:index:ManagedNodeGroup", "system-nodes-system")
# The stack's Jobs, by the name infra/settings/footprint.py system_node_load gives their pod.
JOB_PODS = {"model-cache-mirror": "model-mirror"}
# kube-prometheus-stack's workloads on the system nodes, by their path in the chart's values.
METRICS_WORKLOADS = {
    "prometheus": ("prometheus", "prometheusSpec"),
    "grafana": ("grafana",),
    "prometheus-operator": ("prometheusOperator",),
    "kube-state-metrics": ("kube-state-metrics",),
    "alertmanager": ("alertmanager", "alertmanagerSpec"),
}


def _containers_ask(containers: list[dict]) -> Requests:
    return sum((requests_of(container.get("resources", {})) for container in containers), NOTHING)


def _at(values: dict, path: tuple[str, ...]) -> dict:
    for key in path:
        values = values[key]
    return values


def declared_system_pods(run: StackRun) -> dict[str, Requests]:
    """What the run's resources place on the system node, by pod, as the scheduler counts their requests."""
    pods = {
        f"{name}-{index}": requests_of(resources)
        for name, (resources, replicas) in EKS_ADDON_RESOURCES.items()
        for index in range(replicas)
    }
    operator = run.get(RELEASE, "serving-kuberay-kuberay-operator").inputs["values"]
    pods["kuberay-operator"] = requests_of(operator["resources"])
    pods |= every_node_daemonsets(run)
    (rayservice,) = run.of_type(RAYSERVICE)
    cluster = rayservice.inputs["spec"]["rayClusterConfig"]
    sidecar = [cluster["autoscalerOptions"]] if "autoscalerOptions" in cluster else []
    pods["ray-head"] = _containers_ask(cluster["headGroupSpec"]["template"]["spec"]["containers"] + sidecar)
    if rayservice.inputs["spec"]["upgradeStrategy"]["type"] == "NewCluster":
        # KubeRay builds an upgrade's new RayCluster, its head too, beside the active one (rayservice_controller.go).
        pods["ray-head-new-cluster"] = pods["ray-head"]
    metrics = [r for r in run.of_type(RELEASE) if r.name == "observability-kube-prometheus-stack"]
    for name, path in METRICS_WORKLOADS.items() if metrics else ():
        pods[name] = requests_of(_at(metrics[0].inputs["values"], path).get("resources", {}))
    for job in run.of_type(JOB):
        pods[JOB_PODS[job.name]] = _containers_ask(job.inputs["spec"]["template"]["spec"]["containers"])
    return pods


def system_nodes(run: StackRun) -> list[Requests]:
    """The system node group's nodes, each with what the EKS AMI leaves to pods of its type's vCPUs and memory."""
    group = run.get(*SYSTEM_NODE_GROUP).inputs
    facts = INSTANCE_TYPES[group["instanceTypes"][0]]
    # Pulumi hands numbers over the wire as floats
    return [allocatable(facts.vcpus, facts.memory_mib, SYSTEM_MAX_PODS_BOUND)] * int(
        group["scalingConfig"]["desiredSize"]
    )


@dataclass(frozen=True)
class Step:
    """One `pulumi up` of a stack's life: the config it applies, and what runs on the system node meanwhile."""

    name: str
    overrides: dict
    head_running: bool = True  # a Ray head from the step before is up (every step but the first deploy)
    mirrors: bool = False  # the model changes, so the mirror Job runs (beside that head)
    fails: bool = False  # the app does not come up: the rollout keeps the state of the last step that did
    surge: bool = False  # a newCluster upgrade: the new RayCluster's head and workers run beside the active one's


def pods_during(run: StackRun, step: Step) -> dict[str, Requests]:
    """The system pods that run at once during the step: the mirror Job only while it mirrors, and the old head
    beside it (the RayService waits on the Job, so the old one is still up). A replaced RayService is deleted before
    its successor is created, in the background: the new head may wait Pending while the old one terminates (its
    grace period), never beside it, so one head is counted."""
    pods = declared_system_pods(run)
    if not step.surge:
        pods.pop("ray-head-new-cluster", None)
    if not step.mirrors:
        pods.pop("model-mirror", None)
    if not step.head_running and step.mirrors:
        pods.pop("ray-head")
    return pods


def gpu_nodes_at_once(before: StackRun, run: StackRun) -> tuple[int, int]:
    """A newCluster upgrade's GPU nodes at their most against what the group may hold: the active cluster at the
    most its worker group may scale to (the step before's maxReplicas, one pod a node) beside the new cluster's
    workers at their start (this step's replicas); and the node group's maximum."""
    (active,) = before.of_type(RAYSERVICE)[0].inputs["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    (new,) = run.of_type(RAYSERVICE)[0].inputs["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    group = run.get("eks:index:ManagedNodeGroup", "gpu-nodes-gpu").inputs["scalingConfig"]
    return int(active["maxReplicas"]) + int(new["replicas"]), int(group["maxSize"])


# The DaemonSets the stack installs on every GPU node, by release and chart: the device plugins and, with
# observability, NVIDIA's DCGM exporter (kube-prometheus-stack's node-exporter runs there too, asking nothing: its
# subchart's default resources are empty).
GPU_NODE_RELEASES = {
    "device-plugins-nvidia-device-plugin": "nvidia-device-plugin",
    "device-plugins-efa-device-plugin": "aws-efa-k8s-device-plugin",
    "observability-dcgm-exporter": "dcgm-exporter",
}


def every_node_daemonsets(run: StackRun) -> dict[str, Requests]:
    """The stack's own DaemonSets, which run on every node (the image pre-puller), by their pod's name."""
    return {
        daemonset.inputs["metadata"]["name"]: _containers_ask(
            daemonset.inputs["spec"]["template"]["spec"]["containers"]
        )
        for daemonset in run.of_type(DAEMONSET)
    }


def gpu_node_daemonsets(run: StackRun) -> dict[str, Requests]:
    """What each DaemonSet asks of every GPU node: the stack's values for `resources`, else the chart's default."""
    pods = {name: requests_of(resources) for name, (resources, _) in EKS_ADDON_RESOURCES.items() if name != "coredns"}
    pods |= every_node_daemonsets(run)
    for release in run.of_type(RELEASE):
        if release.name in GPU_NODE_RELEASES:
            defaults = chart_defaults(GPU_NODE_RELEASES[release.name]).get("resources") or {}
            pods[release.name] = requests_of(release.inputs["values"].get("resources", defaults))
    return pods
