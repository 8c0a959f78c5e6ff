"""The README stays true: its first screen has the set-up, test and deploy commands, the configuration table it
links (docs/configuration.md) is Pulumi.yaml's, and its Layout section names what the repository holds."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from infra.settings.config import API_ALLOW_LIST_COMMAND
from tools.config_reference import REFERENCE_PAGE, WRITE_COMMAND, markdown_table
from tools.offline import load_stack_config
from tools.project import PROJECT_DIR, replace_generated_block

README = (PROJECT_DIR / "README.md").read_text()
FIRST_SCREEN = "\n".join(README.splitlines()[:25])
FIRST_DEPLOY = README.split("## Prerequisites and first deploy", 1)[1].split("\n## ", 1)[0]
LAYOUT = README.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]


def test_first_screen_shows_the_deploy_command():
    assert "pulumi up --stack dev" in FIRST_SCREEN


def test_first_deploy_gives_the_api_allow_list_command_the_program_asks_for():
    """No shipped stack carries an API allow-list; the command the config error names is the first deploy's, word
    for word."""
    assert API_ALLOW_LIST_COMMAND in FIRST_DEPLOY


def test_first_screen_shows_the_test_command_ci_runs():
    """.ci/run ends with the product's suite, the first screen's command, then the lab's, the README's Testing."""
    ci_lines = (PROJECT_DIR / ".ci" / "run").read_text().rstrip().splitlines()
    product, lab = "./.venv-test/bin/python -m pytest", "./.venv-test/bin/python -m pytest lab/tests"
    assert product in FIRST_SCREEN
    assert ci_lines[-2:] == [product, lab]
    assert lab in README


def test_config_table_is_generated_from_pulumi_yaml():
    """The table is where the README sends a user to look a key up (docs/configuration.md); a stale one names the
    command that rewrites it, not a diff of the whole page."""
    if markdown_table() not in REFERENCE_PAGE.read_text():
        pytest.fail(f"docs/configuration.md's configuration table is stale: run {WRITE_COMMAND}", pytrace=False)


def test_writing_a_generated_block_replaces_only_the_block(tmp_path):
    """What `--write` does (tools.config_reference, tools.change_reference): a stale table between the markers
    becomes the generated one, and the text around it stays as it was."""
    table = markdown_table()
    begin, end = table.splitlines()[0], table.splitlines()[-1]
    readme = tmp_path / "README.md"
    readme.write_text(f"# intro\n\n{begin}\n| stale | row |\n{end}\n\nafter\n")
    replace_generated_block(readme, table)
    assert readme.read_text() == f"# intro\n\n{table}\n\nafter\n"


def _top_level_entries() -> set[str]:
    """What a clone holds at the top: git's tracked and untracked-but-not-ignored files (its own ignore rules,
    .gitignore and .git/info/exclude alike), so local venvs and caches never count."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {line.split("/", 1)[0] for line in listed.splitlines()}


def test_layout_names_every_top_level_entry():
    """A user's own stack file (`Pulumi.<stack>.yaml`, "add a stack by adding a file") needs no line of its own."""
    entries = sorted(name for name in _top_level_entries() if not Path(name).match("Pulumi.*.yaml"))
    assert [name for name in entries if name not in LAYOUT] == []


def modules_and_packages(folder: Path, *, nested: bool) -> list[str]:
    """A folder's modules (`name`) and packages (`name/`), with each package's own modules when `nested`."""
    names = []
    for path in sorted(folder.iterdir()):
        if path.is_dir() and (path / "__init__.py").is_file():
            names += [f"{path.name}/", *(modules_and_packages(path, nested=True) if nested else [])]
        elif path.suffix == ".py" and path.stem != "__init__":
            names.append(path.stem)
    return names


def test_layout_names_every_package_and_module_of_infra():
    """infra/ is one package per part of the architecture (settings/, network/, ...) beside components.py and
    stack.py; the Layout names each package and each module in it."""
    names = modules_and_packages(PROJECT_DIR / "infra", nested=True)
    assert {"settings/", "serving/", "rayservice", "components", "stack"} <= set(names)
    assert [name for name in names if name not in LAYOUT] == []


def test_layout_names_every_tool():
    """A tool is a module (`render`) or a package (`smoke/`) run with `python -m tools.<name>`."""
    names = modules_and_packages(PROJECT_DIR / "tools", nested=False)
    assert [name for name in names if name not in LAYOUT] == []


def test_modules_and_packages_finds_a_package_and_its_modules(tmp_path):
    (tmp_path / "part").mkdir()
    for name in ("__init__.py", "top.py", "part/__init__.py", "part/inner.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "data").mkdir()  # no __init__.py: not a package
    assert modules_and_packages(tmp_path, nested=True) == ["part/", "inner", "top"]
    assert modules_and_packages(tmp_path, nested=False) == ["part/", "top"]


def test_layout_names_the_tests_support_modules():
    support = sorted(
        path.stem
        for path in (PROJECT_DIR / "tests").glob("*.py")
        if not path.stem.startswith("test_") and path.stem not in {"__init__", "conftest"}
    )
    assert [module for module in support if module not in LAYOUT] == []


def test_first_screen_and_quota_line_describe_the_dev_stack():
    """What the first screen promises (Kubernetes version, GPU nodes) and the quota a new user needs are the
    dev stack's own values, so `pulumi up --stack dev` deploys what the README says."""
    cfg = load_stack_config(stack="dev")
    node = cfg.topology.node
    count = {1: "one", 2: "two", 3: "three", 4: "four"}[cfg.gpu_node_count]
    assert f"an EKS {cfg.kubernetes_version} cluster, {count} EFA-enabled {cfg.gpu_node_type} GPU nodes" in FIRST_SCREEN
    need = f"{cfg.gpu_node_count} \u00d7 {cfg.gpu_node_type} On-Demand ({cfg.gpu_node_count * node.vcpus} vCPUs"
    assert need in FIRST_DEPLOY


def test_first_screen_sets_the_clone_up_with_the_script_ci_installs_with():
    """The operator tools' commands (README and docs/) run from .venv-tools and the test command from .venv-test,
    both made by ./setup.sh (tests/test_setup.py runs it); .ci/run installs with the same script."""
    docs = [README, *(path.read_text() for path in (PROJECT_DIR / "docs").rglob("*.md"))]
    assert any("./.venv-tools/bin/python -m tools." in text for text in docs)
    assert "\n./setup.sh " in FIRST_SCREEN
    assert "\n./setup.sh test node redis\n" in (PROJECT_DIR / ".ci" / "run").read_text()
