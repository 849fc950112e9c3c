"""verify's nudge through each subscriber's filter: which writes a probe makes (verify/probe.py), and the two rows
it fills against a small world (a table with one stream shard, the subscriber's mapping and log group) whose poller
applies the mapping's live filter as the local AWS does (local/pollers/filtering.py) and logs the wrapper's proof
line. No AWS."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract import names
from contract.knobs import DocTableConfig, resolve_config
from doctable.core.deployment import DEPLOYED, Deployment
from doctable.core.render import Progress
from doctable.verify import probe
from doctable.verify.checks import Verifier
from doctable.verify.record import FAIL, PASS, SKIP, Row
from doctable.verify.subscribers import EXCLUDED_REACHED, NOT_REACHED, subscriber_checks
from local.pollers import filtering

pytestmark = pytest.mark.unit

STREAM = "arn:aws:dynamodb:eu-west-1:123456789012:table/items-dev/stream/2026-01-01T00:00:00.000"
INSERT_MODIFY = '{"eventName": ["INSERT", "MODIFY"]}'
EPOCH = 1_700_000_000.0


def config_with(folder: Path, *filters: str, **options: Any) -> DocTableConfig:
    (folder / "audit.py").write_text("def handler(event, context):\n    return None\n")
    declared = {"handler": "audit.py:handler", "filters": list(filters), **options}
    return resolve_config(
        context={"stream": "new-and-old"},
        environ={},
        defaults={},
        subscribers={"audit": declared},
        settings_dir=folder,
    )


class World:
    """The table's one stream shard, the subscriber's mapping (its live filter and state) and its log group. Each
    time the run waits, the subscriber's poller reads the records written since, keeps those the mapping's filter
    passes and, when any is left, logs one proof line for them as the wrapper does."""

    def __init__(self, filters: tuple[str, ...], state: str = "Enabled") -> None:
        self.now = 0.0
        self.items: dict[tuple[str, str], dict[str, Any]] = {}
        self.records: list[dict[str, Any]] = []
        self.read = 0
        self.lines: list[dict[str, Any]] = []
        self.invoked = True  # False: the subscriber never runs (its function fails to start, say)
        self.mapping: dict[str, Any] = {
            "UUID": "u-audit",
            "State": state,
            "EventSourceArn": STREAM,
            "StartingPosition": "TRIM_HORIZON",
            "FilterCriteria": {"Filters": [{"Pattern": f} for f in filters]} if filters else {},
        }

    # --------------------------------------------------------------------------------- the AWS side
    def client(self, service: str) -> World:
        return self

    def put_item(self, TableName: str, Item: dict[str, Any]) -> None:  # noqa: N803 (boto3's names)
        key = (Item[names.PARTITION_KEY]["S"], Item[names.SORT_KEY]["S"])
        old = self.items.get(key)
        self.items[key] = Item
        self._change("MODIFY" if old else "INSERT", key, old, Item)

    def delete_item(self, TableName: str, Key: dict[str, Any]) -> None:  # noqa: N803
        key = (Key[names.PARTITION_KEY]["S"], Key[names.SORT_KEY]["S"])
        old = self.items.pop(key, None)
        if old is not None:
            self._change("REMOVE", key, old, None)

    def _change(self, event: str, key: tuple[str, str], old: Any, new: Any) -> None:
        number = str(1_000 + len(self.records))
        images: dict[str, Any] = {
            "Keys": {names.PARTITION_KEY: {"S": key[0]}, names.SORT_KEY: {"S": key[1]}},
            "SequenceNumber": number,
            "SizeBytes": 10,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
            **({"OldImage": old} if old else {}),
            **({"NewImage": new} if new else {}),
        }
        self.records.append(
            {"eventID": number, "eventName": event, "eventSource": "aws:dynamodb", "awsRegion": "eu-west-1",
             "eventSourceARN": STREAM, "dynamodb": images}
        )  # fmt: skip

    def describe_stream(self, StreamArn: str, **_: Any) -> dict[str, Any]:  # noqa: N803
        return {"StreamDescription": {"Shards": [{"ShardId": "s1", "SequenceNumberRange": {}}]}}

    def get_shard_iterator(self, **_: Any) -> dict[str, Any]:
        return {"ShardIterator": str(len(self.records))}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:  # noqa: N803
        return {"Records": self.records[int(ShardIterator) :], "NextShardIterator": str(len(self.records))}

    def get_event_source_mapping(self, UUID: str) -> dict[str, Any]:  # noqa: N803
        return dict(self.mapping)

    def filter_log_events(self, logGroupName: str, startTime: int, **_: Any) -> dict[str, Any]:  # noqa: N803
        return {"events": [e for e in self.lines if e["timestamp"] >= startTime]}

    # ------------------------------------------------------------------------------ the subscriber's poller
    def sleep(self, seconds: float) -> None:
        self.now += seconds
        batch, self.read = self.records[self.read :], len(self.records)
        patterns = filtering.parse_criteria(self.mapping["FilterCriteria"] or None)
        batch = [r for r in batch if filtering.passes(patterns, r)]
        if not batch or not self.invoked or self.mapping["State"] != "Enabled":
            return
        counts = {name: sum(r["eventName"] == name for r in batch) for name in ("INSERT", "MODIFY", "REMOVE")}
        line = {
            "message": names.PROOF_LOG_MESSAGE, "subscriber": "audit", "record_count": len(batch),
            "event_names": counts, "first_sequence_number": batch[0]["dynamodb"]["SequenceNumber"],
            "last_sequence_number": batch[-1]["dynamodb"]["SequenceNumber"], "table_name": "items-dev",
        }  # fmt: skip
        self.lines.append({"timestamp": int((EPOCH + self.now) * 1000), "message": json.dumps(line)})

    def wall(self) -> float:
        return EPOCH + self.now


class FakeAws:
    def __init__(self, world: World) -> None:
        self.world, self.region, self.partition, self.account = world, "eu-west-1", "aws", "123456789012"

    def client(self, service: str) -> World:
        return self.world


def verify(
    world: World, config: DocTableConfig, *, read_only: bool = False
) -> tuple[Verifier, dict[str, Row]]:
    """The subscriber's three rows, as a verify run fills them (its Verifier, its row conversion)."""
    outputs = {
        names.subscriber_output("audit", names.OUT_SUBSCRIBER_FUNCTION): "audit-fn",
        names.subscriber_output("audit", names.OUT_SUBSCRIBER_LOG_GROUP): "/aws/lambda/audit-fn",
        names.subscriber_output("audit", names.OUT_SUBSCRIBER_MAPPING): "u-audit",
    }
    deployment = Deployment(
        config, "eu-west-1", "123456789012", stack_status="CREATE_COMPLETE", outputs=outputs
    )
    deployment.knobs_source = DEPLOYED
    progress = Progress(quiet=True, sleep=world.sleep, clock=lambda: world.now)
    verifier = Verifier(
        FakeAws(world), deployment, progress=progress, timeout=30, settle=0, wall_clock=world.wall,  # type: ignore[arg-type]
        read_only=read_only,
    )  # fmt: skip
    checks = subscriber_checks(verifier)
    rows = {
        row_id: verifier._run_check(row_id, check, expected, checks[row_id])
        for row_id, check, expected in verifier.planned
        if row_id.startswith(("subscriber-nudge:", "subscriber-excluded:"))
    }
    return verifier, rows


def results(rows: dict[str, Row]) -> dict[str, str]:
    return {row_id: row.result for row_id, row in rows.items()}


# ------------------------------------------------------------------------------------------------ the nudge
def test_a_change_its_filter_passes_reaches_it_and_one_it_excludes_does_not(tmp_path: Path) -> None:
    # GIVEN a subscriber of INSERTs and MODIFYs, its mapping filtering as declared
    config = config_with(tmp_path, INSERT_MODIFY)
    world = World(config.subscribers[0].filters)
    # WHEN verify nudges it
    verifier, rows = verify(world, config)
    # THEN both halves pass: the INSERT after the REMOVE reached its proof line, the REMOVE was counted by none
    assert results(rows) == {"subscriber-nudge:audit": PASS, "subscriber-excluded:audit": PASS}
    assert [r["eventName"] for r in world.records] == ["INSERT", "REMOVE", "INSERT"]
    assert "REMOVE seq 1001 not delivered" in rows["subscriber-excluded:audit"].observed
    # AND the probe is one item of the run's own key, in the scratch list, naming no blob and no expiry
    probe_keys = {(r["dynamodb"]["Keys"]["pk"]["S"], r["dynamodb"]["Keys"]["sk"]["S"]) for r in world.records}
    assert probe_keys == {(verifier.pk, "subscriber-audit")} and probe_keys <= set(verifier.scratch.items)
    written = [r["dynamodb"]["NewImage"] for r in world.records if "NewImage" in r["dynamodb"]]
    assert not any(names.BLOBS_ATTRIBUTE in item or names.TTL_ATTRIBUTE in item for item in written)


def test_a_filter_changed_behind_the_stack_fails_the_excluded_row(tmp_path: Path) -> None:
    # GIVEN the mapping's filter removed behind the stack: the REMOVE the declaration excludes reaches it
    config = config_with(tmp_path, INSERT_MODIFY)
    world = World(())
    _, rows = verify(world, config)
    # THEN the passing half passes and the excluded half fails, naming the REMOVE that invoked it
    assert results(rows) == {"subscriber-nudge:audit": PASS, "subscriber-excluded:audit": FAIL}
    assert rows["subscriber-excluded:audit"].error == {
        "code": EXCLUDED_REACHED,
        "event": "REMOVE",
        "sequence": "1001",
    }


def test_a_subscriber_never_invoked_fails_the_nudge_and_cannot_judge_the_exclusion(tmp_path: Path) -> None:
    config = config_with(tmp_path, INSERT_MODIFY)
    world = World(config.subscribers[0].filters)
    world.invoked = False
    _, rows = verify(world, config)
    assert results(rows) == {"subscriber-nudge:audit": FAIL, "subscriber-excluded:audit": FAIL}
    assert rows["subscriber-nudge:audit"].error == {
        "code": NOT_REACHED,
        "event": "INSERT",
        "sequence": "1002",
    }
    assert rows["subscriber-excluded:audit"].observed.startswith("not attempted")


def test_without_a_filter_only_the_passing_half_is_checked(tmp_path: Path) -> None:
    config = config_with(tmp_path)
    world = World(())
    _, rows = verify(world, config)
    assert results(rows) == {"subscriber-nudge:audit": PASS, "subscriber-excluded:audit": SKIP}
    assert "no filter" in rows["subscriber-excluded:audit"].observed
    assert [r["eventName"] for r in world.records] == ["INSERT"]


def test_a_filter_no_probe_can_pass_skips_both_halves_saying_why(tmp_path: Path) -> None:
    # GIVEN a filter on the item's partition key, which a probe cannot choose (it is the run's)
    config = config_with(tmp_path, '{"dynamodb": {"Keys": {"pk": {"S": [{"prefix": "doc#"}]}}}}')
    world = World(config.subscribers[0].filters)
    _, rows = verify(world, config)
    assert results(rows) == {"subscriber-nudge:audit": SKIP, "subscriber-excluded:audit": SKIP}
    assert world.records == []


def test_a_disabled_mapping_is_not_nudged(tmp_path: Path) -> None:
    config = config_with(tmp_path, INSERT_MODIFY)
    world = World(config.subscribers[0].filters, state="Disabled")
    _, rows = verify(world, config)
    assert results(rows) == {"subscriber-nudge:audit": FAIL, "subscriber-excluded:audit": FAIL}
    assert "mapping u-audit is Disabled" in rows["subscriber-nudge:audit"].observed and world.records == []


def test_a_read_only_run_skips_the_nudges(tmp_path: Path) -> None:
    config = config_with(tmp_path, INSERT_MODIFY)
    verifier, rows = verify(World(()), config, read_only=True)
    assert rows == {}
    skipped = {row_id for row_id, _, _ in verifier.skipped}
    assert {"subscriber-nudge:audit", "subscriber-excluded:audit"} <= skipped
    assert "subscriber:audit" in {row_id for row_id, _, _ in verifier.planned}


# --------------------------------------------------------------------------------------------- the plan
PUT, DELETE = "put", "delete"


@pytest.mark.parametrize(
    ("filters", "writes", "witness", "excluded"),
    [
        ((), [(PUT, {}, "INSERT", True)], 0, None),
        (
            (INSERT_MODIFY,),
            [(PUT, {}, "INSERT", True), (DELETE, {}, "REMOVE", False), (PUT, {}, "INSERT", True)],
            2,
            1,
        ),
        (('{"eventName": ["REMOVE"]}',), [(PUT, {}, "INSERT", False), (DELETE, {}, "REMOVE", True)], 1, 0),
        (('{"eventName": ["MODIFY"]}',), [(PUT, {}, "INSERT", False), (PUT, {}, "MODIFY", True)], 1, 0),
        (
            ('{"dynamodb": {"NewImage": {"type": {"S": ["order"]}}}}',),
            [(PUT, {}, "INSERT", False), (PUT, {"type": {"S": "order"}}, "MODIFY", True)],
            1,
            0,
        ),
        (
            ('{"eventName": ["INSERT"], "dynamodb": {"NewImage": {"title": {"S": [{"exists": true}]}}}}',),
            [
                (PUT, {}, "INSERT", False),
                (DELETE, {}, "REMOVE", False),
                (PUT, {"title": {"S": "doctable-probe"}}, "INSERT", True),
            ],
            2,
            1,  # the REMOVE: the INSERT it excludes shares its event name with the passing one
        ),
        (('{"dynamodb": {"Keys": {"pk": {"S": [{"prefix": "doc#"}]}}}}',), [], None, None),
        (('{"eventID": ["1"]}',), [], None, None),
    ],
)
def test_the_probe_makes_the_shortest_writes_that_tell_both_halves(
    tmp_path: Path,
    filters: tuple[str, ...],
    writes: list[tuple[str, dict[str, Any], str, bool]],
    witness: int | None,
    excluded: int | None,
) -> None:
    (spec,) = config_with(tmp_path, *filters).subscribers
    plan = probe.probe_plan(spec, "NEW_AND_OLD_IMAGES")
    made = [
        (DELETE if w.attributes is None else PUT, w.item_attributes, w.event, w.passes) for w in plan.writes
    ]
    assert made == writes
    assert (plan.witness, plan.excluded) == (witness, excluded)
    assert bool(plan.why) == (excluded is None)


def test_a_filter_on_images_the_stream_does_not_carry_cannot_be_passed(tmp_path: Path) -> None:
    (spec,) = config_with(tmp_path, '{"dynamodb": {"NewImage": {"type": {"S": ["order"]}}}}').subscribers
    assert probe.probe_plan(spec, "KEYS_ONLY").witness is None


FILTERS = [
    '{"eventName": ["INSERT", "MODIFY"]}',
    '{"eventName": [{"anything-but": "REMOVE"}]}',
    '{"dynamodb": {"NewImage": {"kind": {"S": [{"prefix": "subscriber"}]}}}}',
    '{"dynamodb": {"OldImage": {"n": {"N": ["1"]}}}}',
    '{"dynamodb": {"NewImage": {"title": {"S": [{"exists": false}]}}}}',
    '{"eventSource": ["aws:dynamodb"], "dynamodb": {"StreamViewType": [{"suffix": "IMAGES"}]}}',
    '{"$or": [{"eventName": ["REMOVE"]}, {"dynamodb": {"NewImage": {"n": {"N": ["2"]}}}}]}',
    '{"eventName": [{"equals-ignore-case": "insert"}], "dynamodb": {"Keys": {"sk": {"S": ["subscriber-audit"]}}}}',
]


@pytest.mark.parametrize("pattern", FILTERS)
def test_each_verdict_the_plan_reads_is_the_local_aws_filters(pattern: str) -> None:
    # GIVEN the writes of a put, a second put, a delete and a put on the probe item, as change records with
    # every field filled in (the run's partition key, sequence numbers)
    world = World(())
    key = {names.PARTITION_KEY: {"S": "doctable-verify-run"}, names.SORT_KEY: {"S": "subscriber-audit"}}
    for number, deletes in enumerate([False, False, True, False], 1):
        if deletes:
            world.delete_item(TableName="t", Key=key)
        else:
            world.put_item(
                TableName="t", Item={**key, "kind": {"S": probe.NUDGE_KIND}, "n": {"N": str(number)}}
            )
    # WHEN the plan's reading decides a verdict THEN it is the one the local AWS's filter gives the full record
    steps: tuple[probe.Attributes | None, ...] = ((), (), None, ())
    parsed = [json.loads(pattern)]
    writes = probe._simulate(steps, parsed, "subscriber-audit", "NEW_AND_OLD_IMAGES")
    assert writes is not None
    told = [
        (w.passes, filtering.passes(parsed, record)) for w, record in zip(writes, world.records, strict=True)
    ]
    assert all(verdict is None or verdict == local for verdict, local in told), told
    assert any(verdict is not None for verdict, _ in told)
