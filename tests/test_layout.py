"""The layout keeps the stack apart from its tools: `pulumi up` imports infra/, which never imports tools/ or tests/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

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
