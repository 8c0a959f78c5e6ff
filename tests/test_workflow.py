"""The pull-request workflow, checked for structure since it cannot run here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.test_setup import calls, run_setup
from tools.project import PROJECT_DIR, SHIPPED_STACKS

WORKFLOW_PATH = PROJECT_DIR / ".github" / "workflows" / "preview.yml"
POLICY_DOC = PROJECT_DIR / "docs" / "policy.md"
# A release tag in full (v6.6.1), or a commit SHA; never a moving major tag or a branch.
PINNED_REF = re.compile(r"^(v\d+\.\d+\.\d+|[0-9a-f]{40})$")
SECRET_REFERENCE = re.compile(r"secrets\.([A-Z0-9_]+)")


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    return yaml.safe_load(WORKFLOW_PATH.read_text())


def triggers(workflow: dict[str, Any]) -> dict[str, Any]:
    # PyYAML reads the bare key `on` as the boolean True (YAML 1.1).
    return workflow.get("on", workflow.get(True))


def steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return job["steps"]


def uses(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [step for step in steps(job) if step.get("uses", "").split("@")[0] == action]


def all_steps(workflow: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for job in workflow["jobs"].values():
        yield from steps(job)


def test_triggers_are_pull_requests_and_pushes_to_main(workflow: dict[str, Any]) -> None:
    on = triggers(workflow)
    assert "pull_request" in on
    assert on["push"]["branches"] == ["main"]


def test_the_tests_job_runs_unit_and_policy_tests(workflow: dict[str, Any]) -> None:
    runs = [step.get("run", "") for step in steps(workflow["jobs"]["tests"])]
    unit = [run for run in runs if "pytest" in run and "--ignore-glob='tests/test_policy*.py'" in run]
    policy = [run for run in runs if "pytest" in run and "tests/test_policy*.py" in run and "--ignore" not in run]
    assert unit and policy


def test_the_tests_job_builds_the_pulumi_eks_expansion_before_the_tests(workflow: dict[str, Any]) -> None:
    """Under CI=true, tests/test_eks_expansion.py fails rather than skips without its npm packages and build."""
    job_steps = steps(workflow["jobs"]["tests"])
    (build,) = [i for i, step in enumerate(job_steps) if step.get("run") == "./setup.sh test node system"]
    first_pytest = min(i for i, step in enumerate(job_steps) if "pytest" in step.get("run", ""))
    assert uses(workflow["jobs"]["tests"], "actions/setup-node") and build < first_pytest


def test_the_tests_job_installs_the_alerting_tools_before_the_tests(workflow: dict[str, Any], tmp_path: Path) -> None:
    """Under CI=true, tests/test_alert_rules.py and tests/test_alert_receivers.py fail rather than skip without
    promtool (Ubuntu's `prometheus`), amtool and Alertmanager (`prometheus-alertmanager`): the set-up step's system
    part installs them (run here with stand-ins, as tests/test_setup.py runs it)."""
    job_steps = steps(workflow["jobs"]["tests"])
    (install,) = [i for i, step in enumerate(job_steps) if step.get("run") == "./setup.sh test node system"]
    first_pytest = min(i for i, step in enumerate(job_steps) if "pytest" in step.get("run", ""))
    assert install < first_pytest
    assert run_setup(tmp_path, "system", present=()).returncode == 0
    (install_call,) = [call for call in calls(tmp_path) if call.startswith("apt-get install")]
    packages = install_call.split()
    assert {"prometheus", "prometheus-alertmanager"} <= set(packages)


def test_previews_every_shipped_stack_with_the_policy_pack(workflow: dict[str, Any]) -> None:
    job = workflow["jobs"]["preview"]
    assert job["needs"] == "tests"
    assert "pull_request" in job["if"]
    assert job["strategy"]["matrix"]["stack"] == SHIPPED_STACKS
    (pulumi,) = uses(job, "pulumi/actions")
    assert pulumi["with"]["command"] == "preview"
    assert pulumi["with"]["stack-name"] == "${{ matrix.stack }}"
    assert pulumi["with"]["comment-on-pr"] is True
    assert job["permissions"]["pull-requests"] == "write"


def test_policy_pack_path_is_the_pack(workflow: dict[str, Any]) -> None:
    for step in all_steps(workflow):
        if step.get("uses", "").startswith("pulumi/actions@"):
            pack = PROJECT_DIR / step["with"]["policyPacks"]
            assert (pack / "PulumiPolicy.yaml").is_file()
            assert (pack / "__main__.py").is_file()


def test_jobs_running_pulumi_install_the_program_and_pack_virtualenvs(workflow: dict[str, Any]) -> None:
    for job in workflow["jobs"].values():
        if uses(job, "pulumi/actions"):
            installs = " ".join(step.get("run", "") for step in steps(job))
            assert "venv/bin/pip install --quiet -r requirements.txt" in installs
            assert "policy/venv/bin/pip install --quiet -r policy/requirements.txt" in installs


def test_every_action_is_pinned_to_a_full_version(workflow: dict[str, Any]) -> None:
    for step in all_steps(workflow):
        if "uses" in step:
            _, ref = step["uses"].split("@")
            assert PINNED_REF.match(ref), step["uses"]


def test_aws_credentials_come_from_oidc_role_assumption(workflow: dict[str, Any]) -> None:
    assert "aws-access-key-id" not in WORKFLOW_PATH.read_text()
    for job in workflow["jobs"].values():
        for step in uses(job, "aws-actions/configure-aws-credentials"):
            assert step["with"]["role-to-assume"].startswith("${{ secrets.")
            assert job["permissions"]["id-token"] == "write"


def test_backend_and_passphrase_come_from_secrets(workflow: dict[str, Any]) -> None:
    for job in workflow["jobs"].values():
        for step in uses(job, "pulumi/actions"):
            assert step["with"]["cloud-url"] == "${{ secrets.PULUMI_BACKEND_URL }}"
            assert step["env"]["PULUMI_CONFIG_PASSPHRASE"] == "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}"


def test_dev_is_deployed_only_from_main_behind_an_approval(workflow: dict[str, Any]) -> None:
    job = workflow["jobs"]["up-dev"]
    assert job["if"] == "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    assert job["environment"] == "dev"
    assert job["concurrency"]["cancel-in-progress"] is False
    (pulumi,) = uses(job, "pulumi/actions")
    assert (pulumi["with"]["command"], pulumi["with"]["stack-name"]) == ("up", "dev")
    assert pulumi["with"]["policyPacks"] == "policy"


def test_every_secret_is_documented() -> None:
    documented = POLICY_DOC.read_text()
    for name in set(SECRET_REFERENCE.findall(WORKFLOW_PATH.read_text())) - {"GITHUB_TOKEN"}:
        assert f"`{name}`" in documented, f"secret {name} is not described in {POLICY_DOC.name}"


def test_the_tests_need_nothing_beyond_the_checkout(workflow: dict[str, Any]) -> None:
    """The upstream schemas are vendored (vendor/README.md): the tests job fetches nothing and points nowhere else."""
    for step in steps(workflow["jobs"]["tests"]):
        assert "curl" not in step.get("run", "")
        assert "RAY_LLM_EKS_SCHEMAS" not in str(step)
