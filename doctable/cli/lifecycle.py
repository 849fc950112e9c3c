"""The console script's lifecycle commands: ``doctable deploy``, ``verify``, ``preflight``, ``reconcile`` and
``teardown``: each one's parser (its arguments and help), the :class:`~doctable.cli.arguments.Call` of its
function of doctable.api, and the renderer of its result (text, or ``to_json()`` with ``--json``) returning the
exit code."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from doctable.cli.arguments import Call, add_command, print_json, seconds
from doctable.cli.lock import add_wait_argument, wait_of
from doctable.lifecycle.results import (
    ALLOW_FLAG,
    CDK_OUTPUT_VARIABLE,
    INDEX_TIMEOUT,
    REQUIRE_BINDING_FLAG,
    render_drift,
    render_findings,
)
from doctable.verify.expect import DELIVERY_PREFIX, EXCLUDED_PREFIX, LATEST, NUDGE_PREFIX, WRITING_CHECKS
from doctable.verify.record import DEFAULT_SETTLE, DEFAULT_TIMEOUT, render_rows, skipped_lines, summary_line

if TYPE_CHECKING:
    from doctable.lifecycle.results import DeployResult, PreflightResult, ReconcileResult, TeardownResult
    from doctable.verify.record import VerifyResult


def no_func(args: argparse.Namespace) -> int:  # pragma: no cover - main calls the API for these commands
    raise AssertionError(f"doctable {args.command} runs through doctable.api")


# ---------------------------------------------------------------------------------------------- verify
def verify_call(args: argparse.Namespace) -> Call:
    return Call(
        "verify",
        {
            "timeout": args.timeout,
            "settle": args.settle,
            "read_only": args.read_only,
            "ledger": args.ledger,
            "ledger_dir": args.ledger_dir,
            "state_dir": args.state_dir,
        },
    )


def verify_lines(result: VerifyResult) -> list[str]:
    """verify's text output: its rows, the checks it skipped, the verdict, the dashboard and the note."""
    record = result.to_json()
    lines = [render_rows(list(result.rows)), "", *skipped_lines(record), summary_line(record)]
    if result.dashboard_url:
        lines.append(f"dashboard: {result.dashboard_url}")
    if result.rolled_back:
        lines.append(f"note: {result.rolled_back}")
    return lines


def print_verify(result: VerifyResult) -> None:
    for line in verify_lines(result):
        print(line)
    if result.saved_to is None:
        print("rows not kept: a read-only run is not recorded for the ledger")
    else:
        print(
            f"rows saved to {result.saved_to}"
            + (" (ledger written)" if result.ledger_written else "; `doctable ledger` records them")
        )


def render_verify(result: VerifyResult, args: argparse.Namespace) -> int:
    if args.json:
        print_json(result.to_json())
    else:
        print_verify(result)
    return 0 if result.passed else 1


def register_verify(sub: Any) -> None:
    verify = add_command(
        sub,
        "verify",
        no_func,
        help="run the acceptance contract against one deployed environment (cleans up after itself)",
        description="Round-trip, queries, declared config, negative read, tags, mapping, record-level stream "
        "proof and blob clean-up, against the stack's realized resources. Exit 1 if any check fails. "
        "--read-only runs only the checks that read and lists those it skipped.",
        json_help="print the run (rows and verdict) as JSON on stdout",
    )
    verify.set_defaults(call=verify_call, render=render_verify)
    verify.add_argument(
        "--timeout", type=seconds, default=DEFAULT_TIMEOUT, help="bound of each wait, seconds (300)"
    )
    verify.add_argument(
        "--settle",
        type=seconds,
        default=DEFAULT_SETTLE,
        help=f"how long a {LATEST} mapping must have been unchanged before the nudge write (120; other "
        "starting positions: none)",
    )
    verify.add_argument(
        "--read-only",
        action="store_true",
        help="write nothing: run only the checks that read (stack, shape, configuration, tags, mapping, "
        f"consumer) and skip each check that writes ({', '.join(WRITING_CHECKS)}; a global table's "
        f"{DELIVERY_PREFIX}<region>; each subscriber's {NUDGE_PREFIX}<name> and {EXCLUDED_PREFIX}<name>), listing "
        "them (--json: "
        "`skipped`); skipped checks do not fail the run. Not recorded: its rows are not kept for "
        "`doctable ledger`, and --ledger with it is refused (exit 2)",
    )
    verify.add_argument("--ledger", action="store_true", help="also write the ledger with this run's rows")
    verify.add_argument("--ledger-dir", help="ledger directory (default: $DOCTABLE_LEDGER_DIR or ./ledger)")
    verify.add_argument(
        "--state-dir", help="where the last rows are kept (default: $DOCTABLE_STATE_DIR or ./.doctable)"
    )


# ---------------------------------------------------------------------------------------------- deploy
def deploy_call(args: argparse.Namespace) -> Call:
    return Call(
        "deploy",
        {
            "allow_destructive": args.allow_destructive,
            "require_binding": args.require_binding,
            "outputs_file": args.outputs_file,
            "cdk_output": args.cdk_output,
            "no_verify": args.no_verify,
            "verify_timeout": args.verify_timeout,
            "index_timeout": args.index_timeout,
            "wait": wait_of(args),
            **deploy_io(args),
        },
    )


def deploy_io(args: argparse.Namespace) -> dict[str, Any]:
    """What a deploy run from the console script does at the terminal: the gate's question at a terminal (never
    with --json), the CDK CLI's output and the findings on stdout (stderr with --json: stdout is its document)."""
    interactive = not args.json and sys.stdin.isatty()
    return {
        "ask": input if interactive else None,
        "cdk_to_stdout": not args.json,
        "on_findings": None if args.json else print_deploy_findings,
    }


def print_deploy_findings(result: DeployResult) -> None:
    """The preflight's findings, first: the gate's question refers to them."""
    print(f"deploy of {result.stack} (env {result.env}) to account {result.account}, {result.region}:")
    print(render_findings(result.findings))
    print(flush=True)


def render_deploy(result: DeployResult, args: argparse.Namespace) -> int:
    if args.json:
        print_json(result.to_json())
    elif result.verify is not None:
        print_verify(result.verify)
    for line in result.messages:
        print(f"doctable deploy: {line}", file=sys.stderr)
    return result.exit


def register_deploy(sub: Any) -> None:
    deploy = add_command(
        sub,
        "deploy",
        no_func,
        help="the guarded deploy: settings, preflight, the destructive-change gate, cdk deploy, verify",
        description="Deploy one environment as doctable.toml declares it. A destructive change (an index or the "
        "stream removed, the mapping deleted, the table replaced, PITR off, TTL on...) is refused (exit 3, "
        f"nothing deployed) unless {ALLOW_FLAG} is given or confirmed at a terminal.",
        json_help="print the findings, the gate's verdict and the outcome as JSON",
    )
    deploy.set_defaults(call=deploy_call, render=render_deploy)
    deploy.add_argument(ALLOW_FLAG, action="store_true", help="deploy destructive changes too")
    deploy.add_argument(
        REQUIRE_BINDING_FLAG,
        action="store_true",
        help="refuse (exit 3) a prod-tier environment the settings file binds to no account, and stop on a "
        "bootstrap whose execution role is an administrator (the pipeline passes it)",
    )
    deploy.add_argument("--outputs-file", help="write the stack's outputs to this JSON file")
    deploy.add_argument(
        "--cdk-output",
        default=os.environ.get(CDK_OUTPUT_VARIABLE) or None,
        metavar="DIR",
        help=f"the cloud assembly's directory (cdk's --output; default ${CDK_OUTPUT_VARIABLE}, else cdk.out): "
        "two deploys at once need one each, as the CDK CLI locks its output directory",
    )
    deploy.add_argument("--no-verify", action="store_true", help="skip `doctable verify` after the deploy")
    add_wait_argument(deploy)
    deploy.add_argument(
        "--verify-timeout",
        type=seconds,
        default=DEFAULT_TIMEOUT,
        help="bound of each of verify's waits, seconds",
    )
    deploy.add_argument(
        "--index-timeout",
        type=seconds,
        default=INDEX_TIMEOUT,
        help="bound of the wait for each index to be ACTIVE or gone, seconds (a backfill of a big table takes "
        "hours; a run stopped by it continues at the next deploy)",
    )


# ---------------------------------------------------------------------------------------------- preflight
def render_preflight(result: PreflightResult, args: argparse.Namespace) -> int:
    if args.json:
        print_json(result.to_json())
        return 0 if result.go else 1
    print(f"preflight of {result.stack} (table {result.table}) in {result.region}:")
    print("what this deploy changes:")
    print(render_findings(result.findings))
    print()
    if result.drift:
        print(
            "drift CloudFormation will not repair (the deploy leaves it; `doctable reconcile` lists the repairs):"
        )
        print(render_findings(result.drift))
        print()
    dangerous = [f for f in result.findings if f.gates]
    if dangerous:
        print(
            f"{len(dangerous)} destructive change(s), marked ! above "
            f"({', '.join(result.destructive)}): the deploy asks before it goes ahead"
        )
    stops, warns = result.stops, result.warnings
    if stops:
        print(f"STOP: {stops[0].effect}" + (f" (+{len(stops) - 1} more)" if len(stops) > 1 else ""))
    elif not result.go:
        print("STOP (--strict): resolve the warnings first")
    else:
        print("go: nothing blocks the deploy" + (f" ({len(warns)} warning(s) above)" if warns else ""))
    return 0 if result.go else 1


def register_preflight(sub: Any) -> None:
    preflight = add_command(
        sub,
        "preflight",
        no_func,
        help="observe before a deploy: foreign same-named table, what the update does to a live table, consumer",
        description="Observe before deploying (doctable deploy runs it first): a same-named table outside the "
        "stack, what the update does to the live table and what it costs, the consumer's grants. Each finding "
        "has a stable code, a destructive flag and before/after values (--json). Changes nothing. Exit 1 when a "
        "finding stops the deploy (STOP; with --strict, warnings too).",
        json_help="print the findings as JSON on stdout",
    )
    preflight.set_defaults(
        call=lambda args: Call("preflight", {"strict": args.strict}), render=render_preflight
    )
    preflight.add_argument("--strict", action="store_true", help="warnings stop the deploy too")
    preflight.add_argument("--ledger-dir", help=argparse.SUPPRESS)


# ---------------------------------------------------------------------------------------------- reconcile
def render_reconcile(result: ReconcileResult, args: argparse.Namespace) -> int:
    if args.json:
        print_json(result.to_json())
    elif not result.drift:
        print(f"no drift: {result.table} and its mappings are as stack {result.stack} declares them")
    else:
        print(f"drift on {result.stack} (table {result.table}) that CloudFormation will not repair:")
        print(render_drift(result.drift, applying=result.applied))
        if not result.applied:
            print()
            print(
                f"dry run: nothing changed; `doctable reconcile --apply` makes the {result.calls} call(s) above"
            )
        elif result.left:
            print()
            print("after the repairs, still drifted:")
            print(render_drift(result.left, applying=False))
        else:
            print()
            print(f"reconciled: re-read, nothing drifted ({len(result.restored)} properties restored)")
    return 1 if result.left else 0


def register_reconcile(sub: Any) -> None:
    reconcile = add_command(
        sub,
        "reconcile",
        no_func,
        help="restore settings changed behind the stack (TTL, PITR, tags, deletion protection, mapping, Kinesis "
        "destination; each replica's PITR and deletion protection; each subscriber's mapping); "
        "dry run unless --apply",
        description="Compare the live table (and each replica of a global table, in its region), the mapping and "
        "each subscriber's mapping with "
        "the knobs the stack was deployed with and restore each drifted property through the service APIs. Exit 0: nothing drifted (after --apply: nothing left); "
        "1: drift remains (always after a dry run with drift); 2 bad input, 4 AWS refused (as `doctable --help` says).",
        json_help="print the drift and what was restored as JSON on stdout",
    )
    reconcile.set_defaults(
        call=lambda args: Call(
            "reconcile", {"apply": args.apply, "timeout": args.timeout, "wait": wait_of(args)}
        ),
        render=render_reconcile,
    )
    reconcile.add_argument("--apply", action="store_true", help="make the calls (default: list them only)")
    add_wait_argument(reconcile)
    reconcile.add_argument(
        "--timeout",
        type=seconds,
        default=120.0,
        help="bound of the wait for a busy mapping to settle before its repair, seconds (120)",
    )


# ---------------------------------------------------------------------------------------------- teardown
def teardown_call(args: argparse.Namespace) -> Call:
    return Call(
        "teardown",
        {
            "yes": args.yes,
            "lift_deletion_protection": args.lift_deletion_protection,
            "timeout": args.timeout,
            "ledger": args.ledger,
            "ledger_dir": args.ledger_dir,
            "state_dir": args.state_dir,
            "ask": terminal_question(),
            "wait": wait_of(args),
        },
    )


def terminal_question() -> Callable[[str], str] | None:
    """The question a confirmation is typed at: ``input`` at a terminal, else None (nothing is confirmed)."""
    return input if sys.stdin.isatty() else None


def render_teardown(result: TeardownResult, args: argparse.Namespace) -> int:
    if args.json:
        print_json(result.to_json())
    else:
        for title, items in (
            ("removed", result.removed),
            ("emptied first", result.emptied),
            ("retained on purpose", result.retained),
            ("STILL PRESENT", result.still_present),
            ("notes", result.notes),
        ):
            if items:
                print(f"{title}:")
                for item in items:
                    print(f"  - {item}")
        print(
            "teardown complete: nothing left that is not retained" if result.clean else "teardown INCOMPLETE"
        )
    return 0 if result.clean else 1


def register_teardown(sub: Any) -> None:
    teardown = add_command(
        sub,
        "teardown",
        no_func,
        help="remove one environment's stack (ownership-checked, confirmed) and verify what is gone or retained",
        description="Delete one environment's stack after checking the table is ours (ManagedBy tag) and "
        "asking for confirmation (--yes skips it); empty its buckets first in destroyable environments; then "
        "check what is gone and list what is retained on purpose. Exit 1 when something is still present.",
        json_help="print the outcome as JSON on stdout",
    )
    teardown.set_defaults(call=teardown_call, render=render_teardown)
    teardown.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    add_wait_argument(teardown)
    teardown.add_argument(
        "--lift-deletion-protection",
        action="store_true",
        help="proceed although the table has deletion protection (lifted only where the stack deletes the table)",
    )
    teardown.add_argument(
        "--timeout",
        type=seconds,
        default=1800.0,
        help="bound of the stack deletion wait, and of each resource's absence check after it, seconds (1800)",
    )
    teardown.add_argument("--ledger", action="store_true", help="also write the ledger (status gone)")
    teardown.add_argument("--ledger-dir", help="ledger directory (default: $DOCTABLE_LEDGER_DIR or ./ledger)")
    teardown.add_argument("--state-dir", help=argparse.SUPPRESS)


@dataclass(frozen=True)
class Command:
    """A command of this module as the console script registers it (``register(sub)``, in its help's order)."""

    register: Callable[[Any], None]


deploy = Command(register_deploy)
verify = Command(register_verify)
reconcile = Command(register_reconcile)
teardown = Command(register_teardown)
preflight = Command(register_preflight)
