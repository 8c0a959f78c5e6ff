"""The settings table (infra/settings/table.py) is the one statement of each key: Pulumi.yaml is generated from it,
each row feeds a StackConfig field, and the program knows a key by its row, not by having read it."""

from __future__ import annotations

import dataclasses

import pytest

from infra.settings.config import STACK_FIELDS
from infra.settings.kinds import Integer, Setting, Text
from infra.settings.stack_config import StackConfig
from infra.settings.table import SETTINGS
from tests.conftest import rejection
from tools.config_reference import WRITE_COMMAND, project_file_text
from tools.project import PROJECT_FILE, declared_config


def test_pulumi_yaml_is_generated_from_the_table():
    assert PROJECT_FILE.read_text() == project_file_text(), f"Pulumi.yaml's config block is stale: {WRITE_COMMAND}"


def test_the_generated_block_declares_what_the_table_says():
    """What the Pulumi CLI reads back (type, default, description) is each row's, in the table's order."""
    declared = declared_config()
    assert list(declared) == [setting.key for setting in SETTINGS]
    for setting in SETTINGS:
        spec = declared[setting.key]
        if ":" in setting.key:
            assert spec == setting.default
        else:
            assert (spec["type"], spec["default"], spec["description"]) == (
                setting.pulumi_type,
                setting.default,
                setting.description,
            )


def fed_fields(setting: Setting) -> frozenset[str]:
    """The top-level StackConfig fields (or properties) the row's value ends up in."""
    return frozenset(part.split(".")[0].split(" ")[0] for part in setting.feeds.split(", "))


def test_each_row_feeds_a_field_of_the_stack_config():
    fields = {field.name for field in dataclasses.fields(StackConfig)}
    assert [setting.key for setting in SETTINGS if not fed_fields(setting) <= fields] == []


def test_every_field_but_the_stack_identity_is_fed_by_a_row():
    fed = frozenset().union(*(fed_fields(setting) for setting in SETTINGS))
    assert STACK_FIELDS - fed == {"project", "stack", "settings"}


@pytest.mark.parametrize("setting", [s for s in SETTINGS if isinstance(s.kind, Integer)], ids=lambda s: s.key)
def test_an_integer_default_is_within_its_bounds(setting):
    kind = setting.kind
    assert kind.minimum <= setting.default <= (kind.maximum if kind.maximum is not None else setting.default)


@pytest.mark.parametrize(
    "setting", [s for s in SETTINGS if isinstance(s.kind, Text) and s.kind.pattern], ids=lambda s: s.key
)
def test_a_text_default_matches_its_pattern(setting):
    assert (setting.kind.optional and setting.default == "") or setting.kind.pattern.fullmatch(setting.default)


def test_a_misspelt_key_is_found_on_a_path_that_asks_ec2_nothing():
    """In an unsupported region load_config asks EC2 nothing and derives no layout; the typo is still named,
    because the known keys are the table's rows."""
    problems = rejection({"aws:region": "mars-north-1", "gpuNodeTyp": "g6.8xlarge"}).problems
    assert any(p.startswith("ray-llm-eks:gpuNodeTyp=") and "did you mean 'gpuNodeType'?" in p for p in problems)
