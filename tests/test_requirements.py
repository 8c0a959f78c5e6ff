"""Dependencies by purpose: `pulumi up` installs only what infra/ imports; what CI installs is pinned exactly."""

from __future__ import annotations

import re
import sys
from importlib import metadata
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.test_layout import STACK_MODULES, imported_modules
from tools.project import PROJECT_DIR, project_file

# What CI installs (.ci/run and the workflow): the test requirements and every file they include.
CI_INSTALLED = [
    "requirements.txt",
    "requirements-tools.txt",
    "requirements-test.txt",
    "requirements-s3.txt",
    "requirements-netpol.txt",
    "policy/requirements.txt",
]
PINNED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[a-z0-9,]+\])?==[0-9][0-9A-Za-z.+-]*$")


def requirement_lines(name: str) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in (PROJECT_DIR / name).read_text().splitlines())
    return [line for line in lines if line]


def distribution(requirement: str) -> str:
    return re.split(r"[\[=]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def third_party_imports(path: Path) -> set[str]:
    packages = {module.split(".")[0] for module in imported_modules(path)}
    return {package for package in packages if package not in sys.stdlib_module_names | {"infra", "policy"}}


@pytest.mark.parametrize("name", CI_INSTALLED)
def test_what_ci_installs_is_pinned_exactly(name):
    for line in requirement_lines(name):
        assert line.startswith("-r ") or PINNED.match(line), f"{name}: {line!r} is not NAME==VERSION"


def test_pulumi_up_installs_exactly_what_the_program_imports():
    """With `toolchain: pip` and `virtualenv: venv` (Pulumi.yaml), the CLI installs requirements.txt into ./venv
    before running the program (https://www.pulumi.com/docs/iac/languages-sdks/python/, the `virtualenv` runtime
    option), so it holds
    what infra/ imports and nothing else: no Ray, torch or test tools in the deploy venv."""
    dists = packages_distributions()
    imported = {
        dists[module][0].lower().replace("_", "-") for path in STACK_MODULES for module in third_party_imports(path)
    }
    assert {distribution(line) for line in requirement_lines("requirements.txt")} == imported


def test_the_test_venv_is_not_the_one_pulumi_runs_from():
    """The venvs ./setup.sh makes (for .ci/run too) are checked by tests/test_setup.py; all of them are ignored."""
    deploy_venv = project_file()["runtime"]["options"]["virtualenv"]
    ignored = (PROJECT_DIR / ".gitignore").read_text().splitlines()
    assert {f"{deploy_venv}/", ".venv-test/", ".venv-tools/"} <= set(ignored)


def test_the_workflow_and_ci_install_the_tests_with_the_readmes_set_up():
    """The pull-request workflow and .ci/run install through ./setup.sh's test part (tests/test_setup.py runs it), so
    neither can drift from the README's set-up."""
    workflow = yaml.safe_load((PROJECT_DIR / ".github" / "workflows" / "preview.yml").read_text())
    runs = [step.get("run", "") for step in workflow["jobs"]["tests"]["steps"]]
    assert "./setup.sh test node system" in runs
    assert "./setup.sh test node system" in (PROJECT_DIR / ".ci" / "run").read_text().splitlines()


def _required(requirement: Requirement) -> list[Requirement]:
    """What an installed distribution requires, with the extras `requirement` asks for (markers evaluated here)."""
    environments = [{"extra": extra} for extra in requirement.extras or {""}]
    return [
        needed
        for needed in map(Requirement, metadata.distribution(requirement.name).requires or [])
        if needed.marker is None or any(needed.marker.evaluate(environment) for environment in environments)
    ]


def _with_dependencies(roots: list[Requirement]) -> set[str]:
    found: set[str] = set()
    todo = list(roots)
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name not in found:
            found.add(name)
            todo.extend(_required(requirement))
    return found


def _requirements(name: str) -> list[Requirement]:
    lines = requirement_lines(name)
    included = [line.split()[1] for line in lines if line.startswith("-r ")]
    return [Requirement(line) for line in lines if not line.startswith("-r ")] + [
        requirement for file in included for requirement in _requirements(file)
    ]


# What each file installed without the resolver says it leaves unmet, and why (its header): botocore's cap on
# python-dateutil, which kubernetes 37 (requirements.txt) needs at 3 or later; the analyzer's pins of PyYAML and
# networkx, and lxml, which only its HTML output imports.
KNOWN_UNMET = {
    "requirements-s3.txt": ({("botocore", "python-dateutil")}, []),
    "requirements-netpol.txt": (
        {("network-config-analyzer", "pyyaml"), ("network-config-analyzer", "networkx")},
        ["network-config-analyzer -> lxml==5.3.0"],
    ),
}


@pytest.mark.parametrize("file", sorted(KNOWN_UNMET))
def test_what_is_installed_without_the_resolver_pins_everything_it_needs(file):
    """`pip install --no-deps` installs only the lines of the file, not what they require
    (https://pip.pypa.io/en/stable/cli/pip_install/#cmdoption-no-deps): every requirement of such a file's package
    (its installed metadata, with the extras the line names) is pinned there too or comes with requirements-test.txt's
    resolved set, at a version it accepts, but for the conflicts that file says why."""
    pinned = {canonicalize_name(r.name): r for r in _requirements(file)}
    resolved = _with_dependencies(_requirements("requirements-test.txt"))
    assert not set(pinned) & resolved, "installed twice: by the resolver and again without it"
    missing, unmet = [], set()
    for requirement in pinned.values():
        assert requirement.specifier.contains(metadata.version(requirement.name)), requirement
        for needed in _required(requirement):
            name = canonicalize_name(needed.name)
            if name not in pinned and name not in resolved:
                missing.append(f"{requirement.name} -> {needed}")
            elif not needed.specifier.contains(metadata.version(name), prereleases=True):
                unmet.add((canonicalize_name(requirement.name), name))
    assert (unmet, missing) == KNOWN_UNMET[file]


def test_every_test_is_bounded_in_time(pytestconfig):
    """pytest-timeout fails a test that runs longer than its `timeout` ini option (pytest-timeout README,
    https://pypi.org/project/pytest-timeout/: "timeout … ini setting"): pinned for CI and set for the whole suite, so a
    wait whose deadline is lost fails one test rather than hanging the run."""
    assert any(line.startswith("pytest-timeout==") for line in requirement_lines("requirements-test.txt"))
    assert float(pytestconfig.getini("timeout")) > 0
