"""Runs the policy pack without the Pulumi CLI, through the analyzer service the CLI talks to.

pulumi_policy's analyzer servicer, which `PolicyPack(...)` serves over gRPC, is called in-process with the requests
the engine sends during `pulumi preview --policy-pack`, marshalled the engine's way, so what a policy sees here is
what it sees under the CLI (docs/policy.md#how-the-pack-is-tested)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime import proto
from pulumi_policy import EnforcementLevel, Policy
from pulumi_policy.deserialize import SPECIAL_SECRET_SIG, SPECIAL_SIG_KEY
from pulumi_policy.policy import _PolicyAnalyzerServicer

PROVIDER_TYPE_PREFIX = "pulumi:providers:"
# What PolicyPack itself reports; the CLI shows PulumiPolicy.yaml's version instead.
PACK_VERSION = "0.0.1"
_LEVELS = {
    proto.ADVISORY: EnforcementLevel.ADVISORY,
    proto.MANDATORY: EnforcementLevel.MANDATORY,
    proto.REMEDIATE: EnforcementLevel.REMEDIATE,
    proto.DISABLED: EnforcementLevel.DISABLED,
}


def secret(value: Any) -> dict[str, Any]:
    """A property value marked secret, as the engine sends it to analyzers."""
    return {SPECIAL_SIG_KEY: SPECIAL_SECRET_SIG, "value": value}


@dataclass(frozen=True)
class EngineResource:
    """A resource as the engine describes it to a policy pack: `properties` are its inputs for
    `Analyze` and its outputs for `AnalyzeStack`."""

    type: str
    name: str
    urn: str
    properties: Mapping[str, Any] = field(default_factory=dict)
    parent: str = ""
    dependencies: tuple[str, ...] = ()


@dataclass(frozen=True)
class Violation:
    policy: str
    level: EnforcementLevel
    message: str
    urn: str


def _struct(properties: Mapping[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(dict(properties))
    return message


class OfflinePolicyEngine:
    """The engine's side of the analyzer protocol, for one policy pack."""

    def __init__(self, pack_name: str, policies: Iterable[Policy]) -> None:
        # The pack-level default applies to a policy without its own level, as in PolicyPack.
        self._servicer = _PolicyAnalyzerServicer(pack_name, PACK_VERSION, list(policies), EnforcementLevel.ADVISORY)

    def analyzer_info(self) -> Any:
        """The pack's metadata as the CLI reads it (policy names, levels, descriptions)."""
        return self._servicer.GetAnalyzerInfo(empty_pb2.Empty(), None)

    def analyze(self, resource: EngineResource) -> list[Violation]:
        request = proto.AnalyzeRequest(
            type=resource.type, name=resource.name, urn=resource.urn, properties=_struct(resource.properties)
        )
        return self._violations(self._servicer.Analyze(request, None), default_urn=resource.urn)

    def analyze_stack(self, resources: Iterable[EngineResource]) -> list[Violation]:
        request = proto.AnalyzeStackRequest(
            resources=[
                proto.AnalyzerResource(
                    type=resource.type,
                    name=resource.name,
                    urn=resource.urn,
                    properties=_struct(resource.properties),
                    parent=resource.parent,
                    dependencies=list(resource.dependencies),
                )
                for resource in resources
                if not resource.type.startswith(PROVIDER_TYPE_PREFIX)
            ]
        )
        return self._violations(self._servicer.AnalyzeStack(request, None), default_urn="")

    def preview(self, inputs: Iterable[EngineResource], outputs: Iterable[EngineResource]) -> list[Violation]:
        """Every violation a preview reports: each resource's inputs analyzed, then the whole stack's outputs."""
        found = [violation for resource in inputs for violation in self.analyze(resource)]
        return found + self.analyze_stack(outputs)

    @staticmethod
    def _violations(response: Any, default_urn: str) -> list[Violation]:
        return [
            Violation(
                policy=diagnostic.policyName,
                level=_LEVELS[diagnostic.enforcementLevel],
                message=diagnostic.message,
                urn=diagnostic.urn or default_urn,
            )
            for diagnostic in response.diagnostics
        ]
