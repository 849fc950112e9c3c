"""The ``doctable verify`` entry: its arguments, the run, the record kept for the ledger, the output."""

from __future__ import annotations

import argparse
from typing import Any

from doctable.aws import user_errors
from doctable.ops.command import add_common_arguments, connect, guarded, print_json, seconds
from doctable.ops.context import require_deployed, state_dir
from doctable.ops.ledger import record_ledger, region_hint, save_record
from doctable.ops.ownership import require_owned_table, rolled_back_note
from doctable.ops.render import Progress, now_iso
from doctable.ops.verify.checks import DEFAULT_SETTLE, DEFAULT_TIMEOUT, Verifier
from doctable.ops.verify.expect import LATEST
from doctable.ops.verify.record import render_rows, summary_line, verify_record


def cmd_verify(args: argparse.Namespace) -> int:
    config, aws, deployment = connect(args)
    require_deployed(deployment, hint_region=region_hint(args, config.table_name))
    with user_errors(f"checking that stack {config.stack_name} owns {deployment.table_name}"):
        # Before one test item is written: never into a table the stack does not own.
        require_owned_table(aws, deployment, doing="write verify's test items into it")
    progress = Progress("doctable verify", quiet=args.quiet)
    rolled_back = rolled_back_note(deployment)
    if rolled_back:
        progress.say(rolled_back)
    started = now_iso()
    verifier = Verifier(aws, deployment, timeout=args.timeout, settle=args.settle, progress=progress)
    with user_errors(f"verifying {config.table_name}"):
        rows = verifier.run()
    record = verify_record(deployment, rows, started, verifier.run_id)
    path = save_record(state_dir(args.state_dir), record)
    if args.ledger:
        record_ledger(args, aws, deployment, record)
    if args.json:
        print_json(record)
    else:
        print(render_rows(rows))
        print()
        print(summary_line(record))
        if rolled_back:
            print(f"note: {rolled_back}")
        print(
            f"rows saved to {path}"
            + (" (ledger written)" if args.ledger else "; `doctable ledger` records them")
        )
    return 0 if record["passed"] else 1


def register(sub: Any) -> None:
    verify = sub.add_parser(
        "verify",
        help="run the acceptance contract against one deployed environment (cleans up after itself)",
        description="Round-trip, queries, declared config, negative read, tags, mapping, record-level stream "
        "proof and blob clean-up, against the stack's realized resources. Exit 1 if any check fails.",
    )
    add_common_arguments(verify, json_help="print the run (rows and verdict) as JSON on stdout")
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
    verify.add_argument("--ledger", action="store_true", help="also write the ledger with this run's rows")
    verify.add_argument("--ledger-dir", help="ledger directory (default: $DOCTABLE_LEDGER_DIR or ./ledger)")
    verify.add_argument(
        "--state-dir", help="where the last rows are kept (default: $DOCTABLE_STATE_DIR or ./.doctable)"
    )
    verify.set_defaults(func=guarded(cmd_verify))
