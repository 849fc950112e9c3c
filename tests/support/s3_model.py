"""The tests' one model of S3's DeleteObjects with per-key ETag conditions, for the consumer's unit tests of
cleanup races: each key's verdict is the local AWS's own (``local.services.s3.conditional_delete_refusal``, which
cites S3's user guide), and tests/integration/test_local_aws.py holds this model to the local AWS's answers."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from local.services.s3 import conditional_delete_refusal


def delete_objects(objects: MutableMapping[str, str], delete: dict[str, Any]) -> dict[str, Any]:
    """DeleteObjects on a bucket whose ``objects`` map each key to its ETag: the keys whose condition holds (or
    that have none) are deleted, the others come back as per-key errors, as S3 answers with ``Quiet``."""
    errors = []
    for obj in delete["Objects"]:
        refusal = conditional_delete_refusal(objects.get(obj["Key"]), obj.get("ETag"))
        if refusal is None:
            objects.pop(obj["Key"], None)  # deleting a key that is not there succeeds, as on S3
        else:
            errors.append({"Key": obj["Key"], "Code": refusal[0], "Message": refusal[1]})
    return {"Errors": errors} if errors else {}


class ConditionalBucket:
    """An S3 client of one bucket that answers DeleteObjects with the model (``objects``: key -> ETag)."""

    def __init__(self, objects: MutableMapping[str, str]) -> None:
        self.objects = objects

    def delete_objects(  # noqa: N803 - botocore's parameter names; the owner is required, as the consumer sends it
        self, Bucket: str, Delete: dict[str, Any], ExpectedBucketOwner: str
    ) -> dict[str, Any]:
        return delete_objects(self.objects, Delete)
