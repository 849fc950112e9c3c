"""`doctable plan` with subscribers: each stream's readers against their limits, and each subscriber's records
per second per shard from a given time per record against what its shards deliver (doctable/plan/readers.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract.knobs import resolve_config
from doctable.cli import main
from doctable.plan.cost import Workload, build_plan

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
HANDLER = "examples/subscribers/search.py:handler"


def config(subscribers: dict[str, dict[str, Any]], **knobs: str) -> Any:
    declared = {name: {"handler": HANDLER, **table} for name, table in subscribers.items()}
    return resolve_config(
        context={"stream": "new-and-old", **knobs}, environ={}, subscribers=declared, settings_dir=ROOT
    )


def limit(plan: Any, code: str) -> dict[str, Any]:
    return next(entry for entry in plan.limits if entry["code"] == code)


def test_the_dynamodb_stream_counts_the_cleanup_consumer_and_each_direct_subscriber() -> None:
    # GIVEN the cleanup consumer and one subscriber on the stream, and one on the Kinesis destination
    plan = build_plan(Workload(100), config({"search": {}, "audit": {"source": "kinesis"}}, kinesis="on"))
    # THEN the stream has two readers of the two a single-region shard allows, and the limit says so
    assert plan.stream_readers["dynamodb"] == {
        "stream": True,
        "readers": ["cleanup consumer", "subscriber search"],
        "count": 2,
        "limit_per_shard": 2,
        "table": "single-region",
        "exceeded": False,
    }
    readers = limit(plan, "STREAM_READERS_PER_SHARD")
    assert (readers["needed"], readers["quota"], readers["exceeded"]) == (2, 2, False)
    # AND the Kinesis destination has one reader, sharing the shard's throughput
    assert plan.stream_readers["kinesis"]["readers"] == [{"reader": "subscriber audit", "through": "shared"}]


def test_a_global_table_allows_one_reader_per_shard() -> None:
    plan = build_plan(Workload(100), config({}, replicas="us-west-2"))
    assert (plan.stream_readers["dynamodb"]["count"], plan.stream_readers["dynamodb"]["limit_per_shard"]) == (
        1,
        1,
    )
    assert limit(plan, "STREAM_READERS_PER_SHARD")["quota"] == 1


@pytest.mark.parametrize(
    ("on_kinesis", "consumer_source", "expected"),
    [
        # two readers share each shard's throughput
        (["a", "b"], "dynamodb", [("subscriber a", "shared"), ("subscriber b", "shared")]),
        # more than two: each subscriber its own enhanced fan-out consumer, the consumer still shared
        (
            ["a", "b"],
            "kinesis",
            [
                ("cleanup consumer", "shared"),
                ("subscriber a", "enhanced fan-out"),
                ("subscriber b", "enhanced fan-out"),
            ],
        ),
        (["a", "b", "c"], "dynamodb", [(f"subscriber {n}", "enhanced fan-out") for n in "abc"]),
    ],
)
def test_kinesis_readers_share_a_shard_up_to_two_then_fan_out(
    on_kinesis: list[str], consumer_source: str, expected: list[tuple[str, str]]
) -> None:
    subscribers = {name: {"source": "kinesis"} for name in on_kinesis}
    plan = build_plan(Workload(100), config(subscribers, kinesis="on", consumer_source=consumer_source))
    kinesis = plan.stream_readers["kinesis"]
    assert [(r["reader"], r["through"]) for r in kinesis["readers"]] == expected
    fan_out = sum(1 for _, through in expected if through == "enhanced fan-out")
    assert (kinesis["shared"], kinesis["fan_out_consumers"], kinesis["fan_out_limit"]) == (
        len(expected) - fan_out, fan_out, 20
    )  # fmt: skip


def test_a_subscriber_slower_than_its_shard_lags_with_a_stable_code() -> None:
    # GIVEN 500 writes/s on one shard and a subscriber taking 10 ms a record, one batch at a time
    shape = config({"search": {"parallelization_factor": 1}})
    plan = build_plan(Workload(500), shape, {"search": 10})
    (row,) = plan.subscribers
    # THEN it sustains 100 records/s per shard against the 500 that arrive: it lags
    assert (row["shards"], row["records_per_second_per_shard"]) == (1, 500)
    assert row["sustained_records_per_second_per_shard"] == pytest.approx(100)
    assert (row["verdict"], row["busy"]) == ("lags", pytest.approx(5))
    (finding,) = plan.findings
    assert (finding["level"], finding["code"], finding["subject"]) == (
        "WARN",
        "plan.subscriber_lags",
        "subscriber:search",
    )
    assert finding["after"] == {"arriving": 500, "sustained": pytest.approx(100)}
    # AND ten batches at a time keep up, with no finding
    faster = build_plan(Workload(500), config({"search": {"parallelization_factor": 10}}), {"search": 10})
    assert faster.subscribers[0]["verdict"] == "keeps up" and faster.findings == []


def test_a_full_batch_longer_than_the_timeout_is_its_own_warning() -> None:
    # GIVEN batches of 100 records at 500 ms each (50 s) and a 30 s timeout
    plan = build_plan(Workload(1), config({"search": {"batch_size": 100, "timeout": 30}}), {"search": 500})
    (finding,) = plan.findings
    assert finding["code"] == "plan.subscriber_batch_timeout"
    assert finding["after"] == {"seconds_per_full_batch": pytest.approx(50), "timeout": 30}
    # AND one that also falls behind its shard (4 batches of 2 records/s against 10 records/s) warns of both
    both = build_plan(Workload(10), config({"search": {"batch_size": 100}}), {"search": 500})
    assert [f["code"] for f in both.findings] == ["plan.subscriber_batch_timeout", "plan.subscriber_lags"]
    assert both.subscribers[0]["verdict"] == "times out"


def test_a_kinesis_subscriber_is_measured_against_the_kinesis_shards() -> None:
    # GIVEN 1,000 writes/s: one DynamoDB stream shard, four on-demand Kinesis shards
    shape = config({"search": {}, "audit": {"source": "kinesis"}}, kinesis="on")
    plan = build_plan(Workload(1000), shape, {"audit": 2})
    rows = {row["name"]: row for row in plan.subscribers}
    assert (rows["search"]["shards"], rows["audit"]["shards"]) == (1, 4)
    assert rows["audit"]["records_per_second_per_shard"] == 250
    # AND a subscriber without a time per record is not judged
    assert (rows["search"]["verdict"], rows["search"]["ms_per_record"]) == ("unknown", None)


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "search.py").write_text("def handler(event, context):\n    return None\n")
    path = tmp_path / "doctable.toml"
    path.write_text(
        '[defaults]\nstream = "new-and-old"\n\n[environments.dev]\ntier = "dev"\n\n'
        '[environments.dev.subscribers.search]\nhandler = "search.py:handler"\nparallelization_factor = 1\n'
    )
    monkeypatch.setenv("DOCTABLE_CONFIG", str(path))
    return path


def test_the_json_plan_carries_the_readers_the_subscribers_and_the_warnings(
    settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["plan", "--env", "dev", "--writes-per-second", "500", "--subscriber-ms", "search=10"]
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["stream_readers"]["dynamodb"]["readers"] == ["cleanup consumer", "subscriber search"]
    assert [(s["name"], s["verdict"]) for s in data["subscribers"]] == [("search", "lags")]
    assert [f["code"] for f in data["findings"]] == ["plan.subscriber_lags"]
    # AND the text plan shows the same
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "DynamoDB stream: 2 of 2 per shard" in out and "WARN plan.subscriber_lags subscriber:search" in out


@pytest.mark.parametrize(
    ("given", "fragment"),
    [
        (
            ["nope=5"],
            "--subscriber-ms nope=5: environment dev declares no subscriber 'nope'; declared: search",
        ),
        (["search"], "--subscriber-ms 'search': expected NAME=MS"),
        (["search=fast"], "--subscriber-ms search=fast: allowed: milliseconds per record above 0"),
        (["search=0"], "--subscriber-ms search=0: allowed: milliseconds per record above 0"),
        (["search=5", "search=6"], "--subscriber-ms search is given twice"),
    ],
)
def test_a_bad_time_per_record_is_one_line_exit_2(
    settings: Path, given: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["plan", "--env", "dev", "--writes-per-second", "5"]
    for value in given:
        argv += ["--subscriber-ms", value]
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(err) == 1 and fragment in err[0], err
