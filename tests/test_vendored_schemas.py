"""The vendored upstream files are the versions Pulumi.yaml deploys, so a version bump brings its schemas."""

from __future__ import annotations

import pytest
import yaml

from tests.schemas import VENDORED_SCHEMAS_DIR
from tools.project import config_default

# Pulumi.yaml key pinning a chart version -> (vendored folder name before the version, its Chart.yaml).
VENDORED_CHARTS = {
    "kuberayVersion": ("kuberay-v", "kuberay-operator-Chart.yaml"),
    "nvidiaDevicePluginVersion": ("nvidia-device-plugin-", "Chart.yaml"),
    "efaDevicePluginVersion": ("aws-efa-k8s-device-plugin-", "Chart.yaml"),
    "clusterAutoscalerVersion": ("cluster-autoscaler-chart-", "Chart.yaml"),
    "kubePrometheusStackVersion": ("kube-prometheus-stack-", "Chart.yaml"),
    "dcgmExporterVersion": ("dcgm-exporter-", "Chart.yaml"),
}
UPSTREAM_FILES = ("SOURCE.txt", "LICENSE")
# Vendored sources that pin no chart: vLLM's model registry at the version Ray 2.58.0's `ray[llm]` pins, read by
# the model preflight (infra/serving/model_source.py), and pulumi-eks's `nodejs/eks` at the SDK version requirements.txt
# pins, run by the expansion tests (tests/test_eks_expansion_source.py holds the two versions together).
VENDORED_SOURCES = {"vllm-0.26.0", "pulumi-eks-4.3.0"}


def pinned_version(key: str) -> str:
    return config_default(key)


def vendored_folder(key: str) -> str:
    prefix, _ = VENDORED_CHARTS[key]
    return f"{prefix}{pinned_version(key)}"


def test_the_vendored_folders_are_exactly_the_pinned_versions():
    present = {path.name for path in VENDORED_SCHEMAS_DIR.iterdir() if path.is_dir()}
    assert present == {vendored_folder(key) for key in VENDORED_CHARTS} | VENDORED_SOURCES


@pytest.mark.parametrize("key", sorted(VENDORED_CHARTS))
def test_the_vendored_chart_is_the_pinned_version(key):
    """The chart's own Chart.yaml `version` is what Helm installs for `--version` (Helm's chart file docs,
    https://helm.sh/docs/topics/charts/#the-chartyaml-file)."""
    _, chart_file = VENDORED_CHARTS[key]
    chart = yaml.safe_load((VENDORED_SCHEMAS_DIR / vendored_folder(key) / chart_file).read_text())
    assert chart["version"] == pinned_version(key)


@pytest.mark.parametrize("name", sorted({vendored_folder(key) for key in VENDORED_CHARTS} | VENDORED_SOURCES))
def test_each_vendored_folder_names_its_source_and_carries_the_apache_licence(name):
    folder = VENDORED_SCHEMAS_DIR / name
    assert all((folder / name).is_file() for name in UPSTREAM_FILES)
    assert "License     : Apache-2.0" in (folder / "SOURCE.txt").read_text()
    licence = (folder / "LICENSE").read_text().split()
    assert licence[:4] == ["Apache", "License", "Version", "2.0,"]
