"""The ledger's store: an environment's Live State (knobs, realized ids, subscribers, status, last verify) as
Markdown + JSON, and verify's last record, which verify keeps in the state directory and the ledger reads (doctable/operate/ledger.py
is the ``doctable ledger`` command; verify and teardown write the ledger through this module)."""

from __future__ import annotations

import getpass
import json
import os
from pathlib import Path
from typing import Any

from contract import names
from contract.knobs import OFF, ON
from doctable.core.answers import call_or_none
from doctable.core.aws import Aws, user_errors
from doctable.core.context import state_dir
from doctable.core.deployment import Deployment
from doctable.core.render import markdown_table, now_iso

LEDGER_DIR_ENV = "DOCTABLE_LEDGER_DIR"
IN_PROGRESS_SUFFIX = "_IN_PROGRESS"


# ---------------------------------------------------------------------------------- verify's last record
def record_path(directory: Path, table: str) -> Path:
    return directory / f"verify-{table}.json"


def save_record(directory: Path, record: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = record_path(directory, record["table"])
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2, default=str) + "\n")
    tmp.replace(path)
    return path


def load_record(directory: Path, table: str) -> dict[str, Any] | None:
    try:
        data = json.loads(record_path(directory, table).read_text())
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# ---------------------------------------------------------------------------------------------- ledger
def ledger_dir(explicit: str | None = None) -> Path:
    return Path(explicit or os.environ.get(LEDGER_DIR_ENV) or "ledger")


def ledger_paths(directory: Path, table: str) -> tuple[Path, Path]:
    return directory / f"{table}.md", directory / f"{table}.json"


def load_ledger(directory: Path, table: str) -> dict[str, Any] | None:
    try:
        data = json.loads(ledger_paths(directory, table)[1].read_text())
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


ROLLED_BACK_UPDATE = "UPDATE_ROLLBACK_COMPLETE"


def status_of(deployment: Deployment, verify: dict[str, Any] | None, had_history: bool) -> str:
    """live | degraded | unverified | deploying | failed | gone | not-created."""
    if not deployment.exists:
        return "gone" if had_history else "not-created"
    status = deployment.stack_status or ""
    if status.endswith(IN_PROGRESS_SUFFIX):
        return "deploying"
    # UPDATE_ROLLBACK_COMPLETE is settled: the stack holds the previous template's resources and can be updated
    if not deployment.stable and status != ROLLED_BACK_UPDATE:
        return "failed"
    if verify is None:
        return "unverified"
    return "live" if verify.get("passed") else "degraded"


def verify_applies(deployment: Deployment, verify: dict[str, Any] | None) -> dict[str, Any] | None:
    """The last verify, if it ran against this deployment (same region, account and stack incarnation)."""
    if verify is None:
        return None
    if verify.get("region") != deployment.region or verify.get("account") != deployment.account:
        return None
    if deployment.exists and verify.get("stack_id") and verify["stack_id"] != deployment.stack_id:
        return None  # a run against an earlier incarnation of the stack says nothing about this one
    return verify


def subscribers_of(deployment: Deployment) -> list[dict[str, Any]]:
    """The subscribers as the deploy had them (the stack's record): handler, source, filters, options, grants, and
    the names the stack's outputs give them; none when the stack is not deployed (cleared, as ``realized``)."""
    if not deployment.exists:
        return []

    def out(name: str, what: str) -> str | None:
        return deployment.out(names.subscriber_output(name, what))

    return [
        {
            "name": spec.name,
            "handler": f"{spec.handler_file}:{spec.function}",
            "source": spec.source,
            "filters": list(spec.filters),
            "per_record": spec.per_record,
            "options": dict(spec.options),
            "grants": [{"resource": g.resource, "actions": list(g.actions)} for g in spec.grants],
            "function": out(spec.name, names.OUT_SUBSCRIBER_FUNCTION),
            "mapping_uuid": out(spec.name, names.OUT_SUBSCRIBER_MAPPING),
            "failure_bucket": out(spec.name, names.OUT_SUBSCRIBER_FAILURE_BUCKET),
            "log_group": out(spec.name, names.OUT_SUBSCRIBER_LOG_GROUP),
        }
        for spec in deployment.config.subscribers
    ]


def _as_json(value: Any) -> Any:
    """``value`` as JSON reads it back (tuples as lists): a record loaded from disk compares equal to its source."""
    return json.loads(json.dumps(value, default=str))


def build_ledger(
    deployment: Deployment,
    verify: dict[str, Any] | None,
    previous: dict[str, Any] | None,
    resolved_by: str | None = None,
    retained: dict[str, Any] | None = None,
    torn_down: bool = False,
) -> dict[str, Any]:
    verify = verify_applies(deployment, verify)
    realized = (
        deployment.realized()
        if deployment.exists
        else {key: None for key in deployment.realized()}
        | {
            "region": deployment.region,
            "account": deployment.account,
            "stack_name": deployment.config.stack_name,
        }
    )
    knobs = deployment.config.as_knobs()
    stale = bool(verify and verify.get("knobs") and _as_json(verify["knobs"]) != _as_json(knobs))
    return {
        "kind": "doctable-ledger",
        "table": deployment.config.table_name,
        "written_at": now_iso(),
        "status": status_of(deployment, verify, torn_down or previous is not None or verify is not None),
        "resolved_inputs": {
            **knobs,
            "subscribers": [
                spec.name for spec in deployment.config.subscribers
            ],  # declared: ``subscribers`` below
            "resolved_by": resolved_by or _who(),
            "resolved_at": now_iso(),
        },
        # "deployed": the knobs the stack recorded; "given": the stack records none (not deployed, or older)
        "knobs_source": deployment.knobs_source,
        "pending_knobs": [p.as_dict() for p in deployment.pending],
        "realized": realized,
        "subscribers": subscribers_of(deployment),
        "stack": {
            "status": deployment.stack_status,
            "reason": deployment.status_reason,
            "last_updated": deployment.last_updated,
        },
        "last_verified": None
        if verify is None
        else {
            "at": verify.get("finished_at"),
            "run_id": verify.get("run_id"),
            "passed": verify.get("passed"),
            "counts": verify.get("counts"),
            "knobs_differ_from_now": stale,
            "endpoint": verify.get("endpoint"),
            "rows": verify.get("rows", []),
        },
        "retained": retained or {},
        "previous_status": (previous or {}).get("status"),
    }


def _who() -> str:
    try:
        return os.environ.get("DOCTABLE_RESOLVED_BY") or getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _yaml_scalar(value: Any) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return ON if value else OFF
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return ", ".join(value) or "—"
    return str(value)


def render_markdown(ledger: dict[str, Any]) -> str:
    table = ledger["table"]
    lines = [
        f"# Live State — {table}",
        "",
        f"_Written by `doctable ledger` at {ledger['written_at']}. The cloud is the source of truth; this file"
        " is its audit record._",
        "",
        "```yaml",
        f"status:        {ledger['status']}",
    ]
    verified = ledger.get("last_verified")
    if verified:
        verdict = "PASSED" if verified.get("passed") else "FAILED"
        counts = verified.get("counts") or {}
        lines.append(
            f"last_verified: {verified.get('at')} — {verdict} ({counts.get('PASS', 0)} pass, "
            f"{counts.get('FAIL', 0)} fail, {counts.get('SKIP', 0)} skip)"
        )
    else:
        lines.append("last_verified: —   # run `doctable verify` for this environment")
    lines += ["", "resolved_inputs:"]
    for key, value in ledger["resolved_inputs"].items():
        lines.append(f"  {key + ':':<24}{_yaml_scalar(value)}")
    for pending in ledger.get("pending_knobs") or []:
        lines.append(
            f"  # pending: {pending['knob']} deployed {pending['deployed']}, given {pending['given']} "
            "(deploy to apply)"
        )
    lines += [
        "realized:" + ("                 # cleared: the stack is gone" if ledger["status"] == "gone" else "")
    ]
    for key, value in ledger["realized"].items():
        lines.append(f"  {key + ':':<24}{_yaml_scalar(value)}")
    lines += _subscriber_lines(ledger.get("subscribers") or [])
    if ledger.get("retained"):
        lines.append("retained:                  # kept on purpose when the stack went")
        for key, value in ledger["retained"].items():
            lines.append(f"  {key + ':':<24}{_yaml_scalar(value)}")
    lines += ["```", ""]
    stack = ledger.get("stack") or {}
    if stack.get("status"):
        reason = f" — {stack['reason']}" if stack.get("reason") else ""
        lines += [f"Stack status: `{stack['status']}`{reason} (last change {stack.get('last_updated')}).", ""]
    if verified:
        if verified.get("knobs_differ_from_now"):
            lines += ["> ⚠ The last verify ran with different knobs than the ones resolved now.", ""]
        lines += [f"## Last verify ({verified.get('at')}, run `{verified.get('run_id')}`)", ""]
        rows = [[r["check"], r["expected"], r["observed"], r["result"]] for r in verified.get("rows", [])]
        lines += [markdown_table(["✔ check", "expected", "observed", "result"], rows), ""]
    return "\n".join(lines)


def _subscriber_lines(subscribers: list[dict[str, Any]]) -> list[str]:
    if not subscribers:
        return []
    lines = ["subscribers:               # as deployed"]
    for subscriber in subscribers:
        lines.append(f"  {subscriber['name']}:")
        for key, value in subscriber.items():
            if key == "name":
                continue
            if key == "grants":
                value = [f"{g['resource']}: {' '.join(g['actions'])}" for g in value]
            elif key == "options":
                value = [f"{k}={v}" for k, v in value.items()]
            lines.append(f"    {key + ':':<22}{_yaml_scalar(value)}")
    return lines


def write_ledger(directory: Path, ledger: dict[str, Any]) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    md, js = ledger_paths(directory, ledger["table"])
    for path, text in ((md, render_markdown(ledger)), (js, json.dumps(ledger, indent=2, default=str) + "\n")):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return md, js


# ---------------------------------------------------------------------------------------------- command
def region_hint(directory: str | None, table: str) -> str | None:
    """The region the ledger in ``directory`` (None: :func:`ledger_dir`'s default) last recorded the stack in (a
    hint when the stack is not found here)."""
    previous = load_ledger(ledger_dir(directory), table)
    return ((previous or {}).get("realized") or {}).get("region")


def _retained(aws: Aws, deployment: Deployment) -> dict[str, Any]:
    if deployment.exists:
        return {}
    with user_errors("looking for a retained table"):
        table = call_or_none(aws.client("dynamodb").describe_table, TableName=deployment.config.table_name)
    if table is None:
        return {}
    return {"table": table["Table"]["TableName"], "table_arn": table["Table"]["TableArn"]}


def record_ledger(
    ledger_directory: str | None,
    aws: Aws,
    deployment: Deployment,
    record: dict[str, Any] | None = None,
    torn_down: bool = False,
    kept: dict[str, Any] | None = None,
    *,
    state_directory: str | None = None,
    resolved_by: str | None = None,
) -> tuple[dict[str, Any], tuple[Path, Path]]:
    """Build and write the ledger entry in ``ledger_directory`` (None: :func:`ledger_dir`'s default); ``record``
    is verify's run (default: the last one kept in ``state_directory``); ``kept``: what a teardown left on purpose
    besides the table (a subscriber's retained failure bucket); ``resolved_by``: who confirmed the knobs (default:
    $DOCTABLE_RESOLVED_BY, else the user)."""
    directory = ledger_dir(ledger_directory)
    table = deployment.config.table_name
    if record is None:
        record = load_record(state_dir(state_directory), table)
    entry = build_ledger(
        deployment,
        record,
        load_ledger(directory, table),
        resolved_by=resolved_by,
        retained={**_retained(aws, deployment), **(kept or {})},
        torn_down=torn_down,
    )
    return entry, write_ledger(directory, entry)
