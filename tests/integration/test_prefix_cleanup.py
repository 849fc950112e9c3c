"""blob_prefix_cleanup=on deployed with the real CDK CLI into the local AWS: a REMOVE clears the record's own
prefix (ListObjectsV2 under the role's s3:ListBucket, scoped to the blob root, then the deletes) and nothing
beside it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from contract import names
from tests.support import localaws as lt

pytestmark = pytest.mark.integration


def test_a_remove_clears_the_records_prefix_and_nothing_else(
    local_aws: lt.LocalAWS, deploy: Callable[..., lt.Deployed]
) -> None:
    # GIVEN a stack deployed with blob_prefix_cleanup=on, an item listing one blob, two objects under its prefix
    # that it does not list, and neighbours whose keys start with the same characters
    stack = deploy({"stream": "new-and-old", "table_base": "prefixclean", "blob_prefix_cleanup": "on"})
    out = stack.outputs
    s3, ddb = local_aws.client("s3"), local_aws.client("dynamodb")
    bucket, table = out[names.OUT_BLOB_BUCKET], out[names.OUT_TABLE_NAME]
    owned = ["doc-1/v1/listed.bin", "doc-1/v1/unlisted.bin", "doc-1/v1/nested/deeper.bin"]
    neighbours = ["doc-1/v10/other.bin", "doc-10/v1/other.bin", "doc-1/v1.bin"]
    for key in owned + neighbours:
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    ddb.put_item(
        TableName=table, Item={"pk": {"S": "doc-1"}, "sk": {"S": "v1"}, "blobs": {"L": [{"S": owned[0]}]}}
    )

    # WHEN the item is deleted
    ddb.delete_item(TableName=table, Key={"pk": {"S": "doc-1"}, "sk": {"S": "v1"}})

    # THEN everything under doc-1/v1/ goes, listed or not, and the neighbours stay
    mapping = out[names.OUT_MAPPING_UUID]
    lt.wait_for(
        lambda: (
            local_aws.faults.mappings()[mapping].get("pending") == 0
            and s3.list_objects_v2(Bucket=bucket, Prefix="doc-1/v1/").get("KeyCount") == 0
        ),
        timeout=120,
        what="the consumer to clear doc-1/v1/",
    )
    assert sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]) == sorted(neighbours)
