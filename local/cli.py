"""``doctable local up|down|env|status|run`` (and ``python -m local``): the embedded local AWS's commands."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from local import auth, state
from local.control import env_lines, health, running, start, stop, unset_line
from local.errors import LocalError

PORT_ENV = "DOCTABLE_LOCAL_PORT"
# A shell's exit code for a command it cannot find, and for one it cannot execute.
NOT_FOUND, NOT_EXECUTABLE = 127, 126


# ---- commands ----
def _cmd_up(args: argparse.Namespace) -> int:
    started = time.monotonic()
    was = running()
    info = start(args.port, iam=args.iam)
    verb = "already running" if was is not None else f"started in {time.monotonic() - started:.1f}s"
    mode = (health(info.port) or {}).get("iam", "?")
    print(
        f"local AWS {verb}: {info.url} (pid {info.pid}, IAM {mode}, state in {state.state_dir()})\n"
        'point a shell at it with:  eval "$(doctable local env)"   or run one command:  doctable local run -- CMD'
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


def command_of(words: Sequence[str]) -> list[str]:
    """The command after ``run``: argparse keeps the ``--`` that separates it; LocalError when there is none."""
    command = list(words[1:] if words and words[0] == "--" else words)
    if not command:
        raise LocalError("nothing to run: doctable local run -- COMMAND [ARG...]")
    return command


def run_command(command: Sequence[str], env: dict[str, str]) -> int:
    """Run ``command`` with ``env``; its exit code (128+N when signal N ended it, as a shell says)."""
    try:
        process = subprocess.Popen(list(command), env=env)
    except FileNotFoundError:
        print(f"doctable: {command[0]}: command not found", flush=True, file=sys.stderr)
        return NOT_FOUND
    except PermissionError:
        print(f"doctable: {command[0]}: permission denied", flush=True, file=sys.stderr)
        return NOT_EXECUTABLE
    while True:
        try:
            code = process.wait()
            break
        except KeyboardInterrupt:
            # The terminal sent SIGINT to the command too: its own handling decides; wait for it to end.
            continue
    return 128 - code if code < 0 else code


def _cmd_run(args: argparse.Namespace) -> int:
    command = command_of(args.command_line)
    info = running()
    if info is None:
        raise LocalError("the local AWS is not running; start it with `doctable local up`")
    return run_command(command, state.run_env(info.port, os.environ))


def register(sub: Any) -> None:
    """Add the ``local`` command group to the console script's subparsers."""
    parser = sub.add_parser(
        "local",
        help="the embedded local AWS (moto server mode) for cdk deploy, the commands and the tests",
        description="An AWS on this machine (no account, no Docker): CloudFormation, DynamoDB and its streams, "
        "Lambda running the deployed code, S3, CloudWatch Logs, IAM enforced. Its state lives in memory.",
    )
    group = parser.add_subparsers(dest="local_command", required=True, metavar="ACTION")

    up = group.add_parser(
        "up",
        help="start the local AWS in the background (idempotent) and wait until ready",
        description=f"Start the local AWS on https://localhost:PORT (default {state.DEFAULT_PORT}) in the "
        "background and wait until it answers; do nothing if it already runs.",
    )
    up.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get(PORT_ENV, state.DEFAULT_PORT)),
        help=f"the HTTPS port it listens on (default {state.DEFAULT_PORT}, or ${PORT_ENV}; 0 picks a free one)",
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

    down = group.add_parser(
        "down",
        help="stop the local AWS",
        description="Stop the local AWS; its state (stacks, tables, objects) is forgotten.",
    )
    down.set_defaults(func=_cmd_down)

    env = group.add_parser(
        "env",
        help="print the export lines that point a shell (and the CDK CLI) at it",
        description='Print the export lines that point a shell at the local AWS: eval "$(doctable local env)"; '
        'take them back with eval "$(doctable local env --unset)".',
    )
    env.add_argument("--port", type=int, default=0, help="print for this port even if it is not running")
    env.add_argument(
        "--unset",
        action="store_true",
        help='print the line that takes the variables back: eval "$(doctable local env --unset)"',
    )
    env.set_defaults(func=_cmd_env)

    status = group.add_parser(
        "status",
        help="say whether the local AWS runs (exit 1 if not)",
        description="Say whether the local AWS runs, where and since when; exit 1 if it does not.",
    )
    status.set_defaults(func=_cmd_status)

    run = group.add_parser(
        "run",
        help="run one command with the local AWS's environment, leaving the shell as it was",
        description="Run COMMAND with the variables `doctable local env` exports (and without those that would "
        "pick other credentials or endpoints: AWS_PROFILE, AWS_SESSION_TOKEN, AWS_ENDPOINT_URL_<SERVICE>...), "
        "like awslocal or cdklocal; the shell is left as it was. The exit code is the command's (127: not "
        "found). Example: doctable local run -- aws dynamodb list-tables",
        usage="doctable local run [-h] -- COMMAND [ARG ...]",
    )
    run.add_argument(
        "command_line", nargs=argparse.REMAINDER, metavar="COMMAND", help="the command and its arguments"
    )
    run.set_defaults(func=_cmd_run)
