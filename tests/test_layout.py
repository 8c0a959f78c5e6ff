"""The layout keeps the stack apart from its tools: `pulumi up` imports infra/, which never imports tools/ or tests/."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pulumi
import pytest

from tools.offline import run_stack
from tools.project import PROJECT_DIR

STACK_MODULES = sorted([*(PROJECT_DIR / "infra").glob("*.py"), PROJECT_DIR / "__main__.py"])
NOT_FOR_THE_STACK = ("tools", "tests")


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
    return modules


@pytest.mark.parametrize("path", STACK_MODULES, ids=lambda path: str(path.relative_to(PROJECT_DIR)))
def test_the_stack_never_imports_the_tools_or_the_tests(path):
    leaks = {module for module in imported_modules(path) if module.split(".")[0] in NOT_FOR_THE_STACK}
    assert leaks == set()


def test_the_scan_sees_the_stacks_own_imports():
    assert "infra.stack" in imported_modules(PROJECT_DIR / "__main__.py")


def test_the_pure_builders_load_without_the_cloud_sdks():
    """The RayService and serve-config builders take their scheduling facts from infra.scheduling, not from the
    node groups, so they load (in tools, in a GitOps pipeline) without pulumi_aws or pulumi_eks."""
    probe = (
        "import sys, infra.rayservice, infra.serve_config, infra.scheduling; "
        "print(sorted(m for m in ('pulumi_aws', 'pulumi_eks', 'pulumi_kubernetes') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT_DIR, capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


def test_no_component_takes_the_projects_config():
    """Components take typed args (infra/stack.py builds them), so another stack can reuse them."""
    components = [
        member
        for path in STACK_MODULES
        if path.parent.name == "infra"
        for member in vars(importlib.import_module(f"infra.{path.stem}")).values()
        if isinstance(member, type)
        and issubclass(member, pulumi.ComponentResource)
        and member.__module__.startswith("infra.")
    ]
    assert {component.__name__ for component in components} >= {"Network", "Cluster", "GpuNodes", "Serving"}
    for component in components:
        assert "StackConfig" not in str(inspect.signature(component.__init__)), component.__name__


def test_the_readme_reuse_example_declares_its_own_gpu_nodes(tmp_path):
    readme = (PROJECT_DIR / "README.md").read_text()
    example = readme.split("```python\n# reuse example", 1)[1].split("\n", 1)[1].split("```", 1)[0]
    program = tmp_path / "__main__.py"
    program.write_text(example)
    run = run_stack({"aws:region": "us-east-1"}, program_file=program)
    node_group = run.get("eks:index:ManagedNodeGroup", "p5-nodes-gpu")
    assert node_group.inputs["nodeGroupName"] == "p5"
    assert node_group.inputs["instanceTypes"] == ["p5.48xlarge"]
    # p5.48xlarge's 32 EFA interfaces, as EC2 describes the type (tools/instance_type_facts.py), asked of no caller.
    assert len(run.get("aws:ec2/launchTemplate:LaunchTemplate", "p5-nodes-gpu").inputs["networkInterfaces"]) == 32
    assert run.get("eks:index:Cluster", "research-eks").inputs["name"] == "research"
    assert run.outputs == {"gpuNodeGroupName": "p5"}
