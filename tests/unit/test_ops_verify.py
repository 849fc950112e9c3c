"""`doctable verify`: the contract's pure pieces, and whole runs against a stack-shaped fixture in moto."""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.stub import Stubber

from contract import names
from doctable import api
from doctable.cli import build_parser, main
from doctable.core import ledger as lg
from doctable.core.aws import Aws
from doctable.core.context import describe_stack
from doctable.core.deployment import Deployment
from doctable.core.render import Progress
from doctable.verify import items, proof
from doctable.verify import record as v
from doctable.verify.checks import Verifier, expectations
from doctable.verify.consumer import consumer_checks
from doctable.verify.expect import WRITING_CHECKS
from tests.support import ops as ot


def deployed(aws: Aws, **knobs: str) -> Deployment:
    config = ot.config_of(**knobs)
    ot.deploy(aws.client, config)
    return describe_stack(aws, config)


def run(aws: Aws, deployment: Deployment, **kwargs: Any) -> dict[str, v.Row]:
    quiet = Progress(quiet=True, sleep=lambda s: None)
    rows = Verifier(aws, deployment, progress=quiet, timeout=kwargs.pop("timeout", 2), **kwargs).run()
    return {row.id: row for row in rows}


BORROWED = "arn:aws:lambda:us-east-1:123456789012:function:their-consumer"


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
    assert rows["gsi-query"].result == v.PASS and rows["gsi-query"].observed.startswith("gsi1 count 1")
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
    path = lg.save_record(tmp_path, record)
    assert path.name == "verify-items-dev.json"
    loaded = lg.load_record(tmp_path, "items-dev")
    assert loaded is not None and loaded["passed"] and loaded["stack_id"] == deployment.stack_id
    assert (loaded["read_only"], loaded["skipped"]) == (False, [])  # a full run skips no check
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


# ------------------------------------------------------------------------------- the mapping's settings
def mapping_row(aws: Aws, deployment: Deployment) -> v.Row:
    """The mapping check alone (moto's in-process mapping would invoke the function on the run's writes)."""
    verifier = Verifier(aws, deployment, progress=Progress(quiet=True, sleep=lambda s: None), timeout=2)
    return verifier._run_check("mapping", "mapping enabled", "", verifier._check_mapping)


def test_mapping_settings_changed_behind_the_stack_fail_verify(moto_env: Aws) -> None:
    # GIVEN a mapping whose batch size, retries, bisect, response types and destination were changed out of band
    config = ot.config_of(stream="new-and-old")
    outputs = ot.deploy_with_mapping(moto_env.client, config)
    deployment = describe_stack(moto_env, config)
    assert mapping_row(moto_env, deployment).result == v.PASS
    moto_env.client("lambda").update_event_source_mapping(
        UUID=outputs[names.OUT_MAPPING_UUID],
        BatchSize=1,
        MaximumRetryAttempts=0,
        BisectBatchOnFunctionError=False,
        FunctionResponseTypes=[],
        DestinationConfig={"OnFailure": {}},
    )
    # WHEN verify runs
    row = mapping_row(moto_env, deployment)
    # THEN the mapping row fails naming each setting with its declared value
    assert row.result == v.FAIL
    for words in (
        "BatchSize 1, declared 10",
        "MaximumRetryAttempts 0, declared 5",
        "BisectBatchOnFunctionError False, declared True",
        "FunctionResponseTypes [], declared ['ReportBatchItemFailures']",
        f"DestinationConfig.OnFailure none, declared arn:aws:s3:::{ot.FAILURE_BUCKET}",
    ):
        assert words in row.observed


def consumer_row(aws: Aws, deployment: Deployment) -> v.Row:
    """The consumer-config check alone."""
    verifier = Verifier(aws, deployment, progress=Progress(quiet=True, sleep=lambda s: None), timeout=2)
    ((row_id, label, expected),) = verifier.expect.consumer
    check = consumer_checks(aws, deployment)[row_id]
    return verifier._run_check(row_id, label, expected, check)


def test_consumer_settings_changed_behind_the_stack_fail_verify(moto_env: Aws) -> None:
    # GIVEN the built-in consumer as the knobs declare it (blob_key_reuse=never, 512 MB)
    config = ot.config_of(stream="new-and-old", blob_key_reuse="never", memory="512")
    ot.deploy_with_mapping(moto_env.client, config)
    deployment = describe_stack(moto_env, config)
    row = consumer_row(moto_env, deployment)
    assert row.result == v.PASS, row.observed
    assert "512 MB" in row.expected and "BLOB_KEY_REUSE='never'" in row.expected
    # WHEN its memory, timeout and key-reuse mode are changed out of band, and a variable is removed
    lam = moto_env.client("lambda")
    env = lam.get_function_configuration(FunctionName="consumer")["Environment"]["Variables"]
    env[names.ENV_BLOB_KEY_REUSE] = "guarded"
    del env[names.ENV_BLOB_ROOT]
    lam.update_function_configuration(
        FunctionName="consumer", MemorySize=128, Timeout=3, Environment={"Variables": env}
    )
    # THEN the row fails naming each with its declared value
    row = consumer_row(moto_env, deployment)
    assert row.result == v.FAIL
    for words in (
        "MemorySize 128 (declared 512)",
        "Timeout 3 (declared 30)",
        "BLOB_KEY_REUSE 'guarded' (declared 'never')",
        "BLOB_ROOT unset (declared '')",
    ):
        assert words in row.observed


def test_snapstart_declared_but_not_what_the_mapping_invokes_fails_verify(moto_env: Aws) -> None:
    # GIVEN snapstart=on declared, and a mapping that invokes a function with no snapshot (moto's, unpublished)
    config = ot.config_of(stream="new-and-old", snapstart="on")
    ot.deploy_with_mapping(moto_env.client, config)
    row = consumer_row(moto_env, describe_stack(moto_env, config))
    # THEN the consumer row fails, naming what was invoked and what is declared
    assert "SnapStart PublishedVersions" in row.expected
    assert row.result == v.FAIL
    assert "SnapStart 'None/Off' (declared 'PublishedVersions/On')" in row.observed


def test_no_consumer_row_without_the_built_in_consumer() -> None:
    # GIVEN a stream read by no consumer, and one read by a function of yours
    for knobs in (
        {"stream": "new-and-old", "consumer": "none"},
        {"stream": "new-and-old", "consumer": BORROWED},
    ):
        # THEN verify has no consumer-config row: the function is not the stack's
        assert expectations(ot.config_of(**knobs)).consumer == ()


def test_a_destination_other_than_the_failure_bucket_fails(moto_env: Aws) -> None:
    config = ot.config_of(stream="new-and-old")
    outputs = ot.deploy_with_mapping(moto_env.client, config)
    moto_env.client("lambda").update_event_source_mapping(
        UUID=outputs[names.OUT_MAPPING_UUID],
        DestinationConfig={"OnFailure": {"Destination": "arn:aws:s3:::someone-elses"}},
    )
    row = mapping_row(moto_env, describe_stack(moto_env, config))
    assert row.result == v.FAIL and "arn:aws:s3:::someone-elses" in row.observed


# ------------------------------------------------------------------------------------------ ownership
def test_verify_refuses_a_table_tagged_as_someone_elses_before_writing(
    moto_env: Aws, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the stack's table re-tagged as another owner's
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(tmp_path))
    ot.deploy(moto_env.client, ot.config_of())
    arn = moto_env.client("dynamodb").describe_table(TableName="items-dev")["Table"]["TableArn"]
    moto_env.client("dynamodb").tag_resource(
        ResourceArn=arn, Tags=[{"Key": "ManagedBy", "Value": "payments"}]
    )
    # WHEN verify runs THEN one line, exit 3, and not one item written
    assert main(["verify", "-q", "--timeout", "2"]) == 3  # refused by a safety gate
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "refusing to write verify's test items" in err[0]
    assert scan_all(moto_env, "items-dev") == []


def test_verify_refuses_a_failed_create_beside_a_retained_table(
    moto_env: Aws, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a stack that reports ROLLBACK_COMPLETE while a same-named table stands
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(tmp_path))
    ot.deploy(moto_env.client, ot.config_of())
    real = describe_stack

    def rolled_back(aws: Aws, config: Any) -> Deployment:
        deployment = real(aws, config)
        deployment.stack_status, deployment.outputs = "ROLLBACK_COMPLETE", {}
        return deployment

    monkeypatch.setattr("doctable.core.command.describe_stack", rolled_back)
    assert main(["verify", "-q", "--timeout", "2"]) == 3  # refused by a safety gate
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ROLLBACK_COMPLETE" in err[0] and "owns no table" in err[0]
    assert scan_all(moto_env, "items-dev") == []


# -------------------------------------------------------------------------------------- the LATEST settle
def _settling(moto_env: Aws, position: str, age: float) -> tuple[Verifier, list[str], list[float]]:
    said: list[str] = []
    slept: list[float] = []
    clock = [0.0]

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    progress = Progress(stream=None, sleep=sleep, clock=lambda: clock[0])
    progress.say = said.append  # type: ignore[method-assign]
    now = 1_800_000_000.0
    deployment = deployed(moto_env, stream="new-and-old")
    verifier = Verifier(moto_env, deployment, settle=120, progress=progress, wall_clock=lambda: now)
    verifier._mapping = {
        "StartingPosition": position,
        "LastModified": datetime.fromtimestamp(now - age, tz=UTC),
    }
    return verifier, said, slept


def test_latest_settle_waits_only_what_is_left_and_counts_down(moto_env: Aws) -> None:
    # GIVEN a LATEST mapping changed 95 s ago (settle 120 s)
    verifier, said, slept = _settling(moto_env, "LATEST", age=95)
    # WHEN the settle runs
    result = verifier._settle()
    # THEN it waited the 25 s left, and its progress lines count down
    assert sum(slept) == pytest.approx(25)
    lefts = [line for line in said if "s left" in line]
    assert [line.rsplit(": ", 1)[1] for line in lefts] == ["25s left", "15s left", "5s left"]
    assert "waited 25s" in result


@pytest.mark.parametrize(("position", "age"), [("LATEST", 600), ("TRIM_HORIZON", 0)])
def test_no_settle_wait_when_settled_or_on_trim_horizon(moto_env: Aws, position: str, age: float) -> None:
    verifier, said, slept = _settling(moto_env, position, age)
    verifier._settle()
    assert slept == [] and said == []


# ---------------------------------------------------------------------------------------------- read-only
READ_VERBS = ("Describe", "Get", "List")
READ_ONLY_SKIPPED = [{"id": check, "reason": v.READ_ONLY} for check in WRITING_CHECKS]


def calls_made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every AWS call the commands' clients make from now on, as ``service:Operation``."""
    made: list[str] = []
    real = Aws.client

    def client(self: Aws, service: str) -> Any:
        found = real(self, service)
        found.meta.events.register(
            "before-call", lambda model, **_: made.append(f"{service}:{model.name}"), unique_id="calls-made"
        )
        return found

    monkeypatch.setattr(Aws, "client", client)
    return made


def test_read_only_runs_every_check_that_reads_and_calls_nothing_that_writes(
    moto_env: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a table with an index, TTL, PITR, a stream and the built-in consumer's mapping
    config = ot.config_of(gsi="gsi1", ttl="on", pitr="on", stream="new-and-old")
    ot.deploy_with_mapping(moto_env.client, config)
    deployment = describe_stack(moto_env, config)
    made = calls_made(monkeypatch)
    # WHEN verify runs read-only
    verifier = Verifier(moto_env, deployment, progress=Progress(quiet=True), timeout=2, read_only=True)
    rows = {row.id: row for row in verifier.run()}
    # THEN every check that only reads ran and none failed; the checks that write did not run
    every = [row_id for row_id, _, _ in expectations(config).rows()]
    assert list(rows) == [row_id for row_id in every if row_id not in WRITING_CHECKS]
    assert {k: r.observed for k, r in rows.items() if r.result == v.FAIL} == {}
    assert rows["mapping"].result == rows["consumer-config"].result == v.PASS
    assert [row_id for row_id, _, _ in verifier.skipped] == list(WRITING_CHECKS)
    # AND each AWS call it made reads: nothing written, invoked or deleted
    assert {
        "dynamodb:DescribeTable",
        "lambda:GetEventSourceMapping",
        "lambda:GetFunctionConfiguration",
    } <= set(made)
    assert all(call.split(":")[1].startswith(READ_VERBS) for call in made), made
    assert scan_all(moto_env, "items-dev") == []


def test_read_only_lists_each_skipped_check_by_its_id_in_text_and_json(
    moto_env: Aws, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a deployed stack
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(tmp_path))
    ot.deploy(moto_env.client, ot.config_of())
    # WHEN verify runs read-only with --json
    assert main(["verify", "--read-only", "--json", "-q", "--timeout", "2"]) == 0
    record = json.loads(capsys.readouterr().out)
    # THEN the record says read-only and lists every check that writes, by id, with its reason
    assert record["read_only"] is True and record["passed"] is True
    assert [{k: s[k] for k in ("id", "reason")} for s in record["skipped"]] == READ_ONLY_SKIPPED
    assert not {row["id"] for row in record["rows"]} & set(WRITING_CHECKS)
    # AND it is not kept for the ledger
    assert lg.load_record(tmp_path, "items-dev") is None
    # WHEN it runs read-only as text THEN one line per skipped check, and the verdict says read-only
    assert main(["verify", "--read-only", "-q", "--timeout", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    skipped = [line.split()[1].rstrip(":") for line in out if line.startswith("skipped ")]
    assert skipped == list(WRITING_CHECKS)
    assert any(line.startswith("verify (read-only) PASSED: items-dev") for line in out), out
    assert lg.load_record(tmp_path, "items-dev") is None


def test_the_read_only_flag_parses_and_is_off_by_default_and_in_the_deploys_verify() -> None:
    parser = build_parser()
    assert parser.parse_args(["verify", "--read-only"]).read_only is True
    assert parser.parse_args(["verify"]).read_only is False
    # the verify that closes a deploy (api.verify, called with the deploy's timeout alone) is the full contract
    assert inspect.signature(api.verify).parameters["read_only"].default is False
    assert (
        parser.parse_args(["deploy"]).verify_timeout
        == inspect.signature(api.verify).parameters["timeout"].default
    )


@pytest.mark.parametrize("order", [["--read-only", "--ledger"], ["--ledger", "--read-only"]])
def test_read_only_with_ledger_is_one_usage_line_before_any_aws_call(
    order: list[str],
    moto_env: Aws,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a deployed stack and an empty ledger directory
    ot.deploy(moto_env.client, ot.config_of())
    made = calls_made(monkeypatch)
    # WHEN verify is asked for a read-only run recorded in the ledger
    code = main(["verify", *order, "--ledger-dir", str(tmp_path / "ledger"), "--timeout", "2"])
    # THEN one line naming the clash and what is allowed, exit 2, no AWS call, no ledger written
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--read-only with --ledger" in err and "allowed:" in err, err
    assert made == [] and not (tmp_path / "ledger").exists()


def test_a_check_refused_by_aws_carries_the_refusal_as_data(moto_env: Aws) -> None:
    # GIVEN a deployment whose PITR read AWS refuses, naming the action, the table and the caller
    deployment = deployed(moto_env)
    principal = "arn:aws:iam::123456789012:user/reader"
    table_arn = "arn:aws:dynamodb:us-east-1:123456789012:table/items-dev"
    message = (
        f"User: {principal} is not authorized to perform: dynamodb:DescribeContinuousBackups on resource: "
        f"{table_arn} because no identity-based policy allows the dynamodb:DescribeContinuousBackups action"
    )
    ddb = moto_env.client("dynamodb")
    real = ddb.describe_continuous_backups

    def refused(**kwargs: Any) -> Any:
        from botocore.exceptions import ClientError

        raise ClientError(
            {"Error": {"Code": "AccessDeniedException", "Message": message}}, "DescribeContinuousBackups"
        )

    ddb.describe_continuous_backups = refused
    try:
        # WHEN verify runs
        rows = run(moto_env, deployment)
    finally:
        ddb.describe_continuous_backups = real
    # THEN the PITR row fails with the refusal's fields in its --json, and the rows that met none have no error
    pitr = rows["pitr"].as_dict()
    assert pitr["result"] == v.FAIL
    assert pitr["error"] == {
        "code": "aws.access_denied",
        "aws_code": "AccessDeniedException",
        "operation": "DescribeContinuousBackups",
        "action": "dynamodb:DescribeContinuousBackups",
        "resource": table_arn,
        "principal": principal,
    }
    assert "error" not in rows["round-trip"].as_dict()
