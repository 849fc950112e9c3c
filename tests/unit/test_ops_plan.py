"""`doctable plan`: the capacity and cost model, and its one-line refusals."""

from __future__ import annotations

import json

import pytest

from contract.knobs import resolve_config
from doctable.cli import main
from doctable.plan.cost import HOURS_PER_MONTH, Workload, build_plan, predict_delivery, value

pytestmark = pytest.mark.unit


def config(**knobs: str):
    return resolve_config(context={"stream": "new-and-old", **knobs}, environ={}, defaults={})


def test_shards_follow_write_units_and_consumers_multiply_by_the_parallelization_factor() -> None:
    # GIVEN 2,500 writes/s of 1 KB items (2,500 WCU/s) and 2 KB items (5,000 WCU/s), parallelization factor 3
    small = build_plan(Workload(2500, item_kb=1), config(parallelization_factor="3"))
    large = build_plan(Workload(2500, item_kb=2), config(parallelization_factor="3"))
    # THEN one shard per 1,000 WCU/s, and 3 concurrent consumers per shard
    assert (small.shards, small.concurrent_consumers) == (3, 9)
    assert (large.shards, large.concurrent_consumers) == (5, 15)


def test_batches_fill_only_when_a_poll_finds_more_than_the_batch_size() -> None:
    # GIVEN four polls a second per shard
    # WHEN 2 writes/s arrive THEN each record is its own invocation
    slow = build_plan(Workload(2), config(batch_size="10"))
    assert slow.invocations_per_second == pytest.approx(2) and slow.records_per_invocation == 1
    # WHEN 20 writes/s arrive THEN each poll finds 5 records: 4 invocations/s of 5
    mid = build_plan(Workload(20), config(batch_size="10"))
    assert mid.invocations_per_second == pytest.approx(4) and mid.records_per_invocation == 5
    # WHEN 800 writes/s arrive THEN full batches of 10: 80 invocations/s
    fast = build_plan(Workload(800), config(batch_size="10"))
    assert fast.invocations_per_second == pytest.approx(80) and fast.records_per_invocation == 10


def test_a_consumer_slower_than_its_shard_is_a_high_iterator_age_risk() -> None:
    # GIVEN 100 writes/s, every one a delete of an item with 10 blobs listed as plain keys (each HEADed), on a
    # 128 MB function with one batch at a time
    plan = build_plan(
        Workload(100, delete_ratio=1, blobs_per_item=10, manifest_share=0),
        config(memory="128", batch_size="100", parallelization_factor="1"),
    )
    # THEN the batch time exceeds what one consumer can take, and the risk says so
    assert plan.shard_capacity_records_per_second < plan.records_per_second_per_shard
    assert plan.iterator_age_risk.startswith("HIGH")
    # AND more memory and parallel batches bring it down
    better = build_plan(
        Workload(100, delete_ratio=1, blobs_per_item=10, manifest_share=0),
        config(memory="3008", batch_size="100", parallelization_factor="10"),
    )
    assert better.shard_capacity_records_per_second > better.records_per_second_per_shard


def test_cost_lines_follow_the_published_prices() -> None:
    plan = build_plan(
        Workload(100, item_kb=1.5, delete_ratio=0.5, blobs_per_item=2, manifest_share=0), config()
    )
    month = HOURS_PER_MONTH * 3600
    # 1.5 KB = 2 write units per write; stream reads by Lambda are free; S3 HEADs per dropped plain key
    assert plan.monthly_usd["DynamoDB on-demand writes"] == pytest.approx(
        100 * 2 * month / 1e6 * value("price_ddb_write_per_m")
    )
    assert plan.monthly_usd["DynamoDB stream reads by Lambda"] == 0
    assert plan.monthly_usd["S3 HEAD (GET class)"] == pytest.approx(100 * 0.5 * 2 * month / 1000 * 0.0004)
    assert plan.s3_delete_keys_per_second == 100
    assert plan.monthly_total == pytest.approx(sum(plan.monthly_usd.values()))


def test_with_key_reuse_never_there_is_no_head_and_no_live_item_read() -> None:
    # GIVEN the same workload of plain keys, guarded (the default) and never reused
    workload = Workload(500, delete_ratio=0.5, blobs_per_item=3, manifest_share=0)
    guarded = build_plan(workload, config(batch_size="100"))
    never = build_plan(workload, config(batch_size="100", blob_key_reuse="never"))
    # THEN without the check there are no HEADs and no consistent reads to pay for, the same deletes, and a
    # batch takes one DeleteObjects round trip instead of the HEADs, the read and the delete
    assert guarded.s3_head_per_second == 750 and never.s3_head_per_second == 0
    assert never.s3_delete_keys_per_second == guarded.s3_delete_keys_per_second == 750
    assert "S3 HEAD (GET class)" in guarded.monthly_usd and "S3 HEAD (GET class)" not in never.monthly_usd
    assert "DynamoDB consistent reads (BatchGetItem)" not in never.monthly_usd
    assert never.monthly_total < guarded.monthly_total
    assert never.seconds_per_batch < guarded.seconds_per_batch - value("s3_latency_s")
    assert never.knobs["blob_key_reuse"] == "never"


def test_snapstart_adds_one_cached_snapshot_and_names_the_restore_price() -> None:
    workload = Workload(100)
    plain = build_plan(workload, config(memory="512"))
    snap = build_plan(workload, config(memory="512", snapstart="on"))
    line = "Lambda SnapStart snapshot cache (one version)"
    assert line not in plain.monthly_usd
    # 0.5 GB cached for the whole month, at the published GB-second price
    assert snap.monthly_usd[line] == pytest.approx(
        0.5 * HOURS_PER_MONTH * 3600 * value("price_snapstart_cache_gbs")
    )
    assert snap.monthly_total == pytest.approx(plain.monthly_total + snap.monthly_usd[line])
    assert any("0.070 USD per 1,000 new execution environments" in note for note in snap.notes)


def test_s3_rate_is_compared_with_one_prefix_limit() -> None:
    plan = build_plan(Workload(7000, delete_ratio=1, blobs_per_item=1), config())
    assert plan.s3_prefix_use == pytest.approx(7000 / 3500)


def test_predicted_delivery_of_a_burst() -> None:
    # 100 records written in 1 s: 4 polls of 25, batch size 10 -> 3 invocations per poll
    assert predict_delivery(100, 1.0, 10) == {"invocations": 12, "records_per_invocation": 100 / 12}
    # 3 records in 0.1 s: one poll, one invocation
    assert predict_delivery(3, 0.1, 10)["invocations"] == 1


def test_plan_prints_every_assumption_with_its_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--writes-per-second", "50", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["shards"] == 1 and data["monthly_total_usd"] > 0
    assert all(entry["source"] for entry in data["assumptions"].values())


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--writes-per-second", "fast"], "--writes-per-second 'fast' is not a number"),
        (["--writes-per-second", "0"], "--writes-per-second '0' is out of range"),
        (["--writes-per-second", "5", "--delete-ratio", "1.5"], "--delete-ratio '1.5' is out of range"),
        (["--writes-per-second", "5", "--blobs-per-item", "2.5"], "--blobs-per-item '2.5' is not a number"),
        (["--writes-per-second", "5", "-c", "batch_size=0"], "invalid settings: batch_size"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", *argv]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(err) == 1 and fragment in err[0] and "Traceback" not in err[0]


def test_the_workload_rate_is_a_required_option(capsys: pytest.CaptureFixture[str]) -> None:
    # argparse's usage error (exit 2), its usage line showing the option as required
    with pytest.raises(SystemExit) as caught:
        main(["plan"])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "the following arguments are required: --writes-per-second" in err
    assert "[--writes-per-second" not in err  # shown as required, not optional


def test_manifest_entries_need_no_head_and_a_full_shard_keeps_up_at_the_defaults() -> None:
    # GIVEN one shard at its ~1,000 writes/s, 30% deletes of 3 blobs each, at the shipped defaults
    workload = dict(writes_per_second=1000, item_kb=1, delete_ratio=0.3, blobs_per_item=3)
    manifest = build_plan(Workload(**workload), config(stream="new-and-old"))  # type: ignore[arg-type]
    plain = build_plan(Workload(**workload, manifest_share=0), config(stream="new-and-old"))  # type: ignore[arg-type]
    # THEN with manifest entries there is no HEAD and the shard's consumers keep up (no growing iterator age)
    assert manifest.s3_head_per_second == 0 and plain.s3_head_per_second == 900
    assert manifest.shard_capacity_records_per_second >= 1000
    assert not manifest.iterator_age_risk.startswith("HIGH")
    # AND plain keys, each HEADed first, cost a slower batch
    assert plain.seconds_per_batch > manifest.seconds_per_batch
