"""docs/operations.md documents every option of `tools.render` and `tools.verify`, and no other."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tools import render, verify

OPERATIONS_DOC = Path(__file__).parents[1] / "docs" / "operations.md"


def documented_options(command: str) -> set[str]:
    """The `--options` in the option table of a command's section (`## Render: ...`, up to its exit statuses)."""
    section = OPERATIONS_DOC.read_text().split(f"\n## {command.capitalize()}: ", 1)[1].split("Exit status", 1)[0]
    return {line.split("`")[1].split()[0] for line in section.splitlines() if line.startswith("| `--")}


def parser_options(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings} - {"-h", "--help"}


@pytest.mark.parametrize(("command", "parser"), [("render", render.build_parser), ("verify", verify.build_parser)])
def test_every_option_is_documented(command, parser):
    assert documented_options(command) == parser_options(parser())
