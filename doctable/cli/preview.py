"""The console script's ``doctable preview`` (deploy, list, destroy, gc): each action's parser, the
:class:`~doctable.cli.arguments.Call` of its function of doctable.api (which hands the preview deploy's and
teardown's functions in) and the renderer of its result."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from contract.settings import preview as rules
from doctable.cli.arguments import Call, add_command, print_json, seconds
from doctable.cli.lifecycle import deploy_io, no_func, render_deploy, terminal_question
from doctable.cli.lock import add_wait_argument, wait_of
from doctable.core.render import text_table
from doctable.lifecycle.results import ALLOW_FLAG, CDK_OUTPUT_VARIABLE
from doctable.verify.record import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from doctable.operate.preview import PreviewList, PreviewOutcome, PreviewTeardown

YES_NO = ("no", "yes")


# ---------------------------------------------------------------------------------------------- deploy
def deploy_call(args: argparse.Namespace) -> Call:
    return Call(
        "preview_deploy",
        {
            "name": args.name,
            "template": args.template,
            "expires": args.expires,
            "allow_destructive": args.allow_destructive,
            "no_verify": args.no_verify,
            "verify_timeout": args.verify_timeout,
            "cdk_output": args.cdk_output,
            "outputs_file": args.outputs_file,
            "wait": wait_of(args),
            **deploy_io(args),
        },
    )


# ---------------------------------------------------------------------------------------------- list
def _age(seconds_: int | None) -> str:
    if seconds_ is None:
        return "?"
    days, rest = divmod(max(0, seconds_), 86400)
    return f"{days}d{rest // 3600}h" if days else f"{rest // 3600}h{rest % 3600 // 60:02d}m"


def render_list(result: PreviewList, args: argparse.Namespace) -> int:
    if args.json:
        print_json(result.to_json())
        return 0
    rows = [
        [p.name, p.template, p.stack, p.region, _age(p.age_seconds), p.expires_at, YES_NO[p.expired]]
        for p in result.previews
    ]
    regions = ", ".join(result.regions or (result.region,))
    print(f"previews in account {result.account}, {regions} (AWS's clock: {result.now}):")
    columns = ["name", "template", "stack", "region", "age", "expires", "expired"]
    print(text_table(columns, rows) if rows else "  (none)")
    for skipped in result.skipped:
        print(f"  not a preview: {skipped.stack} ({skipped.why})")
    return 0


# ---------------------------------------------------------------------------------------------- destroy, gc
def teardown_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "yes": args.yes,
        "allow_destructive": args.allow_destructive,
        "timeout": args.timeout,
        "ask": terminal_question(),
        "wait": wait_of(args),
    }


def _print_results(results: tuple[PreviewOutcome, ...]) -> None:
    for result in (r.as_dict() for r in results):
        print(f"{result['name']} ({result['stack']}): {result['status']}")
        for title in ("removed", "retained", "still_present", "notes"):
            for item in result.get(title, []):
                print(f"  {title}: {item}")
        for detail in ("reason", "error"):
            if detail in result:
                print(f"  {result[detail]}")


def render_teardown(result: PreviewTeardown, args: argparse.Namespace) -> int:
    if args.json:
        print_json(result.to_json())
        return result.exit
    _print_results(result.results)
    if result.action == "gc":
        print(f"gc: {len(result.expired)} expired of {len(result.previews)} previews")
    return result.exit


# ---------------------------------------------------------------------------------------------- register
def _common(parser: argparse.ArgumentParser, json_help: str) -> None:
    parser.add_argument(
        "--config", metavar="FILE", help="the settings file (default: $DOCTABLE_CONFIG, else doctable.toml)"
    )
    parser.add_argument(
        "--profile", help="the AWS profile (default: AWS_PROFILE, else the SDK's default chain)"
    )
    parser.add_argument("--region", help="the AWS region (default: [previews] region, else AWS_REGION)")
    parser.add_argument("--json", action="store_true", help=json_help)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress or note lines on stderr")


def _teardown_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    parser.add_argument(ALLOW_FLAG, action="store_true", help="destroy a preview whose table holds items")
    parser.add_argument(
        "--timeout", type=seconds, default=1800.0, help="bound of each stack deletion, seconds"
    )
    add_wait_argument(parser)


def register(sub: Any) -> None:
    preview = sub.add_parser(
        "preview",
        help="preview environments: deploy one from a declared environment, list them, destroy one, gc the expired",
        description="Short-lived environments the settings file does not declare, named <prefix><NAME> (pr- or "
        "[previews] prefix), tier dev, tagged PreviewOf and ExpiresAt; expiry by AWS's clock.",
    )
    actions = preview.add_subparsers(dest="action", required=True, metavar="ACTION")
    deploy = add_command(
        actions, "deploy", no_func,
        help="deploy preview <prefix>NAME from a declared environment (doctable deploy's path: preflight, gate, verify)",
        description="The template's settings minus borrowed resources (refused), tier dev, an ExpiresAt tag.",
    )  # fmt: skip
    deploy.set_defaults(call=deploy_call, render=render_deploy)
    deploy.add_argument(
        "name", metavar="NAME", help="the preview's name after the prefix (e.g. 12 for pr-12)"
    )
    deploy.add_argument("--from", dest="template", required=True, metavar="ENV", help="the declared template")
    deploy.add_argument(
        "--expires", default=rules.DEFAULT_EXPIRES, help=f"lifetime: {rules.DURATION_ALLOWED}"
    )
    deploy.add_argument(
        "-c", "--context", action="append", default=[], metavar="KNOB=VALUE", help="a knob for this run"
    )
    _common(deploy, "print doctable deploy's report as JSON")
    deploy.add_argument(ALLOW_FLAG, action="store_true", help="deploy destructive changes too")
    deploy.add_argument("--no-verify", action="store_true", help="skip `doctable verify` after the deploy")
    deploy.add_argument("--verify-timeout", type=seconds, default=DEFAULT_TIMEOUT)
    deploy.add_argument("--cdk-output", default=os.environ.get(CDK_OUTPUT_VARIABLE) or None, metavar="DIR")
    deploy.add_argument("--outputs-file", help="write the stack's outputs to this JSON file")
    add_wait_argument(deploy)
    listing = add_command(
        actions, "list", no_func, help="each preview: template, age, expiry, expired",
        description="Every preview stack of the region, found by its tags (ManagedBy, Source, Project, PreviewOf, ExpiresAt).",
    )  # fmt: skip
    listing.set_defaults(call=lambda args: Call("preview_list"), render=render_list)
    _common(listing, "print the previews as JSON")
    destroy = add_command(
        actions, "destroy", no_func, help="tear down one preview",
        description="doctable teardown of <prefix>NAME once its tags show it is a preview of this project.",
    )  # fmt: skip
    destroy.set_defaults(
        call=lambda args: Call("preview_destroy", {"name": args.name, **teardown_options(args)}),
        render=render_teardown,
    )
    destroy.add_argument("name", metavar="NAME", help="the preview's name after the prefix")
    _common(destroy, "print the outcome as JSON")
    _teardown_arguments(destroy)
    gc = add_command(
        actions, "gc", no_func, help="tear down every expired preview",
        description="Every preview whose ExpiresAt is past by AWS's clock, torn down as destroy does.",
    )  # fmt: skip
    gc.set_defaults(call=lambda args: Call("preview_gc", teardown_options(args)), render=render_teardown)
    _common(gc, "print the outcome as JSON")
    _teardown_arguments(gc)
