"""NVIDIA and EFA device plugins: pinned charts, GPU nodes only, values valid against the real charts."""

from __future__ import annotations

import pytest
import yaml

from infra.nodes.device_plugins import efa_plugin_values
from tests.chart_values import chart_defaults, unknown_value_keys
from tests.schemas import schemas_dir
from tools.offline import run_stack

RELEASE = "kubernetes:helm.sh/v3:Release"
PLUGINS = {
    "nvidia-device-plugin": ("nvidia-device-plugin", "https://nvidia.github.io/k8s-device-plugin", "0.20.0"),
    "efa-device-plugin": ("aws-efa-k8s-device-plugin", "https://aws.github.io/eks-charts", "v0.5.30"),
}


@pytest.mark.parametrize(("release", "chart"), PLUGINS.items())
def test_plugin_chart_is_pinned_from_its_repository(dev, release, chart):
    inputs = dev.get(RELEASE, f"device-plugins-{release}").inputs
    assert (inputs["chart"], inputs["repositoryOpts"]["repo"], inputs["version"]) == chart


@pytest.mark.parametrize("release", PLUGINS)
def test_the_helm_release_keeps_its_name_whatever_the_pulumi_resource_is_called(dev, release):
    """Helm knows a release by its name: a new one would install the chart again beside the old release."""
    assert dev.get(RELEASE, f"device-plugins-{release}").inputs["name"] == release


@pytest.mark.parametrize("release", PLUGINS)
def test_plugin_tolerates_the_gpu_taint_and_targets_gpu_nodes(dev, release):
    values = dev.get(RELEASE, f"device-plugins-{release}").inputs["values"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["tolerations"]
    assert values["nodeSelector"] == {"role": "gpu-worker"}


@pytest.mark.parametrize("release", PLUGINS)
def test_every_value_key_exists_in_the_real_chart(dev, release):
    inputs = dev.get(RELEASE, f"device-plugins-{release}").inputs
    assert unknown_value_keys(inputs["values"], chart_defaults(inputs["chart"])) == []


def test_a_misspelt_value_key_would_be_caught():
    assert unknown_value_keys({"tolerationz": []}, chart_defaults("nvidia-device-plugin")) == ["tolerationz"]


def test_efa_plugin_pulls_its_image_from_the_clusters_region(dev, prod):
    image = dev.get(RELEASE, "device-plugins-efa-device-plugin").inputs["values"]["image"]["repository"]
    assert image == "602401143452.dkr.ecr.sa-east-1.amazonaws.com/eks/aws-efa-k8s-device-plugin"
    assert (
        ".us-east-1." in prod.get(RELEASE, "device-plugins-efa-device-plugin").inputs["values"]["image"]["repository"]
    )


@pytest.mark.parametrize("instance_type", ["g6.8xlarge", "g6e.48xlarge", "p5.48xlarge"])
def test_gpu_type_is_on_the_efa_charts_instance_allow_list(instance_type):
    values = run_stack({"gpuNodeType": instance_type}).get(RELEASE, "device-plugins-efa-device-plugin").inputs["values"]
    assert values["supportedInstanceLabels"]["values"] == [instance_type]


def test_efa_plugin_allow_list_is_the_gpu_type_even_one_the_chart_does_not_list():
    """The chart renders `supportedInstanceLabels` as the DaemonSet's required node affinity: for each key,
    `key In values` (aws/eks-charts stable/aws-efa-k8s-device-plugin templates/daemonset.yaml; the default
    list is in values.yaml). Any GPU type EC2 reports with EFA is accepted, so the list names that type: a
    type missing from the chart's list would otherwise get no plugin, and pods asking for
    `vpc.amazonaws.com/efa` would stay Pending."""
    unlisted = "g9.48xlarge"
    assert unlisted not in chart_defaults("aws-efa-k8s-device-plugin")["supportedInstanceLabels"]["values"]
    labels = efa_plugin_values("us-east-1", unlisted)["supportedInstanceLabels"]
    assert labels == {"keys": ["node.kubernetes.io/instance-type"], "values": [unlisted]}
    assert chart_defaults("aws-efa-k8s-device-plugin")["supportedInstanceLabels"]["keys"] == labels["keys"]


def test_plugins_wait_for_the_gpu_nodes(dev):
    gpu_group = dev.get("eks:index:ManagedNodeGroup", "gpu-nodes-gpu")
    for release in PLUGINS:
        assert gpu_group.urn in dev.get(RELEASE, f"device-plugins-{release}").dependencies


def test_plugin_version_override():
    run = run_stack({"nvidiaDevicePluginVersion": "0.19.1", "efaDevicePluginVersion": "v0.5.29"})
    assert run.get(RELEASE, "device-plugins-nvidia-device-plugin").inputs["version"] == "0.19.1"
    assert run.get(RELEASE, "device-plugins-efa-device-plugin").inputs["version"] == "v0.5.29"


@pytest.mark.parametrize(
    ("release", "chart_dir"),
    [
        ("nvidia-device-plugin", "nvidia-device-plugin-0.20.0"),
        ("efa-device-plugin", "aws-efa-k8s-device-plugin-v0.5.30"),
    ],
)
def test_deployed_version_is_the_one_whose_values_are_checked(dev, release, chart_dir):
    chart = yaml.safe_load((schemas_dir() / chart_dir / "Chart.yaml").read_text())
    assert dev.get(RELEASE, f"device-plugins-{release}").inputs["version"] == chart["version"]
