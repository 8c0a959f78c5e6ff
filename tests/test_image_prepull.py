"""The serving image pulled onto each node as it joins (infra/serving/rayservice.py build_prepull_daemonset), so no
Ray pod waits for it."""

from __future__ import annotations

from infra.kube.scheduling import GPU_TAINT
from infra.serving.rayservice import build_prepull_daemonset
from tests.deploy_graph import waits_for
from tests.rayservice_parts import RAYSERVICE, worker_group
from tests.schemas import core_object_errors

DAEMONSET = "kubernetes:apps/v1:DaemonSet"
NODE_GROUP = "eks:index:ManagedNodeGroup"


def prepull_pod(run) -> dict:
    return run.get(DAEMONSET, "serving-image-prepull").inputs["spec"]["template"]["spec"]


def test_it_pulls_the_image_the_ray_pods_run(shipped):
    head = shipped.get(RAYSERVICE, "serving-rayservice").inputs["spec"]["rayClusterConfig"]["headGroupSpec"]
    images = {
        c["image"]
        for c in head["template"]["spec"]["containers"] + worker_group(shipped)["template"]["spec"]["containers"]
    }
    assert {c["image"] for c in prepull_pod(shipped)["containers"]} == images


def test_it_runs_on_every_node_the_gpu_nodes_included(dev):
    """A DaemonSet's pods go to every node its selector and tolerations admit
    (https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/): no selector, and the GPU nodes' taint
    tolerated (the head and the mirror run the image on the system nodes, the workers on the GPU nodes)."""
    spec = prepull_pod(dev)
    assert "nodeSelector" not in spec and "affinity" not in spec
    assert any(t["key"] == GPU_TAINT["key"] and t["effect"] == GPU_TAINT["effect"] for t in spec["tolerations"])


def test_it_exists_before_any_node_joins(shipped):
    """Created with the serving namespace, it waits for no node group: the DaemonSet controller makes each node's pod
    as the node joins, so the pull starts then, not when the node group is ACTIVE or the RayService exists."""
    node_groups = {r.urn for r in shipped.of_type(NODE_GROUP)}
    assert not waits_for(shipped, DAEMONSET, "serving-image-prepull") & node_groups


def test_nothing_waits_for_it(shipped):
    """A Ray pod placed before a node's pull ends pulls the image itself; `pulumi up` skips the DaemonSet's await
    (pulumi-kubernetes `pulumi.com/skipAwait`) and nothing depends on it."""
    daemonset = shipped.get(DAEMONSET, "serving-image-prepull")
    assert daemonset.inputs["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    assert not [r.name for r in shipped.resources if daemonset.urn in r.dependencies]


def test_its_container_keeps_the_image_in_use_unprivileged(dev):
    """The kubelet's image garbage collection removes only unused images
    (https://kubernetes.io/docs/concepts/architecture/garbage-collection/#containers-images): a running container
    keeps the image for an engine restarted on the node. It runs as nobody, with no capability and no token."""
    spec = prepull_pod(dev)
    (container,) = spec["containers"]
    assert container["command"] == ["sleep", "infinity"]
    assert spec["securityContext"]["runAsNonRoot"] and spec["automountServiceAccountToken"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_the_daemonset_is_a_valid_apps_v1_daemonset():
    assert core_object_errors(build_prepull_daemonset("img:1", "inference")) == []
