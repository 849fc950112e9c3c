"""The environment's lock (doctable/lifecycle/lock.py) against the local AWS's S3 in process (moto with the local
AWS's adaptations, local/services/s3.py): a second holder refused at once naming the first, or waiting for it; a
killed holder's lease expiring by AWS's clock (the ``Date`` S3 answers with, moved by local/clock.py as the
server's listener writes it); renewals and releases conditional on the lock's ETag; a racing pair (and a crowd)
of which exactly one wins; ``unlock`` only of the holder's id."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator
from email.utils import formatdate
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from contract.iam.lock import lock_bucket, lock_key
from doctable.cli.lock import duration
from doctable.core.errors import EXIT_REFUSED, UserError, exit_code_of
from doctable.lifecycle import lock
from local import clock

pytestmark = pytest.mark.unit

ACCOUNT, REGION = "123456789012", "us-east-1"
BUCKET = lock_bucket(ACCOUNT, REGION, "doctest")
REF = lock.LockRef(env="dev", stack="doctable-dev", bucket=BUCKET, key=lock_key("doctable-dev"))
ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"


def _dated(response_dict: dict[str, Any], **_: Any) -> None:
    """The ``Date`` of the answer, as the local AWS's listener writes it (local/server/listener.py): its clock,
    which a test moves with local/clock.py (moto in process writes none)."""
    response_dict["headers"]["date"] = formatdate(clock.now(), usegmt=True)


@pytest.fixture
def s3(local_moto: None) -> Iterator[Any]:
    """GIVEN the local AWS's S3 in process, the environment's bootstrap bucket, and the server's clock."""
    client = boto3.client("s3", region_name=REGION)
    client.meta.events.register("before-parse.s3.*", _dated)
    client.create_bucket(Bucket=BUCKET)
    try:
        yield client
    finally:
        clock.reset()


def take(s3: Any, who: str = ALICE, *, wait: float = 0.0, command: str = "deploy") -> lock.HeldLock:
    return lock.acquire(s3, REF, who=who, command=command, wait=wait, poll=0.02)


def body(s3: Any) -> dict[str, Any]:
    import json

    return dict(json.loads(s3.get_object(Bucket=BUCKET, Key=REF.key)["Body"].read()))


def test_the_lock_says_who_where_what_and_until_when_by_aws_time(s3: Any) -> None:
    # WHEN a command takes the environment's lock
    held = take(s3)
    # THEN its object in the bootstrap bucket names the holder, its host, pid, checkout, command and lease
    written = body(s3)
    assert written["id"] == held.id and written["who"] == ALICE and written["command"] == "deploy"
    assert {"host", "pid", "checkout", "since", "until"} <= set(written)
    lease = lock.parse_iso(written["until"]) - lock.parse_iso(written["since"])
    assert lease == dt.timedelta(seconds=lock.LEASE_SECONDS)
    # AND releasing it deletes it
    assert held.release() is True
    with pytest.raises(ClientError):
        s3.head_object(Bucket=BUCKET, Key=REF.key)


def test_a_second_holder_is_refused_at_once_in_one_line_naming_the_holder(s3: Any) -> None:
    held = take(s3)
    # WHEN another command wants it without waiting
    with pytest.raises(lock.EnvironmentLocked) as refused:
        take(s3, BOB)
    # THEN one line names the holder and the way out, exit 3 (refused, nothing changed), code env.locked
    error = refused.value
    assert "\n" not in str(error)
    assert ALICE in str(error) and held.id in str(error) and "doctable unlock --env dev" in str(error)
    assert exit_code_of(error) == EXIT_REFUSED
    assert error.code == "env.locked"
    assert error.fields["holder_id"] == held.id and error.fields["holder_who"] == ALICE
    # AND the holder's lock is untouched
    assert body(s3)["id"] == held.id


def test_a_waiting_command_takes_the_lock_once_it_is_released(s3: Any) -> None:
    held = take(s3)
    got: list[lock.HeldLock] = []
    waiter = threading.Thread(target=lambda: got.append(take(s3, BOB, wait=30)))
    # WHEN a second command waits while the first holds the lock, then the first releases it
    waiter.start()
    held.release()
    waiter.join(timeout=30)
    # THEN the waiter holds it
    assert got and body(s3)["who"] == BOB and body(s3)["id"] == got[0].id


def test_a_wait_ends_refused_at_its_deadline(s3: Any) -> None:
    take(s3)
    with pytest.raises(lock.EnvironmentLocked, match="after waiting"):
        take(s3, BOB, wait=0.1)


def test_a_killed_holders_lock_expires_by_aws_clock_and_is_taken_over(s3: Any) -> None:
    # GIVEN a holder that died (its renewal never runs again)
    dead = take(s3)
    with pytest.raises(lock.EnvironmentLocked):
        take(s3, BOB)
    # WHEN AWS's clock passes the end of its lease
    clock.advance(lock.LEASE_SECONDS + 1)
    # THEN another command takes the lock over (a conditional write on the expired lock's ETag)
    alive = take(s3, BOB)
    assert alive.taken_over is not None and dead.id in alive.taken_over
    assert body(s3)["id"] == alive.id
    # AND the dead holder's late release does not delete the new holder's lock
    assert dead.release() is False
    assert body(s3)["id"] == alive.id


def test_a_renewal_extends_the_lease_and_never_overwrites_another_holder(s3: Any) -> None:
    held = take(s3)
    until = body(s3)["until"]
    clock.advance(60)
    # WHEN the holder renews, THEN the lease runs from AWS's time now
    assert held.renew() is True
    assert lock.parse_iso(body(s3)["until"]) > lock.parse_iso(until)
    # WHEN its lock was broken and another command took it
    lock.break_lock(s3, REF, held.id)
    other = take(s3, BOB)
    # THEN the renewal does not write over it (If-Match on its own ETag), and the holder knows it lost it
    assert held.renew() is False and held.lost
    assert body(s3)["id"] == other.id
    assert held.release() is False
    assert body(s3)["id"] == other.id


def test_racing_writers_one_wins_and_the_other_is_refused(s3: Any) -> None:
    # GIVEN a crowd of commands released at once to take the lock
    crowd = 8
    start = threading.Barrier(crowd)
    won: list[str] = []
    refused: list[str] = []

    def race(number: int) -> None:
        start.wait()
        try:
            won.append(take(s3, f"{BOB}-{number}").id)
        except lock.EnvironmentLocked as exc:
            refused.append(exc.fields["holder_id"])

    threads = [threading.Thread(target=race, args=(n,)) for n in range(crowd)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    # THEN exactly one holds it, and every other was refused naming that one
    assert len(won) == 1 and len(refused) == crowd - 1
    assert set(refused) == set(won) and body(s3)["id"] == won[0]


def test_s3_conditional_writes_of_one_key_let_exactly_one_racer_create_it(s3: Any) -> None:
    # GIVEN two writers of one new key with If-None-Match: * at the same moment, many times over
    for attempt in range(20):
        key = f"race/{attempt}"
        start = threading.Barrier(2)
        codes: list[str] = []

        def put(
            text: str, key: str = key, start: threading.Barrier = start, codes: list[str] = codes
        ) -> None:
            start.wait()
            try:
                s3.put_object(Bucket=BUCKET, Key=key, Body=text.encode(), IfNoneMatch="*")
                codes.append("ok")
            except ClientError as exc:
                codes.append(exc.response["Error"]["Code"])

        pair = [threading.Thread(target=put, args=(t,)) for t in ("a", "b")]
        for thread in pair:
            thread.start()
        for thread in pair:
            thread.join(timeout=10)
        # THEN one created it and the other got 412 PreconditionFailed (never two writers)
        assert sorted(codes) == ["PreconditionFailed", "ok"], codes


def test_if_none_match_takes_only_a_star_and_if_match_needs_the_object(s3: Any) -> None:
    etag = s3.put_object(Bucket=BUCKET, Key="k", Body=b"x")["ETag"]
    with pytest.raises(ClientError) as caught:
        s3.put_object(Bucket=BUCKET, Key="k", Body=b"y", IfNoneMatch=etag)
    assert caught.value.response["Error"]["Code"] == "NotImplemented"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 501
    with pytest.raises(ClientError) as caught:
        s3.put_object(Bucket=BUCKET, Key="none", Body=b"y", IfMatch=etag)
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    with pytest.raises(ClientError) as caught:
        s3.put_object(Bucket=BUCKET, Key="k", Body=b"y", IfMatch='"0000"')
    assert caught.value.response["Error"]["Code"] == "PreconditionFailed"
    assert s3.put_object(Bucket=BUCKET, Key="k", Body=b"z", IfMatch=etag)["ETag"] != etag


def test_unlock_breaks_only_the_holders_id(s3: Any) -> None:
    held = take(s3)
    # WHEN unlock names another id THEN one line names the holder and nothing changes
    with pytest.raises(UserError) as wrong:
        lock.break_lock(s3, REF, "not-the-id")
    assert "\n" not in str(wrong.value) and held.id in str(wrong.value) and wrong.value.code == "env.lock_id"
    assert body(s3)["id"] == held.id
    # WHEN it names the holder's id THEN the lock is gone and another command takes it at once
    assert lock.break_lock(s3, REF, held.id).id == held.id
    assert take(s3, BOB).id != held.id
    # AND unlocking an environment nobody locks says so
    lock.break_lock(s3, REF, body(s3)["id"])
    with pytest.raises(UserError, match="is not locked"):
        lock.break_lock(s3, REF, held.id)


def test_an_environment_without_its_bootstrap_bucket_is_one_line(s3: Any) -> None:
    ref = lock.LockRef("dev", "doctable-dev", "cdk-nothere-assets-123456789012-us-east-1", REF.key)
    with pytest.raises(UserError) as caught:
        lock.acquire(s3, ref, who=ALICE, command="deploy")
    assert caught.value.code == "env.lock_bucket" and "doctable bootstrap --env dev" in str(caught.value)


def test_holding_releases_the_lock_however_the_body_ends(s3: Any) -> None:
    with pytest.raises(RuntimeError), lock.holding(s3, REF, who=ALICE, command="teardown"):
        assert body(s3)["command"] == "teardown"
        raise RuntimeError("the command failed")
    assert take(s3, BOB).id


@pytest.mark.parametrize(
    ("text", "seconds"), [("0", 0.0), ("90", 90.0), ("90s", 90.0), ("5m", 300.0), ("1h", 3600.0)]
)
def test_wait_durations(text: str, seconds: float) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["x", "-5", "5d", "25h", ""])
def test_a_wait_that_is_not_a_duration_is_one_line(text: str) -> None:
    with pytest.raises(UserError, match="--wait"):
        duration(text)
