"""What every operations command starts from: the knobs (resolved as the CDK app does) and the deployed stack."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from contract import names
from contract.knobs import (
    ENV_VALUES,
    KNOB_DEFAULTS,
    MANAGED_BY,
    ConfigError,
    DocTableConfig,
    knobs_from_record,
    load_cdk_json_defaults,
    resolve_config,
)
from doctable.aws import Aws, arn_account, arn_region, error_code, user_errors
from doctable.errors import UserError

STABLE_STACK_STATES = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE"})
STATE_DIR_ENV = "DOCTABLE_STATE_DIR"
# The knobs that name the stack: they choose WHICH stack a command reads, so giving them is never a change.
IDENTITY_KNOBS = ("env", "table_base")
# Knobs that say where the stack goes, not what it is: `doctable local env` exports DEPLOY_TARGET for every
# command, so giving them (with the identity knobs) still counts as "no knobs given" for what a deploy changes.
PLACE_KNOBS = (*IDENTITY_KNOBS, "deploy_target")


def add_knob_arguments(parser: argparse.ArgumentParser) -> None:
    """``--env`` and ``-c knob=value``: the knobs as ``cdk deploy`` takes them (plus the environment)."""
    group = parser.add_argument_group("knobs (resolved exactly as the CDK app resolves them)")
    group.add_argument("--env", dest="env_name", metavar="ENV", help=f"environment: {'|'.join(ENV_VALUES)}")
    group.add_argument(
        "-c",
        "--context",
        dest="context",
        action="append",
        default=[],
        metavar="KNOB=VALUE",
        help=f"a knob as `cdk deploy -c` takes it (repeatable); then env vars (GSI={names.GSI_NAME} ...), "
        "then cdk.json",
    )
    parser.add_argument("--region", help="AWS region (default: the SDK's, i.e. AWS_REGION / the profile)")


def parse_context(pairs: Sequence[str], env_name: str | None) -> dict[str, str]:
    context: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"-c {pair!r}: expected KNOB=VALUE, e.g. -c gsi={names.GSI_NAME}")
        context[key.strip()] = value.strip()
    if env_name is not None:
        if "env" in context and context["env"] != env_name:
            raise UserError(f"--env {env_name} contradicts -c env={context['env']}: give one")
        context["env"] = env_name
    return context


def given_knobs(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> set[str]:
    """The knobs the user gave: ``-c``/``--env``, or a non-empty upper-cased environment variable. cdk.json's
    defaults are not given: they are what a deploy without knobs would use, not what the stack runs with."""
    environ = os.environ if environ is None else environ
    context = parse_context(args.context or [], args.env_name)
    return {name for name in KNOB_DEFAULTS if name in context or environ.get(name.upper())}


def resolve_knobs(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> DocTableConfig:
    context = parse_context(args.context or [], args.env_name)
    try:
        return resolve_config(
            context=context,
            environ=os.environ if environ is None else environ,
            defaults=load_cdk_json_defaults(),
        )
    except ConfigError as exc:
        raise UserError("invalid knobs: " + "; ".join(exc.problems)) from exc


def state_dir(explicit: str | None = None) -> Path:
    """Where verify keeps its last rows for the ledger: ``--state-dir``, ``$DOCTABLE_STATE_DIR``, ``./.doctable``."""
    return Path(explicit or os.environ.get(STATE_DIR_ENV) or ".doctable")


@dataclass(frozen=True)
class PendingKnob:
    """A knob given that differs from the deployed one: it takes effect with the next deploy, not before."""

    name: str
    deployed: str
    given: str

    def text(self) -> str:
        return f"{self.name}: deployed {self.deployed or '(empty)'}, given {self.given or '(empty)'}"

    def as_dict(self) -> dict[str, str]:
        return {"knob": self.name, "deployed": self.deployed, "given": self.given}


@dataclass
class Deployment:
    """The stack of one environment as CloudFormation reports it (None fields: not deployed / no output)."""

    config: DocTableConfig
    region: str
    account: str
    stack_id: str | None = None
    stack_status: str | None = None
    status_reason: str | None = None
    outputs: dict[str, str] = field(default_factory=dict)
    last_updated: str | None = None
    # What the knobs given (plus cdk.json's defaults) resolve to: what a deploy with them would build. ``config``
    # is the truth the commands check: the knobs the stack recorded when there is a record, else these.
    intended: DocTableConfig | None = None
    knobs_source: str = "given"  # "deployed" | "given"
    pending: list[PendingKnob] = field(default_factory=list)
    knob_note: str | None = None  # why the deployed knobs could not be used, or what a knob-less deploy does
    given: set[str] = field(default_factory=set)

    @property
    def target(self) -> DocTableConfig:
        """What a deploy is compared with: the knobs given, or the deployed ones when none are given."""
        if self.intended is not None and self.given - set(PLACE_KNOBS):
            return self.intended
        return self.config

    @property
    def exists(self) -> bool:
        return self.stack_status is not None and self.stack_status != "DELETE_COMPLETE"

    @property
    def stable(self) -> bool:
        return self.stack_status in STABLE_STACK_STATES

    def out(self, key: str) -> str | None:
        return self.outputs.get(key) or None

    @property
    def table_name(self) -> str:
        return self.out(names.OUT_TABLE_NAME) or self.config.table_name

    def realized(self) -> dict[str, Any]:
        """The identifiers a deployment realized (the Live State's ``realized`` block)."""
        return {
            "region": self.region,
            "account": self.account,
            "stack_name": self.config.stack_name,
            "stack_id": self.stack_id,
            "stack_status": self.stack_status,
            "table": self.out(names.OUT_TABLE_NAME),
            "table_arn": self.out(names.OUT_TABLE_ARN),
            "stream_arn": self.out(names.OUT_STREAM_ARN),
            "kinesis_stream_arn": self.out(names.OUT_KINESIS_STREAM_ARN) or self.config.borrowed_kinesis_arn,
            "mapping_uuid": self.out(names.OUT_MAPPING_UUID),
            "consumer_function": self.out(names.OUT_CONSUMER_FUNCTION_NAME)
            or self.config.borrowed_consumer_arn,
            "consumer_function_arn": self.out(names.OUT_CONSUMER_FUNCTION_ARN)
            or self.config.borrowed_consumer_arn,
            "consumer_log_group": self.out(names.OUT_CONSUMER_LOG_GROUP),
            "blob_bucket": self.out(names.OUT_BLOB_BUCKET),
            "failure_bucket": self.out(names.OUT_FAILURE_BUCKET),
            "runtime_policy_arn": self.out(names.OUT_RUNTIME_POLICY_ARN),
        }


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


def deployed_config(deployment: Deployment) -> DocTableConfig | None:
    """The knobs the stack recorded (its ``Knobs`` output) resolved back to a config; None without a record.

    Raises UserError when a record exists but does not resolve (a hand-edited or foreign output)."""
    record = deployment.out(names.OUT_KNOBS)
    if not record:
        return None
    try:
        return resolve_config(context={}, environ={}, defaults=knobs_from_record(record))
    except (ValueError, ConfigError) as exc:
        problems = "; ".join(exc.problems) if isinstance(exc, ConfigError) else str(exc)
        raise UserError(
            f"stack {deployment.config.stack_name}'s {names.OUT_KNOBS} output does not resolve ({problems}): "
            "redeploy it with the knobs you mean"
        ) from exc


def pending_knobs(given: set[str], intended: DocTableConfig, deployed: DocTableConfig) -> list[PendingKnob]:
    """Each knob given whose value differs from the deployed one (identity knobs name the stack: never)."""
    want, have = intended.knob_values(), deployed.knob_values()
    return [
        PendingKnob(name, have[name], want[name])
        for name in KNOB_DEFAULTS
        if name in given and name not in IDENTITY_KNOBS and want[name] != have[name]
    ]


def use_deployed_knobs(deployment: Deployment, given: set[str]) -> Deployment:
    """Make the knobs the stack was deployed with the truth (``deployment.config``); knobs given that differ
    become ``pending`` (a change the next deploy makes), never the truth. Without a record: the knobs given."""
    intended = deployment.config
    deployment.intended = intended
    deployment.given = set(given)
    deployed = deployed_config(deployment) if deployment.exists else None
    if deployed is None:
        if deployment.exists:
            deployment.knob_note = (
                f"stack {intended.stack_name} ({deployment.stack_status}) records no {names.OUT_KNOBS} output: "
                "using the knobs given (and cdk.json's defaults for the rest)"
            )
        return deployment
    deployment.config = deployed
    deployment.knobs_source = "deployed"
    deployment.pending = pending_knobs(given, intended, deployed)
    if not given - set(PLACE_KNOBS):
        differ = [
            name for name, value in intended.knob_values().items() if deployed.knob_values()[name] != value
        ]
        if differ:
            deployment.knob_note = (
                "no knobs given: using the deployed ones; a deploy without knobs would deploy cdk.json's "
                f"defaults, which differ in {', '.join(differ)}"
            )
    return deployment


def check_region(deployment: Deployment) -> None:
    """Every ARN the stack (or a knob) names must be in the client's region and account: else one clear error."""
    arns = {key: value for key, value in deployment.outputs.items() if value.startswith("arn:")}
    borrowed = deployment.config.borrowed_consumer_arn
    if borrowed:
        arns["consumer knob"] = borrowed
    for key, arn in arns.items():
        region = arn_region(arn)
        if region and region != deployment.region:
            raise UserError(
                f"region mismatch: {key} {arn} is in {region} but the client is in {deployment.region}; "
                f"set AWS_REGION={region} (or --region {region})"
            )
        account = arn_account(arn)
        if account and account not in (deployment.account, "aws"):
            raise UserError(
                f"account mismatch: {key} {arn} is in account {account} but the credentials are for "
                f"{deployment.account}; switch profile/credentials"
            )


def require_deployed(deployment: Deployment, *, hint_region: str | None = None) -> None:
    """Raise the "stack not deployed" error (with a region hint when the ledger knows better)."""
    if deployment.exists:
        return
    config = deployment.config
    where = f"region {deployment.region}, account {deployment.account}"
    hint = ""
    if hint_region and hint_region != deployment.region:
        hint = f"; the ledger records it in {hint_region}: region mismatch? set AWS_REGION={hint_region}"
    knobs = f"-c env={config.env}" + (
        f" -c table_base={config.table_base}" if config.table_base != KNOB_DEFAULTS["table_base"] else ""
    )
    raise UserError(
        f"stack {config.stack_name} is not deployed ({where}){hint}; deploy it first: npx cdk deploy {knobs}"
    )


def table_tags(aws: Aws, table_arn: str) -> dict[str, str]:
    """Every tag of a table (ListTagsOfResource pages through them)."""
    ddb = aws.client("dynamodb")
    tags: dict[str, str] = {}
    kwargs: dict[str, Any] = {"ResourceArn": table_arn}
    while True:
        reply = ddb.list_tags_of_resource(**kwargs)
        tags.update({t["Key"]: t["Value"] for t in reply.get("Tags", [])})
        if not reply.get("NextToken"):
            return tags
        kwargs["NextToken"] = reply["NextToken"]


def is_ours(tags: dict[str, str]) -> bool:
    """Made by a doctable stack: the provenance tag says so."""
    return tags.get("ManagedBy") == MANAGED_BY
