"""tests.schemas: the strict reading of a CRD schema, and where the vendored schemas are found."""

from __future__ import annotations

import jsonschema
import pytest

from tests import schemas
from tools.project import PROJECT_DIR


def errors(schema: dict, instance: object) -> list[str]:
    return schemas.schema_errors(jsonschema.Draft202012Validator(schemas.strict_schema(schema)), instance)


OBJECT = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "port": {"x-kubernetes-int-or-string": True},
        "note": {"type": "string", "nullable": True},
        "free": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"a": {"type": "string"}},
        },
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "items": {"type": "array", "items": {"type": "object", "properties": {"key": {"type": "string"}}}},
        # A field named like a keyword is a field, not a keyword.
        "properties": {"type": "object", "properties": {"x": {"type": "integer"}}},
    },
}


def test_an_object_with_properties_rejects_unknown_fields_at_every_depth():
    assert errors(OBJECT, {"name": "a", "nme": "b"}) == [
        "<root>: Additional properties are not allowed ('nme' was unexpected)"
    ]
    assert errors(OBJECT, {"items": [{"key": "k", "kye": "v"}]}) == [
        "items.0: Additional properties are not allowed ('kye' was unexpected)"
    ]
    assert errors(OBJECT, {"properties": {"x": 1, "y": 2}}) == [
        "properties: Additional properties are not allowed ('y' was unexpected)"
    ]


def test_open_objects_stay_open():
    assert errors(OBJECT, {"free": {"anything": 1}, "labels": {"any/key": "v"}}) == []


def test_int_or_string_and_nullable():
    assert errors(OBJECT, {"port": 8000, "note": None}) == []
    assert errors(OBJECT, {"port": "serve"}) == []
    assert errors(OBJECT, {"port": 1.5}) != []


def test_the_input_schema_is_left_as_it_was():
    before = repr(OBJECT)
    schemas.strict_schema(OBJECT)
    assert repr(OBJECT) == before


def test_rayservice_schema_is_the_v1_one_of_the_crd():
    schema = schemas.rayservice_crd_schema()
    assert {"apiVersion", "kind", "metadata", "spec", "status"} <= schema["properties"].keys()
    assert "serveConfigV2" in schema["properties"]["spec"]["properties"]


def test_each_release_is_checked_against_its_own_crd():
    """`rayClusterDeletionDelaySeconds` came after 1.4.0 (ray.io_rayservices.yaml at v1.7.0 has it, v1.4.0 not): the
    same document passes one release's CRD and fails the other's, so the version a test names is the one it checks."""
    manifest = {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "x"}}
    manifest["spec"] = {"rayClusterDeletionDelaySeconds": 0, "rayClusterConfig": {"headGroupSpec": {"template": {}}}}
    assert schemas.rayservice_errors(manifest, "1.7.0") == []
    assert schemas.rayservice_errors(manifest, "1.4.0") == [
        "spec: Additional properties are not allowed ('rayClusterDeletionDelaySeconds' was unexpected)"
    ]


def test_rayservice_metadata_is_held_to_object_meta():
    manifest = {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "x", "labelz": {}}}
    assert schemas.rayservice_errors(manifest) == [
        "metadata: Additional properties are not allowed ('labelz' was unexpected)"
    ]


def test_core_objects_are_checked_strictly():
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "inference"}}
    assert schemas.core_object_errors(namespace) == []
    assert schemas.core_object_errors({**namespace, "spec": {"finalizers": [], "owner": "me"}}) != []


def test_the_schemas_folder_can_be_moved(monkeypatch, tmp_path):
    monkeypatch.setenv(schemas.SCHEMAS_ENV, str(tmp_path))
    assert schemas.schemas_dir() == tmp_path
    with pytest.raises(FileNotFoundError, match=schemas.SCHEMAS_ENV):
        schemas.kuberay_dir()


def test_the_default_schemas_folder_is_inside_the_repository(monkeypatch):
    monkeypatch.delenv(schemas.SCHEMAS_ENV, raising=False)
    assert schemas.schemas_dir() == PROJECT_DIR / "vendor"
    assert (schemas.kuberay_dir() / "ray.io_rayservices.yaml").is_file()
