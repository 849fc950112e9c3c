"""``python -m doctable.cli.demo [--down] [--port N]``: ``make local``'s runner, the main job on the embedded local
AWS step by step (doctable/operate/demo.py), outside the console script's commands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from doctable.operate import demo

    parser = argparse.ArgumentParser(prog="python -m doctable.cli.demo", description=demo.__doc__)
    parser.add_argument("--down", action="store_true", help="stop the local AWS at the end")
    parser.add_argument("--port", type=int, default=demo.default_port())
    args = parser.parse_args(argv)
    return demo.make_local(down=args.down, port=args.port)


if __name__ == "__main__":
    sys.exit(main())
