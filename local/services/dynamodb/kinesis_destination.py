"""Kinesis Data Streams for DynamoDB, which moto 5.2.5 lacks: the four API operations, the forwarding of every
item change into the Kinesis data stream, and ``KinesisStreamSpecification`` in templates.

- Enable/Disable/Describe/UpdateKinesisStreamingDestination with AWS's shapes: Enable answers ENABLING and
  Disable DISABLING, DescribeKinesisStreamingDestination then reports ACTIVE / DISABLED (the switch is
  immediate); a table has one active destination (enabling a second, or the same one again, is refused);
  a missing table or Kinesis stream is ResourceNotFoundException. DescribeTable does not list destinations.
- Forwarding: put, update, delete (single, batch, transactions when they commit, TTL deletions with the TTL
  service's ``userIdentity``) on a table with an ACTIVE destination put one record into the Kinesis stream, in
  AWS's format (images always NEW_AND_OLD), whether or not the table's DynamoDB stream is enabled; a write that
  changes nothing is not forwarded (as the DynamoDB stream writes no record for it). The partition key is
  derived from the item's key, so one item's changes stay in order on one shard.
- AWS::DynamoDB::Table ``KinesisStreamSpecification``: applied on create; on update added → enable, removed →
  disable, another ARN → disable the old and enable the new, another precision → update.

It replaces none of moto's write operations: local/services/dynamodb/tables.py owns them and calls this module's
steps in its own order (``item_replaced``/``item_before`` before a write, ``entry`` after it, ``put`` then, or when
a transaction commits); a template's specification is a step of local/services/cloudformation/dynamodb_table.py's
``apply_template``.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import logging
import time
import uuid
from typing import Any

from local import state
from local.patching import Patches, Target, replace
from local.services.dynamodb import not_found, validation

log = logging.getLogger("doctable.local.dynamodb_kinesis")

PRECISIONS = ("MILLISECOND", "MICROSECOND")
ENABLE_REFUSED = (
    "Table is not in a valid state to enable Kinesis Streaming Destination: EnableKinesisStreamingDestination "
    "must be DISABLED"
)
DISABLE_REFUSED = (
    "Table is not in a valid state to disable Kinesis Streaming Destination: DisableKinesisStreamingDestination "
    "must be ACTIVE"
)
UPDATE_REFUSED = (
    "Table is not in a valid state to update Kinesis Streaming Destination: UpdateKinesisStreamingDestination "
    "must be ACTIVE"
)
SAME_PRECISION = "Invalid Request: Precision is already set to the desired value of {precision}."
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}

_TABLE = "moto.dynamodb.models.table"
_MODELS = "moto.dynamodb.models"
PATCHES = Patches()


# --------------------------------------------------------------------------------------------- errors


# ------------------------------------------------------------------------------------- the destinations
def destinations(table: Any) -> list[dict[str, Any]]:
    """The table's destinations (every stream ever enabled, as DescribeKinesisStreamingDestination lists them)."""
    found: list[dict[str, Any]] = getattr(table, state.KINESIS_DESTINATIONS_ATTR, None) or []
    setattr(table, state.KINESIS_DESTINATIONS_ATTR, found)
    return found


def active(table: Any) -> dict[str, Any] | None:
    return next((d for d in destinations(table) if d["DestinationStatus"] == "ACTIVE"), None)


def _stream(account_id: str, region: str, arn: str) -> Any:
    """The Kinesis stream (moto's model), None when it does not exist."""
    from moto.kinesis.models import kinesis_backends

    backend = kinesis_backends[account_id][region]
    return next((s for s in backend.streams.values() if s.arn == arn), None)


def _check_precision(precision: Any) -> str:
    if precision is None:
        return PRECISIONS[0]
    if precision not in PRECISIONS:
        raise validation(
            f"1 validation error detected: Value '{precision}' at 'approximateCreationDateTimePrecision' failed "
            f"to satisfy constraint: Member must satisfy enum value set: [{', '.join(PRECISIONS)}]"
        )
    return str(precision)


def enable(table: Any, stream_arn: str, precision: Any = None) -> dict[str, Any]:
    precision = _check_precision(precision)
    if _stream(table.account_id, table.region_name, stream_arn) is None:
        raise not_found(f"Requested resource not found: Stream: {stream_arn} not found")
    if active(table) is not None:
        raise validation(ENABLE_REFUSED)  # one destination per table, and not the same one twice
    entries = destinations(table)
    entries[:] = [d for d in entries if d["StreamArn"] != stream_arn]
    entry = {
        "StreamArn": stream_arn,
        "DestinationStatus": "ACTIVE",
        "ApproximateCreationDateTimePrecision": precision,
    }
    entries.append(entry)
    return entry


def disable(table: Any, stream_arn: str) -> dict[str, Any]:
    entry = next((d for d in destinations(table) if d["StreamArn"] == stream_arn), None)
    if entry is None or entry["DestinationStatus"] != "ACTIVE":
        raise validation(DISABLE_REFUSED)
    entry["DestinationStatus"] = "DISABLED"
    return entry


def update(table: Any, stream_arn: str, precision: Any) -> dict[str, Any]:
    wanted = _check_precision(precision)
    entry = next((d for d in destinations(table) if d["StreamArn"] == stream_arn), None)
    if entry is None or entry["DestinationStatus"] != "ACTIVE":
        raise validation(UPDATE_REFUSED)
    if precision is None or entry["ApproximateCreationDateTimePrecision"] == wanted:
        raise validation(SAME_PRECISION.format(precision=entry["ApproximateCreationDateTimePrecision"]))
    entry["ApproximateCreationDateTimePrecision"] = wanted
    return entry


def apply_template(table: Any, properties: dict[str, Any]) -> None:
    """KinesisStreamSpecification of an AWS::DynamoDB::Table, on create and on update."""
    spec = properties.get("KinesisStreamSpecification") or {}
    wanted = spec.get("StreamArn")
    precision = spec.get("ApproximateCreationDateTimePrecision") or PRECISIONS[0]
    current = active(table)
    if current is not None and current["StreamArn"] != wanted:
        disable(table, current["StreamArn"])
        current = None
    if wanted and current is None:
        enable(table, str(wanted), precision)
    elif current is not None and current["ApproximateCreationDateTimePrecision"] != precision:
        update(table, current["StreamArn"], precision)


# ------------------------------------------------------------------------------------------ forwarding
def _json_default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, set):
        return sorted(value)
    return str(value)


def _partition_key(keys: dict[str, Any]) -> str:
    digest = hashlib.md5(
        json.dumps(keys, sort_keys=True, default=_json_default).encode(), usedforsecurity=False
    )
    return digest.hexdigest().upper()


def kinesis_record(table: Any, old: Any, new: Any, precision: str, ttl: bool) -> tuple[str, dict[str, Any]]:
    """(partition key, the record as Kinesis Data Streams for DynamoDB writes it)."""
    item = old if old is not None else new
    keys = {table.hash_key_attr: item.hash_key.to_json()}
    if table.range_key_attr is not None and item.range_key is not None:
        keys[table.range_key_attr] = item.range_key.to_json()
    now = time.time()
    dynamodb: dict[str, Any] = {
        "ApproximateCreationDateTime": int(now * 1_000_000)
        if precision == "MICROSECOND"
        else int(now * 1000),
        "ApproximateCreationDateTimePrecision": precision,
        "Keys": keys,
    }
    if new is not None:
        dynamodb["NewImage"] = new.to_json()["Attributes"]
    if old is not None:
        dynamodb["OldImage"] = old.to_json()["Attributes"]
    dynamodb["SizeBytes"] = len(json.dumps(dynamodb, default=_json_default))
    record = {
        "awsRegion": table.region_name,
        "eventID": str(uuid.uuid4()),
        "eventName": "INSERT" if old is None else "REMOVE" if new is None else "MODIFY",
        "userIdentity": dict(TTL_IDENTITY) if ttl and new is None else None,
        "recordFormat": "application/json",
        "tableName": table.name,
        "dynamodb": dynamodb,
        "eventSource": "aws:dynamodb",
    }
    return _partition_key(keys), record


def entry(table: Any, old: Any, new: Any, ttl: bool) -> tuple[str, str, str, str, dict[str, Any]] | None:
    """What a change of ``table`` puts into its active destination (None: no destination, or no change), a TTL
    deletion's (``ttl``) with the TTL service's identity; ``put`` puts it."""
    destination = active(table)
    if destination is None or (old is None and new is None):
        return None
    if old is not None and new is not None and old == new:
        return None  # DynamoDB records nothing for a write that changes nothing
    key, record = kinesis_record(table, old, new, destination["ApproximateCreationDateTimePrecision"], ttl)
    return (table.account_id, table.region_name, destination["StreamArn"], key, record)


def put(entries: list[tuple[str, str, str, str, dict[str, Any]]]) -> None:
    """Put each entry into its Kinesis stream, in order."""
    for account_id, region, arn, key, record in entries:
        stream = _stream(account_id, region, arn)
        if stream is None:
            log.warning(
                "Kinesis destination %s is gone: a change of %s is not forwarded", arn, record["tableName"]
            )
            continue
        data = base64.b64encode(json.dumps(record, default=_json_default).encode()).decode("ascii")
        stream.put_record(key, None, data)


def item_replaced(table: Any, item_attrs: dict[str, Any]) -> Any:
    """The item a put of ``item_attrs`` replaces (its old image), None when there is none or the item is malformed
    (moto refuses it then)."""
    from moto.dynamodb.exceptions import DynamodbException
    from moto.dynamodb.models.dynamo_type import DynamoType

    try:
        hash_key = DynamoType(item_attrs[table.hash_key_attr])
        range_key = DynamoType(item_attrs[table.range_key_attr]) if table.range_key_attr else None
        return table.get_item(hash_key, range_key)
    except (KeyError, TypeError, ValueError, DynamodbException):
        return None


def item_before(table: Any, key: dict[str, Any]) -> Any:
    """A copy of the item an UpdateItem of ``key`` changes (its old image), None when there is none or the key is
    malformed (moto refuses it then)."""
    from moto.dynamodb.exceptions import DynamodbException
    from moto.dynamodb.models.dynamo_type import DynamoType

    try:
        hash_key = DynamoType(key[table.hash_key_attr])
        range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
        return copy.deepcopy(table.get_item(hash_key, range_key))
    except (KeyError, TypeError, ValueError, DynamodbException):
        return None


# ------------------------------------------------------------------------------------------ the API
def _table(handler: Any) -> Any:
    """The request's table; a missing one is ResourceNotFoundException in AWS's words."""
    from moto.dynamodb.exceptions import ResourceNotFoundException

    name = str(handler.body.get("TableName") or "")
    try:
        return handler.dynamodb_backend.get_table(name)
    except ResourceNotFoundException:
        raise not_found(f"Requested resource not found: Table: {name} not found") from None


def enable_kinesis_streaming_destination(self: Any) -> Any:
    """EnableKinesisStreamingDestination: AWS's answer, ENABLING (the destination is ACTIVE at once)."""
    from moto.core.responses import ActionResult

    table = _table(self)
    config = self.body.get("EnableKinesisStreamingConfiguration") or {}
    entry = enable(
        table, str(self.body.get("StreamArn") or ""), config.get("ApproximateCreationDateTimePrecision")
    )
    return ActionResult(
        {
            "TableName": table.name,
            "StreamArn": entry["StreamArn"],
            "DestinationStatus": "ENABLING",
            "EnableKinesisStreamingConfiguration": {
                "ApproximateCreationDateTimePrecision": entry["ApproximateCreationDateTimePrecision"]
            },
        }
    )


def disable_kinesis_streaming_destination(self: Any) -> Any:
    """DisableKinesisStreamingDestination: AWS's answer, DISABLING (the destination is DISABLED at once)."""
    from moto.core.responses import ActionResult

    table = _table(self)
    entry = disable(table, str(self.body.get("StreamArn") or ""))
    return ActionResult(
        {
            "TableName": table.name,
            "StreamArn": entry["StreamArn"],
            "DestinationStatus": "DISABLING",
            "EnableKinesisStreamingConfiguration": {
                "ApproximateCreationDateTimePrecision": entry["ApproximateCreationDateTimePrecision"]
            },
        }
    )


def update_kinesis_streaming_destination(self: Any) -> Any:
    """UpdateKinesisStreamingDestination: the precision of the active destination, answered UPDATING."""
    from moto.core.responses import ActionResult

    table = _table(self)
    config = self.body.get("UpdateKinesisStreamingConfiguration") or {}
    entry = update(
        table, str(self.body.get("StreamArn") or ""), config.get("ApproximateCreationDateTimePrecision")
    )
    return ActionResult(
        {
            "TableName": table.name,
            "StreamArn": entry["StreamArn"],
            "DestinationStatus": "UPDATING",
            "UpdateKinesisStreamingConfiguration": {
                "ApproximateCreationDateTimePrecision": entry["ApproximateCreationDateTimePrecision"]
            },
        }
    )


def describe_kinesis_streaming_destination(self: Any) -> Any:
    """DescribeKinesisStreamingDestination: every destination the table ever had, with its status."""
    from moto.core.responses import ActionResult

    table = _table(self)
    return ActionResult(
        {"TableName": table.name, "KinesisDataStreamDestinations": [dict(d) for d in destinations(table)]}
    )


@PATCHES.on_install
def _add_destination_actions() -> None:
    """Enable/Disable/Update/DescribeKinesisStreamingDestination on moto's DynamoDB handler (moto lacks them)."""
    from moto.dynamodb.responses import DynamoHandler

    # Actions moto lacks: its handler dispatches an X-Amz-Target to the method of the same snake_case name.
    # They are new attributes, so no Target names them (local/compat.py checks that a Target exists in moto).
    for action in (
        enable_kinesis_streaming_destination,
        disable_kinesis_streaming_destination,
        update_kinesis_streaming_destination,
        describe_kinesis_streaming_destination,
    ):
        replace(DynamoHandler, action.__name__, action)


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_TABLE, "Table.get_item", ("self", "hash_key", "range_key")),
    Target("moto.dynamodb.responses", "DynamoHandler.dynamodb_backend"),
    Target("moto.dynamodb.exceptions", "ResourceNotFoundException"),
    Target("moto.dynamodb.exceptions", "DynamodbException"),
    Target("moto.dynamodb.models.dynamo_type", "DynamoType"),
    Target("moto.kinesis.models", "kinesis_backends"),
    Target("moto.kinesis.models", "KinesisBackend.describe_stream", ("self", "stream_arn", "stream_name")),
    Target(
        "moto.kinesis.models", "Stream.put_record", ("self", "partition_key", "explicit_hash_key", "data")
    ),
)
