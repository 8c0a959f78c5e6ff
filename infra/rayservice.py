"""The RayService manifest (ray.io/v1), built from the stack config as a plain dict."""

from __future__ import annotations

from typing import Any

import yaml

from infra.config import StackConfig
from infra.scheduling import SYSTEM_NODE_SELECTOR, gpu_node_scheduling
from infra.serve_config import build_serve_config
from infra.topology import worker_cpu, worker_memory_gib

SERVE_PORT = 8000
DASHBOARD_PORT = 8265
HF_TOKEN_SECRET = "hf-token"
HF_TOKEN_KEY = "HF_TOKEN"
INSTANCE_LABEL = "app.kubernetes.io/instance"
WORKER_GROUP = "gpu-workers"
# The head only coordinates: it fits an m7i.xlarge (4 vCPU, 16 GiB) beside the system pods.
HEAD_RESOURCES = {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "8Gi"}}
# With Serve autoscaling, KubeRay's in-tree autoscaler (a sidecar in the head pod) adds a worker pod when
# replicas wait for GPUs and removes it once idle, within the worker group's minReplicas..maxReplicas.
RAY_AUTOSCALER = {
    "enableInTreeAutoscaling": True,
    "autoscalerOptions": {
        "upscalingMode": "Default",
        "idleTimeoutSeconds": 300,
        "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "512Mi"}},
    },
}
# vLLM moves tensors between processes through /dev/shm; the container default of 64 MiB is too small.
SHM_SIZE = "16Gi"
# NIXL's LIBFABRIC backend and the DLC's NCCL plugin take the EFA provider; Ray forks its workers.
EFA_ENV = {"FI_PROVIDER": "efa", "FI_EFA_FORK_SAFE": "1"}


def serve_service_name(cfg: StackConfig) -> str:
    """The Service KubeRay creates once the Serve app is healthy."""
    return f"{cfg.ray_service_name}-serve-svc"


def _env(with_hf_token: bool, extra: dict[str, str]) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [{"name": name, "value": value} for name, value in extra.items()]
    if with_hf_token:
        env.append(
            {"name": HF_TOKEN_KEY, "valueFrom": {"secretKeyRef": {"name": HF_TOKEN_SECRET, "key": HF_TOKEN_KEY}}}
        )
    return env


def head_group(cfg: StackConfig, with_hf_token: bool) -> dict[str, Any]:
    return {
        # No model work on the CPU head: its logical CPUs and GPUs are zero.
        "rayStartParams": {"dashboard-host": "0.0.0.0", "num-cpus": "0", "num-gpus": "0"},
        "template": {
            "metadata": {"labels": {INSTANCE_LABEL: cfg.ray_service_name}},
            "spec": {
                "nodeSelector": dict(SYSTEM_NODE_SELECTOR),
                "containers": [
                    {
                        "name": "ray-head",
                        "image": cfg.dlc_image,
                        "ports": [
                            {"containerPort": 6379, "name": "gcs-server"},
                            {"containerPort": DASHBOARD_PORT, "name": "dashboard"},
                            {"containerPort": 10001, "name": "client"},
                            {"containerPort": SERVE_PORT, "name": "serve"},
                        ],
                        "resources": HEAD_RESOURCES,
                        "env": _env(with_hf_token, {}),
                    }
                ],
            },
        },
    }


def worker_group(cfg: StackConfig, with_hf_token: bool) -> dict[str, Any]:
    # One pod per GPU node, owning all of it: Ray packs the replicas' GPU bundles into it.
    node = cfg.topology.node
    resources = {
        "cpu": str(worker_cpu(node)),
        "memory": f"{worker_memory_gib(node)}Gi",
        "nvidia.com/gpu": str(node.gpus),
        "vpc.amazonaws.com/efa": str(node.efa_interfaces),
    }
    env = _env(with_hf_token, EFA_ENV)
    # NIXL and vLLM advertise this address to the other side of the KV transfer.
    env.insert(0, {"name": "VLLM_HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    return {
        "groupName": WORKER_GROUP,
        "replicas": cfg.gpu_node_count,
        "minReplicas": cfg.gpu_node_count,
        "maxReplicas": cfg.topology.most_gpu_nodes,
        "rayStartParams": {},
        "template": {
            "metadata": {"labels": {INSTANCE_LABEL: cfg.ray_service_name}},
            "spec": {
                **gpu_node_scheduling(),
                "containers": [
                    {
                        "name": "ray-worker",
                        "image": cfg.dlc_image,
                        "resources": {"requests": resources, "limits": resources},
                        "env": env,
                        # EFA registers pinned memory: libfabric needs to lock it.
                        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                    }
                ],
                "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}}],
            },
        },
    }


def build_rayservice(cfg: StackConfig, with_hf_token: bool) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {
            "name": cfg.ray_service_name,
            "namespace": cfg.namespace,
            # The ServeRollout after it waits instead (infra/rollout.py): KubeRay 1.4.0's Ready condition stays true
            # over a failed or still-old serve config, so the provider's own wait would report success at once.
            "annotations": {"pulumi.com/skipAwait": "true"},
        },
        "spec": {
            # A rayClusterConfig change replaces the RayService (infra/serve_app.py); KubeRay must never start a
            # second cluster beside the active one, which the GPU node group cannot hold (NewCluster, the default).
            "upgradeStrategy": {"type": "None"},
            "serveConfigV2": yaml.safe_dump(build_serve_config(cfg), sort_keys=False),
            "rayClusterConfig": {
                "rayVersion": cfg.ray_version,
                **(RAY_AUTOSCALER if cfg.serve_autoscaling else {}),
                "headGroupSpec": head_group(cfg, with_hf_token),
                "workerGroupSpecs": [worker_group(cfg, with_hf_token)],
            },
        },
    }


def build_serve_load_balancer(cfg: StackConfig) -> dict[str, Any]:
    """An NLB in front of the pods that serve, for clients outside the cluster (serveExposure)."""
    annotations = {"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}
    if cfg.serve_exposure == "internal":
        annotations["service.beta.kubernetes.io/aws-load-balancer-internal"] = "true"
    spec: dict[str, Any] = {
        "type": "LoadBalancer",
        # KubeRay marks the pods whose Serve proxy is healthy with ray.io/serve=true.
        "selector": {INSTANCE_LABEL: cfg.ray_service_name, "ray.io/serve": "true"},
        "ports": [{"name": "serve", "port": SERVE_PORT, "targetPort": SERVE_PORT, "protocol": "TCP"}],
    }
    if cfg.serve_source_cidrs:
        spec["loadBalancerSourceRanges"] = list(cfg.serve_source_cidrs)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": f"{cfg.ray_service_name}-serve-lb",
            "namespace": cfg.namespace,
            "annotations": annotations,
        },
        "spec": spec,
    }


def endpoint_outputs(cfg: StackConfig) -> dict[str, str]:
    """How to reach the OpenAI-compatible API once the RayService is ready."""
    service = serve_service_name(cfg)
    return {
        "serveEndpoint": f"http://{service}.{cfg.namespace}.svc.cluster.local:{SERVE_PORT}/v1",
        "portForwardCommand": f"kubectl port-forward -n {cfg.namespace} svc/{service} {SERVE_PORT}:{SERVE_PORT}",
        "modelId": cfg.model_id,
        "curlModelsCommand": f"curl --silent http://127.0.0.1:{SERVE_PORT}/v1/models",
    }
