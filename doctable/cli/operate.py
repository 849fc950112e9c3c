"""The console script's day-to-day commands: ``doctable logs``, ``invoke``, ``watch``, ``replay``, ``ledger`` and
``settings``: each one's parser (its arguments and help), the :class:`~doctable.cli.arguments.Call` of its
function of doctable.api, and the renderer of its result (text, or ``to_json()`` with ``--json``) returning the
exit code; and ``policy`` and ``bootstrap`` (an environment's IAM policies and its own CDK bootstrap)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contract import names
from doctable.cli.arguments import Call, add_command, add_knob_arguments, print_json
from doctable.core.render import Progress, text_table

if TYPE_CHECKING:
    from doctable.operate.bootstrap import BootstrapResult
    from doctable.operate.invoke import InvokeResult
    from doctable.operate.ledger import LedgerResult
    from doctable.operate.logs import LogLine, LogsResult
    from doctable.operate.policy import PolicyResult
    from doctable.operate.replay import ReplayResult
    from doctable.operate.settings import SettingsResult
    from doctable.operate.watch import WatchResult


def no_func(args: argparse.Namespace) -> int:  # pragma: no cover - main calls the API for these commands
    raise AssertionError(f"doctable {args.command} runs through doctable.api")


# ---------------------------------------------------------------------------------------------- logs
def logs_call(args: argparse.Namespace) -> Call:
    kwargs: dict[str, Any] = {"since": args.since, "subscriber": args.subscriber, "follow": args.follow}
    if args.follow:
        kwargs["on_line"] = line_printer(args.json)
    return Call("logs", kwargs)


def line_printer(as_json: bool) -> Callable[[LogLine], None]:
    """What ``--follow`` does with each line as it comes: print it (one JSON object per line with ``--json``)."""

    def emit(line: LogLine) -> None:
        text = json.dumps({"kind": "doctable-log-line", **line.as_dict()}) if as_json else line.render()
        print(text, flush=True)

    return emit


def render_logs(result: LogsResult, args: argparse.Namespace) -> int:
    if result.follow:
        return 0  # each line was printed as it came; stopped with Ctrl-C: not an error
    if args.json:
        print_json(result.to_json())
        return 0
    for line in result.lines:
        print(line.render())
    progress = Progress("doctable logs", quiet=args.quiet)
    progress.say(
        f"{len(result.lines)} lines, {result.proof_lines} proof lines, in {result.log_group} since "
        f"{result.start} ({result.since})"
    )
    if result.dashboard_url:
        progress.say(f"dashboard: {result.dashboard_url}")
    return 0


def register_logs(sub: Any) -> None:
    from doctable.operate.logs import DEFAULT_SINCE, DURATION_FORMS, POLL_SECONDS, PROOF_MARK

    logs = add_command(
        sub,
        "logs",
        no_func,
        help="the deployed consumer's log lines (its log group), proof lines (stream_records_received) marked",
        description="Read the built-in consumer's log group (the stack's ConsumerLogGroupName output) with "
        "CloudWatch Logs FilterLogEvents, on AWS or the local AWS alike. Each line is shown with its time; a "
        f"{names.PROOF_LOG_MESSAGE} line (the consumer received a batch) is marked {PROOF_MARK} and summarized. "
        "Exit 0 (also when --follow is stopped with Ctrl-C).",
        json_help="print one JSON document (with --follow: one JSON object per line, as the lines come)",
    )
    logs.add_argument(
        "--since",
        default=DEFAULT_SINCE,
        metavar="DURATION",
        help=f"how far back to start: {DURATION_FORMS} ({DEFAULT_SINCE})",
    )
    logs.add_argument(
        "--subscriber",
        metavar="NAME",
        help="read this subscriber's log group instead of the consumer's (its proof lines name it)",
    )
    logs.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help=f"keep polling for new lines (every {POLL_SECONDS:.0f}s) until interrupted; Ctrl-C exits 0",
    )
    logs.set_defaults(call=logs_call, render=render_logs)


# ---------------------------------------------------------------------------------------------- invoke
def invoke_call(args: argparse.Namespace) -> Call:
    return Call(
        "invoke",
        {
            "event": args.event,
            "file": args.file,
            "pk": args.pk,
            "sk": args.sk,
            "blobs": tuple(args.blobs or ()),
            "subscriber": args.subscriber,
            "dry_run": args.dry_run,
        },
    )


def render_invoke(result: InvokeResult, args: argparse.Namespace) -> int:
    if result.dry_run:
        print_json(result.event)
        return 0
    if args.json:
        print_json(result.to_json())
        return result.exit
    version = f" (version {result.executed_version})" if result.executed_version else ""
    print(f"invoked {result.function}{version}: status {result.status_code}")
    if result.function_error:
        print(f"function error ({result.function_error}): {json.dumps(result.response)}")
    else:
        print(f"response: {json.dumps(result.response)}")
    print("log (the invocation's last 4 KB; `doctable logs` has every line):")
    for line in result.log:
        print(f"  {line.render()}")
    if result.batch_item_failures:
        failed = result.batch_item_failures
        print(f"{len(failed)} record(s) failed: {', '.join(failed)}")
    return result.exit


def register_invoke(sub: Any) -> None:
    from doctable.operate.invoke import EVENT_NAMES

    invoke = add_command(
        sub,
        "invoke",
        no_func,
        help="send one stream change record (or an event file) to the deployed consumer; print its answer and log",
        description="Build a DynamoDB-stream change record of item (--pk, --sk) listing --blobs, as the table's "
        "stream would deliver it (NEW_AND_OLD_IMAGES; insert: the new image lists the blobs; modify: the old "
        "image lists them, the new one does not; remove: the old image lists them), or read one from --file, "
        "and invoke the deployed consumer with it synchronously (what its event-source mapping invokes). Prints "
        "the response (batchItemFailures) and the log lines, proof lines marked. The consumer really acts: a "
        "remove or modify deletes the blobs it drops. Exit 0: every record succeeded; 1: a record failed or the "
        "function errored.",
        json_help="print the event, the response and the log as one JSON document",
    )
    what = invoke.add_mutually_exclusive_group(required=True)
    what.add_argument("--event", choices=list(EVENT_NAMES), help="the change to build a record of")
    what.add_argument(
        "--file", metavar="EVENT.json", help="send this event as it is (a JSON object with a Records list)"
    )
    invoke.add_argument(
        "--subscriber", metavar="NAME", help="invoke this subscriber's function (through its wrapper) instead"
    )
    invoke.add_argument("--pk", metavar="PK", help="the item's partition key (with --event)")
    invoke.add_argument("--sk", metavar="SK", help="the item's sort key (with --event)")
    invoke.add_argument(
        "--blobs",
        nargs="+",
        metavar="KEY",
        default=[],
        help="the blob keys the item lists (under <blob_root><pk>/<sk>/, or the consumer refuses them)",
    )
    invoke.add_argument(
        "--dry-run", action="store_true", help="print the event that would be sent (JSON), invoke nothing"
    )
    invoke.set_defaults(call=invoke_call, render=render_invoke)


# ---------------------------------------------------------------------------------------------- watch
def watch_call(args: argparse.Namespace) -> Call:
    return Call("watch", {"source": args.source, "subscriber": args.subscriber, "once": args.once})


def render_watch(result: WatchResult, args: argparse.Namespace) -> int:
    if args.json and not result.interrupted:
        print_json(result.to_json())
    return 0  # Ctrl-C is the way out of watching: not an error


def register_watch(sub: Any) -> None:
    from doctable.operate.watch import SOURCE

    parser = add_command(
        sub,
        "watch",
        no_func,
        help="on the local AWS: send each change under functions/ (or of a subscriber's handler) to the deployed "
        "function (UpdateFunctionCode)",
        description="The consumer's inner loop: stage functions/stream_consumer as the stack's asset is staged "
        "and update the deployed function's code with it, now and at every change, without a CloudFormation "
        "update (as cdk deploy --hotswap). Local AWS only; refuses snapstart=on and powertools=bundled. With "
        "--subscriber NAME: the subscriber's handler file (as the settings file declares it) with doctable's "
        "wrapper, to the subscriber's function.",
        json_help="with --once, print the update as JSON",
    )
    code = parser.add_mutually_exclusive_group()
    code.add_argument("--source", help=f"the consumer package to send (default: {SOURCE})")
    code.add_argument(
        "--subscriber", metavar="NAME", help="send this subscriber's handler file to its function instead"
    )
    parser.add_argument("--once", action="store_true", help="send the code once and exit (no watching)")
    parser.set_defaults(call=watch_call, render=render_watch)


# ---------------------------------------------------------------------------------------------- replay
def replay_call(args: argparse.Namespace) -> Call:
    return Call("replay", {"dry_run": args.dry_run, "subscriber": args.subscriber})


def render_replay(result: ReplayResult, args: argparse.Namespace) -> int:
    if args.json:
        print_json(result.to_json())
    else:
        rows = [(o.key, o.records, o.succeeded, o.rebased, o.result + (f": {o.error}" if o.error else ""))
                for o in result.objects]  # fmt: skip
        print(text_table(["object", "records", "succeeded", "rebased", "result"], rows))
        print(
            f"{len(result.objects) - result.kept} replayed and removed, {result.kept} kept in s3://{result.bucket}/"
        )
    return 1 if result.kept else 0


def register_replay(sub: Any) -> None:
    replay = add_command(
        sub,
        "replay",
        no_func,
        help="re-drive the batches kept on the failure destination through the consumer (or a subscriber); "
        "remove them once done",
        description="Invoke the consumer with each kept batch; delete the object only when every record in it "
        "succeeded (still-failing records stay). Exit 1 while anything is kept. With --subscriber NAME: that "
        "subscriber's failure bucket, through its function, its records unchanged.",
        json_help="print the outcome as JSON on stdout",
    )
    replay.add_argument("--dry-run", action="store_true", help="list what would be replayed, change nothing")
    replay.add_argument(
        "--subscriber",
        metavar="NAME",
        help="replay this subscriber's failure bucket through its function instead",
    )
    replay.set_defaults(call=replay_call, render=render_replay)


# ---------------------------------------------------------------------------------------------- ledger
def ledger_call(args: argparse.Namespace) -> Call:
    return Call(
        "ledger",
        {"ledger_dir": args.ledger_dir, "state_dir": args.state_dir, "resolved_by": args.resolved_by},
    )


def render_ledger(result: LedgerResult, args: argparse.Namespace) -> int:
    if args.json:
        print_json(result.to_json())
    else:
        verified = result.last_verified
        when = f"last verified {verified['at']}" if verified else "never verified"
        print(f"ledger for {result.table}: status {result.status}, {when}")
        print(f"wrote {result.markdown} and {result.json_file}")
    return 0


def register_ledger(sub: Any) -> None:
    ledger = add_command(
        sub,
        "ledger",
        no_func,
        help="write the environment's Live State (knobs, realized ids, status, last verify) as Markdown + JSON",
        description="Write ledger/<table>.md and .json: the knobs the stack was deployed with, the realized "
        "identifiers (ARNs, names), the status (live, degraded, unverified, gone...) and the last verify's rows. "
        "Changes nothing in AWS.",
        json_help="also print the ledger as JSON on stdout",
    )
    ledger.add_argument("--ledger-dir", help="output directory (default: $DOCTABLE_LEDGER_DIR or ./ledger)")
    ledger.add_argument("--state-dir", help="where verify kept its last rows (default: ./.doctable)")
    ledger.add_argument(
        "--resolved-by", help="who confirmed the knobs (default: $DOCTABLE_RESOLVED_BY or $USER)"
    )
    ledger.set_defaults(call=ledger_call, render=render_ledger)


# ---------------------------------------------------------------------------------------------- settings
def settings_call(_args: argparse.Namespace) -> Call:
    return Call("settings")


def render_settings(result: SettingsResult, args: argparse.Namespace) -> int:
    if args.json:
        print_json(result.to_json())
        return 0
    where = result.file or "no settings file (built-in defaults)"
    bound = ", ".join(f"{k} {v}" for k, v in (("account", result.account), ("region", result.region)) if v)
    print(f"env {result.env} (stack {result.stack}) from {where}" + (f"; bound to {bound}" if bound else ""))
    print(text_table(["knob", "value", "source"], [[r.knob, r.value, r.source] for r in result.knobs]))
    if result.indexes:
        print(f"indexes (from {result.index_source}; gsi={result.gsi}):")
        print(
            text_table(
                ["index", "kind", "keys and projection"], [[i.name, i.kind, i.keys] for i in result.indexes]
            )
        )
    for override in result.overrides:
        print(
            f"override: {override.knob}={override.value} from {override.source} (the file says {override.file_value})"
        )
    return 0


def register_settings(sub: Any) -> None:
    parser = add_command(
        sub,
        "settings",
        no_func,
        help="show each knob's value for an environment and its source (file, default, override); no AWS call",
        description="Resolve an environment's settings exactly as the CDK app does (doctable.toml, then "
        "DOCTABLE_<KNOB> and -c overrides) and show each knob's value and where it came from. No AWS call.",
        json_help="print the settings as JSON on stdout",
    )
    parser.set_defaults(call=settings_call, render=render_settings)


# ---------------------------------------------------------------------------------------------- policy
def policy_call(args: argparse.Namespace) -> Call:
    return Call(
        "policy",
        {
            "kind": args.kind,
            "account": args.account,
            "part": args.part,
            "repo": args.repo,
            "preview": args.preview,
            "workflow": args.workflow,
            "offline": args.offline,
        },
    )


def render_policy(result: PolicyResult, args: argparse.Namespace) -> int:
    if args.json:
        print_json(result.to_json())
        return 0
    if len(result.policies) > 1:
        print_json(list(result.policies))
    elif result.policy is not None:
        print_json(result.policy)
    for note in result.notes:
        print(f"doctable policy: {note}", file=sys.stderr)
    return 0


def register_policy(sub: Any) -> None:
    from contract.iam import policies as iam
    from doctable.operate.policy import CI_TRUST, KINDS

    policy = add_command(
        sub,
        "policy",
        no_func,
        help="print the least-privilege IAM policy of the deployer, operator or reader of an environment, or the "
        "trust policy of a CI role (GitHub OIDC)",
        description="Print an IAM policy document computed from the environment's settings: deployer (doctable "
        "deploy: preflight's reads and the CDK bootstrap roles), operator (verify, reconcile, replay, teardown, "
        "ledger, plan, logs, invoke), reader (preflight, ledger, verify --read-only), ci-trust (who may assume the CI "
        "role), execution (what CloudFormation needs, as the bootstrap's execution role, to create, update and "
        "delete the environment's stacks) or boundary (the permissions boundary of every role the stacks create, "
        "and of the execution role). The account and region are the environment's binding, else "
        "--account/--region, else the credentials'.",
    )
    policy.add_argument("kind", choices=KINDS, help="whose policy: " + " | ".join(KINDS))
    add_knob_arguments(policy)
    policy.add_argument("--account", help="the AWS account id (default: the binding, else the credentials')")
    policy.add_argument(
        "--command",
        dest="part",
        metavar="CMD",
        help=f"only this command's part of the role's policy (one of {'|'.join(iam.COMMANDS)})",
    )
    policy.add_argument("--repo", metavar="OWNER/NAME", help=f"{CI_TRUST}: the GitHub repository")
    policy.add_argument(
        "--preview",
        action="store_true",
        help=f"the preview role's: {iam.DEPLOYER} --preview --env TEMPLATE, its policy scoped to the previews' "
        f"names; {CI_TRUST} --preview, its trust of pull-request jobs only",
    )
    policy.add_argument(
        "--workflow",
        metavar="FILE",
        help=f"{CI_TRUST}: the workflow file of .github/workflows the role's jobs run, as main holds it (default: "
        "deploy.yml; with --preview preview-deploy.yml)",
    )
    policy.add_argument(
        "--json", action="store_true", help="print the policy with its target and notes as JSON"
    )
    policy.add_argument(
        "--offline",
        action="store_true",
        help="read nothing from AWS: the buckets are named by the pattern every environment's generated names "
        "share (default: the deployed stack's exact names, when the credentials can read them)",
    )
    policy.set_defaults(call=policy_call, render=render_policy)


# ---------------------------------------------------------------------------------------------- bootstrap
def bootstrap_call(args: argparse.Namespace) -> Call:
    return Call(
        "bootstrap",
        {
            "account": args.account,
            "preview": args.preview,
            "dry_run": args.dry_run,
            # cdk's own output: on stderr when stdout is the JSON document
            "cdk_output": "stderr" if args.json else "stdout",
        },
    )


def render_bootstrap(result: BootstrapResult, args: argparse.Namespace) -> int:
    if args.json:
        print_json(result.to_json())
        return result.exit
    for policy in result.policies:
        print(f"{policy.action:>9}  {policy.name}")
    print(("would run: " if result.dry_run else "ran: ") + shlex.join(result.command))
    if result.cdk_exit:
        print(
            f"doctable bootstrap: cdk bootstrap failed (exit {result.cdk_exit}): its output above says why",
            file=sys.stderr,
        )
    return result.exit


def register_bootstrap(sub: Any) -> None:
    parser = add_command(
        sub,
        "bootstrap",
        no_func,
        help="bootstrap the CDK for an environment with its own qualifier, a least-privilege execution policy "
        "and a permissions boundary",
        description="Create or update the environment's CloudFormation execution policy and permissions boundary "
        "(`doctable policy execution|boundary`) as managed policies, then run `cdk bootstrap` with the "
        "environment's qualifier, those policies and that boundary. The account and region are the environment's "
        "binding, else --account/--region, else the credentials'.",
    )
    add_knob_arguments(parser)
    parser.add_argument("--account", help="the AWS account id (default: the binding, else the credentials')")
    parser.add_argument(
        "--preview",
        action="store_true",
        help="the previews' bootstrap of the template --env names ([previews])",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the policies and the command; change nothing"
    )
    parser.add_argument("--json", action="store_true", help="print what was done as JSON")
    parser.set_defaults(call=bootstrap_call, render=render_bootstrap)


@dataclass(frozen=True)
class Command:
    """A command of this module as the console script registers it (``register(sub)``, in its help's order)."""

    register: Callable[[Any], None]


logs = Command(register_logs)
invoke = Command(register_invoke)
watch = Command(register_watch)
replay = Command(register_replay)
ledger = Command(register_ledger)
settings = Command(register_settings)
policy = Command(register_policy)
bootstrap = Command(register_bootstrap)
