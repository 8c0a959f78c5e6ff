"""The policy pack as the Pulumi CLI loads it: its manifest, entry point, metadata and documentation."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2
from pulumi.runtime import proto
from pulumi.runtime.proto import analyzer_pb2_grpc
from pulumi_policy import EnforcementLevel, StackValidationPolicy

from policy.ray_llm_policies.pack import PACK_NAME, POLICIES
from tests.policy_engine import OfflinePolicyEngine
from tools.project import PROJECT_DIR

POLICY_DIR = PROJECT_DIR / "policy"
POLICY_DOC = PROJECT_DIR / "docs" / "policy.md"
TABLE_ROW = re.compile(r"^\| `(?P<name>[a-z0-9-]+)` \| (?P<level>mandatory|advisory) \|", re.MULTILINE)


def test_manifest_runs_the_pack_from_its_own_virtualenv() -> None:
    manifest = yaml.safe_load((POLICY_DIR / "PulumiPolicy.yaml").read_text())
    assert manifest["runtime"]["name"] == "python"
    assert manifest["runtime"]["options"]["virtualenv"] == "venv"
    assert re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    assert manifest["description"]


def test_entry_point_only_builds_the_pack() -> None:
    """Constructing PolicyPack serves gRPC and blocks: __main__.py does that and nothing else."""
    module = ast.parse((POLICY_DIR / "__main__.py").read_text())
    statements = [s for s in module.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
    docstring, call = statements
    assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)
    assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
    assert ast.unparse(call) == "PolicyPack(name=PACK_NAME, policies=POLICIES)"


def test_pack_stands_alone() -> None:
    """The CLI runs the pack in policy/venv, from policy/: it may import only itself and its requirements."""
    requirements = (POLICY_DIR / "requirements.txt").read_text()
    for requirement in ("pulumi-policy==", "pyyaml=="):
        assert requirement in requirements
    for path in (POLICY_DIR / "ray_llm_policies").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = [(node.module or "").split(".")[0]]
            else:
                continue
            assert not {"infra", "policy", "tests", "tools"} & set(roots), f"{path.name} imports {roots}"


@pytest.fixture(scope="module")
def analyzer_info() -> proto.AnalyzerInfo:
    return OfflinePolicyEngine(PACK_NAME, POLICIES).analyzer_info()


@pytest.fixture(scope="module")
def served_pack() -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """The pack started the way the CLI's policy launcher starts it: `python -m pulumi.policy <engine> .`
    in policy/. It prints its gRPC port, then serves until stopped."""
    server = subprocess.Popen(
        [sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:0", "."],
        cwd=POLICY_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = server.stdout.readline().strip()
        if not port.isdigit():
            pytest.fail(f"the pack did not start:\n{server.communicate(timeout=30)[1]}")
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield analyzer_pb2_grpc.AnalyzerStub(channel)
    finally:
        server.kill()
        server.wait()


def test_pack_serves_the_policies_as_the_cli_starts_it(
    served_pack: analyzer_pb2_grpc.AnalyzerStub, analyzer_info: proto.AnalyzerInfo
) -> None:
    served = served_pack.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    assert served == analyzer_info


def test_pack_metadata_as_the_cli_reads_it(analyzer_info: proto.AnalyzerInfo) -> None:
    assert analyzer_info.name == PACK_NAME
    names = [policy.name for policy in analyzer_info.policies]
    assert len(names) == len(set(names))
    assert all(policy.description for policy in analyzer_info.policies)
    kinds = {policy.name: policy.policy_type for policy in analyzer_info.policies}
    for policy in POLICIES:
        expected = (
            proto.PolicyType.POLICY_TYPE_STACK
            if isinstance(policy, StackValidationPolicy)
            else proto.PolicyType.POLICY_TYPE_RESOURCE
        )
        assert kinds[policy.name] == expected


def test_every_policy_states_its_level() -> None:
    """No policy inherits the pack default: its level is part of what it means."""
    assert all(
        policy.enforcement_level in (EnforcementLevel.MANDATORY, EnforcementLevel.ADVISORY) for policy in POLICIES
    )


def test_documented_table_matches_the_pack() -> None:
    documented = {row["name"]: row["level"] for row in TABLE_ROW.finditer(POLICY_DOC.read_text())}
    assert documented == {policy.name: policy.enforcement_level.value for policy in POLICIES}
