"""The rigs' layout: every function reads in one screen, as the product's (tests/test_layout.py); the GPU smoke
package's modules by job, each importing only the jobs before it."""

from __future__ import annotations

import ast
import re

import pytest

from tests.test_layout import imported_modules, long_functions
from tools.project import PROJECT_DIR

SMOKE = PROJECT_DIR / "lab" / "smoke"


def smoke_job_order() -> list[str]:
    """The smoke package's modules in the order its docstring gives them, each importing only those before it."""
    docstring = ast.get_docstring(ast.parse((SMOKE / "__init__.py").read_text())) or ""
    paragraph = docstring.split("The package by job", 1)[1].split("\n\n", 1)[0]
    return [name for name in re.findall(r"`(\w+)`", paragraph) if name != "__main__"]


def test_the_smoke_packages_docstring_orders_every_module():
    modules = sorted(path.stem for path in SMOKE.glob("*.py") if not path.stem.startswith("__"))
    assert sorted(smoke_job_order()) == modules


@pytest.mark.parametrize("module", smoke_job_order())
def test_a_smoke_module_imports_only_the_jobs_before_it(module):
    order = smoke_job_order()
    imported = {
        name.removeprefix("lab.smoke.")
        for name in imported_modules(SMOKE / f"{module}.py")
        if name.startswith("lab.smoke.")
    }
    # `from lab.smoke import deploy` names the module in its alias, not in `node.module`
    imported |= {
        alias.name
        for node in ast.walk(ast.parse((SMOKE / f"{module}.py").read_text()))
        if isinstance(node, ast.ImportFrom) and node.module == "lab.smoke"
        for alias in node.names
    }
    assert imported - set(order[: order.index(module)]) == set()


def test_every_function_of_the_rigs_reads_in_one_screen():
    """No function of lab/ outside its tests over 60 lines."""
    rigs = [path for path in (PROJECT_DIR / "lab").rglob("*.py") if "tests" not in path.relative_to(PROJECT_DIR).parts]
    assert long_functions(PROJECT_DIR, rigs) == set()
