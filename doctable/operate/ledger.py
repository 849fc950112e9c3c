"""``doctable ledger``: write the environment's Live State (knobs, realized ids, status, last verify) as Markdown and
JSON; the store it writes is doctable/core/ledger.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from doctable.core.command import connect
from doctable.core.ledger import record_ledger

if TYPE_CHECKING:
    from doctable.core.target import Target


@dataclass(frozen=True)
class LedgerResult:
    """The ledger entry written, and where: ``entry`` is the JSON file's document."""

    table: str
    status: str  # live | degraded | unverified | deploying | failed | gone | not-created
    last_verified: Mapping[str, Any] | None  # the last verify that ran against this deployment (None: never)
    markdown: str  # the path of ledger/<table>.md
    json_file: str  # the path of ledger/<table>.json
    entry: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return dict(self.entry)


def ledger(
    target: Target,
    *,
    ledger_dir: str | None = None,
    state_dir: str | None = None,
    resolved_by: str | None = None,
) -> LedgerResult:
    """Write ``ledger_dir``/<table>.md and .json (default: $DOCTABLE_LEDGER_DIR or ./ledger) from the stack and the
    last verify kept in ``state_dir``; ``resolved_by``: who confirmed the knobs. Changes nothing in AWS."""
    _config, aws, deployment = connect(target, command="ledger")
    entry, (md, js) = record_ledger(
        ledger_dir, aws, deployment, state_directory=state_dir, resolved_by=resolved_by
    )
    return LedgerResult(
        table=entry["table"],
        status=entry["status"],
        last_verified=entry["last_verified"],
        markdown=str(md),
        json_file=str(js),
        entry=entry,
    )
