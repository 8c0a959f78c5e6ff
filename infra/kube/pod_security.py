"""Pod Security Admission: the level each namespace the stack makes enforces, and why no lower one
(https://kubernetes.io/docs/concepts/security/pod-security-admission/; the levels' rules:
https://kubernetes.io/docs/concepts/security/pod-security-standards/).

Every namespace also audits against restricted, so the API server's audit log names each pod that needs more.
Plain data in the bottom layer, beside the namespaces' names (infra/kube/namespaces.py).
"""

from __future__ import annotations

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
AUDIT_LABEL = "pod-security.kubernetes.io/audit"
RESTRICTED, BASELINE, PRIVILEGED = "restricted", "baseline", "privileged"

# The serving namespace: the GPU workers mount vLLM's compile cache from the node (a hostPath volume, which baseline
# forbids) and add IPC_LOCK for EFA's pinned memory (not among baseline's allowed capabilities). The head and the
# image pre-puller there would pass baseline and restricted respectively.
SERVING_LEVEL = PRIVILEGED
# The model cache's mirror Job runs the DLC image as the image's own user, which the stack does not know to be
# non-root (restricted requires runAsNonRoot); it needs nothing baseline forbids.
MODEL_CACHE_LEVEL = BASELINE
# kube-prometheus-stack's node-exporter runs on the host's network and PID namespace with the host's root mounted
# (prometheus-node-exporter chart: hostNetwork, hostPID, hostRootFsMount), and the DCGM exporter adds SYS_ADMIN and
# mounts the kubelet's pod-resources socket from the host (dcgm-exporter values.yaml securityContext, vendored).
MONITORING_LEVEL = PRIVILEGED
# The KubeRay operator's pod is restricted as the chart ships it: non-root, no privilege escalation, every capability
# dropped, RuntimeDefault seccomp (kuberay-operator values.yaml securityContext, vendored).
OPERATOR_LEVEL = RESTRICTED

# What every container the stack declares keeps of its privileges (the Ray containers, the GPU pods' edge, the model
# mirror): no setuid gain, the container runtime's default seccomp filter, no capability but the ones named (Pod
# Security Standards' restricted rules, less runAsNonRoot: the DLC image runs as its own user, which the stack does
# not pick).
CONTAINER_SECURITY = {
    "allowPrivilegeEscalation": False,
    "seccompProfile": {"type": "RuntimeDefault"},
    "capabilities": {"drop": ["ALL"]},
}


def pod_security_labels(level: str) -> dict[str, str]:
    return {ENFORCE_LABEL: level, AUDIT_LABEL: RESTRICTED}
