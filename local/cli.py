"""``doctable local up|down|env|status`` (and ``python -m local``): the embedded local AWS's commands."""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from local import auth, state
from local.control import env_lines, health, running, start, stop, unset_line
from local.errors import LocalError


# ---- commands ----
def _cmd_up(args: argparse.Namespace) -> int:
    started = time.monotonic()
    was = running()
    info = start(args.port, iam=args.iam)
    verb = "already running" if was is not None else f"started in {time.monotonic() - started:.1f}s"
    mode = (health(info.port) or {}).get("iam", "?")
    print(
        f"local AWS {verb}: {info.url} (pid {info.pid}, IAM {mode}, state in {state.state_dir()})\n"
        'point a shell at it with:  eval "$(doctable local env)"'
    )
    return 0


def _cmd_down(args: argparse.Namespace) -> int:
    if stop():
        print("local AWS stopped")
    else:
        print("local AWS was not running")
    return 0


def _cmd_env(args: argparse.Namespace) -> int:
    if args.unset:
        print(unset_line())
        return 0
    info = running()
    if info is None and not args.port:
        raise LocalError("the local AWS is not running; start it with `doctable local up`")
    port = info.port if info is not None else args.port
    print("\n".join(env_lines(port)))
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    info = running()
    if info is None:
        print("local AWS: not running")
        return 1
    mode = (health(info.port) or {}).get("iam", "?")
    print(f"local AWS: running at {info.url} (pid {info.pid}, moto {info.moto_version}, IAM {mode}, "
          f"up {time.time() - info.started_at:.0f}s, state in {state.state_dir()})")  # fmt: skip
    return 0


def register(sub: Any) -> None:
    """Add the ``local`` command group to the console script's subparsers."""
    parser = sub.add_parser(
        "local", help="the embedded local AWS (moto server mode) for cdk deploy and tests"
    )
    group = parser.add_subparsers(dest="local_command", required=True, metavar="ACTION")

    up = group.add_parser(
        "up", help="start the local AWS in the background (idempotent) and wait until ready"
    )
    up.add_argument(
        "--port", type=int, default=int(os.environ.get("DOCTABLE_LOCAL_PORT", state.DEFAULT_PORT))
    )
    mode = up.add_mutually_exclusive_group()
    mode.add_argument(
        "--iam", dest="iam", action="store_true", default=None, help=f"enforce IAM (also {auth.ENV}=on)"
    )
    mode.add_argument(
        "--no-iam",
        dest="iam",
        action="store_false",
        help=f"do not enforce IAM (the lenient mode; also {auth.ENV}=off): every signed request is allowed",
    )
    up.set_defaults(func=_cmd_up)

    down = group.add_parser("down", help="stop the local AWS")
    down.set_defaults(func=_cmd_down)

    env = group.add_parser("env", help="print the export lines that point a shell (and the CDK CLI) at it")
    env.add_argument("--port", type=int, default=0, help="print for this port even if it is not running")
    env.add_argument(
        "--unset",
        action="store_true",
        help='print the line that takes the variables back: eval "$(doctable local env --unset)"',
    )
    env.set_defaults(func=_cmd_env)

    status = group.add_parser("status", help="say whether the local AWS runs (exit 1 if not)")
    status.set_defaults(func=_cmd_status)
