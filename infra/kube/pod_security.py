"""Pod Security Admission: the level each namespace the stack makes enforces and audits against restricted, and the
pod that needs it (docs/security.md#pod-security-and-service-accounts; the admission controller:
https://kubernetes.io/docs/concepts/security/pod-security-admission/)."""

from __future__ import annotations

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
AUDIT_LABEL = "pod-security.kubernetes.io/audit"
RESTRICTED, BASELINE, PRIVILEGED = "restricted", "baseline", "privileged"

# The GPU workers' compile-cache hostPath and IPC_LOCK for EFA are outside baseline.
SERVING_LEVEL = PRIVILEGED
# The model cache's mirror Job runs the DLC image as the image's own user, which the stack does not know to be
# non-root (restricted requires runAsNonRoot); it needs nothing baseline forbids.
MODEL_CACHE_LEVEL = BASELINE
# node-exporter (prometheus-node-exporter chart: hostNetwork, hostPID, hostRootFsMount) and the DCGM exporter
# (dcgm-exporter values.yaml securityContext: SYS_ADMIN, the kubelet's pod-resources socket) are outside baseline.
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
