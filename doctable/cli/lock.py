"""The console script's side of the environment's lock (doctable/lifecycle/lock.py): ``doctable unlock --env E
ID`` (its parser, its :class:`~doctable.cli.arguments.Call` of ``api.unlock`` and its renderer), and ``--wait
DURATION``, which every command that changes an environment takes (:func:`add_wait_argument`, :func:`wait_of`)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING, Any

from doctable.cli.arguments import Call, add_command, print_json
from doctable.core.errors import UserError

if TYPE_CHECKING:
    from doctable.lifecycle.locking import UnlockResult

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*$")
_UNITS = {None: 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
MAX_WAIT = 24 * 3600.0
WAIT_HELP = (
    "when another command holds the environment's lock, wait for it up to DURATION (seconds, or 90s, 5m, 1h) "
    "instead of stopping at once (exit 3, env.locked)"
)


def duration(text: str) -> float:
    """``--wait``'s value in seconds: a number of seconds, or with a unit (``90s``, ``5m``, ``1h``)."""
    match = _DURATION.match(str(text))
    if match is None:
        raise UserError(
            f"--wait {text!r}: not a duration; allowed: seconds (90) or a number with s, m or h (90s, 5m, 1h)"
        )
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if seconds > MAX_WAIT:
        raise UserError(f"--wait {text!r}: more than {MAX_WAIT / 3600:.0f}h; allowed: 0 to 24h")
    return seconds


def add_wait_argument(parser: argparse.ArgumentParser) -> None:
    """``--wait DURATION`` on a command that holds the environment's lock (read by :func:`wait_of`)."""
    parser.add_argument("--wait", metavar="DURATION", default="0", help=WAIT_HELP)


def wait_of(args: argparse.Namespace) -> float:
    """``--wait``'s seconds; one line (exit 2) for a value that is not a duration."""
    return duration(getattr(args, "wait", "0") or "0")


def no_func(args: argparse.Namespace) -> int:  # pragma: no cover - main calls the API for this command
    raise AssertionError(f"doctable {args.command} runs through doctable.api")


def unlock_call(args: argparse.Namespace) -> Call:
    return Call("unlock", {"lock_id": args.lock_id})


def render_unlock(result: UnlockResult, args: argparse.Namespace) -> int:
    if args.json:
        print_json(result.to_json())
        return 0
    holder = result.broken
    print(f"unlocked environment {result.env}: removed {result.lock}")
    print(f"it was held by {holder.describe()}")
    if not args.quiet:
        print(
            "if that command is still running, it finds its lock gone at its next renewal and says so",
            file=sys.stderr,
        )
    return 0


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "unlock",
        no_func,
        help="break the environment's lock left by a command that died (as terraform force-unlock does)",
        description="Remove the lock of one environment, if its id is ID: the id the refusal of a command that "
        "found the environment locked printed (env.locked). A lock whose holder died also expires by itself when "
        "its lease passes; unlock is for not waiting. Refused (exit 2) when nobody holds the lock or another id "
        "does.",
        json_help="print the lock removed and its holder as JSON",
    )
    parser.add_argument("lock_id", metavar="ID", help="the lock's id (env.locked's holder_id)")
    parser.set_defaults(call=unlock_call, render=render_unlock)
