"""doctable's wrapper around a team's stream handler (``subscriber_runtime.handler``), its contract with
``contract/names.py`` and the staging of a subscriber's asset (``tooling.asset.stage_subscriber``)."""

from __future__ import annotations

import ast
import importlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from subscriber_runtime import constants
from subscriber_runtime.batch import UnexpectedEventError
from subscriber_runtime.settings import NAME_RE, TABLE_NAME_RE, SubscriberInitError

from contract import names
from contract.subscribers import NAME_RE as DECLARED_NAME_RE
from doctable.verify.proof import covers, parse_proof_line
from tests.unit.events import (
    LATER,
    TABLE,
    FakeLambdaContext,
    failures,
    insert,
    kinesis_failures,
    kinesis_record,
    kseq,
    modify,
    remove,
    seq,
    sqs_event,
    stream_event,
    via_kinesis,
)
from tooling.asset import stage_subscriber

PROJECT = Path(__file__).resolve().parents[2]
RUNTIME = PROJECT / "functions" / "subscriber_runtime"
SERVICE = "doctable-subscriber"
TEAM_MODULE = """
CALLS = []
RESPONSE = {"batchItemFailures": []}
NOT_A_FUNCTION = 3


def handler(event, context):
    CALLS.append(event)
    return RESPONSE


def on_record(record, context):
    CALLS.append(record)
    if record["dynamodb"]["Keys"]["pk"]["S"] == "poison":
        raise ValueError("poison record")


def failing(event, context):
    raise RuntimeError("downstream unavailable")
"""
BROKEN_IMPORT = "import requests_that_is_not_installed\n\ndef handler(event, context):\n    return None\n"
BASE_ENV = {
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_REGION": "eu-west-1",
    "POWERTOOLS_TRACE_DISABLED": "1",
    "DOCTABLE_SUBSCRIBER": "search",
    "DOCTABLE_SUBSCRIBER_HANDLER": "subscriber_code.team:handler",
    "DOCTABLE_SUBSCRIBER_PER_RECORD": "false",
    "DOCTABLE_TABLE_NAME": TABLE,
    "DOCTABLE_ENVIRONMENT": "test",
}


def _purge() -> None:
    # The handler module reads the environment at import (the cold start); the pure modules stay imported.
    for name in [
        m for m in sys.modules if m == "subscriber_runtime.handler" or m.split(".")[0] == "subscriber_code"
    ]:
        del sys.modules[name]


@pytest.fixture
def load_wrapper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., ModuleType]]:
    """Import ``subscriber_runtime.handler`` afresh (a cold start) over a team's ``subscriber_code`` package."""
    code = tmp_path / "subscriber_code"
    code.mkdir()
    (code / "__init__.py").write_text("")
    (code / "team.py").write_text(TEAM_MODULE)
    (code / "broken.py").write_text(BROKEN_IMPORT)
    monkeypatch.syspath_prepend(str(tmp_path))

    def load(**env: str | None) -> ModuleType:
        for name, value in {**BASE_ENV, **env}.items():
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        _purge()
        importlib.invalidate_caches()
        module = importlib.import_module("subscriber_runtime.handler")
        # The Powertools logger is process-wide; point its handler at this test's captured stdout.
        for handler in logging.getLogger(SERVICE).handlers:
            if isinstance(handler, logging.StreamHandler):
                handler.stream = sys.stdout
        return module

    yield load
    _purge()


def team() -> ModuleType:
    return sys.modules["subscriber_code.team"]


@pytest.fixture
def stdout_json(capsys: pytest.CaptureFixture[str]) -> Callable[[], list[dict[str, Any]]]:
    def read() -> list[dict[str, Any]]:
        return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]

    return read


def only(lines: list[dict[str, Any]], message: str) -> dict[str, Any]:
    (line,) = [line for line in lines if line.get("message") == message]
    return line


def metrics_of(lines: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metric -> its values summed over the invocation's EMF documents, dimension -> value): what CloudWatch
    extracts from the lines; every document has the same namespace and dimensions."""
    blobs = [line for line in lines if "_aws" in line]
    values: dict[str, Any] = {}
    dimension_sets = []
    for blob in blobs:
        (directive,) = blob["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == "Doctable" and isinstance(blob["_aws"]["Timestamp"], int)
        dimension_sets.append({name: blob[name] for name in directive["Dimensions"][0]})
        for metric in directive["Metrics"]:
            assert metric["Unit"] == "Count"
            values[metric["Name"]] = values.get(metric["Name"], 0) + blob[metric["Name"]]
    assert blobs and all(d == dimension_sets[0] for d in dimension_sets), dimension_sets
    return values, dimension_sets[0]


def test_the_wrapper_imports_nothing_of_powertools() -> None:
    # A team handler without Powertools does not pay its import at cold start (bench/subscriber measures it).
    for path in RUNTIME.glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        runtime = [m for m in imported if m.startswith("aws_lambda_powertools")]
        assert runtime in ([], ["aws_lambda_powertools.utilities.typing"]), (path.name, runtime)


def test_the_proof_line_is_the_received_metric_and_has_powertools_keys(load_wrapper, stdout_json):
    # GIVEN a batch of two records  WHEN the wrapper handles it (its team handler reports no failure)
    wrapper = load_wrapper()
    wrapper.lambda_handler(stream_event(insert(1, "doc#1"), insert(2, "doc#2")), FakeLambdaContext())
    wrapper.lambda_handler(stream_event(insert(3, "doc#3")), FakeLambdaContext())
    lines = stdout_json()
    # THEN each batch wrote exactly one line: the proof line, which is also the EMF document of both metrics
    assert [line["message"] for line in lines] == ["stream_records_received"] * 2
    first, second = lines
    assert (first["RecordsReceived"], first["RecordsFailed"], second["RecordsReceived"]) == (2, 0, 1)
    # AND it carries the keys Powertools' Logger writes with inject_lambda_context, the cold start once
    context = FakeLambdaContext()
    assert {k: first[k] for k in ("level", "service", "function_name", "function_request_id")} == {
        "level": "INFO",
        "service": SERVICE,
        "function_name": context.function_name,
        "function_request_id": context.aws_request_id,
    }
    assert (first["cold_start"], second["cold_start"]) == (True, False)


# ------------------------------------------------------------------------------------------------ batch mode


def test_batch_mode_hands_the_event_unchanged_and_returns_what_the_handler_returns(load_wrapper, stdout_json):
    # GIVEN a team handler that reports the second record failed
    wrapper = load_wrapper()
    team().RESPONSE = failures(2)
    event = stream_event(insert(1, "doc#1"), modify(2, "doc#2", "v#1", [], []), remove(3, "doc#3", "v#1", []))

    # WHEN the wrapper receives the batch
    response = wrapper.lambda_handler(event, FakeLambdaContext())

    # THEN the team got the very event Lambda sent, its response is returned, and one proof line describes it
    assert [event] == team().CALLS and team().CALLS[0] is event
    assert response == failures(2)
    lines = stdout_json()
    proof = only(lines, "stream_records_received")
    assert {key: proof[key] for key in ("subscriber", "record_count", "event_names", "table_name")} == {
        "subscriber": "search",
        "record_count": 3,
        "event_names": {"INSERT": 1, "MODIFY": 1, "REMOVE": 1},
        "table_name": TABLE,
    }
    assert (proof["first_sequence_number"], proof["last_sequence_number"]) == (seq(1), seq(3))
    values, dimensions = metrics_of(lines)
    assert values == {"RecordsReceived": 3.0, "RecordsFailed": 1.0}
    assert dimensions == {"service": SERVICE, "table": TABLE, "Subscriber": "search", "environment": "test"}


def test_the_proof_line_is_found_by_verify_as_the_consumers_is(load_wrapper, stdout_json):
    # GIVEN a batch of records 4..6 through the wrapper
    wrapper = load_wrapper()
    wrapper.lambda_handler(stream_event(insert(4), insert(5), insert(6)), FakeLambdaContext())
    message = json.dumps(only(stdout_json(), "stream_records_received"))

    # WHEN verify reads the log event
    line = parse_proof_line(message)

    # THEN it is a proof line covering the batch's sequence numbers, of this table only
    assert line is not None and line["subscriber"] == "search"
    assert covers(line, TABLE, seq(5), event_ms=0, write_ms=0)
    assert not covers(line, TABLE, seq(7), event_ms=0, write_ms=0)
    assert not covers(line, "another-table", seq(5), event_ms=0, write_ms=0)


def test_a_batch_handler_that_raises_fails_the_batch_and_counts_every_record(load_wrapper, stdout_json):
    # GIVEN a team handler that raises
    wrapper = load_wrapper(DOCTABLE_SUBSCRIBER_HANDLER="subscriber_code.team:failing")

    # WHEN the wrapper receives two records THEN the exception is Lambda's (the batch is retried)
    with pytest.raises(RuntimeError, match="downstream unavailable"):
        wrapper.lambda_handler(stream_event(insert(1), insert(2)), FakeLambdaContext())
    values, _ = metrics_of(stdout_json())
    assert values == {"RecordsReceived": 2.0, "RecordsFailed": 2.0}


def test_a_non_stream_event_is_refused_saying_what_was_expected(load_wrapper, stdout_json):
    wrapper = load_wrapper()
    with pytest.raises(UnexpectedEventError) as refused:
        wrapper.lambda_handler(sqs_event(), FakeLambdaContext())
    assert "'aws:dynamodb' or 'aws:kinesis'" in str(refused.value)
    assert "Records[0].eventSource is 'aws:sqs'" in str(refused.value)
    assert team().CALLS == []
    lines = stdout_json()
    assert only(lines, "unexpected_event")["subscriber"] == "search"
    assert metrics_of(lines)[0] == {"RecordsReceived": 0.0, "RecordsFailed": 0.0}


# ------------------------------------------------------------------------------------------- per-record mode


def test_per_record_fails_the_poison_record_and_every_later_one_uncalled(load_wrapper, stdout_json):
    # GIVEN per_record, and a batch whose second record the team's function cannot handle
    wrapper = load_wrapper(
        DOCTABLE_SUBSCRIBER_PER_RECORD="true", DOCTABLE_SUBSCRIBER_HANDLER="subscriber_code.team:on_record"
    )
    event = stream_event(insert(1, "doc#1"), insert(2, "poison"), insert(3, "doc#3"))

    # WHEN the wrapper receives it
    response = wrapper.lambda_handler(event, FakeLambdaContext())

    # THEN the poison record and the one after it are failed (Lambda retries from the lowest), the third uncalled
    assert response == failures(2, 3)
    assert [r["dynamodb"]["SequenceNumber"] for r in team().CALLS] == [seq(1), seq(2)]
    lines = stdout_json()
    failed = only(lines, "subscriber_record_failed")
    assert (failed["sequence_number"], failed["later_records_failed_uncalled"]) == (seq(2), 1)
    assert failed["error"] == "ValueError: poison record"
    assert (failed["level"], failed["exception_name"]) == ("ERROR", "ValueError")
    assert failed["exception"].startswith("Traceback") and "ValueError: poison record" in failed["exception"]
    assert metrics_of(lines)[0] == {"RecordsReceived": 3.0, "RecordsFailed": 2.0}


def test_per_record_without_failure_reports_none(load_wrapper, stdout_json):
    wrapper = load_wrapper(
        DOCTABLE_SUBSCRIBER_PER_RECORD="TRUE", DOCTABLE_SUBSCRIBER_HANDLER="subscriber_code.team:on_record"
    )
    event = stream_event(insert(1), insert(2))
    assert wrapper.lambda_handler(event, FakeLambdaContext()) == {"batchItemFailures": []}
    assert event["Records"] == team().CALLS
    assert metrics_of(stdout_json())[0] == {"RecordsReceived": 2.0, "RecordsFailed": 0.0}


# ---------------------------------------------------------------------------------------- Kinesis destination


def test_kinesis_batch_is_handed_unchanged_and_its_proof_line_names_the_kinesis_records(
    load_wrapper, stdout_json
):
    # GIVEN changes delivered through the table's Kinesis destination
    wrapper = load_wrapper()
    event = stream_event(via_kinesis(insert(1), 1), via_kinesis(remove(2, "doc#2", "v#1", []), 2))

    # WHEN the wrapper receives them
    response = wrapper.lambda_handler(event, FakeLambdaContext())

    # THEN the team gets the Kinesis event as sent, and the proof line reads the change records inside
    assert [event] == team().CALLS and response == {"batchItemFailures": []}
    proof = only(stdout_json(), "stream_records_received")
    assert proof["event_names"] == {"INSERT": 1, "MODIFY": 0, "REMOVE": 1}
    assert (proof["first_sequence_number"], proof["last_sequence_number"]) == (kseq(1), kseq(2))
    assert proof["table_name"] == TABLE
    line = parse_proof_line(json.dumps(proof))
    assert line is not None and covers(line, TABLE, kseq(2), event_ms=0, write_ms=0)


def test_kinesis_per_record_hands_the_change_record_and_fails_undecodable_data(load_wrapper, stdout_json):
    # GIVEN per_record, a Kinesis change, a Kinesis record whose data is not a change record, and a later change
    wrapper = load_wrapper(
        DOCTABLE_SUBSCRIBER_PER_RECORD="true", DOCTABLE_SUBSCRIBER_HANDLER="subscriber_code.team:on_record"
    )
    event = stream_event(
        via_kinesis(insert(1), 1), kinesis_record(2, "bm90IGpzb24="), via_kinesis(insert(3), 3)
    )

    # WHEN the wrapper receives them
    response = wrapper.lambda_handler(event, FakeLambdaContext())

    # THEN the team got the first as a DynamoDB change record (Kinesis sequence, creation time in seconds)
    (change,) = team().CALLS
    assert change["eventName"] == "INSERT" and change["tableName"] == TABLE
    assert change["dynamodb"]["SequenceNumber"] == kseq(1)
    assert change["dynamodb"]["ApproximateCreationDateTime"] == LATER + 1
    # AND the undecodable record and the later one are failed by their Kinesis sequence numbers
    assert response == kinesis_failures(2, 3)
    lines = stdout_json()
    assert only(lines, "stream_records_received")["event_names"]["UNKNOWN"] == 1
    assert only(lines, "subscriber_record_failed")["sequence_number"] == kseq(2)


# --------------------------------------------------------------------------------------------- init errors

INIT_ERRORS = [
    ({"DOCTABLE_SUBSCRIBER": None}, "<unnamed>", "DOCTABLE_SUBSCRIBER=<unset>"),
    ({"DOCTABLE_SUBSCRIBER": "Search"}, "<unnamed>", "DOCTABLE_SUBSCRIBER='Search'"),
    ({"DOCTABLE_SUBSCRIBER_HANDLER": None}, "search", "DOCTABLE_SUBSCRIBER_HANDLER=<unset>"),
    (
        {"DOCTABLE_SUBSCRIBER_HANDLER": "search.py:handler"},
        "search",
        "DOCTABLE_SUBSCRIBER_HANDLER='search.py:handler'",
    ),
    ({"DOCTABLE_SUBSCRIBER_PER_RECORD": "yes"}, "search", "DOCTABLE_SUBSCRIBER_PER_RECORD='yes'"),
    ({"DOCTABLE_TABLE_NAME": None}, "search", "DOCTABLE_TABLE_NAME=<unset>"),
    (
        {"DOCTABLE_SUBSCRIBER_HANDLER": "subscriber_code.nope:handler"},
        "search",
        "handler module subscriber_code.nope not found",
    ),
    (
        {"DOCTABLE_SUBSCRIBER_HANDLER": "subscriber_code.broken:handler"},
        "search",
        "ModuleNotFoundError: No module named 'requests_that_is_not_installed'",
    ),
    (
        {"DOCTABLE_SUBSCRIBER_HANDLER": "subscriber_code.team:handle"},
        "search",
        "handler subscriber_code.team:handle not found; the module defines: failing, handler, on_record",
    ),
    (
        {"DOCTABLE_SUBSCRIBER_HANDLER": "subscriber_code.team:NOT_A_FUNCTION"},
        "search",
        "handler subscriber_code.team:NOT_A_FUNCTION is not callable",
    ),
]


@pytest.mark.parametrize(("env", "subscriber", "names_what"), INIT_ERRORS)
def test_a_bad_setting_fails_the_init_with_one_line_naming_the_subscriber(
    load_wrapper, env, subscriber, names_what
):
    with pytest.raises(SubscriberInitError) as failed:
        load_wrapper(**env)
    message = str(failed.value)
    assert failed.value.subscriber == subscriber
    assert message.startswith(f"subscriber {subscriber}: ") and "\n" not in message
    assert names_what in message


# ------------------------------------------------------------------------------------------------ contract

SHARED_NAMES = (
    "SUBSCRIBER_SERVICE_NAME",
    "METRICS_NAMESPACE",
    "PROOF_LOG_MESSAGE",
    "ENV_SUBSCRIBER_NAME",
    "ENV_SUBSCRIBER_HANDLER",
    "ENV_SUBSCRIBER_PER_RECORD",
    "ENV_SUBSCRIBER_TABLE_NAME",
    "ENV_SUBSCRIBER_ENVIRONMENT",
    "ENV_SUBSCRIBER_TRUE",
    "ENV_SUBSCRIBER_FALSE",
    "SUBSCRIBER_CODE_PACKAGE",
    "METRIC_DIMENSION_ENVIRONMENT",
    "METRIC_DIMENSION_TABLE",
    "METRIC_DIMENSION_SUBSCRIBER",
    "METRIC_SUBSCRIBER_RECORDS_RECEIVED",
    "METRIC_SUBSCRIBER_RECORDS_FAILED",
)


@pytest.mark.parametrize("name", SHARED_NAMES)
def test_the_runtime_constants_equal_the_contract(name: str) -> None:
    assert getattr(constants, name) == getattr(names, name)


def test_the_runtime_rules_agree_with_the_declaration_and_the_consumer() -> None:
    from stream_consumer import settings as consumer_settings

    assert NAME_RE.pattern == DECLARED_NAME_RE.pattern
    assert TABLE_NAME_RE.pattern == consumer_settings._TABLE_NAME.pattern
    assert f"{names.SUBSCRIBER_RUNTIME_PACKAGE}.handler.lambda_handler" == names.SUBSCRIBER_HANDLER
    assert RUNTIME.name == names.SUBSCRIBER_RUNTIME_PACKAGE


# ------------------------------------------------------------------------------------------------- staging


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_staging_is_deterministic_and_the_staged_asset_runs_the_team_handler(tmp_path: Path) -> None:
    # GIVEN a settings folder with the team's handler file under subscribers/
    settings_dir = tmp_path / "project"
    (settings_dir / "subscribers").mkdir(parents=True)
    (settings_dir / "subscribers" / "search.py").write_text(TEAM_MODULE)

    # WHEN it is staged twice, into two build folders
    first, handler = stage_subscriber(
        RUNTIME, "subscribers/search.py", "handler", settings_dir, tmp_path / "b1"
    )
    second, _ = stage_subscriber(RUNTIME, "subscribers/search.py", "handler", settings_dir, tmp_path / "b2")

    # THEN both hold the same bytes under the same name: the runtime and subscriber_code/search.py
    assert handler == "subscriber_code.search:handler"
    assert first.name == second.name and _tree(first) == _tree(second)
    tree = _tree(first)
    assert tree["subscriber_code/search.py"] == TEAM_MODULE.encode()
    assert {"subscriber_runtime/handler.py", "subscriber_code/__init__.py"} <= set(tree)
    if sys.version_info[:2] == (3, 13):  # the runtime's Python: its bytecode ships too
        assert any(name.startswith("subscriber_code/__pycache__/search.") for name in tree)
    # AND a changed handler file is another stage
    (settings_dir / "subscribers" / "search.py").write_text(TEAM_MODULE + "\n# changed\n")
    assert (
        stage_subscriber(RUNTIME, "subscribers/search.py", "handler", settings_dir, tmp_path / "b1")[0]
        != first
    )

    # AND the staged directory alone (as /var/task) runs the wrapper around the team's handler
    script = (
        "import json, sys, types; from subscriber_runtime.handler import lambda_handler; "
        "context = types.SimpleNamespace(function_name='f', memory_limit_in_mb=128, invoked_function_arn='arn', "
        "aws_request_id='r'); "
        "print('RESULT', json.dumps(lambda_handler(json.loads(sys.argv[1]), context)))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POWERTOOLS_", "DOCTABLE_"))}
    env.update({**BASE_ENV, "DOCTABLE_SUBSCRIBER_HANDLER": handler, "PYTHONPATH": str(first)})
    run = subprocess.run(
        [sys.executable, "-c", script, json.dumps(stream_event(insert(1)))],
        env=env,
        cwd=first,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    (result,) = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert json.loads(result.split(" ", 1)[1]) == {"batchItemFailures": []}


STAGING_ERRORS = [
    ("subscribers/missing.py", "handler", "not found under"),
    ("subscribers/my-search.py", "handler", "must be a Python module's"),
    ("subscribers/search.txt", "handler", "must be a Python module's"),
    ("subscribers/broken.py", "handler", "is not valid Python"),
    ("subscribers/search.py", "not-a-name", "is not a Python identifier"),
]


@pytest.mark.parametrize(("handler_file", "function", "names_what"), STAGING_ERRORS)
def test_staging_refuses_a_bad_handler_in_one_line(
    tmp_path: Path, handler_file, function, names_what
) -> None:
    (tmp_path / "subscribers").mkdir()
    for name in ("search.py", "my-search.py", "search.txt"):
        (tmp_path / "subscribers" / name).write_text(TEAM_MODULE)
    (tmp_path / "subscribers" / "broken.py").write_text("def handler(event, context)\n    return None\n")
    with pytest.raises(ValueError) as refused:
        stage_subscriber(RUNTIME, handler_file, function, tmp_path, tmp_path / "build")
    assert names_what in str(refused.value) and "\n" not in str(refused.value)
    assert not (tmp_path / "build").exists() or not any((tmp_path / "build").iterdir())
