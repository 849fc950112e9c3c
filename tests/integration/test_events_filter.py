"""events=cleanup deployed with the real CDK CLI into the local AWS: the mapping carries the filter and its
metrics, an INSERT-only workload invokes the consumer zero times, a delete of a record with blobs still cleans
them up, `doctable verify` passes (its nudge is a REMOVE), and reconcile restores a filter removed behind the
stack. The local AWS refuses a filter pattern Lambda refuses."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from contract import names
from contract.shape import cleanup_filter_patterns
from tests.support import localaws as lt
from tests.support.cli import context_args, run_doctable

pytestmark = pytest.mark.integration

KNOBS = {"stream": "new-and-old", "events": "cleanup", "table_base": "evfilter", "deploy_target": "local"}


def test_cleanup_filter_end_to_end(
    local_aws: lt.LocalAWS, deploy: Callable[..., lt.Deployed], tmp_path: Path
) -> None:
    # GIVEN a stack deployed with events=cleanup
    stack = deploy(KNOBS)
    out = stack.outputs
    uuid, table, bucket = out[names.OUT_MAPPING_UUID], out[names.OUT_TABLE_NAME], out[names.OUT_BLOB_BUCKET]
    lam, ddb, s3 = local_aws.client("lambda"), local_aws.client("dynamodb"), local_aws.client("s3")
    mapping = lam.get_event_source_mapping(UUID=uuid)
    # THEN GetEventSourceMapping returns the filter and the metrics as deployed
    assert [f["Pattern"] for f in mapping["FilterCriteria"]["Filters"]] == list(cleanup_filter_patterns())
    assert mapping["MetricsConfig"] == {"Metrics": ["EventCount"]}
    listed = lam.list_event_source_mappings(FunctionName=mapping["FunctionArn"])["EventSourceMappings"]
    assert [m.get("FilterCriteria") for m in listed if m["UUID"] == uuid] == [mapping["FilterCriteria"]]
    lt.wait_for(lambda: local_aws.faults.mappings()[uuid]["pending"] == 0, what="the mapping to catch up")
    before = local_aws.faults.mappings()[uuid]

    # WHEN an INSERT-only workload runs (items with blobs among them), then a MODIFY of an item without blobs
    for i in range(6):
        key = f"doc-{i}/v1/blob.bin"
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
        ddb.put_item(
            TableName=table,
            Item={"pk": {"S": f"doc-{i}"}, "sk": {"S": "v1"}, "blobs": {"L": [{"S": key}]}},
        )
    ddb.put_item(TableName=table, Item={"pk": {"S": "plain"}, "sk": {"S": "v1"}})
    ddb.put_item(TableName=table, Item={"pk": {"S": "plain"}, "sk": {"S": "v1"}, "title": {"S": "changed"}})
    after = lt.wait_for(
        lambda: (
            (p := local_aws.faults.mappings()[uuid])["pending"] == 0
            and p["filtered_out"] >= before["filtered_out"] + 8
            and p
        ),
        what="the poller to pass the 8 records",
    )
    lt.polled_past(local_aws, uuid)
    # THEN the consumer was invoked zero times: every record was filtered out, none is pending
    assert local_aws.faults.mappings()[uuid]["invocations"] == before["invocations"]
    assert after["filtered_out"] - before["filtered_out"] == 8

    # WHEN a record with blobs is deleted
    since = lt.now_ms()
    ddb.delete_item(TableName=table, Key={"pk": {"S": "doc-3"}, "sk": {"S": "v1"}})
    # THEN its blob is cleaned up (the REMOVE passes the filter), and only it
    lt.wait_for(
        lambda: not s3.list_objects_v2(Bucket=bucket, Prefix="doc-3/").get("KeyCount"),
        timeout=60,
        what="the deleted record's blob to go",
    )
    assert s3.list_objects_v2(Bucket=bucket, Prefix="doc-2/")["KeyCount"] == 1
    assert local_aws.faults.mappings()[uuid]["invocations"] > before["invocations"]
    # AND the proof line covers what arrived: the one REMOVE
    lines = lt.wait_for(
        lambda: lt.proof_lines(local_aws.client("logs"), out[names.OUT_CONSUMER_LOG_GROUP], since),
        what="the proof line of the delete",
    )
    assert sum(line.count for line in lines) == 1
    # AND the EventCount metrics reached CloudWatch under the mapping's UUID
    metric_names = {
        m["MetricName"]
        for m in local_aws.client("cloudwatch").list_metrics(
            Namespace="AWS/Lambda", Dimensions=[{"Name": "EventSourceMappingUUID", "Value": uuid}]
        )["Metrics"]
    }
    assert {"PolledEventCount", "FilteredOutEventCount", "InvokedEventCount"} <= metric_names

    # WHEN doctable verify runs with the knobs THEN it passes: its nudge is a REMOVE the filter passes
    env = {**local_aws.env, "DOCTABLE_STATE_DIR": str(tmp_path / "state")}
    verify = run_doctable(["verify", "--timeout", "60", *context_args(KNOBS)], env=env, timeout=600)
    assert verify.code == 0, verify.out + verify.err
    assert "covers the nudge delete (REMOVE)" in verify.out

    # WHEN the filter is removed behind the stack THEN reconcile finds and restores it
    lam.update_event_source_mapping(UUID=uuid, FilterCriteria={})
    assert "FilterCriteria" not in lam.get_event_source_mapping(UUID=uuid)
    dry = run_doctable(["reconcile", *context_args(KNOBS)], env=env, timeout=300)
    assert dry.code == 1 and "mapping FilterCriteria" in dry.out, dry.out + dry.err
    applied = run_doctable(["reconcile", "--apply", *context_args(KNOBS)], env=env, timeout=300)
    assert applied.code == 0, applied.out + applied.err
    restored = lam.get_event_source_mapping(UUID=uuid)["FilterCriteria"]
    assert [f["Pattern"] for f in restored["Filters"]] == list(cleanup_filter_patterns())

    # AND a pattern Lambda refuses is refused with its error
    with pytest.raises(ClientError) as refused:
        lam.update_event_source_mapping(
            UUID=uuid, FilterCriteria={"Filters": [{"Pattern": '{"eventName": [{"wildcard": "IN*"}]}'}]}
        )
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValueException"
    assert refused.value.response["Error"]["Message"] == "Invalid filter pattern definition."
