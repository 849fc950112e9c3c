"""The operations commands: ``doctable verify | ledger | preflight | teardown``.

Each works the same against real AWS (the default credential chain) and the local AWS (``AWS_ENDPOINT_URL``).
Knobs are resolved exactly as the CDK app resolves them (``-c knob=value``, then env vars, then cdk.json).
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Callable
from typing import Any

from contract import names
from contract.knobs import DocTableConfig
from doctable.aws import Aws, call_or_none, user_errors
from doctable.cli import UserError
from doctable.ops import ledger as ledger_mod
from doctable.ops import preflight as preflight_mod
from doctable.ops import replay as replay_mod
from doctable.ops import teardown as teardown_mod
from doctable.ops import verify as verify_mod
from doctable.ops.context import (
    Deployment,
    add_knob_arguments,
    check_region,
    describe_stack,
    require_deployed,
    resolve_knobs,
    state_dir,
)
from doctable.ops.render import Progress, now_iso, text_table


def _connect(args: argparse.Namespace) -> tuple[DocTableConfig, Aws, Deployment]:
    config = resolve_knobs(args)
    aws = Aws.connect(args.region)
    aws.identity()
    deployment = describe_stack(aws, config)
    check_region(deployment)
    return config, aws, deployment


def _ledger_region_hint(args: argparse.Namespace, table: str) -> str | None:
    previous = ledger_mod.load_ledger(ledger_mod.ledger_dir(getattr(args, "ledger_dir", None)), table)
    return ((previous or {}).get("realized") or {}).get("region")


def _guarded(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Whatever AWS or the file system says, the user gets one line (exit 2), never a traceback."""

    @functools.wraps(fn)
    def run(args: argparse.Namespace) -> int:
        try:
            with user_errors(f"running `doctable {args.command}`"):
                return fn(args)
        except OSError as exc:
            raise UserError(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from exc

    return run


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


# ---------------------------------------------------------------------------------------------- verify
def cmd_verify(args: argparse.Namespace) -> int:
    config, aws, deployment = _connect(args)
    require_deployed(deployment, hint_region=_ledger_region_hint(args, config.table_name))
    progress = Progress("doctable verify", quiet=args.quiet)
    started = now_iso()
    verifier = verify_mod.Verifier(
        aws, deployment, timeout=args.timeout, settle=args.settle, progress=progress
    )
    with user_errors(f"verifying {config.table_name}"):
        rows = verifier.run()
    record = verify_mod.verify_record(deployment, rows, started, verifier.run_id)
    path = verify_mod.save_record(state_dir(args.state_dir), record)
    if args.ledger:
        _write_ledger(args, aws, deployment, record)
    if args.json:
        _print_json(record)
    else:
        print(verify_mod.render_rows(rows))
        print()
        print(verify_mod.summary_line(record))
        print(
            f"rows saved to {path}"
            + (" (ledger written)" if args.ledger else "; `doctable ledger` records them")
        )
    return 0 if record["passed"] else 1


# ---------------------------------------------------------------------------------------------- ledger
def _retained(aws: Aws, deployment: Deployment) -> dict[str, Any]:
    if deployment.exists:
        return {}
    with user_errors("looking for a retained table"):
        table = call_or_none(aws.client("dynamodb").describe_table, TableName=deployment.config.table_name)
    if table is None:
        return {}
    return {"table": table["Table"]["TableName"], "table_arn": table["Table"]["TableArn"]}


def _write_ledger(
    args: argparse.Namespace,
    aws: Aws,
    deployment: Deployment,
    record: dict[str, Any] | None = None,
    torn_down: bool = False,
) -> tuple[dict[str, Any], tuple[Any, Any]]:
    directory = ledger_mod.ledger_dir(getattr(args, "ledger_dir", None))
    table = deployment.config.table_name
    if record is None:
        record = verify_mod.load_record(state_dir(getattr(args, "state_dir", None)), table)
    previous = ledger_mod.load_ledger(directory, table)
    entry = ledger_mod.build_ledger(
        deployment,
        record,
        previous,
        resolved_by=getattr(args, "resolved_by", None),
        retained=_retained(aws, deployment),
        torn_down=torn_down,
    )
    return entry, ledger_mod.write_ledger(directory, entry)


def cmd_ledger(args: argparse.Namespace) -> int:
    _config, aws, deployment = _connect(args)
    entry, (md, js) = _write_ledger(args, aws, deployment)
    if args.json:
        _print_json(entry)
    else:
        verified = entry["last_verified"]
        when = f"last verified {verified['at']}" if verified else "never verified"
        print(f"ledger for {entry['table']}: status {entry['status']}, {when}")
        print(f"wrote {md} and {js}")
    return 0


# ------------------------------------------------------------------------------------------- preflight
def cmd_preflight(args: argparse.Namespace) -> int:
    config = resolve_knobs(args)
    aws = Aws.connect(args.region)
    aws.identity()
    deployment = describe_stack(aws, config)
    with user_errors(f"preflight of {config.stack_name}"):
        findings = preflight_mod.run_preflight(aws, deployment)
    stops = [f for f in findings if f.level == preflight_mod.STOP]
    warns = [f for f in findings if f.level == preflight_mod.WARN]
    blocked = bool(stops) or (args.strict and bool(warns))
    if args.json:
        _print_json(
            {
                "kind": "doctable-preflight",
                "table": config.table_name,
                "stack": config.stack_name,
                "region": aws.region,
                "at": now_iso(),
                "go": not blocked,
                "findings": [f.as_dict() for f in findings],
            }
        )
    else:
        print(f"preflight of {config.stack_name} (table {config.table_name}) in {aws.region}:")
        print(preflight_mod.render_findings(findings))
        print()
        if stops:
            print(f"STOP: {stops[0].effect}" + (f" (+{len(stops) - 1} more)" if len(stops) > 1 else ""))
        elif blocked:
            print("STOP (--strict): resolve the warnings first")
        else:
            print("go: nothing blocks the deploy" + (f" ({len(warns)} warning(s) above)" if warns else ""))
    return 1 if blocked else 0


# -------------------------------------------------------------------------------------------- teardown
def cmd_teardown(args: argparse.Namespace) -> int:
    config, aws, deployment = _connect(args)
    progress = Progress("doctable teardown", quiet=args.quiet)
    plan, outcome = teardown_mod.run_teardown(
        aws,
        deployment,
        assume_yes=args.yes,
        lift=args.lift_deletion_protection,
        timeout=args.timeout,
        progress=progress,
    )
    if args.ledger:
        _write_ledger(args, aws, describe_stack(aws, config), torn_down=True)
    if args.json:
        _print_json(
            {"kind": "doctable-teardown", "stack": config.stack_name, "at": now_iso(), **outcome.as_dict()}
        )
    else:
        for title, items in (
            ("removed", outcome.removed),
            ("emptied first", outcome.emptied),
            ("retained on purpose", outcome.retained),
            ("STILL PRESENT", outcome.still_present),
            ("notes", outcome.notes),
        ):
            if items:
                print(f"{title}:")
                for item in items:
                    print(f"  - {item}")
        print(
            "teardown complete: nothing left that is not retained" if outcome.clean else "teardown INCOMPLETE"
        )
    return 0 if outcome.clean else 1


# ---------------------------------------------------------------------------------------------- replay
def cmd_replay(args: argparse.Namespace) -> int:
    config, aws, deployment = _connect(args)
    require_deployed(deployment)
    bucket = deployment.out(names.OUT_FAILURE_BUCKET)
    function = deployment.out(names.OUT_CONSUMER_FUNCTION_NAME) or config.borrowed_consumer_arn
    if not bucket or not function:
        raise UserError(f"{config.stack_name} has no consumer and failure bucket: nothing to replay")
    outcomes = replay_mod.run_replay(
        s3=aws.client("s3"),
        lambda_client=aws.client("lambda"),
        ddb=aws.client("dynamodb"),
        bucket=bucket,
        function=function,
        table=deployment.table_name,
        dry_run=args.dry_run,
    )
    kept = [o for o in outcomes if o.error or o.still_failing]
    if args.json:
        _print_json({"kind": "doctable-replay", "bucket": bucket, "at": now_iso(),
                     "objects": [o.as_dict() for o in outcomes], "kept": len(kept)})  # fmt: skip
    else:
        rows = [(o.key, o.records, o.succeeded, o.rebased, o.result + (f": {o.error}" if o.error else ""))
                for o in outcomes]  # fmt: skip
        print(text_table(["object", "records", "succeeded", "rebased", "result"], rows))
        print(f"{len(outcomes) - len(kept)} replayed and removed, {len(kept)} kept in s3://{bucket}/")
    return 1 if kept else 0


# -------------------------------------------------------------------------------------------- register
def _common(parser: argparse.ArgumentParser, *, json_help: str) -> None:
    add_knob_arguments(parser)
    parser.add_argument("--json", action="store_true", help=json_help)


def _positive(value: str) -> float:
    try:
        number = float(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from exc
    if number < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return number


def register(sub: Any) -> None:
    """Add verify, ledger, preflight, teardown and replay to the console script's subparsers."""
    verify = sub.add_parser(
        "verify",
        help="run the acceptance contract against one deployed environment (cleans up after itself)",
        description="Round-trip, queries, declared config, negative read, tags, mapping, record-level stream "
        "proof and blob clean-up, against the stack's realized resources. Exit 1 if any check fails.",
    )
    _common(verify, json_help="print the run (rows and verdict) as JSON on stdout")
    verify.add_argument(
        "--timeout",
        type=_positive,
        default=verify_mod.DEFAULT_TIMEOUT,
        help="bound of each wait, seconds (300)",
    )
    verify.add_argument(
        "--settle",
        type=_positive,
        default=verify_mod.DEFAULT_SETTLE,
        help="how long a LATEST mapping must have been unchanged before the nudge write (120; TRIM_HORIZON: none)",
    )
    verify.add_argument("--ledger", action="store_true", help="also write the ledger with this run's rows")
    verify.add_argument("--ledger-dir", help="ledger directory (default: $DOCTABLE_LEDGER_DIR or ./ledger)")
    verify.add_argument(
        "--state-dir", help="where the last rows are kept (default: $DOCTABLE_STATE_DIR or ./.doctable)"
    )
    verify.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    verify.set_defaults(func=_guarded(cmd_verify))

    ledger = sub.add_parser(
        "ledger",
        help="write the environment's Live State (knobs, realized ids, status, last verify) as Markdown + JSON",
    )
    _common(ledger, json_help="also print the ledger as JSON on stdout")
    ledger.add_argument("--ledger-dir", help="output directory (default: $DOCTABLE_LEDGER_DIR or ./ledger)")
    ledger.add_argument("--state-dir", help="where verify kept its last rows (default: ./.doctable)")
    ledger.add_argument(
        "--resolved-by", help="who confirmed the knobs (default: $DOCTABLE_RESOLVED_BY or $USER)"
    )
    ledger.set_defaults(func=_guarded(cmd_ledger))

    preflight = sub.add_parser(
        "preflight",
        help="observe before a deploy: foreign same-named table, what the update does to a live table, consumer",
    )
    _common(preflight, json_help="print the findings as JSON on stdout")
    preflight.add_argument("--strict", action="store_true", help="warnings stop the deploy too")
    preflight.add_argument("--ledger-dir", help=argparse.SUPPRESS)
    preflight.set_defaults(func=_guarded(cmd_preflight))

    teardown = sub.add_parser(
        "teardown",
        help="remove one environment's stack (ownership-checked, confirmed) and verify what is gone or retained",
    )
    _common(teardown, json_help="print the outcome as JSON on stdout")
    teardown.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    teardown.add_argument(
        "--lift-deletion-protection",
        action="store_true",
        help="proceed although the table has deletion protection (lifted only where the stack deletes the table)",
    )
    teardown.add_argument(
        "--timeout", type=_positive, default=1800.0, help="bound of the deletion wait (1800)"
    )
    teardown.add_argument("--ledger", action="store_true", help="also write the ledger (status gone)")
    teardown.add_argument("--ledger-dir", help="ledger directory (default: $DOCTABLE_LEDGER_DIR or ./ledger)")
    teardown.add_argument("--state-dir", help=argparse.SUPPRESS)
    teardown.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    teardown.set_defaults(func=_guarded(cmd_teardown))

    replay = sub.add_parser(
        "replay",
        help="re-drive the batches kept on the failure destination through the consumer; remove them once done",
        description="Invoke the consumer with each kept batch; delete the object only when every record in it "
        "succeeded (still-failing records stay). Exit 1 while anything is kept.",
    )
    _common(replay, json_help="print the outcome as JSON on stdout")
    replay.add_argument("--dry-run", action="store_true", help="list what would be replayed, change nothing")
    replay.set_defaults(func=_guarded(cmd_replay))


__all__ = ["register"]
