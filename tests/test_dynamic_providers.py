"""The names a dynamic provider's serialized form points at, which every deployed stack's state holds.

Pulumi stores each dynamic resource's provider, dill-pickled, in its state (`__provider`), and Delete and Read
load the stored one (pulumi/dynamic/__main__.py `Delete`/`Read`: `get_provider(props, ...)` on the old
properties); a `pulumi up` whose inputs are otherwise unchanged keeps the old outputs, `__provider` among them
(pulumi/pulumi pkg/resource/deploy/step.go SameStep). dill pickles a module-level class or function by reference,
so renaming one of these breaks `pulumi destroy` and `pulumi refresh` of every stack deployed before the rename."""

from __future__ import annotations

import base64
import io
from typing import Any

import dill
import pytest
from pulumi.dynamic.dynamic import ResourceProvider, serialize_provider

from infra.serving.crds import KubeRayCrdsProvider
from infra.serving.rayservice_drain import RayServiceDrainProvider
from infra.serving.rollout import ServeRolloutProvider

STORED_NAMES = {
    KubeRayCrdsProvider: {("infra.serving.crds", "KubeRayCrdsProvider"), ("infra.serving.crds", "kubernetes_applier")},
    ServeRolloutProvider: {
        ("infra.serving.rollout", "ServeRolloutProvider"),
        ("infra.serving.rollout", "kubernetes_reader"),
    },
    RayServiceDrainProvider: {
        ("infra.serving.rayservice_drain", "RayServiceDrainProvider"),
        ("infra.serving.rayservice_drain", "drain_reader"),
    },
}


def names_loaded(provider: ResourceProvider) -> set[tuple[str, str]]:
    """The (module, name) pairs that loading the provider's serialized form looks up in the project's modules."""
    looked_up: set[tuple[str, str]] = set()

    class Recording(dill.Unpickler):  # type: ignore[misc]
        def find_class(self, module: str, name: str) -> Any:
            looked_up.add((module, name))
            return super().find_class(module, name)

    Recording(io.BytesIO(base64.b64decode(serialize_provider(provider)))).load()
    return {(module, name) for module, name in looked_up if module.split(".")[0] == "infra"}


@pytest.mark.parametrize("provider_type", list(STORED_NAMES), ids=lambda t: t.__name__)
def test_a_deployed_providers_stored_names_still_load(provider_type):
    assert names_loaded(provider_type()) == STORED_NAMES[provider_type]
