"""How one setting is read from Pulumi config: its row's kind applied to the raw text (`Reader`), secrets kept as
Pulumi secrets, and the forms Pulumi's own config would misread (octal-looking and non-canonical integers).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pulumi
from pulumi.runtime.config import CONFIG, get_config_env, is_config_secret

from infra.settings.kinds import Boolean, Choice, Integer, ProviderValue, Secret, Setting, StringList, Text
from infra.settings.table import PROJECT_KEYS, SETTINGS

# Keys whose value is a credential (their rows' kind): the only ones a stack file may hold encrypted (`secure:`).
SECRET_SETTINGS = frozenset(setting.key for setting in SETTINGS if isinstance(setting.kind, Secret))
# An integer as plain ASCII decimal digits. The reader takes Python's int(), as pulumi.Config.get_int does
# (pulumi/config.py `_get_int`: `return int(v)`), and int() also reads '4_096', '+3', ' 3', '03' and other
# scripts' digits; the plan and the change history would then show the text, not the number, and the same
# text in the stack file is read otherwise by the CLI (tools/stack_yaml.py: an unquoted 010 is octal 8).
CANONICAL_INTEGER = re.compile(r"(0|[1-9][0-9]*)\Z")


class Reader:
    """Reads each row of the settings table and records every problem instead of stopping at the first."""

    def __init__(self, config: pulumi.Config, aws_config: pulumi.Config) -> None:
        self.config = config
        self.aws_config = aws_config
        self.problems: list[str] = []
        # Integers in a form int() takes but that is not the number's own text: load_config reports them after the
        # value rules.
        self.integer_form_problems: list[str] = []
        # What each key was set to, as read (a secret only as set or not): what a change is judged on.
        self.values: dict[str, str] = {}

    def read(self, setting: Setting) -> Any:
        """The value of one key in the type its row gives, or a fallback of that type with the problem recorded."""
        key, kind = setting.key, setting.kind
        if isinstance(kind, ProviderValue):
            namespace, _, name = key.partition(":")
            assert namespace == "aws", key
            value = self.aws_config.get(name) or ""
            self.values[key] = value
            return value
        raw = self.plain(key)
        if isinstance(kind, Secret):
            return raw
        if raw is None:
            self.problems.append(f"{key} is not set; Pulumi.yaml declares its default, so the project file was changed")
            raw = ""
        if isinstance(kind, Text):
            return self.text(key, raw, kind)
        if isinstance(kind, Integer):
            return self.integer(key, raw, kind)
        if isinstance(kind, Boolean):
            if raw not in ("true", "false"):
                self.problems.append(f"{key}={raw!r} is invalid: allowed is true or false")
            return raw == "true"
        if isinstance(kind, Choice):
            if raw not in kind.options:
                self.problems.append(f"{key}={raw!r} is invalid: allowed is one of {', '.join(kind.options)}")
            return raw
        return self.string_list(key, raw or "[]", kind)

    def plain(self, key: str) -> str | None:
        value = self.config.get(key)
        self.values[key] = ("[secret]" if value else "") if key in SECRET_SETTINGS else (value or "")
        return value

    def text(self, key: str, raw: str, kind: Text) -> str | None:
        if kind.optional and not raw:
            return None
        if kind.pattern is not None and not kind.pattern.fullmatch(raw):
            or_empty = " (or empty)" if kind.optional else ""
            self.problems.append(f"{key}={raw!r} is invalid: allowed is {kind.allowed}{or_empty}")
        return raw

    def integer(self, key: str, raw: str, kind: Integer) -> int:
        try:
            value = int(raw)
        except ValueError:
            value = None
        if value is not None and kind.admits(value):
            if not CANONICAL_INTEGER.fullmatch(raw):
                self.integer_form_problems.append(
                    f"{key}={raw!r} is invalid: allowed is an integer in plain decimal digits, here {value} (no sign, "
                    "'_', space, leading zero or non-ASCII digit, which Python reads but the plan would show as typed)"
                )
            return value
        self.problems.append(
            f"{key}={raw!r} is invalid: allowed is an integer {kind.bounds}{kind.why}{_octal_hint(key, raw)}"
        )
        return kind.minimum

    def string_list(self, key: str, raw: str, kind: StringList) -> tuple[str, ...]:
        """A JSON list of strings, each checked by the row's `item` (its ValueError says why one is wrong) and given
        in the normal form `item` returns; a problem names the item by its index, and so does a repeated one."""
        values = json_string_list(raw)
        if values is None:
            self.problems.append(f"{key}={raw!r} is invalid: allowed is a JSON list of {kind.allowed}")
            return ()
        first_index: dict[str, int] = {}
        for index, value in enumerate(values):
            try:
                normal = kind.item(value)
            except ValueError as error:
                self.problems.append(f"{key}[{index}]={value!r} is invalid ({error}): allowed is {kind.allowed}")
                continue
            if normal in first_index:
                self.problems.append(
                    f"{key}[{index}]={value!r} is invalid: it repeats {key}[{first_index[normal]}]; "
                    "allowed is each value once"
                )
                continue
            first_index[normal] = index
        return tuple(first_index)


def _octal_hint(key: str, raw: str) -> str:
    """Said where an integer is refused, for a plain-decimal one (so out of bounds) of 8 or more: how the number may
    have come from the stack file: the Pulumi CLI decodes it with go-yaml v3, whose resolver reads a plain scalar with
    Go's strconv.ParseInt(text, 0, 64) (go-yaml/yaml v3 resolve.go), so an unquoted leading 0 is octal, as in YAML 1.1
    (`maxAzs: 010` arrives as '8'); tools/stack_yaml.py reads it so."""
    if not CANONICAL_INTEGER.fullmatch(raw) or int(raw) < 8:
        return ""
    octal = format(int(raw), "o")
    return (
        f"; if the stack file says `{key}: 0{octal}`, the Pulumi CLI read that as octal {raw} (a leading 0 is octal "
        f"in its YAML reader, as in YAML 1.1): write {int(octal)} without the 0"
    )


def json_string_list(raw: str) -> list[str] | None:
    """A list value as the CLI stores it (JSON), or None when it is not a JSON list of strings."""
    try:
        values = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        return None
    return values


def plain_secret_problem(config: pulumi.Config, key: str, value: str | None, placeholder: str) -> str | None:
    if not value or is_config_secret(config.full_key(key)):
        return None
    return f"{key} is set in plain text: set it with `pulumi config set --secret {key} <{placeholder}>`"


def encrypted_setting_problems(config: pulumi.Config) -> list[str]:
    """A secret value where no secret belongs hides a setting from review and from `pulumi preview`."""
    return [
        f"{key} is stored encrypted (secure:) but is not a secret setting: set it in plain text with "
        f"`pulumi config set {key} <value>` (only {', '.join(sorted(SECRET_SETTINGS))} may be secret)"
        for key in sorted(PROJECT_KEYS)
        if key not in SECRET_SETTINGS and is_config_secret(config.full_key(key))
    ]


def every_setting() -> dict[str, str]:
    """Every key the stack sets with its value (secrets hidden): the CLI hands them over as PULUMI_CONFIG,
    mocks and automation set them in-process."""
    settings = {**get_config_env(), **CONFIG.get()}
    return {key: "[secret]" if is_config_secret(key) else str(value) for key, value in settings.items()}
