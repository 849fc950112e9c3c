"""doctable from Python: each command is a function with typed parameters that returns a typed result (frozen
dataclasses, the same objects its ``--json`` serializes), and raises a typed error carrying the same ``code`` and
fields as ``--json``'s error document. The console script (doctable/cli/) parses its arguments, calls these and
renders what they return; docs/api.md documents each function, and tests/unit/test_api.py pins the fields of
every result type (a change to them is deliberate).

Every function takes a :class:`Target` first: the environment, its settings file, this run's overrides, the
credentials' profile and region, and ``quiet`` (no progress lines on stderr)::

    from doctable import api

    result = api.verify(api.Target(env="dev"), read_only=True)
    assert result.ok, [row.id for row in result.rows if not row.ok]

Errors: :class:`UserError` (exit 2: a problem of the input; ``code`` "usage" or the command's own),
:class:`AwsError` (exit 4: AWS refused or could not be reached; ``code`` "aws.*" with the refused action,
resource and principal in ``fields``), :class:`RefusedError` (exit 3: a safety gate refused; nothing changed).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

from doctable.core.aws import user_errors
from doctable.core.errors import AwsError, RefusedError, UserError
from doctable.core.target import Target

P = ParamSpec("P")
R = TypeVar("R")


def typed_errors(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` raising only the API's errors: AWS's failures as AwsError (its code and fields, as ``--json``
    prints them), a file-system failure as one UserError line."""

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            with user_errors(f"running `doctable {function.__name__.replace('_', ' ')}`"):
                return function(*args, **kwargs)
        except OSError as exc:
            raise UserError(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from exc

    return call


# ---- changing an environment (doctable/lifecycle/) and verify (doctable/verify/) ----
from contract.findings import Finding  # noqa: E402
from doctable.core.context import resolve_run  # noqa: E402
from doctable.lifecycle import deploy as _deploy  # noqa: E402
from doctable.lifecycle import locking as _locking  # noqa: E402
from doctable.lifecycle import preflight as _preflight  # noqa: E402
from doctable.lifecycle import reconcile as _reconcile  # noqa: E402
from doctable.lifecycle import teardown as _teardown  # noqa: E402
from doctable.lifecycle.lock import EnvironmentLocked, LockHolder  # noqa: E402
from doctable.lifecycle.locking import UnlockResult  # noqa: E402
from doctable.lifecycle.results import (  # noqa: E402
    INDEX_TIMEOUT,
    ConversionStep,
    DeployResult,
    DriftRow,
    IndexStep,
    PreflightFinding,
    PreflightResult,
    ReconcileResult,
    TeardownResult,
)
from doctable.verify import command as _verify  # noqa: E402
from doctable.verify.record import DEFAULT_TIMEOUT as _VERIFY_TIMEOUT  # noqa: E402
from doctable.verify.record import SkippedCheck, VerifyResult, VerifyRow  # noqa: E402

verify = typed_errors(_verify.verify)
preflight = typed_errors(_preflight.preflight)


@typed_errors
def reconcile(
    target: Target, *, apply: bool = False, timeout: float = 120.0, wait: float = 0.0
) -> ReconcileResult:
    """``doctable reconcile``: the drift, and with ``apply`` its repairs, under the environment's lock (waiting up to
    ``wait`` seconds for another holder)."""
    if not apply:
        return _reconcile.reconcile(target, apply=False, timeout=timeout)
    with _locking.environment_lock(target, "reconcile --apply", wait=wait):
        return _reconcile.reconcile(target, apply=True, timeout=timeout)


@typed_errors
def teardown(
    target: Target,
    *,
    yes: bool = False,
    lift_deletion_protection: bool = False,
    timeout: float = 1800.0,
    ledger: bool = False,
    ledger_dir: str | None = None,
    state_dir: str | None = None,
    ask: Callable[[str], str] | None = None,
    wait: float = 0.0,
) -> TeardownResult:
    """``doctable teardown`` under the environment's lock (docs/api.md)."""
    with _locking.environment_lock(target, "teardown", wait=wait):
        return _teardown.teardown(
            target, yes=yes, lift_deletion_protection=lift_deletion_protection, timeout=timeout, ledger=ledger,
            ledger_dir=ledger_dir, state_dir=state_dir, ask=ask,
        )  # fmt: skip


@typed_errors
def deploy(
    target: Target,
    *,
    allow_destructive: bool = False,
    require_binding: bool = False,
    outputs_file: str | None = None,
    cdk_output: str | None = None,
    no_verify: bool = False,
    verify_timeout: float = _VERIFY_TIMEOUT,
    index_timeout: float = INDEX_TIMEOUT,
    extra_findings: Sequence[Finding] = (),
    ask: Callable[[str], str] | None = None,
    cdk_to_stdout: bool = False,
    on_findings: Callable[[DeployResult], None] | None = None,
    wait: float = 0.0,
) -> DeployResult:
    """``doctable deploy``: preflight, the gate, cdk deploy, then :func:`verify` of what it deployed, under the
    environment's lock (``wait``: seconds to wait for another holder; docs/api.md says what each parameter does)."""
    _deploy.refuse_unbound_prod(resolve_run(target), require_binding)  # before any AWS call
    with _locking.environment_lock(target, "deploy", wait=wait):
        return _deploy_locked(
            target, allow_destructive=allow_destructive, require_binding=require_binding,
            outputs_file=outputs_file, cdk_output=cdk_output, no_verify=no_verify, verify_timeout=verify_timeout,
            index_timeout=index_timeout, extra_findings=extra_findings, ask=ask, cdk_to_stdout=cdk_to_stdout,
            on_findings=on_findings,
        )  # fmt: skip


def _deploy_locked(target: Target, **options: Any) -> DeployResult:
    return _deploy.deploy(target, **options, verifier=verify)


# previews (doctable/operate/preview.py): deploy's and teardown's runs handed in
from doctable.operate import preview as _preview  # noqa: E402
from doctable.operate.preview import (  # noqa: E402
    NotAPreview,
    PreviewInfo,
    PreviewList,
    PreviewOutcome,
    PreviewTeardown,
)


@typed_errors
def preview_deploy(
    target: Target,
    *,
    name: str,
    template: str,
    expires: str = _preview.rules.DEFAULT_EXPIRES,
    allow_destructive: bool = False,
    no_verify: bool = False,
    verify_timeout: float = _VERIFY_TIMEOUT,
    cdk_output: str | None = None,
    outputs_file: str | None = None,
    ask: Callable[[str], str] | None = None,
    cdk_to_stdout: bool = False,
    on_findings: Callable[[DeployResult], None] | None = None,
    wait: float = 0.0,
) -> DeployResult:
    """``doctable preview deploy NAME --from TEMPLATE``: :func:`deploy` of the preview, under the preview's lock
    (docs/api.md)."""
    return _preview.deploy(
        target,
        name=name,
        template=template,
        expires=expires,
        deployer=deploy,
        allow_destructive=allow_destructive,
        no_verify=no_verify,
        verify_timeout=verify_timeout,
        cdk_output=cdk_output,
        outputs_file=outputs_file,
        ask=ask,
        cdk_to_stdout=cdk_to_stdout,
        on_findings=on_findings,
        wait=wait,
    )


preview_list = typed_errors(_preview.list_previews)


@typed_errors
def preview_destroy(
    target: Target,
    *,
    name: str,
    yes: bool = False,
    allow_destructive: bool = False,
    timeout: float = 1800.0,
    ask: Callable[[str], str] | None = None,
    wait: float = 0.0,
) -> PreviewTeardown:
    """``doctable preview destroy NAME``: teardown of one preview, under its lock (docs/api.md)."""
    teardowner = _locking.locked_teardowner(
        target, _teardown.run_teardown, command="preview destroy", wait=wait
    )
    return _preview.destroy(
        target, name=name, yes=yes, allow_destructive=allow_destructive, timeout=timeout, ask=ask,
        teardowner=teardowner,
    )  # fmt: skip


@typed_errors
def preview_gc(
    target: Target,
    *,
    yes: bool = False,
    allow_destructive: bool = False,
    timeout: float = 1800.0,
    ask: Callable[[str], str] | None = None,
    wait: float = 0.0,
) -> PreviewTeardown:
    """``doctable preview gc``: teardown of every expired preview, each under its lock (docs/api.md)."""
    teardowner = _locking.locked_teardowner(target, _teardown.run_teardown, command="preview gc", wait=wait)
    return _preview.gc(
        target, yes=yes, allow_destructive=allow_destructive, timeout=timeout, ask=ask,
        teardowner=teardowner,
    )  # fmt: skip


# the environment's lock (doctable/lifecycle/lock.py): the commands above hold it; unlock breaks a dead one's
unlock = typed_errors(_locking.unlock)


# ---- the day-to-day commands (doctable/operate/) and the plan (doctable/plan/) ----
from doctable.operate import bootstrap as _bootstrap  # noqa: E402
from doctable.operate import invoke as _invoke  # noqa: E402
from doctable.operate import ledger as _ledger  # noqa: E402
from doctable.operate import logs as _logs  # noqa: E402
from doctable.operate import policy as _policy  # noqa: E402
from doctable.operate import replay as _replay  # noqa: E402
from doctable.operate import settings as _settings  # noqa: E402
from doctable.operate import watch as _watch  # noqa: E402
from doctable.operate.bootstrap import BootstrapResult, PolicyAction  # noqa: E402
from doctable.operate.invoke import InvokeLogLine, InvokeResult  # noqa: E402
from doctable.operate.ledger import LedgerResult  # noqa: E402
from doctable.operate.logs import LogLine, LogsResult  # noqa: E402
from doctable.operate.policy import PolicyResult  # noqa: E402
from doctable.operate.replay import ReplayedObject, ReplayResult  # noqa: E402
from doctable.operate.settings import IndexRow, KnobRow, OverrideRow, SettingsResult  # noqa: E402
from doctable.operate.watch import WatchResult, WatchUpdate  # noqa: E402
from doctable.plan import cost as _cost  # noqa: E402
from doctable.plan.cost import Plan  # noqa: E402
from doctable.plan.workload import Workload  # noqa: E402

logs = typed_errors(_logs.logs)
invoke = typed_errors(_invoke.invoke)
watch = typed_errors(_watch.watch)
replay = typed_errors(_replay.replay)
ledger = typed_errors(_ledger.ledger)
settings = typed_errors(_settings.settings)
policy = typed_errors(_policy.policy)
bootstrap = typed_errors(_bootstrap.bootstrap)
plan = typed_errors(_cost.plan)

__all__ = [
    "ConversionStep",
    "DeployResult",
    "IndexStep",
    "deploy",
    "DriftRow",
    "ReconcileResult",
    "reconcile",
    "NotAPreview",
    "PreviewInfo",
    "PreviewList",
    "PreviewOutcome",
    "PreviewTeardown",
    "preview_deploy",
    "preview_destroy",
    "preview_gc",
    "preview_list",
    "TeardownResult",
    "teardown",
    "EnvironmentLocked",
    "LockHolder",
    "UnlockResult",
    "unlock",
    "PreflightFinding",
    "PreflightResult",
    "preflight",
    "SkippedCheck",
    "VerifyResult",
    "VerifyRow",
    "verify",
    "BootstrapResult",
    "PolicyAction",
    "bootstrap",
    "IndexRow",
    "KnobRow",
    "OverrideRow",
    "SettingsResult",
    "settings",
    "InvokeLogLine",
    "InvokeResult",
    "invoke",
    "LedgerResult",
    "ledger",
    "LogLine",
    "LogsResult",
    "logs",
    "Plan",
    "Workload",
    "plan",
    "PolicyResult",
    "policy",
    "ReplayedObject",
    "ReplayResult",
    "replay",
    "WatchResult",
    "WatchUpdate",
    "watch",
    "AwsError",
    "RefusedError",
    "Target",
    "UserError",
]
