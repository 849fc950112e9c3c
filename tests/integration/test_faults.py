"""Fault injection in the local AWS (local/faults/), one fault at a time, against the deployed consumer.

Each test switches its faults on through the control endpoint (``POST /_doctable/faults``) and off again; the
stack is the soak's (tests/integration/soak.py: ttl on, max_retries=3, batch_size=25), deployed once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from doctable.operate.replay import run_replay
from local.api import FaultClient, FaultSpecError
from tests.support import localaws as lt

from . import soak

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def stack(local_aws: lt.LocalAWS, deploy: Callable[..., lt.Deployed]) -> lt.Deployed:
    return soak.soak_stack(local_aws, deploy)


@pytest.fixture
def faults(local_aws: lt.LocalAWS) -> Iterator[FaultClient]:
    client = local_aws.faults
    client.clear()
    yield client
    client.clear()


@pytest.fixture
def quiet(stack: lt.Deployed, faults: FaultClient) -> lt.Deployed:
    """The stack with its mapping idle and its failure bucket empty."""
    soak.wait_idle(faults, stack.outputs["EventSourceMappingUuid"], timeout=60, settle=0.3)
    return stack


def _key(pk: str, sk: str = "1") -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def _put(aws: lt.LocalAWS, stack: lt.Deployed, pk: str, blobs: int = 2, sk: str = "1") -> list[str]:
    s3 = aws.client("s3")
    keys = [f"{pk}/{sk}/blob-{i}.bin" for i in range(blobs)]
    for key in keys:
        s3.put_object(Bucket=stack.outputs["BlobBucketName"], Key=key, Body=b"x")
    item = {**_key(pk, sk), "blobs": {"L": [{"S": k} for k in keys]}}
    aws.client("dynamodb").put_item(TableName=stack.outputs["TableName"], Item=item)
    return keys


def _delete(aws: lt.LocalAWS, stack: lt.Deployed, pk: str, sk: str = "1") -> None:
    aws.client("dynamodb").delete_item(TableName=stack.outputs["TableName"], Key=_key(pk, sk))


def _present(aws: lt.LocalAWS, stack: lt.Deployed, pk: str) -> set[str]:
    return soak.bucket_keys(aws, stack.outputs["BlobBucketName"], f"{pk}/")


def _logs(aws: lt.LocalAWS, stack: lt.Deployed, since: int, pattern: str) -> list[str]:
    logs = aws.client("logs")
    kwargs: dict[str, Any] = {
        "logGroupName": stack.outputs["ConsumerLogGroupName"],
        "startTime": since,
        "filterPattern": pattern,
    }
    messages: list[str] = []
    while True:
        page = logs.filter_log_events(**kwargs)
        messages += [e["message"] for e in page["events"]]
        if not page.get("nextToken"):
            return messages
        kwargs["nextToken"] = page["nextToken"]


def _set_enabled(aws: lt.LocalAWS, stack: lt.Deployed, enabled: bool) -> None:
    lam = aws.client("lambda")
    uuid_ = stack.outputs["EventSourceMappingUuid"]
    lam.update_event_source_mapping(UUID=uuid_, Enabled=enabled)
    state = "Enabled" if enabled else "Disabled"
    lt.wait_for(lambda: lam.get_event_source_mapping(UUID=uuid_)["State"] == state, what=state)


def _pk(name: str) -> str:
    return f"f{uuid.uuid4().hex[:6]}-{name}"


def _idle(faults: FaultClient, stack: lt.Deployed) -> None:
    soak.wait_idle(faults, stack.outputs["EventSourceMappingUuid"], timeout=90, settle=0.5)


# ------------------------------------------------------------------------------------------------ the API
def test_fault_spec_is_validated_counted_and_reset(local_aws: lt.LocalAWS, faults: FaultClient) -> None:
    with pytest.raises(FaultSpecError) as bad:
        faults.set(
            [
                {"on": "s3:PutObject", "action": "slowdown"},
                {"on": "s3:DeleteObjects", "action": "explode"},
                {"on": "lambda:Invoke", "action": "crash", "rate": 2},
                {"on": "esm:Deliver", "action": "duplicate", "bucket": "b"},
            ]
        )
    message = str(bad.value)
    assert "400" in message and "rules[0].on" in message and "rules[1].action" in message
    assert "rules[2].rate" in message and "rules[3]: unknown field(s) ['bucket']" in message
    assert faults.status()["rules"] == []  # a rejected spec changes nothing

    status = faults.set([{"id": "t", "on": "s3:DeleteObjects", "action": "slowdown", "limit": 1}], seed=3)
    assert status["seed"] == 3 and status["rules"][0]["id"] == "t" and status["counts"] == {"t": {"fired": 0}}
    s3 = local_aws.client("s3")
    s3.create_bucket(Bucket="faults-api")
    s3.put_object(Bucket="faults-api", Key="k", Body=b"x")
    s3.delete_objects(Bucket="faults-api", Delete={"Objects": [{"Key": "k"}]})  # the SDK retries the 503
    assert faults.counts()["t"]["fired"] == 1
    assert "Contents" not in s3.list_objects_v2(Bucket="faults-api")
    faults.clear()
    assert faults.status()["counts"] == {} and faults.status()["rules"] == []
    s3.delete_bucket(Bucket="faults-api")


# ------------------------------------------------------------------------------------------- S3 faults
def test_throttling_and_500s_are_absorbed_by_the_sdk_retries(
    local_aws: lt.LocalAWS, quiet: lt.Deployed, faults: FaultClient
) -> None:
    bucket = quiet.outputs["BlobBucketName"]
    pk = _pk("sdk")
    keys = _put(local_aws, quiet, pk)
    _idle(faults, quiet)
    faults.set(
        [
            {"id": "slow", "on": "s3:DeleteObjects", "action": "slowdown", "bucket": bucket, "limit": 2},
            {
                "id": "lost",
                "on": "s3:DeleteObjects",
                "action": "internal-error",
                "bucket": bucket,
                "phase": "after",
                "limit": 1,
            },
        ]  # fmt: skip
    )
    since = lt.now_ms()
    _delete(local_aws, quiet, pk)
    lt.wait_for(lambda: not _present(local_aws, quiet, pk), timeout=60, what="the blobs to be deleted")
    _idle(faults, quiet)
    counts = faults.counts()
    assert counts["slow"]["fired"] == 2 and counts["lost"]["fired"] == 1
    assert lt.proof_counts(local_aws, quiet.outputs["ConsumerLogGroupName"], since) == [1]  # no retry needed
    assert not _logs(local_aws, quiet, since, "record_failed")
    assert set(keys).isdisjoint(soak.bucket_keys(local_aws, bucket))


def test_a_request_error_the_sdk_does_not_retry_fails_its_records_and_the_mapping_retries_them(
    local_aws: lt.LocalAWS, quiet: lt.Deployed, faults: FaultClient
) -> None:
    bucket = quiet.outputs["BlobBucketName"]
    pk = _pk("denied")
    _put(local_aws, quiet, pk)
    _idle(faults, quiet)
    # (Throttling past the SDK's retries needs 6 answers in a row: max_attempts=5 counts retries, and the
    # standard mode's backoff then takes ~15 s on average; a 403 reaches the consumer at once.)
    faults.set(
        [{"id": "denied", "on": "s3:DeleteObjects", "action": "access-denied", "bucket": bucket, "limit": 1}]
    )
    since = lt.now_ms()
    _delete(local_aws, quiet, pk)
    lt.wait_for(lambda: not _present(local_aws, quiet, pk), timeout=60, what="the blobs to be deleted")
    _idle(faults, quiet)
    assert faults.counts()["denied"]["fired"] == 1
    failed = _logs(local_aws, quiet, since, "delete_request_failed")
    assert len(failed) == 1 and "AccessDenied" in failed[0]
    assert [json.loads(m)["pk"] for m in _logs(local_aws, quiet, since, "record_failed")] == [pk]
    assert lt.proof_counts(local_aws, quiet.outputs["ConsumerLogGroupName"], since) == [1, 1]


def test_per_key_errors_fail_only_the_record_that_owns_the_key(
    local_aws: lt.LocalAWS, quiet: lt.Deployed, faults: FaultClient
) -> None:
    bucket = quiet.outputs["BlobBucketName"]
    a, b = _pk("a"), _pk("b")
    _set_enabled(local_aws, quiet, False)
    since = lt.now_ms()
    try:
        _put(local_aws, quiet, a)
        _put(local_aws, quiet, b)
        _delete(local_aws, quiet, a)
        _delete(local_aws, quiet, b)
        faults.set(
            [
                {
                    "id": "k",
                    "on": "s3:DeleteObjects",
                    "action": "key-errors",
                    "bucket": bucket,
                    "match": f"{a}/*",
                    "keys": 1,
                    "code": "InternalError",
                    "limit": 1,
                }
            ]  # fmt: skip
        )
    finally:
        _set_enabled(local_aws, quiet, True)
    lt.wait_for(lambda: not _present(local_aws, quiet, a) and not _present(local_aws, quiet, b), timeout=60)
    _idle(faults, quiet)
    assert faults.counts()["k"] == {"fired": 1, "keys": 1}
    failed = [json.loads(m) for m in _logs(local_aws, quiet, since, "record_failed")]
    assert [(f["pk"], f["error"]) for f in failed] == [(a, "1 blob key(s) could not be deleted")]
    assert "InternalError" in json.dumps(failed[0]["failed_keys"])
    # The whole batch (2 INSERTs, 2 REMOVEs), then the retry from the failed REMOVE onwards.
    assert lt.proof_counts(local_aws, quiet.outputs["ConsumerLogGroupName"], since) == [4, 2]


# ----------------------------------------------------------------------------------- invocation faults
@pytest.mark.parametrize("action", ["crash", "timeout"])
def test_an_invocation_killed_mid_batch_is_retried_and_nothing_is_lost(
    local_aws: lt.LocalAWS, quiet: lt.Deployed, faults: FaultClient, action: str
) -> None:
    out = quiet.outputs
    gone, kept = _pk(f"{action}-gone"), _pk(f"{action}-kept")
    kept_keys = _put(local_aws, quiet, kept)
    _put(local_aws, quiet, gone)
    _idle(faults, quiet)
    faults.set(
        [
            # The delete is held 6 s and the environment is killed 3 s into the invocation: mid-batch, with the
            # DeleteObjects request in flight (it lands after the kill, as a request can on AWS). The consumer
            # HEADs each key and reads the live items before it deletes, so its delete starts well into the
            # invocation; 3 s leaves room for that on a loaded machine.
            {
                "id": "hold",
                "on": "s3:DeleteObjects",
                "action": "delay",
                "delay_ms": 6000,
                "bucket": out["BlobBucketName"],
                "limit": 1,
            },
            {
                "id": "kill",
                "on": "lambda:Invoke",
                "action": action,
                "after_ms": 3000,
                "function": out["ConsumerFunctionName"],
                "limit": 1,
            },
        ]  # fmt: skip
    )
    since = lt.now_ms()
    _delete(local_aws, quiet, gone)
    lt.wait_for(lambda: not _present(local_aws, quiet, gone), timeout=60, what="the blobs to be deleted")
    _idle(faults, quiet)
    status = faults.status(events=10)
    assert status["counts"]["kill"]["fired"] == 1 and status["counts"]["hold"]["fired"] == 1
    assert [e["rule"] for e in status["events"]] == ["hold", "kill"]  # the request was in flight
    expected = "Runtime exited with error: signal: kill" if action == "crash" else "Task timed out after"
    assert _logs(local_aws, quiet, since, f'"{expected}"'), f"no {expected!r} line"
    assert lt.proof_counts(local_aws, out["ConsumerLogGroupName"], since) == [1, 1]  # delivered, retried
    assert _present(local_aws, quiet, kept) == set(kept_keys)


def test_duplicate_delivery_is_harmless(
    local_aws: lt.LocalAWS, quiet: lt.Deployed, faults: FaultClient
) -> None:
    out = quiet.outputs
    live, deleted = _pk("dup-live"), _pk("dup-deleted")
    _set_enabled(local_aws, quiet, False)
    since = lt.now_ms()
    try:
        live_keys = _put(local_aws, quiet, live, blobs=3)
        _put(local_aws, quiet, deleted)
        # An update that drops one blob, and a delete.
        local_aws.client("dynamodb").put_item(
            TableName=out["TableName"],
            Item={**_key(live), "blobs": {"L": [{"S": k} for k in live_keys[:2]]}},
        )
        _delete(local_aws, quiet, deleted)
        faults.set(
            [
                {
                    "id": "dup",
                    "on": "esm:Deliver",
                    "action": "duplicate",
                    "mapping": out["EventSourceMappingUuid"],
                    "limit": 1,
                }
            ]  # fmt: skip
        )
    finally:
        _set_enabled(local_aws, quiet, True)
    lt.wait_for(lambda: not _present(local_aws, quiet, deleted), timeout=60)
    _idle(faults, quiet)
    assert faults.counts()["dup"]["fired"] == 1
    assert lt.proof_counts(local_aws, out["ConsumerLogGroupName"], since) == [4, 4]
    assert _present(local_aws, quiet, live) == set(live_keys[:2])


# ------------------------------------------------------------------------------- poison, fixable, replay
def test_poison_is_kept_and_a_fixed_cause_is_replayed(
    local_aws: lt.LocalAWS, quiet: lt.Deployed, faults: FaultClient
) -> None:
    out = quiet.outputs
    poison, fixable = _pk("poison"), _pk("fixable")
    ddb, s3 = local_aws.client("dynamodb"), local_aws.client("s3")
    lt.empty_bucket(local_aws, out["FailureBucketName"])
    faults.set(
        [
            {
                "id": "cause",
                "on": "s3:DeleteObjects",
                "action": "key-errors",
                "bucket": out["BlobBucketName"],
                "match": f"{fixable}/*",
                "keys": "all",
                "code": "AccessDenied",
            }
        ]  # fmt: skip
    )
    _set_enabled(local_aws, quiet, False)
    try:
        ddb.put_item(TableName=out["TableName"], Item={**_key(poison), "blobs": {"N": "7"}})
        keys = _put(local_aws, quiet, fixable)
        _delete(local_aws, quiet, fixable)
    finally:
        _set_enabled(local_aws, quiet, True)
    _idle(faults, quiet)
    kept = soak.failure_records(local_aws, out["FailureBucketName"])
    assert len(kept) == 1
    (key, record) = next(iter(kept.items()))
    assert record["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 4  # the first attempt + max_retries=3
    assert [(r["eventName"], r["dynamodb"]["Keys"]["pk"]["S"]) for r in record["records"]] == [
        ("INSERT", poison), ("INSERT", fixable), ("REMOVE", fixable),
    ]  # fmt: skip
    assert _present(local_aws, quiet, fixable) == set(keys)  # kept while its cause lasts

    faults.clear()  # the cause is fixed
    outcomes = run_replay(
        s3=s3, lambda_client=local_aws.client("lambda"), ddb=ddb, bucket=out["FailureBucketName"],
        function=out["ConsumerFunctionName"], table=out["TableName"],
    )  # fmt: skip
    assert [(o.key, o.records, o.succeeded, o.result) for o in outcomes] == [(key, 3, 2, "KEPT 1 failing")]
    assert not _present(local_aws, quiet, fixable)
    # The malformed record stays, alone, with what an operator needs to see it and replay it again.
    after = soak.failure_records(local_aws, out["FailureBucketName"])
    assert list(after) == [key]
    (left,) = after[key]["records"]
    assert left["dynamodb"]["Keys"]["pk"]["S"] == poison and left["dynamodb"]["NewImage"]["blobs"] == {
        "N": "7"
    }
    assert after[key]["replay"] == {"remaining": 1}
    lt.empty_bucket(local_aws, out["FailureBucketName"])
