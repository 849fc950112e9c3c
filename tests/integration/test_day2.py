"""Day 2 on one live stack: every knob flipped in sequence with the real CDK CLI, data kept, verify after each.

A local AWS of its own with the TTL change interval shortened to ``TTL_INTERVAL`` seconds (AWS: about an hour),
so TTL can be toggled within the test and the limit hit once on purpose. Items and blobs written after the
first deploy must survive every flip that keeps the table (and the blob bucket); a failed update (the rate
limit, then a resource that cannot be created) rolls back and the next deploy succeeds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import localaws as lt
from tests.support.cli import context_args, run_doctable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

TTL_INTERVAL = 60
TTL_ENV = "DOCTABLE_LOCAL_TTL_CHANGE_INTERVAL_SECONDS"
RATE_LIMITED = "Time to live has been modified multiple times within a fixed interval"
BASE = {"env": "dev", "table_base": "daytwo", "stream": "new-and-old"}
KEPT = [(f"kept-{n}", "doc") for n in range(3)]


class Day2:
    def __init__(self, aws: lt.LocalAWS, workdir: Path):
        self.aws = aws
        self.workdir = workdir
        self.runs = 0

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

    def verify(self, **knobs: str) -> None:
        env = {**self.aws.env, "DOCTABLE_STATE_DIR": str(self.workdir / "state")}
        args = ["verify", "--timeout", "60", "--settle", "5", *context_args({**BASE, **knobs})]
        result = run_doctable(args, env=env, timeout=600)
        assert result.code == 0, result.out + result.err

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
    # GIVEN the stack with the stream and the built-in consumer, holding items with blobs
    first = day2.deploy()
    outputs = first.outputs
    _write_kept(day2, outputs)
    bucket, stream = outputs["BlobBucketName"], outputs["StreamArn"]
    day2.verify()

    # gsi none -> gsi1 -> none: the index is added (backfilled) and removed in place
    day2.deploy(gsi="gsi1")
    assert [g["IndexName"] for g in day2.table()["table"]["GlobalSecondaryIndexes"]] == ["gsi1"]
    day2.verify(gsi="gsi1")
    day2.deploy()
    assert not day2.table()["table"].get("GlobalSecondaryIndexes")
    day2.verify()
    _assert_kept(day2, outputs, bucket)

    # ttl off -> on, then off again at once: DynamoDB's rate limit fails the update, which rolls back
    day2.deploy(ttl="on")
    ttl_changed = time.monotonic()
    assert day2.table()["ttl"] == "ENABLED"
    day2.verify(ttl="on")
    message = day2.failed_deploy()
    assert RATE_LIMITED in message and "(HandlerErrorCode: ValidationException)" in message
    assert day2.status() == "UPDATE_ROLLBACK_COMPLETE" and day2.table()["ttl"] == "ENABLED"

    # pitr on with batch_size, then pitr off with max_retries: in place, and the stack was still updatable
    day2.deploy(ttl="on", pitr="on", batch_size="5")
    assert day2.table()["pitr"] == "ENABLED"
    assert [m["BatchSize"] for m in day2.mappings()] == [5]
    day2.verify(ttl="on", pitr="on", batch_size="5")
    day2.deploy(ttl="on", max_retries="2")
    assert day2.table()["pitr"] == "DISABLED"
    assert [(m["BatchSize"], m["MaximumRetryAttempts"]) for m in day2.mappings()] == [(10, 2)]
    day2.verify(ttl="on", max_retries="2")

    # ttl on -> off once the interval has passed since the last change (the rate limit's own window)
    time.sleep(max(0.0, ttl_changed + TTL_INTERVAL - time.monotonic()))
    day2.deploy()
    assert day2.table()["ttl"] == "DISABLED"
    day2.verify()
    _assert_kept(day2, outputs, bucket)

    # an injected resource failure: the alias a LATEST mapping needs exists already, made out of band
    lam = day2.aws.client("lambda")
    function = outputs["ConsumerFunctionName"]
    lam.create_alias(FunctionName=function, Name="from-latest", FunctionVersion="$LATEST")
    (before,) = day2.mappings()
    message = day2.failed_deploy(starting_position="latest", pitr="on")
    assert "Alias already exists" in message
    assert day2.status() == "UPDATE_ROLLBACK_COMPLETE"
    assert day2.table()["pitr"] == "DISABLED"  # the table's change was rolled back
    assert [(m["UUID"], m["StartingPosition"]) for m in day2.mappings()] == [(before["UUID"], "TRIM_HORIZON")]
    lam.delete_alias(FunctionName=function, Name="from-latest")

    # starting_position trim-horizon -> latest -> trim-horizon: one deploy each, the mapping replaced
    day2.deploy(starting_position="latest")
    (latest,) = day2.mappings()
    assert latest["StartingPosition"] == "LATEST" and latest["UUID"] != before["UUID"]
    assert latest["FunctionArn"].endswith(":from-latest")
    day2.verify(starting_position="latest")
    day2.deploy()
    (horizon,) = day2.mappings()
    assert horizon["StartingPosition"] == "TRIM_HORIZON" and horizon["FunctionArn"].endswith(
        ":from-trim-horizon"
    )
    day2.verify()
    _assert_kept(day2, outputs, bucket)

    # consumer builtin -> none -> builtin: the mapping goes and comes back; the table and its items stay
    day2.deploy(consumer="none")
    assert day2.mappings() == []
    day2.verify(consumer="none")
    again = day2.deploy()
    assert len(day2.mappings()) == 1
    day2.verify()
    _assert_kept(day2, again.outputs, None)

    # stream new-and-old -> none -> new-and-old: a new stream ARN, the mapping recreated, none left over
    day2.deploy_exact({"env": BASE["env"], "table_base": BASE["table_base"]})
    assert day2.mappings() == []
    assert not day2.table()["table"].get("StreamSpecification", {}).get("StreamEnabled")
    run = run_doctable(
        ["verify", "--timeout", "60", *context_args({"env": BASE["env"], "table_base": BASE["table_base"]})],
        env={**day2.aws.env, "DOCTABLE_STATE_DIR": str(day2.workdir / "state")},
        timeout=600,
    )
    assert run.code == 0, run.out + run.err
    last = day2.deploy()
    assert last.outputs["StreamArn"] != stream
    assert [m["EventSourceArn"] for m in day2.mappings()] == [last.outputs["StreamArn"]]
    day2.verify()
    _assert_kept(day2, last.outputs, None)
