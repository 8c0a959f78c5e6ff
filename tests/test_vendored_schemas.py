"""The vendored upstream files are the versions Pulumi.yaml deploys, so a version bump brings its schemas."""

from __future__ import annotations

import pytest
import yaml

from infra.settings.kinds import DEFAULT_KUBERAY_VERSION, VALIDATED_KUBERAY_VERSIONS
from infra.settings.rules_serving import has_ray_token_auth
from tests.schemas import VENDORED_SCHEMAS_DIR
from tools.project import declared_defaults

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
# The CAs the Ray head trusts for its GCS store's TLS (infra/serving/rayservice.py gcs_redis_ca_bundle): Mozilla's root
# store as Debian ships it, under the MPL 2.0.
VENDORED_CAS = "amazon-trust-services"
# Besides the pinned default, every KubeRay release a user may choose (kuberayVersion) is vendored and validated.
VALIDATED_KUBERAY_FOLDERS = {f"kuberay-v{version}" for version in VALIDATED_KUBERAY_VERSIONS}


def pinned_version(key: str) -> str:
    return declared_defaults()[key]


def vendored_folder(key: str) -> str:
    prefix, _ = VENDORED_CHARTS[key]
    return f"{prefix}{pinned_version(key)}"


def test_the_vendored_folders_are_exactly_the_pinned_versions():
    present = {path.name for path in VENDORED_SCHEMAS_DIR.iterdir() if path.is_dir()}
    charts = {vendored_folder(key) for key in VENDORED_CHARTS}
    assert present == charts | VENDORED_SOURCES | VALIDATED_KUBERAY_FOLDERS | {VENDORED_CAS}


def test_the_default_kuberay_is_a_validated_one_with_rays_token():
    """The default stack runs Ray with its token (rayAuthMode auto): KubeRay takes authOptions from 1.5.1 on."""
    assert pinned_version("kuberayVersion") == DEFAULT_KUBERAY_VERSION
    assert DEFAULT_KUBERAY_VERSION in VALIDATED_KUBERAY_VERSIONS
    assert has_ray_token_auth(DEFAULT_KUBERAY_VERSION)


@pytest.mark.parametrize("version", VALIDATED_KUBERAY_VERSIONS)
def test_each_validated_kuberay_folder_holds_that_release(version):
    """The chart's Chart.yaml version is the release (the kuberay-operator chart is versioned with the operator), and
    its values pin the operator image of the same tag."""
    folder = VENDORED_SCHEMAS_DIR / f"kuberay-v{version}"
    assert yaml.safe_load((folder / "kuberay-operator-Chart.yaml").read_text())["version"] == version
    image = yaml.safe_load((folder / "kuberay-operator-values.yaml").read_text())["image"]
    assert (image["repository"], image["tag"]) == ("quay.io/kuberay/operator", f"v{version}")
    assert f"Tag         : v{version} " in (folder / "SOURCE.txt").read_text()


@pytest.mark.parametrize("key", sorted(VENDORED_CHARTS))
def test_the_vendored_chart_is_the_pinned_version(key):
    """The chart's own Chart.yaml `version` is what Helm installs for `--version` (Helm's chart file docs,
    https://helm.sh/docs/topics/charts/#the-chartyaml-file)."""
    _, chart_file = VENDORED_CHARTS[key]
    chart = yaml.safe_load((VENDORED_SCHEMAS_DIR / vendored_folder(key) / chart_file).read_text())
    assert chart["version"] == pinned_version(key)


@pytest.mark.parametrize(
    "name", sorted({vendored_folder(key) for key in VENDORED_CHARTS} | VENDORED_SOURCES | VALIDATED_KUBERAY_FOLDERS)
)
def test_each_vendored_folder_names_its_source_and_carries_the_apache_licence(name):
    folder = VENDORED_SCHEMAS_DIR / name
    assert all((folder / name).is_file() for name in UPSTREAM_FILES)
    assert "License     : Apache-2.0" in (folder / "SOURCE.txt").read_text()
    licence = (folder / "LICENSE").read_text().split()
    assert licence[:4] == ["Apache", "License", "Version", "2.0,"]


def test_the_vendored_cas_name_their_source_and_carry_the_mpl_notice():
    folder = VENDORED_SCHEMAS_DIR / VENDORED_CAS
    assert all((folder / name).is_file() for name in UPSTREAM_FILES)
    assert "License     : MPL-2.0" in (folder / "SOURCE.txt").read_text()
    assert "Mozilla Public License, v. 2.0" in (folder / "LICENSE").read_text()
