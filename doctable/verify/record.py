"""A verify run as data: how a check ends (a value, ``CheckFailed``, ``Skip``), its rows, the checks a read-only
run skipped, the record the ledger keeps, and how they render."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from doctable.core.render import now_iso, text_table

if TYPE_CHECKING:
    from doctable.core.deployment import Deployment

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
READ_ONLY = "read-only"  # the reason of each check a read-only run skipped (``skipped`` of the record)


class CheckFailed(Exception):
    """Raised inside a check: the row FAILs with this message as the observed value; ``error``: the AWS failure
    behind it as data (doctable.core.aws.failure_fields), which the row's --json carries."""

    def __init__(self, message: str, error: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.error = error


class Skip(Exception):
    """Raised inside a check: the row is SKIPped with this reason."""


@dataclass
class Row:
    id: str
    check: str
    expected: str
    observed: str = ""
    result: str = FAIL
    seconds: float = 0.0
    # An AWS failure that failed the row, as data (doctable.core.aws.failure_fields: code, and for a refusal the
    # action, resource and principal AWS named); absent from the row's --json when the check did not meet one.
    error: dict[str, str] | None = None

    def as_dict(self) -> dict[str, Any]:
        found = asdict(self)
        if self.error is None:
            del found["error"]
        return found


def verify_record(
    deployment: Deployment,
    rows: list[Row],
    started_at: str,
    run_id: str,
    skipped: Sequence[tuple[str, str, str]] = (),
    *,
    read_only: bool = False,
) -> dict[str, Any]:
    """The run as ``--json`` prints it (a full run's is kept for the ledger); ``skipped``: the (row id, check,
    expected) of each check a read-only run did not run."""
    return {
        "kind": "doctable-verify",
        "run_id": run_id,
        "read_only": read_only,
        "table": deployment.table_name,
        "stack": deployment.config.stack_name,
        "stack_id": deployment.stack_id,
        "region": deployment.region,
        "account": deployment.account,
        "endpoint": os.environ.get("AWS_ENDPOINT_URL") or None,
        "started_at": started_at,
        "finished_at": now_iso(),
        "passed": all(r.result != FAIL for r in rows),
        "counts": {k: sum(1 for r in rows if r.result == k) for k in (PASS, FAIL, SKIP)},
        "knobs": deployment.config.as_knobs(),
        "rows": [r.as_dict() for r in rows],
        # not run, so neither passed nor failed: each check of a read-only run that writes
        "skipped": [{"id": row_id, "check": check, "reason": READ_ONLY} for row_id, check, _ in skipped],
    }


def render_rows(rows: list[dict[str, Any]] | list[Row]) -> str:
    dicts = [r.as_dict() if isinstance(r, Row) else r for r in rows]
    return text_table(
        ["check", "expected", "observed", "result"],
        [[d["check"], d["expected"], d["observed"], d["result"]] for d in dicts],
    )


def summary_line(record: Mapping[str, Any]) -> str:
    counts = record["counts"]
    verdict = "PASSED" if record["passed"] else "FAILED"
    mode = " (read-only)" if record.get("read_only") else ""
    not_run = len(record.get("skipped") or [])
    failed = [r["id"] for r in record["rows"] if r["result"] == FAIL]
    tail = (f", {not_run} not run (they write)" if not_run else "") + (
        f" — failing: {', '.join(failed)}" if failed else ""
    )
    return (
        f"verify{mode} {verdict}: {record['table']} ({record['region']}) — {counts[PASS]} pass, "
        f"{counts[FAIL]} fail, {counts[SKIP]} skip{tail}"
    )


def skipped_lines(record: Mapping[str, Any]) -> list[str]:
    """One line per check a read-only run skipped: its row id, what it checks and why it was not run."""
    return [
        f"skipped {s['id']}: {s['check']} — {s['reason']}, the check writes"
        for s in record.get("skipped") or []
    ]
