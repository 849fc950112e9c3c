"""What a subscriber may name: the resources its grants, its environment values and its filters point at.

Every environment: a grant's ARN in the environment's account and the table's regions, never another declared
environment's table (:func:`foreign_grants`). A preview, besides: nothing outside the preview at all
(:func:`outside_preview`). A preview inherits its template's subscribers, so a stg subscriber granted
``table/search-stg`` or given ``SEARCH_TABLE=search-stg`` would make every pull request's preview write into stg.
Such a reference is refused, one line each, never rewritten: a name substituted for the preview
(``search-pr-12``) would name a resource that nothing creates and no teardown removes, and the preview's own
table and bucket are reached by the named grants and the variables the wrapper sets (``DOCTABLE_TABLE_NAME``).
The previews' own subscribers are declared in ``[previews.subscribers.<name>]``, which replace the template's.
Standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from contract.knobs import DocTableConfig
from contract.subscribers import GRANTS

# Codes of a preview subscriber's reference outside the preview (stable: tests and --json read them).
GRANT_OUTSIDE = "preview.grant_outside"
ENVIRONMENT_OUTSIDE = "preview.environment_outside"
FILTER_OUTSIDE = "preview.filter_outside"
# Services whose ARN's resource has no type before the name (arn:aws:s3:::bucket/key, arn:aws:sqs:r:a:queue).
UNTYPED_SERVICES = ("s3", "sqs", "sns")
WAY_OUT = (
    f"the named grants ({', '.join(GRANTS)}) and DOCTABLE_TABLE_NAME reach them; or the previews' own subscribers "
    "in [previews.subscribers.<name>] (they replace the template's)"
)


def foreign_grants(
    config: DocTableConfig, account: str | None, region: str | None, declared: tuple[str, ...]
) -> list[str]:
    """A subscriber's grant whose ARN names another account than the environment's binding, a region the table is
    not in, or another declared environment's table (``<table_base>-<env>``): each one line."""
    regions = {r for r in (region, *config.replicas) if r}
    others = {e: f"{config.table_base}-{e}" for e in declared if e != config.env}
    problems = []
    for spec in config.subscribers:
        for grant in spec.grants:
            parts = grant.resource.split(":", 5)
            if len(parts) < 6:
                continue  # "table", "blobs": the environment's own
            arn_region, arn_account, resource = parts[3], parts[4], parts[5]
            wrong = None
            if account and arn_account and arn_account != account:
                wrong = f"account {arn_account}, not the environment's {account}"
            elif regions and arn_region and arn_region not in regions:
                wrong = f"region {arn_region}, where the table is not ({', '.join(sorted(regions))})"
            else:
                for other, table in others.items():
                    if re.search(rf"(^|[/:]){re.escape(table)}($|[/:])", resource):
                        wrong = f"environment {other}'s table {table}"
            if wrong:
                problems.append(f"subscriber {spec.name!r}: grant resource {grant.resource!r} names {wrong}; "
                                "allowed: resources of this environment's account and regions, never another "
                                "declared environment's")  # fmt: skip
    return problems


@dataclass(frozen=True)
class Outside:
    """A preview subscriber's reference to a resource outside the preview: where it is and what it names."""

    code: str
    subscriber: str
    where: str  # "grant", "environment SEARCH_TABLE", "filter"
    value: str
    names: str  # what it names: "search-stg", "environment stg"

    def line(self, config: DocTableConfig, of: str) -> str:
        return (
            f"preview {config.env} from {of}: subscriber {self.subscriber!r}: {self.where} {self.value!r} names "
            f"{self.names}, outside the preview (refused, not rewritten); allowed: the preview's own names "
            f"({config.table_name}, {config.stack_name} and names beginning with either and -): {WAY_OUT}"
        )


def arn_name(arn: str) -> str | None:
    """The name of the resource an ARN names: what follows its type (``table/``, ``function:``, a log group's
    last path element), or the first element of a typeless one (an S3 bucket, a queue, a topic); None when
    ``arn`` is not an ARN."""
    parts = arn.split(":", 5)
    if len(parts) < 6 or parts[0] != "arn" or not parts[5]:
        return None
    service, resource = parts[2], parts[5]
    if service == "logs" and resource.startswith("log-group:"):
        return resource.split(":")[1].rstrip("/").rsplit("/", 1)[-1]
    segments = [s for s in re.split(r"[/:]", resource) if s]
    if not segments:
        return None
    return segments[0] if service in UNTYPED_SERVICES or len(segments) == 1 else segments[1]


def _own(name: str, config: DocTableConfig) -> bool:
    return any(name == own or name.startswith(own + "-") for own in (config.table_name, config.stack_name))


def _strings(value: Any) -> Iterator[str]:
    """Every string a filter pattern holds (its values, the operands of prefix, anything-but, ...)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _environment_token(value: str, environments: tuple[str, ...]) -> str | None:
    """A declared environment whose name stands whole in ``value`` (``search-stg``, ``https://api.stg.x``)."""
    return next(
        (
            e
            for e in environments
            if re.search(rf"(?<![A-Za-z0-9]){re.escape(e)}(?![A-Za-z0-9])", value, re.I)
        ),
        None,
    )


def outside_preview(config: DocTableConfig, declared_stacks: Mapping[str, str]) -> list[Outside]:
    """Each reference of a preview's subscribers to a resource that is not the preview's own: a grant's ARN, an
    environment value that is an ARN or names a declared environment (its template among them), an ARN in a
    filter pattern (``eventSourceARN``). ``declared_stacks``: each declared environment -> its stack."""
    declared = tuple(sorted(declared_stacks, key=len, reverse=True))
    found = []
    for spec in config.subscribers:
        for grant in spec.grants:
            name = arn_name(grant.resource)
            if name is not None and not _own(name, config):
                found.append(Outside(GRANT_OUTSIDE, spec.name, "grant resource", grant.resource, name))
        for variable, value in spec.environment:
            name = arn_name(value)
            env = None if name is not None else _environment_token(value, declared)
            if (name is not None and not _own(name, config)) or env is not None:
                names = name if name is not None else f"environment {env}"
                found.append(Outside(ENVIRONMENT_OUTSIDE, spec.name, f"environment {variable}", value, names))
        for pattern in spec.filters:
            for text in _strings(json.loads(pattern)):
                name = arn_name(text)
                if name is not None and not _own(name, config):
                    found.append(Outside(FILTER_OUTSIDE, spec.name, "filter value", text, name))
    return found
