"""``doctable deploy --env ENV``: the guarded deploy. Resolve the environment's settings, preflight, the gate (a
destructive change needs an explicit yes), ``cdk deploy`` with its progress streamed, then ``doctable verify``
(handed in as ``verifier``: doctable.api composes them).

``npx cdk deploy`` reads the same settings file and stays possible: it is the unguarded path.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from contract.findings import Finding, Level, destructive
from contract.knobs import PROJECT_ROOT, DocTableConfig
from contract.settings.resolve import CONFIG_VARIABLE, Resolved
from doctable.core.aws import user_errors
from doctable.core.command import connect_aws, report_knobs, use_settings
from doctable.core.context import describe_stack, resolve_run
from doctable.core.deployment import use_deployed_knobs
from doctable.core.errors import RefusedError, UserError
from doctable.core.render import Progress, now_iso
from doctable.core.target import Target
from doctable.lifecycle import global_table
from doctable.lifecycle import index_steps as index_deploy
from doctable.lifecycle.preflight import run_preflight
from doctable.lifecycle.results import (
    ALLOW_FLAG,
    CDK_OUTPUT_VARIABLE,
    INDEX_TIMEOUT,
    REQUIRE_BINDING_FLAG,
    ConversionStep,
    DeployResult,
    IndexStep,
    findings_of,
    gate_lines,
)
from doctable.lifecycle.step_check import StepStale, deploy_checker
from doctable.verify.record import DEFAULT_TIMEOUT as VERIFY_TIMEOUT
from tooling import toolchain

if TYPE_CHECKING:
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment
    from doctable.verify.record import VerifyResult

# Exit codes: 0 deployed (and verified), 1 preflight stopped / cdk failed / verify failed, 2 bad input or AWS
# refused a read, 3 the gate refused a destructive change.
EXIT_REFUSED = 3
CDK_TIMEOUT = 3600.0
__all__ = ["CDK_OUTPUT_VARIABLE", "deploy", "gate", "gate_lines"]


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


@dataclass(frozen=True)
class Cdk:
    """How this run calls the CDK CLI: this run's overrides as context, where the outputs and the cloud assembly
    go, the credentials, and where its output streams (stdout, or stderr so stdout stays the result)."""

    target: Target
    outputs_file: str | None = None
    cdk_output: str | None = None
    to_stdout: bool = False

    def command(self, config: DocTableConfig) -> list[str]:
        """``cdk deploy`` of the environment's stack, with this run's overrides passed on as CDK context."""
        command = [*cdk_cli(), "deploy", config.stack_name, "--require-approval", "never"]
        command += ["-c", f"env={config.env}"]
        for pair in self.target.context_pairs():
            if not pair.startswith("env="):
                command += ["-c", pair]
        if self.outputs_file:
            command += ["--outputs-file", os.path.abspath(self.outputs_file)]
        output = self.cdk_output or os.environ.get(CDK_OUTPUT_VARIABLE)
        if output:
            command += ["--output", os.path.abspath(output)]
        return command

    def environment(self, resolved: Resolved) -> dict[str, str]:
        """This process's environment, with the settings file, profile and region the app and the CLI use."""
        env = dict(os.environ)
        if resolved.path is not None:
            env[CONFIG_VARIABLE] = str(resolved.path.resolve())
        if self.target.profile:
            env["AWS_PROFILE"] = self.target.profile
        region = self.target.region or resolved.region
        if region:
            env["AWS_REGION"] = env["AWS_DEFAULT_REGION"] = region
        env.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")
        with contextlib.suppress(toolchain.ToolchainError):  # cdk_cli() says what is missing
            env = toolchain.find(PROJECT_ROOT).environment(env)
        return env

    def runner(self, resolved: Resolved, timeout: float = CDK_TIMEOUT) -> Callable[[list[str]], int]:
        environment = self.environment(resolved)
        return lambda command: run_cdk_deploy(
            command, environment, to_stderr=not self.to_stdout, timeout=timeout
        )


def cdk_cli() -> list[str]:
    """The project's pinned CDK CLI run by its pinned Node.js (tooling/toolchain.py); never npx."""
    try:
        return toolchain.find(PROJECT_ROOT).cdk()
    except toolchain.ToolchainError as exc:
        raise UserError(str(exc)) from None


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


@dataclass
class Run:
    """One deploy under way: what it acts on, its session and progress, and its report as the steps fill it."""

    target: Target
    resolved: Resolved
    cdk: Cdk
    progress: Progress
    index_timeout: float
    aws: Aws | None = None
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def config(self) -> DocTableConfig:
        return self.resolved.config


def refuse_unbound_prod(resolved: Resolved, require_binding: bool) -> None:
    """``--require-binding``: a prod-tier environment the settings bind to no account is refused before any AWS
    call (the environment's lock included)."""
    if require_binding and resolved.config.is_prod and not resolved.account:
        raise RefusedError(
            f"environment {resolved.config.env} is tier prod but binds no account ({REQUIRE_BINDING_FLAG}): "
            f'nothing deployed; allowed: account = "<12 digits>" in [environments.{resolved.config.env}] of '
            "the settings file, so a prod deploy runs in that account only"
        )


def deploy(
    target: Target,
    *,
    allow_destructive: bool = False,
    require_binding: bool = False,
    outputs_file: str | None = None,
    cdk_output: str | None = None,
    no_verify: bool = False,
    verify_timeout: float = VERIFY_TIMEOUT,
    index_timeout: float = INDEX_TIMEOUT,
    extra_findings: Sequence[Finding] = (),
    ask: Callable[[str], str] | None = None,
    cdk_to_stdout: bool = False,
    on_findings: Callable[[DeployResult], None] | None = None,
    verifier: Callable[..., VerifyResult] | None = None,
) -> DeployResult:
    """Settings, preflight, the gate, the conversion to a global table, the home stack, the replica stacks,
    verify (``verifier``, with ``timeout=verify_timeout``; none when None or ``no_verify``): each step's refusal
    or failure ends the run with its exit code and the report."""
    resolved = resolve_run(target)
    refuse_unbound_prod(resolved, require_binding)
    cdk = Cdk(target, outputs_file, cdk_output, cdk_to_stdout)
    run = Run(target, resolved, cdk, Progress("doctable deploy", quiet=target.quiet), index_timeout)
    aws, deployment = _connect(run)
    with user_errors(f"preflight of {run.config.stack_name}"):
        findings = run_preflight(aws, deployment) + list(extra_findings)
    run.report = _report(run, aws, findings, allow_destructive)
    if on_findings is not None:  # the CLI prints them first: the gate's question refers to them
        on_findings(_result(run.report, 0, []))
    stops = [f for f in findings if f.level is Level.STOP]
    if require_binding:  # a pipeline's deploy: never through an administrator execution role either
        stops += [f for f in findings if f.code == "bootstrap.admin_execution" and f.level is not Level.STOP]
    blocked = (
        []
        if stops
        else gate(findings, allow=allow_destructive, interactive=ask is not None, ask=ask or input)
    )
    run.report["refused"] = [f.code for f in blocked]
    if stops:
        return _finish(run, 1, [f"STOP {f.code}: {f.effect}" for f in stops])
    if blocked:
        lines = [f"refused {line}" for line in gate_lines(blocked)]
        lines.append(
            f"nothing deployed: the changes above destroy data or what an application relies on; "
            f"deploy them deliberately with {ALLOW_FLAG} (make deploy ALLOW_DESTRUCTIVE=1)"
        )
        return _finish(run, EXIT_REFUSED, lines)
    return _deploy_steps(run, aws, deployment, findings, verify=None if no_verify else verifier,
                         verify_timeout=verify_timeout)  # fmt: skip


def _deploy_steps(
    run: Run,
    aws: Aws,
    deployment: Deployment,
    findings: list[Finding],
    *,
    verify: Callable[..., VerifyResult] | None,
    verify_timeout: float,
) -> DeployResult:
    """What changes the environment, once the gate let the deploy through: the conversion, the home stack, the
    replica stacks, then verify."""
    start = global_table.start_step(findings)
    if start is not None:
        code, failed = _convert(run, aws, start)
        if code != 0:
            return _finish(
                run, 1,
                [f"conversion step {failed} failed (exit {code}): its output above says why; the table keeps its "
                 "items, and the next doctable deploy continues the conversion from where it stopped"],
            )  # fmt: skip
    with user_errors(f"reading the replicas of {deployment.table_name}"):
        live_replicas = global_table.live_replica_regions_of(aws, deployment.table_name)
    code = _deploy_home(run, aws, deployment, findings)
    stopped = [s["stopped"] for s in run.report.get("index_steps", []) if "stopped" in s]
    if stopped:
        return _finish(run, 1, [StepStale(**stopped[0]).line()])
    if code != 0:
        return _finish(run, 1, [f"cdk deploy failed (exit {code}): its output above says why"])
    code = global_table.deploy_replica_stacks(
        aws, run.config, live_replicas, run.cdk.command(run.config), run.cdk.runner(run.resolved), run.progress,
        run.report,
    )  # fmt: skip
    if code != 0:
        return _finish(run, 1, [f"cdk deploy of the replica stacks failed (exit {code})"])
    run.report["deployed"] = True
    if verify is None:
        return _finish(run, 0, [])
    run.progress.say("verifying the deployed environment (doctable verify)")
    verified = verify(run.target, timeout=verify_timeout)
    run.report["verify"] = verified
    run.report["verified"] = verified.passed
    return _finish(run, 0 if verified.passed else 1, [] if verified.passed else ["verify failed"])


def _connect(run: Run) -> tuple[Aws, Deployment]:
    """The session (the account/region binding checked here, before anything is read or changed) and the
    deployed stack; the pending knobs and this run's overrides said on stderr."""
    aws = connect_aws(run.target, run.resolved)
    deployment = use_settings(use_deployed_knobs(describe_stack(aws, run.config)), run.resolved)
    report_knobs(deployment, run.progress, quiet=run.target.quiet)
    for override in run.resolved.overrides:
        run.progress.say(
            f"{override.knob}={override.value} from {override.source} (the file says {override.file_value})"
        )
    run.aws = aws
    return aws, deployment


def _report(run: Run, aws: Aws, findings: list[Finding], allow: bool) -> dict[str, Any]:
    """The deploy's record, before anything is deployed."""
    return {
        "env": run.config.env,
        "stack": run.config.stack_name,
        "region": aws.region,
        "account": aws.account,
        "at": now_iso(),
        "settings": str(run.resolved.path) if run.resolved.path else None,
        "overrides": tuple(o.as_dict() for o in run.resolved.overrides),
        "findings": findings_of(findings),
        "destructive": tuple(f.code for f in destructive(findings)),
        "allowed_destructive": bool(allow),
        "refused": (),
    }


def _result(report: dict[str, Any], code: int, lines: list[str]) -> DeployResult:
    """The report as the typed result: the steps' records (dicts while the steps ran) as their dataclasses."""
    steps: dict[str, Any] = {}
    if "conversion" in report:
        steps["conversion"] = tuple(
            ConversionStep(r["step"], tuple(r["command"]), r["exit"]) for r in report["conversion"]
        )
    if "index_steps" in report:
        steps["index_steps"] = tuple(IndexStep.of(r) for r in report["index_steps"])
    if "replica_stacks_deleted" in report:
        steps["replica_stacks_deleted"] = tuple(report["replica_stacks_deleted"])
    known = {f.name for f in dataclasses.fields(DeployResult)}
    given: dict[str, Any] = {k: v for k, v in report.items() if k in known and k not in steps}
    given["refused"] = tuple(report.get("refused", ()))
    return DeployResult(**given, **steps, exit=code, messages=tuple(lines))


def _deploy_home(run: Run, aws: Aws, deployment: Deployment, findings: list[Finding]) -> int:
    """The home stack's deploy, once the indexes an earlier run left busy have settled: one cdk deploy per index
    change when the indexes change (doctable/lifecycle/index_steps.py), else one cdk deploy; its exit code."""
    with user_errors(f"reading the indexes of {deployment.table_name}"):
        plan = index_deploy.plan_indexes(aws, deployment, run.config)
    if plan is not None and plan.busy:
        index_deploy.wait_for_busy(
            aws, deployment.table_name, plan.busy, run.progress.say, timeout=run.index_timeout
        )
    if plan is not None and plan.steps:
        return index_deploy.deploy_steps(
            aws, deployment.table_name, run.config, plan, run.cdk.command(run.config),
            run.cdk.runner(run.resolved, timeout=max(CDK_TIMEOUT, run.index_timeout)), run.progress.say,
            run.report.setdefault("index_steps", []), index_timeout=run.index_timeout,
            check=deploy_checker(aws, run.resolved, plan, findings),
        )  # fmt: skip
    command = run.cdk.command(run.config)
    run.progress.say("$ " + " ".join(command))
    return run.cdk.runner(run.resolved)(command)


def _convert(run: Run, aws: Aws, start: str) -> tuple[int, str | None]:
    """The single-region table converted to a global table before the deploy (doctable/lifecycle/global_table.py)."""
    with user_errors(f"converting {run.config.table_name} to a global table"):
        return global_table.convert(
            aws,
            run.config,
            start,
            run.cdk.command(run.config),
            run.cdk.runner(run.resolved),
            run.progress.say,
            run.report.setdefault("conversion", []),
        )


def _finish(run: Run, code: int, lines: list[str]) -> DeployResult:
    """The result with its exit code and the lines that say why it ended so (the CLI prints them on stderr)."""
    return _result(run.report, code, lines)
