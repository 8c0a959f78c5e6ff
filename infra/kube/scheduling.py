"""Where pods land: the node labels, the GPU taint and the toleration and selectors that match them.

Plain data, so the pure builders (the RayService manifest, Helm values) use the same facts as the
node groups without importing pulumi_aws or pulumi_eks.
"""

from __future__ import annotations

import re
from typing import Any

# The CPU node group's name; the GPU group's (gpuNodegroupName) must differ: names are unique in a cluster.
SYSTEM_NODEGROUP_NAME = "system"
# The KubeRay operator's namespace, which its Helm release creates; the RayService's must be another.
OPERATOR_NAMESPACE = "kuberay-system"
ROLE_LABEL = "role"
SYSTEM_ROLE = "system"
GPU_ROLE = "gpu-worker"
SYSTEM_NODE_SELECTOR = {ROLE_LABEL: SYSTEM_ROLE}
GPU_NODE_SELECTOR = {ROLE_LABEL: GPU_ROLE}
# The NVIDIA device plugin's default node affinity needs gpu.present, or it schedules nowhere.
GPU_NODE_LABELS = {**GPU_NODE_SELECTOR, "nvidia.com/gpu.present": "true"}
SYSTEM_NODE_LABELS = dict(SYSTEM_NODE_SELECTOR)
# Cluster Autoscaler's AWS provider takes a node with this label for a GPU node before its device plugin has
# advertised the GPUs; without it, it may scale out again for pods that already have a node coming.
ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
# Only pods that tolerate it (the GPU workers, the device plugins) run on the GPU nodes.
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}
# vLLM's compile cache on the GPU node's disk holds code later engine starts run, so only the Ray workers' group may
# write it (root:VLLM_CACHE_GID, mode 2770: docs/security.md#inside-the-cluster, "The compile cache").
VLLM_CACHE_HOST_PATH = "/var/lib/ray-llm-eks/vllm-cache"
VLLM_CACHE_GID = 2470
VLLM_CACHE_MODE = "2770"


def accelerator_label(gpu_name: str) -> dict[str, str]:
    """`k8s.amazonaws.com/accelerator=<gpu-type>`, the GPU model as a label value: "L4" -> "nvidia-l4"."""
    if not gpu_name:
        return {}
    value = re.sub(r"[^a-z0-9.]+", "-", f"nvidia-{gpu_name}".lower()).strip("-.")[:63].rstrip("-.")
    return {ACCELERATOR_LABEL: value}


def gpu_node_scheduling() -> dict[str, Any]:
    """A pod spec's (or a chart's) nodeSelector and tolerations that place it on the GPU nodes only."""
    return {"nodeSelector": dict(GPU_NODE_SELECTOR), "tolerations": [dict(GPU_TOLERATION)]}
