"""Key reuse: an application deletes an item, uploads the same blob key again and puts the item back listing it,
racing the consumer's cleanup of the REMOVE. Each ordering of the race is pinned here.

The consumer's steps for a dropped key are: observe (HEAD), [settle], read the live item (BatchGetItem),
delete (DeleteObjects conditional on the observed ETag). The application's re-upload (U) and re-put (P) are
placed before each of those steps, or after the whole cleanup, in every order with U before P.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from stream_consumer.blob_store import DeleteResult, ObjectIdentity, S3BlobStore
from stream_consumer.cleanup import KEPT_CHANGED, KEPT_LIVE, KEPT_NEWER, BlobCleaner
from stream_consumer.constants import REUPLOAD_SETTLE_SECONDS
from stream_consumer.domain import parse_batch
from stream_consumer.settings import Settings

from tests.support.s3_model import ConditionalBucket
from tests.unit.events import ACCOUNT, TABLE, remove

ITEM = ("doc#1", "v#1")
KEY = "doc#1/v#1/body.pdf"
RECORD_SECOND = 1_000  # the REMOVE's ApproximateCreationDateTime
# Where an application action happens relative to the consumer's steps.
STEPS = ("observe", "read", "delete", "after")


@dataclass
class World:
    """One bucket, one table and one clock, shared by the application and the consumer (BlobStore + LiveItems)."""

    now: float
    objects: dict[str, tuple[str, float]] = field(default_factory=dict)  # key -> (etag, last modified)
    items: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    due: dict[str, list[Callable[[], None]]] = field(default_factory=dict)  # step -> app actions before it
    uploads: int = 0

    def run_due(self, step: str) -> None:
        for action in self.due.pop(step, []):
            action()

    # ---- the application
    def upload(self, key: str = KEY) -> None:
        self.uploads += 1
        self.objects[key] = (f'"v{self.uploads}"', self.now)

    def put_item(self) -> None:
        self.items[ITEM] = [KEY]

    # ---- the consumer's ports
    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def observe(self, key: str) -> ObjectIdentity | None:
        self.run_due("observe")
        found = self.objects.get(key)
        return ObjectIdentity(*found) if found else None

    def prepare(self) -> None: ...

    def listed_keys(self, items: Sequence[tuple[str, str]]) -> dict[tuple[str, str], frozenset[str]]:
        self.run_due("read")
        return {item: frozenset(self.items[item]) for item in items if item in self.items}

    def delete_keys(self, keys: Sequence[str], etags: Mapping[str, str] | None = None) -> DeleteResult:
        """The consumer's own S3 adapter over the tests' S3 model (the local AWS's per-key verdicts)."""
        self.run_due("delete")
        bucket = {key: etag for key, (etag, _) in self.objects.items()}
        result = S3BlobStore("bucket", client=ConditionalBucket(bucket), owner=ACCOUNT).delete_keys(
            keys, etags
        )
        for gone in set(self.objects) - set(bucket):
            del self.objects[gone]
        return result

    def list_prefix(self, prefix: str) -> list[str]:
        return sorted(key for key in self.objects if key.startswith(prefix))


class Quiet:
    def info(self, *args: Any, **kwargs: Any) -> None: ...
    def warning(self, *args: Any, **kwargs: Any) -> None: ...
    def error(self, *args: Any, **kwargs: Any) -> None: ...
    def add_metric(self, *args: Any, **kwargs: Any) -> None: ...


def clean_the_remove(world: World) -> dict[str, str]:
    """The consumer cleans up after the REMOVE of ITEM (created at RECORD_SECOND); returns what it kept."""
    cleaner = BlobCleaner(
        world,
        Settings("bucket", "", False, TABLE),
        Quiet(),
        Quiet(),
        world,
        clock=world.clock,
        sleep=world.sleep,
    )
    raw = remove(1, *ITEM, [KEY], created=RECORD_SECOND)
    outcome = cleaner.clean(parse_batch([raw], TABLE))
    assert outcome.failures == {} and outcome.key_errors == {}
    for (
        step
    ) in STEPS:  # what is left: steps the consumer did not need (no read, no delete) come to pass anyway
        world.run_due(step)
    return outcome.kept


def race(upload_before: str, put_before: str, *, consumer_starts_at: float) -> World:
    """GIVEN the item listed KEY (uploaded before the record) and was deleted at RECORD_SECOND; the application
    re-uploads KEY before ``upload_before`` and puts the item back before ``put_before``."""
    world = World(now=consumer_starts_at)
    world.objects[KEY] = ('"v0"', RECORD_SECOND - 0.5)
    world.due.setdefault(upload_before, []).append(world.upload)
    world.due.setdefault(put_before, []).append(world.put_item)
    return world


SAME_SECOND, LATER_SECOND = RECORD_SECOND + 0.3, RECORD_SECOND + 1.2  # when the consumer starts
# The one ordering outside the guarantee (pinned by test_the_residual_window_is_a_reput_later_than_the_settle_time):
# a re-upload in the record's own second before the HEAD, the item back only after the read that followed the
# settle time.
RESIDUAL = {("observe", "delete", SAME_SECOND), ("observe", "after", SAME_SECOND)}
RACES = [
    pytest.param(u, p, start, id=f"{'same-second' if start == SAME_SECOND else 'later'}-U<{u}-P<{p}")
    for start in (SAME_SECOND, LATER_SECOND)
    for u, p in itertools.product(STEPS, STEPS)
    if STEPS.index(u) <= STEPS.index(p) and (u, p, start) not in RESIDUAL
]


@pytest.mark.parametrize(("upload_before", "put_before", "starts_at"), RACES)
def test_the_reuploaded_blob_survives_every_ordering(upload_before, put_before, starts_at):
    # GIVEN the race
    world = race(upload_before, put_before, consumer_starts_at=starts_at)

    # WHEN the consumer cleans up after the REMOVE while the application re-uploads and re-puts
    kept = clean_the_remove(world)

    # THEN the item lists KEY and KEY holds the re-uploaded object (v1), never deleted
    assert world.items == {ITEM: [KEY]}
    assert world.objects.get(KEY, ("<deleted>",))[0] == '"v1"'
    # AND a re-upload after the delete means the old object was cleaned first; otherwise the key was kept, why
    if upload_before == "after":
        assert kept == {}
    else:
        assert kept[KEY] in (KEPT_NEWER, KEPT_LIVE, KEPT_CHANGED)


def test_each_protection_is_the_one_that_holds_its_window():
    # GIVEN/WHEN three races THEN each is stopped by the step meant for it
    later = race("observe", "after", consumer_starts_at=LATER_SECOND)
    assert clean_the_remove(later) == {KEY: KEPT_NEWER}  # uploaded in a later second than the record
    settled = race("observe", "read", consumer_starts_at=SAME_SECOND)
    assert clean_the_remove(settled) == {KEY: KEPT_LIVE}  # same second: the item read after settling lists it
    during = race("delete", "after", consumer_starts_at=SAME_SECOND)
    assert clean_the_remove(during) == {KEY: KEPT_CHANGED}  # replaced between HEAD and delete: ETag differs


def test_the_consumer_waits_until_the_settle_time_after_a_same_second_upload():
    # GIVEN an object uploaded again in the record's own second, seen by the HEAD
    world = race("observe", "after", consumer_starts_at=SAME_SECOND)
    reads: list[float] = []
    world.due["read"] = [lambda: reads.append(world.now)]

    # WHEN the consumer cleans up
    clean_the_remove(world)

    # THEN its live-item read came no sooner than the settle time after the end of that second
    assert reads == [pytest.approx(math.floor(SAME_SECOND) + 1 + REUPLOAD_SETTLE_SECONDS)]


def test_the_residual_window_is_a_reput_later_than_the_settle_time():
    # GIVEN a re-upload in the record's own second, and the item put back only after the consumer's read,
    # which came REUPLOAD_SETTLE_SECONDS after that second ended
    world = race("observe", "after", consumer_starts_at=SAME_SECOND)

    # WHEN the consumer cleans up
    kept = clean_the_remove(world)

    # THEN that blob cannot be told from the one the record dropped: it is deleted (docs/reliability.md: the residual windows)
    assert kept == {} and KEY not in world.objects


def test_an_old_blob_nobody_lists_again_is_deleted():
    # GIVEN the item was deleted and nothing came back
    world = race("after", "after", consumer_starts_at=SAME_SECOND)
    world.due.clear()

    # WHEN the consumer cleans up  THEN the dropped blob is gone
    assert clean_the_remove(world) == {}
    assert KEY not in world.objects
