"""What every command's entry shares: its registration and common arguments, connecting to the stack, one-line
errors, JSON out."""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from doctable.core import previews
from doctable.core.aws import Aws, user_errors
from doctable.core.context import add_knob_arguments, check_binding, describe_stack, resolve_run
from doctable.core.deployment import Deployment, check_region, use_deployed_knobs
from doctable.core.errors import UserError
from doctable.core.render import Progress
from doctable.core.target import Target, as_target

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from contract.settings.resolve import Resolved

Command = Callable[[argparse.Namespace], int]


def add_common_arguments(parser: argparse.ArgumentParser, *, json_help: str) -> None:
    """The settings (``--env``, ``--config``, ``-c``), the credentials (``--profile``, ``--region``), ``--json``,
    ``-q``."""
    add_knob_arguments(parser)
    parser.add_argument("--json", action="store_true", help=json_help)
    # The same everywhere: what goes to stdout (the result, the table, the JSON) is unchanged.
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress or note lines on stderr")


def add_command(
    sub: Any,
    name: str,
    func: Command,
    *,
    help: str,
    description: str,
    json_help: str | None = None,
    guard: bool = True,
) -> argparse.ArgumentParser:
    """Register ``doctable NAME`` on ``sub`` (the parser's subcommands): its ``help`` line in ``doctable --help``,
    its ``description`` in ``doctable NAME --help``, the common arguments when ``json_help`` says what ``--json``
    prints, and ``func`` as what it runs (:func:`guarded` unless ``guard`` is false). Returns the command's parser,
    for its own arguments."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help, description=description)
    if json_help is not None:
        add_common_arguments(parser, json_help=json_help)
    parser.set_defaults(func=guarded(func) if guard else func)
    return parser


def seconds(value: str) -> float:
    """argparse type: a non-negative number of seconds."""
    try:
        number = float(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from exc
    if number < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return number


def connect(
    target: Target | Any, *, same_region: bool = True, command: str | None = None
) -> tuple[DocTableConfig, Aws, Deployment]:
    """Resolve the settings, open the session (credentials checked first, then the environment's account and
    region binding) and describe the stack; the config returned is the one the stack was deployed with (its
    ``Knobs`` output) whenever it recorded one.

    Settings that differ from the deployed knobs are reported on stderr as pending (``deployment.pending``).
    ``same_region``: refuse a stack whose ARNs name another region or account than the client's. ``command``: the
    command's name, for the progress lines.
    """
    if command is None:
        command = str(getattr(target, "command", "") or "")
    target = previews.reach(as_target(target))  # --env pr-12: the deployed preview of that name
    resolved = resolve_run(target)
    aws = connect_aws(target, resolved)
    deployment = use_settings(use_deployed_knobs(describe_stack(aws, resolved.config)), resolved)
    if same_region:
        check_region(deployment)
    report_knobs(
        deployment,
        Progress(f"doctable {command}".rstrip()),
        quiet=target.quiet,
    )
    return deployment.config, aws, deployment


def use_settings(deployment: Deployment, resolved: Resolved) -> Deployment:
    """What the settings say beside the knobs: this run's overrides, the environment's account binding and every
    declared environment's stack (preflight's environment findings read them)."""
    deployment.overrides = resolved.overrides
    deployment.bound_account = resolved.account
    deployment.qualifier = resolved.qualifier
    deployment.declared_stacks = dict(resolved.stacks)
    deployment.preview_prefix = resolved.preview_prefix
    return deployment


def connect_aws(target: Target | Any, resolved: Resolved) -> Aws:
    """The session for ``target`` (its profile, its region, else the environment's), its identity checked
    against the environment's binding."""
    target = as_target(target)
    aws = Aws.connect(target.region or resolved.region, profile=target.profile)
    aws.identity()
    check_binding(resolved, aws)
    return aws


def report_knobs(deployment: Deployment, progress: Progress, *, quiet: bool = False) -> None:
    """One stderr line per pending knob (even when ``quiet``: a knob that is not live yet must never pass
    unnoticed), and, unless ``quiet``, the note on where the knobs came from."""
    for pending in deployment.pending:
        progress.say(f"{pending.text()} — pending: deploy to apply")
    if deployment.knob_note and not quiet:
        progress.say(deployment.knob_note)


def guarded(fn: Command) -> Command:
    """Whatever AWS or the file system says, the user gets one line, never a traceback: exit 4 for AWS's failures
    (doctable.core.errors.exit_code_of), 2 for the rest."""

    @functools.wraps(fn)
    def run(args: argparse.Namespace) -> int:
        try:
            with user_errors(f"running `doctable {args.command}`"):
                return fn(args)
        except OSError as exc:
            raise UserError(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from exc

    return run


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))
