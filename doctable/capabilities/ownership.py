"""Whose table is it: the stack's resource list and the provenance tags, checked before a command writes to a
table or changes it (verify's test items, reconcile's repairs); what preflight says of a table that is not the
stack's, and of a bucket name the deploy would create that exists outside it; the provenance tags' drift with
the call that restores it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from contract import names
from contract.findings import Finding, Level
from contract.iam.bootstrap import BOOTSTRAP_QUALIFIER, toolkit_stack_name
from contract.knobs import MANAGED_BY, STACK_PREFIX, DocTableConfig, knobs_from_record
from contract.shape import GLOBAL_TABLE_TYPE
from doctable.capabilities.protocol import Drift, Observed, stack_physical_ids, stack_table_ids
from doctable.core.answers import call_or_none, is_not_found
from doctable.core.deployment import STABLE_STACK_STATES, Deployment, is_ours, require_deployed, table_tags
from doctable.core.errors import RefusedError

if TYPE_CHECKING:
    from doctable.core.aws import Aws

TABLE_TAGS = "TagResource (table)"  # the repair of the provenance tags
# A stack whose create failed holds nothing usable: a same-named table beside it is retained or foreign.
NEVER_CREATED_STATES = frozenset(
    {"CREATE_IN_PROGRESS", "CREATE_FAILED", "ROLLBACK_IN_PROGRESS", "ROLLBACK_COMPLETE", "ROLLBACK_FAILED"}
)
# A failed update that rolled back is settled and updatable: the stack holds the previous template's resources
# and outputs (its Knobs output included), so it is checked against those.
ROLLED_BACK = "UPDATE_ROLLBACK_COMPLETE"
SETTLED_STATES = STABLE_STACK_STATES | {ROLLED_BACK}
ROLLED_BACK_ROW = "the last update rolled back; checked against the knobs the stack holds"


def foreign_owner(tags: dict[str, str]) -> str | None:
    """The ManagedBy tag when it names someone else (absent: not foreign by tags, just untagged)."""
    owner = tags.get("ManagedBy")
    return owner if owner is not None and owner != MANAGED_BY else None


def require_settled_stack(deployment: Deployment, *, doing: str) -> None:
    """Nothing when the stack is settled (created, updated, or an update rolled back); else one RefusedError (exit 3):
    a failed create, a stack that is busy, or one whose update or rollback failed."""
    config = deployment.config
    status = deployment.stack_status or ""
    if status in SETTLED_STATES:
        return
    reason = f" ({deployment.status_reason})" if deployment.status_reason else ""
    if status in NEVER_CREATED_STATES or status.startswith("DELETE_"):
        raise RefusedError(
            f"stack {config.stack_name} is {status}{reason}: it owns no table, so refusing to {doing}; "
            "delete the stack (`doctable teardown`) and deploy again"
        )
    if status.endswith("_IN_PROGRESS"):
        raise RefusedError(
            f"stack {config.stack_name} is {status}: busy, so refusing to {doing}; wait until it settles "
            f"({' | '.join(sorted(SETTLED_STATES))}) and run it again"
        )
    if status == "UPDATE_ROLLBACK_FAILED":
        raise RefusedError(
            f"stack {config.stack_name} is {status}{reason}: its resources are neither the old nor the new "
            f"template's, so refusing to {doing}; continue the rollback "
            "(`aws cloudformation continue-update-rollback`) first"
        )
    raise RefusedError(
        f"stack {config.stack_name} is {status}{reason}: not settled, so refusing to {doing}; "
        f"allowed: {' | '.join(sorted(SETTLED_STATES))}"
    )


def rolled_back_note(deployment: Deployment) -> str | None:
    """The note a command prints when the stack's last update rolled back (None otherwise)."""
    if deployment.stack_status != ROLLED_BACK:
        return None
    reason = f" ({deployment.status_reason})" if deployment.status_reason else ""
    knobs = (
        "the knobs the stack holds (its Knobs output), not the ones that failed to deploy"
        if deployment.recorded
        else "the knobs given (the stack records none)"
    )
    return f"the last update of stack {deployment.config.stack_name} rolled back{reason}: checking {knobs}"


def require_owned_table(aws: Aws, deployment: Deployment, *, doing: str) -> dict[str, Any]:
    """The table's description, once the stack is created and owns it; else one RefusedError (exit 3) naming why.

    ``doing`` completes "refusing to ...": what would otherwise have touched the table.
    """
    require_deployed(deployment)
    config = deployment.config
    require_settled_stack(deployment, doing=doing)
    name = deployment.table_name
    table = (call_or_none(aws.client("dynamodb").describe_table, TableName=name) or {}).get("Table")
    if table is None:
        raise RefusedError(
            f"table {name} not found (deleted behind stack {config.stack_name}?): refusing to {doing}"
        )
    if name not in stack_table_ids(aws, deployment):
        raise RefusedError(
            f"table {name} is not stack {config.stack_name}'s (retained by an earlier stack or made outside it): "
            f"refusing to {doing}"
        )
    owner = foreign_owner(table_tags(aws, table["TableArn"]))
    if owner is not None:
        raise RefusedError(f"table {name} is tagged ManagedBy={owner}, not {MANAGED_BY}: refusing to {doing}")
    return dict(table)


# ------------------------------------------------------------------------------------------ capability
def _table_absent(config: DocTableConfig, in_stack: bool) -> Finding:
    if in_stack:
        return Finding(
            Level.WARN, "table.missing", "table", "absent", config.table_name,
            "the stack lists the table but it is gone "
            "(deleted behind the stack): an update will not re-create it — destroy and redeploy",
            before=None, after=config.table_name,
        )  # fmt: skip
    return Finding(
        Level.INFO, "table.created", "table", "absent", config.table_name, "will be created with the knobs' shape",
        before=None, after=config.table_name,
    )  # fmt: skip


def _table_outside(deployment: Deployment, tags: dict[str, str]) -> Finding:
    """A same-named table the stack does not hold: someone else's, or ours left outside a stack."""
    config = deployment.target
    shown = ", ".join(f"{k}={v}" for k, v in tags.items()) or "no tags"
    where = f"outside stack {config.stack_name}" + ("" if deployment.exists else " (not deployed)")
    handover = deployment.out(names.OUT_TABLE_HANDOVER)
    if handover and is_ours(tags) and config.is_global and deployment.exists:
        return Finding(
            Level.WARN, "table.handover", "table", f"exists {where} (conversion step {handover})",
            f"in stack {config.stack_name} as {GLOBAL_TABLE_TYPE}",
            "a conversion to a global table stopped after the retained table was taken out of the stack: this "
            "deploy continues it, importing the table as a global table with its items, then adds the replicas",
            before=handover, after=GLOBAL_TABLE_TYPE,
        )  # fmt: skip
    if not is_ours(tags):
        return Finding(
            Level.STOP, "table.foreign", "table", f"exists {where}; {shown}", f"ManagedBy={MANAGED_BY}",
            f"table {config.table_name} exists but is NOT tagged ManagedBy={MANAGED_BY}: adopting it is a "
            "human decision — stop (pick another table_base, or import it deliberately after review)",
            before=tags, after={"ManagedBy": MANAGED_BY},
        )  # fmt: skip
    return Finding(
        Level.STOP, "table.unmanaged", "table", f"exists {where}; {shown}", f"in stack {config.stack_name}",
        "ours by its tags but not this stack's (retained by a teardown, or made by the bash plan): "
        "CloudFormation cannot create a same-named table — adopting it (`cdk import`) or deleting it is "
        "a human decision",
        before=tags, after=config.stack_name,
    )  # fmt: skip


def _records(deployment: Deployment, knob: str) -> bool:
    """The stack's knob record (its Knobs output) holds ``knob``: it was deployed by a doctable that knew it."""
    record = deployment.out(names.OUT_KNOBS)
    try:
        return record is not None and knob in knobs_from_record(record)
    except ValueError:
        return False


# --------------------------------------------------------------------------------------- the environment
ACTIVE_STACK_STATES = (
    "CREATE_IN_PROGRESS", "CREATE_FAILED", "CREATE_COMPLETE", "ROLLBACK_IN_PROGRESS", "ROLLBACK_FAILED",
    "ROLLBACK_COMPLETE", "DELETE_FAILED", "UPDATE_IN_PROGRESS", "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS",
    "UPDATE_COMPLETE", "UPDATE_FAILED", "UPDATE_ROLLBACK_IN_PROGRESS", "UPDATE_ROLLBACK_FAILED",
    "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS", "UPDATE_ROLLBACK_COMPLETE", "IMPORT_IN_PROGRESS",
    "IMPORT_COMPLETE", "IMPORT_ROLLBACK_IN_PROGRESS", "IMPORT_ROLLBACK_FAILED", "IMPORT_ROLLBACK_COMPLETE",
)  # fmt: skip


def environment_findings(observed: Observed) -> list[Finding]:
    """What the settings say of the environment itself: a prod tier without an account binding, a tier change,
    and the stacks of this table whose environment the settings no longer declare."""
    deployment, target = observed.deployment, observed.target
    found = []
    if target.is_prod and not deployment.bound_account:
        found.append(
            Finding(
                Level.WARN, "env.prod_unbound", f"environment {target.env}", "no account binding",
                "account = <12 digits>",
                f"tier prod runs wherever the credentials point: bind it (account = \"...\" in "
                f"[environments.{target.env}]); the deploy pipeline (doctable deploy --require-binding) refuses it",
                before=None, after=target.tier,
            )
        )  # fmt: skip
    if deployment.exists and deployment.recorded and observed.deployed.tier != target.tier:
        found.append(_tier_change(observed.deployed, target))
    return found + _orphans(observed) + bucket_findings(observed) + bootstrap_findings(observed)


ADMINISTRATOR = ":iam::aws:policy/AdministratorAccess"


def bootstrap_findings(observed: Observed) -> list[Finding]:
    """The CDK bootstrap the deploy goes through (its toolkit stack's parameters): ``bootstrap.missing`` (STOP)
    when the environment's bound qualifier has none; ``bootstrap.admin_execution`` when its execution role is
    AdministratorAccess (WARN; STOP for a preview: its template is a pull request's; `doctable deploy
    --require-binding` stops on it too); ``bootstrap.qualifier_mismatch`` (WARN) when the deployed stack went
    through another qualifier's. The local AWS's default bootstrap is not looked at (its roles are the test
    harness's); a qualifier bound there is."""
    deployment, target = observed.deployment, observed.target
    qualifier = deployment.qualifier or BOOTSTRAP_QUALIFIER
    if target.is_local and deployment.qualifier is None:
        return []
    cfn = observed.aws.client("cloudformation")
    toolkit = toolkit_stack_name(qualifier)
    stacks = _stacks(cfn, toolkit)
    found: list[Finding] = []
    if not stacks:
        if deployment.qualifier is None:
            return []  # the CDK's default bootstrap: `cdk deploy` itself says when there is none
        return [Finding(
            Level.STOP, "bootstrap.missing", f"bootstrap {qualifier}", f"no stack {toolkit}",
            f"{toolkit} in {deployment.account} {deployment.region}",
            f"no CDK bootstrap of qualifier {qualifier} in this account and region: the deploy's roles do not exist; "
            f"allowed: `doctable bootstrap --env {target.env}` first (or the qualifier of an existing bootstrap)",
            before=None, after=qualifier,
        )]  # fmt: skip
    parameters = {p["ParameterKey"]: p.get("ParameterValue", "") for p in stacks[0].get("Parameters", [])}
    policies = [p for p in parameters.get("CloudFormationExecutionPolicies", "").split(",") if p]
    if not policies or any(p.endswith(ADMINISTRATOR) for p in policies):
        preview = bool(deployment.preview_prefix) and target.env.startswith(deployment.preview_prefix)
        found.append(Finding(
            Level.STOP if preview else Level.WARN, "bootstrap.admin_execution", f"bootstrap {qualifier}",
            "AdministratorAccess" if policies else "AdministratorAccess (the CDK's default)",
            "a least-privilege execution policy",
            f"CloudFormation deploys {target.stack_name} as an administrator ({toolkit}'s execution role): any "
            f"template it is given may create anything in the account; allowed: a qualifier of the environment's "
            f"own bootstrapped by `doctable bootstrap --env {target.env}{' --preview' if preview else ''}`",
            before=policies or ["arn:aws:iam::aws:policy/AdministratorAccess"], after=None,
        ))  # fmt: skip
    deployed = _deployed_qualifier(observed)
    if deployed is not None and deployed != qualifier:
        found.append(Finding(
            Level.WARN, "bootstrap.qualifier_mismatch", f"stack {target.stack_name}", f"qualifier {deployed}",
            f"qualifier {qualifier}",
            f"{target.stack_name} was deployed through bootstrap {deployed}; this deploy goes through {qualifier}: "
            "its assets and execution role change with it; allowed: the qualifier the stack was deployed with, or "
            "this one deliberately",
            before=deployed, after=qualifier,
        ))  # fmt: skip
    return found


def _stacks(cfn: Any, name: str) -> list[dict[str, Any]]:
    """DescribeStacks of ``name``; [] when there is no such stack (CloudFormation's ValidationError)."""
    try:
        return list(cfn.describe_stacks(StackName=name)["Stacks"])
    except ClientError as exc:
        if "does not exist" in str(exc):
            return []
        raise


def _deployed_qualifier(observed: Observed) -> str | None:
    """The qualifier the deployed stack was synthesized for: its BootstrapVersion parameter's SSM name."""
    deployment = observed.deployment
    if not deployment.exists:
        return None
    stacks = _stacks(observed.aws.client("cloudformation"), observed.target.stack_name) or [{}]
    for parameter in stacks[0].get("Parameters", []):
        value = str(parameter.get("ParameterValue", ""))
        if parameter.get("ParameterKey") == "BootstrapVersion" and value.startswith("/cdk-bootstrap/"):
            return value.split("/")[2]
    return None


def _tier_change(deployed: DocTableConfig, target: DocTableConfig) -> Finding:
    lowered = (deployed.is_prod and not target.is_prod) or (
        deployed.retain_on_delete and not target.retain_on_delete
    )
    effect = (
        "lowers the environment's protections: "
        + ", ".join(
            what
            for what, lost in (
                ("deletion protection by default", deployed.is_prod and not target.is_prod),
                ("PITR by default", deployed.pitr_by_default and not target.pitr_by_default),
                (
                    "its data kept when the stack goes (RETAIN)",
                    deployed.retain_on_delete and not target.retain_on_delete,
                ),
            )
            if lost
        )
        if lowered
        else "the tier's rules apply from this deploy: "
        + ("production's protections" if target.is_prod else "its defaults")
    )
    return Finding(
        Level.WARN if lowered else Level.CHANGE, "env.tier_changed", f"environment {target.env}",
        f"tier {deployed.tier}", f"tier {target.tier}", effect, lowered, deployed.tier, target.tier,
    )  # fmt: skip


def _orphans(observed: Observed) -> list[Finding]:
    """Stacks named for this table's environments that no declared environment (nor its replica regions, nor a
    preview) owns: a renamed environment leaves its old stack behind. Read from ListStacks (names and states)."""
    declared = set(observed.deployment.declared_stacks.values())
    if not declared:
        return []
    prefix = f"{STACK_PREFIX}{observed.target.table_base}-"
    stacks = observed.once("listed stacks", lambda: _list_stacks(observed.aws))
    found = []
    for name, status in stacks:
        owned = name in declared or any(name.startswith(stack + "-") for stack in declared)
        preview = bool(observed.deployment.preview_prefix) and name[len(prefix) :].startswith(
            observed.deployment.preview_prefix
        )
        if not name.startswith(prefix) or owned or preview:
            continue
        found.append(
            Finding(
                Level.INFO, "env.orphaned", f"stack {name}", status, "no declared environment",
                f"names environment {name[len(prefix):]!r}, which the settings no longer declare (renamed or "
                f"removed?): it still bills; tear it down with `doctable teardown` from a checkout that declares it",
                before=name, after=None,
            )
        )  # fmt: skip
    return found


# --------------------------------------------------------------------------------------------- the buckets
def created_bucket_names(config: DocTableConfig, account: str, region: str) -> list[tuple[str, str]]:
    """(what, exact name) of each bucket the stack creates under a name of its own (bucket_names=exact; with
    generated names CloudFormation picks a free one): the failure bucket of the mapping, the blob bucket of the
    built-in consumer unless one is borrowed, each subscriber's failure bucket (infra/compute/consumer.py, subscribers.py)."""
    if not config.exact_bucket_names:
        return []
    named = []
    if config.has_mapping:
        named.append(("failure bucket", names.FAILURE_BUCKET_SUFFIX))
    if config.builtin_consumer and not config.blob_bucket:
        named.append(("blob bucket", names.BLOB_BUCKET_SUFFIX))
    named += [
        (f"subscriber {s.name}'s failure bucket", names.subscriber_failure_suffix(s.name))
        for s in config.subscribers
    ]
    return [(what, names.bucket_name(config.table_name, account, region, suffix)) for what, suffix in named]


def _bucket_status(s3: Any, bucket: str) -> int:
    """HeadBucket's status: 200 (the bucket is this account's: every S3 call names it as ExpectedBucketOwner), 403
    (it exists and is another account's, or not ours to read), 404 (the name is free)."""
    try:
        s3.head_bucket(Bucket=bucket)
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if is_not_found(exc) or status == 404:
            return 404
        if status == 403:
            return 403
        raise
    return 200


def bucket_findings(observed: Observed) -> list[Finding]:
    """``bucket.taken`` (STOP) for each exact name the deploy creates a bucket under that exists outside the
    stack: S3's names are global, so CloudFormation's create would fail halfway through the deploy."""
    deployment, target = observed.deployment, observed.target
    wanted = created_bucket_names(target, deployment.account, deployment.region)
    if not wanted:
        return []
    aws = observed.aws
    held = observed.once("stack resources", lambda: stack_physical_ids(aws, deployment))
    found = []
    for what, bucket in wanted:
        if bucket in held.get("AWS::S3::Bucket", set()):
            continue
        status = _bucket_status(aws.client("s3"), bucket)
        if status == 404:
            continue
        where = (
            f"in this account ({deployment.account})"
            if status == 200
            else "in another account, or one this identity may not s3:ListBucket (HeadBucket 403)"
        )
        borrow = (
            f', or borrow it (blob_bucket = "{bucket}")' if status == 200 and what == "blob bucket" else ""
        )
        if status == 200 and what.endswith("failure bucket"):
            # A consumer or subscriber turned off leaves its failure bucket (RETAIN: the records it kept).
            borrow += (
                "; a failure bucket left behind when its consumer was turned off keeps the records that failed: "
                "read them (`doctable replay`), empty and delete it, then deploy"
            )
        found.append(
            Finding(
                Level.STOP, "bucket.taken", what, f"{bucket} exists {where}",
                f"{bucket} created by stack {target.stack_name}",
                f"bucket {bucket} ({what}) exists outside stack {target.stack_name} {where}: CloudFormation cannot "
                f"create it; allowed: another name (another table_base or env) or one doctable derives "
                f"(bucket_names = \"generated\" in [environments.{target.env}]){borrow}",
                before={"bucket": bucket, "owner": "this account" if status == 200 else "another account"},
                after={"bucket": bucket, "stack": target.stack_name},
            )
        )  # fmt: skip
    return found


def _list_stacks(aws: Aws) -> list[tuple[str, str]]:
    pages = (
        aws.client("cloudformation")
        .get_paginator("list_stacks")
        .paginate(StackStatusFilter=list(ACTIVE_STACK_STATES))
    )
    return sorted(
        (s["StackName"], s["StackStatus"]) for page in pages for s in page.get("StackSummaries", [])
    )


class OwnershipCapability:
    """Whose table: preflight's finding when the table is not the stack's; the provenance tags' drift."""

    name = "ownership"
    compares_live = True
    codes = frozenset(
        {
            "table.created", "table.missing", "table.foreign", "table.unmanaged", "table.handover",
            "env.prod_unbound", "env.tier_changed", "env.orphaned", "bucket.taken", "bootstrap.missing",
            "bootstrap.admin_execution", "bootstrap.qualifier_mismatch",
        }
    )  # fmt: skip
    calls = (TABLE_TAGS,)

    def _tags(self, observed: Observed) -> dict[str, str]:
        arn = str(observed.live_table["TableArn"])
        return observed.once("table tags", lambda: table_tags(observed.aws, arn))

    def findings(self, observed: Observed) -> list[Finding]:
        """The table's owner. (The environment's own findings, ``environment_findings``, are preflight's last:
        they are about the settings, not the live table, so they never read as its drift.)"""
        if observed.table is None:
            return [_table_absent(observed.target, observed.in_stack)]
        if not observed.in_stack:
            return [_table_outside(observed.deployment, self._tags(observed))]
        return []

    def drift(self, observed: Observed) -> list[Drift]:
        tags = self._tags(observed)
        expected = observed.deployed.tags()
        if not _records(observed.deployment, "tier"):
            # Deployed before tiers: its template never wrote the Tier tag, so its absence is not drift (the next
            # deploy adds it).
            expected.pop("Tier", None)
        return [
            Drift(
                f"table-tag:{key}",
                f"table tag {key}",
                tags.get(key, "absent"),
                value,
                TABLE_TAGS,
                {key: value},
            )
            for key, value in expected.items()
            if tags.get(key) != value
        ]

    def apply(
        self, aws: Aws, deployment: Deployment, table: dict[str, Any], call: str, params: dict[str, Any]
    ) -> None:
        if call != TABLE_TAGS:  # pragma: no cover - calls only
            raise ValueError(call)
        tags = [{"Key": k, "Value": v} for k, v in params.items()]
        aws.client("dynamodb").tag_resource(ResourceArn=table["TableArn"], Tags=tags)


OWNERSHIP = OwnershipCapability()
