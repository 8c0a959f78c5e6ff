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


# The other stand-ins record their call; `id -u` answers STUB_UID. The commands that show a system package installed.
STUB_RECORDER = """#!/usr/bin/env bash
echo "${0##*/} $*" >> "$SETUP_LOG"
"""
STUB_ID = """#!/usr/bin/env bash
echo "$STUB_UID"
"""
SYSTEM_COMMANDS = ("redis-server", "promtool", "amtool")
# What the script and the stand-ins run besides them, taken from the machine.
MACHINE_TOOLS = ("bash", "env", "dirname", "mkdir", "cp")


def run_setup(
    clone: Path,
    *parts: str,
    version_ok: int = 0,
    present: tuple[str, ...] = SYSTEM_COMMANDS,
    uid: int = 0,
    apt: bool = True,
    sudo: bool = True,
) -> subprocess.CompletedProcess[str]:
    """setup.sh run in `clone` (made on first use: the script and the expansion's folder) with a PATH of stand-ins only,
    so the machine's own Python, npm, apt-get, sudo and servers are never found or run: `present` are the system
    packages' commands already there, `apt` and `sudo` whether those are."""
    if not (clone / "setup.sh").exists():
        (clone / "tests" / "pulumi_eks_expansion").mkdir(parents=True)
        shutil.copy2(PROJECT_DIR / "setup.sh", clone / "setup.sh")
    stubs = clone / "stubs"
    shutil.rmtree(stubs, ignore_errors=True)
    stubs.mkdir()
    recorded = [*present, *(["apt-get"] if apt else []), *(["sudo"] if sudo else [])]
    texts = {"python3": STUB_PYTHON, "npm": STUB_NPM, "id": STUB_ID, **dict.fromkeys(recorded, STUB_RECORDER)}
    for name, text in texts.items():
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    for tool in MACHINE_TOOLS:
        (stubs / tool).symlink_to(shutil.which(tool) or tool)
    environment = {
        "PATH": str(stubs),
        "PYTHON": str(stubs / "python3"),
        "SETUP_LOG": str(clone / "setup.log"),
        "STUB_PYTHON_VERSION_OK": str(version_ok),
        "STUB_UID": str(uid),
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
    assert "unknown part 'tool': the parts are test, node, tools and system" in ran.stderr
    assert calls(tmp_path) == []


def test_the_parts_ci_asks_for_leave_the_tools_venv_out(tmp_path):
    assert run_setup(tmp_path, "test", "node").returncode == 0
    assert venvs_made(tmp_path) == [".venv-test"]


def test_ci_installs_with_setup_after_removing_the_test_venv():
    """.ci/run holds no install command of its own, so it cannot drift from the README's set-up."""
    lines = [line.split("#")[0].strip() for line in (PROJECT_DIR / ".ci" / "run").read_text().splitlines()]
    assert lines.index("rm -rf .venv-test") + 1 == lines.index("./setup.sh test node system")
    assert not [line for line in lines if "pip install" in line or "npm " in line or " -m venv " in line]


def test_setup_is_executable_as_the_readme_runs_it():
    assert os.access(PROJECT_DIR / "setup.sh", os.X_OK)


def system_calls(clone: Path) -> list[str]:
    return [call for call in calls(clone) if call.startswith(("apt-get ", "sudo "))]


def test_setup_alone_installs_the_system_packages_the_tests_run(tmp_path):
    """The README's one set-up command brings the real servers too: redis-server (lab/tests/test_head_restart.py,
    lab/tests/test_redis_tls.py), promtool (Debian's and Ubuntu's `prometheus`) and amtool with Alertmanager
    (`prometheus-alertmanager`), after the package index, without the packages they only recommend
    (https://manpages.debian.org/bookworm/apt/apt-get.8.en.html, --no-install-recommends)."""
    assert run_setup(tmp_path, present=()).returncode == 0
    assert system_calls(tmp_path) == [
        "apt-get update -qq",
        "apt-get install -y -qq --no-install-recommends redis-server prometheus prometheus-alertmanager",
    ]


def test_the_system_part_installs_nothing_where_the_commands_are_on_path(tmp_path):
    """Safe to run again: a second run after the packages are in installs nothing."""
    assert run_setup(tmp_path, "system").returncode == 0
    assert calls(tmp_path) == []


def test_the_system_part_installs_only_the_missing_packages(tmp_path):
    assert run_setup(tmp_path, "system", present=("redis-server", "promtool")).returncode == 0
    assert calls(tmp_path) == [
        "apt-get update -qq",
        "apt-get install -y -qq --no-install-recommends prometheus-alertmanager",
    ]


def test_the_system_part_as_root_needs_no_sudo(tmp_path):
    """A container's root (a CI image, a fresh VM) often has no sudo: as root apt-get is run directly."""
    assert run_setup(tmp_path, "system", present=(), sudo=False).returncode == 0
    assert system_calls(tmp_path) == [
        "apt-get update -qq",
        "apt-get install -y -qq --no-install-recommends redis-server prometheus prometheus-alertmanager",
    ]


def test_the_system_part_goes_through_sudo_where_it_is_not_root(tmp_path):
    """A GitHub-hosted runner's user is not root and has passwordless sudo
    (https://docs.github.com/en/actions/using-github-hosted-runners/about-github-hosted-runners#administrative-privileges)."""
    assert run_setup(tmp_path, "system", present=(), uid=1001).returncode == 0
    assert system_calls(tmp_path) == [
        "sudo apt-get update -qq",
        "sudo apt-get install -y -qq --no-install-recommends redis-server prometheus prometheus-alertmanager",
    ]


def test_the_system_part_neither_root_nor_with_sudo_fails_saying_so(tmp_path):
    ran = run_setup(tmp_path, "system", present=(), uid=1001, sudo=False)
    assert ran.returncode == 1
    assert "not root and no sudo to install redis-server prometheus prometheus-alertmanager" in ran.stderr
    assert calls(tmp_path) == []


def test_the_system_part_without_apt_get_fails_saying_what_to_install(tmp_path):
    ran = run_setup(tmp_path, "system", present=("promtool", "amtool"), apt=False)
    assert ran.returncode == 1
    assert "no apt-get to install redis-server: install them yourself" in ran.stderr
    assert calls(tmp_path) == []
