"""A verify run as data: how a check ends (a value, ``CheckFailed``, ``Skip``), its rows, the checks a read-only
run skipped, the record the ledger keeps, and how they render."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from doctable.core.render import now_iso, text_table
from doctable.verify.expect import of_region

if TYPE_CHECKING:
    from doctable.core.deployment import Deployment

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
DEFAULT_TIMEOUT = 300.0  # the bound of each of a run's waits, seconds
DEFAULT_SETTLE = 120.0  # a fresh LATEST poller takes one to two minutes to settle
READ_ONLY = "read-only"  # the reason of each check a read-only run skipped (``skipped`` of the record)
OTHER_REGION = (
    "other-region"  # the reason of each check a run with --region REPLICA skipped: not of that region
)


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


@dataclass(frozen=True)
class VerifyRow:
    """One check's row as the run ended: ``result`` PASS, FAIL or SKIP, ``observed`` what was found, ``error`` the
    AWS failure that failed it (as data) or None."""

    id: str
    check: str
    expected: str
    observed: str
    result: str
    seconds: float
    error: Mapping[str, str] | None = None

    @property
    def ok(self) -> bool:
        """The row does not fail the run (PASS or SKIP)."""
        return self.result != FAIL

    @classmethod
    def of(cls, row: Row | Mapping[str, Any]) -> VerifyRow:
        found = row.as_dict() if isinstance(row, Row) else row
        error = found.get("error")
        return cls(
            found["id"], found["check"], found["expected"], found["observed"], found["result"],
            found["seconds"], dict(error) if error is not None else None,
        )  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        found = {
            key: getattr(self, key) for key in ("id", "check", "expected", "observed", "result", "seconds")
        }
        return found if self.error is None else {**found, "error": dict(self.error)}


@dataclass(frozen=True)
class SkippedCheck:
    """A check a read-only run did not run (it writes): its row id, what it checks, why (``read-only``)."""

    id: str
    check: str
    reason: str


@dataclass(frozen=True)
class VerifyResult:
    """A verify run: where it ran, its rows and verdict (``passed``; ``counts`` per result), the checks a read-only
    run skipped, and what was kept of it (``saved_to``: the record's file, None for a read-only run;
    ``ledger_written``). ``to_json()`` is ``doctable verify --json``'s document (the record the ledger keeps)."""

    kind: ClassVar[str] = "doctable-verify"

    run_id: str
    read_only: bool
    table: str
    stack: str
    stack_id: str | None
    region: str
    account: str | None
    endpoint: str | None
    started_at: str
    finished_at: str
    passed: bool
    counts: Mapping[str, int]
    knobs: Mapping[str, Any]
    rows: tuple[VerifyRow, ...]
    skipped: tuple[SkippedCheck, ...]
    dashboard_url: str | None
    rolled_back: str | None = None  # the note on a stack whose last update rolled back
    saved_to: str | None = None
    ledger_written: bool = False
    only_region: str | None = None  # --region naming a replica region: that region's rows alone ran

    @property
    def ok(self) -> bool:
        return self.passed

    @classmethod
    def of(cls, record: Mapping[str, Any], **kept: Any) -> VerifyResult:
        """The result of ``record`` (:func:`verify_record`'s document, with its ``dashboard_url``)."""
        return cls(
            run_id=record["run_id"],
            read_only=record["read_only"],
            table=record["table"],
            stack=record["stack"],
            stack_id=record["stack_id"],
            region=record["region"],
            account=record["account"],
            endpoint=record["endpoint"],
            started_at=record["started_at"],
            finished_at=record["finished_at"],
            passed=record["passed"],
            counts=dict(record["counts"]),
            knobs=dict(record["knobs"]),
            rows=tuple(VerifyRow.of(row) for row in record["rows"]),
            skipped=tuple(SkippedCheck(s["id"], s["check"], s["reason"]) for s in record["skipped"]),
            dashboard_url=record.get("dashboard_url"),
            only_region=record.get("only_region"),
            **kept,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "run_id": self.run_id,
            "read_only": self.read_only,
            "only_region": self.only_region,
            "table": self.table,
            "stack": self.stack,
            "stack_id": self.stack_id,
            "region": self.region,
            "account": self.account,
            "endpoint": self.endpoint,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "passed": self.passed,
            "counts": dict(self.counts),
            "knobs": dict(self.knobs),
            "rows": [row.as_dict() for row in self.rows],
            "skipped": [{"id": s.id, "check": s.check, "reason": s.reason} for s in self.skipped],
            "dashboard_url": self.dashboard_url,
        }


def verify_record(
    deployment: Deployment,
    rows: list[Row],
    started_at: str,
    run_id: str,
    skipped: Sequence[tuple[str, str, str]] = (),
    *,
    read_only: bool = False,
    region: str | None = None,
) -> dict[str, Any]:
    """The run as ``--json`` prints it (a full run's is kept for the ledger); ``skipped``: the (row id, check,
    expected) of each check a read-only run, or a run of replica region ``region``'s rows, did not run."""

    def reason(row_id: str) -> str:
        return OTHER_REGION if region is not None and not of_region(row_id, region) else READ_ONLY

    return {
        "kind": "doctable-verify",
        "run_id": run_id,
        "read_only": read_only,
        "only_region": region,  # --region naming a replica region: that region's rows alone
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
        "skipped": [{"id": row_id, "check": check, "reason": reason(row_id)} for row_id, check, _ in skipped],
    }


def render_rows(rows: Sequence[dict[str, Any]] | Sequence[Row] | Sequence[VerifyRow]) -> str:
    dicts = [r if isinstance(r, dict) else r.as_dict() for r in rows]
    return text_table(
        ["check", "expected", "observed", "result"],
        [[d["check"], d["expected"], d["observed"], d["result"]] for d in dicts],
    )


def summary_line(record: Mapping[str, Any]) -> str:
    counts = record["counts"]
    verdict = "PASSED" if record["passed"] else "FAILED"
    mode = " (read-only)" if record.get("read_only") else ""
    skipped = record.get("skipped") or []
    writing = sum(1 for s in skipped if s["reason"] == READ_ONLY)
    elsewhere = len(skipped) - writing
    failed = [r["id"] for r in record["rows"] if r["result"] == FAIL]
    tail = (
        (f", {writing} not run (they write)" if writing else "")
        + (f", {elsewhere} not run (not of {record.get('only_region')})" if elsewhere else "")
        + (f" — failing: {', '.join(failed)}" if failed else "")
    )
    where = record.get("only_region") or record["region"]
    return (
        f"verify{mode} {verdict}: {record['table']} ({where}) — {counts[PASS]} pass, "
        f"{counts[FAIL]} fail, {counts[SKIP]} skip{tail}"
    )


def skipped_lines(record: Mapping[str, Any]) -> list[str]:
    """One line per check a read-only run skipped: its row id, what it checks and why it was not run."""
    return [
        f"skipped {s['id']}: {s['check']} — {s['reason']}, the check writes"
        for s in record.get("skipped") or []
        if s["reason"] == READ_ONLY  # a row of another region than --region's: counted in the summary line
    ]
