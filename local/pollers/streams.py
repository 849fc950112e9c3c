"""Event-source mappings for DynamoDB streams (and, through local/pollers/kinesis.py, Kinesis streams) with AWS
semantics, replacing moto's own delivery.

moto invokes the function inside ``put_item`` and then empties the stream shard, so every other reader loses
the records; it ignores batch size, starting position, Enabled, retries and deleting the mapping. Here each
mapping gets a poller thread that reads its stream like Lambda's pollers do (GetShardIterator/GetRecords against
the in-process backend) from its own checkpoint, and applies:

- StartingPosition TRIM_HORIZON / LATEST (as of the mapping's creation), records in shard order;
- BatchSize and MaximumBatchingWindowInSeconds (invoke when the batch is full or the window has passed);
- Enabled: a disabled mapping delivers nothing and resumes from its checkpoint when enabled again;
- function errors: retried up to MaximumRetryAttempts (-1: until the records expire), with
  BisectBatchOnFunctionError splitting a failing batch in two (which does not use up the retry quota);
- MaximumRecordAgeInSeconds: older records are discarded, not delivered;
- FunctionResponseTypes ReportBatchItemFailures: the checkpoint moves to the lowest failed sequence number
  and the batch is retried from there (an invalid response fails the whole batch);
- DestinationConfig.OnFailure: the invocation record of discarded records goes to an S3 bucket (with the
  payload, under ``aws/lambda/<uuid>/<shardId>/YYYY/MM/DD/<timestamp>-<uuid>``), an SQS queue or an SNS topic;
- FilterCriteria (local/pollers/filtering.py): records no filter matches are dropped, never delivered, and the
  checkpoint moves past them;
- MetricsConfig EventCount: the mapping's event counts go to CloudWatch (local/runtime/metrics.py);
- deleting the mapping stops its poller; State / StateTransitionReason / LastProcessingResult are reported;
- a GetRecords throttled because two other readers are active on the shard
  (local/services/dynamodb/stream_readers.py: the poller is one reader) is backed off and retried: nothing is
  invoked, the mapping stays Enabled, its records are delivered once fewer readers are active.

Pollers wake on every stream write (no busy polling when idle), at least every POLL_SECONDS. A source's shards
are reached through a few methods (``shard_id``, ``shard_start``, ``shard_end``, ``_read``, ``_event``,
``BATCH_INFO``): a DynamoDB stream's here, a Kinesis stream's in local/pollers/kinesis.py (a checkpoint per
shard).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from local import incidents
from local.auth import service_roles
from local.faults import spec as faults
from local.patching import Target
from local.pollers import filtering
from local.runtime import metrics
from local.runtime.runner import InvokeResult, get_runner
from local.timefmt import iso_ms

log = logging.getLogger("doctable.local.esm")

MOTO_TARGETS = (
    Target("moto.awslambda.models", "lambda_backends"),
    Target(
        "moto.awslambda.models", "LambdaBackend.get_function", ("self", "function_name_or_arn", "qualifier")
    ),
    Target("moto.awslambda.models", "LambdaBackend.get_event_source_mapping", ("self", "uuid")),
    Target("moto.dynamodb.models", "dynamodb_backends"),
    Target("moto.dynamodb.models.table", "StreamShard.get", ("self", "start", "quantity")),
    Target("moto.dynamodbstreams.models", "dynamodbstreams_backends"),
    Target("moto.core.exceptions", "JsonRESTError"),
    Target(
        "moto.dynamodbstreams.models",
        "DynamoDBStreamsBackend.get_shard_iterator",
        ("self", "arn", "shard_id", "shard_iterator_type", "sequence_number"),
    ),
    Target(
        "moto.dynamodbstreams.models", "DynamoDBStreamsBackend.get_records", ("self", "iterator_arn", "limit")
    ),
    Target("moto.s3.models", "S3Backend.put_object"),
    Target("moto.sqs.models", "SQSBackend.send_message"),
    Target("moto.sns.models", "SNSBackend.publish"),
)

POLL_SECONDS = 1.0  # a safety net: writes wake the pollers at once
# How pollers pace themselves (DOCTABLE_LOCAL_POLL_CADENCE). "write", the default: a stream write wakes them at
# once, so a delivery follows a write within milliseconds. "aws": as Lambda polls a DynamoDB stream shard, four
# times a second while it is caught up and again at once while records are pending; writes wake nobody.
CADENCE_ENV = "DOCTABLE_LOCAL_POLL_CADENCE"
CADENCE_WRITE, CADENCE_AWS = "write", "aws"
AWS_IDLE_POLL_SECONDS = 0.25


def poll_cadence(environ: Mapping[str, str] | None = None) -> str:
    value = (os.environ if environ is None else environ).get(CADENCE_ENV) or CADENCE_WRITE
    if value not in (CADENCE_WRITE, CADENCE_AWS):
        raise ValueError(f"{CADENCE_ENV}={value!r} is not allowed; allowed: {CADENCE_WRITE} | {CADENCE_AWS}")
    return value


RETRY_BACKOFF_SECONDS = (0.1, 0.2, 0.4, 0.8, 1.0)
# A GetRecords refused because the shard has its readers: AWS's code, and how long the poller waits to try again.
THROTTLED_CODE = "LimitExceededException"
THROTTLED_BACKOFF_SECONDS = 0.25


@dataclass
class Record:
    seq: int
    data: dict[str, Any]

    @property
    def created(self) -> float:
        value = self.data["dynamodb"].get("ApproximateCreationDateTime")
        if isinstance(value, datetime):
            return value.replace(tzinfo=value.tzinfo or UTC).timestamp()
        return float(value or time.time())


@dataclass
class PollerState:
    checkpoint: int | None = None  # the next sequence number to deliver
    state: str = "Creating"
    reason: str = "USER_INITIATED"
    last_result: str = "No records processed"
    window_started: float | None = None
    polls: int = 0  # passes of the poller's loop, enabled or not: "it has looked since" for tests
    invocations: int = 0
    filtered_out: int = 0  # records dropped by the mapping's FilterCriteria
    throttled: int = 0  # GetRecords refused because two other readers were active on the shard
    last_error: str | None = None  # the local AWS's own failure in a poll ("Type: message"), for tests to see
    history: list[dict[str, Any]] = field(default_factory=list)


class StreamPoller(threading.Thread):
    def __init__(self, manager: MappingManager, account_id: str, region: str, uuid_: str):
        super().__init__(name=f"esm-{uuid_[:8]}", daemon=True)
        self.manager = manager
        self.account_id = account_id
        self.region = region
        self.uuid = uuid_
        self.status = PollerState()
        self.stopped = threading.Event()
        self.seen_generation = -1

    # ---- backends ----
    def _lambda(self) -> Any:
        from moto.awslambda.models import lambda_backends

        return lambda_backends[self.account_id][self.region]

    def mapping(self) -> Any:
        """The mapping in the Lambda backend (None once deleted)."""
        return self._lambda().get_event_source_mapping(self.uuid)

    def shard(self, esm: Any) -> tuple[Any, Any] | None:
        """(table, stream shard) of the mapping's stream, None if the stream is gone or was replaced."""
        from moto.dynamodb.models import dynamodb_backends

        arn = esm.event_source_arn
        try:
            table_name = arn.split(":", 5)[5].split("/")[1]
            label = arn.split("/stream/", 1)[1]
        except IndexError:
            return None
        table = dynamodb_backends[self.account_id][self.region].tables.get(table_name)
        if table is None or table.stream_shard is None or table.latest_stream_label != label:
            return None
        return table, table.stream_shard

    # ---- lifecycle ----
    def initialise(self, esm: Any) -> None:
        """Fix the starting checkpoint as of the mapping's creation."""
        found = self.shard(esm)
        if found is None:
            self.status.checkpoint = None
        else:
            _, shard = found
            start = shard.starting_sequence_number
            if (esm.starting_position or "TRIM_HORIZON") == "LATEST":
                self.status.checkpoint = start + len(shard.items)
            elif esm.starting_position == "AT_TIMESTAMP" and esm.starting_position_timestamp:
                ts = float(esm.starting_position_timestamp)
                records = [Record(start + i, r.to_json()) for i, r in enumerate(shard.items)]
                later = [r.seq for r in records if r.created >= ts]
                self.status.checkpoint = later[0] if later else start + len(shard.items)
            else:
                self.status.checkpoint = start
        self.status.state = "Enabled" if esm.enabled else "Disabled"

    def stop(self) -> None:
        self.stopped.set()
        self.manager.wake()

    def run(self) -> None:
        while not self.stopped.is_set():
            timeout = POLL_SECONDS
            esm = self.mapping()
            if esm is None:
                break
            try:
                if esm.enabled:
                    self.status.state = "Enabled"
                    timeout = self.poll(esm)
                else:
                    self.status.state = "Disabled"
            except (
                Exception
            ) as exc:  # the poller lives on; what failed is an incident and in the mapping's status
                incidents.record(f"esm.poll.{self.uuid}", exc)
                self.status.last_result = "PROBLEM: Internal error"
                self.status.last_error = f"{type(exc).__name__}: {exc}"[:500]
            self.status.polls += 1
            self.manager.wait(self, timeout)
        self.status.state = "Deleting"

    # ---- reading ----
    def _read(self, esm: Any, shard: Any, start: int, limit: int) -> list[Record]:
        """GetShardIterator(AT_SEQUENCE_NUMBER) + GetRecords against the streams backend."""
        from moto.dynamodbstreams.models import dynamodbstreams_backends

        streams = dynamodbstreams_backends[self.account_id][self.region]
        # moto annotates the sequence number as str; its ShardIterator does arithmetic on it (an int).
        iterator = streams.get_shard_iterator(
            esm.event_source_arn,
            shard.id,
            "AT_SEQUENCE_NUMBER",
            start,  # type: ignore[arg-type]
        )
        try:
            result = streams.get_records(iterator.arn, limit)
        finally:
            # Our iterators are single-use: drop them so a long-running poller does not grow the backend's map.
            streams.shard_iterators.pop(iterator.arn, None)
        streams.shard_iterators.pop(result.get("NextShardIterator", ""), None)
        return [Record(int(r["dynamodb"]["SequenceNumber"]), r) for r in result["Records"]]

    @property
    def idle_seconds(self) -> float:
        """How long a caught-up poller of this source waits before it looks again."""
        return self.manager.idle_seconds

    def poll(self, esm: Any) -> float:
        """Deliver what is due; return how long to sleep before looking again."""
        found = self.shard(esm)
        if found is None:
            return POLL_SECONDS
        return self.poll_shard(esm, found[1])

    # ---- a source's shards: DynamoDB's here, Kinesis's in local/pollers/kinesis.py ----
    BATCH_INFO = "DDBStreamBatchInfo"  # the on-failure record's key for the batch

    def shard_id(self, shard: Any) -> str:
        return str(shard.id)

    def shard_start(self, shard: Any) -> int:
        """The first sequence number a shard holds."""
        return int(shard.starting_sequence_number)

    def shard_end(self, shard: Any) -> int:
        """The sequence number the shard's next record will get."""
        return int(shard.starting_sequence_number + len(shard.items))

    def poll_shard(self, esm: Any, shard: Any) -> float:
        """Deliver what is due from one shard from ``status.checkpoint``; how long to sleep before looking again."""
        if self.status.checkpoint is None:
            self.status.checkpoint = self.shard_start(shard)
        end = self.shard_end(shard)
        available = end - self.status.checkpoint
        if available <= 0:
            self.status.window_started = None
            return self.idle_seconds
        batch_size = int(esm.batch_size or 100)
        window = float(esm.max_batch_window or 0)
        if window > 0 and available < batch_size:
            now = time.monotonic()
            if self.status.window_started is None:
                self.status.window_started = now
            remaining = self.status.window_started + window - now
            if remaining > 0:
                return min(remaining, POLL_SECONDS)
        self.status.window_started = None
        if not service_roles.may_read(self.status, esm):  # Lambda reads as the function's role
            return POLL_SECONDS
        from moto.core.exceptions import JsonRESTError

        try:
            records = self._read(esm, shard, self.status.checkpoint, batch_size)
        except JsonRESTError as exc:
            if exc.error_type.rpartition("#")[2] != THROTTLED_CODE:
                raise
            # As Lambda: no invocation, the mapping stays Enabled; its poller backs off and reads again.
            self.status.throttled += 1
            return THROTTLED_BACKOFF_SECONDS
        if records:
            kept = self._filtered(esm, records)
            if kept:
                self.deliver(esm, shard, kept)
            if not kept or self.status.checkpoint == kept[-1].seq + 1:
                # Filtered-out records are not delivered: once the kept ones are done, move past them all.
                self.status.checkpoint = max(self.status.checkpoint, records[-1].seq + 1)
        return 0.0 if end - self.status.checkpoint > 0 else self.idle_seconds

    def position(self) -> tuple[str | None, str | None, int | None]:
        """(checkpoint, end of the shard, records pending) for ``MappingManager.progress``."""
        esm = self.mapping()
        found = self.shard(esm) if esm is not None else None
        end = self.shard_end(found[1]) if found else None
        checkpoint = self.status.checkpoint
        pending = (end - checkpoint) if end is not None and checkpoint is not None else None
        return (
            str(checkpoint) if checkpoint is not None else None,
            str(end) if end is not None else None,
            pending,
        )

    def _filtered(self, esm: Any, records: list[Record]) -> list[Record]:
        """The records the mapping's filters pass (all without filters); counts what was polled and dropped."""
        try:
            patterns = filtering.parse_criteria(esm.filter_criteria)
        except filtering.FilterError:  # refused at creation and update: not stored
            patterns = []
        kept = records
        if patterns:
            events = self._event(records, esm)["Records"]
            kept = [
                r
                for r, e in zip(records, events, strict=True)
                if filtering.passes(patterns, filtering.view(e))
            ]
        self.status.filtered_out += len(records) - len(kept)
        self._count(esm, PolledEventCount=len(records), FilteredOutEventCount=len(records) - len(kept))
        return kept

    def _count(self, esm: Any, **counts: int) -> None:
        """The EventCount metrics, when the mapping's MetricsConfig asks for them."""
        if "EventCount" in ((esm.metrics or {}).get("Metrics") or []):
            metrics.mapping_events(self.account_id, self.region, self.uuid, counts)

    # ---- delivering ----
    def _event(self, records: list[Record], esm: Any) -> dict[str, Any]:
        out = []
        for record in records:
            data = record.data
            dynamodb = dict(data["dynamodb"])
            created = dynamodb.get("ApproximateCreationDateTime")
            if isinstance(created, datetime):
                dynamodb["ApproximateCreationDateTime"] = int(record.created)
            dynamodb = _json_safe(dynamodb)
            entry = {
                "eventID": data["eventID"],
                "eventName": data["eventName"],
                "eventVersion": data["eventVersion"],
                "eventSource": data["eventSource"],
                "awsRegion": self.region,
                "dynamodb": dynamodb,
                "eventSourceARN": esm.event_source_arn,
            }
            if "userIdentity" in data:
                entry["userIdentity"] = data["userIdentity"]
            out.append(entry)
        return {"Records": out}

    def deliver(self, esm: Any, shard: Any, records: list[Record]) -> None:
        batches: deque[tuple[list[Record], int]] = deque([(records, 0)])
        while batches:
            if self.stopped.is_set():
                return
            esm = self.mapping()
            if esm is None or not esm.enabled:
                return  # the checkpoint stays where it is: a re-enabled mapping resumes there
            batch, attempts = batches.popleft()
            batch = self._drop_expired(esm, shard, batch, attempts)
            if not batch:
                continue
            result = self._invoke(esm, batch)
            # Fault injection: the same batch once more (its first checkpoint "lost"); the second result counts.
            if result is not None and result.ok and faults.duplicate_delivery(self.uuid):
                result = self._invoke(esm, batch) or result
            if result is None:  # the function is gone: keep the records, try again later
                batches.appendleft((batch, attempts))
                time.sleep(POLL_SECONDS)
                continue
            failed, partial = self._failed_records(esm, batch, result)
            if not failed:
                self.status.checkpoint = batch[-1].seq + 1
                self.status.last_result = "OK"
                continue
            self.status.last_result = "PROBLEM: Function call failed"
            if partial:
                self.status.checkpoint = failed[0].seq  # the records before the lowest failure succeeded
            elif esm.bisect_on_error and len(batch) > 1:
                middle = len(batch) // 2
                batches.appendleft((batch[middle:], attempts))
                batches.appendleft((batch[:middle], attempts))
                continue
            attempts += 1
            max_retries = esm.max_retry_attempts
            if max_retries is not None and int(max_retries) >= 0 and attempts > int(max_retries):
                self._discard(esm, shard, failed, "RetryAttemptsExhausted", attempts, result)
                self.status.checkpoint = failed[-1].seq + 1
                continue
            self.stopped.wait(RETRY_BACKOFF_SECONDS[min(attempts, len(RETRY_BACKOFF_SECONDS)) - 1])
            batches.appendleft((failed, attempts))

    def _drop_expired(self, esm: Any, shard: Any, batch: list[Record], attempts: int) -> list[Record]:
        max_age = esm.max_record_age
        if max_age is None or int(max_age) < 0:
            return batch
        cutoff = time.time() - int(max_age)
        expired = [r for r in batch if r.created < cutoff]
        if not expired:
            return batch
        self._discard(esm, shard, expired, "RecordAgeExceeded", attempts, None)
        self.status.checkpoint = expired[-1].seq + 1
        return [r for r in batch if r.created >= cutoff]

    def _invoke(self, esm: Any, batch: list[Record]) -> InvokeResult | None:
        from moto.awslambda.exceptions import LambdaClientError

        try:
            fn = self._lambda().get_function(esm.function_arn)
        except LambdaClientError:  # UnknownFunctionException, or a malformed ARN: the function is not there
            self.status.last_result = "PROBLEM: Function not found"
            return None
        self.status.invocations += 1
        age_ms = (time.time() - batch[-1].created) * 1000
        result = get_runner().invoke(fn, self._event(batch, esm), iterator_age_ms=age_ms)
        self._count(esm, InvokedEventCount=len(batch), FailedInvokeEventCount=0 if result.ok else len(batch))
        self.status.history.append({"records": len(batch), "ok": result.ok, "at": time.time()})
        del self.status.history[:-100]
        return result

    @staticmethod
    def _failed_records(esm: Any, batch: list[Record], result: Any) -> tuple[list[Record], bool]:
        """(records to retry, whether it is a partial batch failure)."""
        if not result.ok:
            return batch, False
        if "ReportBatchItemFailures" not in (esm.function_response_types or []):
            return [], False
        try:
            response = json.loads(result.payload or b"null")
        except ValueError:
            return batch, False
        if not isinstance(response, dict):
            return [], False
        failures = response.get("batchItemFailures")
        if not failures:
            return [], False
        by_seq = {str(r.seq): i for i, r in enumerate(batch)}
        positions = []
        for failure in failures:
            identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
            if not identifier or str(identifier) not in by_seq:
                return batch, False  # an invalid response fails the whole batch, as on AWS
            positions.append(by_seq[str(identifier)])
        return batch[min(positions) :], True

    # ---- on-failure destination ----
    def _discard(
        self, esm: Any, shard: Any, records: list[Record], condition: str, attempts: int, result: Any
    ) -> None:
        destination = ((esm.destination_config or {}).get("OnFailure") or {}).get("Destination")
        if not destination:
            self._count(esm, DroppedEventCount=len(records))
            return
        now = datetime.now(UTC)
        record: dict[str, Any] = {
            "requestContext": {
                "requestId": str(uuid.uuid4()),
                "functionArn": esm.function_arn,
                "condition": condition,
                "approximateInvokeCount": attempts,
            },
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST"},
            "version": "1.0",
            "timestamp": iso_ms(now.timestamp()),
            self.BATCH_INFO: {
                "shardId": self.shard_id(shard),
                "startSequenceNumber": str(records[0].seq),
                "endSequenceNumber": str(records[-1].seq),
                "approximateArrivalOfFirstRecord": iso_ms(records[0].created),
                "approximateArrivalOfLastRecord": iso_ms(records[-1].created),
                "batchSize": len(records),
                "streamArn": esm.event_source_arn,
            },
        }
        if result is not None and not result.ok:
            record["responseContext"]["functionError"] = result.function_error
        if result is None:
            record["responseContext"] = {"statusCode": 0, "executedVersion": "$LATEST"}
        try:
            service = destination.split(":")[2]
            if service == "s3":
                self._to_s3(esm, shard, destination, record, records, now)
            elif service == "sqs":
                self._to_sqs(destination, record)
            elif service == "sns":
                self._to_sns(destination, record)
            else:
                log.warning("mapping %s: unsupported on-failure destination %s", self.uuid, destination)
                self._count(esm, DroppedEventCount=len(records))
                return
            self._count(esm, OnFailureDestinationDeliveredEventCount=len(records))
        except (
            Exception
        ) as exc:  # the records are dropped, as Lambda drops them, and the failure is an incident
            self._count(esm, DroppedEventCount=len(records))
            incidents.record(f"esm.on_failure.{self.uuid}", exc)

    def _to_s3(
        self, esm: Any, shard: Any, arn: str, record: dict[str, Any], records: list[Record], now: datetime
    ) -> None:
        from moto.s3.models import s3_backends

        bucket = arn.split(":::", 1)[1].split("/", 1)[0]
        body = dict(record)
        body["payload"] = json.dumps(self._event(records, esm))
        key = f"aws/lambda/{esm.uuid}/{self.shard_id(shard)}/{now:%Y/%m/%d}/{now:%Y-%m-%dT%H.%M.%S}-{uuid.uuid4()}"
        service_roles.check_failure_write(esm, bucket, key)  # Lambda writes as the function's role
        s3_backends[self.account_id]["aws"].put_object(bucket, key, json.dumps(body).encode("utf-8"))

    def _to_sqs(self, arn: str, record: dict[str, Any]) -> None:
        from moto.sqs.models import sqs_backends

        _, _, _, region, account, name = arn.split(":", 5)
        sqs_backends[account][region].send_message(name, json.dumps(record))

    def _to_sns(self, arn: str, record: dict[str, Any]) -> None:
        from moto.sns.models import sns_backends

        region, account = arn.split(":")[3:5]
        sns_backends[account][region].publish(json.dumps(record), arn=arn)


def _json_safe(value: Any) -> Any:
    """Binary attribute values as the base64 strings a Lambda event (JSON) carries."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_json_safe(v) for v in value]
    return value


class MappingManager:
    """All pollers of the process; stream writes and mapping updates wake them."""

    def __init__(self, cadence: str | None = None) -> None:
        self.lock = threading.Lock()
        self.cond = threading.Condition()
        self.generation = 0
        self.pollers: dict[str, StreamPoller] = {}
        self.cadence = cadence or poll_cadence()
        # How long a caught-up DynamoDB stream poller waits before it looks again.
        self.idle_seconds = AWS_IDLE_POLL_SECONDS if self.cadence == CADENCE_AWS else POLL_SECONDS

    def wake(self) -> None:
        with self.cond:
            self.generation += 1
            self.cond.notify_all()

    def wait(self, poller: StreamPoller, timeout: float) -> None:
        with self.cond:
            if self.cadence == CADENCE_AWS:  # the whole interval: a write does not make Lambda poll sooner
                until = time.monotonic() + timeout
                while not poller.stopped.is_set() and (left := until - time.monotonic()) > 0:
                    self.cond.wait(left)
            elif timeout > 0 and self.generation == poller.seen_generation and not poller.stopped.is_set():
                self.cond.wait(timeout)
            poller.seen_generation = self.generation

    def start(self, esm: Any, poller_class: type[StreamPoller] | None = None) -> None:
        """Start the mapping's poller: ``poller_class`` (a DynamoDB stream's StreamPoller by default)."""
        if poller_class is None:
            if esm.event_source_arn.split(":")[2] != "dynamodb":
                return
            poller_class = StreamPoller
        poller = poller_class(self, esm.account_id, esm.region, esm.uuid)
        poller.initialise(esm)
        with self.lock:
            old = self.pollers.pop(esm.uuid, None)
            self.pollers[esm.uuid] = poller
        if old:
            old.stop()
        poller.start()

    def stop(self, uuid_: str) -> None:
        with self.lock:
            poller = self.pollers.pop(uuid_, None)
        if poller:
            poller.stop()

    def status(self, uuid_: str) -> PollerState | None:
        poller = self.pollers.get(uuid_)
        return poller.status if poller else None

    def progress(self) -> dict[str, dict[str, Any]]:
        """Each mapping's checkpoint against the end of its shard (``pending`` 0: nothing left to deliver)."""
        with self.lock:
            pollers = list(self.pollers.items())
        out: dict[str, dict[str, Any]] = {}
        for mapping_uuid, poller in pollers:
            checkpoint, end, pending = poller.position()
            out[mapping_uuid] = {
                "state": poller.status.state,
                "checkpoint": checkpoint,
                "shard_end": end,
                "pending": pending,
                "polls": poller.status.polls,
                "invocations": poller.status.invocations,
                "filtered_out": poller.status.filtered_out,
                "throttled": poller.status.throttled,
                "last_result": poller.status.last_result,
                "last_error": poller.status.last_error,
            }
        return out

    def shutdown(self) -> None:
        with self.lock:
            pollers = list(self.pollers.values())
            self.pollers.clear()
        for poller in pollers:
            poller.stop()


_MANAGER: MappingManager | None = None


def install(manager: MappingManager) -> None:
    global _MANAGER
    _MANAGER = manager


def get_manager() -> MappingManager:
    if _MANAGER is None:
        raise RuntimeError("the local mapping manager is not installed (start the server with local.server)")
    return _MANAGER
