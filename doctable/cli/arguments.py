"""What the console script's commands share: the common arguments every command takes (the settings, the
credentials, ``--json``, ``-q``), the :class:`~doctable.core.target.Target` they make, and how a command's parser
hands its work to doctable.api.

A command registers its parser with ``parser.set_defaults(call=..., render=...)``: ``call(args)`` turns the parsed
arguments into a :class:`Call` (the name of a function of doctable.api and its keyword arguments: typed values,
never the namespace), the console script calls that function with the target :func:`target_of` makes, and
``render(result, args)`` prints the typed result (text, or its ``to_json()`` with ``--json``) and returns the exit
code. The command modules below the console script never see argparse."""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from contract import names
from contract.knobs import ENV_VALUES
from contract.settings.resolve import CONFIG_VARIABLE, FILE_NAME
from doctable.core.aws import user_errors
from doctable.core.context import REGIONAL_COMMANDS
from doctable.core.errors import UserError
from doctable.core.target import Target, override_pair


@dataclass(frozen=True)
class Call:
    function: str  # a function of doctable.api
    kwargs: Mapping[str, Any] = field(default_factory=dict)


Caller = Callable[[argparse.Namespace], Call]
Command = Callable[[argparse.Namespace], int]
Renderer = Callable[[Any, argparse.Namespace], int]


def target_of(args: argparse.Namespace) -> Target:
    """The target the common arguments name (``--env``, ``--config``, ``-c``, ``--profile``, ``--region``,
    ``-q``); a ``-c`` that is not KNOB=VALUE is one line naming the form."""
    overrides: dict[str, str] = {}
    for pair in getattr(args, "context", None) or []:
        knob, value = override_pair(pair)
        overrides[knob] = value
    return Target(
        env=getattr(args, "env_name", None),
        config=getattr(args, "config", None),
        overrides=overrides,
        profile=getattr(args, "profile", None),
        region=getattr(args, "region", None),
        quiet=bool(getattr(args, "quiet", False)),
    )


def add_knob_arguments(parser: argparse.ArgumentParser, *, regional: bool = False) -> None:
    """The environment, its settings file and this run's overrides; the credentials' profile and region
    (``regional``: the region may be a replica region of the environment's global table)."""
    group = parser.add_argument_group(
        "settings (doctable.toml, resolved exactly as the CDK app resolves them)"
    )
    group.add_argument(
        "--env",
        dest="env_name",
        metavar="ENV",
        help=f"the environment: {'|'.join(ENV_VALUES)} (or DOCTABLE_ENV)",
    )
    group.add_argument(
        "--config",
        metavar="FILE",
        help=f"the settings file (default: ${CONFIG_VARIABLE}, else {FILE_NAME} here or in the project)",
    )
    group.add_argument(
        "-c",
        "--context",
        dest="context",
        action="append",
        default=[],
        metavar="KNOB=VALUE",
        help=f"override a knob for this run, as `cdk deploy -c` takes it (repeatable; or DOCTABLE_<KNOB>, "
        f"e.g. DOCTABLE_GSI={names.GSI_NAME})",
    )
    creds = parser.add_argument_group("credentials")
    creds.add_argument(
        "--profile", help="the AWS profile (default: AWS_PROFILE, else the SDK's default chain)"
    )
    creds.add_argument(
        "--region",
        help="the AWS region (default: the environment's in the settings file, else AWS_REGION)"
        + (
            "; a replica region of the environment's global table: that region's consumer and subscribers "
            "(verify: that region's rows)"
            if regional
            else ""
        ),
    )


def add_common_arguments(parser: argparse.ArgumentParser, *, json_help: str, regional: bool = False) -> None:
    """The settings (``--env``, ``--config``, ``-c``), the credentials (``--profile``, ``--region``), ``--json``,
    ``-q``."""
    add_knob_arguments(parser, regional=regional)
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
        add_common_arguments(parser, json_help=json_help, regional=name in REGIONAL_COMMANDS)
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
