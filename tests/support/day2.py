"""Day 2 on live stacks: the machinery of tests/integration/test_day2_*.py.

Each test there is a chain of flips on a stack of its own, so a failing flip hides only the rest of its own
chain, and the two modules run in parallel under pytest-xdist. Each module's local AWS keeps AWS's TTL change
interval (an hour): the limit is hit once on purpose, then the local AWS's clock control (local/clock.py) says the
interval has passed, so TTL is toggled again without waiting an hour. Items and blobs written after a chain's first deploy must survive every flip that keeps the
table (and the blob bucket); a failed update (the rate limit, then a resource that cannot be created) rolls
back, verify passes right after it (against the knobs the stack holds, saying the last update rolled back), and
the next deploy succeeds.

Before each flip preflight runs with the new knobs (``--json``); the codes of its predicted changes are compared
with what the deploy did, read as the same codes from the stack's per-resource events of that update (table,
event-source mapping) and the live describe calls (indexes, TTL, PITR, stream ARN, mapping UUIDs, blob bucket)
before and after; its destructive codes with the flip's expected ones. A mismatch is recorded under the flip's
name and every flip's result is listed at the end of its chain, so one wrong prediction does not hide the next.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support import localaws as lt
from tests.support.cli import context_args, run_doctable

RATE_LIMITED = "Time to live has been modified multiple times within a fixed interval"
BASE = {"env": "dev", "table_base": "daytwo", "stream": "new-and-old"}
KEPT = [(f"kept-{n}", "doc") for n in range(3)]
TABLE_TYPE, MAPPING_TYPE = "AWS::DynamoDB::Table", "AWS::Lambda::EventSourceMapping"
REPLACING = "requires the creation of a new physical resource"
ROLLED_BACK_NOTE = "rolled back"
BLOB_BUCKET_OUTPUT = "BlobBucketName"
# The stream turned off takes the mapping and the built-in consumer (consumer=auto) with its bucket.
DROPS_THE_STREAM = {"stream.disabled", "mapping.deleted", "bucket.leaves_stack"}


@dataclass
class Live:
    """What the describe calls and the stack's events say at one moment (compared before and after a flip)."""

    table_id: str
    indexes: set[str]
    ttl: str
    pitr: str
    stream: str | None
    mappings: set[str]
    bucket: str | None  # the blob bucket the stack holds (its output)
    events: set[str] = field(default_factory=set)


@dataclass
class Prediction:
    """preflight's codes for one flip: the changes it predicts and the destructive ones."""

    changes: set[str]
    destructive: set[str]


def predicted_changes(report: dict[str, Any]) -> Prediction:
    """preflight's JSON as codes: every CHANGE finding's, and its top-level destructive list."""
    for finding in report["findings"]:
        assert finding["level"] != "STOP", f"preflight says STOP: {finding}"
    changes = {f["code"] for f in report["findings"] if f["level"] == "CHANGE"}
    return Prediction(changes, set(report["destructive"]))


def actual_changes(before: Live, after: Live, events: list[dict[str, Any]]) -> set[str]:
    """What the update did, as preflight's codes: the table's and mapping's resource events, and the describe
    calls before/after."""
    codes: set[str] = set()
    table_events = [e for e in events if e["ResourceType"] == TABLE_TYPE]
    if after.table_id != before.table_id or any(
        REPLACING in (e.get("ResourceStatusReason") or "") for e in table_events
    ):
        codes.add("table.replaced")
    if after.indexes - before.indexes:
        codes.add("index.added")
    if before.indexes - after.indexes:
        codes.add("index.removed")
    if after.ttl != before.ttl:
        codes.add("ttl.enabled" if after.ttl == "ENABLED" else "ttl.disabled")
    if after.pitr != before.pitr:
        codes.add("pitr.enabled" if after.pitr == "ENABLED" else "pitr.disabled")
    if after.stream != before.stream:
        codes.add(
            "stream.disabled" if after.stream is None
            else "stream.enabled" if before.stream is None
            else "stream.recreated"
        )  # fmt: skip
    if before.bucket is not None and after.bucket != before.bucket:
        codes.add("bucket.leaves_stack")
    verbs: set[str] = set()
    for event in (e for e in events if e["ResourceType"] == MAPPING_TYPE):
        status, reason = event["ResourceStatus"], event.get("ResourceStatusReason") or ""
        if status == "UPDATE_IN_PROGRESS" and REPLACING in reason:
            verbs.add("replaced")
        elif status in ("CREATE_COMPLETE", "DELETE_COMPLETE", "UPDATE_COMPLETE"):
            verbs.add(status.split("_")[0].lower())
    if "replaced" in verbs or {"create", "delete"} <= verbs:
        mapping = "mapping.replaced"
    else:
        mapping = {"create": "mapping.created", "delete": "mapping.deleted", "update": "mapping.updated"}.get(
            next(iter(verbs), ""), ""
        )
    live_mapping = (
        "" if after.mappings == before.mappings and not verbs
        else "mapping.created" if not before.mappings and after.mappings
        else "mapping.deleted" if before.mappings and not after.mappings
        else "mapping.replaced" if before.mappings != after.mappings
        else "mapping.updated"
    )  # fmt: skip
    assert mapping == live_mapping, f"the mapping's events say {mapping!r}, the live UUIDs {live_mapping!r}"
    if mapping:
        codes.add(mapping)
    return codes


class Day2:
    """One chain of flips on a stack of its own (``base``: its knobs before any flip) in the module's local AWS."""

    def __init__(self, aws: lt.LocalAWS, workdir: Path, base: dict[str, str]):
        self.aws = aws
        self.workdir = workdir
        self.base = base
        self.stack = lt.stack_name(base)
        self.runs = 0
        self.results: list[tuple[str, list[str]]] = []  # each flip's name and its mismatches (none: passed)

    def record(self, name: str, prediction: Prediction, actual: set[str], destructive: set[str]) -> None:
        """One flip's result: what preflight predicted against what the deploy did and the destructive codes."""
        problems = []
        if prediction.changes != actual:
            problems.append(
                f"preflight predicted {sorted(prediction.changes)}, the deploy did {sorted(actual)}"
            )
        if prediction.destructive != destructive:
            problems.append(f"destructive {sorted(prediction.destructive)}, expected {sorted(destructive)}")
        self.results.append((name, problems))

    def report(self) -> str:
        return "\n".join(
            f"{'FAIL' if problems else 'ok  '} {name}" + "".join(f"\n       {p}" for p in problems)
            for name, problems in self.results
        )

    def mismatches(self) -> list[str]:
        return [f"flip {name!r}: {'; '.join(problems)}" for name, problems in self.results if problems]

    def no_mismatches(self) -> None:
        """Every flip of the chain did what preflight predicted."""
        assert not self.mismatches(), "\n".join(self.mismatches())

    def deploy(self, **knobs: str) -> lt.Deployed:
        return self.deploy_exact({**self.base, **knobs})

    def deploy_exact(self, knobs: dict[str, str]) -> lt.Deployed:
        self.runs += 1
        return lt.deploy(self.aws, knobs, self._out())

    def failed_deploy(self, **knobs: str) -> str:
        """What the CLI said (its whole log: the CloudTrail lookup it makes after a failure pushes the
        stack's events out of the error's tail)."""
        self.runs += 1
        out = self._out()
        with pytest.raises(lt.CdkFailed):
            lt.deploy(self.aws, {**self.base, **knobs}, out)
        return (out / "cdk.log").read_text(errors="replace")

    def verify(self, **knobs: str) -> str:
        """verify's whole output (stdout, then stderr); it must pass."""
        env = {**self.aws.env, "DOCTABLE_STATE_DIR": str(self.workdir / "state")}
        args = ["verify", "--timeout", "60", "--settle", "5", *context_args({**self.base, **knobs})]
        result = run_doctable(args, env=env, timeout=600)
        assert result.code == 0, result.out + result.err
        return result.out + result.err

    def preflight(self, knobs: dict[str, str]) -> Prediction:
        """The changes preflight predicts for a deploy of ``knobs`` (exit 0: nothing blocks it)."""
        args = ["preflight", "--json", *context_args(knobs)]
        result = run_doctable(args, env=self.aws.env, timeout=300)
        assert result.code == 0, result.out + result.err
        return predicted_changes(result.json())

    def live(self) -> Live:
        described = self.table()
        events = self.aws.client("cloudformation").get_paginator("describe_stack_events")
        pages = events.paginate(StackName=self.stack)
        return Live(
            # The table's identity: its creation time (moto's DescribeTable has no TableId).
            table_id=str(described["table"]["CreationDateTime"]),
            indexes={g["IndexName"] for g in described["table"].get("GlobalSecondaryIndexes", [])},
            ttl=described["ttl"],
            pitr=described["pitr"],
            stream=described["table"].get("LatestStreamArn")
            if described["table"].get("StreamSpecification", {}).get("StreamEnabled")
            else None,
            mappings={m["UUID"] for m in self.mappings()},
            bucket=lt.stack_outputs(self.aws, self.stack).get(BLOB_BUCKET_OUTPUT),
            events={e["EventId"] for page in pages for e in page["StackEvents"]},
        )

    def new_events(self, before: Live) -> list[dict[str, Any]]:
        pages = self.aws.client("cloudformation").get_paginator("describe_stack_events")
        found = [e for page in pages.paginate(StackName=self.stack) for e in page["StackEvents"]]
        return [e for e in found if e["EventId"] not in before.events]

    def flip(self, name: str, destructive: set[str], **knobs: str) -> lt.Deployed:
        """Deploy ``knobs`` (over the base knobs) and record whether what changed is what preflight predicted, and whether
        it called ``destructive`` (the codes) destructive."""
        predicted = self.preflight({**self.base, **knobs})
        before = self.live()
        deployed = self.deploy(**knobs)
        self.record(
            name, predicted, actual_changes(before, self.live(), self.new_events(before)), destructive
        )
        return deployed

    def failed_flip(self, name: str, expected: set[str], destructive: set[str], **knobs: str) -> str:
        """A flip that fails and rolls back: preflight predicted ``expected`` (the changes the update tried),
        the stack is UPDATE_ROLLBACK_COMPLETE and nothing changed. What the CLI said."""
        self.record(name, self.preflight({**self.base, **knobs}), expected, destructive)
        before = self.live()
        message = self.failed_deploy(**knobs)
        assert self.status() == "UPDATE_ROLLBACK_COMPLETE", f"flip {name!r}: {self.status()}"
        after = self.live()
        after.events = before.events
        assert after == before, f"flip {name!r} rolled back but left {after} (was {before})"
        return message

    def status(self) -> str:
        stack = self.aws.client("cloudformation").describe_stacks(StackName=self.stack)["Stacks"][0]
        return str(stack["StackStatus"])

    def table(self) -> dict[str, Any]:
        ddb = self.aws.client("dynamodb")
        name = lt.stack_outputs(self.aws, self.stack)["TableName"]
        return {
            "table": ddb.describe_table(TableName=name)["Table"],
            "ttl": ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]["TimeToLiveStatus"],
            "pitr": ddb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"][
                "PointInTimeRecoveryDescription"
            ]["PointInTimeRecoveryStatus"],
        }

    def mappings(self) -> list[dict[str, Any]]:
        name = lt.stack_outputs(self.aws, self.stack)["TableName"]
        found = self.aws.client("lambda").list_event_source_mappings()["EventSourceMappings"]
        return [m for m in found if f":table/{name}/stream/" in m["EventSourceArn"]]

    def _out(self) -> Path:
        out = self.workdir / f"cdk-{self.runs:02d}"
        out.mkdir()
        return out


@contextmanager
def day2_local_aws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lt.LocalAWS]:
    """A local AWS with AWS's TTL change interval, bootstrapped; each chain of flips deploys a stack of its own
    into it."""
    if not lt.CDK_BIN.exists():
        if os.environ.get("CI"):
            pytest.fail("the CDK CLI is not installed: run `npm ci` in the project root")
        pytest.skip("the CDK CLI is not installed: run `npm ci` in the project root")
    with lt.private_local_aws(tmp_path_factory.mktemp("day2-aws")) as aws:
        lt.run_cdk(
            aws, ["bootstrap", f"aws://{lt.ACCOUNT}/{lt.REGION}"], tmp_path_factory.mktemp("day2-boot")
        )
        yield aws


@contextmanager
def chain(aws: lt.LocalAWS, request: pytest.FixtureRequest, workdir: Path) -> Iterator[Day2]:
    """A chain's own stack, named after its test (``table_base``), with its own cdk.out and verify state.

    Every flip's result is printed after the chain (shown with a failure); the chain ends with
    ``no_mismatches``, so one wrong prediction does not hide the next flip's."""
    name = request.node.name.removeprefix("test_day2_").split("_")[0]
    run = Day2(aws, workdir, {**BASE, "table_base": f"daytwo-{name}"})
    try:
        yield run
    finally:
        print(f"day 2 flips:\n{run.report()}")


def write_kept(day2: Day2, outputs: dict[str, str]) -> None:
    ddb, s3 = day2.aws.client("dynamodb"), day2.aws.client("s3")
    for pk, sk in KEPT:
        key = f"{pk}/{sk}/blob.txt"
        s3.put_object(Bucket=outputs["BlobBucketName"], Key=key, Body=b"kept")
        ddb.put_item(
            TableName=outputs["TableName"],
            Item={"pk": {"S": pk}, "sk": {"S": sk}, "blobs": {"L": [{"S": key}]}},
        )


def assert_kept(day2: Day2, outputs: dict[str, str], blob_bucket: str | None) -> None:
    ddb, s3 = day2.aws.client("dynamodb"), day2.aws.client("s3")
    for pk, sk in KEPT:
        item = ddb.get_item(
            TableName=outputs["TableName"], Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
        )
        assert "Item" in item, f"{pk}/{sk} lost"
        if blob_bucket is not None:
            s3.head_object(Bucket=blob_bucket, Key=f"{pk}/{sk}/blob.txt")


def given_kept(day2: Day2) -> dict[str, str]:
    """The chain's first deploy (the stream and the built-in consumer), holding items with blobs, verified."""
    outputs = day2.deploy().outputs
    write_kept(day2, outputs)
    day2.verify()
    return outputs


# The fixtures of every day-2 module (test_day2_*.py import them): a local AWS per module, and a chain per test.
@pytest.fixture(scope="module", name="day2_aws")
def day2_aws_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lt.LocalAWS]:
    with day2_local_aws(tmp_path_factory) as aws:
        yield aws


@pytest.fixture(name="day2")
def day2_fixture(day2_aws: lt.LocalAWS, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Day2]:
    with chain(day2_aws, request, tmp_path) as run:
        yield run
