"""``python -m local up|down|env|status``: the same commands as ``doctable local``, without the console script."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from local import cli

    parser = argparse.ArgumentParser(prog="python -m local")
    sub = parser.add_subparsers(dest="command", required=True)
    cli.register(sub)
    args = parser.parse_args(["local", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args) or 0)
    except Exception as exc:  # doctable.cli.UserError, without importing the console script's other groups
        if type(exc).__name__ != "UserError":
            raise
        print(f"doctable: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
