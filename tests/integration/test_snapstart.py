"""snapstart=on deployed with the real CDK CLI into the local AWS: the function snapshots published versions, the
mapping's alias targets the version published with the stack, the consumer that reacts to a delete is that
version (its environment initialized as a SnapStart one), verify passes; a day-2 change of the function publishes
the next version, the alias moves to it, the replaced version is deleted and the consumer still reacts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from contract import names
from tests.support import localaws as lt
from tests.support.cli import context_args, run_doctable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

KNOBS = {"env": "dev", "table_base": "snap", "stream": "new-and-old", "snapstart": "on"}


def _reacts(aws: lt.LocalAWS, outputs: dict[str, str], pk: str) -> None:
    """An item listing two blobs is deleted; the consumer deletes both."""
    s3, ddb = aws.client("s3"), aws.client("dynamodb")
    bucket, table = outputs[names.OUT_BLOB_BUCKET], outputs[names.OUT_TABLE_NAME]
    keys = [f"{pk}/v1/{n}.bin" for n in range(2)]
    for key in keys:
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    item = {"pk": {"S": pk}, "sk": {"S": "v1"}, "blobs": {"L": [{"S": key} for key in keys]}}
    ddb.put_item(TableName=table, Item=item)
    ddb.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})
    lt.wait_for(
        lambda: s3.list_objects_v2(Bucket=bucket, Prefix=f"{pk}/").get("KeyCount") == 0,
        timeout=120,
        what=f"the consumer to delete the blobs of {pk}",
    )


def _streams_of_version(aws: lt.LocalAWS, function: str, version: str) -> list[str]:
    logs = aws.client("logs")
    group = aws.client("lambda").get_function_configuration(FunctionName=function)["LoggingConfig"][
        "LogGroup"
    ]
    streams = logs.describe_log_streams(logGroupName=group)["logStreams"]
    return [s["logStreamName"] for s in streams if f"[{version}]" in s["logStreamName"]]


def _messages(aws: lt.LocalAWS, function: str, stream: str) -> list[str]:
    logs = aws.client("logs")
    group = aws.client("lambda").get_function_configuration(FunctionName=function)["LoggingConfig"][
        "LogGroup"
    ]
    events = logs.get_log_events(logGroupName=group, logStreamName=stream, startFromHead=True)["events"]
    return [e["message"] for e in events]


def test_snapstart_consumer_runs_its_published_version_and_moves_on_day_2(
    local_aws: lt.LocalAWS, deploy: Callable[..., lt.Deployed], tmp_path: Path
) -> None:
    lam = local_aws.client("lambda")
    # GIVEN the stack deployed with snapstart=on
    stack = deploy(KNOBS)
    mapping = lam.get_event_source_mapping(UUID=stack.outputs[names.OUT_MAPPING_UUID])
    alias_arn = mapping["FunctionArn"]
    function, alias_name = alias_arn.split(":")[6], alias_arn.split(":")[7]
    # THEN the mapping targets an alias of a published version, snapshotted (SnapStart On), $LATEST is not
    alias = lam.get_alias(FunctionName=function, Name=alias_name)
    first = alias["FunctionVersion"]
    assert first.isdigit(), alias
    published = lam.get_function_configuration(FunctionName=function, Qualifier=first)["SnapStart"]
    assert published == {"ApplyOn": "PublishedVersions", "OptimizationStatus": "On"}
    assert lam.get_function_configuration(FunctionName=function)["SnapStart"]["OptimizationStatus"] == "Off"

    # WHEN an item is deleted THEN the consumer deletes its blobs, run as that version (its log stream)
    _reacts(local_aws, stack.outputs, "doc-first")
    lt.wait_for(
        lambda: any(
            names.PROOF_LOG_MESSAGE in m
            for stream in _streams_of_version(local_aws, function, first)
            for m in _messages(local_aws, function, stream)
        ),
        what="the proof line in the version's logs",
    )

    # AND verify passes, its consumer row naming SnapStart
    env = {**local_aws.env, "DOCTABLE_STATE_DIR": str(tmp_path / "state")}
    result = run_doctable(["verify", "--timeout", "60", *context_args(KNOBS)], env=env, timeout=600)
    assert result.code == 0, result.out + result.err
    assert "SnapStart PublishedVersions" in result.out

    # WHEN (day 2) the function changes
    changed = deploy({**KNOBS, "memory": "1024"})
    # THEN the next version is published and the alias moved to it; the replaced version is gone
    second = lam.get_alias(FunctionName=function, Name=alias_name)["FunctionVersion"]
    assert second.isdigit() and int(second) > int(first)
    assert lam.get_function_configuration(FunctionName=function, Qualifier=second)["MemorySize"] == 1024
    versions = [v["Version"] for v in lam.list_versions_by_function(FunctionName=function)["Versions"]]
    assert versions == ["$LATEST", second]
    # AND the consumer still reacts, as the new version
    _reacts(local_aws, changed.outputs, "doc-second")
    assert lt.wait_for(
        lambda: _streams_of_version(local_aws, function, second), what="the new version's logs"
    )
