"""The lock on one environment: every command that changes an environment (deploy and each of its index steps,
reconcile --apply, teardown, preview deploy/destroy/gc, the replica stacks) holds it while it works, so two
commands from two checkouts (a pipeline and a laptop) never change one environment at once.

Where (contract/iam/lock.py names it): one S3 object, ``doctable/locks/<stack name>.json``, in the environment's
CDK bootstrap bucket, the file-assets bucket of its qualifier, ``cdk-<qualifier>-assets-<account>-<region>`` (the environment's
``qualifier`` binding, else the CDK's default: contract/iam/bootstrap.py; ``doctable bootstrap`` makes it). That
bucket because it exists before the first deploy (a deploy cannot run without it: the CDK publishes the template
and the function's code there), it is the environment's own account's and region's, the deployer already writes
to it, and nothing else of the application lives there: no table or bucket of the stack has to exist for the
lock to be taken, and a teardown that deletes the stack leaves the lock's bucket in place.

How: S3's conditional writes (the S3 User Guide, "How to prevent object overwrites with conditional writes"):
taken by a PutObject with ``If-None-Match: *`` (412 PreconditionFailed, or 409 ConditionalRequestConflict for a
concurrent one, when another holds it), renewed by a background thread with ``If-Match: <its ETag>`` (a renewal
never overwrites another holder's lock), released by a DeleteObject with ``If-Match`` (conditional deletes; read,
compare and delete where S3 answers 501 to it). Its body says who holds it (the caller's ARN from STS), where
(host, pid, checkout), what command, since when and until when: a lease of ``LEASE_SECONDS`` by AWS's clock (the
``Date`` of S3's answers, as previews expire), so a holder that died leaves a lock another command takes over
(a PutObject with ``If-Match`` on the expired lock's ETag) once the lease has passed.

A second command is refused at once (:class:`EnvironmentLocked`, exit 3 as every refusal that changed nothing,
``code`` ``env.locked`` with the holder's fields), or with ``wait`` polls until the lock is free or the deadline
passes. ``doctable unlock --env E ID`` (:func:`break_lock`) deletes a lock whose id is ``ID``, as ``terraform
force-unlock`` does.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from email.utils import parsedate_to_datetime
from typing import Any

from botocore.exceptions import ClientError

from doctable.core.answers import error_code
from doctable.core.errors import RefusedError, UserError

LEASE_SECONDS = 180.0  # how long a lock outlives its last renewal
RENEW_FRACTION = 1 / 3  # renewed every third of the lease
POLL_SECONDS = 2.0  # how often a waiting command looks again
# S3's answers to a conditional write that did not hold: 412 (another object), 409 (a concurrent one), 404 (an
# If-Match on an object deleted meanwhile).
LOST_RACE = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey", "412", "409", "404"})


def aws_time(response: Mapping[str, Any]) -> dt.datetime | None:
    """The time S3 answered at (the ``Date`` header of an answer or of an error's answer): a lease is judged by
    AWS's clock, never this machine's. None for an answer without one (S3 always sends it; only an in-process
    stand-in, moto's mock, does not)."""
    headers = (response.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
    try:
        moment = parsedate_to_datetime(headers["date"]) if headers.get("date") else None
    except (TypeError, ValueError):
        moment = None
    if moment is None or moment.tzinfo is None:
        return None
    return moment.astimezone(dt.UTC)


def iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def parse_iso(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(dt.UTC)


@dataclass(frozen=True)
class LockRef:
    """Where one environment's lock lives."""

    env: str
    stack: str
    bucket: str
    key: str


@dataclass(frozen=True)
class LockHolder:
    """The lock's body: who holds it, where, for what, since and until when (AWS's time, ISO 8601)."""

    id: str
    who: str  # the caller's ARN (STS)
    host: str
    pid: int
    checkout: str  # the working directory of the command
    command: str
    env: str
    stack: str
    since: str
    until: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> LockHolder:
        fields = cls.__dataclass_fields__
        return cls(**{name: document.get(name, "" if name != "pid" else 0) for name in fields})

    def describe(self) -> str:
        return (
            f"{self.command} by {self.who} on {self.host} (pid {self.pid}, {self.checkout}) since {self.since}, "
            f"lease until {self.until}; lock id {self.id}"
        )

    def fields(self) -> dict[str, str]:
        """The holder as ``--json``'s error fields (``holder_*``)."""
        return {f"holder_{k}": str(v) for k, v in self.to_json().items() if k not in ("env", "stack")}


class EnvironmentLocked(RefusedError):
    """Another command holds the environment's lock (exit 3: refused, nothing changed)."""

    def __init__(self, ref: LockRef, holder: LockHolder, waited: float) -> None:
        waited_text = f" after waiting {waited:.0f}s" if waited > 0 else ""
        super().__init__(
            f"environment {ref.env} is locked{waited_text}: {holder.describe()}; nothing changed; allowed: "
            f"--wait DURATION, or `doctable unlock --env {ref.env} {holder.id}` if that command is dead",
            {"code": "env.locked", "env": ref.env, "stack": ref.stack, "lock": f"s3://{ref.bucket}/{ref.key}"}
            | holder.fields(),
        )
        self.holder = holder


class AwsClock:
    """AWS's time, read from the ``Date`` of S3's last answer and carried forward by this machine's monotonic
    clock between answers (never its wall clock, unless no answer carried a Date: an in-process stand-in's)."""

    def __init__(self) -> None:
        self._at: tuple[dt.datetime, float] | None = None

    def observe(self, response: Mapping[str, Any]) -> dt.datetime:
        moment = aws_time(response)
        if moment is None:
            return self.now()
        self._at = (moment, time.monotonic())
        return moment

    def now(self) -> dt.datetime:
        if self._at is None:
            return dt.datetime.now(dt.UTC)
        moment, at = self._at
        return moment + dt.timedelta(seconds=time.monotonic() - at)


@dataclass(frozen=True)
class Current:
    """The lock as S3 holds it now: its holder, its ETag, and AWS's time when it was read."""

    holder: LockHolder
    etag: str
    now: dt.datetime

    @property
    def expired(self) -> bool:
        return parse_iso(self.holder.until) <= self.now


class LockStore:
    """The lock object's reads and conditional writes (one S3 client, one key)."""

    def __init__(self, s3: Any, ref: LockRef) -> None:
        self.s3, self.ref, self.clock = s3, ref, AwsClock()
        # S3 answers a GetObject of a missing key 403, not 404, to a caller without s3:ListBucket on the bucket,
        # which the policies do not grant (the lock's key only): the refusal kept, to raise if the key exists.
        self.denied: ClientError | None = None

    def read(self) -> Current | None:
        """The lock now, or None when nobody holds it (AWS's time observed either way)."""
        self.denied = None
        try:
            answer = self.s3.get_object(Bucket=self.ref.bucket, Key=self.ref.key)
        except ClientError as exc:
            self.clock.observe(exc.response)
            if error_code(exc) in ("NoSuchKey", "404"):
                return None
            if error_code(exc) in ("AccessDenied", "403"):
                self.denied = exc
                return None
            if error_code(exc) == "NoSuchBucket":
                raise UserError(
                    f"environment {self.ref.env}'s lock lives in the CDK bootstrap bucket {self.ref.bucket}, which "
                    "does not exist: bootstrap the account and region first (doctable bootstrap --env "
                    f"{self.ref.env}, or cdk bootstrap)",
                    {"code": "env.lock_bucket", "bucket": self.ref.bucket},
                ) from exc
            raise
        now = self.clock.observe(answer)
        body = answer["Body"].read()
        try:
            holder = LockHolder.from_json(json.loads(body))
        except (ValueError, TypeError):  # not a lock of ours: treated as expired, so it can be taken over
            holder = LockHolder("?", "?", "?", 0, "?", "?", self.ref.env, self.ref.stack, "", iso(now))
        return Current(holder, answer["ETag"], now)

    def head(self) -> str | None:
        """The lock's ETag now (None when there is none), AWS's time observed."""
        try:
            answer = self.s3.head_object(Bucket=self.ref.bucket, Key=self.ref.key)
        except ClientError as exc:
            self.clock.observe(exc.response)
            if error_code(exc) in ("NoSuchKey", "404", "NotFound"):
                return None
            raise
        self.clock.observe(answer)
        return str(answer["ETag"])

    def put(self, holder: LockHolder, *, if_match: str | None = None) -> str | None:
        """Write ``holder`` as the lock: created only if absent (no ``if_match``), else only over the ETag
        ``if_match``. Its new ETag, or None when the condition did not hold."""
        condition = {"IfMatch": if_match} if if_match else {"IfNoneMatch": "*"}
        try:
            answer = self.s3.put_object(
                Bucket=self.ref.bucket,
                Key=self.ref.key,
                Body=json.dumps(holder.to_json(), indent=1).encode(),
                ContentType="application/json",
                **condition,
            )
        except ClientError as exc:
            self.clock.observe(exc.response)
            status = str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
            if error_code(exc) in LOST_RACE or status in LOST_RACE:
                return None
            if error_code(exc) == "NoSuchBucket":
                self.read()  # raises the bootstrap's line
            raise
        self.clock.observe(answer)
        return str(answer["ETag"])

    def delete(self, etag: str, lock_id: str) -> bool:
        """Delete the lock if it is still ``etag`` (S3's conditional delete; where S3 refuses the condition with
        501, read, compare the id and delete): whether it was deleted."""
        try:
            self.s3.delete_object(Bucket=self.ref.bucket, Key=self.ref.key, IfMatch=etag)
            return True
        except ClientError as exc:
            code = error_code(exc)
            if code in LOST_RACE:
                return False
            if code != "NotImplemented":
                raise
        current = self.read()
        if current is None or current.holder.id != lock_id:
            return False
        self.s3.delete_object(Bucket=self.ref.bucket, Key=self.ref.key)
        return True


class HeldLock:
    """A lock this process holds: renewed in the background until released."""

    def __init__(self, store: LockStore, holder: LockHolder, etag: str, lease: float, taken_over: str | None):
        self.store, self.holder, self.etag, self.lease = store, holder, etag, lease
        self.taken_over = taken_over  # the expired holder's line when this lock replaced it
        self.lost: str | None = None  # why the lock is no longer ours (broken or taken over), when it is not
        self._stop = threading.Event()
        self._mutex = threading.Lock()
        self._thread = threading.Thread(target=self._renew_loop, name="doctable-lock-renewal", daemon=True)

    @property
    def id(self) -> str:
        return self.holder.id

    def start(self) -> HeldLock:
        self._thread.start()
        return self

    def renew(self) -> bool:
        """Extend the lease (a conditional write on the lock's ETag); False, and ``lost`` set, when the lock is no
        longer ours."""
        with self._mutex:
            if self.lost:
                return False
            # AWS's time now (the HEAD's Date), and the ETag is still ours; the write is conditional on it anyway
            etag: str | None = self.store.head()
            if etag == self.etag:
                until = self.store.clock.now() + dt.timedelta(seconds=self.lease)
                renewed = LockHolder(**{**self.holder.to_json(), "until": iso(until)})
                etag = self.store.put(renewed, if_match=self.etag)
            else:
                etag = None
            if etag is None:
                self.lost = "the lock was broken or taken over while this command held it"
                return False
            self.holder, self.etag = renewed, etag
            return True

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.lease * RENEW_FRACTION):
            try:
                if not self.renew():
                    return
            except (ClientError, UserError):
                continue  # a transient failure: the next renewal tells (the lease has two more thirds)

    def release(self) -> bool:
        """Stop renewing and delete the lock if it is still ours; whether it was."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        with self._mutex:
            if self.lost:
                return False
            return self.store.delete(self.etag, self.holder.id)


def holder_for(
    ref: LockRef, who: str, command: str, now: dt.datetime, lease: float, checkout: str | None = None
) -> LockHolder:
    return LockHolder(
        id=str(uuid.uuid4()),
        who=who,
        host=socket.gethostname(),
        pid=os.getpid(),
        checkout=checkout or os.getcwd(),
        command=command,
        env=ref.env,
        stack=ref.stack,
        since=iso(now),
        until=iso(now + dt.timedelta(seconds=lease)),
    )


def acquire(
    s3: Any,
    ref: LockRef,
    *,
    who: str,
    command: str,
    wait: float = 0.0,
    lease: float = LEASE_SECONDS,
    checkout: str | None = None,
    say: Callable[[str], None] | None = None,
    poll: float = POLL_SECONDS,
) -> HeldLock:
    """Take the environment's lock (the renewal not started: :meth:`HeldLock.start`). Refused with
    :class:`EnvironmentLocked` when another command holds it and ``wait`` seconds pass (0: at once); a lock whose
    lease has passed by AWS's clock is taken over."""
    store = LockStore(s3, ref)
    started = time.monotonic()
    deadline = started + max(0.0, wait)
    said = False
    while True:
        current = store.read()
        if current is None:
            holder = holder_for(ref, who, command, store.clock.now(), lease, checkout)
            denied = store.denied
            etag = store.put(holder)
            if etag is not None:
                return HeldLock(store, holder, etag, lease, None)
            if denied is not None:  # the lock exists and its read was refused: the 403 was a real refusal
                raise denied
            continue  # another command took it between the read and the write: look again
        if current.expired:
            holder = holder_for(ref, who, command, current.now, lease, checkout)
            etag = store.put(holder, if_match=current.etag)
            if etag is not None:
                return HeldLock(store, holder, etag, lease, current.holder.describe())
            continue
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise EnvironmentLocked(ref, current.holder, time.monotonic() - started if wait > 0 else 0.0)
        if say is not None and not said:
            say(f"environment {ref.env} is locked: {current.holder.describe()}; waiting up to {wait:.0f}s")
            said = True
        time.sleep(min(poll, remaining))  # a poll with a deadline: the lock is looked at again


@contextmanager
def holding(
    s3: Any,
    ref: LockRef,
    *,
    who: str,
    command: str,
    wait: float = 0.0,
    lease: float = LEASE_SECONDS,
    checkout: str | None = None,
    say: Callable[[str], None] | None = None,
) -> Iterator[HeldLock]:
    """The lock held (and renewed) for the body, released after it however it ends."""
    held = acquire(s3, ref, who=who, command=command, wait=wait, lease=lease, checkout=checkout, say=say)
    if held.taken_over and say is not None:
        say(f"took over the expired lock of environment {ref.env}: {held.taken_over}")
    held.start()
    try:
        yield held
    finally:
        released = held.release()
        if not released and say is not None:
            say(
                f"the lock of environment {ref.env} was not ours at the end: {held.lost or 'another holds it'}"
            )


def break_lock(s3: Any, ref: LockRef, lock_id: str) -> LockHolder:
    """``doctable unlock``: delete the lock if its id is ``lock_id`` (conditional on the ETag read); the holder it
    removed. One line when it is not locked or another id holds it."""
    store = LockStore(s3, ref)
    current = store.read()
    if current is None:
        raise UserError(
            f"environment {ref.env} is not locked (no s3://{ref.bucket}/{ref.key}): nothing to unlock",
            {"code": "env.not_locked", "env": ref.env},
        )
    if current.holder.id != lock_id:
        raise UserError(
            f"lock id {lock_id} is not the holder's: environment {ref.env} is held by {current.holder.describe()}; "
            "nothing changed",
            {"code": "env.lock_id", "env": ref.env} | current.holder.fields(),
        )
    if not store.delete(current.etag, lock_id):
        raise UserError(
            f"the lock of environment {ref.env} changed while it was being broken: run doctable unlock again",
            {"code": "env.lock_id", "env": ref.env},
        )
    return current.holder
