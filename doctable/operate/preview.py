"""``doctable preview``: short-lived environments the settings file does not declare (contract/settings/preview.py).

``deploy NAME --from ENV`` deploys ``<prefix><NAME>`` through ``doctable deploy``'s own path (preflight, the gate,
cdk deploy, verify) with the preview context; ``list`` shows each preview stack, found by its tags; ``destroy NAME``
and ``gc`` tear previews down through ``doctable teardown``'s path (its ownership check, plan, confirmation and
absence check) once each is shown to be a preview of this project. Expiry is judged by the clock of the AWS it talks
to (the ``Date`` header of its answers), never this machine's. deploy and teardown live on the floor beside this
one: doctable.api hands their functions in (``deployer``, ``teardowner``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from contract.knobs import STACK_PREFIX, ConfigError, resolve_config
from contract.settings import preview as rules
from contract.settings.resolve import FILE_NAME, SettingsFile, load_settings, settings_path
from doctable.capabilities.protocol import TABLE_TYPES, stack_physical_ids
from doctable.core.answers import call_or_none
from doctable.core.aws import Aws, user_errors
from doctable.core.command import connect_aws
from doctable.core.context import describe_stack, resolve_run
from doctable.core.deployment import Deployment, use_deployed_knobs
from doctable.core.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED, RefusedError, UserError
from doctable.core.render import Progress
from doctable.core.target import Target, override_pair
from doctable.operate.preview_survey import (
    Survey,
    _classify,
    aws_time,
    preview_regions,
    prod_findings,
    survey,
    survey_regions,
)

ALLOW_FLAG = "--allow-destructive"
D = TypeVar("D")
# ``doctable teardown``'s run: (aws, deployment, assume_yes=, lift=, timeout=, progress=, read=) -> (plan, outcome)
Teardowner = Callable[..., tuple[Any, Any]]


def _settings(target: Target) -> SettingsFile:
    path = settings_path(target.config, os.environ)
    try:
        settings = load_settings(path) if path is not None else SettingsFile(path=Path(FILE_NAME))
        settings.project_name = settings.project  # the default (the repository's) resolved, or refused, once
        return settings
    except ConfigError as exc:
        raise UserError("invalid settings: " + "; ".join(exc.problems)) from exc


def _env(settings: SettingsFile, name: str) -> str:
    try:
        return rules.preview_env(settings.preview_prefix, name)
    except rules.PreviewError as exc:
        raise UserError(str(exc)) from None


def _connect(target: Target, settings: SettingsFile) -> Aws:
    """The session (--region, else [previews] region, else AWS_REGION), its account checked against [previews]'."""
    aws = Aws.connect(target.region or settings.previews.region, profile=target.profile)
    aws.identity()
    bound = settings.previews.account
    if bound and aws.account != bound:
        raise UserError(
            f"account mismatch: previews are bound to account {bound} in {settings.previews_label}, but the "
            f"credentials are for account {aws.account}; switch credentials (--profile or AWS_PROFILE)"
        )
    return aws


# ---------------------------------------------------------------------------------------------- deploy
def _deploy_target(target: Target, env: str, preview: rules.Preview) -> Target:
    """``doctable deploy``'s target for the preview: its environment, and its context after this run's."""
    knob, value = override_pair(preview.context_pair())
    return dataclasses.replace(target, env=env, overrides={**target.overrides, knob: value})


def deploy(
    target: Target, *, name: str, template: str, expires: str = rules.DEFAULT_EXPIRES,
    deployer: Callable[..., D], **deploy_options: Any,
) -> D:  # fmt: skip
    """Preview ``name`` deployed from the declared environment ``template`` through ``deployer`` (doctable
    deploy's function, given ``deploy_options``), expiring ``expires`` after now by AWS's clock; a prod-tier stack
    where it deploys is a WARN among the deploy's findings."""
    settings = _settings(target)
    env = _env(settings, name)
    try:
        lifetime = rules.parse_duration(expires)
    except rules.PreviewError as exc:
        raise UserError(str(exc)) from None
    # Every refusal of the settings (borrowed resources, names) before any AWS call; the expiry is AWS's below.
    provisional = rules.Preview(template, rules.format_time(dt.datetime.now(dt.UTC)))
    resolved = resolve_run(_deploy_target(target, env, provisional))
    aws = connect_aws(target, resolved)
    found = survey(aws, settings)
    progress = Progress("doctable preview deploy", quiet=target.quiet)
    for finding in (warnings := prod_findings(found, aws)):
        progress.say(f"{finding.level} {finding.code}: {finding.subject} ({finding.live}): {finding.effect}")
    preview = rules.Preview(template, rules.format_time(found.now + dt.timedelta(seconds=lifetime)))
    progress.say(
        f"preview {env} from {template} (tier {rules.PREVIEW_TIER}), expires {preview.expires_at} by AWS's "
        f"clock (now {rules.format_time(found.now)})"
    )
    return deployer(_deploy_target(target, env, preview), extra_findings=warnings, **deploy_options)


# ---------------------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class PreviewInfo:
    """One preview stack as the survey found it: its environment (``name``), template, status, creation, age and
    expiry by AWS's clock."""

    name: str
    stack: str
    template: str
    status: str
    created: str | None
    age_seconds: int | None
    expires_at: str
    expired: bool
    region: str = ""  # where its stack lives (its teardown runs there)
    replica_regions: tuple[str, ...] = ()  # where its replica stacks were found (a global template's)

    @classmethod
    def of(cls, preview: rules.PreviewStack, found: Survey, default_region: str) -> PreviewInfo:
        return cls(
            **preview.as_dict(found.now),
            region=found.region_of(preview, default_region),
            replica_regions=tuple(found.replicas.get(preview.stack, ())),
        )

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class NotAPreview:
    """A stack that looks like a preview (its tags or name) but is not one of this project's: why (``code``)."""

    stack: str
    code: str
    why: str


@dataclass(frozen=True)
class PreviewList:
    """The previews of the account's regions (``region``: the session's; ``regions``: every one read, the session's
    first; ``now``: AWS's clock, which they expire by) and the look-alikes skipped. ``to_json()`` is ``doctable
    preview list --json``'s document."""

    kind: ClassVar[str] = "doctable-preview-list"

    account: str
    region: str
    prefix: str
    now: str
    previews: tuple[PreviewInfo, ...]
    skipped: tuple[NotAPreview, ...]
    regions: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "account": self.account,
            "region": self.region,
            "regions": list(self.regions),
            "prefix": self.prefix,
            "now": self.now,
            "clock": "AWS (the Date header of its answer)",
            "previews": [p.as_dict() for p in self.previews],
            "skipped": [dataclasses.asdict(s) for s in self.skipped],
        }


def _listing(aws: Aws, settings: SettingsFile, found: Survey) -> PreviewList:
    return PreviewList(
        account=aws.account,
        region=aws.region,
        prefix=settings.preview_prefix,
        now=rules.format_time(found.now),
        previews=tuple(PreviewInfo.of(p, found, aws.region) for p in found.previews),
        skipped=tuple(NotAPreview(**s) for s in found.skipped),
        regions=tuple(found.read or [aws.region]),
    )


@dataclass(frozen=True)
class PreviewOutcome:
    """One preview a destroy or gc chose: ``status`` removed, incomplete (what teardown left: ``still_present``),
    kept (``reason``: it is no longer to be removed), refused or failed (``code``, ``error``)."""

    name: str
    stack: str
    status: str
    reason: str | None = None
    code: str | None = None
    error: str | None = None
    removed: tuple[str, ...] = ()
    retained: tuple[str, ...] = ()
    still_present: tuple[str, ...] = ()
    emptied: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def torn_down(self) -> bool:
        return self.status in ("removed", "incomplete")

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"name": self.name, "stack": self.stack, "status": self.status}
        if self.torn_down:
            lists = ("removed", "retained", "still_present", "emptied", "notes")
            return {
                **found,
                **{key: list(getattr(self, key)) for key in lists},
                "clean": not self.still_present,
            }
        details = ("reason",) if self.status == "kept" else ("code", "error")
        return {**found, **{key: getattr(self, key) for key in details}}


@dataclass(frozen=True)
class PreviewTeardown(PreviewList):
    """A destroy's or gc's run: the survey (as :class:`PreviewList`), each chosen preview's outcome, and ``exit``:
    1 when one is incomplete or failed, else 3 when one was refused, else 0."""

    kind: ClassVar[str] = "doctable-preview-destroy"

    action: str = "destroy"  # or gc
    results: tuple[PreviewOutcome, ...] = ()
    exit: int = 0

    @property
    def expired(self) -> tuple[PreviewInfo, ...]:
        return tuple(p for p in self.previews if p.expired)

    def to_json(self) -> dict[str, Any]:
        document = {**super().to_json(), "kind": f"doctable-preview-{self.action}"}
        return {**document, "results": [r.as_dict() for r in self.results], "exit": self.exit}


# ---------------------------------------------------------------------------------------------- list
def list_previews(target: Target) -> PreviewList:
    """Every preview stack of the regions previews live in (``target``'s region, else [previews]', else each
    template's; and each global template's replica regions: preview_survey.preview_regions), found by its tags."""
    settings = _settings(target)
    aws = _connect(target, settings)
    return _listing(aws, settings, survey_regions(aws, settings, preview_regions(target, settings, aws)))


# ---------------------------------------------------------------------------------------------- destroy, gc
def _deployment(aws: Aws, preview: rules.PreviewStack) -> Deployment:
    """The preview's stack as teardown reads it: the knobs it recorded (else a dev environment of its name)."""
    base = preview.stack[len(STACK_PREFIX) : -(len(preview.env) + 1)]
    try:
        config = resolve_config(context={"env": preview.env, "table_base": base, "tier": rules.PREVIEW_TIER})
    except ConfigError as exc:
        raise UserError(f"preview {preview.env}: " + "; ".join(exc.problems)) from exc
    return use_deployed_knobs(describe_stack(aws, config))


def _refuse_items(aws: Aws, preview: rules.PreviewStack, deployment: Deployment, allow: bool) -> None:
    """A preview whose table holds items is destroyed only with --allow-destructive. The table is the one the
    stack lists as its own resource (what teardown deletes), never a name read from its outputs."""
    if allow:
        return
    with user_errors(f"listing the resources of {preview.stack}"):
        found = stack_physical_ids(aws, deployment)
    for table in sorted(name for type_ in TABLE_TYPES for name in found.get(type_, ())):
        with user_errors(f"reading table {table}"):
            reply = call_or_none(aws.client("dynamodb").scan, TableName=table, Limit=1, Select="COUNT")
        if reply and reply.get("Count"):
            raise RefusedError(
                f"preview {preview.env}: table {table} holds items: refusing to destroy them; allowed: "
                f"{ALLOW_FLAG} to destroy the preview with its data"
            )


def _still_to_remove(
    aws: Aws, settings: SettingsFile, preview: rules.PreviewStack, *, expired_only: bool
) -> str | None:
    """Read the preview's stack again right before it is torn down: why it is no longer to be removed (its tags
    changed, its expiry was extended, it is busy, it is gone), or None to go on. The survey may be minutes old."""
    with user_errors(f"describing stack {preview.stack}"):
        reply = call_or_none(aws.client("cloudformation").describe_stacks, StackName=preview.stack)
    stacks = (reply or {}).get("Stacks") or []
    if reply is None or not stacks or stacks[0].get("StackStatus") == "DELETE_COMPLETE":
        return "the stack is gone"
    verdict = _classify(stacks[0], settings, settings.stack_names())
    if not isinstance(verdict, rules.PreviewStack):
        return f"no longer a preview of this project: {verdict}"
    if verdict.status.endswith("_IN_PROGRESS"):
        return f"the stack is {verdict.status}: left for the next run"
    now = aws_time(reply)
    if expired_only and not verdict.expired(now):
        return f"no longer expired (expires {rules.format_time(verdict.expires_at)})"
    return None


@dataclass(frozen=True)
class Teardown:
    """One destroy or gc run: teardown's function (``teardowner``), its settings (to classify a stack again),
    whether only expired previews go (gc), its options and its progress."""

    teardowner: Teardowner
    aws: Aws
    settings: SettingsFile
    progress: Progress
    expired_only: bool = False
    yes: bool = False
    allow_destructive: bool = False
    timeout: float = 1800.0
    ask: Callable[[str], str] | None = None
    found: Survey | None = None  # the survey the previews were chosen from: each one's region


def destroy_one(run: Teardown, preview: rules.PreviewStack) -> PreviewOutcome:
    """Teardown of one preview, in its region (its ownership check, plan, confirmation and absence check, its
    replica stacks first); its outcome."""
    progress = run.progress
    aws = run.aws.in_region(run.found.region_of(preview, run.aws.region)) if run.found else run.aws
    why_not = _still_to_remove(aws, run.settings, preview, expired_only=run.expired_only)
    if why_not:
        progress.say(f"{preview.env}: kept ({why_not})")
        return PreviewOutcome(preview.env, preview.stack, "kept", reason=why_not)
    deployment = _deployment(aws, preview)
    _refuse_items(aws, preview, deployment, run.allow_destructive)
    _plan, outcome = run.teardowner(
        aws, deployment, assume_yes=run.yes, lift=False, timeout=run.timeout, progress=progress, read=run.ask
    )
    return PreviewOutcome(
        preview.env, preview.stack, "removed" if outcome.clean else "incomplete",
        removed=tuple(outcome.removed), retained=tuple(outcome.retained),
        still_present=tuple(outcome.still_present), emptied=tuple(outcome.emptied), notes=tuple(outcome.notes),
    )  # fmt: skip


def _run_each(run: Teardown, chosen: list[rules.PreviewStack]) -> tuple[list[PreviewOutcome], int]:
    """Each chosen preview torn down in turn: one refused or failing, for any reason, is reported as data and the
    others go on. The results and the exit code: 1 when one is incomplete or failed, else 3 when one was refused,
    else 0."""
    results = []
    for preview in chosen:
        try:
            results.append(destroy_one(run, preview))
        except Exception as exc:  # noqa: BLE001 - one preview's failure never stops the others; it is reported
            status = "refused" if isinstance(exc, RefusedError) else "failed"
            code = getattr(exc, "fields", {}).get("code") or (
                "usage" if isinstance(exc, UserError) else f"internal.{type(exc).__name__}"
            )
            run.progress.say(f"{preview.env}: {status}: {exc}")
            results.append(PreviewOutcome(preview.env, preview.stack, status, code=code, error=str(exc)))
    statuses = {r.status for r in results}
    if statuses & {"incomplete", "failed"}:
        return results, EXIT_FAILED
    return results, EXIT_REFUSED if "refused" in statuses else EXIT_OK


def destroy(
    target: Target, *, name: str, yes: bool = False, allow_destructive: bool = False, timeout: float = 1800.0,
    ask: Callable[[str], str] | None = None, teardowner: Teardowner,
) -> PreviewTeardown:  # fmt: skip
    """Preview ``name`` torn down through ``teardowner`` (doctable teardown's run) once its tags show it is a
    preview of this project; a table holding items only with ``allow_destructive``."""
    settings = _settings(target)
    env = _env(settings, name)
    aws = _connect(target, settings)
    found = survey_regions(aws, settings, preview_regions(target, settings, aws))
    progress = Progress("doctable preview destroy", quiet=target.quiet)
    chosen = [p for p in found.previews if p.env == env]
    lookalike = next((s for s in found.skipped if s["stack"].endswith("-" + env)), None)
    if not chosen and lookalike is not None:
        raise RefusedError(
            f"stack {lookalike['stack']} is not a preview of this project ({lookalike['why']}): refusing to destroy "
            "it; allowed: previews deployed by doctable preview deploy (ManagedBy, Source, Project, PreviewOf and "
            "ExpiresAt tags, the preview prefix)"
        )
    if not chosen:
        progress.say(f"no preview {env} in account {aws.account}, {', '.join(found.read)}: nothing to remove")
    run = Teardown(teardowner, aws, settings, progress, False, yes, allow_destructive, timeout, ask, found)
    results, code = _run_each(run, chosen)
    return PreviewTeardown(**vars(_listing(aws, settings, found)), action="destroy", results=tuple(results),
                           exit=code)  # fmt: skip


def gc(
    target: Target, *, yes: bool = False, allow_destructive: bool = False, timeout: float = 1800.0,
    ask: Callable[[str], str] | None = None, teardowner: Teardowner,
) -> PreviewTeardown:  # fmt: skip
    """Every preview whose ExpiresAt is past by AWS's clock, torn down as :func:`destroy` does."""
    settings = _settings(target)
    aws = _connect(target, settings)
    found = survey_regions(aws, settings, preview_regions(target, settings, aws))
    progress = Progress("doctable preview gc", quiet=target.quiet)
    expired = found.expired()
    progress.say(
        f"gc in account {aws.account}, {', '.join(found.read)} at {rules.format_time(found.now)} (AWS's clock):"
    )
    for preview in found.previews:
        verb = "destroy" if preview in expired else "keep"
        where = found.region_of(preview, aws.region)
        progress.say(
            f"  {verb:<8} {preview.env} ({preview.stack} in {where}, expires "
            f"{rules.format_time(preview.expires_at)})"
        )
    for skipped in found.skipped:
        progress.say(f"  {'ignore':<8} {skipped['stack']} (not a preview: {skipped['why']})")
    run = Teardown(teardowner, aws, settings, progress, True, yes, allow_destructive, timeout, ask, found)
    results, code = _run_each(run, expired)
    return PreviewTeardown(**vars(_listing(aws, settings, found)), action="gc", results=tuple(results),
                           exit=code)  # fmt: skip
