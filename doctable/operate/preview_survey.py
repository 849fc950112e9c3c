"""Where ``doctable preview`` finds previews: every stack of a region classified by its name and tags
(contract/settings/preview.py), in each region previews live in. A preview deploys where its template's binding
says ([previews] region, else the template environment's region, else the session's): ``list``, ``destroy`` and
``gc`` read the session's region, each such region and a template's replica regions (``--region`` names the one
region read instead), and keep each preview's region (its teardown runs there). A stack named and tagged as a
preview's replica stack (``<stack>-<region>``) counts as that preview's, or, its preview in no region read, is
listed as ``preview.replica_orphaned`` (a preview owns every resource: ``replicas`` is refused for it today, so
this guards the names, not a deploy's output). Expiry is judged by the clock of the AWS it talks to (its ``Date``
header)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

from contract.findings import Finding, Level
from contract.knobs import PROD_TIER, ConfigError
from contract.settings import preview as rules
from contract.settings.resolve import SettingsFile
from doctable.core.aws import Aws, user_errors
from doctable.core.context import resolve_run
from doctable.core.errors import UserError
from doctable.core.target import Target, override_pair

PROD_ACCOUNT = "preview.prod_account"
REPLICA_ORPHANED = "preview.replica_orphaned"  # a preview's replica stack whose home stack is gone


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
    """The regions' stacks as previews see them: AWS's time, the previews (each with its region), the stacks that
    look like previews but are not (with why), the prod-tier stacks, each preview's replica stacks' regions and
    the regions read."""

    now: dt.datetime
    previews: list[rules.PreviewStack] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    prod_stacks: list[str] = field(default_factory=list)
    regions: dict[rules.PreviewStack, str] = field(default_factory=dict)  # preview -> the region it lives in
    replicas: dict[str, list[str]] = field(
        default_factory=dict
    )  # preview stack -> its replica stacks' regions
    read: list[str] = field(default_factory=list)

    def region_of(self, preview: rules.PreviewStack, default: str) -> str:
        return self.regions.get(preview, default)

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
    """Every stack of ``aws``'s region, each classified by its name and tags (contract.settings.preview.classify);
    a preview's replica stack (``<preview stack>-<region>``, the preview's tags) is counted as its, not listed."""
    found: Survey | None = None
    declared = settings.stack_names()
    prefix = settings.preview_prefix
    with user_errors(f"listing the stacks of {aws.region}"):
        for page in aws.client("cloudformation").get_paginator("describe_stacks").paginate():
            found = found or Survey(now=aws_time(page), read=[aws.region])
            for stack in page.get("Stacks", []):
                if stack.get("StackStatus") == "DELETE_COMPLETE":
                    continue
                name, tags = stack["StackName"], _tags(stack)
                if tags.get("Tier") == PROD_TIER:
                    found.prod_stacks.append(name)
                verdict = _classify(stack, settings, declared)
                if isinstance(verdict, rules.PreviewStack):
                    found.previews.append(verdict)
                    found.regions[verdict] = aws.region
                    continue
                home = name.removesuffix(f"-{aws.region}")
                if home != name and isinstance(_classify({**stack, "StackName": home}, settings, declared),
                                               rules.PreviewStack):  # fmt: skip
                    found.replicas.setdefault(home, []).append(aws.region)
                elif rules.TAG_PREVIEW_OF in tags or rules.TAG_EXPIRES_AT in tags or f"-{prefix}" in name:
                    found.skipped.append({"stack": name, "code": verdict.code, "why": str(verdict)})
    if found is None:  # pragma: no cover - a paginator yields at least one page
        raise UserError("CloudFormation gave no answer to DescribeStacks")
    return found


def survey_regions(aws: Aws, settings: SettingsFile, regions: list[str]) -> Survey:
    """:func:`survey` of each of ``regions`` (the first is ``aws``'s clock), merged; each replica stack whose
    preview was found in none of them is listed as ``preview.replica_orphaned``."""
    merged: Survey | None = None
    for region in regions:
        found = survey(aws.in_region(region), settings)
        if merged is None:
            merged = found
            continue
        merged.previews += found.previews
        merged.skipped += found.skipped
        merged.prod_stacks += found.prod_stacks
        merged.regions.update(found.regions)
        merged.read += found.read
        for home, where in found.replicas.items():
            merged.replicas.setdefault(home, []).extend(where)
    assert merged is not None  # regions is never empty
    homes = {p.stack for p in merged.previews}
    for home, where in sorted(merged.replicas.items()):
        if home in homes:
            continue
        merged.skipped += [
            {"stack": f"{home}-{region}", "code": REPLICA_ORPHANED,
             "why": f"the replica stack in {region} of preview stack {home}, which is in no region read "
                    f"({', '.join(merged.read)}): delete it there (aws cloudformation delete-stack --region {region} "
                    f"--stack-name {home}-{region})"}
            for region in where
        ]  # fmt: skip
    return merged


def preview_regions(target: Target, settings: SettingsFile, aws: Aws) -> list[str]:
    """The regions previews of this settings file live in, the session's first: ``--region`` (else [previews]
    region, else each declared environment's region as a template, else the session's), then each replica region
    of a global template."""
    homes = [target.region or settings.previews.region or aws.region]
    replicas: list[str] = []
    for template in settings.declared():
        try:
            preview = rules.Preview(template, rules.format_time(dt.datetime.now(dt.UTC)))
            knob, value = override_pair(preview.context_pair())
            env = rules.preview_env(settings.preview_prefix, "0")
            resolved = resolve_run(
                dataclasses.replace(target, env=env, overrides={**target.overrides, knob: value}, quiet=True)
            )
        except (UserError, ConfigError, rules.PreviewError):
            continue  # an environment no preview can be made from holds no preview
        if not target.region and resolved.region:
            homes.append(resolved.region)
        replicas += resolved.config.replicas
    return list(dict.fromkeys([*homes, *replicas]))


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
