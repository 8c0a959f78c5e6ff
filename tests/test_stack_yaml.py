"""The offline reader takes a stack file as the Pulumi CLI does: gopkg.in/yaml.v3's scalars, the CLI's keys and
strings, and a refusal, naming file and line, of what the CLI refuses or would silently drop.

Sources: pulumi/pulumi `sdk/go/common/workspace/loaders.go` (LoadProjectStackBytes, stackConfigNamespacedWithProject,
checkForEmptyConfig), `sdk/go/common/workspace/project.go` (ProjectStack), `sdk/go/common/encoding/marshal.go`
(yaml.v3, non-strict), `sdk/go/common/resource/config/key.go` (ParseKey), `object.go` (unmarshalObject,
MarshalString); go-yaml/yaml branch v3 `resolve.go` (resolve, yamlStyleFloat) and `decode.go` (duplicate keys).
"""

from __future__ import annotations

import pytest

from tests.conftest import rejection
from tools import offline
from tools.render import main
from tools.stack_yaml import StackFileError, cli_string, read_stack_file

PROJECT = "ray-llm-eks"


def read(tmp_path, text: str) -> dict:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(text)
    values, _ = read_stack_file(path, PROJECT)
    return values


def test_a_stack_file_without_config_has_no_values(tmp_path):
    """What `pulumi stack init` writes for a passphrase stack before any `pulumi config set`: the salt alone
    (pulumi/pulumi `sdk/go/common/workspace/project.go` ProjectStack: `config` is `omitempty`)."""
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text("encryptionsalt: v1:c2FsdA==:v1:bm9uY2U=:Y2lwaGVy\n")
    assert read_stack_file(path, PROJECT) == ({}, {})


def refusal(tmp_path, text: str) -> str:
    with pytest.raises(StackFileError) as caught:
        read(tmp_path, text)
    return str(caught.value)


@pytest.mark.parametrize(
    ("written", "handed"),
    [
        # yaml.v3 booleans are YAML 1.2's: yes/no/on/off stay strings (PyYAML's YAML 1.1 made them booleans).
        ("yes", "yes"),
        ("No", "No"),
        ("on", "on"),
        ("OFF", "OFF"),
        ("True", "true"),
        ("FALSE", "false"),
        # Integers as Go's strconv.ParseInt(text, 0, 64) reads them, underscores removed.
        ("0755", "493"),
        ("0o17", "15"),
        ("0x1F", "31"),
        ("0b101", "5"),
        ("-0x10", "-16"),
        ("+12", "12"),
        ("1_000", "1000"),
        # Not an integer to Go, so a float by yamlStyleFloat, written as Go's JSON writes a float64.
        ("08", "8"),
        ("1e3", "1000"),
        ("4096.0", "4096"),
        ("0.5", "0.5"),
        ("1e-7", "1e-7"),
        ("1e21", "1e+21"),
        # Base-60 numbers were dropped in YAML 1.2 (PyYAML reads 1:30 as 90).
        ("1:30", "1:30"),
        # A null is handed over as "" (checkForEmptyConfig warns); PyYAML's None became the string "None".
        ("", ""),
        ("~", ""),
        ("null", ""),
        ("NULL", ""),
        # Quoted, anything is a string.
        ("'0755'", "0755"),
        ('"yes"', "yes"),
        ("'null'", "null"),
    ],
)
def test_a_scalar_reaches_the_program_as_the_cli_hands_it(tmp_path, written, handed):
    values = read(tmp_path, f"config:\n  {PROJECT}:owner: {written}\n")
    assert cli_string(values[f"{PROJECT}:owner"]) == handed


def test_list_items_are_resolved_the_same_way_and_handed_as_json(tmp_path):
    values = read(tmp_path, f"config:\n  {PROJECT}:adminPrincipalArns: [yes, 0755, '08', ~]\n")
    assert cli_string(values[f"{PROJECT}:adminPrincipalArns"]) == '["yes", 493, "08", null]'


@pytest.mark.parametrize(
    ("written", "key"),
    [
        ("maxModelLen", f"{PROJECT}:maxModelLen"),
        (f"{PROJECT}:maxModelLen", f"{PROJECT}:maxModelLen"),
        (f"{PROJECT}:config:maxModelLen", f"{PROJECT}:maxModelLen"),
        ("aws:region", "aws:region"),
        ("other-project:maxModelLen", "other-project:maxModelLen"),
    ],
)
def test_keys_are_namespaced_as_the_cli_namespaces_them(tmp_path, written, key):
    assert list(read(tmp_path, f"config:\n  {written}: 2048\n")) == [key]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            f"config:\n  {PROJECT}:owner: a\n  {PROJECT}:owner: b\n",
            f"Pulumi.dev.yaml:3: mapping key '{PROJECT}:owner' already defined at line 2",
            id="duplicate-key",
        ),
        pytest.param(
            f"config:\n  {PROJECT}:serveSourceCidrs:\n    - {{a: 1, a: 2}}\n",
            "Pulumi.dev.yaml:3: mapping key 'a' already defined at line 3",
            id="duplicate-nested-key",
        ),
        pytest.param(
            f"config:\n  owner: a\n  {PROJECT}:owner: b\n",
            f"Pulumi.dev.yaml:3: '{PROJECT}:owner' is {PROJECT}:owner, which line 2 sets too ('owner')",
            id="bare-and-namespaced",
        ),
        pytest.param(
            f"confg:\n  {PROJECT}:owner: a\n",
            "Pulumi.dev.yaml:1: 'confg' is not a section the Pulumi CLI reads",
            id="misspelt-section",
        ),
        pytest.param(
            f"Config:\n  {PROJECT}:owner: a\n",
            "Pulumi.dev.yaml:1: 'Config' is not a section the Pulumi CLI reads",
            id="section-case",
        ),
        pytest.param(
            "config:\n  a:b:c: x\n",
            "Pulumi.dev.yaml:2: could not parse a:b:c as a configuration key",
            id="key-with-two-colons",
        ),
        pytest.param(
            f"config:\n  {PROJECT}:owner: 2026-11-30\n",
            f"Pulumi.dev.yaml:2: {PROJECT}:owner=2026-11-30 is an unquoted date",
            id="timestamp",
        ),
        pytest.param(
            f"config:\n  {PROJECT}:maxModelLen: .inf\n",
            f"Pulumi.dev.yaml:2: {PROJECT}:maxModelLen=.inf is not a number the CLI can pass on",
            id="infinity",
        ),
        pytest.param(
            f"config:\n  {PROJECT}:owner: !!binary aGk=\n",
            f"Pulumi.dev.yaml:2: {PROJECT}:owner: the explicit YAML tag",
            id="explicit-tag",
        ),
    ],
)
def test_what_the_cli_refuses_or_would_drop_is_refused_naming_file_and_line(tmp_path, text, expected):
    assert refusal(tmp_path, text).startswith(expected)


def test_a_key_in_another_projects_namespace_is_refused_by_the_program():
    """The CLI passes `other:key` on (ParseKey takes any namespace); nothing reads it, so a misspelt project
    name would silently drop the setting."""
    (problem,) = rejection({"ray-llm:owner": "ml"}).problems
    assert problem.startswith("ray-llm:owner='ml' is in namespace 'ray-llm', which neither this project")
    assert "did you mean 'ray-llm-eks'?" in problem


def test_render_refuses_a_yes_where_a_boolean_belongs(tmp_path, monkeypatch, capsys):
    """`natGatewayPerAz: yes` reaches the program as the string "yes" under the CLI, which the config refuses."""
    (tmp_path / "Pulumi.dev.yaml").write_text(
        f'config:\n  {PROJECT}:natGatewayPerAz: yes\n  {PROJECT}:apiPublicAccessCidrs: ["100.24.10.0/24"]\n'
    )
    monkeypatch.setattr(offline, "PROJECT_DIR", tmp_path)
    assert main(["--out", str(tmp_path / "out"), "--stack", "dev"]) == 1
    assert "natGatewayPerAz='yes' is invalid: allowed is true or false" in capsys.readouterr().err


def test_plan_shows_a_null_as_the_empty_string_the_program_gets(tmp_path, monkeypatch):
    (tmp_path / "Pulumi.dev.yaml").write_text(
        f'config:\n  {PROJECT}:owner:\n  {PROJECT}:apiPublicAccessCidrs: ["100.24.10.0/24"]\n'
    )
    monkeypatch.setattr(offline, "PROJECT_DIR", tmp_path)
    assert main(["--out", str(tmp_path / "out"), "--stack", "dev"]) == 0
    plan = (tmp_path / "out" / "plan.md").read_text()
    assert "| owner | - | Pulumi.dev.yaml |" in plan  # the plan writes an empty value as -
    assert "None" not in plan
