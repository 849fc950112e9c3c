"""`doctable verify`: the contract's pure pieces, and whole runs against a stack-shaped fixture in moto."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from botocore.stub import Stubber

from contract import names
from doctable.aws import Aws
from doctable.ops import verify_record as v
from doctable.ops.context import Deployment, describe_stack
from doctable.ops.render import Progress
from doctable.ops.verify import items, proof
from doctable.ops.verify.checks import Verifier
from tests.support import ops as ot


def deployed(aws: Aws, **knobs: str) -> Deployment:
    config = ot.config_of(**knobs)
    ot.deploy(aws.client, config)
    return describe_stack(aws, config)


def run(aws: Aws, deployment: Deployment, **kwargs: Any) -> dict[str, v.Row]:
    quiet = Progress(quiet=True, sleep=lambda s: None)
    rows = Verifier(aws, deployment, progress=quiet, timeout=kwargs.pop("timeout", 2), **kwargs).run()
    return {row.id: row for row in rows}


def scan_all(aws: Aws, table: str) -> list[dict[str, Any]]:
    return aws.client("dynamodb").scan(TableName=table, ConsistentRead=True)["Items"]


# ------------------------------------------------------------------------------------------ pure pieces
def test_canonical_ignores_set_order_and_number_spelling() -> None:
    # GIVEN an item and the same item as DynamoDB may return it (sets reordered, numbers normalized)
    want = {"s": {"SS": ["b", "a"]}, "n": {"N": "1.50"}, "ns": {"NS": ["2", "10"]}, "b": {"B": b"\x00"}}
    got = {
        "s": {"SS": ["a", "b"]},
        "n": {"N": "1.5"},
        "ns": {"NS": ["10", "2"]},
        "b": {"B": bytearray(b"\x00")},
    }
    # THEN they compare equal, and a real difference is named
    assert items.item_differences(want, got) == []
    assert items.item_differences(want, {**got, "n": {"N": "2"}}) == ["n differs"]
    assert items.item_differences(want, {k: x for k, x in got.items() if k != "s"}) == ["s missing"]
    assert items.item_differences(want, None) == ["no item returned"]


def test_test_item_exercises_every_attribute_type() -> None:
    item = items.test_item("pk1", "sk1", time.time())
    kinds = {next(iter(value)) for value in item.values()}
    assert {"S", "N", "B", "SS", "NS", "BS", "M", "L", "BOOL", "NULL"} <= kinds


def _line(first: str, last: str, table: str = "items-dev", count: int = 2) -> str:
    return json.dumps(
        {
            "level": "INFO",
            "message": names.PROOF_LOG_MESSAGE,
            "record_count": count,
            "first_sequence_number": first,
            "last_sequence_number": last,
            "table_name": table,
        }
    )


def test_proof_line_parsing_and_coverage() -> None:
    # GIVEN a Powertools JSON line (possibly behind a text prefix) and other lines
    line = proof.parse_proof_line("2026-01-01T00:00:00Z\t" + _line("100", "200"))
    assert line is not None
    assert proof.parse_proof_line('{"message": "record_cleaned"}') is None
    assert proof.parse_proof_line("START RequestId: 1") is None
    # THEN a sequence number inside [first..last] is covered, one outside is not (numbers, not strings)
    assert proof.covers(line, "items-dev", "150", event_ms=0, write_ms=10**12)
    assert not proof.covers(line, "items-dev", "99", event_ms=10**13, write_ms=0)
    assert proof.covers(proof.parse_proof_line(_line("9", "11")) or {}, "items-dev", "10", 0, 10**12)
    # AND another table's line never covers; without a sequence number, any later line does
    assert not proof.covers(line, "other-dev", "150", 0, 0)
    assert proof.covers(line, "items-dev", None, event_ms=5_000, write_ms=5_000)
    assert not proof.covers(line, "items-dev", None, event_ms=0, write_ms=60_000)


# ------------------------------------------------------------------------------------------- whole runs
def test_flat_shape_passes_and_skips_what_does_not_apply(moto_env: Aws) -> None:
    # GIVEN the all-flat shape (no gsi/ttl/stream/pitr, no consumer)
    deployment = deployed(moto_env)
    # WHEN verify runs
    rows = run(moto_env, deployment)
    # THEN every applicable check passes and the rest are SKIPs with a reason
    assert {k: r.result for k, r in rows.items() if r.result == v.FAIL} == {}
    for skipped in ("gsi-query", "mapping", "mapping-tags", "stream-delivery", "blob-cleanup"):
        assert rows[skipped].result == v.SKIP and rows[skipped].observed.startswith("skipped: ")
    assert rows["round-trip"].observed.startswith("attribute-identical")
    assert rows["ttl"].observed == "DISABLED" and rows["pitr"].observed == "DISABLED"
    # AND it left nothing behind
    assert scan_all(moto_env, "items-dev") == []


def test_gsi_ttl_pitr_stream_shape_passes(moto_env: Aws) -> None:
    # GIVEN every table knob on, stream only (consumer=none)
    deployment = deployed(moto_env, gsi="gsi1", ttl="on", pitr="on", stream="new-and-old", consumer="none")
    rows = run(moto_env, deployment)
    assert {k: r.observed for k, r in rows.items() if r.result == v.FAIL} == {}
    assert rows["gsi-query"].result == v.PASS and rows["gsi-query"].observed.startswith("count 1")
    assert rows["ttl"].observed == f"ENABLED on {names.TTL_ATTRIBUTE}"
    assert rows["stream"].observed == "NEW_AND_OLD_IMAGES"
    assert "consumer=none" in rows["stream-delivery"].observed
    assert scan_all(moto_env, "items-dev") == []


def test_drift_fails_naming_the_check_and_still_cleans_up(moto_env: Aws) -> None:
    # GIVEN a ttl=on, pitr=on table whose TTL and PITR were switched off and a tag removed behind the stack
    deployment = deployed(moto_env, ttl="on", pitr="on")
    ddb = moto_env.client("dynamodb")
    ddb.update_time_to_live(
        TableName="items-dev",
        TimeToLiveSpecification={"Enabled": False, "AttributeName": names.TTL_ATTRIBUTE},
    )
    ddb.update_continuous_backups(
        TableName="items-dev", PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
    )
    arn = deployment.outputs[names.OUT_TABLE_ARN]
    ddb.untag_resource(ResourceArn=arn, TagKeys=["Environment"])
    # WHEN verify runs
    rows = run(moto_env, deployment)
    record = v.verify_record(deployment, list(rows.values()), "t0", "run")
    # THEN exactly those checks fail, each naming what it saw
    assert sorted(k for k, r in rows.items() if r.result == v.FAIL) == ["pitr", "table-tags", "ttl"]
    assert rows["ttl"].observed.startswith("DISABLED")
    assert "Environment=dev" in rows["table-tags"].observed
    assert not record["passed"] and "failing: ttl, pitr, table-tags" in v.summary_line(record)
    # AND the test items were removed anyway
    assert scan_all(moto_env, "items-dev") == []


def test_a_deleted_table_fails_every_data_check_without_a_traceback(moto_env: Aws) -> None:
    deployment = deployed(moto_env)
    moto_env.client("dynamodb").delete_table(TableName="items-dev")
    rows = run(moto_env, deployment)
    assert rows["shape"].result == v.FAIL and "not found" in rows["shape"].observed
    assert rows["round-trip"].result == v.FAIL


def test_deletion_protection_is_checked_against_the_environment(moto_env: Aws) -> None:
    # GIVEN prod (declares deletion protection) whose protection was lifted behind the stack
    deployment = deployed(moto_env, env="prod")
    assert run(moto_env, deployment)["deletion-protection"].result == v.PASS
    moto_env.client("dynamodb").update_table(TableName="items-prod", DeletionProtectionEnabled=False)
    row = run(moto_env, deployment)["deletion-protection"]
    assert row.result == v.FAIL and row.observed.startswith("disabled")


def capture(verifier: Verifier, write: Callable[[], None]) -> str | None:
    """The nudge write through the sequence-capturing path, as the delivery check makes it."""
    return proof.capture_sequence(
        verifier.aws,
        verifier._describe().get("LatestStreamArn"),
        write,
        {names.PARTITION_KEY: verifier.pk, names.SORT_KEY: "nudge"},
        bound=verifier.timeout,
        progress=verifier.progress,
    )


def find(verifier: Verifier, group: str, sequence: str | None, write_ms: int) -> dict[str, Any] | None:
    return proof.find_proof(verifier.aws, group, verifier.table, sequence, write_ms)


def _stub_stream(verifier: Verifier, stream_arn: str, sequence: str) -> Stubber:
    """moto's in-process mock has no DynamoDB Streams API: stub the three calls the capture makes."""
    client = verifier.aws.client("dynamodbstreams")
    stubber = Stubber(client)
    shard_id = "shardId-00000001700000000000-abcdef01"
    shard = {"ShardId": shard_id, "SequenceNumberRange": {"StartingSequenceNumber": "100000000000000000001"}}
    stubber.add_response(
        "describe_stream",
        {"StreamDescription": {"StreamArn": stream_arn, "Shards": [shard]}},
        {"StreamArn": stream_arn},
    )
    stubber.add_response(
        "get_shard_iterator",
        {"ShardIterator": "i" * 10},
        {"StreamArn": stream_arn, "ShardId": shard_id, "ShardIteratorType": "LATEST"},
    )
    other = {
        "Keys": {"pk": {"S": "someone-else"}, "sk": {"S": "x"}},
        "SequenceNumber": "100000000000000000005",
    }
    ours = {"Keys": {"pk": {"S": verifier.pk}, "sk": {"S": "nudge"}}, "SequenceNumber": sequence}
    stubber.add_response(
        "get_records",
        {"Records": [{"dynamodb": other}, {"dynamodb": ours}], "NextShardIterator": "j" * 10},
        {"ShardIterator": "i" * 10, "Limit": 1000},
    )
    stubber.activate()
    return stubber


def test_stream_proof_reads_our_sequence_number_and_finds_the_covering_line(moto_env: Aws) -> None:
    # GIVEN a table with a stream, and a consumer log group
    deployment = deployed(moto_env, stream="new-and-old", consumer="none")
    logs = moto_env.client("logs")
    logs.create_log_group(logGroupName="consumer")
    logs.create_log_stream(logGroupName="consumer", logStreamName="s")
    verifier = Verifier(moto_env, deployment, progress=Progress(quiet=True), timeout=2)
    stream_arn = deployment.outputs[names.OUT_STREAM_ARN]
    seq = 4_000_000_000_000_000_000_123
    stubber = _stub_stream(verifier, stream_arn, str(seq))
    write_ms = int(time.time() * 1000)
    # WHEN the nudge is written through the sequence-capturing path
    sequence = capture(verifier, lambda: verifier._put({**verifier._key("nudge"), "kind": {"S": "nudge"}}))
    stubber.assert_no_pending_responses()
    # THEN its own record's sequence number is known (not the other writer's)
    assert sequence == str(seq)
    # AND only a proof line whose range covers it is accepted
    assert find(verifier, "consumer", sequence, write_ms) is None
    logs.put_log_events(
        logGroupName="consumer",
        logStreamName="s",
        logEvents=[
            {"timestamp": write_ms + 1, "message": _line(str(seq + 1), str(seq + 5))},
            {"timestamp": write_ms + 2, "message": "START RequestId: x"},
        ],
    )
    assert find(verifier, "consumer", sequence, write_ms) is None
    logs.put_log_events(
        logGroupName="consumer",
        logStreamName="s",
        logEvents=[{"timestamp": write_ms + 3, "message": _line(str(seq - 1), str(seq + 1))}],
    )
    found = find(verifier, "consumer", sequence, write_ms)
    assert found is not None and found["record_count"] == 2
    verifier._clean_up()
    assert scan_all(moto_env, "items-dev") == []


def test_without_the_streams_api_the_proof_falls_back_to_time(moto_env: Aws) -> None:
    # GIVEN moto in-process (DescribeStream is not implemented there): the capture cannot read the stream
    deployment = deployed(moto_env, stream="new-and-old", consumer="none")
    logs = moto_env.client("logs")
    logs.create_log_group(logGroupName="consumer")
    logs.create_log_stream(logGroupName="consumer", logStreamName="s")
    verifier = Verifier(moto_env, deployment, progress=Progress(quiet=True), timeout=2)
    write_ms = int(time.time() * 1000)
    sequence = capture(verifier, lambda: verifier._put(verifier._key("nudge")))
    # THEN the write still happened, the sequence is unknown, and any later proof line of our table counts
    assert sequence is None
    assert len(scan_all(moto_env, "items-dev")) == 1
    logs.put_log_events(
        logGroupName="consumer",
        logStreamName="s",
        logEvents=[{"timestamp": write_ms + 10, "message": _line("1", "2", table="other-dev")}],
    )
    assert find(verifier, "consumer", None, write_ms) is None
    logs.put_log_events(
        logGroupName="consumer",
        logStreamName="s",
        logEvents=[{"timestamp": write_ms + 20, "message": _line("1", "2")}],
    )
    assert find(verifier, "consumer", None, write_ms) is not None
    verifier._clean_up()
    assert scan_all(moto_env, "items-dev") == []


def test_missing_log_group_is_not_an_error_yet(moto_env: Aws) -> None:
    deployment = deployed(moto_env, stream="new-and-old", consumer="none")
    verifier = Verifier(moto_env, deployment, progress=Progress(quiet=True), timeout=1)
    assert find(verifier, "never-created", None, 0) is None


def test_record_round_trips_through_the_state_directory(moto_env: Aws, tmp_path: Any) -> None:
    deployment = deployed(moto_env)
    rows = list(run(moto_env, deployment).values())
    record = v.verify_record(deployment, rows, "2026-01-01T00:00:00Z", "r1")
    path = v.save_record(tmp_path, record)
    assert path.name == "verify-items-dev.json"
    loaded = v.load_record(tmp_path, "items-dev")
    assert loaded is not None and loaded["passed"] and loaded["stack_id"] == deployment.stack_id
    assert "stack healthy" in v.render_rows(loaded["rows"])


def test_progress_wait_is_bounded_and_reports(capsys: pytest.CaptureFixture[str]) -> None:
    clock = iter(range(0, 1000, 3))
    now = [0.0]

    def tick() -> float:
        now[0] = float(next(clock))
        return now[0]

    progress = Progress("t", sleep=lambda s: None, clock=tick, every=5)
    value, seconds = progress.wait("nothing", lambda: None, timeout=20)
    assert value is None and seconds >= 20
    err = capsys.readouterr().err
    assert "waiting for nothing" in err and "gave up" in err
