"""``doctable preflight``: observe before a deploy — foreign tables, what an update will do to a live table,
and whether a borrowed consumer exists and can read the stream."""

from __future__ import annotations

import fnmatch
import json
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import unquote

from botocore.exceptions import BotoCoreError, ClientError

from contract import names
from contract.knobs import MANAGED_BY, DocTableConfig
from doctable.aws import Aws, arn_region, call_or_none
from doctable.ops.context import Deployment
from doctable.ops.render import text_table

STOP, WARN, CHANGE, OK, INFO = "STOP", "WARN", "CHANGE", "OK", "INFO"
STREAM_READ_ACTIONS = ("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator")
LIST_STREAMS_ACTION = "dynamodb:ListStreams"
TABLE_TYPE = "AWS::DynamoDB::Table"
VIEW = "NEW_AND_OLD_IMAGES"


@dataclass
class Finding:
    level: str
    subject: str
    live: str
    declared: str
    effect: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def stack_physical_ids(aws: Aws, deployment: Deployment) -> dict[str, set[str]]:
    """resource type -> physical ids of the stack's resources (empty when the stack does not exist)."""
    found: dict[str, set[str]] = {}
    if not deployment.exists:
        return found
    paginator = aws.client("cloudformation").get_paginator("list_stack_resources")
    for page in paginator.paginate(StackName=deployment.config.stack_name):
        for resource in page.get("StackResourceSummaries", []):
            if resource.get("PhysicalResourceId"):
                found.setdefault(resource["ResourceType"], set()).add(resource["PhysicalResourceId"])
    return found


def table_tags(aws: Aws, table_arn: str) -> dict[str, str]:
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
    return tags.get("ManagedBy") == MANAGED_BY


# ------------------------------------------------------------------------------------------ shape diff
def shape_findings(
    config: DocTableConfig, table: dict[str, Any], ttl: dict[str, Any], pitr_status: str
) -> list[Finding]:
    """Per difference between the live table and the knobs: what the update will do, and what it costs."""
    findings: list[Finding] = []
    keys = {k["AttributeName"]: k["KeyType"] for k in table.get("KeySchema", [])}
    types = {a["AttributeName"]: a["AttributeType"] for a in table.get("AttributeDefinitions", [])}
    want_keys = {names.PARTITION_KEY: "HASH", names.SORT_KEY: "RANGE"}
    if keys != want_keys or types.get(names.PARTITION_KEY) != "S" or types.get(names.SORT_KEY) != "S":
        findings.append(
            Finding(
                STOP,
                "key schema",
                ", ".join(f"{k} {v} {types.get(k, '?')}" for k, v in keys.items()),
                "pk HASH S, sk RANGE S",
                "key schema is immutable: this needs a NEW table and a data copy (a migration, not an edit); "
                "CloudFormation cannot replace a table with a fixed name in place",
            )
        )
    gsis = {g["IndexName"]: g for g in table.get("GlobalSecondaryIndexes", []) or []}
    has_gsi = names.GSI_NAME in gsis
    if config.has_gsi and not has_gsi:
        findings.append(
            Finding(
                CHANGE,
                "gsi1",
                "absent",
                "gsi1",
                "adds gsi1 to a live table: an ONLINE BACKFILL (minutes to hours on a big table; index queries "
                "return partial results until IndexStatus=ACTIVE; backfill writes are billed per item)",
            )
        )
    elif not config.has_gsi and has_gsi:
        findings.append(
            Finding(
                CHANGE,
                "gsi1",
                "present",
                "none",
                "DELETES the index gsi1: queries on it fail from then on; re-adding it later is a full backfill",
            )
        )
    elif has_gsi and gsis[names.GSI_NAME].get("IndexStatus", "ACTIVE") != "ACTIVE":
        findings.append(
            Finding(
                WARN,
                "gsi1",
                str(gsis[names.GSI_NAME].get("IndexStatus")),
                "ACTIVE",
                "a backfill/index change is still running: another index change is rejected until it ends",
            )
        )
    for other in sorted(set(gsis) - {names.GSI_NAME}):
        findings.append(Finding(CHANGE, f"index {other}", "present", "absent", f"DELETES the index {other}"))

    spec = table.get("StreamSpecification") or {}
    live_on, live_view = bool(spec.get("StreamEnabled")), spec.get("StreamViewType")
    mapping_note = "; the event-source mapping is recreated on the new stream" if config.has_mapping else ""
    if config.has_stream and not live_on:
        findings.append(
            Finding(
                CHANGE,
                "stream",
                "disabled",
                VIEW,
                f"enables the stream: a NEW stream ARN (changes before it are not in the feed){mapping_note}",
            )
        )
    elif not config.has_stream and live_on:
        findings.append(
            Finding(
                CHANGE,
                "stream",
                str(live_view),
                "none",
                "disables the stream: the mapping is deleted first, the stream ARN is retired (records stay "
                "readable 24 h, then the feed is gone)",
            )
        )
    elif config.has_stream and live_view != VIEW:
        findings.append(
            Finding(
                CHANGE,
                "stream view",
                str(live_view),
                VIEW,
                "a view-type change is disable + enable: a NEW stream ARN, writes in between are not in the "
                f"feed{mapping_note}",
            )
        )

    ttl_status, ttl_attr = ttl.get("TimeToLiveStatus", "DISABLED"), ttl.get("AttributeName")
    ttl_on = ttl_status in ("ENABLED", "ENABLING")
    rate = "TTL changes are rate-limited (about one per table per hour)"
    if ttl_status in ("ENABLING", "DISABLING") and (config.has_ttl != (ttl_status == "ENABLING")):
        findings.append(
            Finding(
                WARN,
                "ttl",
                f"{ttl_status} {ttl_attr or ''}".strip(),
                "on" if config.has_ttl else "off",
                f"a TTL change is still in progress; the update's TTL change will be rejected until it ends ({rate})",
            )
        )
    elif config.has_ttl and not ttl_on:
        findings.append(
            Finding(
                CHANGE,
                "ttl",
                ttl_status,
                f"on ({names.TTL_ATTRIBUTE})",
                f"enables TTL (free; expiry lags up to ~48 h). {rate}: no other TTL change for ~1 h",
            )
        )
    elif not config.has_ttl and ttl_on:
        findings.append(
            Finding(
                CHANGE,
                "ttl",
                f"{ttl_status} on {ttl_attr}",
                "off",
                f"disables TTL: items stop expiring. {rate}",
            )
        )
    elif config.has_ttl and ttl_attr != names.TTL_ATTRIBUTE:
        findings.append(
            Finding(
                CHANGE,
                "ttl attribute",
                str(ttl_attr),
                names.TTL_ATTRIBUTE,
                f"an attribute change needs DISABLE then ENABLE — two TTL changes; {rate}, so a one-step update "
                "fails: disable, wait ~1 h, enable",
            )
        )

    if (pitr_status == "ENABLED") != config.has_pitr:
        findings.append(
            Finding(
                CHANGE,
                "pitr",
                pitr_status,
                "ENABLED" if config.has_pitr else "DISABLED",
                "cheap toggle: enabling bills continuous-backup storage (~table size); disabling drops the "
                "35-day restore window"
                if config.has_pitr
                else "cheap toggle: disabling drops the restore window (existing PITR history is lost)",
            )
        )
    live_dp = bool(table.get("DeletionProtectionEnabled"))
    if live_dp != config.deletion_protection:
        findings.append(
            Finding(
                CHANGE,
                "deletion protection",
                "on" if live_dp else "off",
                "on" if config.deletion_protection else "off",
                "free toggle" + ("" if config.deletion_protection else ": the table becomes deletable"),
            )
        )
    billing = (table.get("BillingModeSummary") or {}).get("BillingMode", "PROVISIONED")
    if billing != "PAY_PER_REQUEST":
        findings.append(
            Finding(
                CHANGE,
                "billing mode",
                billing,
                "PAY_PER_REQUEST",
                "switches to on-demand; AWS allows one billing-mode flip per ~24 h",
            )
        )
    return findings


# ------------------------------------------------------------------------------------- consumer grants
def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _document(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    return json.loads(unquote(str(raw)))


def _statement_matches(statement: dict[str, Any], action: str, resource: str) -> bool:
    actions = [a.lower() for a in _as_list(statement.get("Action"))]
    resources = _as_list(statement.get("Resource"))
    if "NotAction" in statement or "NotResource" in statement:
        return False  # not evaluated: the simulator (on AWS) does this properly
    return any(fnmatch.fnmatchcase(action.lower(), a) for a in actions) and any(
        fnmatch.fnmatchcase(resource, r) for r in resources
    )


def evaluate_documents(documents: list[dict[str, Any]], action: str, resource: str) -> bool:
    """Allowed by some Allow statement and no Deny (conditions ignored): an approximation of IAM."""
    allowed = False
    for document in documents:
        for statement in _as_list_of_dicts(document.get("Statement")):
            if _statement_matches(statement, action, resource):
                if statement.get("Effect") == "Deny":
                    return False
                if statement.get("Effect") == "Allow":
                    allowed = True
    return allowed


def _as_list_of_dicts(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value]
    return [v for v in value or [] if isinstance(v, dict)]


def role_documents(aws: Aws, role_name: str) -> list[dict[str, Any]]:
    iam = aws.client("iam")
    documents: list[dict[str, Any]] = []
    for page in iam.get_paginator("list_role_policies").paginate(RoleName=role_name):
        for policy_name in page.get("PolicyNames", []):
            reply = iam.get_role_policy(RoleName=role_name, PolicyName=policy_name)
            documents.append(_document(reply["PolicyDocument"]))
    for page in iam.get_paginator("list_attached_role_policies").paginate(RoleName=role_name):
        for attached in page.get("AttachedPolicies", []):
            policy = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]
            version = iam.get_policy_version(
                PolicyArn=attached["PolicyArn"], VersionId=policy["DefaultVersionId"]
            )
            documents.append(_document(version["PolicyVersion"]["Document"]))
    return documents


def missing_stream_grants(aws: Aws, role_arn: str, stream_arn: str) -> tuple[list[str], str]:
    """(actions the role lacks on the stream, how it was decided: 'simulator' or 'policy reading')."""
    wanted = [(a, stream_arn) for a in STREAM_READ_ACTIONS] + [(LIST_STREAMS_ACTION, "*")]
    iam = aws.client("iam")
    try:
        missing = []
        for resource in (stream_arn, "*"):
            actions = [a for a, r in wanted if r == resource]
            reply = iam.simulate_principal_policy(
                PolicySourceArn=role_arn, ActionNames=actions, ResourceArns=[resource]
            )
            for result in reply.get("EvaluationResults", []):
                if result.get("EvalDecision") != "allowed":
                    missing.append(result["EvalActionName"])
        return missing, "simulator"
    except (ClientError, BotoCoreError, NotImplementedError):
        # Not available here (the local AWS; moto in-process raises NotImplementedError), or no
        # iam:SimulatePrincipalPolicy permission: read the role's policies instead.
        pass
    role_name = role_arn.rsplit("/", 1)[-1]
    documents = role_documents(aws, role_name)
    return [a for a, r in wanted if not evaluate_documents(documents, a, r)], "policy reading (approximate)"


def consumer_findings(aws: Aws, config: DocTableConfig, stream_arn: str | None) -> list[Finding]:
    arn = config.borrowed_consumer_arn
    if not arn:
        return []
    region = arn_region(arn)
    if region and region != aws.region:
        return [
            Finding(
                STOP, "borrowed consumer", f"in {region}", f"in {aws.region}",
                "a mapping needs the function in the table's region: fix the consumer knob or AWS_REGION",
            )
        ]  # fmt: skip
    function = call_or_none(aws.client("lambda").get_function, FunctionName=arn)
    if function is None:
        return [
            Finding(
                STOP,
                "borrowed consumer",
                "not found",
                arn,
                f"consumer {arn} not found — apply its plan first (this stack wires it, never creates it)",
            )
        ]
    role = function["Configuration"].get("Role", "")
    probe_arn = stream_arn or (
        f"arn:{aws.partition}:dynamodb:{aws.region}:{aws.account}:table/{config.table_name}/stream/"
        "2026-01-01T00:00:00.000"
    )
    missing, how = missing_stream_grants(aws, role, probe_arn)
    if missing:
        return [
            Finding(
                WARN,
                "consumer role grants",
                f"lacks {', '.join(missing)}",
                "DescribeStream, GetRecords, GetShardIterator, ListStreams",
                f"role {role} cannot read the stream ({how}): creating the mapping will fail until the function's "
                "own plan grants them",
            )
        ]
    return [Finding(OK, "borrowed consumer", "exists, stream grants present", arn, f"checked by {how}")]


# ---------------------------------------------------------------------------------------------- runner
def run_preflight(aws: Aws, deployment: Deployment) -> list[Finding]:
    config = deployment.config
    findings: list[Finding] = []
    status = deployment.stack_status or ""
    if deployment.exists:
        if status.endswith("_IN_PROGRESS"):
            findings.append(
                Finding(STOP, "stack", status, "a settled stack", "the stack is busy: wait for it")
            )
        elif status == "UPDATE_ROLLBACK_FAILED":
            findings.append(
                Finding(
                    STOP,
                    "stack",
                    status,
                    "a settled stack",
                    "continue the rollback first (cloudformation continue-update-rollback), then deploy",
                )
            )
        elif status in ("ROLLBACK_COMPLETE", "CREATE_FAILED", "ROLLBACK_FAILED"):
            findings.append(
                Finding(
                    WARN,
                    "stack",
                    status,
                    "a settled stack",
                    "a failed first create: the deploy deletes and re-creates the stack",
                )
            )
    ddb = aws.client("dynamodb")
    table = (call_or_none(ddb.describe_table, TableName=config.table_name) or {}).get("Table")
    resources = stack_physical_ids(aws, deployment)
    in_stack = config.table_name in resources.get(TABLE_TYPE, set())
    stream_arn: str | None = None
    if table is None:
        if in_stack:
            findings.append(
                Finding(
                    WARN,
                    "table",
                    "absent",
                    config.table_name,
                    "the stack lists the table but it is gone "
                    "(deleted behind the stack): an update will not re-create it — destroy and redeploy",
                )
            )
        else:
            findings.append(
                Finding(INFO, "table", "absent", config.table_name, "will be created with the knobs' shape")
            )
    elif not in_stack:
        tags = table_tags(aws, table["TableArn"])
        shown = ", ".join(f"{k}={v}" for k, v in tags.items()) or "no tags"
        where = f"outside stack {config.stack_name}" + ("" if deployment.exists else " (not deployed)")
        if not is_ours(tags):
            findings.append(
                Finding(
                    STOP,
                    "table",
                    f"exists {where}; {shown}",
                    f"ManagedBy={MANAGED_BY}",
                    f"table {config.table_name} exists but is NOT tagged ManagedBy={MANAGED_BY}: adopting it is a "
                    "human decision — stop (pick another table_base, or import it deliberately after review)",
                )
            )
        else:
            findings.append(
                Finding(
                    STOP,
                    "table",
                    f"exists {where}; {shown}",
                    f"in stack {config.stack_name}",
                    "ours by its tags but not this stack's (retained by a teardown, or made by the bash plan): "
                    "CloudFormation cannot create a same-named table — adopting it (`cdk import`) or deleting it is "
                    "a human decision",
                )
            )
    else:
        ttl = ddb.describe_time_to_live(TableName=config.table_name).get("TimeToLiveDescription", {})
        backups = ddb.describe_continuous_backups(TableName=config.table_name)["ContinuousBackupsDescription"]
        pitr = (backups.get("PointInTimeRecoveryDescription") or {}).get(
            "PointInTimeRecoveryStatus", "DISABLED"
        )
        diff = shape_findings(config, table, ttl, pitr)
        findings += diff or [
            Finding(OK, "table", "matches the knobs", "—", "the update leaves the table's shape as it is")
        ]
        spec = table.get("StreamSpecification") or {}
        if spec.get("StreamEnabled") and spec.get("StreamViewType") == VIEW:
            stream_arn = table.get("LatestStreamArn")
    findings += consumer_findings(aws, config, stream_arn)
    return findings


def render_findings(findings: list[Finding]) -> str:
    return text_table(
        ["level", "subject", "live", "declared", "what the deploy will do"],
        [[f.level, f.subject, f.live, f.declared, f.effect] for f in findings],
        limit=160,
    )
