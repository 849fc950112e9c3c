"""Preview environments: short-lived environments that the settings file does not declare, each built from a
declared one (its template) and torn down when it expires. What they are, as pure functions: the preview context
the CLI hands the CDK app, the name and expiry rules, the borrowed resources a preview may not share, and which
live stacks are previews (by their tags alone). Standard library only.

A preview ``<prefix><NAME>`` (prefix ``pr-`` unless the file's ``[previews] prefix`` says otherwise) takes its
template's settings, then the ``[previews]`` table's knobs; its tier is always dev and its stacks carry the
``PreviewOf`` and ``ExpiresAt`` tags beside the provenance tags (the ``Project`` tag among them: a preview of
another project, or of none, is never this project's). Its subscribers name nothing outside it (contract/settings/reach.py).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from contract.knobs import (
    ENV_NAME_ALLOWED,
    ENV_NAME_RE,
    MANAGED_BY,
    PLAN_SOURCE,
    PREVIEW_CONTEXT,
    TIERS,
    ConfigError,
    DocTableConfig,
)
from contract.settings import reach
from contract.settings.project import TAG_PROJECT

PREFIX_DEFAULT = "pr-"
PREFIX_KEY = "prefix"
PREFIX_MAX = 12  # leaves the NAME room within the stack name's limit (contract.knobs.name_limits)
PREVIEW_TIER = TIERS[0]  # dev: no RETAIN, no deletion protection
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
NAME_ALLOWED = "lower-case letters, digits and -, starting with a letter or digit"
EXPIRES_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # ISO-8601, UTC, whole seconds: a tag value AWS takes as is
EXPIRES_SHAPE = "YYYY-MM-DDTHH:MM:SSZ"
DURATION_RE = re.compile(r"^(\d{1,5})([mhd])$")
DURATION_UNITS = {"m": 60, "h": 3600, "d": 86400}
DURATION_MAX = 90 * 86400
DURATION_ALLOWED = "a whole number of minutes, hours or days (30m, 72h, 7d), from 1m to 90d"
DEFAULT_EXPIRES = "72h"
# The tags that make a stack a preview, beside ManagedBy and Source.
TAG_PREVIEW_OF, TAG_EXPIRES_AT = "PreviewOf", "ExpiresAt"


class PreviewError(ValueError):
    """A preview input that is refused: one line naming what is wrong and what is allowed."""


@dataclass(frozen=True)
class Preview:
    """The preview context: the template environment and the expiry (ISO-8601 UTC)."""

    of: str
    expires_at: str

    def context_value(self) -> str:
        """The value of ``-c doctable:preview=...``: compact JSON."""
        return json.dumps({"from": self.of, "expires_at": self.expires_at}, separators=(",", ":"))

    def context_pair(self) -> str:
        return f"{PREVIEW_CONTEXT}={self.context_value()}"

    def as_dict(self) -> dict[str, str]:
        return {"from": self.of, "expires_at": self.expires_at}


def format_time(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime(EXPIRES_FORMAT)


def parse_time(text: str) -> dt.datetime | None:
    """An ExpiresAt value as a UTC datetime; None when it is not one."""
    try:
        return dt.datetime.strptime(text, EXPIRES_FORMAT).replace(tzinfo=dt.UTC)
    except (TypeError, ValueError):
        return None


def parse_duration(text: str) -> int:
    """``--expires``: seconds; PreviewError naming the allowed form."""
    match = DURATION_RE.match(text.strip())
    seconds = int(match.group(1)) * DURATION_UNITS[match.group(2)] if match else 0
    if not match or not 0 < seconds <= DURATION_MAX:
        raise PreviewError(f"--expires {text!r} is not a preview lifetime; allowed: {DURATION_ALLOWED}")
    return seconds


def parse_context(value: Any) -> Preview:
    """The preview context as the CLI passes it (JSON text, or the object the CDK parsed); PreviewError."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise PreviewError(f"{PREVIEW_CONTEXT}: not JSON ({exc})") from None
    if not isinstance(value, Mapping) or set(value) != {"from", "expires_at"}:
        raise PreviewError(f'{PREVIEW_CONTEXT}: expected {{"from": ENV, "expires_at": "{EXPIRES_SHAPE}"}}')
    of, expires = value["from"], value["expires_at"]
    if not isinstance(of, str) or not ENV_NAME_RE.match(of):
        raise PreviewError(
            f"{PREVIEW_CONTEXT}: from={of!r} is not an environment name; allowed: {ENV_NAME_ALLOWED}"
        )
    if not isinstance(expires, str) or parse_time(expires) is None:
        raise PreviewError(
            f"{PREVIEW_CONTEXT}: expires_at={expires!r} is not a time; allowed: ISO-8601 UTC ({EXPIRES_SHAPE})"
        )
    return Preview(of, expires)


def prefix_problem(prefix: Any, where: str) -> str | None:
    if isinstance(prefix, str) and ENV_NAME_RE.match(prefix) and len(prefix) <= PREFIX_MAX:
        return None
    return (
        f"{where}: prefix = {prefix!r} is not a preview prefix; allowed: a string of {ENV_NAME_ALLOWED}, at most "
        f"{PREFIX_MAX} characters (e.g. {PREFIX_DEFAULT!r})"
    )


def preview_env(prefix: str, name: str) -> str:
    """The environment of preview ``name``: ``<prefix><name>``, or ``name`` itself when it carries the prefix
    already (``preview deploy pr-7`` is preview pr-7, as ``--env pr-7`` names it); PreviewError when ``name`` is
    not one."""
    if name.startswith(prefix) and len(name) > len(prefix):
        name = name.removeprefix(prefix)
    if not NAME_RE.match(name):
        raise PreviewError(
            f"preview name {name!r} is not a name; allowed: {NAME_ALLOWED} (the preview is {prefix}<NAME>)"
        )
    env = prefix + name
    if not ENV_NAME_RE.match(env):
        raise PreviewError(f"preview {env!r} is not an environment name; allowed: {ENV_NAME_ALLOWED}")
    return env


def name_problems(
    env: str, of: str, prefix: str, declared: tuple[str, ...], where: str, undeclared: Callable[..., str]
) -> list[str]:
    """A preview's environment carries the prefix and is not one the settings file declares; its template is
    (``undeclared``: contract.settings.environments.undeclared_env, the problem of one that is not)."""
    problems = [] if of in declared else [f"preview {env} from {of}: " + undeclared(of, declared, where)]
    if not env.startswith(prefix) or env == prefix:
        problems.append(
            f"preview {env!r} does not begin with the preview prefix {prefix!r}; allowed: {prefix}<NAME> (the "
            "prefix is [previews] prefix in the settings file)"
        )
    if env in declared:
        problems.append(
            f"preview {env} is an environment {where} declares; allowed: a preview name no [environments.<env>] "
            "table holds"
        )
    return problems


def prefixed_environments(
    environments: Mapping[str, Any], prefix: str, label: Callable[[str], str]
) -> list[str]:
    """A declared environment whose name carries the preview prefix: it would be taken for a preview."""
    return [
        f"{label(env)}: its name begins with the preview prefix {prefix!r}, so it would be taken for a preview; "
        f"allowed: a name that does not begin with {prefix!r} (or another [previews] prefix)"
        for env in environments
        if env.startswith(prefix)
    ]


def preview_config(
    config: DocTableConfig, preview: Preview, declared_stacks: Mapping[str, str]
) -> DocTableConfig:
    """The preview's config, tagged with its template and expiry; ConfigError when it borrows a resource, its
    stack name meets a declared environment's or a subscriber names a resource outside it (contract/settings/reach.py)."""
    problems = borrowed_problems(config, preview.of) + stack_problems(config, declared_stacks)
    problems += [o.line(config, preview.of) for o in reach.outside_preview(config, declared_stacks)]
    if problems:
        raise ConfigError(problems)
    return replace(config, preview_of=preview.of, expires_at=preview.expires_at)


def pattern_config(config: DocTableConfig, prefix: str) -> DocTableConfig:
    """``config`` (a template's, resolved) as every preview of it: its environment ``<prefix>*``, so its stack,
    table, function, log group and bucket names are the patterns every preview's names match (an IAM policy's
    resources); tier dev, no deletion protection. Never deployed: a policy target only."""
    return replace(config, env=f"{prefix}*", tier=PREVIEW_TIER, deletion_protection=False)


# Each borrowed resource: the knob, whether the config borrows it, and the setting that lets the preview own it.
BORROWED: tuple[tuple[str, str, str], ...] = (
    ("blob_bucket", "blob_bucket", 'blob_bucket = ""'),
    ("kinesis", "borrowed_kinesis_arn", 'kinesis = "on" or "off"'),
    ("consumer", "borrowed_consumer_arn", 'consumer = "builtin" or "none"'),
    ("kms_key", "borrowed_kms_key_arn", 'kms_key = ""'),
    ("replicas", "replicas", "replicas = []"),
)


def borrowed_problems(config: DocTableConfig, of: str) -> list[str]:
    """One line per resource the preview would share with its template (or anyone): a preview owns all of its
    resources, so that tearing it down touches nothing else."""
    problems = []
    where = f"preview {config.env} from {of}"
    for knob, attribute, owned in BORROWED:
        value = getattr(config, attribute)
        if value:
            shown = ",".join(value) if isinstance(value, tuple) else value
            problems.append(
                f"{where}: {knob}={shown!r} is a borrowed resource; allowed: previews own every resource (set "
                f"{owned} in a [previews] table, or preview another environment)"
            )
    if config.deletion_protection:
        problems.append(
            f"{where}: deletion_protection='on' keeps the preview from being torn down; allowed: a preview's tier is "
            f"{PREVIEW_TIER} (deletion_protection auto or off)"
        )
    return problems


def stack_problems(config: DocTableConfig, declared: Mapping[str, str]) -> list[str]:
    """A preview whose stack name equals, extends or is extended by a declared environment's (``<stack>-``)."""
    stack = config.stack_name
    return [
        f"preview {config.env}: its stack {stack} "
        + ("is" if stack == taken else "begins with" if stack.startswith(taken + "-") else "is the start of")
        + f" environment {env}'s stack {taken}; allowed: a preview name whose stack neither equals nor extends a "
        "declared environment's"
        for env, taken in declared.items()
        if stack == taken or stack.startswith(taken + "-") or taken.startswith(stack + "-")
    ]


@dataclass(frozen=True)
class PreviewStack:
    """A live stack that is a preview, read from its name, its tags and its creation time."""

    stack: str
    env: str
    template: str
    expires_at: dt.datetime
    created: dt.datetime | None
    status: str

    def expired(self, now: dt.datetime) -> bool:
        return self.expires_at <= now

    def as_dict(self, now: dt.datetime) -> dict[str, Any]:
        return {
            "name": self.env,
            "stack": self.stack,
            "template": self.template,
            "status": self.status,
            "created": format_time(self.created) if self.created else None,
            "age_seconds": int((now - self.created).total_seconds()) if self.created else None,
            "expires_at": format_time(self.expires_at),
            "expired": self.expired(now),
        }


class NotPreview(str):
    """Why a stack is not a preview of this project: the reason as one line, and its stable ``code``."""

    code: str

    def __new__(cls, code: str, reason: str) -> NotPreview:
        made = super().__new__(cls, reason)
        made.code = code
        return made


# The way out for a preview deployed before stacks carried the Project tag: a deploy tags it (tags update in place).
UNTAGGED_WAY_OUT = (
    "deployed before stacks carried it, or by another project: `doctable preview deploy NAME --from TEMPLATE` "
    "tags it, then destroy or gc acts on it"
)


def classify(
    stack: str,
    tags: Mapping[str, str],
    *,
    prefix: str,
    project: str,
    declared: Mapping[str, str],
    stack_of: Callable[[str, str], str],
    created: dt.datetime | None = None,
    status: str = "",
) -> PreviewStack | NotPreview:
    """The preview ``stack`` is, or why it is not one (the first reason, with its code): ManagedBy, Source, this
    ``project``'s Project tag, PreviewOf and a readable ExpiresAt present, an Environment that carries the prefix
    and is not declared, the stack name the settings give that preview (``stack_of(template, env)``: this
    project's table_base), and neither a declared environment's stack nor one extending it. ``declared``:
    environment -> stack."""
    env = tags.get("Environment", "")
    template, expires = tags.get(TAG_PREVIEW_OF, ""), parse_time(tags.get(TAG_EXPIRES_AT, ""))
    taken = next(
        (
            s
            for s in declared.values()
            if stack == s or stack.startswith(s + "-") or s.startswith(stack + "-")
        ),
        None,
    )
    tagged = tags.get(TAG_PROJECT)
    checks = (
        (tags.get("ManagedBy") == MANAGED_BY, "preview.not_managed", f"no ManagedBy={MANAGED_BY} tag"),
        (tags.get("Source") == PLAN_SOURCE, "preview.other_source", f"no Source={PLAN_SOURCE} tag"),
        (
            tagged is not None,
            "preview.project_untagged",
            f"no {TAG_PROJECT} tag (this project is {project!r}): {UNTAGGED_WAY_OUT}",
        ),
        (
            tagged == project,
            "preview.other_project",
            f"tagged {TAG_PROJECT}={tagged}: another project's (this one is {project!r}, [project] name)",
        ),
        (bool(template), "preview.no_template", f"no {TAG_PREVIEW_OF} tag"),
        (expires is not None, "preview.no_expiry", f"no readable {TAG_EXPIRES_AT} tag"),
        (
            env.startswith(prefix) and len(env) > len(prefix),
            "preview.no_prefix",
            f"its Environment tag {env!r} lacks the preview prefix {prefix!r}",
        ),
        (env not in declared, "preview.declared", f"environment {env} is declared in the settings"),
        (taken is None, "preview.extends_declared", f"it equals or extends declared stack {taken}"),
        (
            bool(template) and stack == stack_of(template, env),
            "preview.other_stack",
            f"not this project's stack for preview {env!r} (expected {stack_of(template, env) if template else '?'})",
        ),
    )
    for passed, code, reason in checks:
        if not passed:
            return NotPreview(code, reason)
    assert expires is not None
    return PreviewStack(stack, env, template, expires, created, status)
