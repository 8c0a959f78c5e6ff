"""Checks Helm values we set against a chart's real default values, so a misspelt key cannot hide."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.schemas import SHIPPED_KUBERAY_VERSION, schemas_dir


def kuberay_values_file(version: str) -> Path:
    """The kuberay-operator chart's values.yaml of one vendored KubeRay release (vendor/kuberay-v<version>/)."""
    return Path(f"kuberay-v{version}/kuberay-operator-values.yaml")


CHART_VALUES_FILES = {
    "nvidia-device-plugin": Path("nvidia-device-plugin-0.20.0/values.yaml"),
    "aws-efa-k8s-device-plugin": Path("aws-efa-k8s-device-plugin-v0.5.30/values.yaml"),
    "kuberay-operator": kuberay_values_file(SHIPPED_KUBERAY_VERSION),
    "cluster-autoscaler": Path("cluster-autoscaler-chart-9.59.0/values.yaml"),
    "kube-prometheus-stack": Path("kube-prometheus-stack-88.5.3/values.yaml"),
    "dcgm-exporter": Path("dcgm-exporter-4.8.2/values.yaml"),
}
# A chart's values under a subchart's key reach that subchart, whose own values.yaml declares the rest
# (Helm's subchart docs, https://helm.sh/docs/chart_template_guide/subcharts_and_globals/).
SUBCHART_VALUES_FILES = {
    "kube-prometheus-stack": {
        "grafana": Path("kube-prometheus-stack-88.5.3/grafana-values.yaml"),
        "kube-state-metrics": Path("kube-prometheus-stack-88.5.3/kube-state-metrics-values.yaml"),
    }
}


def helm_merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override` over `base`, map by map, as Helm coalesces a parent's values over a subchart's."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merged[key] = helm_merged(base[key], value)
        else:
            merged[key] = value
    return merged


def _load(path: Path) -> dict[str, Any]:
    return yaml.safe_load((schemas_dir() / path).read_text())


def chart_defaults(chart: str) -> dict[str, Any]:
    defaults = _load(CHART_VALUES_FILES[chart])
    for subchart, path in SUBCHART_VALUES_FILES.get(chart, {}).items():
        defaults[subchart] = helm_merged(_load(path), defaults.get(subchart) or {})
    return defaults


def kuberay_operator_defaults(version: str) -> dict[str, Any]:
    """The kuberay-operator chart's default values at one KubeRay release (its chart version is the release's)."""
    return _load(kuberay_values_file(version))


def unknown_value_keys(values: dict[str, Any], defaults: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths of keys the chart does not have; an empty default map (nodeSelector: {}) takes any key."""
    unknown = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if key not in defaults:
            unknown.append(path)
        elif isinstance(value, dict) and isinstance(defaults[key], dict) and defaults[key]:
            unknown.extend(unknown_value_keys(value, defaults[key], f"{path}."))
    return unknown
