"""``doctable settings --env ENV``: each knob's value for one run and where it came from (the file's environment
table, its [defaults], the built-in default, or an override), without calling AWS."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contract.shape import table_shape
from doctable.capabilities.indexes import index_text
from doctable.core.context import resolve_run

if TYPE_CHECKING:
    from doctable.core.target import Target


@dataclass(frozen=True)
class KnobRow:
    """A knob's value for this run (as text) and where it came from."""

    knob: str
    value: str
    source: str  # the file's environment table, its [defaults], the built-in default, or an override


@dataclass(frozen=True)
class IndexRow:
    """An index the environment's table has: its name, kind (GSI or LSI), keys and projection."""

    name: str
    kind: str
    keys: str  # its keys and projection in a few words


@dataclass(frozen=True)
class OverrideRow:
    """A knob given for this run (``-c`` or DOCTABLE_<KNOB>) that differs from what the file says."""

    knob: str
    value: str
    source: str  # "-c" or the DOCTABLE_ variable
    file_value: str


@dataclass(frozen=True)
class SettingsResult:
    """An environment's settings for one run, resolved as the CDK app resolves them."""

    env: str
    stack: str
    file: str | None  # the settings file (None: built-in defaults)
    account: str | None  # the environment's binding, if the file gives one
    region: str | None
    knobs: tuple[KnobRow, ...]
    indexes: tuple[IndexRow, ...]
    index_source: str  # the section whose indexes the environment takes
    gsi: str
    overrides: tuple[OverrideRow, ...]
    document: Mapping[str, Any]  # the resolution as --json prints it (with the qualifier, the preview, ...)

    def to_json(self) -> dict[str, Any]:
        return {"kind": "doctable-settings", **self.document}


def settings(target: Target) -> SettingsResult:
    """Each knob's value for ``target``'s environment and its source; no AWS call."""
    resolved = resolve_run(target)
    config = resolved.config
    return SettingsResult(
        env=config.env,
        stack=config.stack_name,
        file=str(resolved.path) if resolved.path else None,
        account=resolved.account,
        region=resolved.region,
        knobs=tuple(KnobRow(r["knob"], r["value"], r["source"]) for r in resolved.rows()),
        indexes=tuple(IndexRow(i.name, i.kind, index_text(i)) for i in table_shape(config).indexes),
        index_source=resolved.index_source,
        gsi=config.gsi,
        overrides=tuple(OverrideRow(o.knob, o.value, o.source, o.file_value) for o in resolved.overrides),
        document=resolved.as_dict(),
    )
