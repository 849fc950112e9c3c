"""What every operations command starts from: the knobs (resolved as the CDK app does) and the deployed stack."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from botocore.exceptions import ClientError

from contract.knobs import (
    ConfigError,
    DocTableConfig,
)
from contract.settings.resolve import Resolved, resolve_settings
from doctable.core.answers import error_code
from doctable.core.aws import Aws, user_errors
from doctable.core.deployment import Deployment
from doctable.core.errors import UserError
from doctable.core.target import Target

STATE_DIR_ENV = "DOCTABLE_STATE_DIR"
# The commands whose --region may name a replica region of a global table (doctable.core.command.connect's
# ``regional``): they act on that region's stack (its consumer and subscribers), or its rows (verify).
REGIONAL_COMMANDS = ("verify", "logs", "invoke", "watch", "replay")


def parse_context(overrides: Mapping[str, str], env_name: str | None) -> dict[str, str]:
    """This run's CDK context: the overrides, and ``env`` when the target names one (never two different)."""
    context = dict(overrides)
    if env_name is not None:
        if "env" in context and context["env"] != env_name:
            raise UserError(f"--env {env_name} contradicts -c env={context['env']}: give one")
        context["env"] = env_name
    return context


def resolve_run(target: Target, environ: Mapping[str, str] | None = None) -> Resolved:
    """The settings ``target`` uses: the file's environment, then its overrides and DOCTABLE_ overrides."""
    context = parse_context(target.overrides, target.env)
    try:
        return resolve_settings(
            context=context,
            environ=os.environ if environ is None else environ,
            config_path=target.config,
        )
    except ConfigError as exc:
        raise UserError("invalid settings: " + "; ".join(exc.problems)) from exc


def resolve_knobs(target: Target, environ: Mapping[str, str] | None = None) -> DocTableConfig:
    return resolve_run(target, environ).config


def state_dir(explicit: str | None = None) -> Path:
    """Where verify keeps its last rows for the ledger: ``--state-dir``, ``$DOCTABLE_STATE_DIR``, ``./.doctable``."""
    return Path(explicit or os.environ.get(STATE_DIR_ENV) or ".doctable")


def describe_stack(aws: Aws, config: DocTableConfig, *, home_region: str | None = None) -> Deployment:
    """Read the stack's status and outputs; a missing stack gives a Deployment with ``exists`` False. With
    ``home_region``: the replica stack of ``aws``'s region (a replica region of the global table homed there)."""
    deployment = Deployment(config=config, region=aws.region, account=aws.account, home_region=home_region)
    cfn = aws.client("cloudformation")
    with user_errors(f"describing stack {deployment.stack_name}"):
        try:
            stacks = cfn.describe_stacks(StackName=deployment.stack_name)["Stacks"]
        except ClientError as exc:
            if error_code(exc) == "ValidationError" and "does not exist" in str(exc):
                return deployment
            raise
    if not stacks:
        return deployment
    stack = stacks[0]
    deployment.stack_id = stack.get("StackId")
    deployment.stack_status = stack.get("StackStatus")
    deployment.status_reason = stack.get("StackStatusReason")
    last = stack.get("LastUpdatedTime") or stack.get("CreationTime")
    deployment.last_updated = (
        last.isoformat() if hasattr(last, "isoformat") else (str(last) if last else None)
    )
    deployment.outputs = {o["OutputKey"]: o.get("OutputValue", "") for o in stack.get("Outputs", []) or []}
    return deployment


def check_binding(resolved: Resolved, aws: Aws) -> None:
    """An environment bound to an account or region runs nowhere else: one line naming both, before any change."""
    env = resolved.config.env
    where = resolved.path.name if resolved.path else "the settings"
    if resolved.account and aws.account != resolved.account:
        raise UserError(
            f"account mismatch: environment {env} is bound to account {resolved.account} in {where}, but the "
            f"credentials are for account {aws.account}; switch credentials (--profile or AWS_PROFILE)"
        )
    if resolved.region and aws.region != resolved.region:
        replica = (
            f"; {aws.region} is a replica region of its global table: {', '.join(REGIONAL_COMMANDS)} take "
            f"--region {aws.region} (that region's consumer and subscribers), every other command acts on "
            f"{resolved.region}"
            if aws.region in resolved.config.replicas
            else ""
        )
        raise UserError(
            f"region mismatch: environment {env} is bound to region {resolved.region} in {where}, but the client "
            f"is in {aws.region}; drop --region/AWS_REGION or set it to {resolved.region}{replica}"
        )
