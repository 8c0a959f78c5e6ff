"""Where pods land: the node labels, the GPU taint and the toleration and selectors that match them.

Plain data, so the pure builders (the RayService manifest, Helm values) use the same facts as the
node groups without importing pulumi_aws or pulumi_eks.
"""

from __future__ import annotations

from typing import Any

ROLE_LABEL = "role"
SYSTEM_ROLE = "system"
GPU_ROLE = "gpu-worker"
SYSTEM_NODE_SELECTOR = {ROLE_LABEL: SYSTEM_ROLE}
GPU_NODE_SELECTOR = {ROLE_LABEL: GPU_ROLE}
# The NVIDIA device plugin's default node affinity needs gpu.present, or it schedules nowhere.
GPU_NODE_LABELS = {**GPU_NODE_SELECTOR, "nvidia.com/gpu.present": "true"}
SYSTEM_NODE_LABELS = dict(SYSTEM_NODE_SELECTOR)
# Only pods that tolerate it (the GPU workers, the device plugins) run on the GPU nodes.
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}


def gpu_node_scheduling() -> dict[str, Any]:
    """A pod spec's (or a chart's) nodeSelector and tolerations that place it on the GPU nodes only."""
    return {"nodeSelector": dict(GPU_NODE_SELECTOR), "tolerations": [dict(GPU_TOLERATION)]}
