"""The README stays true: its first screen has the two commands, and its config table is Pulumi.yaml's."""

from __future__ import annotations

from infra.config import API_ALLOW_LIST_COMMAND
from tools.config_reference import markdown_table
from tools.project import PROJECT_DIR

README = (PROJECT_DIR / "README.md").read_text()
FIRST_SCREEN = "\n".join(README.splitlines()[:25])


def test_first_screen_shows_the_deploy_command():
    assert "pulumi up --stack dev" in FIRST_SCREEN


def test_first_deploy_gives_the_api_allow_list_command_the_program_asks_for():
    """No shipped stack carries an API allow-list; the command the config error names is in the first deploy."""
    first_deploy = README.split("## Prerequisites and first deploy", 1)[1].split("\n## ", 1)[0]
    assert "pulumi config set --path 'apiPublicAccessCidrs[0]'" in first_deploy
    assert "pulumi config set --path 'apiPublicAccessCidrs[0]'" in API_ALLOW_LIST_COMMAND


def test_first_screen_shows_the_test_command_ci_runs():
    ci_script = (PROJECT_DIR / ".ci" / "run").read_text()
    test_command = "./.venv-test/bin/python -m pytest"
    assert test_command in FIRST_SCREEN
    assert ci_script.rstrip().endswith(test_command)


def test_config_table_is_generated_from_pulumi_yaml():
    assert markdown_table() in README
