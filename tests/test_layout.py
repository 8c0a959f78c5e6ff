"""The layout: `pulumi up` imports infra/, which never imports tools/ or tests/; inside infra/ each part imports only
the parts below it, as its docstring's `Imports:` line says (infra/__init__.py lists the parts)."""

from __future__ import annotations

import ast
import graphlib
import importlib
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pulumi
import pytest

from tools.offline import run_stack
from tools.project import PROJECT_DIR

INFRA = PROJECT_DIR / "infra"
PROGRAM_MODULES = [*INFRA.rglob("*.py"), PROJECT_DIR / "__main__.py"]
NOT_FOR_THE_STACK = ("tools", "tests")
# The parts of infra/: its packages, and the one module beside them that the components share.
PARTS = sorted([*(path.parent.name for path in INFRA.glob("*/__init__.py")), "components"])
TOP = "stack"  # infra/stack.py declares the whole stack from every part; no part imports it


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
            if node.module == "infra":  # `from infra import x`: x may be a package of infra/ (or PROJECT_DIR)
                modules.update(f"infra.{alias.name}" for alias in node.names)
    return modules


# The policy pack's standard-library rules the program shares with it (one home for each rule: docs/policy.md).
SHARED_RULES = sorted(
    {PROJECT_DIR / "policy" / "ray_llm_policies" / "__init__.py"}
    | {
        PROJECT_DIR / Path(*module.split(".")).with_suffix(".py")
        for path in PROGRAM_MODULES
        for module in imported_modules(path)
        if module.startswith("policy.ray_llm_policies.")
    }
)
STACK_MODULES = sorted([*PROGRAM_MODULES, *SHARED_RULES])


def part_of(module: str) -> str | None:
    """The part of infra/ that a dotted module name is in; None for infra itself and anything outside it."""
    names = module.split(".")
    return names[1] if names[0] == "infra" and len(names) > 1 and names[1] in [*PARTS, TOP] else None


def declared_imports(part: str) -> set[str]:
    """The parts a part's docstring allows it to import (`Imports: infra.a, infra.b.` or `nothing else of infra/.`)."""
    source = INFRA / part / "__init__.py" if (INFRA / part).is_dir() else INFRA / f"{part}.py"
    docstring = ast.get_docstring(ast.parse(source.read_text())) or ""
    lines = [line for line in docstring.splitlines() if line.startswith("Imports:")]
    assert len(lines) == 1, f"{source.relative_to(PROJECT_DIR)} says in one `Imports:` line what it may import"
    named = lines[0].removeprefix("Imports:").strip().rstrip(".")
    return (
        set()
        if named == "nothing else of infra/"
        else {name.strip().removeprefix("infra.") for name in named.split(",")}
    )


def parts_imported(path: Path) -> set[str]:
    own = path.relative_to(INFRA).parts[0].removesuffix(".py")
    return {part for module in imported_modules(path) if (part := part_of(module)) not in (None, own)}


@pytest.mark.parametrize("path", STACK_MODULES, ids=lambda path: str(path.relative_to(PROJECT_DIR)))
def test_the_stack_never_imports_the_tools_or_the_tests(path):
    leaks = {module for module in imported_modules(path) if module.split(".")[0] in NOT_FOR_THE_STACK}
    assert leaks == set()


# The product: the program, the code its cluster runs, the policy pack, the operator tools and their tests (the files
# git holds or would add there, so policy/venv and node_modules are not read).
PRODUCT = ("__main__.py", "infra", "serve_ext", "policy", "tools", "tests")
PRODUCT_MODULES = [
    PROJECT_DIR / name
    for name in subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", *PRODUCT],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    if name.endswith(".py")
]


@pytest.mark.parametrize("path", PRODUCT_MODULES, ids=lambda path: str(path.relative_to(PROJECT_DIR)))
def test_the_product_never_imports_the_lab(path):
    """lab/ measures the product and may import it; the product never depends on a rig (docs/testing.md#the-lab)."""
    assert {module for module in imported_modules(path) if module.split(".")[0] == "lab"} == set()


def test_the_lab_scan_sees_a_lab_import(tmp_path):
    module = tmp_path / "uses_lab.py"
    module.write_text("import lab.cold_start\nfrom lab import tiny_model\nfrom tools import render\n")
    assert {name for name in imported_modules(module) if name.split(".")[0] == "lab"} == {"lab.cold_start", "lab"}


def test_the_scan_sees_the_stacks_own_imports():
    assert "infra.stack" in imported_modules(PROJECT_DIR / "__main__.py")


def test_the_scan_sees_a_part_import_another():
    assert parts_imported(INFRA / "serving" / "rayservice.py") == {"kube", "settings"}


def test_infra_is_its_architectures_parts():
    """Each box of the README's architecture has its package; infra/__init__.py names them all."""
    assert PARTS == [
        "cluster",
        "components",
        "kube",
        "network",
        "nodes",
        "observability",
        "preflight",
        "serving",
        "settings",
    ]
    listed = ast.get_docstring(ast.parse((INFRA / "__init__.py").read_text())) or ""
    assert [part for part in [*PARTS, TOP] if f"`{part}" not in listed] == []


@pytest.mark.parametrize("part", PARTS)
def test_a_part_may_import_only_parts(part):
    assert declared_imports(part) - set(PARTS) == set()


def test_the_parts_import_one_way():
    """The allowed imports form no cycle: the Kubernetes facts at the bottom, the settings on them, the stack at the
    top, each part above what it uses."""
    order = list(graphlib.TopologicalSorter({part: declared_imports(part) for part in PARTS}).static_order())
    assert order[:2] == ["kube", "settings"]
    assert declared_imports("kube") == set()
    assert declared_imports("settings") == {"kube"}


@pytest.mark.parametrize(
    "path",
    sorted(path for path in INFRA.rglob("*.py") if path.parent != INFRA or path.stem not in (TOP, "__init__")),
    ids=lambda path: str(path.relative_to(PROJECT_DIR)),
)
def test_a_module_imports_only_what_its_part_allows(path):
    part = path.relative_to(INFRA).parts[0].removesuffix(".py")
    assert parts_imported(path) - declared_imports(part) == set()


def test_the_pure_builders_load_without_the_cloud_sdks():
    """The RayService and serve-config builders take their scheduling facts from infra.kube.scheduling, not from the
    node groups, so they load (in tools, in a GitOps pipeline) without pulumi_aws or pulumi_eks."""
    probe = (
        "import sys, infra.serving.rayservice, infra.serving.serve_config, infra.kube.scheduling; "
        "print(sorted(m for m in ('pulumi_aws', 'pulumi_eks', 'pulumi_kubernetes') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT_DIR, capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(PROJECT_DIR).with_suffix("").parts).removesuffix(".__init__")


def test_no_component_takes_the_projects_config():
    """Components take typed args (infra/stack.py builds them), so another stack can reuse them."""
    components = [
        member
        for path in STACK_MODULES
        if path.parent != PROJECT_DIR
        for member in vars(importlib.import_module(module_name(path))).values()
        if isinstance(member, type)
        and issubclass(member, pulumi.ComponentResource)
        and member.__module__.startswith("infra.")
    ]
    assert {component.__name__ for component in components} >= {"Network", "Cluster", "GpuNodes", "Serving"}
    for component in components:
        assert "StackConfig" not in str(inspect.signature(component.__init__)), component.__name__


def test_the_reuse_example_declares_its_own_gpu_nodes(tmp_path):
    """docs/architecture.md's example of the components in another project's stack."""
    page = (PROJECT_DIR / "docs" / "architecture.md").read_text()
    example = page.split("```python\n# reuse example", 1)[1].split("\n", 1)[1].split("```", 1)[0]
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


# Functions longer than a screen that are tables: one row per dashboard panel, one entry per alert rule.
LONG_TABLES = {("infra/observability/dashboards.py", "_rows"), ("infra/observability/alerts.py", "alert_rules")}
MAX_FUNCTION_LINES = 60


def long_functions(root: Path, paths: list[Path]) -> set[tuple[str, str]]:
    return {
        (str(path.relative_to(root)), node.name)
        for path in paths
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    }


def test_every_function_of_the_program_and_its_tools_reads_in_one_screen():
    """No function in infra/ or tools/ over 60 lines, unless it is one of the tables named here."""
    paths = sorted([*INFRA.rglob("*.py"), *(PROJECT_DIR / "tools").rglob("*.py")])
    assert long_functions(PROJECT_DIR, paths) == LONG_TABLES


# Issue 50: a module of the product (its tests aside) that a new engineer reads in one sitting.
MAX_MODULE_LINES = 700


def test_no_product_module_is_over_700_lines():
    paths = [path for path in PRODUCT_MODULES if path.relative_to(PROJECT_DIR).parts[0] != "tests"]
    longer = {
        str(p.relative_to(PROJECT_DIR)): n for p in paths if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert longer == {}


def test_the_length_check_counts_a_functions_lines(tmp_path):
    module = tmp_path / "long.py"
    body = "x = 1\n" * (MAX_FUNCTION_LINES - 1)  # after the def line: 60 lines in all
    fits = "def fits():\n" + textwrap.indent(body, " " * 4)
    too_long = "    def too_long(self):\n" + textwrap.indent(body + "pass\n", " " * 8)
    module.write_text(f"{fits}\n\nclass Holder:\n{too_long}")
    assert long_functions(tmp_path, [module]) == {("long.py", "too_long")}
