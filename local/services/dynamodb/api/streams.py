"""The DynamoDB Streams API as AWS answers it: paging, the stream and shard a request names, iterator types.

moto's handlers read what they are given: DescribeStream ignores ``ExclusiveStartShardId`` and ``ShardFilter``
(a client paging as the API reference documents gets the last shard again and loops), ListStreams never pages and
lists a stream for any table that once had one, a stream ARN that is not one is an HTTP 500, a shard that does
not exist an assertion (500), and GetShardIterator takes a sequence number for any iterator type. This module owns
those four operations' handlers (``DynamoDBStreamsHandler``); the model's constraints (lengths, enums, limits)
are checked before them by local/services/dynamodb/api/wire.py, and the readers per shard by stream_readers.py.

AWS's rules (the DynamoDB Streams API reference, API_streams_*.html): shards are listed in ShardId order from
after ``ExclusiveStartShardId`` (up to ``Limit``, 100 by default), ``LastEvaluatedShardId`` naming the last one
returned when more remain; ``ShardFilter`` (``Type`` CHILD_SHARDS and a ``ShardId``) lists the children of that
shard only; ListStreams pages the same way by stream ARN (``LastEvaluatedStreamArn`` is the ARN of the last one
returned, the next page starts after it whether or not its table still exists); AT_ and AFTER_SEQUENCE_NUMBER
need a ``SequenceNumber``, TRIM_HORIZON and LATEST take none.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

from local.patching import Patches, Target

PATCHES = Patches()
_HANDLER = "moto.dynamodbstreams.responses"
ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
STREAM_ARN = re.compile(
    r"arn:aws[a-z-]*:dynamodb:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):table/(?P<table>[a-zA-Z0-9_.-]{1,255})"
    r"/stream/(?P<label>[0-9T:.-]+)"
)
PAGE_DEFAULT = 100  # DescribeStream's and ListStreams' Limit when none is given
# AWS's words, where an AWS answer has been seen (the DynamoDB Streams SDK errors users report): an ARN that is not
# a stream ARN, and a shard the stream does not have. The others are not documented: written here to name what
# was wrong and what is allowed, as the rest of the API's ValidationExceptions do.
INVALID_ARN = "Invalid StreamArn"
NO_STREAM = "Requested resource not found: Stream: {arn} not found"
NO_SHARD = "Requested resource not found: Shard does not exist"
NEEDS_SEQUENCE = "Missing required parameter SequenceNumber for ShardIteratorType {type}"
NO_SEQUENCE_ALLOWED = "SequenceNumber may not be given for ShardIteratorType {type}"
FILTER_NEEDS = "ShardFilter.{member} is required when ShardFilter is given"
FILTER_SHARD = "Invalid ShardFilter.ShardId: shard {shard} does not exist in stream {arn}"
INVALID_START = "Invalid ExclusiveStartStreamArn"
ALREADY_ENABLED = (
    "Table already has an enabled stream: TableName: {table}"  # AWS's words, as users report them
)
NOTHING_TO_DISABLE = "Table has no enabled stream to disable: TableName: {table}"
INVALID_ITERATOR = (
    "Invalid ShardIterator: it was not returned by GetShardIterator or GetRecords, or it has expired"
)


class StreamsError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _answer(error: StreamsError) -> tuple[str, dict[str, Any]]:
    body = json.dumps({"__type": ERROR_PREFIX + error.code, "message": error.message})
    return body, {"status": 400, "Content-Type": "application/x-amz-json-1.0"}


@dataclass(frozen=True)
class Retired:
    """A stream disabled by UpdateTable: readable, DISABLED, its shard closed, for RETAINED_SECONDS."""

    table: str
    shard: Any  # moto's StreamShard, no longer written
    view_type: str
    key_schema: list[dict[str, str]]
    created: Any
    ending: int  # the shard's last sequence number (its start when it holds no record)
    disabled_at: float


RETAINED_SECONDS = 24 * 3600  # "the data in the stream remains readable for 24 hours" (Streams.html)
RETIRED: dict[str, Retired] = {}


def _retired(arn: str) -> Retired | None:
    found = RETIRED.get(arn)
    if found is not None and time.time() - found.disabled_at > RETAINED_SECONDS:
        RETIRED.pop(arn, None)
        return None
    return found


def _stream_table(handler: Any, arn: str | None, *, invalid: str = INVALID_ARN) -> Any:
    """The table whose current stream ``arn`` is (ValidationException for a malformed ARN, ResourceNotFound for a
    stream that is not there)."""
    from moto.dynamodb.models import dynamodb_backends

    match = STREAM_ARN.fullmatch(arn or "")
    if match is None:
        raise StreamsError("ValidationException", invalid)
    backend = dynamodb_backends[match["account"]][match["region"]]
    table = backend.tables.get(match["table"])
    if table is None or table.stream_shard is None or table.latest_stream_label != match["label"]:
        retired = _retired(str(arn))
        if retired is not None:
            return retired
        raise StreamsError("ResourceNotFoundException", NO_STREAM.format(arn=arn))
    return table


def _retired_description(arn: str, retired: Retired) -> dict[str, Any]:
    shard = retired.shard.to_json()
    shard["SequenceNumberRange"]["EndingSequenceNumber"] = str(retired.ending)
    return {
        "StreamArn": arn,
        "StreamLabel": arn.rsplit("/", 1)[-1],
        "StreamStatus": "DISABLED",
        "StreamViewType": retired.view_type,
        "CreationRequestDateTime": retired.created,
        "TableName": retired.table,
        "KeySchema": retired.key_schema,
        "Shards": [shard],
    }


def page(names: list[str], after: str | None, limit: int | None) -> tuple[list[str], str | None]:
    """The names after ``after`` in order, at most ``limit``; and the last one returned when more remain."""
    ordered = sorted(names)
    if after is not None:
        ordered = [n for n in ordered if n > after]
    size = limit or PAGE_DEFAULT
    chosen = ordered[:size]
    return chosen, (chosen[-1] if len(ordered) > size and chosen else None)


@PATCHES.replace(Target(_HANDLER, "DynamoDBStreamsHandler.describe_stream", ("self",)))
def describe_stream(self: Any) -> Any:
    """DescribeStream: the stream's shards paged from after ExclusiveStartShardId, or a shard's children."""
    arn = self._get_param("StreamArn")
    try:
        table = _stream_table(self, arn)
        shard_filter = self._get_param("ShardFilter")
        shard = table.shard if isinstance(table, Retired) else table.stream_shard
        shards = {shard.id: shard.to_json()}
        if shard_filter is not None:
            for member in ("Type", "ShardId"):
                if not shard_filter.get(member):
                    raise StreamsError("ValidationException", FILTER_NEEDS.format(member=member))
            if shard_filter["ShardId"] not in shards:
                raise StreamsError(
                    "ValidationException", FILTER_SHARD.format(shard=shard_filter["ShardId"], arn=arn)
                )
            shards = {}  # a local stream's one shard never splits: it has no children
    except StreamsError as error:
        return _answer(error)
    if isinstance(table, Retired):
        from moto.core.responses import ActionResult

        closed = _retired_description(arn, table)
        shards = {shard.id: closed["Shards"][0]} if shards else {}
        answer: Any = ActionResult({"StreamDescription": closed})
    else:
        answer = PATCHES.original(describe_stream)(self)
    description = answer.result["StreamDescription"]
    chosen, last = page(list(shards), self._get_param("ExclusiveStartShardId"), self._get_param("Limit"))
    description["Shards"] = [shards[s] for s in chosen]
    if last is not None:
        description["LastEvaluatedShardId"] = last
    return answer


@PATCHES.replace(Target(_HANDLER, "DynamoDBStreamsHandler.list_streams", ("self",)))
def list_streams(self: Any) -> Any:
    """ListStreams: the enabled streams in ARN order, paged from after ExclusiveStartStreamArn."""
    after = self._get_param("ExclusiveStartStreamArn")
    if after is not None and STREAM_ARN.fullmatch(after) is None:
        return _answer(StreamsError("ValidationException", INVALID_START))
    answer = PATCHES.original(list_streams)(self)
    streams = {s["StreamArn"]: s for s in answer.result["Streams"] if _enabled(self, s)}
    wanted = self._get_param("TableName")
    for arn in list(RETIRED):
        retired = _retired(arn)
        if retired is not None and wanted in (None, retired.table) and _in_region(self, arn):
            streams[arn] = {
                "StreamArn": arn,
                "TableName": retired.table,
                "StreamLabel": arn.rsplit("/", 1)[-1],
            }
    chosen, last = page(list(streams), after, self._get_param("Limit"))
    answer.result["Streams"] = [streams[a] for a in chosen]
    if last is not None:
        answer.result["LastEvaluatedStreamArn"] = last
    return answer


def _in_region(handler: Any, arn: str) -> bool:
    match = STREAM_ARN.fullmatch(arn)
    return match is not None and (match["account"], match["region"]) == (
        handler.current_account,
        handler.region,
    )


def _enabled(handler: Any, stream: dict[str, Any]) -> bool:
    try:
        table = _stream_table(handler, stream["StreamArn"])
    except StreamsError:
        return False
    return not isinstance(table, Retired) and bool((table.stream_specification or {}).get("StreamEnabled"))


@PATCHES.replace(Target(_HANDLER, "DynamoDBStreamsHandler.get_shard_iterator", ("self",)))
def get_shard_iterator(self: Any) -> Any:
    """GetShardIterator: the stream and shard must exist; a sequence number exactly where the type needs one."""
    kind = self._get_param("ShardIteratorType")
    sequence = self._get_param("SequenceNumber")
    try:
        table = _stream_table(self, self._get_param("StreamArn"))
        shard = table.shard if isinstance(table, Retired) else table.stream_shard
        if self._get_param("ShardId") != shard.id:
            raise StreamsError("ResourceNotFoundException", NO_SHARD)
        if kind in ("AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER") and sequence is None:
            raise StreamsError("ValidationException", NEEDS_SEQUENCE.format(type=kind))
        if kind in ("TRIM_HORIZON", "LATEST") and sequence is not None:
            raise StreamsError("ValidationException", NO_SEQUENCE_ALLOWED.format(type=kind))
    except StreamsError as error:
        return _answer(error)
    if isinstance(table, Retired):
        from moto.core.responses import ActionResult

        return ActionResult({"ShardIterator": _retired_iterator(self, table, kind, sequence)})
    return PATCHES.original(get_shard_iterator)(self)


def _retired_iterator(handler: Any, retired: Retired, kind: str, sequence: Any) -> str:
    """An iterator on a disabled stream's closed shard (moto's backend knows only a table's current stream)."""
    from moto.dynamodbstreams.models import ShardIterator, dynamodbstreams_backends

    backend = dynamodbstreams_backends[handler.current_account][handler.region]
    iterator = ShardIterator(backend, retired.shard, kind, int(sequence) if sequence is not None else None)
    backend.shard_iterators[iterator.arn] = iterator
    return str(iterator.arn)


@PATCHES.replace(
    Target(
        "moto.dynamodb.models",
        "DynamoDBBackend.update_table_streams",
        ("self", "table", "stream_specification"),
    )
)
def update_table_streams(self: Any, table: Any, stream_specification: dict[str, Any]) -> None:
    """UpdateTable's StreamSpecification: enabling a stream on a table with one, or disabling one on a table
    without, is a ValidationException (moto: ResourceInUseException "Cannot enable stream", and a no-op)."""
    from moto.dynamodb.exceptions import MockValidationException

    enabled = bool((table.stream_specification or {}).get("StreamEnabled")) and table.latest_stream_label
    if stream_specification.get("StreamEnabled") and enabled:
        raise MockValidationException(ALREADY_ENABLED.format(table=table.name))
    if not stream_specification.get("StreamEnabled") and not enabled:
        raise MockValidationException(NOTHING_TO_DISABLE.format(table=table.name))
    if enabled:  # disabling: the stream stays readable, closed, and takes no more records
        shard = table.stream_shard
        arn = f"{table.table_arn}/stream/{table.latest_stream_label}"
        RETIRED[arn] = Retired(
            table.name, shard, table.stream_specification["StreamViewType"], table.schema, shard.created_on,
            shard.starting_sequence_number + max(len(shard.items) - 1, 0), time.time(),
        )  # fmt: skip
        PATCHES.original(update_table_streams)(self, table, stream_specification)
        table.stream_shard = None
        return
    table.latest_stream_label = None  # a new stream: moto refuses while the disabled one's label is kept
    PATCHES.original(update_table_streams)(self, table, stream_specification)


@PATCHES.replace(Target(_HANDLER, "DynamoDBStreamsHandler.get_records", ("self",)))
def get_records(self: Any) -> Any:
    """GetRecords: an iterator the service never handed out is a ValidationException (moto: a KeyError, 500)."""
    from moto.dynamodbstreams.models import dynamodbstreams_backends

    iterator = self._get_param("ShardIterator")
    known = dynamodbstreams_backends[self.current_account][self.region].shard_iterators
    if iterator not in known:
        return _answer(StreamsError("ValidationException", INVALID_ITERATOR))
    shard = known[iterator].stream_shard
    answer = PATCHES.original(get_records)(self)
    closed = any(r.shard is shard for r in RETIRED.values())
    if closed and not answer.result.get("Records"):  # read to its end: a closed shard has no next iterator
        answer.result.pop("NextShardIterator", None)
    return answer


MOTO_TARGETS = (
    *PATCHES.targets,
    Target("moto.dynamodb.models", "dynamodb_backends"),
    Target("moto.dynamodbstreams.models", "dynamodbstreams_backends"),
    Target("moto.dynamodb.exceptions", "MockValidationException"),
    Target("moto.dynamodbstreams.models", "ShardIterator"),
    Target("moto.core.responses", "ActionResult"),
)
