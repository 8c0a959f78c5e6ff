"""The Pod Security Standards' baseline and restricted checks, on a pod spec, as Kubernetes documents them
(https://kubernetes.io/docs/concepts/security/pod-security-standards/, "Baseline" and "Restricted" tables; version
latest, as the stack's namespaces enforce it). Each check returns why a spec fails it, empty when it passes. Only the
controls a Linux pod can trip are here; Windows' hostProcess, AppArmor, SELinux and sysctls fields the stack's pods
never set are refused outright, so a spec that grows one cannot pass unread.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

# Baseline, "Capabilities": adding anything beyond this list is forbidden.
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
# Restricted, "Volume Types": only these.
RESTRICTED_VOLUMES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
)
UNREAD_POD_FIELDS = frozenset({"hostUsers", "os"})
UNREAD_CONTEXT_FIELDS = frozenset({"appArmorProfile", "seLinuxOptions", "sysctls", "windowsOptions", "procMount"})


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for field in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(field) or []


def _refuse_unread(spec: Mapping[str, Any]) -> None:
    contexts = [spec.get("securityContext") or {}, *((c.get("securityContext") or {}) for c in _containers(spec))]
    unread = (set(spec) & UNREAD_POD_FIELDS) | {key for context in contexts for key in context} & UNREAD_CONTEXT_FIELDS
    if unread:
        raise NotImplementedError(f"pod security fields not checked here: {sorted(unread)}")


def baseline_violations(spec: Mapping[str, Any]) -> list[str]:
    _refuse_unread(spec)
    found = [f"{field}: true" for field in ("hostNetwork", "hostPID", "hostIPC") if spec.get(field)]
    found += [f"volume {v['name']}: hostPath" for v in spec.get("volumes") or [] if "hostPath" in v]
    pod_seccomp = (spec.get("securityContext") or {}).get("seccompProfile", {}).get("type")
    if pod_seccomp == "Unconfined":
        found.append("pod seccompProfile: Unconfined")
    for container in _containers(spec):
        name, context = container["name"], container.get("securityContext") or {}
        if context.get("privileged"):
            found.append(f"{name}: privileged")
        added = set((context.get("capabilities") or {}).get("add") or []) - BASELINE_CAPABILITIES
        found += [f"{name}: adds {capability}" for capability in sorted(added)]
        found += [f"{name}: hostPort {p['hostPort']}" for p in container.get("ports") or [] if p.get("hostPort")]
        if (context.get("seccompProfile") or {}).get("type") == "Unconfined":
            found.append(f"{name}: seccompProfile Unconfined")
    return found


def restricted_violations(spec: Mapping[str, Any]) -> list[str]:
    found = baseline_violations(spec)
    pod = spec.get("securityContext") or {}
    found += [
        f"volume {v['name']}: {kind}"
        for v in spec.get("volumes") or []
        for kind in set(v) - {"name"} - RESTRICTED_VOLUMES
        if kind != "hostPath"  # baseline's already
    ]
    if pod.get("runAsUser") == 0:
        found.append("pod runAsUser: 0")
    for container in _containers(spec):
        name, context = container["name"], container.get("securityContext") or {}
        if context.get("allowPrivilegeEscalation") is not False:
            found.append(f"{name}: allowPrivilegeEscalation not false")
        if not context.get("runAsNonRoot", pod.get("runAsNonRoot")):
            found.append(f"{name}: runAsNonRoot not true")
        if context.get("runAsUser") == 0:
            found.append(f"{name}: runAsUser 0")
        seccomp = (context.get("seccompProfile") or pod.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"{name}: seccompProfile {seccomp}")
        capabilities = context.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            found.append(f"{name}: does not drop ALL")
        found += [f"{name}: adds {c}" for c in sorted(set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"})]
    return sorted(set(found))


def violations(level: str, spec: Mapping[str, Any]) -> list[str]:
    """Why `spec` fails the namespace level `level`; privileged allows everything."""
    checks = {"privileged": lambda _: [], "baseline": baseline_violations, "restricted": restricted_violations}
    return sorted(set(checks[level](spec)))
