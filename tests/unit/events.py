"""Factories for real-shaped DynamoDB Streams and Kinesis events (and a few others) for the consumer tests.

Records come from the one builder in :mod:`bench.events`; images here are serialized with boto3's rules.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.types import TypeSerializer

from bench.events import ACCOUNT, TTL_IDENTITY, seq, stream_arn
from bench.events import record as stream_record

REGION = "eu-west-1"
TABLE = "doctable-DocumentTable"
STREAM_ARN = stream_arn(TABLE, REGION)
# Record n is created at LATER + n (2100-01-01 onwards): after every object a test uploads, so each blob a record
# lists is the one it dropped. A test of a newer upload passes ``created`` explicitly.
LATER = 4_102_444_800

_serializer = TypeSerializer()
_UNSET: Any = object()


def av(value: Any) -> dict[str, Any]:
    """Python value -> DynamoDB AttributeValue (str, int/Decimal, bytes, set, list, dict, bool, None)."""
    return _serializer.serialize(value)


def image(pk: str, sk: str, blobs: Any = _UNSET, *, as_set: bool = False, **attrs: Any) -> dict[str, Any]:
    """An item image; ``blobs`` is serialized as a list (L of S) or, with ``as_set``, a string set (SS)."""
    item: dict[str, Any] = {"pk": av(pk), "sk": av(sk)}
    if blobs is not _UNSET:
        item["blobs"] = {"SS": sorted(blobs)} if as_set else av(list(blobs))
    item.update({name: av(value) for name, value in attrs.items()})
    return item


def record(
    event_name: str, n: int, pk: str = "doc#1", sk: str = "v#1", *, created: int | None = None, **fields: Any
) -> dict[str, Any]:
    """One stream record of this module's table (see :func:`bench.events.record` for ``fields``), created at
    ``created`` (epoch seconds; default ``LATER + n``)."""
    raw = stream_record(event_name, n, pk, sk, region=REGION, source_arn=STREAM_ARN, **fields)
    raw["dynamodb"]["ApproximateCreationDateTime"] = LATER + n if created is None else created
    return raw


def insert(n: int, pk: str = "doc#1", sk: str = "v#1", blobs: Any = ()) -> dict[str, Any]:
    return record("INSERT", n, pk, sk, new=image(pk, sk, blobs))


def modify(
    n: int, pk: str, sk: str, old_blobs: Any, new_blobs: Any, *, created: int | None = None
) -> dict[str, Any]:
    return record(
        "MODIFY", n, pk, sk, old=image(pk, sk, old_blobs), new=image(pk, sk, new_blobs), created=created
    )


def remove(
    n: int,
    pk: str,
    sk: str,
    blobs: Any,
    *,
    as_set: bool = False,
    ttl: bool = False,
    created: int | None = None,
) -> dict[str, Any]:
    return record(
        "REMOVE",
        n,
        pk,
        sk,
        old=image(pk, sk, blobs, as_set=as_set),
        user_identity=TTL_IDENTITY if ttl else None,
        created=created,
    )


def keys_only(event_name: str, n: int, pk: str, sk: str) -> dict[str, Any]:
    return record(event_name, n, pk, sk, view_type="KEYS_ONLY")


def stream_event(*records: dict[str, Any]) -> dict[str, Any]:
    return {"Records": list(records)}


KINESIS_STREAM_ARN = f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/{TABLE}-changes"


def kseq(n: int) -> str:
    """A Kinesis-like sequence number (56 digits, increasing with n), unlike any DynamoDB one of :func:`seq`."""
    return str(49_590_338_271_490_256_608_559_692_538_361_571_095_921_575_989_136_588_898 + n)


def change_data(raw: dict[str, Any], *, table: str = TABLE) -> dict[str, Any]:
    """The DynamoDB change record Kinesis Data Streams for DynamoDB writes for the stream record ``raw``: no
    sequence number or view type, ApproximateCreationDateTime in epoch milliseconds, the table by name."""
    stream = raw["dynamodb"]
    change: dict[str, Any] = {
        "awsRegion": raw["awsRegion"],
        "eventID": raw["eventID"],
        "eventName": raw["eventName"],
        "userIdentity": raw.get("userIdentity"),
        "recordFormat": "application/json",
        "tableName": table,
        "dynamodb": {
            "ApproximateCreationDateTime": stream["ApproximateCreationDateTime"] * 1000,
            "Keys": stream["Keys"],
            "SizeBytes": stream["SizeBytes"],
        },
        "eventSource": "aws:dynamodb",
    }
    for name in ("NewImage", "OldImage"):
        if name in stream:
            change["dynamodb"][name] = stream[name]
    return change


def kinesis_record(n: int, data: Any, *, sequence: str | None = None) -> dict[str, Any]:
    """One Kinesis record as Lambda delivers it; ``data`` is a change record (a dict: JSON, base64-encoded), or
    the raw ``kinesis.data`` string."""
    encoded = data if isinstance(data, str) else base64.b64encode(json.dumps(data).encode()).decode()
    number = kseq(n) if sequence is None else sequence
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": f"partition-{n}",
            "sequenceNumber": number,
            "data": encoded,
            "approximateArrivalTimestamp": float(LATER + n),
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"shardId-000000000000:{number}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": f"arn:aws:iam::{ACCOUNT}:role/consumer",
        "awsRegion": REGION,
        "eventSourceARN": KINESIS_STREAM_ARN,
    }


def via_kinesis(raw: dict[str, Any], n: int, *, table: str = TABLE) -> dict[str, Any]:
    """The stream record ``raw`` as the Kinesis record number ``n`` carrying it."""
    return kinesis_record(n, change_data(raw, table=table))


def kinesis_failures(*ns: int) -> dict[str, list[dict[str, str]]]:
    """The exact partial batch response failing the Kinesis records with these factory numbers."""
    return {"batchItemFailures": [{"itemIdentifier": kseq(n)} for n in ns]}


def sqs_event() -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": "059f36b4-87a3-44ab-83d2-661975830a7d",
                "receiptHandle": "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a",
                "body": "{}",
                "attributes": {},
                "messageAttributes": {},
                "md5OfBody": "99914b932bd37a50b983c5e7c90ae93b",
                "eventSource": "aws:sqs",
                "eventSourceARN": f"arn:aws:sqs:{REGION}:{ACCOUNT}:queue",
                "awsRegion": REGION,
            }
        ]
    }


def failures(*ns: int) -> dict[str, list[dict[str, str]]]:
    """The exact partial batch response failing the records with these factory numbers."""
    return {"batchItemFailures": [{"itemIdentifier": seq(n)} for n in ns]}


@dataclass
class FakeLambdaContext:
    function_name: str = "doctable-StreamConsumer"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:doctable-StreamConsumer"
    aws_request_id: str = "52fdfc07-2182-154f-163f-5f0f9a621d72"
    log_group_name: str = "/aws/lambda/doctable-StreamConsumer"
    log_stream_name: str = "2024/05/01/[$LATEST]abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000
