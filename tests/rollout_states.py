"""API answers in the shapes the rollout reads them: KubeRay's RayService object (1.4.0 and 1.7.0), Ray 2.58's
`GET /api/serve/applications/` (ServeInstanceDetails), a Kubernetes PodList, and with Ray's token auth KubeRay 1.7.0's
RayCluster and the Secret of its token. The tests hold each builder's output to the real schema (the vendored CRD,
Ray's own pydantic model, Kubernetes' OpenAPI schema)."""

from __future__ import annotations

import base64
import copy
from typing import Any

CONDITION_TIME = "2026-12-01T09:00:00Z"


def _applications(app_status: str) -> dict[str, Any]:
    return {"ray-llm": {"status": app_status, "serveDeploymentStatuses": {"OpenAiIngress": {"status": "HEALTHY"}}}}


def rayservice_status(
    observed: int,
    active: str = "ray-llm-abcde",
    pending: str = "",
    app_status: str = "RUNNING",
    pending_app_status: str = "",
    refused: str = "",
) -> dict[str, Any]:
    """A RayService's status as KubeRay 1.4.0 and 1.7.0 write it (rayservice_controller.go calculateStatus and
    calculateConditions). A first cluster is pending until its apps run: `active=""` with `pending` set. During a
    NewCluster upgrade both are named; KubeRay then reads Serve on the pending cluster alone and writes its
    applications there (`pending_app_status`), the active one's left as they were (Reconcile: reconcileServe of the
    active cluster only without a pending one). `refused`: the error of a spec KubeRay 1.7.0 refused, which it writes
    into the Ready condition (reason ValidationFailed) with the status's observedGeneration left as it was
    (vendor/kuberay-v1.7.0/rayservice_controller.go Reconcile, validateRayService, setCondition)."""
    status = _status(observed, active, pending, app_status, pending_app_status)
    if refused:
        ready = status["conditions"][0]
        ready.update(status="False", reason="ValidationFailed", message=refused)
    return status


def _status(observed: int, active: str, pending: str, app_status: str, pending_app_status: str) -> dict[str, Any]:
    return {
        "observedGeneration": observed,
        "numServeEndpoints": 1 if active else 0,
        "serviceStatus": "Running" if active else "",
        "conditions": [
            {
                "type": "Ready",
                "status": "True" if active else "False",
                "reason": "NonZeroServeEndpoints" if active else "Initializing",
                "message": "Number of serve endpoints is greater than 0" if active else "RayService is initializing",
                "observedGeneration": observed,
                "lastTransitionTime": CONDITION_TIME,
            },
            {
                "type": "UpgradeInProgress",
                "status": "True" if pending else "False",
                "reason": "BothActivePendingClustersExist" if pending else "NoPendingCluster",
                "message": "Both active and pending Ray clusters exist"
                if pending
                else "Active Ray cluster exists and no pending Ray cluster",
                "observedGeneration": observed,
                "lastTransitionTime": CONDITION_TIME,
            },
        ],
        "activeServiceStatus": {
            "rayClusterName": active,
            "applicationStatuses": _applications(app_status) if active else {},
        },
        "pendingServiceStatus": (
            {
                "rayClusterName": pending,
                **({"applicationStatuses": _applications(pending_app_status)} if pending_app_status else {}),
            }
            if pending
            else {}
        ),
    }


def raycluster(name: str, rayservice: dict[str, Any], kuberay_version: str = "v1.4.0") -> dict[str, Any]:
    """The RayCluster KubeRay 1.4.0 builds for a RayService (rayservice_controller.go constructRayClusterForRayService):
    the RayService's labels and annotations and its own, the hash of the spec less replicas, and the RayService's
    rayClusterConfig as its spec, owned by the RayService."""
    metadata = rayservice["metadata"]
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": name,
            "namespace": metadata["namespace"],
            "labels": {
                **metadata.get("labels", {}),
                "ray.io/originated-from-cr-name": metadata["name"],
                "ray.io/originated-from-crd": "RayService",
            },
            "annotations": {
                **metadata.get("annotations", {}),
                "ray.io/hash-without-replicas-and-workers-to-delete": "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
                "ray.io/num-worker-groups": str(len(rayservice["spec"]["rayClusterConfig"]["workerGroupSpecs"])),
                "ray.io/kuberay-version": kuberay_version,
            },
            "ownerReferences": [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayService",
                    "name": metadata["name"],
                    "uid": "b0ddfe96-5fb0-40b1-862f-9250866fbd33",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": copy.deepcopy(rayservice["spec"]["rayClusterConfig"]),
    }


def _deployment(name: str, status: str, running: int, target: int, message: str = "") -> dict[str, Any]:
    return {
        "name": name,
        "status": status,
        "status_trigger": "CONFIG_UPDATE_COMPLETED" if status == "HEALTHY" else "CONFIG_UPDATE_STARTED",
        "message": message,
        "deployment_config": {"name": name, "num_replicas": target},
        "target_num_replicas": target,
        "required_resources": {"CPU": 1},
        "replicas": [
            {"replica_id": f"{name}-{i}", "state": "RUNNING", "pid": 100 + i, "start_time_s": 1764579600.0}
            for i in range(running)
        ],
    }


def serve_details(
    deployed_config: dict[str, Any] | None,
    status: str = "RUNNING",
    message: str = "",
    deployments: tuple[tuple[str, str, int, int, str], ...] = (
        ("PDProxyServer", "HEALTHY", 1, 1, ""),
        ("Prefill", "HEALTHY", 1, 1, ""),
        ("Decode", "HEALTHY", 1, 1, ""),
    ),
    app: str = "ray-llm",
) -> dict[str, Any]:
    """Ray 2.58's ServeInstanceDetails for one application (ray/serve/schema.py)."""
    applications = {}
    if deployed_config is not None:
        applications[app] = {
            "name": app,
            "route_prefix": "/",
            "docs_path": None,
            "status": status,
            "message": message,
            "last_deployed_time_s": 1764579600.0,
            "deployed_app_config": copy.deepcopy(deployed_config),
            "source": "declarative",
            "deployments": {d[0]: _deployment(*d) for d in deployments},
            "external_scaler_enabled": False,
        }
    return {
        "controller_info": {
            "node_id": "n1",
            "node_ip": "10.0.1.10",
            "actor_id": "a1",
            "actor_name": "SERVE_CONTROLLER",
        },
        "proxy_location": "EveryNode",
        "http_options": {"host": "0.0.0.0", "port": 8000},
        "proxies": {"n1": {"node_id": "n1", "node_ip": "10.0.1.10", "status": "HEALTHY"}},
        "applications": applications,
        "target_groups": [],
    }


def pod_list(unschedulable: dict[str, str]) -> dict[str, Any]:
    """A PodList of pending pods, each with the scheduler's PodScheduled=False condition and its message."""
    return {
        "apiVersion": "v1",
        "kind": "PodList",
        "metadata": {},
        "items": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "inference"},
                "spec": {"containers": [{"name": "ray-worker", "image": "ray:serve-llm"}]},
                "status": {
                    "phase": "Pending",
                    "conditions": [
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "reason": "Unschedulable",
                            "message": message,
                            "lastTransitionTime": CONDITION_TIME,
                        }
                    ],
                },
            }
            for name, message in unschedulable.items()
        ],
    }


def running_head(cluster: str, name: str) -> dict[str, Any]:
    """The RayCluster's head pod, running, with the labels KubeRay gives it (kuberay v1.4.0 ray-operator/controllers/
    ray/common/pod.go labelPod: ray.io/cluster, ray.io/node-type)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "inference",
            "labels": {"ray.io/cluster": cluster, "ray.io/node-type": "head"},
        },
        "spec": {"containers": [{"name": "ray-head", "image": "ray:serve-llm"}]},
        "status": {"phase": "Running"},
    }


def restarting_head(cluster: str, name: str, restarts: int, waiting: str = "CrashLoopBackOff") -> dict[str, Any]:
    """The head pod after its Ray container died `restarts` times, as the API server returns it: the pod still
    Running, the container waiting to start again, its last exit in lastState (k8s.io/api core/v1 ContainerStatus;
    `kubectl get pod -o json` of a crashing container)."""
    pod = running_head(cluster, name)
    pod["status"] = {
        "phase": "Running",
        "containerStatuses": [
            {
                "name": "ray-head",
                "image": "ray:serve-llm",
                "imageID": "ray@sha256:" + "0" * 64,
                "ready": False,
                "started": False,
                "restartCount": restarts,
                "state": {"waiting": {"reason": waiting, "message": "back-off 10s restarting failed container"}},
                "lastState": {
                    "terminated": {
                        "exitCode": 137,
                        "reason": "Error",
                        "startedAt": "2026-12-06T10:00:00Z",
                        "finishedAt": "2026-12-06T10:04:05Z",
                        "containerID": "containerd://" + "1" * 64,
                    }
                },
            }
        ],
    }
    return pod


def with_token_auth(cluster: dict[str, Any], **auth_options: Any) -> dict[str, Any]:
    """A RayCluster whose spec carries KubeRay 1.7.0's `authOptions` (vendor/kuberay-v1.7.0/raycluster_types.go)."""
    changed = copy.deepcopy(cluster)
    changed["spec"]["authOptions"] = auth_options
    changed["metadata"]["annotations"]["ray.io/kuberay-version"] = "v1.7.0"
    return changed


def token_secret(name: str, cluster: str, token: str, namespace: str = "inference") -> dict[str, Any]:
    """The Secret KubeRay 1.7.0 generates for a RayCluster with token auth (raycluster_controller.go
    createAuthSecret: the cluster's label, the cluster as its controller owner, the token under `auth_token`), as the
    API server returns it: `stringData` written, `data` read back in base64."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"ray.io/cluster": cluster},
            "ownerReferences": [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayCluster",
                    "name": cluster,
                    "uid": "5c0f6a44-8d1e-4f7b-9a51-0b7d2c3e9f10",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "data": {"auth_token": base64.b64encode(token.encode()).decode()},
    }
