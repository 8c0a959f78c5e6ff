"""docs/layout.md, the repository's module list, names what the repository holds: every top-level entry, every
package and module of infra/, every tool and every support module of the tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tools.project import PROJECT_DIR

# The page's module list: its one code block, so the page's prose names nothing for it.
LAYOUT = (PROJECT_DIR / "docs" / "layout.md").read_text().split("\n```\n", 2)[1]


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
