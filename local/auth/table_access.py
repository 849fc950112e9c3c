"""DynamoDB's resource-side checks: a table's resource-based policy, and the customer managed key a read needs.

A table's (or its index's) request is evaluated with the table's resource policy as a bucket's is with the bucket
policy (an explicit Deny there denies; an Allow there for the caller allows). A read of a table encrypted with a
customer managed key (items, index queries, stream records) also needs ``kms:Decrypt`` on that key for the caller,
evaluated with ``kms:ViaService`` naming DynamoDB, as DynamoDB asks KMS on the caller's behalf; a refusal names
kms:Decrypt and the key. Writes are not checked against the key (README: differences). Describing a table's
Kinesis streaming destinations also needs kinesis:DescribeStreamSummary and kinesis:DescribeStream on each stream the
table streams to, as DynamoDB's guide lists them.
"""

from __future__ import annotations

from typing import Any

from local import state
from local.auth.requests import Check
from local.patching import Target

MOTO_TARGETS = (
    Target("moto.dynamodb.models", "dynamodb_backends"),
    Target("moto.kms.models", "kms_backends"),
)
# A destination DynamoDB writes to (a disabled one is listed but no longer streamed to).
STREAMING = frozenset({"ENABLING", "ACTIVE", "UPDATING"})
# The actions that return item data or stream records: each decrypts under the table's key.
READ_ACTIONS = frozenset(
    f"dynamodb:{op}"
    for op in (
        "GetItem",
        "BatchGetItem",
        "Query",
        "Scan",
        "TransactGetItems",
        "GetRecords",
        "ExecuteStatement",
    )
)


def _table_arn(resource: str) -> str | None:
    if ":dynamodb:" not in resource or ":table/" not in resource:
        return None
    return resource.split("/index/", 1)[0].split("/stream/", 1)[0]


def _region(arn: str) -> str:
    parts = arn.split(":")
    return parts[3] if len(parts) > 3 and parts[3] else state.REGION


def resource_policy(resource: str) -> str | None:
    """The policy governing a table or index ARN; None for streams (their own policies are not evaluated)."""
    from moto.dynamodb.models import dynamodb_backends

    table_arn = _table_arn(resource)
    if table_arn is None or "/stream/" in resource:
        return None
    found = dynamodb_backends[state.ACCOUNT_ID][_region(table_arn)].resource_policies.get(table_arn)
    return found.policy_doc if found is not None else None


def _customer_key(table_arn: str) -> str | None:
    from moto.dynamodb.models import dynamodb_backends
    from moto.kms.exceptions import NotFoundException
    from moto.kms.models import kms_backends

    region = _region(table_arn)
    table = dynamodb_backends[state.ACCOUNT_ID][region].tables.get(table_arn.rsplit("/", 1)[-1])
    spec = getattr(table, "sse_specification", None) or {}
    if not spec.get("KMSMasterKeyId"):
        return None
    try:
        key: Any = kms_backends[state.ACCOUNT_ID][region].describe_key(spec["KMSMasterKeyId"])
    except (NotFoundException, KeyError):  # KMS has no such key: there is no key policy to decrypt under
        return None
    return str(key.arn) if getattr(key, "key_manager", "CUSTOMER") == "CUSTOMER" else None


def key_checks(checks: list[Check]) -> list[Check]:
    """kms:Decrypt on each customer managed key the reads among ``checks`` decrypt with (once per key)."""
    found: dict[str, Check] = {}
    for check in checks:
        table_arn = _table_arn(check.resource) if check.action in READ_ACTIONS else None
        key = _customer_key(table_arn) if table_arn else None
        if key and key not in found:
            context = dict(check.context)
            context["kms:ViaService"] = [f"dynamodb.{_region(table_arn or '')}.amazonaws.com"]
            found[key] = Check("kms:Decrypt", key, context)
    return list(found.values())


def listed(table: Any) -> list[dict[str, Any]]:
    """The Kinesis streaming destinations the local AWS keeps on a table (services/dynamodb/kinesis_destination.py)."""
    return list(getattr(table, state.KINESIS_DESTINATIONS_ATTR, None) or [])


def destination_checks(checks: list[Check]) -> list[Check]:
    """kinesis:DescribeStreamSummary and kinesis:DescribeStream on each stream a DescribeKinesisStreamingDestination
    among ``checks`` lists as streaming (the caller's reads of the streams it is told about)."""
    from moto.dynamodb.models import dynamodb_backends

    found: list[Check] = []
    for check in checks:
        if check.action != "dynamodb:DescribeKinesisStreamingDestination":
            continue
        table_arn = _table_arn(check.resource) or ""
        region = _region(table_arn)
        table = dynamodb_backends[state.ACCOUNT_ID][region].tables.get(table_arn.rsplit("/", 1)[-1])
        streams = (
            {d["StreamArn"] for d in listed(table) if d["DestinationStatus"] in STREAMING} if table else set()
        )
        for stream in sorted(streams):
            found += [
                Check(f"kinesis:{a}", stream, dict(check.context))
                for a in ("DescribeStreamSummary", "DescribeStream")
            ]
    return found
