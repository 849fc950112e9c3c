"""``doctable deploy --env ENV``: the guarded deploy. Resolve the environment's settings, preflight, the gate (a
destructive change needs an explicit yes), ``cdk deploy`` with its progress streamed, then ``doctable verify``.

``npx cdk deploy`` reads the same settings file and stays possible: it is the unguarded path.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from contract.findings import Finding, Level, destructive
from contract.knobs import PROJECT_ROOT, DocTableConfig
from contract.settings.resolve import CONFIG_VARIABLE, Resolved
from doctable.core.aws import user_errors
from doctable.core.command import add_command, connect_aws, print_json, report_knobs, seconds, use_settings
from doctable.core.context import describe_stack, resolve_run
from doctable.core.deployment import use_deployed_knobs
from doctable.core.errors import RefusedError, UserError
from doctable.core.render import Progress, now_iso
from doctable.lifecycle import global_table
from doctable.lifecycle import index_steps as index_deploy
from doctable.lifecycle.preflight import render_findings, run_preflight
from doctable.verify import command as verify_command
from tooling import toolchain

if TYPE_CHECKING:
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment

# Exit codes: 0 deployed (and verified), 1 preflight stopped / cdk failed / verify failed, 2 bad input or AWS
# refused a read, 3 the gate refused a destructive change.
EXIT_REFUSED = 3
CDK_TIMEOUT = 3600.0
INDEX_TIMEOUT = 6 * 3600.0
ALLOW_FLAG = "--allow-destructive"
REQUIRE_BINDING_FLAG = "--require-binding"


def gate_lines(found: Sequence[Finding]) -> list[str]:
    """One line per destructive finding: its code, what it is about and the change."""
    return [f"{f.code}: {f.subject} {f.live} → {f.declared}" for f in found]


def confirm(found: Sequence[Finding], *, ask: Callable[[str], str], stream: TextIO) -> bool:
    """At a terminal: list the destructive changes and take an explicit 'yes' (anything else is no)."""
    print("this deploy destroys or replaces what the application relies on:", file=stream)
    for line in gate_lines(found):
        print(f"  {line}", file=stream)
    try:
        answer = ask("type 'yes' to deploy anyway: ")
    except EOFError:
        return False
    return answer.strip().lower() == "yes"


def gate(
    findings: Sequence[Finding],
    *,
    allow: bool,
    interactive: bool,
    ask: Callable[[str], str] = input,
    stream: TextIO | None = None,
) -> list[Finding]:
    """The destructive findings that block the deploy: none when ``allow`` or when the user says yes at a
    terminal; a deploy without a terminal is never assumed to be confirmed."""
    found = destructive(list(findings))
    if not found or allow:
        return []
    if interactive and confirm(found, ask=ask, stream=stream or sys.stderr):
        return []
    return found


# The cloud assembly's directory when --cdk-output is not given (the CLI's own default is cdk.out).
CDK_OUTPUT_VARIABLE = "DOCTABLE_CDK_OUTPUT"


def cdk_cli() -> list[str]:
    """The project's pinned CDK CLI run by its pinned Node.js (tooling/toolchain.py); never npx."""
    try:
        return toolchain.find(PROJECT_ROOT).cdk()
    except toolchain.ToolchainError as exc:
        raise UserError(str(exc)) from None


def cdk_command(config: DocTableConfig, args: argparse.Namespace) -> list[str]:
    """``cdk deploy`` of the environment's stack, with this run's -c overrides passed on as CDK context."""
    command = [*cdk_cli(), "deploy", config.stack_name, "--require-approval", "never"]
    command += ["-c", f"env={config.env}"]
    for pair in args.context or []:
        if not pair.startswith("env="):
            command += ["-c", pair]
    if args.outputs_file:
        command += ["--outputs-file", os.path.abspath(args.outputs_file)]
    if args.cdk_output:
        command += ["--output", os.path.abspath(args.cdk_output)]
    return command


def cdk_environment(resolved: Resolved, args: argparse.Namespace) -> dict[str, str]:
    """This process's environment, with the settings file, profile and region the app and the CLI must use."""
    env = dict(os.environ)
    if resolved.path is not None:
        env[CONFIG_VARIABLE] = str(resolved.path.resolve())
    if args.profile:
        env["AWS_PROFILE"] = args.profile
    region = args.region or resolved.region
    if region:
        env["AWS_REGION"] = env["AWS_DEFAULT_REGION"] = region
    env.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")
    with contextlib.suppress(toolchain.ToolchainError):  # cdk_cli() says what is missing
        env = toolchain.find(PROJECT_ROOT).environment(env)
    return env


def run_cdk_deploy(
    command: list[str], env: dict[str, str], *, to_stderr: bool, timeout: float = CDK_TIMEOUT
) -> int:
    """Run the CDK CLI from the project directory, its output streamed (to stderr when stdout is JSON)."""
    try:
        result = subprocess.run(
            command,
            cwd=PROJECT_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sys.stderr if to_stderr else None,
            timeout=timeout,
        )
    except FileNotFoundError as exc:
        raise UserError(f"cannot run the CDK CLI ({exc.filename}): run `make setup` (npm ci) first") from exc
    except subprocess.TimeoutExpired as exc:
        raise UserError(f"cdk deploy gave no answer within {timeout:.0f}s") from exc
    return result.returncode


def verify_args(args: argparse.Namespace, *, as_json: bool) -> argparse.Namespace:
    """verify's arguments for the environment just deployed (its own defaults for the waits)."""
    return argparse.Namespace(
        **{
            **vars(args),
            "command": "verify",
            "json": as_json,
            "timeout": args.verify_timeout,
            "settle": verify_command.DEFAULT_SETTLE,
            "read_only": False,  # the deploy's verify is the full contract
            "ledger": False,
            "ledger_dir": None,
            "state_dir": None,
            "quiet": args.quiet,
        }
    )


def cmd_deploy(args: argparse.Namespace) -> int:
    """Settings, preflight, the gate, the conversion to a global table, the home stack, the replica stacks,
    verify: each step's refusal or failure ends the run with its exit code and the report."""
    resolved = resolve_run(args)
    if args.require_binding and resolved.config.is_prod and not resolved.account:
        raise RefusedError(
            f"environment {resolved.config.env} is tier prod but binds no account ({REQUIRE_BINDING_FLAG}): "
            f'nothing deployed; allowed: account = "<12 digits>" in [environments.{resolved.config.env}] of '
            "the settings file, so a prod deploy runs in that account only"
        )
    progress = Progress("doctable deploy", quiet=args.quiet)
    aws, deployment = _connect(args, resolved, progress)
    findings = _preflight(args, resolved.config, aws, deployment)
    stops = [f for f in findings if f.level is Level.STOP]
    if args.require_binding:  # a pipeline's deploy: never through an administrator execution role either
        stops += [f for f in findings if f.code == "bootstrap.admin_execution" and f.level is not Level.STOP]
    blocked = (
        []
        if stops
        else gate(findings, allow=args.allow_destructive, interactive=not args.json and sys.stdin.isatty())
    )
    report = _report(args, resolved, aws, findings, blocked)
    if stops:
        return _finish(args, report, 1, [f"STOP {f.code}: {f.effect}" for f in stops])
    if blocked:
        lines = [f"refused {line}" for line in gate_lines(blocked)]
        lines.append(
            f"nothing deployed: the changes above destroy data or what an application relies on; "
            f"deploy them deliberately with {ALLOW_FLAG} (make deploy ALLOW_DESTRUCTIVE=1)"
        )
        return _finish(args, report, EXIT_REFUSED, lines)
    start = global_table.start_step(findings)
    if start is not None:
        code, failed = _convert(args, resolved, aws, start, progress, report)
        if code != 0:
            return _finish(
                args, report, 1,
                [f"conversion step {failed} failed (exit {code}): its output above says why; the table keeps its "
                 "items, and the next doctable deploy continues the conversion from where it stopped"],
            )  # fmt: skip
    with user_errors(f"reading the replicas of {deployment.table_name}"):
        live_replicas = global_table.live_replica_regions_of(aws, deployment.table_name)
    code = _deploy_home(args, resolved, aws, deployment, progress, report)
    if code != 0:
        return _finish(args, report, 1, [f"cdk deploy failed (exit {code}): its output above says why"])
    code = _deploy_replicas(args, resolved, aws, live_replicas, progress, report)
    if code != 0:
        return _finish(args, report, 1, [f"cdk deploy of the replica stacks failed (exit {code})"])
    report["deployed"] = True
    if args.no_verify:
        return _finish(args, report, 0, [])
    verified = _verify(args, progress, report)
    report["verified"] = verified == 0
    return _finish(args, report, 0 if verified == 0 else 1, [] if verified == 0 else ["verify failed"])


def _connect(args: argparse.Namespace, resolved: Resolved, progress: Progress) -> tuple[Aws, Deployment]:
    """The session (the account/region binding checked here, before anything is read or changed) and the
    deployed stack; the pending knobs and this run's overrides said on stderr."""
    aws = connect_aws(args, resolved)
    deployment = use_settings(use_deployed_knobs(describe_stack(aws, resolved.config)), resolved)
    report_knobs(deployment, progress, quiet=args.quiet)
    for override in resolved.overrides:
        progress.say(
            f"{override.knob}={override.value} from {override.source} (the file says {override.file_value})"
        )
    return aws, deployment


def _preflight(
    args: argparse.Namespace, config: DocTableConfig, aws: Aws, deployment: Deployment
) -> list[Finding]:
    """Preflight's findings, printed first unless --json: the gate's question refers to them."""
    with user_errors(f"preflight of {config.stack_name}"):
        findings = run_preflight(aws, deployment)
    # what the command that runs this deploy found before it (a preview's prod-account warning)
    findings += list(getattr(args, "extra_findings", []))
    if not args.json:
        print(f"deploy of {config.stack_name} (env {config.env}) to account {aws.account}, {aws.region}:")
        print(render_findings(findings))
        print(flush=True)
    return findings


def _report(
    args: argparse.Namespace,
    resolved: Resolved,
    aws: Aws,
    findings: list[Finding],
    blocked: list[Finding],
) -> dict[str, Any]:
    """The deploy's record (--json), before anything is deployed."""
    config = resolved.config
    return {
        "kind": "doctable-deploy",
        "env": config.env,
        "stack": config.stack_name,
        "region": aws.region,
        "account": aws.account,
        "at": now_iso(),
        "settings": str(resolved.path) if resolved.path else None,
        "overrides": [o.as_dict() for o in resolved.overrides],
        "findings": [f.as_dict() for f in findings],
        "destructive": [f.code for f in destructive(findings)],
        "allowed_destructive": bool(args.allow_destructive),
        "refused": [f.code for f in blocked],
        "deployed": False,
        "verified": None,
    }


def _deploy_home(
    args: argparse.Namespace,
    resolved: Resolved,
    aws: Aws,
    deployment: Deployment,
    progress: Progress,
    report: dict[str, Any],
) -> int:
    """The home stack's deploy, once the indexes an earlier run left busy have settled: one cdk deploy per index
    change when the indexes change (doctable/lifecycle/index_steps.py), else one cdk deploy; its exit code."""
    with user_errors(f"reading the indexes of {deployment.table_name}"):
        plan = index_deploy.plan_indexes(aws, deployment, resolved.config)
    if plan is not None and plan.busy:
        index_deploy.wait_for_busy(
            aws, deployment.table_name, plan.busy, progress.say, timeout=args.index_timeout
        )
    if plan is not None and plan.steps:
        return _deploy_index_steps(args, resolved, aws, deployment, plan, progress, report)
    command = cdk_command(resolved.config, args)
    progress.say("$ " + " ".join(command))
    return run_cdk_deploy(command, cdk_environment(resolved, args), to_stderr=args.json)


def _verify(args: argparse.Namespace, progress: Progress, report: dict[str, Any]) -> int:
    """``doctable verify`` of the environment just deployed; its exit code. With --json its record goes into the
    report, so stdout stays one JSON document."""
    progress.say("verifying the deployed environment (doctable verify)")
    if not args.json:
        return verify_command.cmd_verify(verify_args(args, as_json=False))
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        verified = verify_command.cmd_verify(verify_args(args, as_json=True))
    report["verify"] = json.loads(captured.getvalue())
    return verified


def _convert(
    args: argparse.Namespace,
    resolved: Resolved,
    aws: Any,
    start: str,
    progress: Progress,
    report: dict[str, Any],
) -> tuple[int, str | None]:
    """The single-region table converted to a global table before the deploy (doctable/lifecycle/global_table.py)."""
    environment = cdk_environment(resolved, args)
    with user_errors(f"converting {resolved.config.table_name} to a global table"):
        return global_table.convert(
            aws,
            resolved.config,
            start,
            cdk_command(resolved.config, args),
            lambda command: run_cdk_deploy(command, environment, to_stderr=args.json),
            progress.say,
            report.setdefault("conversion", []),
        )


def _deploy_replicas(
    args: argparse.Namespace,
    resolved: Resolved,
    aws: Any,
    live_before: Sequence[str],
    progress: Progress,
    report: dict[str, Any],
) -> int:
    """After the home stack: each replica region's consumer stack (doctable/lifecycle/global_table.py)."""
    environment = cdk_environment(resolved, args)
    return global_table.deploy_replica_stacks(
        aws,
        resolved.config,
        live_before,
        cdk_command(resolved.config, args),
        lambda command: run_cdk_deploy(command, environment, to_stderr=args.json),
        progress,
        report,
    )


def _deploy_index_steps(
    args: argparse.Namespace,
    resolved: Resolved,
    aws: Any,
    deployment: Any,
    plan: index_deploy.IndexPlan,
    progress: Progress,
    report: dict[str, Any],
) -> int:
    """One cdk deploy per GSI creation or deletion (doctable/lifecycle/index_steps.py); the exit code of the first
    that fails."""
    environment = cdk_environment(resolved, args)
    timeout = max(CDK_TIMEOUT, args.index_timeout)
    return index_deploy.deploy_steps(
        aws,
        deployment.table_name,
        resolved.config,
        plan,
        cdk_command(resolved.config, args),
        lambda command: run_cdk_deploy(command, environment, to_stderr=args.json, timeout=timeout),
        progress.say,
        report.setdefault("index_steps", []),
        index_timeout=args.index_timeout,
    )


def _finish(args: argparse.Namespace, report: dict[str, Any], code: int, lines: list[str]) -> int:
    if args.json:
        report["exit"] = code
        report["messages"] = lines
        print_json(report)
    for line in lines:
        print(f"doctable deploy: {line}", file=sys.stderr)
    return code


def register(sub: Any) -> None:
    deploy = add_command(
        sub,
        "deploy",
        cmd_deploy,
        help="the guarded deploy: settings, preflight, the destructive-change gate, cdk deploy, verify",
        description="Deploy one environment as doctable.toml declares it. A destructive change (an index or the "
        "stream removed, the mapping deleted, the table replaced, PITR off, TTL on...) is refused (exit 3, "
        f"nothing deployed) unless {ALLOW_FLAG} is given or confirmed at a terminal.",
        json_help="print the findings, the gate's verdict and the outcome as JSON",
    )
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
    deploy.add_argument(
        "--verify-timeout",
        type=seconds,
        default=verify_command.DEFAULT_TIMEOUT,
        help="bound of each of verify's waits, seconds",
    )
    deploy.add_argument(
        "--index-timeout",
        type=seconds,
        default=INDEX_TIMEOUT,
        help="bound of the wait for each index to be ACTIVE or gone, seconds (a backfill of a big table takes "
        "hours; a run stopped by it continues at the next deploy)",
    )
