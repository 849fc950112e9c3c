"""A search projection: a team's subscriber that keeps each document's searchable fields in a second table.

Declared beside the table in doctable.toml (the wrapper, its function, role and mapping come from doctable)::

    [environments.dev.subscribers.search]
    handler = "examples/subscribers/search.py:handler"
    filters = ['{"eventName": ["INSERT", "MODIFY", "REMOVE"]}']
    grants = [{resource = "arn:aws:dynamodb:eu-west-1:123456789012:table/search-dev",
               actions = ["dynamodb:PutItem", "dynamodb:DeleteItem"]}]
    [environments.dev.subscribers.search.environment]
    SEARCH_TABLE = "search-dev"

A plain Lambda stream handler, ``handler(event, context)``, with boto3 alone: an INSERT or MODIFY writes the item's
searchable fields (and the lowercased words of its text fields, ``terms``) under the item's key; a REMOVE deletes
them. It reads a DynamoDB stream's records or, with ``source = "kinesis"``, the Kinesis destination's (which may
deliver a change twice or out of order): each write is conditional on the change's ``ApproximateCreationDateTime``,
so a change older than the one the projection holds is skipped and a duplicate rewrites the same item. (A REMOVE
leaves no tombstone: an older INSERT delivered after it would bring the entry back. A projection that must never
show a deleted item keeps a tombstone instead of deleting.)

It refuses an item whose ``title`` or ``summary`` is not a string (a ValueError: the projection searches their
words), and answers with the partial-batch response: the first record that fails and every later one, so the
mapping retries from there in order; a record that still fails after the mapping's retries lands on the
subscriber's failure bucket, for ``doctable replay --subscriber search`` once the cause is fixed.
"""

from __future__ import annotations

import base64
import json
import os
import re
from typing import Any

import boto3
from botocore.exceptions import ClientError

KEYS = ("pk", "sk")
SEARCHABLE = ("title", "author", "tags", "summary", "updated_at")
TEXT_FIELDS = ("title", "summary")
CHANGED_AT = "changed_at"  # the change's ApproximateCreationDateTime, epoch seconds
_WORD = re.compile(r"[a-z0-9]+")
_client: Any = None


def handler(event: dict[str, Any], context: Any) -> dict[str, list[dict[str, str]]]:
    failed: list[dict[str, str]] = []
    for record in event["Records"]:
        sequence = _sequence_number(record)
        if (
            failed
        ):  # the mapping retries from the first failure: the later records are retried after it, in order
            failed.append({"itemIdentifier": sequence})
            continue
        try:
            apply_change(_change_of(record))
        except Exception as exc:
            print(
                json.dumps(
                    {"message": "search_projection_failed", "sequence_number": sequence, "error": repr(exc)}
                )
            )
            failed.append({"itemIdentifier": sequence})
    return {"batchItemFailures": failed}


def apply_change(change: dict[str, Any]) -> None:
    """Write or delete one change's projection, unless the projection already holds a newer change."""
    images = change["dynamodb"]
    key = {name: images["Keys"][name] for name in KEYS}
    changed_at = {"N": str(images["ApproximateCreationDateTime"])}
    newer_held = {
        "ConditionExpression": "attribute_not_exists(#k) OR #c <= :c",
        "ExpressionAttributeNames": {"#k": KEYS[0], "#c": CHANGED_AT},
        "ExpressionAttributeValues": {":c": changed_at},
    }
    try:
        if change["eventName"] == "REMOVE":
            _dynamodb().delete_item(TableName=_search_table(), Key=key, **newer_held)
        else:
            item = {**key, **searchable_fields(images["NewImage"]), CHANGED_AT: changed_at}
            _dynamodb().put_item(TableName=_search_table(), Item=item, **newer_held)
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise  # a newer change is already projected: this one is skipped, anything else fails the record


def searchable_fields(new_image: dict[str, Any]) -> dict[str, Any]:
    """The image's searchable attributes, as DynamoDB values, and ``terms``: the words of its text fields
    (ValueError when one is not a string)."""
    for name in TEXT_FIELDS:
        if name in new_image and "S" not in new_image[name]:
            raise ValueError(
                f"{name} is not a string ({'|'.join(new_image[name])}): its words cannot be searched"
            )
    fields = {name: new_image[name] for name in SEARCHABLE if name in new_image}
    words = {w for name in TEXT_FIELDS for w in _WORD.findall(new_image.get(name, {}).get("S", "").lower())}
    if words:
        fields["terms"] = {"SS": sorted(words)}
    return fields


def _change_of(record: dict[str, Any]) -> dict[str, Any]:
    """A DynamoDB stream record, or the change record a Kinesis record carries (its time in epoch seconds)."""
    if record.get("eventSource") != "aws:kinesis":
        return record
    change: dict[str, Any] = json.loads(base64.b64decode(record["kinesis"]["data"]))
    change["dynamodb"]["ApproximateCreationDateTime"] /= 1000  # Kinesis carries epoch milliseconds
    return change


def _sequence_number(record: dict[str, Any]) -> str:
    if record.get("eventSource") == "aws:kinesis":
        return str(record["kinesis"]["sequenceNumber"])
    return str(record["dynamodb"]["SequenceNumber"])


def _search_table() -> str:
    name = os.environ.get("SEARCH_TABLE")
    if not name:
        raise RuntimeError("SEARCH_TABLE is not set: the name of the table the search projection writes")
    return name


def _dynamodb() -> Any:
    global _client
    if _client is None:
        _client = boto3.client("dynamodb")
    return _client
