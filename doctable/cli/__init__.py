"""`doctable`: the project's console script. It builds the parser from each command module's ``register`` and
turns a :class:`~doctable.core.errors.UserError` into one line on stderr with its exit code (``doctable --help``
lists them); with ``--json`` the same error is also one JSON document on stdout."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Sequence
from importlib import metadata
from typing import Any, NoReturn

from doctable import api, local_adapter
from doctable.cli import lock, plan, preview
from doctable.cli.arguments import target_of
from doctable.cli.lifecycle import deploy, preflight, reconcile, teardown, verify
from doctable.cli.operate import bootstrap, invoke, ledger, logs, policy, replay, settings, watch
from doctable.core.errors import EXIT_CODES, EXIT_INTERRUPTED, EXIT_USAGE, UserError, exit_code_of

DESCRIPTION = (
    "The document table on AWS, done right: deploy it, check it, operate it, and run it all on an embedded "
    "local AWS. Every command takes --env ENV (the settings of doctable.toml), -c KNOB=VALUE, --config, "
    "--profile and --region the same way; `doctable COMMAND --help` says what each does."
)


def package_version() -> str:
    """The installed distribution's version (the source tree's when it is not installed)."""
    try:
        return metadata.version("doctable")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def exit_codes_epilog() -> str:
    rows = (
        textwrap.fill(meaning, 100, initial_indent=f"  {code:<4} ", subsequent_indent=" " * 7)
        for code, meaning in EXIT_CODES
    )
    return "exit codes:\n" + "\n".join(rows)


class Parser(argparse.ArgumentParser):
    """argparse's parser whose usage errors (exit 2) are also a JSON document on stdout when ``--json`` was
    asked for: a machine reading stdout never gets an empty document. Subparsers are of this class too."""

    json_requested = False

    def error(self, message: str) -> NoReturn:
        if Parser.json_requested:
            command = self.prog.removeprefix("doctable").strip() or None
            print(json.dumps(error_document(command, message, EXIT_USAGE)))
        super().error(message)


def error_document(
    command: str | None, message: str, code: int, fields: dict[str, str] | None = None
) -> dict[str, Any]:
    """The error as ``--json`` prints it: the message, the exit code, and a stable ``code`` (``usage`` for a
    problem of the input, ``aws.*`` for AWS's, with the refused action, resource and principal where AWS named
    them: doctable.core.aws.failure_fields)."""
    document = {"kind": "doctable-error", "command": command, "error": message, "exit": code}
    return {**document, "code": "usage", **(fields or {})}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="doctable",
        description=textwrap.fill(DESCRIPTION, 100),
        epilog=exit_codes_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"doctable {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # Registration is explicit so `doctable --help` lists every command in a stable order.
    local_adapter.register(sub)
    for command in (
        settings,
        deploy,
        verify,
        ledger,
        preflight,
        reconcile,
        teardown,
        replay,
        plan,
        logs,
        invoke,
        watch,
        policy,
        bootstrap,
    ):
        command.register(sub)
    preview.register(sub)  # its deploy and teardown are doctable.api's: it hands deploy's and teardown's in
    lock.register(sub)  # doctable unlock: the environment's lock (doctable/lifecycle/lock.py)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    # Only the words before a `--` are doctable's (`doctable local run -- cmd --json` is the command's flag).
    own = arguments[: arguments.index("--")] if "--" in arguments else arguments
    Parser.json_requested = "--json" in own
    try:
        args = parser.parse_args(arguments)
    finally:
        Parser.json_requested = False
    try:
        if hasattr(args, "call"):  # a command on doctable.api (doctable/cli/arguments.py says how)
            call = args.call(args)
            result = getattr(api, call.function)(target_of(args), **call.kwargs)
            return int(args.render(result, args))
        return int(args.func(args) or 0)
    except (UserError, local_adapter.LocalError) as exc:
        code = exit_code_of(exc)
        print(f"doctable: {exc}", file=sys.stderr)
        if getattr(args, "json", False):
            # A machine reading stdout gets the error as JSON too, not an empty document.
            print(json.dumps(error_document(args.command, str(exc), code, getattr(exc, "fields", None))))
        return code
    except KeyboardInterrupt:
        print("doctable: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
