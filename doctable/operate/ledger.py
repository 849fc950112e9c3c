"""``doctable ledger``: write the environment's Live State (knobs, realized ids, status, last verify) as Markdown and
JSON; the store it writes is doctable/core/ledger.py."""

from __future__ import annotations

import argparse
from typing import Any

from doctable.core.command import add_command, connect, print_json
from doctable.core.ledger import record_ledger


def cmd_ledger(args: argparse.Namespace) -> int:
    _config, aws, deployment = connect(args)
    entry, (md, js) = record_ledger(args, aws, deployment)
    if args.json:
        print_json(entry)
    else:
        verified = entry["last_verified"]
        when = f"last verified {verified['at']}" if verified else "never verified"
        print(f"ledger for {entry['table']}: status {entry['status']}, {when}")
        print(f"wrote {md} and {js}")
    return 0


def register(sub: Any) -> None:
    ledger = add_command(
        sub,
        "ledger",
        cmd_ledger,
        help="write the environment's Live State (knobs, realized ids, status, last verify) as Markdown + JSON",
        description="Write ledger/<table>.md and .json: the knobs the stack was deployed with, the realized "
        "identifiers (ARNs, names), the status (live, degraded, unverified, gone...) and the last verify's rows. "
        "Changes nothing in AWS.",
        json_help="also print the ledger as JSON on stdout",
    )
    ledger.add_argument("--ledger-dir", help="output directory (default: $DOCTABLE_LEDGER_DIR or ./ledger)")
    ledger.add_argument("--state-dir", help="where verify kept its last rows (default: ./.doctable)")
    ledger.add_argument(
        "--resolved-by", help="who confirmed the knobs (default: $DOCTABLE_RESOLVED_BY or $USER)"
    )
