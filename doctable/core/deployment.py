"""One environment's deployed stack as the commands read it: its status, outputs and the knobs it recorded (the
truth a command checks), the settings that would change it, and its ownership tags. No AWS client is built here:
``doctable.core.context`` describes the stack and resolves the run."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from contract import names
from contract.indexes import indexes_record
from contract.knobs import (
    INDEXES,
    KNOB_DEFAULTS,
    MANAGED_BY,
    ConfigError,
    DocTableConfig,
    indexes_of_record,
    knobs_from_record,
    resolve_config,
    subscribers_of_record,
)
from contract.settings.resolve import Override
from doctable.core.answers import arn_account, arn_region
from doctable.core.errors import RefusedError, UserError

if TYPE_CHECKING:
    from doctable.core.aws import Aws

DEPLOYED, GIVEN = "deployed", "given"  # where a Deployment's ``config`` came from
STABLE_STACK_STATES = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE"})
# The knobs that name the stack: they choose WHICH stack a command reads, so they never differ from it.
IDENTITY_KNOBS = ("env", "table_base")
IDENTITY_MISMATCH = "stack.identity_mismatch"  # the stable code of a record that names another stack
NOT_IN_REGION = (
    "subscriber.not_in_region"  # --region REPLICA --subscriber NAME of a subscriber not running there
)


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
    # What the settings (file and overrides) resolve to: what a deploy would build. ``config`` is the truth the
    # commands check: the knobs the stack recorded when there is a record, else these.
    intended: DocTableConfig | None = None
    knobs_source: str = GIVEN  # DEPLOYED | GIVEN
    pending: list[PendingKnob] = field(default_factory=list)
    knob_note: str | None = None  # why the deployed knobs could not be used
    overrides: list[Override] = field(default_factory=list)  # this run's -c / DOCTABLE_ knobs unlike the file
    bound_account: str | None = None  # the settings file's account binding of the environment, if any
    qualifier: str | None = (
        None  # the CDK bootstrap qualifier the settings bind it to (None: the CDK's default)
    )
    declared_stacks: dict[str, str] = field(default_factory=dict)  # every declared environment's stack name
    preview_prefix: str = ""  # a preview environment's name begins so (never declared, never orphaned)
    # Set when this is a global table's replica region's stack (``--region`` naming a replica region): the home
    # region, whose stack recorded the knobs (``config``); ``region`` and ``outputs`` are then the replica stack's.
    home_region: str | None = None

    @property
    def stack_name(self) -> str:
        """The stack read: the environment's, or its replica stack in ``region``."""
        return self.config.replica_stack_name(self.region) if self.home_region else self.config.stack_name

    @property
    def target(self) -> DocTableConfig:
        """What a deploy is compared with: what the settings resolve to."""
        return self.intended if self.intended is not None else self.config

    @property
    def recorded(self) -> bool:
        """``config`` is what the stack recorded at its last deploy (its ``Knobs`` output)."""
        return self.knobs_source == DEPLOYED

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
            # a global table's other regions, comma-separated, as the stack recorded them
            "replica_regions": self.out(names.OUT_REPLICA_REGIONS),
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


def deployed_config(deployment: Deployment) -> DocTableConfig | None:
    """The knobs the stack recorded (its ``Knobs`` output) resolved back to a config; None without a record.

    Raises UserError when a record exists but does not resolve (a hand-edited or foreign output)."""
    record = deployment.out(names.OUT_KNOBS)
    if not record:
        return None
    try:
        return resolve_config(
            context={},
            environ={},
            defaults=knobs_from_record(record),
            indexes=indexes_of_record(record),
            subscribers=subscribers_of_record(record),
        )
    except (ValueError, ConfigError) as exc:
        problems = "; ".join(exc.problems) if isinstance(exc, ConfigError) else str(exc)
        raise UserError(
            f"stack {deployment.config.stack_name}'s {names.OUT_KNOBS} output does not resolve ({problems}): "
            "redeploy it with the knobs you mean"
        ) from exc


def pending_knobs(intended: DocTableConfig, deployed: DocTableConfig) -> list[PendingKnob]:
    """Each knob whose setting differs from the deployed one (identity knobs name the stack: never)."""
    want, have = intended.knob_values(), deployed.knob_values()
    pending = [
        PendingKnob(name, have[name], want[name])
        for name in KNOB_DEFAULTS
        if name not in IDENTITY_KNOBS and want[name] != have[name]
    ]
    if intended.indexes != deployed.indexes:
        # The declared indexes, as the record writes them (compact JSON of name -> declaration).
        pending.append(
            PendingKnob(INDEXES, indexes_record(deployed.indexes), indexes_record(intended.indexes))
        )
    return pending


def use_deployed_knobs(deployment: Deployment) -> Deployment:
    """Make the knobs the stack was deployed with the truth (``deployment.config``); settings that differ
    become ``pending`` (a change the next deploy makes), never the truth. Without a record: the settings."""
    intended = deployment.config
    deployment.intended = intended
    deployed = deployed_config(deployment) if deployment.exists else None
    if deployed is None:
        if deployment.exists:
            deployment.knob_note = (
                f"stack {intended.stack_name} ({deployment.stack_status}) records no {names.OUT_KNOBS} output: "
                "using the settings"
            )
        return deployment
    check_identity(deployment, deployed)
    deployment.config = deployed
    deployment.knobs_source = DEPLOYED
    deployment.pending = pending_knobs(intended, deployed)
    return deployment


def check_identity(deployment: Deployment, deployed: DocTableConfig) -> None:
    """The identity knobs a stack recorded must name that very stack. A stack writes its own ``Knobs`` output, so
    a record claiming ``env=stg`` on another stack (a pull request's preview, a hand edit) must never lead a
    command to read or tear down stg: refused (exit 3), naming both, before anything is read by the record."""
    described = deployment.config
    if deployed.stack_name == described.stack_name:
        return
    claimed = ", ".join(f"{k}={getattr(deployed, k)}" for k in IDENTITY_KNOBS)
    raise RefusedError(
        f"stack {described.stack_name}'s {names.OUT_KNOBS} output records {claimed}, which names stack "
        f"{deployed.stack_name}: refusing to act on a stack whose record claims another identity; allowed: a record "
        f"whose env and table_base name the stack itself (env={described.env}, table_base={described.table_base})",
        {"code": IDENTITY_MISMATCH},
    )


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
    raise UserError(
        f"stack {deployment.stack_name} is not deployed ({where}){hint}; deploy it first: doctable deploy --env "
        f"{config.env}"
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


def subscriber_output(deployment: Deployment, name: str, what: str) -> str:
    """One of subscriber ``name``'s names from the stack's outputs (``names.OUT_SUBSCRIBER_*``); UserError naming
    the declared subscribers when the deployed knobs declare no such subscriber, or the stack has not made it."""
    config = deployment.config
    declared = [s.name for s in config.subscribers]
    if name not in declared:
        close = difflib.get_close_matches(name, declared, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UserError(
            f"stack {deployment.stack_name} has no subscriber {name!r}{hint}; declared: "
            f"{', '.join(declared) or 'none'} (subscribers are declared in the settings file and deployed)"
        )
    spec = next(s for s in config.subscribers if s.name == name)
    if deployment.home_region and deployment.region not in spec.replica_regions(config.replicas):
        ran = [deployment.home_region] if spec.runs_in(config.replicas, None) else []
        ran += spec.replica_regions(config.replicas)
        raise UserError(
            f"subscriber {name!r} does not run in {deployment.region}: its regions are {', '.join(ran) or 'none'} "
            f"(regions in its declaration; the home region {deployment.home_region} without --region)",
            {"code": NOT_IN_REGION},
        )
    value = deployment.out(names.subscriber_output(name, what))
    if not value:
        raise UserError(
            f"stack {deployment.stack_name} has no {names.subscriber_output(name, what)} output: deploy the "
            f"subscriber {name!r} first (doctable deploy --env {config.env})"
        )
    return value
