"""Day 2 on one live stack: every knob flipped in sequence with the real CDK CLI, data kept, verify after each.

A local AWS of its own with the TTL change interval shortened to ``TTL_INTERVAL`` seconds (AWS: about an hour),
so TTL can be toggled within the test and the limit hit once on purpose. Items and blobs written after the
first deploy must survive every flip that keeps the table (and the blob bucket); a failed update (the rate
limit, then a resource that cannot be created) rolls back, verify passes right after it (against the knobs the
stack holds, saying the last update rolled back), and the next deploy succeeds.

Before each flip preflight runs with the new knobs (``--json``); the codes of its predicted changes are compared
with what the deploy did, read as the same codes from the stack's per-resource events of that update (table,
event-source mapping) and the live describe calls (indexes, TTL, PITR, stream ARN, mapping UUIDs, blob bucket)
before and after; its destructive codes with the flip's expected ones. A mismatch is recorded under the flip's
name and every flip's result is listed at the end, so one wrong prediction does not hide the next.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from contract.knobs import KNOB_DEFAULTS
from tests.support import localaws as lt
from tests.support.cli import context_args, run_doctable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

# Long enough for a preflight and a deploy's synth on a busy machine to fit inside it.
TTL_INTERVAL = 120
TTL_ENV = "DOCTABLE_LOCAL_TTL_CHANGE_INTERVAL_SECONDS"
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
    def __init__(self, aws: lt.LocalAWS, workdir: Path):
        self.aws = aws
        self.workdir = workdir
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

    def deploy(self, **knobs: str) -> lt.Deployed:
        return self.deploy_exact({**BASE, **knobs})

    def deploy_exact(self, knobs: dict[str, str]) -> lt.Deployed:
        self.runs += 1
        return lt.deploy(self.aws, knobs, self._out())

    def failed_deploy(self, **knobs: str) -> str:
        """What the CLI said (its whole log: the CloudTrail lookup it makes after a failure pushes the
        stack's events out of the error's tail)."""
        self.runs += 1
        out = self._out()
        with pytest.raises(lt.CdkFailed):
            lt.deploy(self.aws, {**BASE, **knobs}, out)
        return (out / "cdk.log").read_text(errors="replace")

    def verify(self, **knobs: str) -> str:
        """verify's whole output (stdout, then stderr); it must pass."""
        env = {**self.aws.env, "DOCTABLE_STATE_DIR": str(self.workdir / "state")}
        args = ["verify", "--timeout", "60", "--settle", "5", *context_args({**BASE, **knobs})]
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
        pages = events.paginate(StackName=lt.stack_name(BASE))
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
            bucket=lt.stack_outputs(self.aws, lt.stack_name(BASE)).get(BLOB_BUCKET_OUTPUT),
            events={e["EventId"] for page in pages for e in page["StackEvents"]},
        )

    def new_events(self, before: Live) -> list[dict[str, Any]]:
        pages = self.aws.client("cloudformation").get_paginator("describe_stack_events")
        found = [e for page in pages.paginate(StackName=lt.stack_name(BASE)) for e in page["StackEvents"]]
        return [e for e in found if e["EventId"] not in before.events]

    def flip(self, name: str, destructive: set[str], **knobs: str) -> lt.Deployed:
        """Deploy ``knobs`` (over BASE) and record whether what changed is what preflight predicted, and whether
        it called ``destructive`` (the codes) destructive."""
        predicted = self.preflight({**BASE, **knobs})
        before = self.live()
        deployed = self.deploy(**knobs)
        self.record(
            name, predicted, actual_changes(before, self.live(), self.new_events(before)), destructive
        )
        return deployed

    def failed_flip(self, name: str, expected: set[str], destructive: set[str], **knobs: str) -> str:
        """A flip that fails and rolls back: preflight predicted ``expected`` (the changes the update tried),
        the stack is UPDATE_ROLLBACK_COMPLETE and nothing changed. What the CLI said."""
        self.record(name, self.preflight({**BASE, **knobs}), expected, destructive)
        before = self.live()
        message = self.failed_deploy(**knobs)
        assert self.status() == "UPDATE_ROLLBACK_COMPLETE", f"flip {name!r}: {self.status()}"
        after = self.live()
        after.events = before.events
        assert after == before, f"flip {name!r} rolled back but left {after} (was {before})"
        return message

    def status(self) -> str:
        stack = self.aws.client("cloudformation").describe_stacks(StackName=lt.stack_name(BASE))["Stacks"][0]
        return str(stack["StackStatus"])

    def table(self) -> dict[str, Any]:
        ddb = self.aws.client("dynamodb")
        name = lt.stack_outputs(self.aws, lt.stack_name(BASE))["TableName"]
        return {
            "table": ddb.describe_table(TableName=name)["Table"],
            "ttl": ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]["TimeToLiveStatus"],
            "pitr": ddb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"][
                "PointInTimeRecoveryDescription"
            ]["PointInTimeRecoveryStatus"],
        }

    def mappings(self) -> list[dict[str, Any]]:
        name = lt.stack_outputs(self.aws, lt.stack_name(BASE))["TableName"]
        found = self.aws.client("lambda").list_event_source_mappings()["EventSourceMappings"]
        return [m for m in found if f":table/{name}/stream/" in m["EventSourceArn"]]

    def _out(self) -> Path:
        out = self.workdir / f"cdk-{self.runs:02d}"
        out.mkdir()
        return out


@pytest.fixture(scope="module")
def day2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Day2]:
    if not lt.CDK_BIN.exists():
        if os.environ.get("CI"):
            pytest.fail("the CDK CLI is not installed: run `npm ci` in the project root")
        pytest.skip("the CDK CLI is not installed: run `npm ci` in the project root")
    previous = os.environ.get(TTL_ENV)
    os.environ[TTL_ENV] = str(TTL_INTERVAL)  # read by the server process when it starts
    try:
        context = lt.private_local_aws(tmp_path_factory.mktemp("day2-aws"))
        aws = context.__enter__()
    finally:
        if previous is None:
            os.environ.pop(TTL_ENV, None)
        else:
            os.environ[TTL_ENV] = previous
    try:
        workdir = tmp_path_factory.mktemp("day2")
        lt.run_cdk(aws, ["bootstrap", f"aws://{lt.ACCOUNT}/{lt.REGION}"], workdir)
        yield Day2(aws, workdir)
    finally:
        context.__exit__(None, None, None)


def _write_kept(day2: Day2, outputs: dict[str, str]) -> None:
    ddb, s3 = day2.aws.client("dynamodb"), day2.aws.client("s3")
    for pk, sk in KEPT:
        key = f"{pk}/{sk}/blob.txt"
        s3.put_object(Bucket=outputs["BlobBucketName"], Key=key, Body=b"kept")
        ddb.put_item(
            TableName=outputs["TableName"],
            Item={"pk": {"S": pk}, "sk": {"S": sk}, "blobs": {"L": [{"S": key}]}},
        )


def _assert_kept(day2: Day2, outputs: dict[str, str], blob_bucket: str | None) -> None:
    ddb, s3 = day2.aws.client("dynamodb"), day2.aws.client("s3")
    for pk, sk in KEPT:
        item = ddb.get_item(
            TableName=outputs["TableName"], Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
        )
        assert "Item" in item, f"{pk}/{sk} lost"
        if blob_bucket is not None:
            s3.head_object(Bucket=blob_bucket, Key=f"{pk}/{sk}/blob.txt")


def test_every_knob_flipped_on_one_live_stack(day2: Day2) -> None:
    try:
        flip_every_knob(day2)
    finally:
        # Shown with a failure: every flip's result, not only the first mismatch.
        print(f"day 2 flips:\n{day2.report()}")
    assert not day2.mismatches(), "\n".join(day2.mismatches())


def flip_every_knob(day2: Day2) -> None:
    # GIVEN the stack with the stream and the built-in consumer, holding items with blobs
    first = day2.deploy()
    outputs = first.outputs
    _write_kept(day2, outputs)
    bucket, stream = outputs["BlobBucketName"], outputs["StreamArn"]
    day2.verify()

    # gsi none -> gsi1 -> none: the index is added (backfilled) and removed in place
    day2.flip("gsi none -> gsi1", set(), gsi="gsi1")
    assert [g["IndexName"] for g in day2.table()["table"]["GlobalSecondaryIndexes"]] == ["gsi1"]
    day2.verify(gsi="gsi1")
    day2.flip("gsi gsi1 -> none", {"index.removed"})
    assert not day2.table()["table"].get("GlobalSecondaryIndexes")
    day2.verify()
    _assert_kept(day2, outputs, bucket)

    # ttl off -> on, then off again at once: DynamoDB's rate limit fails the update, which rolls back
    day2.flip("ttl off -> on", {"ttl.enabled"}, ttl="on")
    ttl_changed = time.monotonic()
    assert day2.table()["ttl"] == "ENABLED"
    message = day2.failed_flip("ttl on -> off within the interval", {"ttl.disabled"}, set())
    assert RATE_LIMITED in message and "(HandlerErrorCode: ValidationException)" in message
    assert day2.table()["ttl"] == "ENABLED"
    # verify right after the rollback: it checks the knobs the stack holds (ttl on) and says it rolled back
    said = day2.verify(ttl="off")
    assert (
        ROLLED_BACK_NOTE in said
        and "UPDATE_ROLLBACK_COMPLETE" in said
        and "ttl: deployed on, given off" in said
    )

    # pitr on with batch_size, then pitr off with max_retries: in place, and the stack was still updatable
    day2.flip("pitr off -> on, batch_size -> 5", set(), ttl="on", pitr="on", batch_size="5")
    assert day2.table()["pitr"] == "ENABLED"
    assert [m["BatchSize"] for m in day2.mappings()] == [5]
    day2.verify(ttl="on", pitr="on", batch_size="5")
    day2.flip("pitr on -> off, max_retries 5 -> 2", {"pitr.disabled"}, ttl="on", max_retries="2")
    assert day2.table()["pitr"] == "DISABLED"
    default_batch = int(KNOB_DEFAULTS["batch_size"])
    assert [(m["BatchSize"], m["MaximumRetryAttempts"]) for m in day2.mappings()] == [(default_batch, 2)]
    day2.verify(ttl="on", max_retries="2")

    # ttl on -> off once the interval has passed since the last change (the rate limit's own window)
    time.sleep(max(0.0, ttl_changed + TTL_INTERVAL - time.monotonic()))
    day2.flip("ttl on -> off", set())
    assert day2.table()["ttl"] == "DISABLED"
    day2.verify()
    _assert_kept(day2, outputs, bucket)

    # an injected resource failure: the alias a LATEST mapping needs exists already, made out of band
    lam = day2.aws.client("lambda")
    function = outputs["ConsumerFunctionName"]
    lam.create_alias(FunctionName=function, Name="from-latest", FunctionVersion="$LATEST")
    (before,) = day2.mappings()
    message = day2.failed_flip(
        "starting_position -> latest with pitr on, alias made out of band",
        {"mapping.replaced", "pitr.enabled"},
        {"mapping.replaced"},
        starting_position="latest",
        pitr="on",
    )
    assert "Alias already exists" in message
    assert day2.table()["pitr"] == "DISABLED"  # the table's change was rolled back
    assert [(m["UUID"], m["StartingPosition"]) for m in day2.mappings()] == [(before["UUID"], "TRIM_HORIZON")]
    said = day2.verify(starting_position="latest", pitr="on")
    assert ROLLED_BACK_NOTE in said and "starting_position: deployed trim-horizon, given latest" in said
    lam.delete_alias(FunctionName=function, Name="from-latest")

    # starting_position trim-horizon -> latest -> trim-horizon: one deploy each, the mapping replaced
    day2.flip("starting_position trim-horizon -> latest", {"mapping.replaced"}, starting_position="latest")
    (latest,) = day2.mappings()
    assert latest["StartingPosition"] == "LATEST" and latest["UUID"] != before["UUID"]
    assert latest["FunctionArn"].endswith(":from-latest")
    day2.verify(starting_position="latest")
    day2.flip("starting_position latest -> trim-horizon", set())
    (horizon,) = day2.mappings()
    assert horizon["StartingPosition"] == "TRIM_HORIZON" and horizon["FunctionArn"].endswith(
        ":from-trim-horizon"
    )
    day2.verify()
    _assert_kept(day2, outputs, bucket)

    # consumer builtin -> none -> builtin: the mapping goes and comes back; the table and its items stay
    day2.flip("consumer builtin -> none", {"mapping.deleted", "bucket.leaves_stack"}, consumer="none")
    assert day2.mappings() == []
    day2.verify(consumer="none")
    again = day2.flip("consumer none -> builtin", set())
    assert len(day2.mappings()) == 1
    day2.verify()
    _assert_kept(day2, again.outputs, None)

    # stream new-and-old -> none -> new-and-old: a new stream ARN, the mapping recreated, none left over
    day2.flip("stream new-and-old -> none", DROPS_THE_STREAM, stream="none")
    assert day2.mappings() == []
    assert not day2.table()["table"].get("StreamSpecification", {}).get("StreamEnabled")
    day2.verify(stream="none")
    last = day2.flip("stream none -> new-and-old", set())
    assert last.outputs["StreamArn"] != stream
    assert [m["EventSourceArn"] for m in day2.mappings()] == [last.outputs["StreamArn"]]
    day2.verify()
    _assert_kept(day2, last.outputs, None)
