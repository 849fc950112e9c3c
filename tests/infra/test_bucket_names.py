"""The stack's buckets in the template: named <table>-<account>-<region>-blobs|failures (bucket_names=exact, with the
pseudo parameters when the stack is environment-agnostic), or by CloudFormation (generated); either way the old
bucket is kept when a rename replaces it."""

from __future__ import annotations

from typing import Any

import pytest

from contract import names
from contract.iam import policies as iam
from tests.infra.synth import resources, stack_template, synth

STREAM: dict[str, Any] = {"stream": "new-and-old"}
ACCOUNT = "111122223333"
STREAM_WEST = f"arn:aws:dynamodb:us-west-2:{ACCOUNT}:table/items-dev/stream/2026-01-01T00:00:00.000"


def _buckets(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each of the stack's buckets by what it holds (BlobBucket, FailureBucket)."""
    found = resources(template, "AWS::S3::Bucket")
    return {kind: next(v for k, v in found.items() if kind in k) for kind in ("BlobBucket", "FailureBucket")}


def test_an_environment_agnostic_stack_names_its_buckets_with_the_pseudo_parameters() -> None:
    # GIVEN the default bucket_names (exact) and no account or region binding
    _, template, _ = synth(**STREAM)
    # THEN each bucket's name is the table's, the stack's account and region, and what it holds
    for kind, suffix in (("BlobBucket", "blobs"), ("FailureBucket", "failures")):
        assert _buckets(template)[kind]["Properties"]["BucketName"] == {
            "Fn::Join": [
                "",
                ["items-dev-", {"Ref": "AWS::AccountId"}, "-", {"Ref": "AWS::Region"}, f"-{suffix}"],
            ]
        }


def test_a_bound_region_is_spelled_out_and_the_name_is_the_one_the_policies_name() -> None:
    # GIVEN an environment bound to a region
    config, template, _ = synth(region="eu-west-1", **STREAM)
    buckets = _buckets(template)
    # THEN its names carry it; resolved with the account, they are the names `doctable policy` prints
    target = iam.Target(config, ACCOUNT, "eu-west-1")
    for kind, expected in (("BlobBucket", target.blob_bucket), ("FailureBucket", target.failure_bucket)):
        parts = buckets[kind]["Properties"]["BucketName"]["Fn::Join"][1]
        resolved = "".join(ACCOUNT if part == {"Ref": "AWS::AccountId"} else part for part in parts)
        assert resolved == expected


def test_generated_names_are_cloudformations() -> None:
    _, template, _ = synth(bucket_names="generated", **STREAM)
    assert all("BucketName" not in b["Properties"] for b in _buckets(template).values())


@pytest.mark.parametrize(
    "knobs",
    [STREAM, {**STREAM, "bucket_names": "generated"}, {**STREAM, "pitr": "on", "tier": "uat", "env": "uat"}],
    ids=["exact", "generated", "retained-tier"],
)
def test_a_replaced_bucket_is_kept_with_its_objects(knobs: dict[str, Any]) -> None:
    # GIVEN any naming and tier  THEN a bucket replaced by a rename stays (UpdateReplacePolicy Retain), while its
    # deletion with the stack follows the tier (RETAIN in uat and prod)
    config, template, _ = synth(**knobs)
    for bucket in _buckets(template).values():
        assert bucket["UpdateReplacePolicy"] == "Retain"
        assert bucket["DeletionPolicy"] == ("Retain" if config.retain_on_delete else "Delete")


def test_a_borrowed_blob_bucket_keeps_its_name_and_the_failure_bucket_gets_the_exact_one() -> None:
    _, template, _ = synth(blob_bucket="my-blobs", **STREAM)
    (failure,) = resources(template, "AWS::S3::Bucket").values()
    assert failure["Properties"]["BucketName"]["Fn::Join"][1][-1] == f"-{names.FAILURE_BUCKET_SUFFIX}"


def test_a_replica_regions_stack_has_no_bucket() -> None:
    # GIVEN a global table whose replica consumer deletes nothing  THEN its stack holds no bucket to name
    config, _, outdir = synth(
        region="eu-west-1",
        context={"replica_streams": {"us-west-2": STREAM_WEST}},
        replicas="us-west-2",
        **STREAM,
    )
    assert resources(stack_template(outdir, config.replica_stack_name("us-west-2")), "AWS::S3::Bucket") == {}
