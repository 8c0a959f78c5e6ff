"""A stack file (`Pulumi.<stack>.yaml`) read as the Pulumi CLI reads it, or refused where the CLI refuses it or would
silently drop what it says.

The CLI's loader and yaml.v3's scalar rules, with their pulumi/pulumi and go-yaml sources:
docs/testing.md#how-the-pulumi-cli-reads-a-stack-file-what-toolsstack_yamlpy-copies."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

STACK_SECTIONS = ("secretsprovider", "encryptedkey", "encryptionsalt", "config", "environment")
YAML_TRUE = ("true", "True", "TRUE")
YAML_FALSE = ("false", "False", "FALSE")
YAML_NULL = ("", "~", "null", "Null", "NULL")
YAML_SPECIAL_FLOATS = {
    **{text: math.nan for text in (".nan", ".NaN", ".NAN")},
    **{text: math.inf for text in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")},
    **{text: -math.inf for text in ("-.inf", "-.Inf", "-.INF")},
}
# Go's strconv.ParseInt(s, 0, 64) syntax: an optional sign, then 0x/0o/0b with digits, 0 and octal digits, or decimal.
GO_INTEGER = re.compile(r"([+-]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
# yaml.v3's yamlStyleFloat.
YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
# The start of what yaml.v3's parseTimestamp reads (2006-1-2, with an optional time).
YAML_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ].*)?")
INT64 = (-(2**63), 2**63 - 1)
UINT64_MAX = 2**64 - 1
STR_TAG = "tag:yaml.org,2002:str"
# The resolver SafeLoader mixes in (yaml/loader.py: SafeLoader(..., SafeConstructor, Resolver)): what tag a plain
# scalar resolves to.
SAFE_RESOLVER = yaml.resolver.Resolver()


class StackFileError(ValueError):
    """A stack file the CLI would not read as meant; the message is one line: `<file>:<line>: <problem>`."""


class Timestamp(str):
    """An unquoted date or time, which yaml.v3 reads as a timestamp."""


def _go_integer(text: str) -> int | None:
    match = GO_INTEGER.fullmatch(text)
    if not match:
        return None
    sign, body = match.groups()
    # Python's base 0 reads the 0x/0o/0b prefixes as Go does; a bare leading 0 is octal to Go, an error to Python.
    value = int(body, 8 if re.fullmatch("0[0-7]+", body) else 0)
    value = -value if sign == "-" else value
    if INT64[0] <= value <= INT64[1] or (not sign and value <= UINT64_MAX):
        return value
    return None


def resolve_plain(text: str) -> Any:
    """The value yaml.v3 gives an untagged plain scalar."""
    if text in YAML_TRUE:
        return True
    if text in YAML_FALSE:
        return False
    if text in YAML_NULL:
        return None
    if text in YAML_SPECIAL_FLOATS:
        return YAML_SPECIAL_FLOATS[text]
    hint = text[0]
    if hint == ".":
        try:
            return float(text)
        except ValueError:
            return text
    if hint in "+-0123456789":
        if YAML_TIMESTAMP.fullmatch(text):
            return Timestamp(text)
        plain = text.replace("_", "")
        integer = _go_integer(plain)
        if integer is not None:
            return integer
        if YAML_STYLE_FLOAT.fullmatch(plain):
            return float(plain)
    return text


def go_json_float(value: float) -> str:
    """Go's encoding/json text of a float64 (encode.go floatEncoder): shortest digits, fixed notation from 1e-6 up
    to 1e21, exponent notation outside it with `e-07` written `e-7`."""
    size = abs(value)
    if size != 0 and (size < 1e-6 or size >= 1e21):
        return re.sub(r"e([-+])0(\d)$", r"e\1\2", repr(value))
    return format(Decimal(repr(value)).normalize(), "f")


def cli_string(value: Any) -> str:
    """The string the CLI hands the program for a decoded top-level config value."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_json_float(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, node: yaml.Node, problem: str) -> StackFileError:
        return StackFileError(f"{self.path.name}:{node.start_mark.line + 1}: {problem}")

    def mapping(self, node: yaml.MappingNode) -> list[tuple[yaml.ScalarNode, yaml.Node]]:
        """The key/value nodes of a mapping, refusing a key defined twice (yaml.v3 compares the keys' text)."""
        seen: dict[str, yaml.Node] = {}
        for key, _ in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise self.fail(key, "a mapping key must be a plain string")
            if key.tag == "tag:yaml.org,2002:merge":
                raise self.fail(key, "`<<` merge keys are not read offline; write the keys out")
            if key.value in seen:
                raise self.fail(
                    key, f"mapping key {key.value!r} already defined at line {seen[key.value].start_mark.line + 1}"
                )
            seen[key.value] = key
        pairs: list[tuple[yaml.ScalarNode, yaml.Node]] = node.value
        return pairs

    def value(self, node: yaml.Node, where: str) -> Any:
        if isinstance(node, yaml.MappingNode):
            return {key.value: self.value(item, f"{where}.{key.value}") for key, item in self.mapping(node)}
        if isinstance(node, yaml.SequenceNode):
            return [self.value(item, f"{where}[{index}]") for index, item in enumerate(node.value)]
        assert isinstance(node, yaml.ScalarNode)
        if node.style is not None or (node.tag == STR_TAG and self._explicit(node)):
            return node.value
        if self._explicit(node):
            raise self.fail(node, f"{where}: the explicit YAML tag {node.tag} is not read offline; remove it")
        value = resolve_plain(node.value)
        if isinstance(value, Timestamp):
            raise self.fail(
                node,
                f"{where}={node.value} is an unquoted date, which the CLI hands the program as Go's time text "
                f"(e.g. '{node.value} 00:00:00 +0000 UTC'); quote it",
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(node, f"{where}={node.value} is not a number the CLI can pass on (JSON has no NaN or Inf)")
        return value

    @staticmethod
    def _explicit(node: yaml.ScalarNode) -> bool:
        """Whether the node's tag was written in the file rather than resolved from a plain scalar."""
        resolved: str = SAFE_RESOLVER.resolve(yaml.ScalarNode, node.value, (True, False))
        return node.tag != resolved


def read_stack_file(path: Path, project: str) -> tuple[dict[str, Any], dict[str, int]]:
    """The `config:` of a stack file, each key namespaced and each value as the CLI decodes it (a string, bool,
    int, float, list, map, or an encrypted `{"secure": ...}`), and the line of each key; raises StackFileError
    naming the file and line."""
    text = path.read_text()
    try:
        document = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark else 1
        raise StackFileError(f"{path.name}:{line}: not valid YAML: {error.problem or error.context}") from error
    if document is None or (isinstance(document, yaml.ScalarNode) and resolve_plain(document.value) is None):
        return {}, {}
    reader = _Reader(path)
    if not isinstance(document, yaml.MappingNode):
        raise reader.fail(document, "a stack file is a mapping with `config:`")
    config_node = None
    for section, value in reader.mapping(document):
        if section.value not in STACK_SECTIONS:
            raise reader.fail(
                section,
                f"{section.value!r} is not a section the Pulumi CLI reads (it reads {', '.join(STACK_SECTIONS)}) and "
                "would be ignored with everything in it",
            )
        if section.value == "config":
            config_node = value
    if config_node is None or (isinstance(config_node, yaml.ScalarNode) and resolve_plain(config_node.value) is None):
        return {}, {}
    if not isinstance(config_node, yaml.MappingNode):
        raise reader.fail(config_node, "`config:` must map keys to values")
    values: dict[str, Any] = {}
    written_as: dict[str, yaml.Node] = {}
    for key_node, value_node in reader.mapping(config_node):
        key = _namespaced(reader, key_node, project)
        if key in written_as:
            raise reader.fail(
                key_node,
                f"{key_node.value!r} is {key}, which line {written_as[key].start_mark.line + 1} sets too "
                f"({written_as[key].value!r}); the CLI would keep one of them",
            )
        written_as[key] = key_node
        values[key] = reader.value(value_node, key)
    return values, {key: node.start_mark.line + 1 for key, node in written_as.items()}


def _namespaced(reader: _Reader, key_node: yaml.ScalarNode, project: str) -> str:
    """`ParseKey` after `stackConfigNamespacedWithProject`: <namespace>:<name>, <namespace>:config:<name>, or a
    bare <name> of the project."""
    key: str = key_node.value
    parts = key.split(":")
    if len(parts) == 1:
        return f"{project}:{key}"
    if len(parts) == 2:
        return key
    if len(parts) == 3 and parts[1] == "config" and parts[0] and parts[2]:
        return f"{parts[0]}:{parts[2]}"
    raise reader.fail(
        key_node,
        f"could not parse {key} as a configuration key (configuration keys should be of the form `<namespace>:<name>`)",
    )
