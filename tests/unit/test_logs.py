"""`doctable logs`: durations, proof lines marked, FilterLogEvents pages in one timeline, --follow printing each
event once, and the command against a stack in moto."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from contract import names
from doctable.cli import main
from doctable.core.aws import Aws
from doctable.core.errors import UserError
from doctable.operate import logs as lg
from tests.support import ops as ot

GROUP = "/aws/lambda/doctable-items-dev-consumer"
PROOF = json.dumps(
    {
        "level": "INFO",
        "message": names.PROOF_LOG_MESSAGE,
        "service": names.SERVICE_NAME,
        "record_count": 3,
        "event_names": {"REMOVE": 1, "INSERT": 2, "MODIFY": 0},
        "first_sequence_number": "100",
        "last_sequence_number": "102",
        "table_name": "items-dev",
    }
)


# ---------------------------------------------------------------------------------------------- --since
@pytest.mark.parametrize(("text", "seconds"), [("30s", 30), ("10m", 600), ("1h", 3600), ("2d", 172800)])
def test_durations(text: str, seconds: float) -> None:
    assert lg.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["10", "10x", "m", "-5m", "1.5h", "0m", "ten minutes", ""])
def test_a_bad_duration_names_the_allowed_forms(text: str) -> None:
    with pytest.raises(UserError, match=r"is not a duration: use .*s, m, h or d \(e\.g\. 30s, 10m, 1h, 2d\)"):
        lg.parse_duration(text)


def test_a_bad_since_is_one_line_exit_2_before_any_aws_call(capsys: pytest.CaptureFixture[str]) -> None:
    # WHEN --since is not a duration THEN one line naming the forms, exit 2
    assert main(["logs", "--since", "yesterday"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == "doctable: --since 'yesterday' is not a duration: use " + lg.DURATION_FORMS


# ---------------------------------------------------------------------------------------------- marking
def test_a_proof_line_is_marked_and_summarized() -> None:
    # GIVEN the consumer's proof line as Lambda stores it (Powertools JSON) and another line
    proof = lg.LogLine(1_714_564_800_123, PROOF + "\n", "s", "e1")
    start = lg.LogLine(1_714_564_800_000, "START RequestId: 1 Version: $LATEST\n", "s", "e0")
    # THEN the proof line is marked, with what it covers; the other is shown as it is, unmarked
    assert proof.render() == (
        "2024-05-01T12:00:00.123Z  PROOF  stream_records_received: 3 records (INSERT 2, REMOVE 1) of items-dev, "
        "sequence 100..102"
    )
    assert start.render() == "2024-05-01T12:00:00.000Z         START RequestId: 1 Version: $LATEST"
    assert proof.as_dict()["proof"] is True and proof.as_dict()["fields"]["record_count"] == 3
    assert start.as_dict()["proof"] is False and start.as_dict()["fields"] is None


def test_a_line_that_only_mentions_the_message_is_not_a_proof_line() -> None:
    mention = json.dumps({"message": "blob_deleted", "note": names.PROOF_LOG_MESSAGE})
    assert lg.marked(mention) == (None, f"blob_deleted note={names.PROOF_LOG_MESSAGE}")
    assert lg.marked("not json {") == (None, "not json {")


# ---------------------------------------------------------------------------------------------- reading
class FakeLogs:
    """FilterLogEvents over a list of events (each with logStreamName, eventId, timestamp, message), paged."""

    def __init__(self, events: list[dict[str, Any]] | None = None, page: int = 2) -> None:
        self.events = events if events is not None else []
        self.page = page
        self.calls: list[dict[str, Any]] = []
        self.exists = True

    def filter_log_events(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        if not self.exists:
            raise ClientError(
                {"Error": {"Code": "ResourceNotFoundException", "Message": "gone"}}, "FilterLogEvents"
            )
        matching = [e for e in self.events if e["timestamp"] >= kwargs.get("startTime", 0)]
        start = int(kwargs.get("nextToken") or 0)
        reply: dict[str, Any] = {"events": matching[start : start + self.page]}
        if start + self.page < len(matching):
            reply["nextToken"] = str(start + self.page)
        return reply


def event(n: int, timestamp: int, stream: str = "a", message: str = "") -> dict[str, Any]:
    return {
        "eventId": f"e{n}",
        "timestamp": timestamp,
        "logStreamName": stream,
        "message": message or f"line {n}",
    }


def test_pages_of_several_streams_read_as_one_timeline() -> None:
    # GIVEN events of two streams, stream by stream (as FilterLogEvents returns them), over three pages
    fake = FakeLogs(
        [event(1, 10, "a"), event(3, 30, "a"), event(2, 20, "b"), event(4, 40, "b"), event(5, 5, "b")]
    )
    # WHEN read from time 0
    lines = lg.read_lines(fake, GROUP, 0)
    # THEN every event, oldest first, after following every page
    assert lines is not None and [line.event_id for line in lines] == ["e5", "e1", "e2", "e3", "e4"]
    assert [call.get("nextToken") for call in fake.calls] == [None, "2", "4"]
    assert {call["logGroupName"] for call in fake.calls} == {GROUP}


def test_a_missing_group_reads_as_none() -> None:
    fake = FakeLogs()
    fake.exists = False
    assert lg.read_lines(fake, GROUP, 0) is None


def test_follow_prints_each_event_once_across_overlapping_polls() -> None:
    # GIVEN a log group that does not exist at the first poll, then gets lines between polls, one ingested late
    fake = FakeLogs(page=100)
    fake.exists = False
    printed: list[str] = []
    missing: list[int] = []
    arrivals = [
        [event(1, 1_000), event(2, 2_000)],
        [event(3, 3_000)],
        [event(4, 2_500, "late")],  # an older timestamp, within the overlap: still printed
        [],
    ]

    def sleep(_: float) -> None:
        fake.exists = True
        fake.events += arrivals.pop(0)

    # WHEN followed for five polls
    lg.follow_group(fake, GROUP, 0, lambda line: printed.append(line.event_id), sleep=sleep, polls=5,
              missing=lambda: missing.append(1))  # fmt: skip
    # THEN each event printed once, in arrival order; the missing group said once
    assert printed == ["e1", "e2", "e3", "e4"]
    assert missing == [1]
    # and each poll read from the overlap before the newest event printed, not from the start
    assert fake.calls[-1]["startTime"] == max(0, 3_000 - lg.FOLLOW_OVERLAP_MS)


def test_follow_reads_again_only_the_overlap_before_the_newest_event() -> None:
    # GIVEN one new event per poll, each an overlap later than the one before
    fake = FakeLogs([event(1, 0)], page=100)
    seen: list[str] = []

    def sleep(_: float) -> None:
        fake.events.append(event(len(fake.events) + 1, len(fake.events) * lg.FOLLOW_OVERLAP_MS))

    lg.follow_group(fake, GROUP, 0, lambda line: seen.append(line.event_id), sleep=sleep, polls=4)
    # THEN each is printed once, and each poll starts one overlap before the newest event printed before it
    assert seen == ["e1", "e2", "e3", "e4"]
    overlap = lg.FOLLOW_OVERLAP_MS
    assert [call["startTime"] for call in fake.calls] == [0, 0, 0, overlap]


# ---------------------------------------------------------------------------------------------- command
@pytest.fixture
def stack_with_logs(moto_env: Aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """GIVEN a deployed stack (in moto) whose consumer's log group holds a START line and a proof line."""
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(tmp_path / "state"))
    ot.deploy(moto_env.client, ot.config_of(), extra_outputs={names.OUT_CONSUMER_LOG_GROUP: GROUP})
    client = moto_env.client("logs")
    client.create_log_group(logGroupName=GROUP)
    client.create_log_stream(logGroupName=GROUP, logStreamName="2024/05/01/[$LATEST]abc")
    now = int(time.time() * 1000)
    client.put_log_events(
        logGroupName=GROUP,
        logStreamName="2024/05/01/[$LATEST]abc",
        logEvents=[
            {"timestamp": now - 2000, "message": "START RequestId: 1"},
            {"timestamp": now - 1000, "message": PROOF},
        ],
    )
    return client


def test_logs_json_marks_the_proof_line(stack_with_logs: Any, capsys: pytest.CaptureFixture[str]) -> None:
    # WHEN the logs of the last 10 minutes are read as JSON
    assert main(["logs", "--json", "--since", "10m", "-q"]) == 0
    document = json.loads(capsys.readouterr().out)
    # THEN both lines, oldest first, the proof line marked with its fields
    assert document["kind"] == "doctable-logs" and document["log_group"] == GROUP
    assert [e["proof"] for e in document["events"]] == [False, True]
    assert document["events"][1]["fields"]["first_sequence_number"] == "100"
    assert document["proof_lines"] == 1


def test_logs_text_marks_the_proof_line(stack_with_logs: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["logs"]) == 0
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert len(out) == 2 and "PROOF" not in out[0] and "  PROOF  stream_records_received: 3 records" in out[1]
    assert "2 lines, 1 proof lines" in captured.err


def test_logs_since_leaves_out_older_lines(stack_with_logs: Any, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a line written an hour ago
    stack_with_logs.put_log_events(
        logGroupName=GROUP,
        logStreamName="2024/05/01/[$LATEST]abc",
        logEvents=[{"timestamp": int(time.time() * 1000) - 3_600_000, "message": "old"}],
    )
    assert main(["logs", "--json", "--since", "30m", "-q"]) == 0
    messages = [e["message"] for e in json.loads(capsys.readouterr().out)["events"]]
    assert "old" not in messages and len(messages) == 2


def test_a_stack_without_the_built_in_consumer_is_one_line(
    moto_env: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    ot.deploy(moto_env.client, ot.config_of())
    assert main(["logs", "-q"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "has no built-in consumer" in line and names.OUT_CONSUMER_LOG_GROUP in line


def test_follow_stopped_by_ctrl_c_exits_0(
    stack_with_logs: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN --follow, interrupted (Ctrl-C) at its first wait
    def interrupted(_: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(lg.time, "sleep", interrupted)
    monkeypatch.setattr(lg, "follow_group", _follow_with(interrupted))
    # THEN the lines so far were printed as JSON lines and the exit is 0, with no "interrupted" error
    assert main(["logs", "--follow", "--json", "-q"]) == 0
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert [line["kind"] for line in lines] == ["doctable-log-line", "doctable-log-line"]
    assert lines[1]["proof"] is True
    assert "interrupted" not in captured.err


def _follow_with(sleep: Any) -> Any:
    real = lg.follow_group

    def follow(*args: Any, **kwargs: Any) -> None:
        real(*args, **{**kwargs, "sleep": sleep})

    return follow


def test_structured_lines_read_in_a_few_words_in_text() -> None:
    # GIVEN a Powertools line (with the context fields every line carries) and an embedded-metric-format line
    powertools = json.dumps(
        {"level": "WARNING", "location": "_log_refused:397", "message": "blob_key_refused", "service": "s",
         "cold_start": True, "function_request_id": "r", "key": "other/key", "reason": "outside-record-prefix",
         "keys_kept": {}}
    )  # fmt: skip
    emf = json.dumps(
        {"_aws": {"Timestamp": 1, "CloudWatchMetrics": [{"Namespace": "Doctable", "Dimensions": [["table"]],
         "Metrics": [{"Name": "RecordsReceived", "Unit": "Count"}, {"Name": "BlobsDeleted", "Unit": "Count"}]}]},
         "table": "items-dev", "RecordsReceived": [1.0], "BlobsDeleted": [1.0, 2.0]}
    )  # fmt: skip
    # THEN the text view keeps the level, the event and its own fields; the metrics by name; JSON keeps it all
    assert (
        lg.marked(powertools)[1]
        == "WARNING blob_key_refused key=other/key reason=outside-record-prefix keys_kept={}"
    )
    assert lg.marked(emf)[1] == "metrics RecordsReceived=1 BlobsDeleted=3"
    assert lg.LogLine(0, powertools).as_dict()["message"] == powertools
    assert lg.marked("REPORT RequestId: 1\tDuration: 2 ms")[1] == "REPORT RequestId: 1\tDuration: 2 ms"
