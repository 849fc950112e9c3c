"""`doctable invoke`: the change records it builds are what the consumer expects (checked against
functions/stream_consumer itself), event files are validated, and the answer and log are reported."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from stream_consumer import domain

from contract import names
from doctable.cli import main
from doctable.core.aws import Aws
from doctable.core.errors import UserError
from doctable.operate import invoke as iv
from tests.support import ops as ot
from tests.unit.events import LATER, REGION, STREAM_ARN, TABLE, FakeLambdaContext

PK, SK = "doc#1", "v#1"
BLOBS = [f"blobs/{PK}/{SK}/a.pdf", f"blobs/{PK}/{SK}/b.png"]
NO_FAILURES: dict[str, list[Any]] = {"batchItemFailures": []}


def built(kind: str, blobs: list[str] = BLOBS) -> dict[str, Any]:
    return iv.build_record(kind, PK, SK, blobs, stream_arn=STREAM_ARN, region=REGION, now=LATER, sequence="7")


# ---------------------------------------------------------------------------------------------- the event
@pytest.mark.parametrize(
    ("kind", "event_name", "old_blobs", "new_blobs"),
    [
        ("insert", "INSERT", None, BLOBS),
        ("modify", "MODIFY", BLOBS, []),
        ("remove", "REMOVE", BLOBS, None),
    ],
)
def test_each_kind_parses_as_the_consumer_reads_a_stream_record(
    kind: str, event_name: str, old_blobs: list[str] | None, new_blobs: list[str] | None
) -> None:
    # GIVEN the record doctable invoke builds
    raw = built(kind)
    # THEN the consumer accepts the event and parses the record: keys, images, blobs, sequence, time
    assert domain.stream_records({"Records": [raw]}) == [raw]
    record = domain.parse_record(raw)
    assert (record.event_name, record.pk, record.sk, record.sequence_number) == (event_name, PK, SK, "7")
    assert record.created == LATER and record.view_type == "NEW_AND_OLD_IMAGES"
    assert (record.old_image is None) == (old_blobs is None) and (record.new_image is None) == (
        new_blobs is None
    )
    assert record.old_blobs == (old_blobs or []) and record.new_blobs == (new_blobs or [])
    # the modify's new image has no blobs attribute at all (the blobs became orphans)
    if kind == "modify":
        assert names.BLOBS_ATTRIBUTE not in raw["dynamodb"]["NewImage"]
    # and it comes from the table's own stream: not refused as a foreign record
    batch = domain.parse_batch([raw], expected_table=TABLE)
    assert batch.foreign == () and batch.malformed == () and len(batch.records) == 1
    assert raw["eventSourceARN"] == STREAM_ARN and raw["awsRegion"] == REGION


@pytest.mark.parametrize(
    ("kind", "cleaned"), [("insert", ()), ("modify", tuple(BLOBS)), ("remove", tuple(BLOBS))]
)
def test_each_kind_plans_the_cleanup_the_data_contract_says(kind: str, cleaned: tuple[str, ...]) -> None:
    plan = domain.plan_cleanup(domain.parse_record(built(kind)), "blobs/", prefix_cleanup=False)
    assert plan.keys == cleaned and plan.refused == ()


@pytest.mark.parametrize(("kind", "left"), [("insert", set(BLOBS)), ("modify", set()), ("remove", set())])
def test_the_consumer_acts_on_each_built_event(
    s3: Any, load_consumer: Any, kind: str, left: set[str]
) -> None:
    # GIVEN the blobs in the bucket and the real handler
    s3.put(*BLOBS)
    handler = load_consumer()
    # WHEN it receives the event doctable invoke sends
    response = handler.lambda_handler({"Records": [built(kind)]}, FakeLambdaContext())
    # THEN no record fails, and the blobs a modify or remove drops are gone
    assert response == NO_FAILURES
    assert s3.keys() == left


def test_a_record_without_blobs_lists_an_empty_list_and_sequence_numbers_increase() -> None:
    first = iv.build_record("remove", PK, SK, [], stream_arn=STREAM_ARN, region=REGION, now=100.0)
    later = iv.build_record("remove", PK, SK, [], stream_arn=STREAM_ARN, region=REGION, now=100.5)
    assert first["dynamodb"]["OldImage"][names.BLOBS_ATTRIBUTE] == {"L": []}
    assert int(later["dynamodb"]["SequenceNumber"]) > int(first["dynamodb"]["SequenceNumber"])
    assert first["eventID"] != later["eventID"]


def test_empty_keys_are_refused() -> None:
    with pytest.raises(UserError, match="--pk and --sk must be non-empty"):
        iv.build_record("insert", "", SK, [], stream_arn=STREAM_ARN, region=REGION)


# ---------------------------------------------------------------------------------------------- --file
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "not JSON (line 1, column 2)"),
        ('{"records": []}', "expected a stream event, a JSON object with a Records list"),
        ('{"Records": []}', "expected a stream event"),
        ('{"Records": [1]}', "expected a stream event"),
        ("[1, 2]", "got JSON list"),
    ],
)
def test_a_bad_event_file_is_one_line(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "event.json"
    path.write_text(text)
    with pytest.raises(UserError) as raised:
        iv.read_event_file(str(path))
    assert problem in str(raised.value) and "\n" not in str(raised.value)


def test_a_missing_event_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"--file .*missing.json: No such file"):
        iv.read_event_file(str(tmp_path / "missing.json"))


def test_an_event_file_is_sent_as_it_is(tmp_path: Path) -> None:
    event = {"Records": [built("remove")], "extra": {"kept": True}}
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    assert iv.read_event_file(str(path)) == event


# ---------------------------------------------------------------------------------------------- the call
class FakeLambda:
    def __init__(self, payload: Any, log: str, error: str | None = None) -> None:
        self.reply = {
            "StatusCode": 200,
            "ExecutedVersion": "3",
            "LogResult": base64.b64encode(log.encode()).decode(),
            "Payload": io.BytesIO(json.dumps(payload).encode()),
        }
        if error:
            self.reply["FunctionError"] = error
        self.calls: list[dict[str, Any]] = []

    def invoke(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        return self.reply


PROOF = json.dumps({"level": "INFO", "message": names.PROOF_LOG_MESSAGE, "record_count": 1})


def test_the_invocation_is_synchronous_with_the_log_tail() -> None:
    fake = FakeLambda(NO_FAILURES, f"{PROOF}\nblob_deleted\n")
    result = iv.invoke_consumer(fake, "fn:from-trim-horizon", {"Records": [built("remove")]})
    (call,) = fake.calls
    assert (call["InvocationType"], call["LogType"], call["FunctionName"]) == (
        "RequestResponse",
        "Tail",
        "fn:from-trim-horizon",
    )
    assert json.loads(call["Payload"])["Records"][0]["eventName"] == "REMOVE"
    assert result.failures == [] and result.exit_code == 0 and result.executed_version == "3"
    assert [line["proof"] for line in result.log_dicts()] == [True, False]


def test_failed_records_or_a_function_error_exit_1() -> None:
    failed = iv.invoke_consumer(FakeLambda({"batchItemFailures": [{"itemIdentifier": "7"}]}, ""), "fn", {})
    assert failed.failures == ["7"] and failed.exit_code == 1
    crashed = iv.invoke_consumer(FakeLambda({"errorMessage": "boom"}, "", error="Unhandled"), "fn", {})
    assert crashed.exit_code == 1 and crashed.log == []


# ---------------------------------------------------------------------------------------------- command
@pytest.fixture
def stack(moto_env: Aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """GIVEN a deployed stack (in moto) with a stream, a consumer function and its mapping."""
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(tmp_path / "state"))
    return ot.deploy_with_mapping(moto_env.client, ot.config_of(stream="new-and-old"))


def test_dry_run_prints_the_event_of_the_stacks_stream(
    stack: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["invoke", "-q", "--event", "remove", "--pk", PK, "--sk", SK, "--blobs", *BLOBS, "--dry-run"]
    assert main(argv) == 0
    (record,) = json.loads(capsys.readouterr().out)["Records"]
    assert record["eventSourceARN"] == stack[names.OUT_STREAM_ARN]
    assert domain.table_name_from_arn(record["eventSourceARN"]) == stack[names.OUT_TABLE_NAME]
    assert domain.parse_record(record).old_blobs == BLOBS


def test_invoke_targets_what_the_mapping_invokes_and_reports_as_json(
    stack: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the consumer answering with no failure and a proof line in its log
    calls: list[tuple[str, dict[str, Any]]] = []

    def fake_invoke(client: Any, function: str, event: dict[str, Any]) -> iv.Invocation:
        calls.append((function, event))
        return iv.Invocation(function=function, status_code=200, response=NO_FAILURES, log=[PROOF])

    monkeypatch.setattr(iv, "invoke_consumer", fake_invoke)
    # WHEN invoked with a remove, as JSON
    assert (
        main(["invoke", "-q", "--json", "--event", "remove", "--pk", PK, "--sk", SK, "--blobs", BLOBS[0]])
        == 0
    )
    document = json.loads(capsys.readouterr().out)
    # THEN the mapping's function got the event; the report has the response, the failures and the proof line
    ((function, event),) = calls
    assert function == stack[names.OUT_CONSUMER_FUNCTION_ARN]
    assert document["function"] == function and document["event"] == event
    assert document["batch_item_failures"] == [] and document["proof_lines"] == 1 and document["exit"] == 0


def test_text_output_marks_the_proof_line_and_failures_exit_1(
    stack: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fake_invoke(client: Any, function: str, event: dict[str, Any]) -> iv.Invocation:
        sequence = event["Records"][0]["dynamodb"]["SequenceNumber"]
        reply = {"batchItemFailures": [{"itemIdentifier": sequence}]}
        return iv.Invocation(function=function, status_code=200, response=reply, log=[PROOF, "failed"])

    monkeypatch.setattr(iv, "invoke_consumer", fake_invoke)
    assert main(["invoke", "-q", "--event", "modify", "--pk", PK, "--sk", SK]) == 1
    out = capsys.readouterr().out
    assert "  PROOF  stream_records_received: 1 record" in out and "1 record(s) failed" in out


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--event", "remove", "--pk", PK], "--event needs --pk and --sk"),
        (["--file", "x.json", "--pk", PK], "--pk build an event with --event; --file sends its own"),
    ],
)
def test_mixed_or_missing_arguments_are_one_line_exit_2(
    stack: dict[str, str], capsys: pytest.CaptureFixture[str], argv: list[str], problem: str
) -> None:
    assert main(["invoke", "-q", *argv]) == 2
    # THEN before any AWS call (no knob line, nothing read): one line
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert problem in line
