"""Checks Helm values we set against a chart's real default values, so a misspelt key cannot hide."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.schemas import schemas_dir

CHART_VALUES_FILES = {
    "nvidia-device-plugin": Path("nvidia-device-plugin-0.20.0/values.yaml"),
    "aws-efa-k8s-device-plugin": Path("aws-efa-k8s-device-plugin-v0.5.30/values.yaml"),
    "kuberay-operator": Path("kuberay-v1.4.0/kuberay-operator-values.yaml"),
    "cluster-autoscaler": Path("cluster-autoscaler-chart-9.59.0/values.yaml"),
}


def chart_defaults(chart: str) -> dict[str, Any]:
    return yaml.safe_load((schemas_dir() / CHART_VALUES_FILES[chart]).read_text())


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
