"""``doctable verify``: the acceptance contract against one deployed environment, with its own clean-up.

Every check yields one row (check, expected, observed, PASS/FAIL/SKIP). Test items use a unique partition key
per run; whatever a run wrote (items, blobs) is deleted in a ``finally``, even when a check fails.
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from contract import names
from contract.knobs import DocTableConfig
from doctable.aws import Aws, call_or_none, is_not_found, user_error_for
from doctable.ops.context import Deployment
from doctable.ops.render import Progress, now_iso, text_table

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
DEFAULT_TIMEOUT = 300.0
DEFAULT_SETTLE = 120.0  # the seed: a fresh LATEST poller settles in ~1-2 min
TRANSITIONAL_MAPPING_STATES = ("Creating", "Enabling", "Updating")
MAX_SHARDS_TRACKED = 64
SEQUENCE_LOOKUP_BOUND = 20.0
CLOCK_SKEW_MS = 5_000


@dataclass
class Row:
    id: str
    check: str
    expected: str
    observed: str = ""
    result: str = FAIL
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class CheckFailed(Exception):
    """Raised inside a check: the row FAILs with this message as the observed value."""


class Skip(Exception):
    """Raised inside a check: the row is SKIPped with this reason."""


# ----------------------------------------------------------------------------------------- pure helpers
def test_item(pk: str, sk: str, now: float) -> dict[str, Any]:
    """An item exercising every attribute type (typed wire format, so the comparison is exact)."""
    return {
        names.PARTITION_KEY: {"S": pk},
        names.SORT_KEY: {"S": sk},
        "title": {"S": "doctable acceptance ✓"},
        "count": {"N": "42"},
        "ratio": {"N": "-0.125"},
        "big": {"N": "123456789012345678901234567890"},
        "payload": {"B": bytes(range(256))},
        "tags": {"SS": ["blue", "green", "red"]},
        "scores": {"NS": ["1", "2.5", "-3"]},
        "chunks": {"BS": [b"\x00\x01", b"\xff"]},
        "flag": {"BOOL": True},
        "nothing": {"NULL": True},
        "nested": {
            "M": {
                "level": {"N": "2"},
                "inner": {"M": {"deep": {"S": "yes"}, "list": {"L": [{"N": "1"}, {"S": "two"}]}}},
            }
        },
        "items": {"L": [{"S": "a"}, {"N": "1"}, {"M": {"k": {"BOOL": False}}}, {"L": []}, {"SS": ["x"]}]},
        names.TTL_ATTRIBUTE: {"N": str(int(now) + 86_400)},
    }


def canonical(value: Any) -> Any:
    """A comparable form of a typed attribute value: sets are unordered, numbers compare as numbers."""
    if isinstance(value, Mapping):
        if len(value) == 1:
            (kind, inner), *_ = value.items()
            if kind == "N":
                return ("N", Decimal(inner).normalize())
            if kind == "NS":
                return ("NS", sorted(Decimal(v).normalize() for v in inner))
            if kind in ("SS", "BS"):
                return (kind, sorted(bytes(v) if kind == "BS" else v for v in inner))
            if kind == "B":
                return ("B", bytes(inner))
            if kind == "M":
                return ("M", {k: canonical(v) for k, v in inner.items()})
            if kind == "L":
                return ("L", [canonical(v) for v in inner])
            if kind in ("S", "BOOL", "NULL"):
                return (kind, inner)
        return {k: canonical(v) for k, v in value.items()}
    return value


def item_differences(want: Mapping[str, Any], got: Mapping[str, Any] | None) -> list[str]:
    if got is None:
        return ["no item returned"]
    problems = []
    for name in sorted(set(want) | set(got)):
        if name not in got:
            problems.append(f"{name} missing")
        elif name not in want:
            problems.append(f"{name} unexpected")
        elif canonical(want[name]) != canonical(got[name]):
            problems.append(f"{name} differs")
    return problems


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


def _fmt_seconds(seconds: float) -> str:
    return f"{seconds:.1f}s"


# ----------------------------------------------------------------------------------------------- runner
@dataclass
class Scratch:
    """Everything a run wrote, so the ``finally`` can remove it."""

    items: list[tuple[str, str]] = field(default_factory=list)
    blobs: list[tuple[str, str]] = field(default_factory=list)  # (bucket, key)


class Verifier:
    def __init__(
        self,
        aws: Aws,
        deployment: Deployment,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        settle: float = DEFAULT_SETTLE,
        progress: Progress | None = None,
        run_id: str | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.aws = aws
        self.deployment = deployment
        self.config: DocTableConfig = deployment.config
        self.timeout = timeout
        self.settle = settle
        self.progress = progress or Progress("doctable verify")
        self.run_id = run_id or f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"
        self.pk = f"doctable-verify-{self.run_id}"
        self.wall = wall_clock
        self.table = deployment.table_name
        self.ddb = aws.client("dynamodb")
        self.scratch = Scratch()
        self.rows: list[Row] = []
        self._description: dict[str, Any] | None = None
        self._mapping: dict[str, Any] | None = None
        self._mapping_problem: str | None = None
        self._settled = False

    # ---------------------------------------------------------------------------------------- plumbing
    def run(self) -> list[Row]:
        try:
            for check in self._checks():
                self.rows.append(check())
        finally:
            self._clean_up()
        return self.rows

    def _checks(self) -> Iterator[Callable[[], Row]]:
        plan: list[tuple[str, str, str, Callable[[], str]]] = [
            ("stack", "stack healthy", "CREATE_COMPLETE | UPDATE_COMPLETE", self._check_stack),
            ("shape", "table active, shape = knobs", self._shape_expected(), self._check_shape),
            (
                "round-trip",
                "item round-trip",
                "put → consistent get → attribute-identical",
                self._check_round_trip,
            ),
            ("query", "key query answers", "query pk = :p AND sk = :s returns the item", self._check_query),
            ("gsi-query", "gsi1 query answers", "query on gsi1 returns the item (retried)", self._check_gsi),
            ("ttl", "TTL as declared", self._ttl_expected(), self._check_ttl),
            ("stream", "stream as declared", self._stream_expected(), self._check_stream),
            ("pitr", "PITR as declared", "ENABLED" if self.config.has_pitr else "DISABLED", self._check_pitr),
            (
                "deletion-protection",
                "deletion protection as declared",
                "enabled" if self.config.deletion_protection else "disabled",
                self._check_deletion_protection,
            ),
            ("negative", "deleted item is gone", "delete → consistent get → no item", self._check_negative),
            ("table-tags", "table tags", self._tags_expected(), self._check_table_tags),
            (
                "mapping",
                "mapping enabled",
                "Enabled, on the live stream, → the consumer",
                self._check_mapping,
            ),
            ("mapping-tags", "mapping tags", self._tags_expected(), self._check_mapping_tags),
            (
                "stream-delivery",
                "stream delivers (record-level)",
                f"a {names.PROOF_LOG_MESSAGE} line covers the nudge write",
                self._check_delivery,
            ),
            (
                "blob-cleanup",
                "deleted item's blobs removed",
                "blobs under <pk>/<sk>/ gone",
                self._check_cleanup,
            ),
        ]
        for row_id, label, expected, fn in plan:
            yield functools.partial(self._run_check, row_id, label, expected, fn)

    def _run_check(self, row_id: str, label: str, expected: str, fn: Callable[[], str]) -> Row:
        row = Row(id=row_id, check=label, expected=expected)
        started = time.monotonic()
        try:
            row.observed = fn()
            row.result = PASS
        except Skip as exc:
            row.observed, row.result = f"skipped: {exc}", SKIP
        except CheckFailed as exc:
            row.observed, row.result = str(exc), FAIL
        except (ClientError, BotoCoreError) as exc:
            translated = user_error_for(exc)
            row.observed, row.result = f"error: {translated or exc}", FAIL
        row.seconds = round(time.monotonic() - started, 2)
        return row

    def _describe(self, refresh: bool = False) -> dict[str, Any]:
        if self._description is None or refresh:
            try:
                self._description = self.ddb.describe_table(TableName=self.table)["Table"]
            except ClientError as exc:
                if is_not_found(exc):
                    raise CheckFailed(f"table {self.table} not found") from exc
                raise
        return self._description

    def _put(self, item: dict[str, Any]) -> None:
        key = (item[names.PARTITION_KEY]["S"], item[names.SORT_KEY]["S"])
        self.scratch.items.append(key)
        self.ddb.put_item(TableName=self.table, Item=item)

    def _key(self, sk: str) -> dict[str, Any]:
        return {names.PARTITION_KEY: {"S": self.pk}, names.SORT_KEY: {"S": sk}}

    def _clean_up(self) -> None:
        problems = []
        for pk, sk in dict.fromkeys(self.scratch.items):
            try:
                self.ddb.delete_item(
                    TableName=self.table, Key={names.PARTITION_KEY: {"S": pk}, names.SORT_KEY: {"S": sk}}
                )
            except (ClientError, BotoCoreError) as exc:
                if not (isinstance(exc, ClientError) and is_not_found(exc)):
                    problems.append(f"item {pk}/{sk}: {exc}")
        if self.scratch.blobs:
            s3 = self.aws.client("s3")
            for bucket, key in self.scratch.blobs:
                try:
                    s3.delete_object(Bucket=bucket, Key=key)
                except (ClientError, BotoCoreError) as exc:
                    if not (isinstance(exc, ClientError) and is_not_found(exc)):
                        problems.append(f"blob s3://{bucket}/{key}: {exc}")
        for problem in problems:
            self.progress.say(f"clean-up could not remove {problem}")

    # ------------------------------------------------------------------------------------ expectations
    def _shape_expected(self) -> str:
        gsi = "gsi1 ACTIVE" if self.config.has_gsi else "no GSI"
        return f"ACTIVE, keys pk/sk (S), on-demand, {gsi}"

    def _ttl_expected(self) -> str:
        if self.config.has_ttl:
            return f"ENABLED | ENABLING on {names.TTL_ATTRIBUTE}"
        return "DISABLED"

    def _stream_expected(self) -> str:
        return "NEW_AND_OLD_IMAGES, = stack's StreamArn" if self.config.has_stream else "no stream"

    def _tags_expected(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.config.tags().items())

    # ------------------------------------------------------------------------------------------ checks
    def _check_stack(self) -> str:
        status = self.deployment.stack_status or "absent"
        if not self.deployment.stable:
            reason = f" ({self.deployment.status_reason})" if self.deployment.status_reason else ""
            raise CheckFailed(f"{status}{reason}")
        return status

    def _check_shape(self) -> str:
        table = self._describe()
        problems = []
        if table.get("TableStatus") != "ACTIVE":
            problems.append(f"status {table.get('TableStatus')}")
        keys = {k["AttributeName"]: k["KeyType"] for k in table.get("KeySchema", [])}
        if keys != {names.PARTITION_KEY: "HASH", names.SORT_KEY: "RANGE"}:
            problems.append(f"keys {keys}")
        types = {a["AttributeName"]: a["AttributeType"] for a in table.get("AttributeDefinitions", [])}
        if types.get(names.PARTITION_KEY) != "S" or types.get(names.SORT_KEY) != "S":
            problems.append(f"key types {types}")
        billing = (table.get("BillingModeSummary") or {}).get("BillingMode", "PROVISIONED")
        if billing != "PAY_PER_REQUEST":
            problems.append(f"billing {billing}")
        gsis = {g["IndexName"]: g for g in table.get("GlobalSecondaryIndexes", []) or []}
        if self.config.has_gsi:
            index = gsis.get(names.GSI_NAME)
            if index is None:
                problems.append("gsi1 missing")
            else:
                index_keys = {k["AttributeName"]: k["KeyType"] for k in index.get("KeySchema", [])}
                if index_keys != {names.GSI_PARTITION_KEY: "HASH", names.GSI_SORT_KEY: "RANGE"}:
                    problems.append(f"gsi1 keys {index_keys}")
                if index.get("IndexStatus", "ACTIVE") != "ACTIVE":
                    problems.append(f"gsi1 {index.get('IndexStatus')} (backfill not finished)")
        if set(gsis) - ({names.GSI_NAME} if self.config.has_gsi else set()):
            problems.append(f"unexpected indexes {sorted(set(gsis) - {names.GSI_NAME})}")
        observed = (
            f"{table.get('TableStatus')}, keys {'/'.join(keys)}, {billing}, indexes {sorted(gsis) or 'none'}"
        )
        if problems:
            raise CheckFailed("; ".join(problems) + f" — {observed}")
        return observed

    def _check_round_trip(self) -> str:
        self._describe()
        item = test_item(self.pk, "roundtrip", self.wall())
        self._put(item)
        got = self.ddb.get_item(TableName=self.table, Key=self._key("roundtrip"), ConsistentRead=True).get(
            "Item"
        )
        differences = item_differences(item, got)
        if differences:
            raise CheckFailed("; ".join(differences))
        return f"attribute-identical ({len(item)} attributes, every type)"

    def _check_query(self) -> str:
        self._describe()
        if "roundtrip" not in {sk for _, sk in self.scratch.items}:
            self._put(test_item(self.pk, "roundtrip", self.wall()))
        reply = self.ddb.query(
            TableName=self.table,
            KeyConditionExpression="#pk = :p AND #sk = :s",
            ExpressionAttributeNames={"#pk": names.PARTITION_KEY, "#sk": names.SORT_KEY},
            ExpressionAttributeValues={":p": {"S": self.pk}, ":s": {"S": "roundtrip"}},
            ConsistentRead=True,
        )
        found = [i for i in reply.get("Items", []) if i.get(names.SORT_KEY, {}).get("S") == "roundtrip"]
        if reply.get("Count") != 1 or not found:
            raise CheckFailed(f"count {reply.get('Count')}")
        return "count 1"

    def _check_gsi(self) -> str:
        if not self.config.has_gsi:
            raise Skip("gsi=none: the table has no index to query")
        self._describe()
        gsi_pk = f"idx-{self.pk}"
        self._put(
            {
                **self._key("gsi"),
                names.GSI_PARTITION_KEY: {"S": gsi_pk},
                names.GSI_SORT_KEY: {"S": "a"},
            }
        )
        attempts = 0

        def probe() -> int | None:
            nonlocal attempts
            attempts += 1
            reply = self.ddb.query(
                TableName=self.table,
                IndexName=names.GSI_NAME,
                KeyConditionExpression="#p = :p",
                ExpressionAttributeNames={"#p": names.GSI_PARTITION_KEY},
                ExpressionAttributeValues={":p": {"S": gsi_pk}},
            )
            return reply["Count"] if reply.get("Count") == 1 else None

        found, seconds = self.progress.wait(
            "gsi1 to answer (index replication is async)", probe, self.timeout
        )
        if found is None:
            raise CheckFailed(
                f"count 0 after {attempts} attempts / {_fmt_seconds(seconds)} — replication lag or an "
                "unfinished backfill (index added to a live table)"
            )
        return f"count 1 (attempt {attempts}, {_fmt_seconds(seconds)})"

    def _check_ttl(self) -> str:
        self._describe()
        ttl = self.ddb.describe_time_to_live(TableName=self.table).get("TimeToLiveDescription", {})
        status, attribute = ttl.get("TimeToLiveStatus", "DISABLED"), ttl.get("AttributeName")
        observed = f"{status}" + (f" on {attribute}" if attribute else "")
        if self.config.has_ttl:
            if status not in ("ENABLED", "ENABLING") or attribute != names.TTL_ATTRIBUTE:
                raise CheckFailed(observed)
        elif status not in ("DISABLED", "DISABLING"):
            raise CheckFailed(observed)
        return observed

    def _check_stream(self) -> str:
        table = self._describe()
        spec = table.get("StreamSpecification") or {}
        enabled, view = bool(spec.get("StreamEnabled")), spec.get("StreamViewType")
        latest = table.get("LatestStreamArn")
        if not self.config.has_stream:
            if enabled:
                raise CheckFailed(f"stream enabled ({view}) but stream=none")
            return "no stream"
        if not enabled:
            raise CheckFailed("no stream enabled")
        if view != "NEW_AND_OLD_IMAGES":
            raise CheckFailed(f"view type {view}")
        declared = self.deployment.out(names.OUT_STREAM_ARN)
        if declared and latest != declared:
            raise CheckFailed(
                f"{view}, but the live stream {latest} is not the stack's {declared} (re-created behind the stack)"
            )
        return f"{view}"

    def _check_pitr(self) -> str:
        self._describe()
        reply = self.ddb.describe_continuous_backups(TableName=self.table)["ContinuousBackupsDescription"]
        status = (reply.get("PointInTimeRecoveryDescription") or {}).get(
            "PointInTimeRecoveryStatus", "DISABLED"
        )
        if (status == "ENABLED") != self.config.has_pitr:
            raise CheckFailed(status)
        return status

    def _check_deletion_protection(self) -> str:
        enabled = bool(self._describe().get("DeletionProtectionEnabled"))
        observed = "enabled" if enabled else "disabled"
        if enabled != self.config.deletion_protection:
            raise CheckFailed(f"{observed} (env={self.config.env} declares the opposite)")
        return observed

    def _check_negative(self) -> str:
        self._describe()
        self._put({**self._key("negative"), "kind": {"S": "deleted-by-verify"}})
        self.ddb.delete_item(TableName=self.table, Key=self._key("negative"))
        got = self.ddb.get_item(TableName=self.table, Key=self._key("negative"), ConsistentRead=True)
        if "Item" in got:
            raise CheckFailed("the deleted item is still readable")
        return "no item"

    def _table_tags(self) -> dict[str, str]:
        arn = self._describe()["TableArn"]
        tags: dict[str, str] = {}
        kwargs: dict[str, Any] = {"ResourceArn": arn}
        while True:
            reply = self.ddb.list_tags_of_resource(**kwargs)
            tags.update({t["Key"]: t["Value"] for t in reply.get("Tags", [])})
            if not reply.get("NextToken"):
                return tags
            kwargs["NextToken"] = reply["NextToken"]

    def _compare_tags(self, tags: Mapping[str, str]) -> str:
        want = self.config.tags()
        missing = [f"{k}={v}" for k, v in want.items() if tags.get(k) != v]
        if missing:
            raise CheckFailed(
                "missing or different: "
                + ", ".join(missing)
                + f" (has {', '.join(f'{k}={v}' for k, v in tags.items()) or 'none'})"
            )
        return f"all {len(want)} present"

    def _check_table_tags(self) -> str:
        return self._compare_tags(self._table_tags())

    def _require_mapping_config(self) -> str:
        if not self.config.has_mapping:
            raise Skip(f"consumer={self.config.consumer}: no event-source mapping")
        uuid_ = self.deployment.out(names.OUT_MAPPING_UUID)
        if not uuid_:
            raise CheckFailed(f"the stack has no {names.OUT_MAPPING_UUID} output")
        return uuid_

    def _get_mapping(self, uuid_: str) -> dict[str, Any]:
        mapping = call_or_none(self.aws.client("lambda").get_event_source_mapping, UUID=uuid_)
        if mapping is None:
            raise CheckFailed(f"mapping {uuid_} not found")
        return mapping

    def _check_mapping(self) -> str:
        uuid_ = self._require_mapping_config()
        mapping = self._get_mapping(uuid_)
        if mapping.get("State") in TRANSITIONAL_MAPPING_STATES:

            def probe() -> dict[str, Any] | None:
                current = self._get_mapping(uuid_)
                return None if current.get("State") in TRANSITIONAL_MAPPING_STATES else current

            settled, _ = self.progress.wait(
                f"mapping {uuid_} to leave {mapping.get('State')}", probe, self.timeout
            )
            mapping = settled or self._get_mapping(uuid_)
        self._mapping = mapping
        state = mapping.get("State")
        problems = []
        if state != "Enabled":
            problems.append(f"state {state} ({mapping.get('StateTransitionReason', '')})")
        live_stream = self._describe().get("LatestStreamArn")
        if mapping.get("EventSourceArn") != live_stream:
            problems.append(f"reads {mapping.get('EventSourceArn')}, not the live stream {live_stream}")
        want_fn = self.deployment.out(names.OUT_CONSUMER_FUNCTION_ARN) or self.config.borrowed_consumer_arn
        have_fn = mapping.get("FunctionArn", "")
        if (
            want_fn
            and have_fn.split(":function:")[-1].split(":")[0] != want_fn.split(":function:")[-1].split(":")[0]
        ):
            problems.append(f"invokes {have_fn}, not {want_fn}")
        position = mapping.get("StartingPosition", "?")
        observed = f"{state}, {position}, last result: {mapping.get('LastProcessingResult', 'n/a')}"
        if problems:
            self._mapping_problem = "; ".join(problems)
            raise CheckFailed(self._mapping_problem)
        return observed

    def _check_mapping_tags(self) -> str:
        uuid_ = self._require_mapping_config()
        mapping = self._mapping or self._get_mapping(uuid_)
        arn = mapping.get("EventSourceMappingArn") or (
            f"arn:{self.aws.partition}:lambda:{self.aws.region}:{self.aws.account}:event-source-mapping:{uuid_}"
        )
        tags = self.aws.client("lambda").list_tags(Resource=arn).get("Tags", {})
        return self._compare_tags(tags)

    # ------------------------------------------------------------------ record-level proofs (builtin only)
    def _require_builtin(self, what: str) -> None:
        if not self.config.has_stream:
            raise Skip(f"stream=none: no change feed, so no {what}")
        if self.config.consumer == "none":
            raise Skip(f"consumer=none (stream only): nothing consumes the feed, so no {what}")
        if not self.config.builtin_consumer:
            raise Skip(
                f"borrowed consumer {self.config.borrowed_consumer_arn}: {what} belongs to that function's "
                "own plan (its log contract is not ours)"
            )
        if self._mapping is None or self._mapping_problem:
            raise CheckFailed(
                f"not attempted: the mapping is not healthy ({self._mapping_problem or 'unknown'})"
            )

    def _settle(self) -> str:
        """A LATEST poller misses writes made right after it reports Enabled: wait until it has settled."""
        assert self._mapping is not None
        position = self._mapping.get("StartingPosition")
        if position != "LATEST":
            return f"{position}: no settle wait needed"
        if self._settled:
            return "LATEST: settled"
        last = self._mapping.get("LastModified")
        age = self.wall() - last.timestamp() if isinstance(last, datetime) else 0.0
        remaining = self.settle - age
        self._settled = True
        if remaining <= 0:
            return f"LATEST: settled ({age:.0f}s since last change)"
        deadline = time.monotonic() + remaining
        self.progress.wait(
            f"the LATEST poller to settle ({remaining:.0f}s more; --settle {self.settle:.0f})",
            lambda: True if time.monotonic() >= deadline else None,
            remaining + 1,
            interval=min(5.0, remaining),
            max_interval=5.0,
        )
        return f"LATEST: waited {remaining:.0f}s for the poller to settle"

    def _capture_sequence(self, write: Callable[[], None], sk: str) -> str | None:
        """Write, and read our own record's sequence number off the stream (None if it cannot be found)."""
        stream_arn = self._describe().get("LatestStreamArn")
        streams = self.aws.client("dynamodbstreams")
        iterators: list[str] = []
        try:
            shards: list[dict[str, Any]] = []
            kwargs: dict[str, Any] = {"StreamArn": stream_arn}
            while True:
                description = streams.describe_stream(**kwargs)["StreamDescription"]
                shards += description.get("Shards", [])
                if not description.get("LastEvaluatedShardId") or len(shards) > MAX_SHARDS_TRACKED:
                    break
                kwargs["ExclusiveStartShardId"] = description["LastEvaluatedShardId"]
            open_shards = [
                s for s in shards if "EndingSequenceNumber" not in s.get("SequenceNumberRange", {})
            ]
            if len(open_shards) <= MAX_SHARDS_TRACKED:
                for shard in open_shards:
                    iterators.append(
                        streams.get_shard_iterator(
                            StreamArn=stream_arn, ShardId=shard["ShardId"], ShardIteratorType="LATEST"
                        )["ShardIterator"]
                    )
        except (ClientError, BotoCoreError):
            iterators = []
        write()
        if not iterators:
            return None
        deadline = time.monotonic() + min(SEQUENCE_LOOKUP_BOUND, self.timeout)
        while iterators and time.monotonic() < deadline:
            following = []
            for iterator in iterators:
                try:
                    reply = streams.get_records(ShardIterator=iterator, Limit=1000)
                except (ClientError, BotoCoreError):
                    continue
                for record in reply.get("Records", []):
                    keys = record.get("dynamodb", {}).get("Keys", {})
                    if (
                        keys.get(names.PARTITION_KEY, {}).get("S") == self.pk
                        and keys.get(names.SORT_KEY, {}).get("S") == sk
                    ):
                        return str(record["dynamodb"]["SequenceNumber"])
                if reply.get("NextShardIterator"):
                    following.append(reply["NextShardIterator"])
            iterators = following
            time.sleep(0.5)
        return None

    def _find_proof(self, group: str, sequence: str | None, write_ms: int) -> dict[str, Any] | None:
        logs = self.aws.client("logs")
        kwargs: dict[str, Any] = {
            "logGroupName": group,
            "startTime": max(0, write_ms - 60_000),
            "filterPattern": f'"{names.PROOF_LOG_MESSAGE}"',
        }
        while True:
            try:
                reply = logs.filter_log_events(**kwargs)
            except ClientError as exc:
                if is_not_found(exc):
                    return None  # the group appears with the first invocation
                raise
            for event in reply.get("events", []):
                line = parse_proof_line(event.get("message", ""))
                if line and covers(line, self.table, sequence, int(event.get("timestamp", 0)), write_ms):
                    return line
            if not reply.get("nextToken"):
                return None
            kwargs["nextToken"] = reply["nextToken"]

    def _check_delivery(self) -> str:
        self._require_builtin("record-level stream proof")
        group = self.deployment.out(names.OUT_CONSUMER_LOG_GROUP)
        if not group:
            raise CheckFailed(f"the stack has no {names.OUT_CONSUMER_LOG_GROUP} output")
        settle = self._settle()
        write_ms = int(self.wall() * 1000)

        def write() -> None:
            self._put({**self._key("nudge"), "kind": {"S": "stream-nudge"}, "at": {"N": str(write_ms)}})

        sequence = self._capture_sequence(write, "nudge")
        what = f"seq {sequence}" if sequence else "a line after the write (sequence number unavailable)"
        line, seconds = self.progress.wait(
            f"{names.PROOF_LOG_MESSAGE} covering the nudge ({what}) in {group}",
            lambda: self._find_proof(group, sequence, write_ms),
            self.timeout,
            interval=1.0,
            max_interval=5.0,
        )
        if line is None:
            raise CheckFailed(
                f"no covering {names.PROOF_LOG_MESSAGE} line within {self.timeout:.0f}s ({settle})"
            )
        batch = f"[{line.get('first_sequence_number')}..{line.get('last_sequence_number')}]"
        return (
            f"{what} in batch {batch} of {line.get('record_count')} after {_fmt_seconds(seconds)} ({settle})"
        )

    def _check_cleanup(self) -> str:
        self._require_builtin("blob clean-up proof")
        bucket = self.deployment.out(names.OUT_BLOB_BUCKET)
        if not bucket:
            raise CheckFailed(f"the stack has no {names.OUT_BLOB_BUCKET} output")
        self._settle()
        s3 = self.aws.client("s3")
        prefix = f"{self.config.blob_root}{self.pk}/cleanup/"
        keys = [f"{prefix}a.txt", f"{prefix}nested/b.bin"]
        for key in keys:
            self.scratch.blobs.append((bucket, key))
            s3.put_object(Bucket=bucket, Key=key, Body=b"doctable verify blob")
        self._put({**self._key("cleanup"), names.BLOBS_ATTRIBUTE: {"L": [{"S": k} for k in keys]}})
        self.ddb.delete_item(TableName=self.table, Key=self._key("cleanup"))

        def probe() -> bool | None:
            reply = s3.list_objects_v2(Bucket=bucket, Prefix=prefix)
            return True if not reply.get("Contents") else None

        gone, seconds = self.progress.wait(
            f"the consumer to delete 2 blobs under s3://{bucket}/{prefix}", probe, self.timeout
        )
        if gone is None:
            left = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])]
            raise CheckFailed(f"{len(left)} of {len(keys)} blobs still present after {self.timeout:.0f}s")
        return f"{len(keys)} blobs gone after {_fmt_seconds(seconds)}"


# ------------------------------------------------------------------------------------------ the record
def verify_record(deployment: Deployment, rows: list[Row], started_at: str, run_id: str) -> dict[str, Any]:
    return {
        "kind": "doctable-verify",
        "run_id": run_id,
        "table": deployment.table_name,
        "stack": deployment.config.stack_name,
        "stack_id": deployment.stack_id,
        "region": deployment.region,
        "account": deployment.account,
        "endpoint": _endpoint(),
        "started_at": started_at,
        "finished_at": now_iso(),
        "passed": all(r.result != FAIL for r in rows),
        "counts": {k: sum(1 for r in rows if r.result == k) for k in (PASS, FAIL, SKIP)},
        "knobs": deployment.config.as_knobs(),
        "rows": [r.as_dict() for r in rows],
    }


def _endpoint() -> str | None:
    import os

    return os.environ.get("AWS_ENDPOINT_URL") or None


def record_path(directory: Path, table: str) -> Path:
    return directory / f"verify-{table}.json"


def save_record(directory: Path, record: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = record_path(directory, record["table"])
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2, default=str) + "\n")
    tmp.replace(path)
    return path


def load_record(directory: Path, table: str) -> dict[str, Any] | None:
    try:
        data = json.loads(record_path(directory, table).read_text())
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def render_rows(rows: list[dict[str, Any]] | list[Row]) -> str:
    dicts = [r.as_dict() if isinstance(r, Row) else r for r in rows]
    return text_table(
        ["check", "expected", "observed", "result"],
        [[d["check"], d["expected"], d["observed"], d["result"]] for d in dicts],
    )


def summary_line(record: Mapping[str, Any]) -> str:
    counts = record["counts"]
    verdict = "PASSED" if record["passed"] else "FAILED"
    failed = [r["id"] for r in record["rows"] if r["result"] == FAIL]
    tail = f" — failing: {', '.join(failed)}" if failed else ""
    return (
        f"verify {verdict}: {record['table']} ({record['region']}) — {counts[PASS]} pass, {counts[FAIL]} fail, "
        f"{counts[SKIP]} skip{tail}"
    )


__all__ = [
    "FAIL",
    "PASS",
    "SKIP",
    "Row",
    "Verifier",
    "covers",
    "item_differences",
    "load_record",
    "parse_proof_line",
    "render_rows",
    "save_record",
    "verify_record",
]
