"""The pulumi-eks implementation the expansion tests run is the one `pulumi up` runs."""

from __future__ import annotations

import re

from tests.eks_expansion import CLUSTER, MANAGED_NODE_GROUP, VENDORED_PULUMI_EKS
from tools.offline import StackRun

VENDORED_README = VENDORED_PULUMI_EKS / "README.md"


def vendored_release() -> str:
    match = re.search(r"tag `v(\d+\.\d+\.\d+)`", VENDORED_README.read_text())
    assert match, f"{VENDORED_README} does not name the vendored tag"
    return match.group(1)


def test_the_vendored_folder_is_named_for_its_release():
    assert VENDORED_PULUMI_EKS.name == f"pulumi-eks-{vendored_release()}"


def test_every_pulumi_eks_component_asks_for_the_vendored_release(dev: StackRun):
    """Each pulumi-eks resource registers with `version=` its SDK's package version
    (pulumi/pulumi-eks `sdk/python/pulumi_eks/_utilities.py`: `get_resource_opts_defaults` ->
    `get_version`, read from the installed distribution's metadata), and the engine runs the provider
    plugin of that version; the plugin builds the components from `nodejs/eks` of the same release.
    So the SDK version `requirements.txt` installs must be the release vendored for the expansion tests,
    or they prove an implementation that is not deployed."""
    components = dev.of_type(CLUSTER) + dev.of_type(MANAGED_NODE_GROUP)
    assert components
    assert {component.plugin_version for component in components} == {vendored_release()}
