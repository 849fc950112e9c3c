"""`doctable`: the project's console script. It builds the parser from each command module's ``register`` and
turns a :class:`~doctable.errors.UserError` into one line on stderr (exit 2)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib import metadata

from doctable import local_adapter
from doctable.errors import UserError
from doctable.ops import deploy, ledger, plan, preflight, reconcile, replay, settings, teardown
from doctable.ops.verify import command as verify


def package_version() -> str:
    """The installed distribution's version (the source tree's when it is not installed)."""
    try:
        return metadata.version("doctable")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="doctable", description="The document table on AWS, done right.")
    parser.add_argument("--version", action="version", version=f"doctable {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # Registration is explicit so `doctable --help` lists every command in a stable order.
    local_adapter.register(sub)
    for command in (settings, deploy, verify, ledger, preflight, reconcile, teardown, replay, plan):
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (UserError, local_adapter.LocalError) as exc:
        print(f"doctable: {exc}", file=sys.stderr)
        if getattr(args, "json", False):
            # A machine reading stdout gets the error as JSON too, not an empty document.
            print(
                json.dumps({"kind": "doctable-error", "command": args.command, "error": str(exc), "exit": 2})
            )
        return 2
    except KeyboardInterrupt:
        print("doctable: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
