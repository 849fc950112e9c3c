"""`doctable plan` for a global table (replicas), and the per-region limits it checks for every table."""

from __future__ import annotations

import json

import pytest

from contract.knobs import resolve_config
from doctable.cli import main
from doctable.plan.cost import HOURS_PER_MONTH, Workload, build_plan, value

pytestmark = pytest.mark.unit

MONTH_S = HOURS_PER_MONTH * 3600


def config(**knobs: str):
    return resolve_config(context={"stream": "new-and-old", **knobs}, environ={}, defaults={})


def limit(plan, code: str) -> dict:
    return next(entry for entry in plan.limits if entry["code"] == code)


def test_each_replica_region_pays_its_replicated_writes_and_the_transfer_to_it() -> None:
    # GIVEN 1,000 writes/s of 2 KB items on a table with two replica regions
    workload = Workload(1000, item_kb=2, delete_ratio=0.2, blobs_per_item=1)
    single = build_plan(workload, config())
    plan = build_plan(workload, config(replicas="us-west-2,eu-west-1"))
    # THEN each replica region takes every write at the replicated-write price (2 units a write)
    replicated = plan.monthly_usd["replicated writes (2 replica region(s))"]
    assert replicated == pytest.approx(
        2 * 1000 * 2 * MONTH_S / 1e6 * value("price_ddb_replicated_write_per_m")
    )
    # AND the bytes sent to each replica region are priced at the inter-region rate
    transfer = plan.monthly_usd["cross-region replication transfer (2 region(s))"]
    assert transfer == pytest.approx(
        2 * 1000 * 2 * MONTH_S / 1024 / 1024 * value("price_transfer_inter_region_gb")
    )
    # AND the home region's lines are those of the single-region table
    for name, usd in single.monthly_usd.items():
        assert plan.monthly_usd[name] == pytest.approx(usd)
    assert plan.replicas == ("us-west-2", "eu-west-1")
    assert plan.monthly_total > single.monthly_total


def test_replica_consumers_cost_requests_and_less_time_than_the_deleting_home_consumer() -> None:
    plan = build_plan(Workload(1000, delete_ratio=0.5, blobs_per_item=4), config(replicas="us-west-2"))
    requests = plan.monthly_usd["replica consumers' Lambda requests (1 region(s))"]
    assert requests == pytest.approx(plan.monthly_usd["Lambda requests"])
    assert (
        0
        < plan.monthly_usd["replica consumers' Lambda GB-seconds (1 region(s))"]
        < plan.monthly_usd["Lambda GB-seconds"]
    )


def test_storage_is_priced_in_every_region_when_it_is_priced_at_all() -> None:
    unpriced = build_plan(Workload(10), config(replicas="us-west-2,eu-west-1"))
    assert not any("replica storage" in name for name in unpriced.monthly_usd)
    plan = build_plan(Workload(10, stored_items=10_000_000), config(replicas="us-west-2,eu-west-1"))
    assert plan.monthly_usd["replica storage (2 region(s))"] == pytest.approx(
        2 * plan.monthly_usd["table storage"]
    )


def test_the_table_write_quota_is_exceeded_past_40000_units_a_second_in_each_region() -> None:
    # GIVEN 100x the README's example (100,000 writes/s of 1 KB)
    plan = build_plan(Workload(100_000), config(replicas="us-west-2"))
    quota = limit(plan, "TABLE_WRITE_QUOTA")
    assert (quota["needed"], quota["quota"], quota["exceeded"]) == (100_000, 40_000, True)
    # AND 10x stays within it, and within the region's Lambda concurrency
    ten = build_plan(Workload(10_000), config(replicas="us-west-2"))
    assert not limit(ten, "TABLE_WRITE_QUOTA")["exceeded"]
    concurrency = limit(ten, "LAMBDA_CONCURRENCY")
    assert (concurrency["needed"], concurrency["exceeded"]) == (ten.shards * 4, False)


def test_index_writes_count_against_the_table_write_quota() -> None:
    plan = build_plan(Workload(30_000), config(gsi="gsi1"))
    quota = limit(plan, "TABLE_WRITE_QUOTA")
    assert quota["needed"] == 60_000 and quota["exceeded"]


def test_lambda_concurrency_is_exceeded_past_1000_concurrent_batches() -> None:
    plan = build_plan(Workload(300_000), config(parallelization_factor="4"))
    concurrency = limit(plan, "LAMBDA_CONCURRENCY")
    assert (concurrency["needed"], concurrency["quota"], concurrency["exceeded"]) == (1200, 1000, True)


def test_json_carries_the_replicas_and_every_limit_with_its_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        [
            "plan",
            "--writes-per-second",
            "1000",
            "--json",
            "-c",
            "stream=new-and-old",
            "-c",
            "replicas=us-west-2",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["replicas"] == ["us-west-2"]
    assert {entry["code"] for entry in data["limits"]} == {
        "TABLE_WRITE_QUOTA",
        "TABLE_READ_QUOTA",
        "LAMBDA_CONCURRENCY",
        "STREAM_READERS_PER_SHARD",
    }
    assert all(entry["source"] and isinstance(entry["exceeded"], bool) for entry in data["limits"])
