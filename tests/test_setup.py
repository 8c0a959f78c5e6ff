"""`./setup.sh`, the one set-up command of a fresh clone, which .ci/run installs with: run in a copy of the clone
with stand-ins for Python, pip and npm that record what they are asked, so nothing is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tools.project import PROJECT_DIR, project_file

# A stand-in interpreter: records each call (how it was called, and its arguments), makes a venv as `-m venv DIR`
# does (DIR/bin/python, a copy of itself), answers the version check with STUB_PYTHON_VERSION_OK.
STUB_PYTHON = """#!/usr/bin/env bash
echo "${0#./} $*" >> "$SETUP_LOG"
if [ "$1" = -m ] && [ "$2" = venv ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; fi
if [ "$1" = -c ]; then exit "${STUB_PYTHON_VERSION_OK:-0}"; fi
if [ "$1" = --version ]; then echo "Python 3.10.12"; fi
"""
STUB_NPM = """#!/usr/bin/env bash
echo "npm $* (in ${PWD##*/})" >> "$SETUP_LOG"
"""


def run_setup(clone: Path, *parts: str, version_ok: int = 0) -> subprocess.CompletedProcess[str]:
    """setup.sh run in `clone` (made on first use: the script and the expansion's folder) with the stand-ins."""
    if not (clone / "setup.sh").exists():
        (clone / "tests" / "pulumi_eks_expansion").mkdir(parents=True)
        shutil.copy2(PROJECT_DIR / "setup.sh", clone / "setup.sh")
        stubs = clone / "stubs"
        stubs.mkdir()
        for name, text in {"python3": STUB_PYTHON, "npm": STUB_NPM}.items():
            (stubs / name).write_text(text)
            (stubs / name).chmod(0o755)
    environment = {
        "PATH": f"{clone / 'stubs'}{os.pathsep}{os.environ['PATH']}",
        "PYTHON": str(clone / "stubs" / "python3"),
        "SETUP_LOG": str(clone / "setup.log"),
        "STUB_PYTHON_VERSION_OK": str(version_ok),
        "CI": "true",
    }
    return subprocess.run(
        ["bash", "setup.sh", *parts],
        cwd=clone,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )


def calls(clone: Path) -> list[str]:
    log = clone / "setup.log"
    return log.read_text().splitlines() if log.exists() else []


def venvs_made(clone: Path) -> list[str]:
    return [call.rsplit(" ", 1)[1] for call in calls(clone) if " -m venv " in call]


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A clone set up by `./setup.sh` with every part, as the README's first screen says."""
    assert run_setup(tmp_path).returncode == 0
    return tmp_path


def test_the_test_venv_gets_the_test_requirements_then_s3_and_netpol_without_the_resolver(clone):
    """requirements-s3.txt and requirements-netpol.txt are installed with --no-deps after the others (their headers
    say why)."""
    installs = [call for call in calls(clone) if call.startswith(".venv-test/bin/python -m pip install")]
    assert installs[-2:] == [
        ".venv-test/bin/python -m pip install --quiet -r requirements-test.txt",
        ".venv-test/bin/python -m pip install --quiet --no-deps -r requirements-s3.txt -r requirements-netpol.txt",
    ]


def test_the_tools_venv_gets_the_tools_requirements(clone):
    installs = [call for call in calls(clone) if call.startswith(".venv-tools/bin/python -m pip install")]
    assert installs[-1] == ".venv-tools/bin/python -m pip install --quiet -r requirements-tools.txt"


def test_the_expansion_gets_its_locked_packages_without_install_scripts_then_is_compiled(clone):
    """`npm ci` installs exactly package-lock.json's versions (https://docs.npmjs.com/cli/commands/npm-ci);
    --ignore-scripts runs none of the packages' install scripts."""
    assert [call for call in calls(clone) if call.startswith("npm ")] == [
        "npm ci --ignore-scripts --no-audit --no-fund (in pulumi_eks_expansion)",
        "npm run --silent build (in pulumi_eks_expansion)",
    ]


def test_the_venvs_are_the_tests_and_the_tools_never_the_one_pulumi_runs_from(clone):
    deploy_venv = project_file()["runtime"]["options"]["virtualenv"]
    assert venvs_made(clone) == [".venv-test", ".venv-tools"]
    assert deploy_venv not in venvs_made(clone)


def test_a_second_run_keeps_the_venvs_and_installs_the_same(clone):
    first = calls(clone)
    assert run_setup(clone).returncode == 0
    second = calls(clone)[len(first) :]
    assert second == [call for call in first if " -m venv " not in call and " -c " not in call]


def test_a_python_older_than_3_11_is_refused_before_any_venv(tmp_path):
    ran = run_setup(tmp_path, version_ok=1)
    assert ran.returncode == 1
    assert "Python 3.10.12; Python 3.11 or later is needed: PYTHON=python3.11 ./setup.sh" in ran.stderr
    assert venvs_made(tmp_path) == []


def test_a_misspelt_part_installs_nothing(tmp_path):
    ran = run_setup(tmp_path, "test", "tool")
    assert ran.returncode == 2
    assert "unknown part 'tool': the parts are test, node, tools and redis" in ran.stderr
    assert calls(tmp_path) == []


def test_the_parts_ci_asks_for_leave_the_tools_venv_out(tmp_path):
    assert run_setup(tmp_path, "test", "node").returncode == 0
    assert venvs_made(tmp_path) == [".venv-test"]


def test_ci_installs_with_setup_after_removing_the_test_venv():
    """.ci/run holds no install command of its own, so it cannot drift from the README's set-up."""
    lines = [line.split("#")[0].strip() for line in (PROJECT_DIR / ".ci" / "run").read_text().splitlines()]
    assert lines.index("rm -rf .venv-test") + 1 == lines.index("./setup.sh test node redis")
    assert not [line for line in lines if "pip install" in line or "npm " in line or " -m venv " in line]


def test_setup_is_executable_as_the_readme_runs_it():
    assert os.access(PROJECT_DIR / "setup.sh", os.X_OK)


# The redis part, run with a PATH of stand-ins only (so the machine's own redis-server, apt-get and sudo are never
# found or run): each records its call; `id -u` answers STUB_UID.
STUB_RECORDER = """#!/usr/bin/env bash
echo "${0##*/} $*" >> "$SETUP_LOG"
"""
STUB_ID = """#!/usr/bin/env bash
echo "$STUB_UID"
"""


def run_redis_part(clone: Path, present: bool, uid: int = 0, apt: bool = True) -> subprocess.CompletedProcess[str]:
    """`setup.sh redis` with stand-ins for redis-server (when `present`), apt-get (when `apt`), sudo and id."""
    shutil.copy2(PROJECT_DIR / "setup.sh", clone / "setup.sh")
    stubs = clone / "stubs"
    stubs.mkdir()
    names = ["sudo", *(["apt-get"] if apt else []), *(["redis-server"] if present else [])]
    for name, text in {**dict.fromkeys(names, STUB_RECORDER), "id": STUB_ID}.items():
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    for tool in ("bash", "env", "dirname"):
        (stubs / tool).symlink_to(shutil.which(tool) or tool)
    environment = {"PATH": str(stubs), "SETUP_LOG": str(clone / "setup.log"), "STUB_UID": str(uid)}
    return subprocess.run(
        ["bash", "setup.sh", "redis"],
        cwd=clone,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )


def test_the_redis_part_installs_nothing_where_redis_server_is_on_path(tmp_path):
    assert run_redis_part(tmp_path, present=True).returncode == 0
    assert calls(tmp_path) == []


def test_the_redis_part_installs_the_distributions_package_through_apt_get(tmp_path):
    """As root: the package index, then redis-server alone, without the packages it only recommends
    (https://manpages.debian.org/bookworm/apt/apt-get.8.en.html, --no-install-recommends)."""
    assert run_redis_part(tmp_path, present=False).returncode == 0
    assert calls(tmp_path) == [
        "apt-get update -qq",
        "apt-get install -y -qq --no-install-recommends redis-server",
    ]


def test_the_redis_part_goes_through_sudo_where_it_is_not_root(tmp_path):
    """A GitHub-hosted runner's user is not root and has passwordless sudo
    (https://docs.github.com/en/actions/using-github-hosted-runners/about-github-hosted-runners#administrative-privileges)."""
    assert run_redis_part(tmp_path, present=False, uid=1001).returncode == 0
    assert calls(tmp_path) == [
        "sudo apt-get update -qq",
        "sudo apt-get install -y -qq --no-install-recommends redis-server",
    ]


def test_the_redis_part_without_apt_get_fails_saying_what_to_install(tmp_path):
    ran = run_redis_part(tmp_path, present=False, apt=False)
    assert ran.returncode == 1
    assert "redis-server not found and no apt-get to install it: install Redis 7 yourself" in ran.stderr
    assert calls(tmp_path) == []
