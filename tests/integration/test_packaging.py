"""Every packaging mode (the Powertools layer, Powertools bundled in the asset) on both architectures, deployed
to the local AWS and shown to clean up: one stack, updated through the four combinations."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from botocore.exceptions import ClientError

from tests.support import localaws as lt

pytestmark = pytest.mark.integration

MODES = [
    ("layer", "arm64"),
    ("bundled", "arm64"),
    ("bundled", "x86_64"),
    ("layer", "x86_64"),
]


def _gone(s3: object, bucket: str, key: str) -> bool:
    try:
        s3.head_object(Bucket=bucket, Key=key)  # type: ignore[attr-defined]
    except ClientError as exc:
        if exc.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound"):
            return True
        raise
    return False


@pytest.mark.timeout(600)
def test_each_packaging_mode_and_architecture_deploys_a_consumer_that_cleans_up(
    local_aws: lt.LocalAWS, deploy: Callable[..., lt.Deployed]
) -> None:
    for powertools, architecture in MODES:
        # GIVEN the stack deployed (or updated) with this packaging mode and architecture
        knobs = {
            "env": "dev",
            "table_base": "itpack",
            "stream": "new-and-old",
            "powertools": powertools,
            "architecture": architecture,
        }
        out = deploy(knobs).outputs
        function = local_aws.client("lambda").get_function_configuration(
            FunctionName=out["ConsumerFunctionName"]
        )
        assert function["Architectures"] == [architecture]
        assert bool(function.get("Layers")) == (powertools == "layer"), function.get("Layers")

        # WHEN a record listing a blob is written and deleted
        s3, ddb = local_aws.client("s3"), local_aws.client("dynamodb")
        pk, key = f"pack-{powertools}-{architecture}", f"pack-{powertools}-{architecture}/v1/body.bin"
        s3.put_object(Bucket=out["BlobBucketName"], Key=key, Body=b"blob")
        item = {"pk": {"S": pk}, "sk": {"S": "v1"}, "blobs": {"L": [{"S": key}]}}
        ddb.put_item(TableName=out["TableName"], Item=item)
        ddb.delete_item(TableName=out["TableName"], Key={"pk": {"S": pk}, "sk": {"S": "v1"}})

        # THEN the deployed function ran (it starts in this mode) and deleted the blob
        lt.wait_for(
            lambda: _gone(s3, out["BlobBucketName"], key),  # noqa: B023
            timeout=90,
            what=f"the {powertools}/{architecture} consumer to delete {key}",
        )
