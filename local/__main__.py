"""``python -m local up|down|env|status``: the same commands as ``doctable local``, without the console script."""

from __future__ import annotations

import argparse
import sys

from local import cli
from local.errors import LocalError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m local")
    sub = parser.add_subparsers(dest="command", required=True)
    cli.register(sub)
    args = parser.parse_args(["local", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args) or 0)
    except LocalError as exc:
        print(f"doctable: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
