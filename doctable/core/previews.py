"""A preview as an environment every command reaches: ``--env pr-12`` (the settings file's [previews] prefix, an
environment the file does not declare) names the preview deployed under that name, found by its tags alone
(contract.settings.preview.classify: this project's Project tag, ManagedBy, Source, PreviewOf, ExpiresAt, the
stack name the settings give it), and resolves as ``doctable preview deploy`` resolved it: its template's settings,
then [previews]', with its expiry. Nothing here is asked of AWS for a declared environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contract.knobs import PREVIEW_CONTEXT, ConfigError
from contract.settings import preview as rules
from contract.settings.resolve import FILE_NAME, SettingsFile, load_settings, settings_path
from doctable.core.aws import Aws, user_errors
from doctable.core.errors import UserError
from doctable.core.target import Target

NOT_DEPLOYED = "preview.not_deployed"  # --env names a preview no stack of this project is


def preview_settings(target: Target, environ: Mapping[str, str] | None = None) -> SettingsFile:
    """The settings file ``target`` reads, with its project resolved (the Project tag previews carry)."""
    path = settings_path(target.config, os.environ if environ is None else environ)
    try:
        settings = load_settings(path) if path is not None else SettingsFile(path=Path(FILE_NAME))
        settings.project_name = settings.project
        return settings
    except ConfigError as exc:
        raise UserError("invalid settings: " + "; ".join(exc.problems)) from exc


def names_preview(settings: SettingsFile, env: str | None) -> bool:
    """``env`` is a preview's name by the file: it carries the prefix and no [environments.<env>] declares it."""
    prefix = settings.preview_prefix
    return (
        env is not None
        and env.startswith(prefix)
        and len(env) > len(prefix)
        and env not in settings.environments
    )


def _tags(stack: Mapping[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in stack.get("Tags") or []}


def find_preview(aws: Aws, settings: SettingsFile, env: str) -> rules.PreviewStack | None:
    """The live preview ``env`` of this project in ``aws``'s region, by its tags; None when there is none."""
    declared = settings.stack_names()
    with user_errors(f"looking for preview {env} in {aws.region}"):
        for page in aws.client("cloudformation").get_paginator("describe_stacks").paginate():
            for stack in page.get("Stacks", []):
                tags = _tags(stack)
                if stack.get("StackStatus") == "DELETE_COMPLETE" or tags.get("Environment") != env:
                    continue
                verdict = rules.classify(
                    stack["StackName"],
                    tags,
                    prefix=settings.preview_prefix,
                    project=settings.project,
                    declared=declared,
                    stack_of=settings.preview_stack_name,
                    status=stack.get("StackStatus", ""),
                )
                if isinstance(verdict, rules.PreviewStack):
                    return verdict
    return None


def preview_target(target: Target, settings: SettingsFile) -> Target:
    """``target`` as the deployed preview it names resolves: with the preview context (its template and expiry,
    read from its tags); one line naming the way out when no preview of that name is deployed."""
    env = str(target.env)
    aws = Aws.connect(target.region or settings.previews.region, profile=target.profile)
    found = find_preview(aws, settings, env)
    if found is None:
        raise UserError(
            f"environment {env} is not declared in {settings.path.name} and no preview {env} of project "
            f"{settings.project} is deployed in {aws.region}; allowed: a declared environment, or a deployed "
            f"preview (`doctable preview list`; `doctable preview deploy {env.removeprefix(settings.preview_prefix)} "
            "--from TEMPLATE` makes one)",
            {"code": NOT_DEPLOYED, "env": env, "region": aws.region},
        )
    preview = rules.Preview(found.template, rules.format_time(found.expires_at))
    return target.with_overrides({PREVIEW_CONTEXT: preview.context_value()})


def reach(target: Target) -> Target:
    """``target`` as commands resolve it: unchanged for a declared environment (no AWS call), else, when it names
    a preview, with the deployed preview's context (:func:`preview_target`)."""
    if not target.env or PREVIEW_CONTEXT in target.overrides:
        return target
    settings = preview_settings(target)
    return preview_target(target, settings) if names_preview(settings, target.env) else target
