"""KubeRayCrds (infra/serving/crds.py): the release's RayService and RayCluster CRDs, applied by the stack itself, since
Helm never upgrades a chart's crds/ (https://helm.sh/docs/chart_best_practices/custom_resource_definitions/)."""

from __future__ import annotations

import base64
import subprocess
import sys

import pytest
from kubernetes import client
from pulumi.dynamic.dynamic import serialize_provider

from infra import PROJECT_DIR
from infra.serving.crds import (
    FIELD_MANAGER,
    STACK_CRDS,
    KubeRayCrdsProvider,
    KubernetesCrdApplier,
    crd_file,
    vendored_crd_digests,
)
from infra.settings.kinds import VALIDATED_KUBERAY_VERSIONS


class RecordingApplier:
    def __init__(self) -> None:
        self.applied: list[tuple[str, str]] = []

    def apply(self, crd: str, document: str) -> None:
        self.applied.append((crd, document))


def props(version: str) -> dict:
    return {"kubeconfig": "{}", "kuberayVersion": version, "crds": vendored_crd_digests(version)}


@pytest.mark.parametrize("version", VALIDATED_KUBERAY_VERSIONS)
def test_each_validated_release_has_both_crds_vendored_as_the_chart_ships_them(version):
    """vendor/kuberay-v<version>/SOURCE.txt: ray.io_rayservices.yaml and ray.io_rayclusters.yaml are the blobs of
    ray-operator/config/crd/bases/ at the tag, identical to helm-chart/kuberay-operator/crds/."""
    assert set(vendored_crd_digests(version)) == set(STACK_CRDS)
    for crd in STACK_CRDS:
        assert f"  name: {crd}\n" in crd_file(version, crd).read_text()


def test_create_applies_each_vendored_file_as_it_is():
    applier = RecordingApplier()
    KubeRayCrdsProvider(applier=lambda _props: applier).create(props("1.7.0"))
    assert applier.applied == sorted((crd, crd_file("1.7.0", crd).read_text()) for crd in STACK_CRDS)


def test_a_new_release_is_an_update_that_applies_its_crds():
    """A stack moved from 1.4.0: the second `pulumi up` applies 1.7.0's files, before the operator's release."""
    applier = RecordingApplier()
    provider = KubeRayCrdsProvider(applier=lambda _props: applier)
    assert provider.diff("kuberay-crds-1.4.0", props("1.4.0"), props("1.7.0")).changes
    provider.update("kuberay-crds-1.4.0", props("1.4.0"), props("1.7.0"))
    assert [document for _, document in applier.applied] == [
        crd_file("1.7.0", crd).read_text() for crd in sorted(STACK_CRDS)
    ]


def test_a_new_kubeconfig_alone_applies_nothing():
    """The cluster's credentials are renewed without a change to the CRDs."""
    assert not KubeRayCrdsProvider().diff("id", props("1.7.0"), {**props("1.7.0"), "kubeconfig": '{"new": 1}'}).changes


def test_a_file_other_than_the_one_the_program_read_is_refused():
    applier = RecordingApplier()
    stale = {**props("1.7.0"), "crds": {crd: "0" * 64 for crd in STACK_CRDS}}
    with pytest.raises(RuntimeError, match="is not the file the program read"):
        KubeRayCrdsProvider(applier=lambda _props: applier).create(stale)
    assert applier.applied == []


def test_delete_leaves_the_crds():
    """Deleting a CRD deletes every object of its kind (https://kubernetes.io/docs/tasks/extend-kubernetes/
    custom-resources/custom-resource-definitions/#delete-a-customresourcedefinition)."""
    applier = RecordingApplier()
    KubeRayCrdsProvider(applier=lambda _props: applier).delete("kuberay-crds-1.7.0", props("1.7.0"))
    assert applier.applied == []


class Sent(Exception):
    pass


def test_the_apply_is_a_forced_server_side_apply_patch(monkeypatch):
    """Server-side apply (https://kubernetes.io/docs/reference/using-api/server-side-apply/): a PATCH with Content-Type
    application/apply-patch+yaml, a fieldManager (required for apply), and force=true to take over the fields another
    manager holds (Helm's first install). Built by the kubernetes client itself, stopped before it leaves."""
    api = client.ApiClient(client.Configuration(host="https://cluster.example"))
    seen = {}

    def call_api(method, url, header_params=None, body=None, **_kwargs):
        seen.update(method=method, url=url, headers=header_params, body=body)
        raise Sent

    monkeypatch.setattr(api, "call_api", call_api)
    applier = KubernetesCrdApplier.__new__(KubernetesCrdApplier)
    applier._api = api
    document = crd_file("1.7.0", "rayservices.ray.io").read_text()
    with pytest.raises(Sent):
        applier.apply("rayservices.ray.io", document)
    assert seen["method"] == "PATCH"
    assert seen["url"] == (
        "https://cluster.example/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rayservices.ray.io"
        f"?fieldManager={FIELD_MANAGER}&force=true"
    )
    assert seen["headers"]["Content-Type"] == "application/apply-patch+yaml"
    assert seen["body"] == document


def test_the_provider_loads_where_the_dynamic_provider_host_runs():
    """As the rollout's (tests/test_rollout.py): dill pickles a module-level provider class by reference, and the
    provider host runs in the program's directory, where `infra` is importable."""
    code = (
        "import base64, dill, sys; "
        "provider = dill.loads(base64.b64decode(sys.stdin.read())); print(type(provider).__qualname__)"
    )
    serialized = serialize_provider(KubeRayCrdsProvider())
    base64.b64decode(serialized)
    here = subprocess.run(
        [sys.executable, "-c", code], input=serialized, cwd=PROJECT_DIR, capture_output=True, text=True, check=False
    )
    assert (here.returncode, here.stdout.strip()) == (0, "KubeRayCrdsProvider"), here.stderr
