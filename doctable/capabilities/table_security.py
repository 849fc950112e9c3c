"""Encryption at rest and the resource policy of a live table (DescribeTable's SSEDescription, KMS's DescribeKey,
GetResourcePolicy), compared with the knobs: what preflight says a change does and costs, the drift reconcile can
restore, and the calls that restore it. verify reads the live values through the same readers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from contract import names, policy_doc
from contract.findings import Finding, Level
from contract.knobs import (
    ENCRYPTION_AWS_MANAGED,
    ENCRYPTION_AWS_OWNED,
    ENCRYPTION_CUSTOMER_MANAGED,
    DocTableConfig,
)
from contract.shape import EncryptionShape, encryption_shape
from doctable.capabilities.protocol import Drift, Observed
from doctable.core.answers import error_code

if TYPE_CHECKING:
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment

# The properties drift and a deploy's changes are compared by.
ENCRYPTION, RESOURCE_POLICY = "encryption", "resource_policy"
PROPS = (ENCRYPTION, RESOURCE_POLICY)
# What each repair calls (drift.py runs them in its order).
SSE_CALL, PUT_POLICY_CALL, DELETE_POLICY_CALL = (
    "UpdateTable (SSESpecification)",
    "PutResourcePolicy",
    "DeleteResourcePolicy",
)
CALLS = (SSE_CALL, PUT_POLICY_CALL, DELETE_POLICY_CALL)

CODES = {ENCRYPTION: "key.changed", RESOURCE_POLICY: "resource_policy.changed"}
EFFECTS = {
    ENCRYPTION: "an UpdateTable in place, online: the table stays ACTIVE and serves reads and writes while "
    "DynamoDB re-encrypts (SSEDescription UPDATING, minutes on a big table); the stream and buckets follow (new "
    "objects only: existing blobs keep the key they were written with). A customer managed key costs $1/month "
    "(while it exists, plus a deletion window of 30 days) and $0.03 per 10,000 KMS requests beyond the free tier; "
    "an AWS managed key costs the requests only; the AWS owned key nothing",
    RESOURCE_POLICY: "PutResourcePolicy (or DeleteResourcePolicy) in place, free; it applies at once to every "
    "request, including a Deny that locks a caller out: check the document before deploying",
}


# ------------------------------------------------------------------------------------------ live values
AWS_OWNED_TEXT = "AWS owned key (no SSEDescription)"
POLICY_NOT_FOUND = "PolicyNotFoundException"


def live_encryption(aws: Aws, table: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """(text, key ARN, KeyManager) of a DescribeTable answer: what SSEDescription says, and the key's manager."""
    sse = table.get("SSEDescription") or {}
    if sse.get("Status") not in ("ENABLED", "UPDATING") or not sse.get("KMSMasterKeyArn"):
        return AWS_OWNED_TEXT, None, None
    key = str(sse["KMSMasterKeyArn"])
    manager = aws.client("kms").describe_key(KeyId=key)["KeyMetadata"].get("KeyManager")
    kind = "AWS managed key (KeyManager AWS)" if manager == "AWS" else f"customer managed key {key}"
    return f"{sse.get('SSEType', 'KMS')}, {kind}", key, manager


def live_policy(ddb: Any, table_arn: str) -> str | None:
    """The table's resource policy document (JSON text), None when it has none."""
    try:
        return str(ddb.get_resource_policy(ResourceArn=table_arn)["Policy"])
    except ClientError as exc:
        if error_code(exc) == POLICY_NOT_FOUND:
            return None
        raise


def declared_policy(path: str, table_arn: str) -> dict[str, Any]:
    """The knob's document with its placeholders resolved to the live table's account and ARN."""
    account = table_arn.split(":")[4]
    document = policy_doc.load_policy_document(path)
    return policy_doc.resolve_placeholders(document, account=account, table_arn=table_arn)


@dataclass(frozen=True)
class LiveSecurity:
    encryption: str  # as verify shows it
    key_arn: str | None
    key_manager: str | None  # "AWS" | "CUSTOMER" | None (AWS owned)
    policy: str | None  # the resource policy's JSON, None without one

    @classmethod
    def read(cls, aws: Aws, table: dict[str, Any]) -> LiveSecurity:
        text, key, manager = live_encryption(aws, table)
        return cls(text, key, manager, live_policy(aws.client("dynamodb"), str(table["TableArn"])))


def _declared_encryption(shape: EncryptionShape, stack_key: str | None) -> str:
    if shape.sse_type is None:
        return "AWS owned key"
    if not shape.customer_managed:
        return "AWS managed key"
    return f"customer managed key {shape.borrowed_key_arn or stack_key or 'created by the deploy'}"


def _encryption_matches(live: LiveSecurity, shape: EncryptionShape, stack_key: str | None) -> bool:
    if shape.sse_type is None:
        return live.key_arn is None
    if not shape.customer_managed:
        return live.key_manager == "AWS"
    want = shape.borrowed_key_arn or stack_key
    return live.key_manager not in (None, "AWS") and (want is None or live.key_arn == want)


def _policy_text(live: LiveSecurity) -> str:
    return f"{len(policy_doc.canonical(live.policy))} statement(s)" if live.policy else "none"


def _policy_matches(live: LiveSecurity, shape: EncryptionShape, table_arn: str) -> bool:
    if shape.resource_policy_path is None:
        return live.policy is None
    declared = declared_policy(shape.resource_policy_path, table_arn)
    return live.policy is not None and policy_doc.canonical(live.policy) == policy_doc.canonical(declared)


def _differences(
    live: LiveSecurity, shape: EncryptionShape, table_arn: str, stack_key: str | None
) -> list[tuple[str, str, str, str]]:
    found = []
    if not _encryption_matches(live, shape, stack_key):
        found.append((ENCRYPTION, "encryption", live.encryption, _declared_encryption(shape, stack_key)))
    if not _policy_matches(live, shape, table_arn):
        declared = f"= {shape.resource_policy_path}" if shape.resource_policy_path else "none"
        found.append((RESOURCE_POLICY, "resource policy", _policy_text(live), declared))
    return found


def _live_key(live: LiveSecurity) -> dict[str, str | None]:
    kind = {None: ENCRYPTION_AWS_OWNED, "AWS": ENCRYPTION_AWS_MANAGED}.get(live.key_manager)
    return {"encryption": kind or ENCRYPTION_CUSTOMER_MANAGED, "key": live.key_arn}


def _declared_key(shape: EncryptionShape, stack_key: str | None) -> dict[str, str | None]:
    if shape.sse_type is None:
        return {"encryption": ENCRYPTION_AWS_OWNED, "key": None}
    if not shape.customer_managed:
        return {"encryption": ENCRYPTION_AWS_MANAGED, "key": None}
    return {"encryption": ENCRYPTION_CUSTOMER_MANAGED, "key": shape.borrowed_key_arn or stack_key}


def findings(aws: Aws, config: DocTableConfig, table: dict[str, Any], stack_key: str | None) -> list[Finding]:
    """preflight's CHANGE findings for a deploy of ``config``; before/after: the key (encryption kind and ARN),
    the policy's canonical statements (None without one)."""
    return _findings(LiveSecurity.read(aws, table), config, table, stack_key)


def _findings(
    live: LiveSecurity, config: DocTableConfig, table: dict[str, Any], stack_key: str | None
) -> list[Finding]:
    shape = encryption_shape(config)
    found = []
    for prop, subject, have, want in _differences(live, shape, str(table["TableArn"]), stack_key):
        if prop == ENCRYPTION:
            # New data is encrypted with the new key; whatever still needs the old one breaks if it goes.
            before: Any = _live_key(live)
            after: Any = _declared_key(shape, stack_key)
        else:
            before = policy_doc.canonical(live.policy) if live.policy else None
            path = shape.resource_policy_path
            after = policy_doc.canonical(declared_policy(path, str(table["TableArn"]))) if path else None
        found.append(
            Finding(
                Level.CHANGE,
                CODES[prop],
                subject,
                have,
                want,
                EFFECTS[prop],
                prop == ENCRYPTION,
                before,
                after,
            )
        )
    return found


def repair(
    config: DocTableConfig, prop: str, table: dict[str, Any], stack_key: str | None
) -> tuple[str | None, dict[str, Any], str]:
    """(call, parameters, how) restoring ``prop`` to ``config``'s value; call None when reconcile cannot."""
    shape = encryption_shape(config)
    if prop == ENCRYPTION:
        if shape.sse_type is None:
            return SSE_CALL, {"Enabled": False}, ""
        if not shape.customer_managed:
            return SSE_CALL, {"Enabled": True, "SSEType": "KMS"}, ""
        key = shape.borrowed_key_arn or stack_key
        if key is None:
            return None, {}, f"the stack has no {names.OUT_KMS_KEY_ARN} output: redeploy"
        return SSE_CALL, {"Enabled": True, "SSEType": "KMS", "KMSMasterKeyId": key}, ""
    if shape.resource_policy_path is None:
        return DELETE_POLICY_CALL, {}, ""
    document = declared_policy(shape.resource_policy_path, str(table["TableArn"]))
    return PUT_POLICY_CALL, {"Policy": json.dumps(document, separators=(",", ":"))}, ""


def apply_repair(aws: Aws, table: dict[str, Any], call: str, params: dict[str, Any]) -> None:
    ddb = aws.client("dynamodb")
    if call == SSE_CALL:
        ddb.update_table(TableName=table["TableName"], SSESpecification=params)
    elif call == PUT_POLICY_CALL:
        ddb.put_resource_policy(ResourceArn=table["TableArn"], **params)
    elif call == DELETE_POLICY_CALL:
        ddb.delete_resource_policy(ResourceArn=table["TableArn"])
    else:  # pragma: no cover - CALLS only
        raise ValueError(call)


def changed_by_deploy(prop: str, deployed: DocTableConfig, target: DocTableConfig) -> bool:
    before, after = encryption_shape(deployed), encryption_shape(target)
    if prop == ENCRYPTION:
        return (before.sse_type, before.customer_managed, before.borrowed_key_arn) != (
            after.sse_type,
            after.customer_managed,
            after.borrowed_key_arn,
        )
    # By path: a document edited under the same path is rewritten by the deploy too, yet shows as drift here.
    return before.resource_policy_path != after.resource_policy_path


# ------------------------------------------------------------------------------------------ capability
class TableSecurityCapability:
    """Encryption at rest and the resource policy: findings once the table is the stack's; their drift."""

    name = "table security"
    compares_live = True
    codes = frozenset(CODES.values())
    calls = CALLS

    def _live(self, observed: Observed) -> LiveSecurity:
        table = observed.live_table
        return observed.once("table security", lambda: LiveSecurity.read(observed.aws, table))

    def findings(self, observed: Observed) -> list[Finding]:
        if not observed.compared:
            return []
        return _findings(self._live(observed), observed.target, observed.live_table, observed.stack_key)

    def drift(self, observed: Observed) -> list[Drift]:
        config, table, key = observed.deployed, observed.live_table, observed.stack_key
        drifts = []
        for prop, subject, have, want in _differences(
            self._live(observed), encryption_shape(config), str(table["TableArn"]), key
        ):
            op, params, how = repair(config, prop, table, key)
            drifts.append(Drift(prop, subject, have, want, op, params, how))
        return drifts

    def apply(
        self, aws: Aws, deployment: Deployment, table: dict[str, Any], call: str, params: dict[str, Any]
    ) -> None:
        apply_repair(aws, table, call, params)


TABLE_SECURITY = TableSecurityCapability()
