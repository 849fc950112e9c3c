"""`doctable`: the project's console script. Each command group lives in its own module and registers here."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


class UserError(Exception):
    """An error the user can act on: printed as one line, never as a traceback."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="doctable", description="The document table on AWS, done right.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # Registration is explicit so `doctable --help` lists every group in a stable order.
    from local import cli as local_cli

    local_cli.register(sub)
    try:
        from doctable import ops
    except ImportError:  # the operations commands land in their own change
        ops = None  # type: ignore[assignment]
    if ops is not None:
        ops.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"doctable: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("doctable: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
