"""The project file, `Pulumi.yaml`, read in this one place for the tools and the tests.

(The program itself never reads it: the Pulumi CLI turns its defaults into the config that
`infra.settings.config` reads through `pulumi.Config`.)
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from infra import PROJECT_DIR

PROJECT_FILE = PROJECT_DIR / "Pulumi.yaml"
# A stack is shipped by adding its settings file, Pulumi.<stack>.yaml.
SHIPPED_STACKS = sorted(path.name.split(".")[1] for path in PROJECT_DIR.glob("Pulumi.*.yaml"))


def project_file() -> dict[str, Any]:
    """Pulumi.yaml as data (a fresh copy each call: callers may change it)."""
    document: dict[str, Any] = yaml.safe_load(PROJECT_FILE.read_text())
    return document


def declared_config() -> dict[str, Any]:
    """Pulumi.yaml's `config`: own keys map to {type, default, description}, namespaced ones (aws:region) to a value."""
    config: dict[str, Any] = project_file()["config"]
    return config


def declared_defaults() -> dict[str, Any]:
    """The default Pulumi.yaml declares for each key, as YAML typed it."""
    return {key: spec["default"] if isinstance(spec, dict) else spec for key, spec in declared_config().items()}


PROJECT = project_file()["name"]


def key_value_pairs(items: Sequence[str], option: str, parser: argparse.ArgumentParser) -> dict[str, str]:
    """`KEY=VALUE` command-line settings (render's and smoke's `--config`), or a usage error naming the option."""
    pairs = {}
    for item in items:
        key, separator, value = item.partition("=")
        if not separator or not key:
            parser.error(f"{option} {item!r}: expected KEY=VALUE")
        pairs[key] = value
    return pairs


def replace_generated_block(path: Path, block: str) -> None:
    """Writes a generated block (its first and last lines are its begin and end markers) over the one in `path`."""
    lines = block.splitlines()
    begin, end = lines[0], lines[-1]
    text = path.read_text()
    start, stop = text.index(begin), text.index(end) + len(end)
    path.write_text(text[:start] + block + text[stop:])


def generator_main(
    doc: str, page: Path, table: Callable[[], str], write: Callable[[], None] | None = None, write_help: str = ""
) -> None:
    """The command line of a doc generator (tools.*_reference): print its table, or `--write` it over the one in
    `page` (or run the generator's own `write`, which `write_help` describes)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    default_help = f"replace the table in {page.relative_to(PROJECT_DIR)}"
    parser.add_argument("--write", action="store_true", help=write_help or default_help)
    if not parser.parse_args().write:
        print(table())
    elif write:
        write()
    else:
        replace_generated_block(page, table())
