"""The settings file as doctable writes it (``make docs`` regenerates the shipped ``doctable.toml``): the header,
[defaults] with a comment per knob from its declaration, then each environment's table in the file's order."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from contract.knobs import ENV_VALUES, INTEGER, INTEGER_OR_OFF, KNOB_DEFAULTS, KNOBS, NONE, STRING_ARRAY
from contract.settings.resolve import BINDING_KEYS, FILE_ONLY, NOT_IN_FILE, Section, SettingsFile

HEADER = """\
# doctable's settings: one table per environment, committed with the code. Every entry point reads this file the
# same way: `doctable deploy --env ENV`, `npx cdk deploy -c env=ENV`, every `doctable` command, the Makefile.
# A knob's value is [environments.<env>] over [defaults] over the built-in default. For one run, `-c knob=value`
# or DOCTABLE_<KNOB>=value overrides it (`doctable settings --env ENV` shows each value and its source).
# An environment may set `account`, `region` and `qualifier` (its own CDK bootstrap: `doctable bootstrap`): a
# command whose credentials resolve elsewhere stops.
# Environments: any [environments.<name>] (lower-case letters, digits and -), each with its `tier` (dev, stg, uat,
# prod: the rules its data lives by; set here only); a run chooses one of those declared (docs/environments.md).
# Secondary indexes: [environments.<env>.indexes.<name>] (or [defaults.indexes.<name>]) with partition = "attr:S",
# optional sort, projection (all | keys-only | include), include, kind = "local" for an LSI (README: Your own indexes);
# a GSI's partition and sort may each be an array of up to 4, partition = ["tenant:S", "region:S"] (docs/indexes.md).
# The comments on [defaults] are generated from the knob declarations (contract/knobs/__init__.py).
"""


def toml_value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    escaped = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def knob_comment(name: str) -> list[str]:
    """The comment the file carries above a knob in [defaults]: its meaning, what it allows, a live change."""
    declared = KNOBS[name]
    lines = [f"# {declared.meaning}.", f"#   allowed: {declared.parser.allowed}"]
    if declared.per_env:
        lines[-1] += f"; {declared.per_env}"
    lines.append(f"#   on a live stack: {declared.live}")
    return lines


def default_value(name: str) -> Any:
    """A knob's built-in default as the file writes it (an integer knob as an integer)."""
    text = KNOB_DEFAULTS[name]
    if KNOBS[name].parser.toml == STRING_ARRAY:
        return [] if text == NONE else text.split(",")
    if KNOBS[name].parser.toml in (INTEGER, INTEGER_OR_OFF) and text.lstrip("-").isdigit():
        return int(text)
    return text


def _render_section(section: Section, *, commented: bool) -> list[str]:
    lines = []
    for key in BINDING_KEYS:
        value = getattr(section, key)
        if value:
            lines.append(f"{key} = {toml_value(value)}")
    for name in KNOBS:
        if name in section.values:
            if commented:
                lines += knob_comment(name)
            lines.append(f"{name} = {toml_value(section.values[name])}")
    return lines


def _render_indexes(section: Section, header: str) -> list[str]:
    lines: list[str] = []
    if section.indexes is not None and not section.indexes:
        lines += ["", f"[{header}.indexes]"]  # declares no index: [defaults]'s are not taken
    for name, declared in (section.indexes or {}).items():
        lines += ["", f"[{header}.indexes.{_toml_key(name)}]"]
        for key, value in declared.items():
            shown = (
                "[" + ", ".join(toml_value(v) for v in value) + "]"
                if isinstance(value, list)
                else toml_value(value)
            )
            lines.append(f"{key} = {shown}")
    return lines


def _toml_key(name: str) -> str:
    return name if re.match(r"^[A-Za-z0-9_-]+$", name) else toml_value(name)


def render_settings(settings: SettingsFile) -> str:
    """The file as doctable writes it: the header, [defaults] with a comment per knob, then each environment."""
    lines = HEADER.splitlines() + ["", "[defaults]"]
    lines += _render_section(settings.defaults, commented=True)
    lines += _render_indexes(settings.defaults, "defaults")
    for env, section in settings.environments.items():
        lines += ["", f"[environments.{env}]"]
        lines += _render_section(section, commented=False)
        lines += _render_indexes(section, f"environments.{env}")
    if settings.project_name:
        lines += ["", "[project]", f"name = {toml_value(settings.project_name)}"]
    return "\n".join(lines) + "\n"


def default_settings(path: Path) -> SettingsFile:
    """Today's built-in defaults for every knob, and a table per shipped environment naming its tier."""
    defaults = Section(
        values={name: default_value(name) for name in KNOBS if name not in (*NOT_IN_FILE, *FILE_ONLY)}
    )
    return SettingsFile(
        path=path, defaults=defaults, environments={env: Section(values={"tier": env}) for env in ENV_VALUES}
    )
