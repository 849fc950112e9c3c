"""Key reuse against the deployed consumer: delete an item, upload the same blob key again, put the item back
listing it; the consumer's cleanup of the REMOVE races the application and must never delete the new blob.
Also the local AWS's conditional deletes, which the consumer relies on, answered as S3 answers them, and the
consumer deployed with blob_key_reuse=never, whose role can no longer observe a blob or read an item.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from contract import names
from tests.support import localaws as lt

pytestmark = pytest.mark.integration

ROUNDS = 30


def _exists(s3: Any, bucket: str, key: str) -> bool:
    try:
        s3.head_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        if exc.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound"):
            return False
        raise
    return True


def _item(pk: str, key: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": "v1"}, "blobs": {"L": [{"S": key}]}}


def test_conditional_deletes_are_evaluated_as_s3_does(local_aws: lt.LocalAWS) -> None:
    # GIVEN a bucket with three objects
    s3 = local_aws.client("s3")
    s3.create_bucket(Bucket="conditional-deletes")
    etags = {k: s3.put_object(Bucket="conditional-deletes", Key=k, Body=k.encode())["ETag"] for k in "abc"}

    # WHEN one DeleteObjects names a's ETag, b's old ETag, c unconditionally and a missing key with an ETag
    reply = s3.delete_objects(
        Bucket="conditional-deletes",
        Delete={
            "Objects": [
                {"Key": "a", "ETag": etags["a"]},
                {"Key": "b", "ETag": etags["a"]},
                {"Key": "c"},
                {"Key": "gone", "ETag": etags["a"]},
            ]
        },
    )

    # THEN a and c are deleted, b fails alone with PreconditionFailed, the missing key with NoSuchKey
    assert sorted(d["Key"] for d in reply["Deleted"]) == ["a", "c"]
    assert {e["Key"]: e["Code"] for e in reply["Errors"]} == {"b": "PreconditionFailed", "gone": "NoSuchKey"}
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="conditional-deletes")["Contents"]] == ["b"]
    # AND DeleteObject's If-Match: another ETag is 412 PreconditionFailed, the object's own (or *) deletes it
    with pytest.raises(ClientError) as refused:
        s3.delete_object(Bucket="conditional-deletes", Key="b", IfMatch=etags["a"])
    assert refused.value.response["Error"]["Code"] == "PreconditionFailed"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    s3.delete_object(Bucket="conditional-deletes", Key="b", IfMatch="*")
    assert "Contents" not in s3.list_objects_v2(Bucket="conditional-deletes")


def test_delete_reupload_reput_never_loses_the_live_blob(
    local_aws: lt.LocalAWS, full_stack: lt.Deployed
) -> None:
    # GIVEN 30 items, each listing its own blob, and 5 more that will be deleted for good
    out = full_stack.outputs
    s3, ddb = local_aws.client("s3"), local_aws.client("dynamodb")
    bucket, table = out["BlobBucketName"], out["TableName"]
    reused = {f"reuse-{i}": f"reuse-{i}/v1/body.txt" for i in range(ROUNDS)}
    dropped = {f"dropped-{i}": f"dropped-{i}/v1/body.txt" for i in range(5)}
    for pk, key in {**reused, **dropped}.items():
        s3.put_object(Bucket=bucket, Key=key, Body=b"first")
        ddb.put_item(TableName=table, Item=_item(pk, key))

    # WHEN the application replaces each reused document by delete item -> upload the same key -> put the item,
    # racing the consumer, and deletes the others
    for pk, key in reused.items():
        ddb.delete_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": "v1"}})
        s3.put_object(Bucket=bucket, Key=key, Body=f"second {pk}".encode())
        ddb.put_item(TableName=table, Item=_item(pk, key))
    for pk in dropped:
        ddb.delete_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": "v1"}})

    # THEN once the consumer has processed every record, the dropped blobs are gone...
    mapping = out["EventSourceMappingUuid"]
    lt.wait_for(
        lambda: (
            local_aws.faults.mappings()[mapping].get("pending") == 0
            and not any(_exists(s3, bucket, key) for key in dropped.values())
        ),
        timeout=120,
        what="the consumer to process every record and delete the dropped blobs",
    )
    # ...and every live record's blob is in place, holding what was uploaded last
    lost = [key for key in reused.values() if not _exists(s3, bucket, key)]
    assert lost == [], f"{len(lost)} of {ROUNDS} live records lost their blob"
    for pk, key in reused.items():
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == f"second {pk}".encode()


def test_with_key_reuse_never_dropped_blobs_go_with_delete_rights_alone(
    local_aws: lt.LocalAWS, deploy: Callable[..., lt.Deployed]
) -> None:
    # GIVEN a stack deployed with blob_key_reuse=never: its role may delete blobs, not read them, and reads no
    # item; the local AWS evaluates that role's policy on every call the consumer makes
    stack = deploy({"stream": "new-and-old", "table_base": "keynever", "blob_key_reuse": "never"})
    out = stack.outputs
    s3, ddb, lam = local_aws.client("s3"), local_aws.client("dynamodb"), local_aws.client("lambda")
    bucket, table = out[names.OUT_BLOB_BUCKET], out[names.OUT_TABLE_NAME]
    function = lam.get_event_source_mapping(UUID=out[names.OUT_MAPPING_UUID])["FunctionArn"]
    env = lam.get_function_configuration(FunctionName=function)["Environment"]["Variables"]
    assert env[names.ENV_BLOB_KEY_REUSE] == "never"
    items = {f"doc-{i}": [f"doc-{i}/v1/{n}.bin" for n in range(3)] for i in range(5)}
    for pk, keys in items.items():
        for key in keys:
            s3.put_object(Bucket=bucket, Key=key, Body=b"x")
        ddb.put_item(
            TableName=table,
            Item={"pk": {"S": pk}, "sk": {"S": "v1"}, "blobs": {"L": [{"S": k} for k in keys]}},
        )
    s3.put_object(Bucket=bucket, Key="doc-kept/v1/0.bin", Body=b"x")

    # WHEN the items are deleted
    for pk in items:
        ddb.delete_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": "v1"}})

    # THEN every blob they listed is deleted (a HEAD or an item read would have been denied, failing the records
    # and leaving their blobs), and the blob no item dropped is in place
    mapping = out[names.OUT_MAPPING_UUID]
    lt.wait_for(
        lambda: (
            local_aws.faults.mappings()[mapping].get("pending") == 0
            and s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 1
        ),
        timeout=120,
        what="the consumer to delete the 15 dropped blobs",
    )
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["doc-kept/v1/0.bin"]
