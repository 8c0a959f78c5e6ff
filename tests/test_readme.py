"""The README stays true: its first screen has the set-up, test, render and deploy commands the project runs, the
first deploy it links (docs/getting-started.md) gives the commands the program names, and the configuration table
it links (docs/configuration.md) is Pulumi.yaml's. What the repository holds: tests/test_layout_page.py."""

from __future__ import annotations

import pytest

from infra.settings.kinds import API_ALLOW_LIST_COMMAND, UNPROTECT_COMMAND
from tools.config_reference import REFERENCE_PAGE, WRITE_COMMAND, markdown_table
from tools.offline import load_stack_config
from tools.project import PROJECT_DIR, replace_generated_block

README = (PROJECT_DIR / "README.md").read_text()
FIRST_SCREEN = "\n".join(README.splitlines()[:25])
GETTING_STARTED = (PROJECT_DIR / "docs" / "getting-started.md").read_text()
FIRST_DEPLOY = GETTING_STARTED.split("\n## Prerequisites and first deploy\n", 1)[1].split("\n## ", 1)[0]


def test_first_screen_shows_the_deploy_command():
    assert "pulumi up --stack dev" in FIRST_SCREEN


def test_first_deploy_gives_the_api_allow_list_command_the_program_asks_for():
    """No shipped stack carries an API allow-list; the command the config error names is the first deploy's, word
    for word, in the README's deploy commands and on the page it links."""
    assert API_ALLOW_LIST_COMMAND in README
    assert API_ALLOW_LIST_COMMAND in FIRST_DEPLOY


def test_the_teardown_gives_the_unprotect_step_the_program_names():
    """A protected stack's preview names the step that lifts both protections (infra/preview_notes.py
    protection_note); the first deploy's (docs/getting-started.md) and docs/operations.md's teardown give that step
    word for word, before `pulumi destroy`."""
    teardown = FIRST_DEPLOY[FIRST_DEPLOY.index("Tear down with") :].split("\n\n", 1)[0]
    assert UNPROTECT_COMMAND in teardown
    operations = (PROJECT_DIR / "docs" / "operations.md").read_text().split("\n## Tear down\n", 1)[1]
    assert operations.index(UNPROTECT_COMMAND) < operations.index("pulumi destroy\n")


def test_first_screen_shows_the_test_command_ci_runs():
    """.ci/run ends with the product's suite, then the lab's: the first screen's two test commands."""
    ci_lines = (PROJECT_DIR / ".ci" / "run").read_text().rstrip().splitlines()
    product, lab = "./.venv-test/bin/python -m pytest", "./.venv-test/bin/python -m pytest lab/tests"
    assert product in FIRST_SCREEN
    assert ci_lines[-2:] == [product, lab]
    assert lab in FIRST_SCREEN


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


def test_first_screen_and_quota_line_describe_the_dev_stack():
    """What the first screen promises (Kubernetes version, GPU nodes) and the quota a new user needs are the
    dev stack's own values, so `pulumi up --stack dev` deploys what the README says."""
    cfg = load_stack_config(stack="dev")
    node = cfg.topology.node
    count = {1: "one", 2: "two", 3: "three", 4: "four"}[cfg.topology.gpu_nodes]
    assert f"an EKS {cfg.kubernetes_version} cluster, {count} EFA-enabled {cfg.gpu_node_type} GPU nodes" in FIRST_SCREEN
    need = f"{cfg.topology.gpu_nodes} \u00d7 {cfg.gpu_node_type} On-Demand ({cfg.topology.gpu_nodes * node.vcpus} vCPUs"
    assert need in FIRST_DEPLOY


def test_first_screen_sets_the_clone_up_with_the_script_ci_installs_with():
    """The operator tools' commands (README and docs/) run from .venv-tools and the test command from .venv-test,
    both made by ./setup.sh (tests/test_setup.py runs it); .ci/run installs with the same script."""
    docs = [README, *(path.read_text() for path in (PROJECT_DIR / "docs").rglob("*.md"))]
    assert any("./.venv-tools/bin/python -m tools." in text for text in docs)
    assert "\n./setup.sh " in FIRST_SCREEN
    assert "\n./setup.sh test node system\n" in (PROJECT_DIR / ".ci" / "run").read_text()
