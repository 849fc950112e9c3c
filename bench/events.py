"""Real-shaped DynamoDB Streams records: the one stream-record builder of the bench and the unit tests.

``tests/unit/events.py`` builds its factories on :func:`record`. Attribute values are written by hand: no
boto3 import, so a cold-start measurement never finds boto3 already loaded.
"""

from __future__ import annotations

import hashlib
from typing import Any

REGION = "us-east-1"
ACCOUNT = "123456789012"
TABLE = "doctable-bench-dev"
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


def stream_arn(table: str, region: str = REGION, account: str = ACCOUNT) -> str:
    return f"arn:aws:dynamodb:{region}:{account}:table/{table}/stream/2024-05-01T12:00:00.000"


STREAM_ARN = stream_arn(TABLE)
BLOB_ROOT = "blobs/"
BLOBS_PER_REMOVE = 3


def seq(n: int) -> str:
    """A DynamoDB-like sequence number (numeric string, increasing with n)."""
    return str(4_421_584_500_000_000_000_000 + n)


def etag_of(key: str, upload: int = 0) -> str:
    """The ETag S3 would give the ``upload``-th upload of ``key`` in the bench (quoted, as S3 returns it)."""
    return '"' + hashlib.md5(f"{key}#{upload}".encode(), usedforsecurity=False).hexdigest() + '"'


def blob_entry(key: str, manifest: bool = False) -> dict[str, Any]:
    """A ``blobs`` entry: the plain key, or the manifest entry of its first upload (docs/data-contract.md)."""
    if not manifest:
        return {"S": key}
    return {"M": {"key": {"S": key}, "etag": {"S": etag_of(key)}, "size": {"N": "1"}}}


def image(pk: str, sk: str, blobs: list[str], manifest: bool = False) -> dict[str, Any]:
    return {
        "pk": {"S": pk},
        "sk": {"S": sk},
        "title": {"S": f"document {pk}"},
        "size": {"N": "1024"},
        "blobs": {"L": [blob_entry(key, manifest) for key in blobs]},
    }


def blob_keys(pk: str, sk: str, count: int, root: str = BLOB_ROOT) -> list[str]:
    return [f"{root}{pk}/{sk}/part-{i}.bin" for i in range(count)]


def record(
    event_name: str,
    n: int,
    pk: str = "doc#1",
    sk: str = "v#1",
    *,
    old: dict[str, Any] | None = None,
    new: dict[str, Any] | None = None,
    keys: dict[str, Any] | None = None,
    view_type: str = "NEW_AND_OLD_IMAGES",
    user_identity: dict[str, str] | None = None,
    region: str = REGION,
    source_arn: str = STREAM_ARN,
) -> dict[str, Any]:
    """One stream record as Lambda delivers it; ``n`` orders it (sequence number, event id, timestamp)."""
    dynamodb: dict[str, Any] = {
        # 2100-01-01 onwards: after every object a bench or test uploads, so each listed blob is the one the
        # record dropped (the consumer leaves an object newer than the record alone).
        "ApproximateCreationDateTime": 4_102_444_800 + n,
        "Keys": keys if keys is not None else {"pk": {"S": pk}, "sk": {"S": sk}},
        "SequenceNumber": seq(n),
        "SizeBytes": 256,
        "StreamViewType": view_type,
    }
    if old is not None:
        dynamodb["OldImage"] = old
    if new is not None:
        dynamodb["NewImage"] = new
    raw: dict[str, Any] = {
        "eventID": f"event-{n}",
        "eventName": event_name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": region,
        "dynamodb": dynamodb,
        "eventSourceARN": source_arn,
    }
    if user_identity is not None:
        raw["userIdentity"] = user_identity
    return raw


def mixed_batch(
    count: int, root: str = BLOB_ROOT, tag: str = "", manifest: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """``count`` records: 40% REMOVE (each listing ``BLOBS_PER_REMOVE`` blobs), 30% INSERT, 30% MODIFY.

    Every record is a different item (``tag`` makes the items of two batches differ), so no retention across
    records applies. A MODIFY keeps its one blob
    (nothing orphaned). With ``manifest`` the images list manifest entries (each key with the ETag of its first
    upload, :func:`etag_of`), else plain keys. Returns the event and the keys the REMOVEs list (all of which must
    be deleted).
    """
    records: list[dict[str, Any]] = []
    doomed: list[str] = []
    for n in range(count):
        pk, sk = f"doc#{tag}{n:06d}", "v#1"
        slot = n % 10
        if slot < 4:  # 40% REMOVE
            keys = blob_keys(pk, sk, BLOBS_PER_REMOVE, root)
            doomed.extend(keys)
            records.append(record("REMOVE", n, pk, sk, old=image(pk, sk, keys, manifest)))
        elif slot < 7:  # 30% INSERT
            records.append(
                record("INSERT", n, pk, sk, new=image(pk, sk, blob_keys(pk, sk, 1, root), manifest))
            )
        else:  # 30% MODIFY, same blobs before and after
            keys = blob_keys(pk, sk, 1, root)
            old, new = image(pk, sk, keys, manifest), image(pk, sk, keys, manifest)
            records.append(record("MODIFY", n, pk, sk, old=old, new=new))
    return {"Records": records}, doomed


class FakeLambdaContext:
    function_name = "doctable-bench-StreamConsumer"
    memory_limit_in_mb = 256
    invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:doctable-bench-StreamConsumer"
    aws_request_id = "52fdfc07-2182-154f-163f-5f0f9a621d72"
    log_group_name = "/aws/lambda/doctable-bench-StreamConsumer"
    log_stream_name = "2024/05/01/[$LATEST]abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000
