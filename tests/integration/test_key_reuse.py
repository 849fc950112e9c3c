"""Key reuse against the deployed consumer: delete an item, upload the same blob key again, put the item back
listing it; the consumer's cleanup of the REMOVE races the application and must never delete the new blob, with
the blobs listed as plain keys, as manifest entries carrying the upload's ETag (docs/data-contract.md), or both
mixed in one batch. Also the local AWS's conditional deletes, which the consumer relies on, answered as S3 answers
them, and the consumer deployed with blob_key_reuse=never, whose role can no longer observe a blob or read an item.
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
# How the items list their blobs: plain keys, manifest entries, or both (alternating items, and within an item).
FORMS = ("plain", "manifest", "mixed")


def _exists(s3: Any, bucket: str, key: str) -> bool:
    try:
        s3.head_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        if exc.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound"):
            return False
        raise
    return True


def _entry(key: str, etag: str, manifest: bool) -> dict[str, Any]:
    """A ``blobs`` entry: the manifest entry of the upload that returned ``etag``, or the plain key."""
    if not manifest:
        return {"S": key}
    return {"M": {"key": {"S": key}, "etag": {"S": etag}, "size": {"N": "1"}}}


def _item(pk: str, *entries: dict[str, Any]) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": "v1"}, "blobs": {"L": list(entries)}}


def _manifest(form: str, n: int) -> bool:
    """Whether the ``n``-th blob of a test lists its ETag."""
    return form == "manifest" or (form == "mixed" and n % 2 == 0)


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


@pytest.mark.parametrize("form", FORMS)
def test_delete_reupload_reput_never_loses_the_live_blob(
    local_aws: lt.LocalAWS, full_stack: lt.Deployed, form: str
) -> None:
    # GIVEN 30 items, each listing its own blob, 5 more that will be deleted for good (each listing two blobs),
    # and one whose update will drop one of its two blobs; listed in ``form``
    out = full_stack.outputs
    s3, ddb = local_aws.client("s3"), local_aws.client("dynamodb")
    bucket, table = out["BlobBucketName"], out["TableName"]

    def upload(key: str, body: bytes) -> str:
        return str(s3.put_object(Bucket=bucket, Key=key, Body=body)["ETag"])

    reused = {f"reuse-{form}-{i}": f"reuse-{form}-{i}/v1/body.txt" for i in range(ROUNDS)}
    dropped = {f"dropped-{form}-{i}": [f"dropped-{form}-{i}/v1/{n}.txt" for n in range(2)] for i in range(5)}
    for i, (pk, key) in enumerate(reused.items()):
        ddb.put_item(TableName=table, Item=_item(pk, _entry(key, upload(key, b"first"), _manifest(form, i))))
    for pk, keys in dropped.items():
        entries = [_entry(key, upload(key, b"first"), _manifest(form, n)) for n, key in enumerate(keys)]
        ddb.put_item(TableName=table, Item=_item(pk, *entries))
    orphan_pk = f"orphan-{form}"
    kept_key, orphan_key = f"{orphan_pk}/v1/kept.txt", f"{orphan_pk}/v1/orphan.txt"
    kept_entry = _entry(kept_key, upload(kept_key, b"kept"), _manifest(form, 1))
    orphan_entry = _entry(orphan_key, upload(orphan_key, b"orphan"), _manifest(form, 0))
    ddb.put_item(TableName=table, Item=_item(orphan_pk, kept_entry, orphan_entry))

    # WHEN the application replaces each reused document by delete item -> upload the same key -> put the item
    # (listing the new upload's ETag), racing the consumer, deletes the others, and drops one blob of the last
    for i, (pk, key) in enumerate(reused.items()):
        ddb.delete_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": "v1"}})
        etag = upload(key, f"second {pk}".encode())
        ddb.put_item(TableName=table, Item=_item(pk, _entry(key, etag, _manifest(form, i))))
    for pk in dropped:
        ddb.delete_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": "v1"}})
    ddb.put_item(TableName=table, Item=_item(orphan_pk, kept_entry))

    # THEN once the consumer has processed every record, the dropped blobs and the orphan are gone...
    gone = [key for keys in dropped.values() for key in keys] + [orphan_key]
    mapping = out["EventSourceMappingUuid"]
    lt.wait_for(
        lambda: (
            local_aws.faults.mappings()[mapping].get("pending") == 0
            and not any(_exists(s3, bucket, key) for key in gone)
        ),
        timeout=120,
        what="the consumer to process every record and delete the dropped blobs",
    )
    # ...and every live record's blob is in place, holding what was uploaded last
    lost = [key for key in [*reused.values(), kept_key] if not _exists(s3, bucket, key)]
    assert lost == [], f"{len(lost)} live blob(s) lost: {lost[:5]}"
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
        # both forms: the manifest entries' ETags are not used (a conditional delete would need s3:GetObject)
        entries = [
            _entry(k, str(s3.put_object(Bucket=bucket, Key=k, Body=b"x")["ETag"]), n > 0)
            for n, k in enumerate(keys)
        ]
        ddb.put_item(TableName=table, Item=_item(pk, *entries))
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


def test_the_cleanup_filter_passes_a_modify_that_drops_a_manifest_entry(
    local_aws: lt.LocalAWS, deploy: Callable[..., lt.Deployed]
) -> None:
    # GIVEN the stack of test_events_filter (events=cleanup: the mapping passes a MODIFY only when its old image
    # lists blobs) and an item listing two blobs as manifest entries only (no plain key the L.S pattern sees)
    stack = deploy(
        {"stream": "new-and-old", "events": "cleanup", "table_base": "evfilter", "deploy_target": "local"}
    )
    out = stack.outputs
    s3, ddb = local_aws.client("s3"), local_aws.client("dynamodb")
    bucket, table = out[names.OUT_BLOB_BUCKET], out[names.OUT_TABLE_NAME]
    keys = [f"manifest-filter/v1/{n}.bin" for n in range(2)]
    entries = [_entry(k, str(s3.put_object(Bucket=bucket, Key=k, Body=b"x")["ETag"]), True) for k in keys]
    ddb.put_item(TableName=table, Item=_item("manifest-filter", *entries))

    # WHEN the item is updated to list only the first
    ddb.put_item(TableName=table, Item=_item("manifest-filter", entries[0]))

    # THEN the MODIFY passed the filter and the consumer deleted the dropped blob, and only it
    lt.wait_for(
        lambda: not _exists(s3, bucket, keys[1]), timeout=60, what="the dropped manifest entry's blob to go"
    )
    assert _exists(s3, bucket, keys[0])
