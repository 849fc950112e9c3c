"""The ``doctable verify`` entry: its arguments, the run, the record kept for the ledger, the output."""

from __future__ import annotations

import argparse
from typing import Any

from contract import names
from doctable.capabilities.ownership import require_owned_table, rolled_back_note
from doctable.core.aws import user_errors
from doctable.core.command import add_command, connect, print_json, seconds
from doctable.core.context import state_dir
from doctable.core.deployment import require_deployed
from doctable.core.errors import UserError
from doctable.core.ledger import record_ledger, region_hint, save_record
from doctable.core.render import Progress, now_iso
from doctable.verify.checks import DEFAULT_SETTLE, DEFAULT_TIMEOUT, Verifier
from doctable.verify.expect import DELIVERY_PREFIX, EXCLUDED_PREFIX, LATEST, NUDGE_PREFIX, WRITING_CHECKS
from doctable.verify.record import render_rows, skipped_lines, summary_line, verify_record

READ_ONLY_LEDGER = (
    "--read-only with --ledger: the ledger records full runs only (a read-only run skips the checks that write); "
    "allowed: --read-only alone, or --ledger without --read-only"
)


def cmd_verify(args: argparse.Namespace) -> int:
    if args.read_only and args.ledger:
        raise UserError(READ_ONLY_LEDGER)
    config, aws, deployment = connect(args)
    require_deployed(deployment, hint_region=region_hint(args, config.table_name))
    with user_errors(f"checking that stack {config.stack_name} owns {deployment.table_name}"):
        # Before one test item is written: never into a table the stack does not own. A read-only run, which
        # writes nothing, still checks only a table the stack owns.
        doing = "verify it read-only" if args.read_only else "write verify's test items into it"
        require_owned_table(aws, deployment, doing=doing)
    progress = Progress("doctable verify", quiet=args.quiet)
    rolled_back = rolled_back_note(deployment)
    if rolled_back:
        progress.say(rolled_back)
    started = now_iso()
    verifier = Verifier(
        aws, deployment, timeout=args.timeout, settle=args.settle, progress=progress, read_only=args.read_only
    )
    with user_errors(f"verifying {config.table_name}"):
        rows = verifier.run()
    record = verify_record(
        deployment, rows, started, verifier.run_id, verifier.skipped, read_only=args.read_only
    )
    # The environment's dashboard (null for a stack deployed before it had one).
    record["dashboard_url"] = names.dashboard_url(deployment.region, deployment.out(names.OUT_DASHBOARD_NAME))
    # A read-only run is not kept: `doctable ledger` reads the last full run's record.
    path = None if args.read_only else save_record(state_dir(args.state_dir), record)
    if args.ledger:
        record_ledger(args, aws, deployment, record)
    if args.json:
        print_json(record)
    else:
        print(render_rows(rows))
        print()
        for line in skipped_lines(record):
            print(line)
        print(summary_line(record))
        if record["dashboard_url"]:
            print(f"dashboard: {record['dashboard_url']}")
        if rolled_back:
            print(f"note: {rolled_back}")
        if path is None:
            print("rows not kept: a read-only run is not recorded for the ledger")
        else:
            print(
                f"rows saved to {path}"
                + (" (ledger written)" if args.ledger else "; `doctable ledger` records them")
            )
    return 0 if record["passed"] else 1


def register(sub: Any) -> None:
    verify = add_command(
        sub,
        "verify",
        cmd_verify,
        help="run the acceptance contract against one deployed environment (cleans up after itself)",
        description="Round-trip, queries, declared config, negative read, tags, mapping, record-level stream "
        "proof and blob clean-up, against the stack's realized resources. Exit 1 if any check fails. "
        "--read-only runs only the checks that read and lists those it skipped.",
        json_help="print the run (rows and verdict) as JSON on stdout",
    )
    verify.add_argument(
        "--timeout", type=seconds, default=DEFAULT_TIMEOUT, help="bound of each wait, seconds (300)"
    )
    verify.add_argument(
        "--settle",
        type=seconds,
        default=DEFAULT_SETTLE,
        help=f"how long a {LATEST} mapping must have been unchanged before the nudge write (120; other "
        "starting positions: none)",
    )
    verify.add_argument(
        "--read-only",
        action="store_true",
        help="write nothing: run only the checks that read (stack, shape, configuration, tags, mapping, "
        f"consumer) and skip each check that writes ({', '.join(WRITING_CHECKS)}; a global table's "
        f"{DELIVERY_PREFIX}<region>; each subscriber's {NUDGE_PREFIX}<name> and {EXCLUDED_PREFIX}<name>), listing "
        "them (--json: "
        "`skipped`); skipped checks do not fail the run. Not recorded: its rows are not kept for "
        "`doctable ledger`, and --ledger with it is refused (exit 2)",
    )
    verify.add_argument("--ledger", action="store_true", help="also write the ledger with this run's rows")
    verify.add_argument("--ledger-dir", help="ledger directory (default: $DOCTABLE_LEDGER_DIR or ./ledger)")
    verify.add_argument(
        "--state-dir", help="where the last rows are kept (default: $DOCTABLE_STATE_DIR or ./.doctable)"
    )
