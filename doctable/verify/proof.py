"""Record-level proof that the consumer (or a subscriber) received a write: the write's sequence number read off the
stream, and the ``stream_records_received`` log line that covers it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from contract import names
from contract.knobs import STARTING_LATEST, STARTING_POSITION_CFN
from doctable.core.answers import is_not_found

if TYPE_CHECKING:
    from doctable.core.aws import Aws
    from doctable.core.render import Progress

MAX_SHARDS_TRACKED = 64
SEQUENCE_LOOKUP_BOUND = 20.0
CLOCK_SKEW_MS = 5_000
LOG_LOOKBACK_MS = 60_000
# A shard iterator at the newest end of the shard: the same word as a LATEST mapping's starting position.
NEWEST = STARTING_POSITION_CFN[STARTING_LATEST]


def _seq(value: Any) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def parse_proof_line(message: str) -> dict[str, Any] | None:
    """The structured fields of a ``stream_records_received`` log event (Powertools JSON), else None."""
    start = message.find("{")
    if start < 0:
        return None
    try:
        line = json.loads(message[start:])
    except ValueError:
        return None
    if not isinstance(line, dict) or line.get("message") != names.PROOF_LOG_MESSAGE:
        return None
    return line


def covers(line: Mapping[str, Any], table: str, sequence: str | None, event_ms: int, write_ms: int) -> bool:
    """Does this proof line cover our nudge write? By sequence number when known, else by time."""
    if line.get("table_name") not in (None, table):
        return False
    if sequence is not None:
        first, last, ours = (
            _seq(line.get("first_sequence_number")),
            _seq(line.get("last_sequence_number")),
            _seq(sequence),
        )
        if first is not None and last is not None and ours is not None:
            return first <= ours <= last
    return event_ms >= write_ms - CLOCK_SKEW_MS and int(line.get("record_count") or 0) > 0


def open_iterators(
    page: Callable[[str | None], tuple[list[dict[str, Any]], str | None]], iterator_at: Callable[[str], str]
) -> list[str]:
    """A LATEST iterator (``iterator_at``: a shard id's) on each open shard of a stream, listed page by page
    (``page``: the shards after a page token, None for the first page, and the next token); none when there are
    too many shards to follow."""
    shards: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        listed, token = page(token)
        shards += listed
        if not token or len(shards) > MAX_SHARDS_TRACKED:
            break
    open_shards = [s for s in shards if "EndingSequenceNumber" not in s.get("SequenceNumberRange", {})]
    if len(open_shards) > MAX_SHARDS_TRACKED:
        return []
    return [iterator_at(shard["ShardId"]) for shard in open_shards]


def open_shard_iterators(streams: Any, stream_arn: str) -> list[str]:
    """A LATEST iterator on each open shard of the DynamoDB stream (none when there are too many to follow)."""

    def page(after: str | None) -> tuple[list[dict[str, Any]], str | None]:
        start = {"ExclusiveStartShardId": after} if after else {}
        description = streams.describe_stream(StreamArn=stream_arn, **start)["StreamDescription"]
        return description.get("Shards", []), description.get("LastEvaluatedShardId")

    def iterator_at(shard: str) -> str:
        reply = streams.get_shard_iterator(StreamArn=stream_arn, ShardId=shard, ShardIteratorType=NEWEST)
        return reply["ShardIterator"]

    return open_iterators(page, iterator_at)


def capture_sequence(
    aws: Aws,
    stream_arn: str | None,
    write: Callable[[], None],
    key: Mapping[str, str],
    *,
    bound: float,
    progress: Progress,
    event_name: str | None = None,
) -> str | None:
    """Run ``write`` and read the sequence number of the record it made (``key``: attribute -> string value;
    ``event_name``: the record's eventName, when the write makes several) off the stream; None if it cannot be
    found within ``bound`` seconds."""
    streams = aws.client("dynamodbstreams")

    def sequence_of(record: dict[str, Any]) -> str | None:
        if not is_change_of(record, key, event_name):
            return None
        return str(record["dynamodb"]["SequenceNumber"])

    return follow_shards(
        (lambda: open_shard_iterators(streams, stream_arn)) if stream_arn else None,
        lambda iterator: streams.get_records(ShardIterator=iterator, Limit=1000),
        sequence_of,
        write,
        bound=bound,
        progress=progress,
        what="the write's stream record",
    )


def is_change_of(change: Mapping[str, Any], key: Mapping[str, str], event_name: str | None) -> bool:
    """The DynamoDB change record is of the item ``key`` (attribute -> string value), with ``event_name``."""
    if event_name is not None and change.get("eventName") != event_name:
        return False
    keys = (change.get("dynamodb") or {}).get("Keys") or {}
    return all(keys.get(name, {}).get("S") == value for name, value in key.items())


def follow_shards(
    open_iterators: Callable[[], list[str]] | None,
    read: Callable[[str], dict[str, Any]],
    sequence_of: Callable[[dict[str, Any]], str | None],
    write: Callable[[], None],
    *,
    bound: float,
    progress: Progress,
    what: str,
) -> str | None:
    """Open an iterator on each shard (``open_iterators``; None: there is no stream), run ``write``, then read
    the shards forward (``read``: one GetRecords) every 0.5 s until ``sequence_of`` names a record; None if no
    record is found within ``bound`` seconds, or the shards could not be opened."""
    try:
        iterators = open_iterators() if open_iterators else []
    except (ClientError, BotoCoreError):
        iterators = []
    write()
    if not iterators:
        return None

    def probe() -> str | None:
        if not iterators:
            return ""  # every shard closed: nothing more to read
        following = []
        for iterator in iterators:
            try:
                reply = read(iterator)
            except (ClientError, BotoCoreError):
                continue
            for record in reply.get("Records", []):
                sequence = sequence_of(record)
                if sequence:
                    return sequence
            if reply.get("NextShardIterator"):
                following.append(reply["NextShardIterator"])
        iterators[:] = following
        return None

    sequence, _ = progress.wait(what, probe, bound, interval=0.5, max_interval=0.5)
    return sequence or None


def proof_events(aws: Aws, group: str, since_ms: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each proof line in ``group`` logged from ``since_ms`` on, with its timestamp, page by page (none while the
    group does not exist: it appears with the first invocation)."""
    logs = aws.client("logs")
    kwargs: dict[str, Any] = {
        "logGroupName": group,
        "startTime": max(0, since_ms),
        "filterPattern": f'"{names.PROOF_LOG_MESSAGE}"',
    }
    while True:
        try:
            reply = logs.filter_log_events(**kwargs)
        except ClientError as exc:
            if is_not_found(exc):
                return
            raise
        for event in reply.get("events", []):
            line = parse_proof_line(event.get("message", ""))
            if line:
                yield int(event.get("timestamp", 0)), line
        if not reply.get("nextToken"):
            return
        kwargs["nextToken"] = reply["nextToken"]


def find_proof(
    aws: Aws, group: str, table: str, sequence: str | None, write_ms: int
) -> dict[str, Any] | None:
    """The first proof line in ``group`` that covers the write, else None."""
    found = proof_events(aws, group, write_ms - LOG_LOOKBACK_MS)
    return next((line for at, line in found if covers(line, table, sequence, at, write_ms)), None)


def capture_changes(
    aws: Aws,
    source_arn: str,
    write: Callable[[], None],
    key: Mapping[str, str],
    count: int,
    *,
    bound: float,
    progress: Progress,
) -> list[tuple[str, str]]:
    """Run ``write`` and read the first ``count`` changes of the item ``key`` (attribute -> string value) off
    ``source_arn`` (a DynamoDB stream, a Kinesis data stream the table streams to, or its enhanced fan-out
    consumer), in order: each one's eventName and the sequence number a proof line spans (a Kinesis record's
    own); fewer when the rest are not found within ``bound`` seconds."""
    found: list[tuple[str, str]] = []
    seen: set[str] = set()  # a Kinesis record may come twice: its change's eventID tells
    if ":kinesis:" in source_arn:  # the data stream, or an enhanced fan-out consumer of it: read the stream
        opened, read = _kinesis_reader(aws, source_arn.split("/consumer/")[0])
    else:
        opened, read = _stream_reader(aws, source_arn)

    def sequence_of(record: dict[str, Any]) -> str | None:
        change, number = _change(record)
        if change is None or number is None or not is_change_of(change, key, None):
            return None
        identity = str(change.get("eventID") or number)
        if identity not in seen:
            seen.add(identity)
            found.append((str(change.get("eventName")), number))
        return number if len(found) >= count else None

    follow_shards(
        opened, read, sequence_of, write, bound=bound, progress=progress, what=f"the {count} changes' records"
    )
    return found


Reader = tuple[Callable[[], list[str]], Callable[[str], dict[str, Any]]]


def _stream_reader(aws: Aws, stream_arn: str) -> Reader:
    """(open a LATEST iterator on each open shard, read one) of a DynamoDB stream."""
    streams = aws.client("dynamodbstreams")

    def read(iterator: str) -> dict[str, Any]:
        reply: dict[str, Any] = streams.get_records(ShardIterator=iterator, Limit=1000)
        return reply

    return (lambda: open_shard_iterators(streams, stream_arn)), read


def _kinesis_reader(aws: Aws, stream_arn: str) -> Reader:
    """(open a LATEST iterator on each open shard, read one) of a Kinesis data stream."""
    client = aws.client("kinesis")

    def page(token: str | None) -> tuple[list[dict[str, Any]], str | None]:
        reply = client.list_shards(**({"NextToken": token} if token else {"StreamARN": stream_arn}))
        return reply.get("Shards", []), reply.get("NextToken")

    def iterator_at(shard: str) -> str:
        reply = client.get_shard_iterator(StreamARN=stream_arn, ShardId=shard, ShardIteratorType=NEWEST)
        return str(reply["ShardIterator"])

    def read(iterator: str) -> dict[str, Any]:
        reply: dict[str, Any] = client.get_records(ShardIterator=iterator, Limit=1000, StreamARN=stream_arn)
        return reply

    return (lambda: open_iterators(page, iterator_at)), read


def _change(record: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """A stream record's DynamoDB change and the sequence number its batch spans: the record itself (a DynamoDB
    stream's), or the JSON a Kinesis record's Data holds and the Kinesis sequence number."""
    if "Data" not in record:
        return record, str((record.get("dynamodb") or {}).get("SequenceNumber") or "") or None
    data = record["Data"]
    try:
        change = json.loads(data.decode() if isinstance(data, bytes | bytearray) else str(data))
    except (ValueError, UnicodeDecodeError):
        return None, None
    return (change if isinstance(change, dict) else None), str(record.get("SequenceNumber") or "") or None
