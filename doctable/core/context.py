"""What every operations command starts from: the knobs (resolved as the CDK app does) and the deployed stack."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from contract import names
from contract.knobs import (
    ENV_VALUES,
    ConfigError,
    DocTableConfig,
)
from contract.settings.resolve import CONFIG_VARIABLE, FILE_NAME, Resolved, resolve_settings
from doctable.core.answers import error_code
from doctable.core.aws import Aws, user_errors
from doctable.core.deployment import Deployment
from doctable.core.errors import UserError
from doctable.core.target import Target, as_target

STATE_DIR_ENV = "DOCTABLE_STATE_DIR"


def add_knob_arguments(parser: argparse.ArgumentParser) -> None:
    """The environment, its settings file and this run's overrides; the credentials' profile and region."""
    group = parser.add_argument_group(
        "settings (doctable.toml, resolved exactly as the CDK app resolves them)"
    )
    group.add_argument(
        "--env",
        dest="env_name",
        metavar="ENV",
        help=f"the environment: {'|'.join(ENV_VALUES)} (or DOCTABLE_ENV)",
    )
    group.add_argument(
        "--config",
        metavar="FILE",
        help=f"the settings file (default: ${CONFIG_VARIABLE}, else {FILE_NAME} here or in the project)",
    )
    group.add_argument(
        "-c",
        "--context",
        dest="context",
        action="append",
        default=[],
        metavar="KNOB=VALUE",
        help=f"override a knob for this run, as `cdk deploy -c` takes it (repeatable; or DOCTABLE_<KNOB>, "
        f"e.g. DOCTABLE_GSI={names.GSI_NAME})",
    )
    creds = parser.add_argument_group("credentials")
    creds.add_argument(
        "--profile", help="the AWS profile (default: AWS_PROFILE, else the SDK's default chain)"
    )
    creds.add_argument(
        "--region", help="the AWS region (default: the environment's in the settings file, else AWS_REGION)"
    )


def parse_context(overrides: Mapping[str, str], env_name: str | None) -> dict[str, str]:
    """This run's CDK context: the overrides, and ``env`` when the target names one (never two different)."""
    context = dict(overrides)
    if env_name is not None:
        if "env" in context and context["env"] != env_name:
            raise UserError(f"--env {env_name} contradicts -c env={context['env']}: give one")
        context["env"] = env_name
    return context


def resolve_run(target: Target | Any, environ: Mapping[str, str] | None = None) -> Resolved:
    """The settings ``target`` uses: the file's environment, then its overrides and DOCTABLE_ overrides."""
    target = as_target(target)
    context = parse_context(target.overrides, target.env)
    try:
        return resolve_settings(
            context=context,
            environ=os.environ if environ is None else environ,
            config_path=target.config,
        )
    except ConfigError as exc:
        raise UserError("invalid settings: " + "; ".join(exc.problems)) from exc


def resolve_knobs(target: Target | Any, environ: Mapping[str, str] | None = None) -> DocTableConfig:
    return resolve_run(target, environ).config


def state_dir(explicit: str | None = None) -> Path:
    """Where verify keeps its last rows for the ledger: ``--state-dir``, ``$DOCTABLE_STATE_DIR``, ``./.doctable``."""
    return Path(explicit or os.environ.get(STATE_DIR_ENV) or ".doctable")


def describe_stack(aws: Aws, config: DocTableConfig) -> Deployment:
    """Read the stack's status and outputs; a missing stack gives a Deployment with ``exists`` False."""
    deployment = Deployment(config=config, region=aws.region, account=aws.account)
    cfn = aws.client("cloudformation")
    with user_errors(f"describing stack {config.stack_name}"):
        try:
            stacks = cfn.describe_stacks(StackName=config.stack_name)["Stacks"]
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
        raise UserError(
            f"region mismatch: environment {env} is bound to region {resolved.region} in {where}, but the client "
            f"is in {aws.region}; drop --region/AWS_REGION or set it to {resolved.region}"
        )
