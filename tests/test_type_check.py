"""CI type-checks infra/ and tools/ with mypy, under a configuration strict enough to refuse an Optional passed where
a value is declared (issue 20: a `Topology | None` reached `StackConfig.topology: Topology`)."""

from __future__ import annotations

import subprocess
import sys

import yaml

from tools.project import PROJECT_DIR

CHECK = "./.venv-test/bin/mypy"


def mypy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(PROJECT_DIR / "pyproject.toml"), *args],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_ci_runs_the_type_check_before_the_tests():
    lines = (PROJECT_DIR / ".ci" / "run").read_text().splitlines()
    (check,) = [i for i, line in enumerate(lines) if line.split("#")[0].strip() == CHECK]
    assert check < min(i for i, line in enumerate(lines) if line.startswith("./.venv-test/bin/python -m pytest"))
    steps = yaml.safe_load((PROJECT_DIR / ".github" / "workflows" / "preview.yml").read_text())["jobs"]["tests"][
        "steps"
    ]
    runs = [step.get("run", "") for step in steps]
    (check,) = [i for i, run in enumerate(runs) if run.strip() == ".venv-test/bin/mypy"]
    assert check < min(i for i, run in enumerate(runs) if "pytest" in run)


def test_an_optional_passed_where_a_value_is_declared_is_refused(tmp_path):
    """mypy's `arg-type` error under strict_optional (https://mypy.readthedocs.io/en/stable/kinds_of_types.html#
    optional-types-and-the-none-type), with the project's configuration and its own infra.settings.topology."""
    program = tmp_path / "optional_topology.py"
    program.write_text(
        "from infra.settings.topology import Topology\n\n\n"
        "def nodes(topology: Topology) -> int:\n    return topology.gpu_nodes\n\n\n"
        "def plan(topology: Topology | None) -> int:\n    return nodes(topology)\n"
    )
    checked = mypy(str(program))
    assert checked.returncode == 1
    assert 'Argument 1 to "nodes" has incompatible type "Topology | None"; expected "Topology"  [arg-type]' in (
        checked.stdout
    )


def test_an_unannotated_tool_function_is_refused(tmp_path):
    """disallow_untyped_defs: every function of infra/ and tools/ says what it takes and returns."""
    program = tmp_path / "untyped.py"
    program.write_text("def shape(name):\n    return name\n")
    checked = mypy(str(program))
    assert checked.returncode == 1
    assert "Function is missing a type annotation  [no-untyped-def]" in checked.stdout
