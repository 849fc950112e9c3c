"""The inner loop on the local AWS: `doctable invoke` sends one change record to the deployed consumer and shows
its answer and its log; `doctable logs` reads the consumer's log group, the proof line marked; `doctable watch` sends an edited
handler to the deployed function and the next invocation runs it.

Deploys its own stack (table_base ``loop``, env dev, the stream on, the built-in consumer) with the real CDK CLI;
the commands run as the console script would (a subprocess, the environment `doctable local env` prints). The
tests run in file order and share the invocation of the first.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from contract import names
from contract.knobs import resolve_config
from tests.support import localaws as lt
from tests.support.cli import Result, context_args, run_doctable
from tests.support.localaws import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

KNOBS = {"env": "dev", "table_base": "loop", "stream": "new-and-old"}
PK, SK = "loop-doc-1", "v1"
LOGS_BOUND = 60.0  # seconds the consumer's lines may take to show in its log group


@pytest.fixture(scope="module")
def stack(deploy: Callable[..., lt.Deployed]) -> lt.Deployed:
    return deploy(KNOBS)


@pytest.fixture(scope="module")
def doctable(local_aws: lt.LocalAWS, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Result]:
    state = tmp_path_factory.mktemp("loop-state")
    env = {**local_aws.env, "DOCTABLE_STATE_DIR": str(state / "state")}

    def run(*args: str) -> Result:
        return run_doctable([*args, *context_args(KNOBS)], env=env, timeout=300)

    return run


@pytest.fixture(scope="module")
def blob_key() -> str:
    root = resolve_config(context=KNOBS, environ={}).blob_root
    return f"{root}{PK}/{SK}/attachment.bin"


@pytest.fixture(scope="module")
def removed(
    local_aws: lt.LocalAWS, stack: lt.Deployed, doctable: Callable[..., Result], blob_key: str
) -> dict[str, Any]:
    """A blob in the blob bucket, then `doctable invoke --event remove` of the item listing it (JSON)."""
    local_aws.client("s3").put_object(Bucket=stack.outputs[names.OUT_BLOB_BUCKET], Key=blob_key, Body=b"x")
    result = doctable("invoke", "--json", "--event", "remove", "--pk", PK, "--sk", SK, "--blobs", blob_key)
    assert result.code == 0, result.err
    document: dict[str, Any] = result.json()
    return document


def test_invoke_remove_gets_no_failure_and_a_proof_line(
    local_aws: lt.LocalAWS, stack: lt.Deployed, removed: dict[str, Any], blob_key: str
) -> None:
    # THEN the consumer answered with an empty batchItemFailures, as the mapping's function (its alias)
    assert removed["response"] == {"batchItemFailures": []} and removed["function_error"] is None
    assert removed["function"].startswith(stack.outputs[names.OUT_CONSUMER_FUNCTION_ARN] + ":")
    # and its printed log has the proof line of this very record
    (record,) = removed["event"]["Records"]
    assert record["eventSourceARN"] == stack.outputs[names.OUT_STREAM_ARN]
    proofs = [line["fields"] for line in removed["log"] if line["proof"]]
    assert [(p["record_count"], p["first_sequence_number"]) for p in proofs] == [
        (1, record["dynamodb"]["SequenceNumber"])
    ]
    counted = {name: count for name, count in proofs[0]["event_names"].items() if count}
    assert counted == {"REMOVE": 1} and proofs[0]["table_name"] == stack.outputs[names.OUT_TABLE_NAME]
    # and the consumer really acted: the blob the removed item listed is gone
    with pytest.raises(ClientError) as missing:
        local_aws.client("s3").head_object(Bucket=stack.outputs[names.OUT_BLOB_BUCKET], Key=blob_key)
    assert missing.value.response["Error"]["Code"] in ("404", "NoSuchKey")


def test_logs_show_that_proof_line_marked(removed: dict[str, Any], doctable: Callable[..., Result]) -> None:
    sequence = removed["event"]["Records"][0]["dynamodb"]["SequenceNumber"]

    def marked_line() -> dict[str, Any] | None:
        result = doctable("logs", "--since", "10m", "--json", "-q")
        assert result.code == 0, result.err
        for event in result.json()["events"]:
            if event["proof"] and event["fields"]["first_sequence_number"] == sequence:
                return dict(event)
        return None

    # WHEN the last 10 minutes of the consumer's log are read (lines reach the group as the function writes them)
    event = _poll(marked_line, LOGS_BOUND)
    # THEN the proof line of the invocation is there, marked, with its fields and its raw message
    assert event["fields"]["message"] == names.PROOF_LOG_MESSAGE
    assert names.PROOF_LOG_MESSAGE in event["message"] and event["stream"]


def test_invoke_and_logs_as_text_mark_the_proof_line(
    doctable: Callable[..., Result], stack: lt.Deployed
) -> None:
    # WHEN an insert is invoked, as text THEN the response and the marked proof line are printed
    result = doctable("invoke", "-q", "--event", "insert", "--pk", PK, "--sk", "v2", "--blobs", f"{PK}/v2/x")
    assert result.code == 0, result.err
    assert 'response: {"batchItemFailures": []}' in result.out
    assert "  PROOF  stream_records_received: 1 record (INSERT 1) of " in result.out

    # and `doctable logs` in text marks the proof lines too
    def text_with_the_insert() -> str | None:
        out = doctable("logs", "-q").out
        return out if "(INSERT 1)" in out else None

    logs = _poll(text_with_the_insert, LOGS_BOUND)
    assert any("  PROOF  stream_records_received: 1 record (INSERT 1)" in line for line in logs.splitlines())


def test_watch_sends_an_edited_handler_and_the_next_invocation_runs_it(
    local_aws: lt.LocalAWS, doctable: Callable[..., Result], stack: lt.Deployed, tmp_path: Path
) -> None:
    # GIVEN a copy of the consumer whose handler logs a marker once loaded
    source = tmp_path / "stream_consumer"
    shutil.copytree(
        ROOT / "functions" / "stream_consumer", source, ignore=shutil.ignore_patterns("__pycache__")
    )
    marker = f"watch-marker-{uuid.uuid4().hex}"
    handler = source / "handler.py"
    handler.write_text(handler.read_text() + f"\nprint({marker!r}, flush=True)\n")
    # WHEN watch sends it (once) THEN the update is done without a stack update
    stack_before = _last_updated(local_aws, stack)
    sent = doctable("watch", "--once", "--json", "-q", "--source", str(source))
    assert sent.code == 0, sent.err
    assert sent.json()["updates"][0]["files"] >= 5
    assert _last_updated(local_aws, stack) == stack_before
    # AND the next invocation runs the new code: its log has the marker
    result = doctable("invoke", "--json", "-q", "--event", "insert", "--pk", PK, "--sk", "v3")
    assert result.code == 0, result.err

    def marked() -> bool:
        events = doctable("logs", "--since", "10m", "--json", "-q").json()["events"]
        return any(marker in event["message"] for event in events)

    assert _poll(marked, LOGS_BOUND)
    # AND the real package goes back, so the other tests see the deployed code
    assert doctable("watch", "--once", "-q").code == 0


def _last_updated(aws: lt.LocalAWS, stack: lt.Deployed) -> Any:
    """The stack's status and last update: a code update behind it changes neither."""
    found = aws.client("cloudformation").describe_stacks(StackName=stack.name)["Stacks"][0]
    return found["StackStatus"], found.get("LastUpdatedTime") or found["CreationTime"]


def _poll(probe: Callable[[], Any], bound: float) -> Any:
    deadline = time.monotonic() + bound
    while True:
        value = probe()
        if value:
            return value
        assert time.monotonic() < deadline, f"nothing within {bound:.0f}s"
        time.sleep(0.5)
