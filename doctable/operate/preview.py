"""``doctable preview``: short-lived environments the settings file does not declare (contract/settings/preview.py).

``deploy NAME --from ENV`` deploys ``<prefix><NAME>`` through ``doctable deploy``'s own path (preflight, the gate,
cdk deploy, verify) with the preview context; ``list`` shows each preview stack, found by its tags; ``destroy NAME``
and ``gc`` tear previews down through ``doctable teardown``'s path (its ownership check, plan, confirmation and
absence check) once each is shown to be a preview of this project. Expiry is judged by the clock of the AWS it talks
to (the ``Date`` header of its answers), never this machine's. deploy and teardown live on the floor beside this
one: doctable/cli.py hands them in (:class:`Lifecycle`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from contract.findings import Finding, Level
from contract.knobs import PROD_TIER, STACK_PREFIX, ConfigError, resolve_config
from contract.settings import preview as rules
from contract.settings.resolve import FILE_NAME, SettingsFile, load_settings, settings_path
from doctable.capabilities.protocol import TABLE_TYPES, stack_physical_ids
from doctable.core.answers import call_or_none
from doctable.core.aws import Aws, user_errors
from doctable.core.command import add_command, connect_aws, print_json, seconds
from doctable.core.context import describe_stack, resolve_run
from doctable.core.deployment import Deployment, use_deployed_knobs
from doctable.core.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED, RefusedError, UserError
from doctable.core.render import Progress, text_table

PROD_ACCOUNT = "preview.prod_account"
ALLOW_FLAG = "--allow-destructive"
YES_NO = ("no", "yes")


@dataclass(frozen=True)
class Lifecycle:
    """What a preview reuses of the lifecycle commands: ``doctable deploy``'s run (its arguments), and
    ``doctable teardown``'s (aws, deployment, assume_yes=, lift=, timeout=, progress=) -> (plan, outcome)."""

    deploy: Callable[[argparse.Namespace], int]
    teardown: Callable[..., tuple[Any, Any]]
    deploy_defaults: Mapping[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- reading
def aws_time(response: Mapping[str, Any]) -> dt.datetime:
    """The time AWS answered at (its ``Date`` header): the clock previews expire by."""
    date = ((response.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}).get("date")
    try:
        moment = parsedate_to_datetime(date) if date else None
    except (TypeError, ValueError):
        moment = None
    if moment is None or moment.tzinfo is None:
        raise UserError(
            "AWS's answer carried no readable Date header: a preview's expiry is judged by AWS's clock, never this "
            "machine's; nothing was changed"
        )
    return moment.astimezone(dt.UTC)


@dataclass
class Survey:
    """The region's stacks as previews see them: AWS's time, the previews, the stacks that look like previews
    but are not (with why), and the prod-tier stacks."""

    now: dt.datetime
    previews: list[rules.PreviewStack] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    prod_stacks: list[str] = field(default_factory=list)

    def expired(self) -> list[rules.PreviewStack]:
        return [p for p in self.previews if p.expired(self.now)]


def _utc(value: Any) -> dt.datetime | None:
    return value.astimezone(dt.UTC) if isinstance(value, dt.datetime) else None


def _tags(stack: Mapping[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in stack.get("Tags") or []}


def _classify(
    stack: Mapping[str, Any], settings: SettingsFile, declared: Mapping[str, str]
) -> rules.PreviewStack | rules.NotPreview:
    """One described stack as a preview of this project, or why it is not one (contract.settings.preview.classify)."""
    return rules.classify(
        stack["StackName"],
        _tags(stack),
        prefix=settings.preview_prefix,
        project=settings.project,
        declared=declared,
        stack_of=settings.preview_stack_name,
        created=_utc(stack.get("CreationTime")),
        status=stack.get("StackStatus", ""),
    )


def survey(aws: Aws, settings: SettingsFile) -> Survey:
    """Every stack of the region, each classified by its name and tags (contract.settings.preview.classify)."""
    found: Survey | None = None
    declared = settings.stack_names()
    prefix = settings.preview_prefix
    with user_errors(f"listing the stacks of {aws.region}"):
        for page in aws.client("cloudformation").get_paginator("describe_stacks").paginate():
            found = found or Survey(now=aws_time(page))
            for stack in page.get("Stacks", []):
                if stack.get("StackStatus") == "DELETE_COMPLETE":
                    continue
                name, tags = stack["StackName"], _tags(stack)
                if tags.get("Tier") == PROD_TIER:
                    found.prod_stacks.append(name)
                verdict = _classify(stack, settings, declared)
                if isinstance(verdict, rules.PreviewStack):
                    found.previews.append(verdict)
                elif rules.TAG_PREVIEW_OF in tags or rules.TAG_EXPIRES_AT in tags or f"-{prefix}" in name:
                    found.skipped.append({"stack": name, "code": verdict.code, "why": str(verdict)})
    if found is None:  # pragma: no cover - a paginator yields at least one page
        raise UserError("CloudFormation gave no answer to DescribeStacks")
    return found


def prod_findings(found: Survey, aws: Aws) -> list[Finding]:
    """WARN for each prod-tier stack where the preview deploys (this region of this account)."""
    return [
        Finding(
            Level.WARN,
            PROD_ACCOUNT,
            f"stack {name}",
            f"Tier={PROD_TIER} in account {aws.account}, {aws.region}",
            "previews apart from prod",
            "the deploy role a preview uses here can reach this prod-tier stack: keep previews in an account that "
            "holds no declared environment (docs/deploy-to-aws.md, Previews)",
        )
        for name in found.prod_stacks
    ]


def _settings(args: argparse.Namespace) -> SettingsFile:
    path = settings_path(getattr(args, "config", None), os.environ)
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


def _connect(args: argparse.Namespace, settings: SettingsFile) -> Aws:
    """The session (--region, else [previews] region, else AWS_REGION), its account checked against [previews]'."""
    aws = Aws.connect(args.region or settings.previews.region, profile=args.profile)
    aws.identity()
    bound = settings.previews.account
    if bound and aws.account != bound:
        raise UserError(
            f"account mismatch: previews are bound to account {bound} in {settings.previews_label}, but the "
            f"credentials are for account {aws.account}; switch credentials (--profile or AWS_PROFILE)"
        )
    return aws


# ---------------------------------------------------------------------------------------------- deploy
def _deploy_args(
    lifecycle: Lifecycle, args: argparse.Namespace, env: str, preview: rules.Preview, found: Any = ()
) -> argparse.Namespace:
    """``doctable deploy``'s arguments for the preview: its environment, context and warnings (in its --json)."""
    return argparse.Namespace(
        **{
            **lifecycle.deploy_defaults,
            **vars(args),
            "env_name": env,
            "context": [*(args.context or []), preview.context_pair()],
            "extra_findings": list(found),
        }
    )


def cmd_deploy(lifecycle: Lifecycle, args: argparse.Namespace) -> int:
    settings = _settings(args)
    env = _env(settings, args.name)
    try:
        lifetime = rules.parse_duration(args.expires)
    except rules.PreviewError as exc:
        raise UserError(str(exc)) from None
    # Every refusal of the settings (borrowed resources, names) before any AWS call; the expiry is AWS's below.
    provisional = rules.Preview(args.template, rules.format_time(dt.datetime.now(dt.UTC)))
    resolved = resolve_run(_deploy_args(lifecycle, args, env, provisional))
    aws = connect_aws(args, resolved)
    found = survey(aws, settings)
    progress = Progress("doctable preview deploy", quiet=args.quiet)
    for finding in (warnings := prod_findings(found, aws)):
        progress.say(f"{finding.level} {finding.code}: {finding.subject} ({finding.live}): {finding.effect}")
    preview = rules.Preview(args.template, rules.format_time(found.now + dt.timedelta(seconds=lifetime)))
    progress.say(
        f"preview {env} from {args.template} (tier {rules.PREVIEW_TIER}), expires {preview.expires_at} by AWS's "
        f"clock (now {rules.format_time(found.now)})"
    )
    return lifecycle.deploy(_deploy_args(lifecycle, args, env, preview, warnings))


# ---------------------------------------------------------------------------------------------- list
def _age(seconds_: int | None) -> str:
    if seconds_ is None:
        return "?"
    days, rest = divmod(max(0, seconds_), 86400)
    return f"{days}d{rest // 3600}h" if days else f"{rest // 3600}h{rest % 3600 // 60:02d}m"


def _document(kind: str, aws: Aws, settings: SettingsFile, found: Survey) -> dict[str, Any]:
    return {
        "kind": kind,
        "account": aws.account,
        "region": aws.region,
        "prefix": settings.preview_prefix,
        "now": rules.format_time(found.now),
        "clock": "AWS (the Date header of its answer)",
        "previews": [p.as_dict(found.now) for p in found.previews],
        "skipped": found.skipped,
    }


def cmd_list(args: argparse.Namespace) -> int:
    settings = _settings(args)
    aws = _connect(args, settings)
    found = survey(aws, settings)
    if args.json:
        print_json(_document("doctable-preview-list", aws, settings, found))
        return EXIT_OK
    rows = [
        [
            *(d[k] for k in ("name", "template", "stack")),
            _age(d["age_seconds"]),
            d["expires_at"],
            YES_NO[d["expired"]],
        ]
        for d in (p.as_dict(found.now) for p in found.previews)
    ]
    print(f"previews in account {aws.account}, {aws.region} (AWS's clock: {rules.format_time(found.now)}):")
    print(
        text_table(["name", "template", "stack", "age", "expires", "expired"], rows) if rows else "  (none)"
    )
    for skipped in found.skipped:
        print(f"  not a preview: {skipped['stack']} ({skipped['why']})")
    return EXIT_OK


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
    """One destroy or gc run: its settings (to classify a stack again), whether only expired previews go (gc),
    its arguments and its progress."""

    lifecycle: Lifecycle
    aws: Aws
    settings: SettingsFile
    args: argparse.Namespace
    progress: Progress
    expired_only: bool = False


def destroy_one(run: Teardown, preview: rules.PreviewStack) -> dict[str, Any]:
    """Teardown of one preview (its ownership check, plan, confirmation and absence check); its outcome."""
    aws, args, progress = run.aws, run.args, run.progress
    why_not = _still_to_remove(aws, run.settings, preview, expired_only=run.expired_only)
    if why_not:
        progress.say(f"{preview.env}: kept ({why_not})")
        return {"name": preview.env, "stack": preview.stack, "status": "kept", "reason": why_not}
    deployment = _deployment(aws, preview)
    _refuse_items(aws, preview, deployment, args.allow_destructive)
    _plan, outcome = run.lifecycle.teardown(
        aws, deployment, assume_yes=args.yes, lift=False, timeout=args.timeout, progress=progress
    )
    status = "removed" if outcome.clean else "incomplete"
    return {"name": preview.env, "stack": preview.stack, "status": status, **outcome.as_dict()}


def _run_each(run: Teardown, chosen: list[rules.PreviewStack]) -> tuple[list[dict[str, Any]], int]:
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
            results.append(
                {
                    "name": preview.env,
                    "stack": preview.stack,
                    "status": status,
                    "code": code,
                    "error": str(exc),
                }
            )
    statuses = {r["status"] for r in results}
    if statuses & {"incomplete", "failed"}:
        return results, EXIT_FAILED
    return results, EXIT_REFUSED if "refused" in statuses else EXIT_OK


def _print_results(results: list[dict[str, Any]]) -> None:
    for result in results:
        print(f"{result['name']} ({result['stack']}): {result['status']}")
        for title in ("removed", "retained", "still_present", "notes"):
            for item in result.get(title, []):
                print(f"  {title}: {item}")
        for detail in ("reason", "error"):
            if detail in result:
                print(f"  {result[detail]}")


def cmd_destroy(lifecycle: Lifecycle, args: argparse.Namespace) -> int:
    settings = _settings(args)
    env = _env(settings, args.name)
    aws = _connect(args, settings)
    found = survey(aws, settings)
    progress = Progress("doctable preview destroy", quiet=args.quiet)
    chosen = [p for p in found.previews if p.env == env]
    lookalike = next((s for s in found.skipped if s["stack"].endswith("-" + env)), None)
    if not chosen and lookalike is not None:
        raise RefusedError(
            f"stack {lookalike['stack']} is not a preview of this project ({lookalike['why']}): refusing to destroy "
            "it; allowed: previews deployed by doctable preview deploy (ManagedBy, Source, Project, PreviewOf and "
            "ExpiresAt tags, the preview prefix)"
        )
    if not chosen:
        progress.say(f"no preview {env} in account {aws.account}, {aws.region}: nothing to remove")
    results, code = _run_each(Teardown(lifecycle, aws, settings, args, progress), chosen)
    if args.json:
        print_json(
            {**_document("doctable-preview-destroy", aws, settings, found), "results": results, "exit": code}
        )
    else:
        _print_results(results)
    return code


def cmd_gc(lifecycle: Lifecycle, args: argparse.Namespace) -> int:
    settings = _settings(args)
    aws = _connect(args, settings)
    found = survey(aws, settings)
    progress = Progress("doctable preview gc", quiet=args.quiet)
    expired = found.expired()
    progress.say(
        f"gc in account {aws.account}, {aws.region} at {rules.format_time(found.now)} (AWS's clock):"
    )
    for preview in found.previews:
        verb = "destroy" if preview in expired else "keep"
        progress.say(
            f"  {verb:<8} {preview.env} ({preview.stack}, expires {rules.format_time(preview.expires_at)})"
        )
    for skipped in found.skipped:
        progress.say(f"  {'ignore':<8} {skipped['stack']} (not a preview: {skipped['why']})")
    results, code = _run_each(Teardown(lifecycle, aws, settings, args, progress, expired_only=True), expired)
    if args.json:
        print_json(
            {**_document("doctable-preview-gc", aws, settings, found), "results": results, "exit": code}
        )
    else:
        _print_results(results)
        print(f"gc: {len(expired)} expired of {len(found.previews)} previews")
    return code


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


def register(sub: Any, lifecycle: Lifecycle) -> None:
    preview = sub.add_parser(
        "preview",
        help="preview environments: deploy one from a declared environment, list them, destroy one, gc the expired",
        description="Short-lived environments the settings file does not declare, named <prefix><NAME> (pr- or "
        "[previews] prefix), tier dev, tagged PreviewOf and ExpiresAt; expiry by AWS's clock.",
    )
    actions = preview.add_subparsers(dest="action", required=True, metavar="ACTION")
    deploy = add_command(
        actions, "deploy", functools.partial(cmd_deploy, lifecycle),
        help="deploy preview <prefix>NAME from a declared environment (doctable deploy's path: preflight, gate, verify)",
        description="The template's settings minus borrowed resources (refused), tier dev, an ExpiresAt tag.",
    )  # fmt: skip
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
    deploy.add_argument(
        "--verify-timeout", type=seconds, default=lifecycle.deploy_defaults.get("verify_timeout")
    )
    deploy.add_argument("--cdk-output", default=lifecycle.deploy_defaults.get("cdk_output"), metavar="DIR")
    deploy.add_argument("--outputs-file", help="write the stack's outputs to this JSON file")
    listing = add_command(
        actions, "list", cmd_list, help="each preview: template, age, expiry, expired",
        description="Every preview stack of the region, found by its tags (ManagedBy, Source, Project, PreviewOf, ExpiresAt).",
    )  # fmt: skip
    _common(listing, "print the previews as JSON")
    destroy = add_command(
        actions, "destroy", functools.partial(cmd_destroy, lifecycle), help="tear down one preview",
        description="doctable teardown of <prefix>NAME once its tags show it is a preview of this project.",
    )  # fmt: skip
    destroy.add_argument("name", metavar="NAME", help="the preview's name after the prefix")
    _common(destroy, "print the outcome as JSON")
    _teardown_arguments(destroy)
    gc = add_command(
        actions, "gc", functools.partial(cmd_gc, lifecycle), help="tear down every expired preview",
        description="Every preview whose ExpiresAt is past by AWS's clock, torn down as destroy does.",
    )  # fmt: skip
    _common(gc, "print the outcome as JSON")
    _teardown_arguments(gc)
