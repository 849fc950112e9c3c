"""DynamoDB Streams' readers per shard: a GetRecords by a third reader active on one shard is throttled.

AWS: "No more than two processes at most should be reading from the same streams shard at the same time. Having
more than two readers per shard can result in throttling" (the developer guide's Streams pages); botocore's model
names the refusal GetRecords answers, LimitExceededException ("More than 2 processes are reading from the same
streams shard at the same time"), which the DynamoDB Streams Kinesis adapter treats as throttling (its
AmazonServiceExceptionTransformer). moto lets any number read.

Here a reader is a process polling the shard: an event-source mapping's poller (local/pollers/streams.py, a
``StreamPoller`` thread), whatever iterators it takes, or a shard-iterator lineage that polls, i.e. has read with a
NextShardIterator (GetShardIterator starts a lineage, the NextShardIterator of each GetRecords continues it). A
lineage read only with the iterators GetShardIterator gave it is a look, not a process: it is admitted or refused
like any read but does not hold a place (a client that looks at a shard through several iterators one after the
other, as the outside suite's stream tests do, is one caller, which AWS does not throttle). A reader is active on a
shard while its last admitted GetRecords there is less than ``WINDOW_SECONDS`` old; a GetRecords by a reader that
is not active while ``READERS_MAX`` others are is refused with LimitExceededException and changes nothing (it is
not a read). ``CLOCK`` is a test's to replace.

This module owns GetShardIterator and GetRecords (``DynamoDBStreamsBackend.get_shard_iterator``/``get_records``);
beside the readers, each of them trims moto's map of shard iterators (``trim_iterators``: moto keeps them
forever, so a reader polling every 100 ms grows it), the iterator taken first, the records read first.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from local.patching import Patches, Target
from local.pollers.streams import StreamPoller

PATCHES = Patches()
_STREAMS = "moto.dynamodbstreams.models"

READERS_MAX = 2
WINDOW_SECONDS = 1.0
LIMIT_EXCEEDED = "LimitExceededException"
# AWS's words for this refusal are not documented: DynamoDB Streams answers a throttled request "Rate exceeded"
# (aws/aws-sdk-java-v2#470); the shard is named as Kinesis names it in its throttling message.
MESSAGE = "Rate exceeded for shard {shard}"
MAX_SHARD_ITERATORS = 20_000  # moto's map of shard iterators: its oldest tenth dropped past this
LINEAGES_MAX = 10_000  # iterators remembered: the oldest are forgotten first (moto's map is trimmed likewise)
CLOCK: Callable[[], float] = time.monotonic


class ShardReaders:
    """Per shard, the time of each reader's last admitted GetRecords; per iterator, the reader it belongs to."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._shards: dict[str, dict[str, float]] = {}
        self._lineages: OrderedDict[str, str] = OrderedDict()

    def admit(self, shard: str, reader: str, now: float, polls: bool = True) -> bool:
        """Record a GetRecords by ``reader`` on ``shard`` at ``now`` (when it ``polls``: a look holds no place);
        False (nothing recorded) when it is not active there and ``READERS_MAX`` others are."""
        with self._lock:
            active = {r: t for r, t in self._shards.get(shard, {}).items() if now - t < WINDOW_SECONDS}
            if reader not in active and len(active) >= READERS_MAX:
                self._shards[shard] = active
                return False
            if polls:
                active[reader] = now
            self._shards[shard] = active
            return True

    def active(self, shard: str, now: float) -> list[str]:
        """The readers active on ``shard`` at ``now``, oldest read first."""
        with self._lock:
            found = self._shards.get(shard, {})
            return sorted((r for r, t in found.items() if now - t < WINDOW_SECONDS), key=found.__getitem__)

    def lineage(self, iterator: str) -> str:
        """The reader an iterator belongs to: the one that took it, or the iterator itself (a reader of its own)."""
        with self._lock:
            return self._lineages.get(iterator, iterator)

    def continues(self, iterator: str, reader: str) -> None:
        """``iterator`` belongs to ``reader`` (a GetShardIterator's answer, or a NextShardIterator)."""
        with self._lock:
            self._lineages[iterator] = reader
            while len(self._lineages) > LINEAGES_MAX:
                self._lineages.popitem(last=False)

    def reset(self) -> None:
        with self._lock:
            self._shards.clear()
            self._lineages.clear()


READERS = ShardReaders()


def _poller() -> str | None:
    """The mapping whose poller thread makes this call (it reads as one reader), else None."""
    thread = threading.current_thread()
    return f"mapping:{thread.uuid}" if isinstance(thread, StreamPoller) else None


def shard_key(iterator: Any) -> str:
    """The stream shard an iterator reads: its stream's ARN and the shard's id."""
    return f"{iterator.arn.split('|', 1)[0]}#{iterator.stream_shard.id}"


def _limit_exceeded(shard_id: str) -> Exception:
    from moto.dynamodb.exceptions import ERROR_TYPE_PREFIX, DynamodbException

    return DynamodbException(ERROR_TYPE_PREFIX + LIMIT_EXCEEDED, MESSAGE.format(shard=shard_id))


def trim_iterators(backend: Any) -> None:
    """Drop the oldest tenth of moto's shard iterators once there are more than MAX_SHARD_ITERATORS."""
    if len(backend.shard_iterators) > MAX_SHARD_ITERATORS:
        for stale in list(backend.shard_iterators)[: MAX_SHARD_ITERATORS // 10]:
            backend.shard_iterators.pop(stale, None)


@PATCHES.replace(
    Target(
        _STREAMS,
        "DynamoDBStreamsBackend.get_shard_iterator",
        ("self", "arn", "shard_id", "shard_iterator_type", "sequence_number"),
    )
)
def get_shard_iterator(
    self: Any, arn: str, shard_id: str, shard_iterator_type: str, sequence_number: Any = None
) -> Any:
    """GetShardIterator, in steps: moto's iterators trimmed; moto's; a new reader (a poller's iterators are its
    own)."""
    trim_iterators(self)
    iterator = PATCHES.original(get_shard_iterator)(self, arn, shard_id, shard_iterator_type, sequence_number)
    if _poller() is None:
        READERS.continues(iterator.arn, iterator.arn)
    return iterator


@PATCHES.replace(Target(_STREAMS, "DynamoDBStreamsBackend.get_records", ("self", "iterator_arn", "limit")))
def get_records(self: Any, iterator_arn: str, limit: int) -> Any:
    """GetRecords, in steps: refused with LimitExceededException when its reader would be a third on the shard;
    moto's; moto's iterators trimmed; the reader's lineage continued."""
    iterator = self.shard_iterators.get(iterator_arn)
    if iterator is None:  # moto's own answer to an iterator it does not know
        result = PATCHES.original(get_records)(self, iterator_arn, limit)
        trim_iterators(self)
        return result
    poller = _poller()
    reader = poller or READERS.lineage(iterator_arn)
    polls = (
        poller is not None or reader != iterator_arn
    )  # a mapping, or a lineage read with a NextShardIterator
    if not READERS.admit(shard_key(iterator), reader, CLOCK(), polls):
        raise _limit_exceeded(iterator.stream_shard.id)
    result = PATCHES.original(get_records)(self, iterator_arn, limit)
    trim_iterators(self)
    following = result.get("NextShardIterator")
    if following and poller is None:
        READERS.continues(following, reader)
    return result


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_STREAMS, "ShardIterator.arn"),
    Target("moto.dynamodb.exceptions", "DynamodbException"),
    Target("moto.dynamodb.exceptions", "ERROR_TYPE_PREFIX"),
)
