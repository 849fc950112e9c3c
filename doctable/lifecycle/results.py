"""What the lifecycle commands return (doctable.api): preflight's findings, deploy's report and its steps,
reconcile's drift and repairs, teardown's outcome, as frozen dataclasses whose ``to_json()`` is the command's
``--json`` document; and the text helpers the console script renders them with (doctable/cli/lifecycle.py). Pure
data: nothing here calls AWS."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from contract.findings import Finding, Level, finding_document
from doctable.core.render import text_table

if TYPE_CHECKING:
    from doctable.capabilities.protocol import Drift
    from doctable.verify.record import VerifyResult


# ---------------------------------------------------------------------------------------------- preflight
@dataclass(frozen=True)
class PreflightFinding:
    """One thing preflight found (contract.findings: ``code`` stable, ``level`` OK, INFO, CHANGE, WARN, STOP or
    DRIFT), with the live and declared values as text and as data (``before``/``after``)."""

    level: Level
    code: str
    subject: str
    live: str
    declared: str
    effect: str
    destructive: bool = False
    before: Any = None
    after: Any = None

    @classmethod
    def of(cls, finding: Finding | PreflightFinding) -> PreflightFinding:
        if isinstance(finding, PreflightFinding):
            return finding
        f = finding
        return cls(f.level, f.code, f.subject, f.live, f.declared, f.effect, f.destructive, f.before, f.after)

    @property
    def gates(self) -> bool:
        """A destructive change the deploy gate asks about (drift never is: the deploy leaves it)."""
        return self.destructive and self.level is not Level.DRIFT

    def as_dict(self) -> dict[str, Any]:
        return finding_document(self)


def findings_of(found: Sequence[Finding | PreflightFinding]) -> tuple[PreflightFinding, ...]:
    return tuple(PreflightFinding.of(f) for f in found)


def render_findings(findings: Sequence[Finding | PreflightFinding]) -> str:
    """The findings as a table; a destructive change's level marked ``!`` (the deploy gate asks before it)."""
    rows = [PreflightFinding.of(f) for f in findings]
    return text_table(
        ["level", "code", "subject", "live", "declared", "what the deploy will do"],
        [
            [f"{f.level}!" if f.gates else str(f.level), f.code, f.subject, f.live, f.declared, f.effect]
            for f in rows
        ],
        limit=160,
    )


@dataclass(frozen=True)
class PreflightResult:
    """What a deploy would do: ``findings`` (what it changes, and the state of the stack and settings) and
    ``drift`` (what it leaves as it is); ``go`` is False when a finding stops the deploy (STOP; with ``strict``,
    WARN too)."""

    kind: ClassVar[str] = "doctable-preflight"

    table: str
    stack: str
    region: str
    at: str
    go: bool
    strict: bool
    knobs_source: str
    pending: tuple[Mapping[str, str], ...]
    overrides: tuple[Mapping[str, str], ...]
    destructive: tuple[str, ...]  # the destructive findings' codes, once each
    findings: tuple[PreflightFinding, ...]
    drift: tuple[PreflightFinding, ...]

    @property
    def stops(self) -> tuple[PreflightFinding, ...]:
        return tuple(f for f in self.findings if f.level is Level.STOP)

    @property
    def warnings(self) -> tuple[PreflightFinding, ...]:
        return tuple(f for f in self.findings if f.level is Level.WARN)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "table": self.table,
            "stack": self.stack,
            "region": self.region,
            "at": self.at,
            "go": self.go,
            "knobs_source": self.knobs_source,
            "pending": [dict(p) for p in self.pending],
            "overrides": [dict(o) for o in self.overrides],
            "destructive": list(self.destructive),
            "findings": [f.as_dict() for f in self.findings],
            "drift": [f.as_dict() for f in self.drift],
        }


# ---------------------------------------------------------------------------------------------- deploy
ALLOW_FLAG = "--allow-destructive"
REQUIRE_BINDING_FLAG = "--require-binding"
INDEX_TIMEOUT = 6 * 3600.0  # the bound of the wait for each index to be ACTIVE or gone, seconds
# The cloud assembly's directory when deploy's ``cdk_output`` is not given (the CDK CLI's own default: cdk.out).
CDK_OUTPUT_VARIABLE = "DOCTABLE_CDK_OUTPUT"


@dataclass(frozen=True)
class ConversionStep:
    """One step of the conversion to a global table (retain, detached, import): its CDK command and exit code."""

    step: str
    command: tuple[str, ...]
    exit: int

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "command": list(self.command), "exit": self.exit}


@dataclass(frozen=True)
class IndexStep:
    """One stack update of a multi-index change: its number, the index created or deleted, the cdk deploy's exit
    code (None: it did not end), the seconds the index took to settle (None: it failed) and the progress lines."""

    update: int
    action: str
    index: str
    exit: int | None = None
    seconds: float | None = None
    progress: tuple[str, ...] | None = None
    # the deploy stopped before this update: what changed since its plan (doctable/lifecycle/step_check.py)
    stopped: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> IndexStep:
        lines = record.get("progress")
        return cls(
            record["update"], record["action"], record["index"], record.get("exit"), record.get("seconds"),
            None if lines is None else tuple(lines), record.get("stopped"),
        )  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"update": self.update, "action": self.action, "index": self.index}
        for key in ("exit", "seconds"):
            if getattr(self, key) is not None:
                found[key] = getattr(self, key)
        if self.stopped is not None:
            found["stopped"] = dict(self.stopped)
        return found if self.progress is None else {**found, "progress": list(self.progress)}


@dataclass(frozen=True)
class DeployResult:
    """A deploy's report. ``exit`` is the console script's exit code: 0 deployed (and verified), 1 preflight
    stopped it (``messages`` say which STOP), a cdk deploy failed, or verify failed, 3 the gate refused the
    destructive changes in ``refused`` (nothing deployed). The steps it took: ``conversion`` (to a global table),
    ``index_steps`` (one update per index change), ``replica_streams`` and ``replica_stacks_deleted`` (a global
    table's replica stacks), each None when the deploy had none; ``verify``: the verify run after it."""

    kind: ClassVar[str] = "doctable-deploy"

    env: str
    stack: str
    region: str
    account: str
    at: str
    settings: str | None
    overrides: tuple[Mapping[str, str], ...]
    findings: tuple[PreflightFinding, ...]
    destructive: tuple[str, ...]
    allowed_destructive: bool
    refused: tuple[str, ...]
    deployed: bool = False
    verified: bool | None = None
    conversion: tuple[ConversionStep, ...] | None = None
    index_steps: tuple[IndexStep, ...] | None = None
    replica_streams: Mapping[str, str] | None = None
    replica_stacks_deleted: tuple[str, ...] | None = None
    verify: VerifyResult | None = None
    exit: int = 0
    messages: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.exit == 0

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "kind": self.kind,
            "env": self.env,
            "stack": self.stack,
            "region": self.region,
            "account": self.account,
            "at": self.at,
            "settings": self.settings,
            "overrides": [dict(o) for o in self.overrides],
            "findings": [f.as_dict() for f in self.findings],
            "destructive": list(self.destructive),
            "allowed_destructive": self.allowed_destructive,
            "refused": list(self.refused),
            "deployed": self.deployed,
            "verified": self.verified,
        }
        if self.conversion is not None:
            document["conversion"] = [s.as_dict() for s in self.conversion]
        if self.index_steps is not None:
            document["index_steps"] = [s.as_dict() for s in self.index_steps]
        if self.replica_streams is not None:
            document["replica_streams"] = dict(self.replica_streams)
        if self.replica_stacks_deleted is not None:
            document["replica_stacks_deleted"] = list(self.replica_stacks_deleted)
        if self.verify is not None:
            document["verify"] = self.verify.to_json()
        return {**document, "exit": self.exit, "messages": list(self.messages)}


def gate_lines(found: Sequence[Finding | PreflightFinding]) -> list[str]:
    """One line per destructive finding: its code, what it is about and the change."""
    return [f"{f.code}: {f.subject} {f.live} → {f.declared}" for f in found]


# ---------------------------------------------------------------------------------------------- reconcile
@dataclass(frozen=True)
class DriftRow:
    """One property drifted from the declared configuration: what, its live and declared values, the repair call
    (``action``), and every field of it as ``--json`` prints it (``fields``: prop, op, params, region...)."""

    subject: str
    live: str
    declared: str
    action: str
    fields: Mapping[str, Any]

    @classmethod
    def of(cls, drift: Drift) -> DriftRow:
        return cls(drift.subject, drift.live, drift.declared, drift.action, drift.as_dict())

    def as_dict(self) -> dict[str, Any]:
        return dict(self.fields)


def render_drift(drifts: Sequence[DriftRow], *, applying: bool) -> str:
    verb = "will call" if applying else "would call"
    return text_table(
        ["drifted", "live", "declared", f"reconcile {verb}"],
        [[d.subject, d.live, d.declared, d.action] for d in drifts],
        limit=120,
    )


@dataclass(frozen=True)
class ReconcileResult:
    """The drift found (``drift``), the repair calls it takes (``calls``), and with ``applied``, what was restored
    and what is left after a re-read (``remaining``; None for a dry run)."""

    kind: ClassVar[str] = "doctable-reconcile"

    stack: str
    table: str
    at: str
    applied: bool
    calls: int
    drift: tuple[DriftRow, ...]
    restored: tuple[str, ...]
    remaining: tuple[DriftRow, ...] | None

    @property
    def left(self) -> tuple[DriftRow, ...]:
        """What is still drifted: after --apply, the re-read's; after a dry run, all of it."""
        return self.drift if self.remaining is None else self.remaining

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "stack": self.stack,
            "table": self.table,
            "at": self.at,
            "applied": self.applied,
            "drift": [d.as_dict() for d in self.drift],
            "restored": list(self.restored),
            "remaining": None if self.remaining is None else [d.as_dict() for d in self.remaining],
        }


# ---------------------------------------------------------------------------------------------- teardown
@dataclass(frozen=True)
class TeardownResult:
    """What a teardown removed, emptied first, retained on purpose and found STILL PRESENT (``clean``: nothing
    still present), its notes, and whether the ledger was written."""

    kind: ClassVar[str] = "doctable-teardown"

    stack: str
    at: str
    removed: tuple[str, ...]
    retained: tuple[str, ...]
    still_present: tuple[str, ...]
    emptied: tuple[str, ...]
    notes: tuple[str, ...]
    ledger_written: bool = False

    @property
    def clean(self) -> bool:
        return not self.still_present

    def outcome(self) -> dict[str, Any]:
        return {
            "removed": list(self.removed),
            "retained": list(self.retained),
            "still_present": list(self.still_present),
            "emptied": list(self.emptied),
            "notes": list(self.notes),
            "clean": self.clean,
        }

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "stack": self.stack, "at": self.at, **self.outcome()}
