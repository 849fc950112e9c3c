"""`doctable replay`: re-drive the batches kept on the failure destination through the consumer.

Each object under ``aws/lambda/`` in the failure bucket is one invocation record: Lambda's metadata plus the
batch it could not process (``payload``). Replay invokes the consumer synchronously with that batch and acts
on the partial batch response:

- every record succeeded: the object is deleted;
- some records still fail: the object is rewritten with only those records (the rest are done), and kept;
- the function errored: the object is kept as it was.

An object is never deleted before the records it holds have succeeded, so a replay interrupted at any point
loses nothing; replaying a record twice is harmless because the consumer's cleanup is idempotent.

A REMOVE whose item has since been written again is rebased before it is replayed: blob keys the live item
lists now are dropped from the old image, so replay never deletes a blob that a live record still lists.

An invocation record without ``payload`` (Lambda keeps only ``DDBStreamBatchInfo`` when the payload is not kept:
shard, first and last sequence number) is re-read from the stream while the stream still holds that range; once
it does not (24 h retention), the object is kept with a one-line reason. Nothing is invoked for it then.

``--subscriber NAME`` replays a subscriber's failed batches the same way: from its own failure bucket, through its
own function, the object kept or removed by the same rules. Its records go back as Lambda kept them: the rebase
above is the cleanup consumer's rule (never delete a blob a live item lists), not something a subscriber asked for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import BotoCoreError, ClientError

from contract import names
from doctable.core.answers import error_code
from doctable.core.aws import ACCESS_DENIED_CODES
from doctable.core.command import connect
from doctable.core.deployment import Deployment, require_deployed, subscriber_output
from doctable.core.errors import UserError
from doctable.core.render import now_iso

if TYPE_CHECKING:
    from doctable.core.target import Target

FAILURE_PREFIX = "aws/lambda/"
DRY_RUN = "dry run"
# The stable code of `replay --region REPLICA` without --subscriber: a replica region's consumer keeps nothing.
REPLICA_CONSUMER = "replay.replica_consumer"
# GetRecords pages read at most while re-reading one kept range from the stream (1,000 records each).
_MAX_STREAM_PAGES = 100


class NotReplayable(ValueError):
    """The invocation record cannot be turned back into its batch; the message says why, in one line."""


_deserialize = TypeDeserializer().deserialize


@dataclass
class ReplayOutcome:
    key: str
    records: int
    succeeded: int = 0
    still_failing: list[str] = field(default_factory=list)
    rebased: int = 0
    error: str | None = None
    invoked: bool = False  # the consumer ran (an error is then the function's)
    source: str = "payload"  # where the records came from: the kept payload, or the stream (re-read)

    @property
    def result(self) -> str:
        if self.error == DRY_RUN:
            return f"WOULD REPLAY ({self.source})"
        if self.error and not self.invoked:
            return "KEPT (not replayable)"
        if self.error:
            return "KEPT (function error)"
        if self.still_failing:
            return f"KEPT {len(self.still_failing)} failing"
        return "REPLAYED, removed"

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "records": self.records,
            "succeeded": self.succeeded,
            "still_failing": self.still_failing,
            "rebased": self.rebased,
            "error": self.error,
            "source": self.source,
            "result": self.result,
        }


def failure_objects(s3: Any, bucket: str) -> Iterator[str]:
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=FAILURE_PREFIX):
        for obj in page.get("Contents", []):
            yield obj["Key"]


def batch_of(invocation_record: Any, streams: Any = None) -> tuple[dict[str, Any], str]:
    """The stream event of an invocation record, and where it came from: its ``payload`` (AWS stores a JSON
    string; an object is accepted too), else the stream range its ``DDBStreamBatchInfo`` names, re-read."""
    if not isinstance(invocation_record, dict):
        raise NotReplayable("the object is not an invocation record (a JSON object): it cannot be replayed")
    payload = invocation_record.get("payload")
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError:
            raise NotReplayable("its payload is not JSON: it cannot be replayed") from None
    if isinstance(payload, dict) and isinstance(payload.get("Records"), list):
        return payload, "payload"
    info = invocation_record.get("DDBStreamBatchInfo")
    needed = ("streamArn", "shardId", "startSequenceNumber", "endSequenceNumber")
    if not isinstance(info, dict) or not all(isinstance(info.get(k), str) and info[k] for k in needed):
        raise NotReplayable(
            "the invocation record has no payload with Records and no DDBStreamBatchInfo naming the stream, "
            "shard and sequence range: it cannot be replayed"
        )
    if streams is None:
        raise NotReplayable("metadata-only record: re-reading it needs the stream (not available here)")
    return {"Records": reread(streams, info)}, "stream"


def reread(streams: Any, info: dict[str, Any]) -> list[dict[str, Any]]:
    """The records from ``startSequenceNumber`` to ``endSequenceNumber`` of one shard, as Lambda delivers them."""
    first, last = int(info["startSequenceNumber"]), int(info["endSequenceNumber"])
    where = f"records {first}..{last} of shard {info['shardId']}"
    iterator = _stream_read(
        where,
        streams.get_shard_iterator,
        StreamArn=info["streamArn"],
        ShardId=info["shardId"],
        ShardIteratorType="AT_SEQUENCE_NUMBER",
        SequenceNumber=info["startSequenceNumber"],
    ).get("ShardIterator")
    records: list[dict[str, Any]] = []
    for _ in range(_MAX_STREAM_PAGES):
        if not iterator:
            break
        page = _stream_read(where, streams.get_records, ShardIterator=iterator, Limit=1000)
        batch = page.get("Records", [])
        records.extend(r for r in batch if first <= int(r["dynamodb"]["SequenceNumber"]) <= last)
        if not batch or int(batch[-1]["dynamodb"]["SequenceNumber"]) >= last:
            break
        iterator = page.get("NextShardIterator")
    if not records or int(records[0]["dynamodb"]["SequenceNumber"]) != first:
        raise NotReplayable(f"the stream no longer holds {where} (trimmed after its 24 h retention): kept")
    for record in records:  # what Lambda adds to a stream record, in the types its event carries
        record["eventSourceARN"] = info["streamArn"]
        created = record["dynamodb"].get("ApproximateCreationDateTime")
        if hasattr(created, "timestamp"):
            record["dynamodb"]["ApproximateCreationDateTime"] = int(created.timestamp())
    return records


def _stream_read(where: str, call: Callable[..., dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    """One call to the stream; AWS's refusal to read ``where`` (trimmed, expired or deleted stream: several error
    codes) makes the batch not replayable, except a refusal of the caller's grant: the command's one-line error."""
    try:
        return call(**kwargs)
    except (ClientError, BotoCoreError) as exc:
        code = error_code(exc) or type(exc).__name__
        if code in ACCESS_DENIED_CODES:
            raise  # the caller's missing grant, not the stream's state; the batch itself may still be replayable
        raise NotReplayable(f"the stream no longer holds {where} ({code}): kept for inspection") from None


def _listed_blobs(image: dict[str, Any] | None) -> set[str]:
    if not image or names.BLOBS_ATTRIBUTE not in image:
        return set()
    try:
        value = _deserialize(image[names.BLOBS_ATTRIBUTE])
    except (TypeError, ValueError, KeyError):
        return set()
    if isinstance(value, (list, set)):
        return {v for v in value if isinstance(v, str)}
    return set()


def rebase_on_live_items(ddb: Any, table: str, records: list[dict[str, Any]]) -> int:
    """Drop from REMOVE/MODIFY old images the blob keys that the live item (if any) lists now."""
    rebased = 0
    for record in records:
        change = record.get("dynamodb") or {}
        old_image = change.get("OldImage")
        keys = change.get("Keys")
        if not old_image or not keys or names.BLOBS_ATTRIBUTE not in old_image:
            continue
        live = ddb.get_item(TableName=table, Key=keys, ConsistentRead=True).get("Item")
        protected = _listed_blobs(live)
        listed = _listed_blobs(old_image)
        if not protected & listed:
            continue
        remaining = sorted(listed - protected)
        old_image[names.BLOBS_ATTRIBUTE] = {"L": [{"S": k} for k in remaining]}
        rebased += 1
    return rebased


def _sequence_number(record: dict[str, Any]) -> str:
    """A record's sequence number, the partial batch response's ``itemIdentifier`` (a Kinesis record's too)."""
    if isinstance(record.get("kinesis"), dict):
        return str(record["kinesis"].get("sequenceNumber"))
    return str((record.get("dynamodb") or {}).get("SequenceNumber"))


def _read(s3: Any, bucket: str, key: str) -> Any:
    try:
        return json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    except ValueError:
        raise NotReplayable("the object is not JSON: it cannot be replayed") from None


def replay_object(
    *,
    s3: Any,
    lambda_client: Any,
    ddb: Any,
    bucket: str,
    key: str,
    function: str,
    table: str,
    streams: Any = None,
    rebase: bool = True,
) -> ReplayOutcome:
    body = _read(s3, bucket, key)
    event, source = batch_of(body, streams)
    records = event["Records"]
    outcome = ReplayOutcome(key=key, records=len(records), source=source)
    if rebase:
        outcome.rebased = rebase_on_live_items(ddb, table, records)
    response = lambda_client.invoke(
        FunctionName=function, InvocationType="RequestResponse", Payload=json.dumps(event).encode()
    )
    outcome.invoked = True
    raw = response["Payload"].read()
    if response.get("FunctionError"):
        outcome.error = f"{response['FunctionError']}: {raw[:300].decode(errors='replace')}"
        return outcome
    reply = json.loads(raw or b"null") or {}
    failed = {str(f.get("itemIdentifier")) for f in reply.get("batchItemFailures", []) if isinstance(f, dict)}
    outcome.still_failing = sorted(failed)
    outcome.succeeded = len(records) - len(failed)
    if not failed:
        s3.delete_object(Bucket=bucket, Key=key)
        return outcome
    # Keep only what still fails, so a later replay does not redo the records that are done.
    event["Records"] = [r for r in records if _sequence_number(r) in failed]
    body["payload"] = json.dumps(event)
    body.setdefault("replay", {})["remaining"] = len(event["Records"])
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(body).encode())
    return outcome


def run_replay(
    *,
    s3: Any,
    lambda_client: Any,
    ddb: Any,
    bucket: str,
    function: str,
    table: str,
    dry_run: bool = False,
    streams: Any = None,
    rebase: bool = True,
) -> list[ReplayOutcome]:
    """Replay every kept batch of ``bucket`` through ``function``; ``rebase``: the cleanup consumer's rule (a
    subscriber's records go back unchanged)."""
    outcomes: list[ReplayOutcome] = []
    for key in list(failure_objects(s3, bucket)):
        try:
            if dry_run:
                event, source = batch_of(_read(s3, bucket, key), streams)
                outcomes.append(
                    ReplayOutcome(key=key, records=len(event["Records"]), error=DRY_RUN, source=source)
                )
                continue
            outcomes.append(
                replay_object(
                    s3=s3, lambda_client=lambda_client, ddb=ddb, bucket=bucket, key=key, function=function,
                    table=table, streams=streams, rebase=rebase,
                )
            )  # fmt: skip
        except NotReplayable as exc:
            outcomes.append(ReplayOutcome(key=key, records=0, error=str(exc)))
    return outcomes


# ---------------------------------------------------------------------------------------------- command
def replay_target(deployment: Deployment, subscriber: str | None) -> tuple[str, str]:
    """The failure bucket to replay and the function to replay it through: the consumer's, or subscriber
    ``subscriber``'s (UserError naming the declared ones when the stack has no such subscriber)."""
    if subscriber:
        return (
            subscriber_output(deployment, subscriber, names.OUT_SUBSCRIBER_FAILURE_BUCKET),
            subscriber_output(deployment, subscriber, names.OUT_SUBSCRIBER_FUNCTION),
        )
    config = deployment.config
    if deployment.home_region:
        raise UserError(
            f"the consumer in {deployment.region} keeps no failed batches: a replica region's consumer deletes "
            f"nothing (the home region's cleans up every change); replay the home region's (without --region), or "
            f"a subscriber's in {deployment.region} with --subscriber NAME",
            {"code": REPLICA_CONSUMER},
        )
    bucket = deployment.out(names.OUT_FAILURE_BUCKET)
    function = deployment.out(names.OUT_CONSUMER_FUNCTION_NAME) or config.borrowed_consumer_arn
    if not bucket or not function:
        raise UserError(f"{config.stack_name} has no consumer and failure bucket: nothing to replay")
    return bucket, function


@dataclass(frozen=True)
class ReplayedObject:
    """One object of the failure bucket and what its replay did (``result`` says it in a few words)."""

    key: str
    records: int
    succeeded: int
    still_failing: tuple[str, ...]  # the sequence numbers that failed again (kept in the object)
    rebased: int  # REMOVE/MODIFY records whose old image lost blob keys a live item lists now
    error: str | None  # why it was kept (``dry run`` with ``dry_run``)
    source: str  # where its records came from: ``payload`` (kept by Lambda) or ``stream`` (re-read)
    result: str  # REPLAYED, removed | KEPT ... | WOULD REPLAY (...)

    @property
    def kept(self) -> bool:
        return bool(self.error or self.still_failing)

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "records": self.records,
            "succeeded": self.succeeded,
            "still_failing": list(self.still_failing),
            "rebased": self.rebased,
            "error": self.error,
            "source": self.source,
            "result": self.result,
        }


@dataclass(frozen=True)
class ReplayResult:
    """A replay of one failure bucket through one function: each object's outcome; ``kept`` objects remain."""

    bucket: str
    function: str
    subscriber: str | None
    at: str  # ISO-8601 UTC, when the replay ended
    objects: tuple[ReplayedObject, ...]
    kept: int  # objects still on the bucket (not replayable, function error, records still failing, dry run)

    @property
    def ok(self) -> bool:
        return self.kept == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "doctable-replay",
            "bucket": self.bucket,
            "function": self.function,
            "subscriber": self.subscriber,
            "at": self.at,
            "objects": [o.as_dict() for o in self.objects],
            "kept": self.kept,
        }


def replay(target: Target, *, dry_run: bool = False, subscriber: str | None = None) -> ReplayResult:
    """Re-drive each batch kept on the consumer's failure bucket (or subscriber ``subscriber``'s) through its
    function; an object is removed only once every record in it succeeded. ``dry_run``: list, change nothing."""
    _config, aws, deployment = connect(target, command="replay", regional=True)
    require_deployed(deployment)
    bucket, function = replay_target(deployment, subscriber)
    outcomes = run_replay(
        s3=aws.client("s3"),
        lambda_client=aws.client("lambda"),
        ddb=aws.client("dynamodb"),
        bucket=bucket,
        function=function,
        table=deployment.table_name,
        dry_run=dry_run,
        streams=aws.client("dynamodbstreams"),
        rebase=not subscriber,
    )
    objects = tuple(
        ReplayedObject(o.key, o.records, o.succeeded, tuple(o.still_failing), o.rebased, o.error, o.source,
                       o.result)
        for o in outcomes
    )  # fmt: skip
    return ReplayResult(
        bucket=bucket,
        function=function,
        subscriber=subscriber,
        at=now_iso(),
        objects=objects,
        kept=sum(1 for o in objects if o.kept),
    )
