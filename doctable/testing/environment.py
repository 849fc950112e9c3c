"""One deployed environment as a test sees it: the application client, ``nudge`` (a write, then the wait until every
reader of the stream it reaches has processed its record), and what the readers left: proof lines, log lines, the
blobs of an item, the failure destination."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from contract import names
from doctable.client import DocClient, rules
from doctable.verify.proof import is_change_of, open_shard_iterators, parse_proof_line

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from doctable.client import Document

CONSUMER = "consumer"
NUDGE_TIMEOUT = 60.0  # seconds a record may take to pass every reader on a busy machine
POLL = 0.05  # seconds between two looks at a condition (the stream, the mappings' checkpoints)
EVENTS = {"put": "INSERT", "replace": "MODIFY", "update": "MODIFY", "delete": "REMOVE"}
FAILED_PREFIX = "aws/lambda/"  # where Lambda keeps a mapping's failed batches on an S3 destination
BATCH_INFO = "DDBStreamBatchInfo"


class NudgeFailed(AssertionError):
    """A reader failed the nudged record: its mapping kept it on the failure destination (``kept``)."""

    def __init__(self, reader: str, sequence: str, kept: Mapping[str, Any], errors: list[str]) -> None:
        self.reader, self.sequence, self.kept, self.errors = reader, sequence, dict(kept), errors
        condition = kept.get("requestContext", {}).get("condition")
        super().__init__(
            f"{reader} failed record {sequence} ({condition}; kept on its failure destination); its error "
            "lines:\n" + "\n".join(errors[-5:])
        )


class NudgeTimeout(AssertionError):
    """A reader's mapping did not move past the nudged record before the deadline."""


@dataclass(frozen=True)
class Reader:
    """A reader of the table's stream: the cleanup consumer (``consumer``) or ``subscriber:<name>``."""

    name: str
    mapping_uuid: str
    log_group: str
    failure_bucket: str | None


@dataclass(frozen=True)
class Nudged:
    """What a nudge wrote and who processed it: ``reached`` the readers that received the record (a proof line
    covers it), ``passed`` the ones whose filters left it out; ``unwatched`` readers not waited for (Kinesis)."""

    event_name: str
    sequence: str
    reached: frozenset[str]
    passed: frozenset[str]
    unwatched: frozenset[str]
    document: Document | None


class LocalAws(Protocol):
    """What an environment needs of the session's local AWS (doctable/testing/session.py's LocalSession)."""

    nudge_timeout: float

    def client(self, service: str) -> Any: ...

    def connection(self) -> dict[str, Any]: ...

    @property
    def faults(self) -> Any: ...


@dataclass
class Environment:
    session: LocalAws
    config: DocTableConfig
    outputs: dict[str, str]

    @classmethod
    def of(cls, session: LocalAws, config: DocTableConfig) -> Environment:
        cloudformation = session.client("cloudformation")
        stack = cloudformation.describe_stacks(StackName=config.stack_name)["Stacks"][0]
        return cls(session, config, {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])})

    @property
    def name(self) -> str:
        return self.config.env

    @property
    def table_name(self) -> str:
        return self.outputs[names.OUT_TABLE_NAME]

    def aws(self, service: str) -> Any:
        """A boto3 client of the local AWS (the admin deployer), e.g. to create a table a subscriber writes."""
        return self.session.client(service)

    @cached_property
    def client(self) -> DocClient:
        """doctable's application client of this environment's stack."""
        return DocClient.from_stack(stack_name=self.config.stack_name, **self.session.connection())

    # ---- the readers ----
    @cached_property
    def readers(self) -> dict[str, Reader]:
        """Every reader of the table's DynamoDB stream the stack made, by name."""
        found: dict[str, Reader] = {}
        out = self.outputs
        if out.get(names.OUT_MAPPING_UUID) and out.get(names.OUT_CONSUMER_LOG_GROUP):
            found[CONSUMER] = Reader(
                CONSUMER,
                out[names.OUT_MAPPING_UUID],
                out[names.OUT_CONSUMER_LOG_GROUP],
                out.get(names.OUT_FAILURE_BUCKET),
            )
        for spec in self.config.subscribers:

            def output(what: str, name: str = spec.name) -> str:
                return out.get(names.subscriber_output(name, what), "")

            reader = f"subscriber:{spec.name}"
            found[reader] = Reader(
                reader,
                output(names.OUT_SUBSCRIBER_MAPPING),
                output(names.OUT_SUBSCRIBER_LOG_GROUP),
                output(names.OUT_SUBSCRIBER_FAILURE_BUCKET) or None,
            )
        return found

    def reader(self, subscriber: str | None) -> Reader:
        name = CONSUMER if subscriber is None else f"subscriber:{subscriber}"
        if name not in self.readers:
            declared = ", ".join(sorted(self.readers)) or "none"
            raise KeyError(f"{self.config.stack_name} has no reader {name}; it has: {declared}")
        return self.readers[name]

    def _watched(self) -> tuple[list[Reader], frozenset[str]]:
        """The readers whose position is known (a DynamoDB stream's mapping), and the names of the others."""
        kinesis = {f"subscriber:{s.name}" for s in self.config.subscribers if s.reads_kinesis}
        watched = [r for r in self.readers.values() if r.mapping_uuid and r.name not in kinesis]
        return watched, frozenset(kinesis)

    # ---- nudge ----
    def nudge(
        self,
        operation: str,
        pk: str,
        sk: str,
        attributes: Mapping[str, Any] | None = None,
        blobs: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> Nudged:
        """Write through the client (``put``, ``replace`` or its alias ``update``, ``delete``) and return once every
        reader of the stream has moved past the record the write made; NudgeFailed when a reader failed it."""
        if operation not in EVENTS:
            raise ValueError(f"operation {operation!r}; allowed: {', '.join(EVENTS)}")
        deadline = time.monotonic() + (self.session.nudge_timeout if timeout is None else timeout)
        watched, unwatched = self._watched()
        kept_before = {r.name: set(self._kept_keys(r)) for r in watched}
        written: list[Document | None] = []

        def write() -> None:
            if operation == "put":
                written.append(self.client.put(pk, sk, attributes, blobs))
            elif operation == "delete":
                self.client.delete(pk, sk)
                written.append(None)
            else:
                written.append(self.client.replace(pk, sk, attributes, blobs))

        write_ms = int(time.time() * 1000)
        key = {rules.PARTITION_KEY: pk, rules.SORT_KEY: sk}
        sequence = self._sequence_of(write, key, EVENTS[operation], watched, deadline)
        self._wait_past(watched, int(sequence), deadline)
        reached: set[str] = set()
        passed: set[str] = set()
        for reader in watched:
            kept = self._kept_record(reader, int(sequence), kept_before[reader.name])
            if kept is not None:
                raise NudgeFailed(reader.name, sequence, kept, self._error_lines(reader, write_ms))
            covered = any(_covers(line, int(sequence)) for line in self._proof(reader, write_ms))
            (reached if covered else passed).add(reader.name)
        return Nudged(
            EVENTS[operation], sequence, frozenset(reached), frozenset(passed), unwatched, written[0]
        )

    def _sequence_of(
        self,
        write: Callable[[], None],
        key: Mapping[str, str],
        event: str,
        watched: list[Reader],
        deadline: float,
    ) -> str:
        """Run ``write`` and name the sequence number of its record. The mappings' progress gives the number the
        shard's next record gets: when the write moved it by exactly one, that record is the write's. Otherwise
        (another writer came between) the stream is read from iterators opened before the write: a third reader of
        a shard the mappings read is throttled (as on AWS), so that read takes its retries."""
        stream_arn = self.outputs.get(names.OUT_STREAM_ARN)
        if not stream_arn:
            raise NudgeTimeout(
                f"{self.config.stack_name} has no stream: a nudge waits for the stream's readers"
            )
        streams = self.session.client("dynamodbstreams")
        iterators = open_shard_iterators(streams, stream_arn)
        before = self._shard_end(watched)
        write()
        after = self._shard_end(watched)
        if before is not None and after == before + 1:
            return str(before)

        def found() -> str | None:
            following = []
            for iterator in iterators:
                reply = streams.get_records(ShardIterator=iterator, Limit=1000)
                for record in reply.get("Records", []):
                    if is_change_of(record, key, event):
                        return str(record["dynamodb"]["SequenceNumber"])
                if reply.get("NextShardIterator"):
                    following.append(reply["NextShardIterator"])
            iterators[:] = following
            return None

        return str(_until(found, deadline, f"the {event} record of {dict(key)} on the stream"))

    def _shard_end(self, watched: list[Reader]) -> int | None:
        """The sequence number the stream shard's next record gets, as the first reader's mapping sees it."""
        if not watched:
            return None
        end = (self.session.faults.mappings().get(watched[0].mapping_uuid) or {}).get("shard_end")
        return int(end) if end is not None and str(end).isdigit() else None

    def _wait_past(self, watched: list[Reader], sequence: int, deadline: float) -> None:
        """Until each reader's mapping checkpoint (the next record it will deliver) is past ``sequence``."""
        faults = self.session.faults

        def behind() -> list[str]:
            progress = faults.mappings()
            return [r.name for r in watched if not _past(progress.get(r.mapping_uuid), sequence)]

        try:
            _until(lambda: not behind(), deadline, f"the readers to move past record {sequence}")
        except NudgeTimeout:
            progress = faults.mappings()
            detail = {r: progress.get(self.readers[r].mapping_uuid) for r in behind()}
            raise NudgeTimeout(f"record {sequence} not processed in time by {json.dumps(detail)}") from None

    # ---- what the readers left ----
    def proof_lines(self, subscriber: str | None = None, *, since_ms: int = 0) -> list[dict[str, Any]]:
        """The ``stream_records_received`` lines of the consumer (or the subscriber), oldest first."""
        return self._proof(self.reader(subscriber), since_ms)

    def log_lines(self, subscriber: str | None = None, *, since_ms: int = 0) -> list[str]:
        """Every log line of the consumer (or the subscriber), oldest first."""
        return [e["message"] for e in self._events(self.reader(subscriber).log_group, since_ms, None)]

    def failures(self, subscriber: str | None = None) -> list[dict[str, Any]]:
        """The failed batches the consumer's (or the subscriber's) mapping kept on its failure destination: Lambda's
        invocation records, with the batch's ``payload``."""
        reader = self.reader(subscriber)
        return [self._kept(reader, key) for key in self._kept_keys(reader)]

    def blobs(self, pk: str, sk: str) -> list[str]:
        """The keys in the blob bucket under the item's prefix (what the consumer has not deleted)."""
        deployment = self.client.deployment
        s3 = self.session.client("s3")
        prefix = rules.record_prefix(deployment.blob_root, pk, sk)
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=deployment.blob_bucket, Prefix=prefix)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))

    def _proof(self, reader: Reader, since_ms: int) -> list[dict[str, Any]]:
        lines = (
            parse_proof_line(e["message"])
            for e in self._events(reader.log_group, since_ms, names.PROOF_LOG_MESSAGE)
        )
        return [line for line in lines if line is not None]

    def _error_lines(self, reader: Reader, since_ms: int) -> list[str]:
        return [
            line
            for line in (e["message"] for e in self._events(reader.log_group, since_ms - 1000, None))
            if "error" in line.lower() or "traceback" in line.lower() or "failed" in line.lower()
        ]

    def _events(self, group: str, since_ms: int, pattern: str | None) -> list[dict[str, Any]]:
        logs = self.session.client("logs")
        request: dict[str, Any] = {"logGroupName": group, "startTime": max(0, since_ms)}
        if pattern:
            request["filterPattern"] = f'"{pattern}"'
        found: list[dict[str, Any]] = []
        try:
            for page in logs.get_paginator("filter_log_events").paginate(**request):
                found += page.get("events", [])
        except logs.exceptions.ResourceNotFoundException:
            return []  # the group appears with the function's first invocation
        return sorted(found, key=lambda e: (e["timestamp"], e.get("eventId", "")))

    def _kept_keys(self, reader: Reader) -> list[str]:
        if not reader.failure_bucket:
            return []
        s3 = self.session.client("s3")
        pages = s3.get_paginator("list_objects_v2").paginate(
            Bucket=reader.failure_bucket, Prefix=FAILED_PREFIX
        )
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))

    def _kept(self, reader: Reader, key: str) -> dict[str, Any]:
        body = self.session.client("s3").get_object(Bucket=reader.failure_bucket, Key=key)["Body"].read()
        return dict(json.loads(body))

    def _kept_record(self, reader: Reader, sequence: int, before: set[str]) -> dict[str, Any] | None:
        """The failed batch kept since the nudge began whose sequence range holds ``sequence``, if any."""
        for key in self._kept_keys(reader):
            if key in before:
                continue
            kept = self._kept(reader, key)
            info = kept.get(BATCH_INFO) or {}
            if int(info.get("startSequenceNumber", -1)) <= sequence <= int(info.get("endSequenceNumber", -1)):
                return kept
        return None


def _past(progress: Mapping[str, Any] | None, sequence: int) -> bool:
    checkpoint = (progress or {}).get("checkpoint")
    return checkpoint is not None and str(checkpoint).isdigit() and int(checkpoint) > sequence


def _covers(line: Mapping[str, Any], sequence: int) -> bool:
    first, last = line.get("first_sequence_number"), line.get("last_sequence_number")
    return first is not None and last is not None and int(first) <= sequence <= int(last)


def _until(condition: Callable[[], Any], deadline: float, what: str) -> Any:
    """``condition()``'s first truthy answer, polled every POLL seconds until ``deadline``."""
    while True:
        answer = condition()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise NudgeTimeout(f"timed out waiting for {what}")
        time.sleep(POLL)
