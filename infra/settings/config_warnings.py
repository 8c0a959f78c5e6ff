"""What `load_config` warns of without refusing: nested CIDRs, and settings the chosen mode ignores."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from infra.settings.kinds import (
    NEW_CLUSTER,
    VALIDATED_KUBERAY_VERSIONS,
    Boolean,
    Integer,
    StringList,
    client_cidr,
    internet_client_cidr,
    ipv4_network,
)
from infra.settings.reader import json_string_list
from infra.settings.stack_config import StackConfig
from infra.settings.table import SETTINGS, SETTINGS_BY_KEY

# The list settings of CIDRs: each admits the union of its ranges (EKS publicAccessCidrs, the Service's
# loadBalancerSourceRanges).
CIDR_LIST_SETTINGS = tuple(
    setting.key
    for setting in SETTINGS
    if isinstance(setting.kind, StringList) and setting.kind.item in (client_cidr, internet_client_cidr)
)


def nested_cidr_warnings(settings: Mapping[str, str]) -> list[str]:
    """A range inside another of the same list: two CIDR blocks that overlap at all are one inside the other. The
    list admits the union, so the inner one changes nothing (a warning, not a refusal: nothing is admitted that the
    list does not say), but it is usually a slip: a wider range than meant, or a range listed twice. An exact
    repeat is refused by the reader."""
    warnings = []
    for key in CIDR_LIST_SETTINGS:
        networks = _cidr_items(settings[key])
        for index, network in networks.items():
            outer = next((i for i, other in networks.items() if i != index and network.subnet_of(other)), None)
            if outer is not None and networks[outer] != network:
                warnings.append(
                    f"{key}[{index}]={str(network)!r} lies inside {key}[{outer}]={str(networks[outer])!r}: the list "
                    "admits the union of its ranges, so it adds nothing; allowed and meant is each range once, none "
                    f"inside another: drop {key}[{index}], or narrow {key}[{outer}] if it admits more than you meant"
                )
    return warnings


def _cidr_items(raw: str) -> dict[int, ipaddress.IPv4Network]:
    """The list's well-formed items by their index as typed (a bad one is the reader's problem)."""
    networks = {}
    for index, text in enumerate(json_string_list(raw or "[]") or []):
        try:
            networks[index] = ipv4_network(text)
        except ValueError:
            continue
    return networks


# Settings that act only under another setting's value: (the value that switches them off, why nothing reads them
# then, the values that switch them on, the settings). Warned, not refused: nothing is built for them, and a stack can
# turn its endpoint off and on again without re-entering its secrets. A value whose outcome the user would miss
# (ampWorkspaceUrl, the alert receivers, <side>MaxReplicas, <side>TargetOngoingRequests) is refused by its own rule.
SWITCHED_OFF = {
    "serveExposure": (
        "none",
        "no load balancer is built, and inside the cluster the serve Service asks no key",
        "internal or internet-facing",
        ("serveApiKeys", "serveCertificateArn", "serveSourceCidrs", "serveApiKeyAuth"),
    ),
    "observability": (
        False,
        "the metrics stack is not installed",
        "true",
        ("kubePrometheusStackVersion", "dcgmExporterVersion", "ttftP99ObjectiveMs", "runbookUrl"),
    ),
    "serveAutoscaling": (False, "the Cluster Autoscaler is not installed", "true", ("clusterAutoscalerVersion",)),
    "modelCache": (False, "the stack makes no bucket", "true", ("modelCacheRetainOnDestroy",)),
    "headFaultTolerance": ("off", "the stack makes no GCS store", "redis", ("gcsRedisNodeType",)),
}


def ignored_setting_warnings(cfg: StackConfig, values: Mapping[str, Any]) -> list[str]:
    """Each setting given a value other than its default while the setting it acts under switches it off."""
    warnings = []
    for switch, (off, why, on, keys) in SWITCHED_OFF.items():
        # The surge of a newCluster upgrade installs the Cluster Autoscaler too.
        if values[switch] != off or (switch == "serveAutoscaling" and cfg.new_cluster):
            continue
        for key in keys:
            if _differs_from_default(key, values[key]):
                warnings.append(
                    f"{assignment(key, cfg.settings)} is ignored with {assignment(switch, cfg.settings)}: {why}; "
                    f"allowed and meant is the default ({_default_text(key)}) until {switch} is {on}"
                )
    if cfg.new_cluster and cfg.capacity_reservation_id and cfg.topology is not None:
        warnings.append(
            f"clusterUpgradeStrategy={NEW_CLUSTER!r} with capacityReservationId={cfg.capacity_reservation_id!r}: an "
            f"upgrade launches up to {cfg.gpu_node_group_max} GPU nodes into the reservation (the active cluster's and "
            "the new one's); a targeted reservation with fewer instances leaves the new cluster's workers Pending and "
            "`pulumi up` fails at serveReadyTimeoutMinutes naming them, while the active cluster keeps serving"
        )
    if values["allowUnvalidatedKuberayVersion"] and cfg.kuberay_version in VALIDATED_KUBERAY_VERSIONS:
        warnings.append(
            f"allowUnvalidatedKuberayVersion=true is ignored with kuberayVersion={cfg.kuberay_version!r}: that "
            "release is validated; allowed and meant is false, so that a later unvalidated version is refused"
        )
    return warnings


def _differs_from_default(key: str, value: Any) -> bool:
    default = SETTINGS_BY_KEY[key].default
    if isinstance(default, list):
        return tuple(value) != tuple(default)
    if default == "":
        return bool(value)
    return bool(value != default)


def assignment(key: str, settings: Mapping[str, str]) -> str:
    """`key=value` as the other messages write it: a string or list quoted, a boolean or integer bare."""
    kind = SETTINGS_BY_KEY[key].kind
    return f"{key}={settings[key]}" if isinstance(kind, Boolean | Integer) else f"{key}={settings[key]!r}"


def _default_text(key: str) -> str:
    default = SETTINGS_BY_KEY[key].default
    if isinstance(default, bool):
        return str(default).lower()
    return "empty" if default in ("", []) else str(default)
