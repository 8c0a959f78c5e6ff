"""Offline schemas the stack's Kubernetes objects are checked against, with unknown fields rejected.

Two sources: KubeRay's own CRDs (verbatim copies vendored in `vendor/`, or wherever
`RAY_LLM_EKS_SCHEMAS` points), and the Kubernetes OpenAPI schemas that `kubernetes-validate` ships
(the `-strict` flavour, whose objects already forbid additional properties).

A CRD's OpenAPI v3 schema is loose where the API server is strict: it prunes unknown fields
silently, so a misspelt key is lost without an error. `strict_schema` closes every object that lists
its properties, so the same typo fails a test instead.
"""

from __future__ import annotations

import json
import os
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml
from referencing import Registry, Resource

from infra.settings.kinds import DEFAULT_KUBERAY_VERSION

SCHEMAS_ENV = "RAY_LLM_EKS_SCHEMAS"
# The KubeRay release Pulumi.yaml's kuberayVersion defaults to; the others validated are vendored beside it.
SHIPPED_KUBERAY_VERSION = DEFAULT_KUBERAY_VERSION
# The Kubernetes version of the cluster (Pulumi.yaml's kubernetesVersion default).
KUBERNETES_SCHEMA_VERSION = "1.35"
# kubernetes-validate's strict schemas refer to their shared definitions by this URI.
KUBERNETES_DEFINITIONS_URI = "https://kubernetes.io/api/_definitions.json"
OBJECT_META_REF = f"{KUBERNETES_DEFINITIONS_URI}#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


# The upstream files vendored in the repository, one folder per pinned version (vendor/README.md).
VENDORED_SCHEMAS_DIR = Path(__file__).resolve().parents[1] / "vendor"


def schemas_dir() -> Path:
    """Where the upstream schemas live: `$RAY_LLM_EKS_SCHEMAS`, else the repository's `vendor/`."""
    configured = os.environ.get(SCHEMAS_ENV)
    if configured:
        return Path(configured)
    return VENDORED_SCHEMAS_DIR


def kuberay_dir(kuberay_version: str = SHIPPED_KUBERAY_VERSION) -> Path:
    path = schemas_dir() / f"kuberay-v{kuberay_version}"
    if not path.is_dir():
        raise FileNotFoundError(
            f"no KubeRay {kuberay_version} schemas at {path} (set {SCHEMAS_ENV} to the schemas folder)"
        )
    return path


# A CRD file is ~1 MB of YAML: libyaml parses it in a tenth of the pure-Python loader's time.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def crd_schema(crd_path: Path, version: str = "v1") -> dict[str, Any]:
    """The openAPIV3Schema of one served version of a CustomResourceDefinition file (cached: do not mutate)."""
    crd = yaml.load(crd_path.read_text(), Loader=YAML_LOADER)
    for served in crd["spec"]["versions"]:
        if served["name"] == version:
            return served["schema"]["openAPIV3Schema"]
    raise KeyError(f"{crd_path} has no version {version!r}")


def rayservice_crd_schema(kuberay_version: str = SHIPPED_KUBERAY_VERSION) -> dict[str, Any]:
    """The ray.io/v1 RayService schema, as the KubeRay operator installs it."""
    return crd_schema(kuberay_dir(kuberay_version) / "ray.io_rayservices.yaml")


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON-schema copy of a CRD's OpenAPI schema in which unknown fields are errors.

    - an object with `properties` and neither `additionalProperties` nor
      `x-kubernetes-preserve-unknown-fields` gets `additionalProperties: false`;
    - `x-kubernetes-int-or-string` accepts an integer or a string;
    - `nullable: true` admits null, as the API server does.
    """

    def close(node: dict[str, Any]) -> dict[str, Any]:
        closed = dict(node)
        # Recurse only where a schema sits: `properties` maps field names (not keywords) to schemas.
        if "properties" in node:
            closed["properties"] = {name: close(field) for name, field in node["properties"].items()}
        for keyword in ("items", "additionalProperties", "not"):
            if isinstance(node.get(keyword), dict):
                closed[keyword] = close(node[keyword])
        for keyword in ("anyOf", "allOf", "oneOf"):
            if keyword in node:
                closed[keyword] = [close(branch) for branch in node[keyword]]
        if (
            "properties" in node
            and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")
        ):
            closed["additionalProperties"] = False
        if node.get("x-kubernetes-int-or-string") and "anyOf" not in node:
            closed.pop("type", None)
            closed["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        if node.get("nullable") and isinstance(node.get("type"), str):
            closed["type"] = [node["type"], "null"]
        return closed

    return close(schema)


def _kubernetes_schema_dir(kubernetes_version: str) -> str:
    return f"kubernetes-json-schema/v{kubernetes_version}.0-local-strict"


@cache
def _kubernetes_definitions(kubernetes_version: str) -> Registry:
    """kubernetes-validate's shared definitions (ObjectMeta, PodSpec, ...) as a `$ref` registry."""
    path = resources.files("kubernetes_validate") / _kubernetes_schema_dir(kubernetes_version) / "_definitions.json"
    definitions = Resource.from_contents(json.loads(path.read_text()))
    return definitions @ Registry()


@cache
def custom_resource_validator(
    crd_path: Path, version: str = "v1", kubernetes_version: str = KUBERNETES_SCHEMA_VERSION
) -> jsonschema.Validator:
    """Validates a custom resource of one CRD file strictly; its metadata is held to Kubernetes' ObjectMeta."""
    schema = strict_schema(crd_schema(crd_path, version))
    # A CRD says only `metadata: {type: object}`: the API server checks it as ObjectMeta.
    schema["properties"]["metadata"] = {"$ref": OBJECT_META_REF}
    return jsonschema.Draft202012Validator(schema, registry=_kubernetes_definitions(kubernetes_version))


def rayservice_validator(
    kuberay_version: str = SHIPPED_KUBERAY_VERSION, kubernetes_version: str = KUBERNETES_SCHEMA_VERSION
) -> jsonschema.Validator:
    """Validates a RayService manifest, as the KubeRay operator's CRD defines it."""
    return custom_resource_validator(kuberay_dir(kuberay_version) / "ray.io_rayservices.yaml", "v1", kubernetes_version)


def raycluster_errors(
    manifest: dict[str, Any],
    kuberay_version: str = SHIPPED_KUBERAY_VERSION,
    kubernetes_version: str = KUBERNETES_SCHEMA_VERSION,
) -> list[str]:
    """Every violation of a RayCluster manifest of the operator's RayCluster CRD, unknown fields rejected."""
    crd = kuberay_dir(kuberay_version) / "ray.io_rayclusters.yaml"
    return schema_errors(custom_resource_validator(crd, "v1", kubernetes_version), manifest)


def _located(error: jsonschema.ValidationError) -> str:
    """`path.to.field: message`, the way a reviewer finds it in the YAML."""
    return f"{'.'.join(map(str, error.absolute_path)) or '<root>'}: {error.message}"


def schema_errors(validator: jsonschema.Validator, instance: Any) -> list[str]:
    """Every violation, in document order; empty when the instance is valid."""
    errors = sorted(validator.iter_errors(instance), key=lambda error: list(map(str, error.absolute_path)))
    return [_located(error) for error in errors]


def rayservice_errors(
    manifest: dict[str, Any],
    kuberay_version: str = SHIPPED_KUBERAY_VERSION,
    kubernetes_version: str = KUBERNETES_SCHEMA_VERSION,
) -> list[str]:
    return schema_errors(rayservice_validator(kuberay_version, kubernetes_version), manifest)


def core_object_errors(obj: dict[str, Any], kubernetes_version: str = KUBERNETES_SCHEMA_VERSION) -> list[str]:
    """The first violation of a built-in object (Namespace, Secret, Service, ...) of Kubernetes' strict schema."""
    try:
        kubernetes_validate.validate(obj, kubernetes_version, strict=True)
    except kubernetes_validate.ValidationError as error:
        return [_located(error)]
    return []
