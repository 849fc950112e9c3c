"""The checks of ``doctable verify``, one class sharing the run's state: each observes a promise of ``expect``
and yields a row (check, expected, observed, PASS/FAIL/SKIP); a read-only run runs only those that write
nothing. Test items use a partition key unique to the run; what it wrote is deleted in a ``finally``."""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from contract import names
from contract.shape import encryption_shape, mapping_shape, table_shape
from doctable.capabilities import indexes
from doctable.capabilities.indexes import index_nudge, index_problems
from doctable.capabilities.kinesis import event_source
from doctable.capabilities.mapping import live_mapping_tags
from doctable.capabilities.ownership import ROLLED_BACK, ROLLED_BACK_ROW, SETTLED_STATES
from doctable.core.answers import call_or_none, is_not_found
from doctable.core.aws import Aws, failure_fields, user_error_for
from doctable.core.deployment import Deployment, table_tags
from doctable.core.live import (
    ACTIVE,
    ENABLED_FIELD,
    LiveTable,
    LiveTtl,
    mapping_differences,
    pitr_declared,
    pitr_status,
    s3_bucket_arn,
)
from doctable.core.render import Progress
from doctable.verify.consumer import consumer_checks, consumer_rows
from doctable.verify.expect import LATEST, Expectations
from doctable.verify.items import Scratch, item_differences, query_index, test_item
from doctable.verify.kinesis import capture_kinesis_sequence, kinesis_checks, kinesis_rows
from doctable.verify.options import option_checks, option_rows
from doctable.verify.proof import SEQUENCE_LOOKUP_BOUND, capture_sequence, find_proof
from doctable.verify.record import DEFAULT_SETTLE, DEFAULT_TIMEOUT, FAIL, PASS, SKIP, CheckFailed, Row, Skip
from doctable.verify.replica_delivery import delivery_checks, delivery_rows
from doctable.verify.replicas import replica_checks, replica_rows
from doctable.verify.security import security_checks, security_rows
from doctable.verify.subscribers import subscriber_checks, subscriber_rows

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from contract.shape import IndexShape

TRANSITIONAL_MAPPING_STATES = ("Creating", "Enabling", "Updating")
MAPPING_ENABLED = "Enabled"


def expectations(config: DocTableConfig, home_region: str | None = None) -> Expectations:
    """What verify expects of ``config``, with each area's rows; a global table's nudges need its ``home_region``."""
    shape = table_shape(config)
    security = encryption_shape(config)
    return Expectations(
        table=shape,
        mapping=mapping_shape(config),
        tags=config.tags(),
        security=security,
        options=tuple(option_rows(shape)),
        security_rows=tuple(security_rows(security) if security else ()),
        kinesis=tuple(kinesis_rows(config)),
        consumer=tuple(consumer_rows(config)),
        subscribers=tuple(subscriber_rows(config)),
        replicas=tuple(replica_rows(config)),
        delivery=tuple(delivery_rows(config, home_region)),
    )


# ----------------------------------------------------------------------------------------------- runner
class Verifier:
    """Runs every check against one deployment, in order, and removes what it wrote even when one fails."""

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
        read_only: bool = False,
        region: str | None = None,
    ) -> None:
        self.aws = aws
        self.deployment = deployment
        self.config: DocTableConfig = deployment.config
        self.expect = expectations(self.config, deployment.region)
        # read-only: skip the checks that write; a replica region: every row but that region's
        self.planned, self.skipped = self.expect.split(read_only, region)
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
        checks: dict[str, Callable[[], str]] = {
            "stack": self._check_stack,
            "shape": self._check_shape,
            "round-trip": self._check_round_trip,
            "query": self._check_query,
            "gsi-query": self._check_gsi,  # every declared index, the gsi shorthand's among them
            "ttl": self._check_ttl,
            "stream": self._check_stream,
            **kinesis_checks(self.aws, self.deployment),
            "pitr": self._check_pitr,
            "deletion-protection": self._check_deletion_protection,
            **option_checks(self.ddb, self.expect.table, self._describe),
            **security_checks(self.aws, self.expect.security, self._describe, self.deployment),
            "negative": self._check_negative,
            "table-tags": self._check_table_tags,
            "mapping": self._check_mapping,
            "mapping-tags": self._check_mapping_tags,
            **consumer_checks(self.aws, self.deployment),
            **subscriber_checks(self),  # each subscriber's declaration, and its nudges
            **replica_checks(self.aws, self.deployment, self._describe),
            "stream-delivery": self._check_delivery,
            "blob-cleanup": self._check_cleanup,
            **delivery_checks(self),  # a global table's nudge in each region
        }
        for row_id, label, expected in self.planned:
            yield functools.partial(self._run_check, row_id, label, expected, checks[row_id])

    def _run_check(self, row_id: str, label: str, expected: str, fn: Callable[[], str]) -> Row:
        row = Row(id=row_id, check=label, expected=expected)
        started = time.monotonic()
        try:
            row.observed = fn()
            row.result = PASS
        except Skip as exc:
            row.observed, row.result = f"skipped: {exc}", SKIP
        except CheckFailed as exc:
            row.observed, row.result, row.error = str(exc), FAIL, exc.error
        except (ClientError, BotoCoreError) as exc:
            translated = user_error_for(exc)
            row.observed, row.result = f"error: {translated or exc}", FAIL
            row.error = failure_fields(exc)
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

    def _put(self, item: dict[str, Any], delete: bool = False) -> None:
        key = (item[names.PARTITION_KEY]["S"], item[names.SORT_KEY]["S"])
        self.scratch.items.append(key)
        self.ddb.put_item(TableName=self.table, Item=item)
        if delete:  # the nudge under an event filter, which drops an INSERT: its REMOVE reaches the consumer
            self.ddb.delete_item(TableName=self.table, Key=self._key(key[1]))

    def _key(self, sk: str) -> dict[str, Any]:
        return {names.PARTITION_KEY: {"S": self.pk}, names.SORT_KEY: {"S": sk}}

    def _clean_up(self) -> None:
        for problem in self.scratch.remove(self.ddb, self.aws.client("s3"), self.table):
            self.progress.say(f"clean-up could not remove {problem}")

    # ------------------------------------------------------------------------------------------ checks
    def _check_stack(self) -> str:
        status = self.deployment.stack_status or "absent"
        if status not in SETTLED_STATES:
            reason = f" ({self.deployment.status_reason})" if self.deployment.status_reason else ""
            raise CheckFailed(f"{status}{reason}")
        return status if status != ROLLED_BACK else f"{status} ({ROLLED_BACK_ROW})"

    def _check_shape(self) -> str:
        table = self._describe()
        live = LiveTable.of(table)
        shape = self.expect.table
        problems = []
        if live.status != ACTIVE:
            problems.append(f"status {live.status}")
        if not live.keys_match(shape):
            problems.append(f"keys {live.key_text()}")
        if live.billing_mode != shape.billing_mode:
            problems.append(f"billing {live.billing_mode}")
        problems += index_problems(shape, table, live)
        observed = (
            f"{live.status}, keys {'/'.join(live.keys)}, {live.billing_mode}, "
            f"indexes {sorted(indexes.live_indexes(table)) or 'none'}"
        )
        if problems:
            raise CheckFailed("; ".join(problems) + f" — {observed}")
        return observed

    def _check_round_trip(self) -> str:
        self._describe()
        item = test_item(self.pk, "roundtrip", self.wall())
        self._put(item)
        key = self._key("roundtrip")
        got = self.ddb.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
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
        """Each declared index answers a query for a nudge item carrying that index's keys."""
        shape = self.expect.table
        if not shape.indexes:
            raise Skip("no index declared (gsi=none, no indexes in the settings file): nothing to query")
        self._describe()
        answered = []
        for number, index in enumerate(shape.indexes):
            answered.append(self._query_index(index, f"idx{number}"))
        return "; ".join(answered)

    def _query_index(self, index: IndexShape, sk: str) -> str:
        item = {**self._key(sk), **index_nudge(index, self.pk, sk)}
        self._put(item)
        return query_index(self.ddb, self.table, index, item, self.progress, self.timeout)

    def _check_ttl(self) -> str:
        self._describe()
        ttl = LiveTtl.of(
            self.ddb.describe_time_to_live(TableName=self.table).get("TimeToLiveDescription", {})
        )
        observed = ttl.status + (f" on {ttl.attribute}" if ttl.attribute else "")
        if not ttl.matches(self.expect.table):
            raise CheckFailed(observed)
        return observed

    def _check_stream(self) -> str:
        live = LiveTable.of(self._describe())
        want = self.expect.table.stream_view_type
        if want is None:
            if live.stream_enabled:
                raise CheckFailed(f"stream enabled ({live.stream_view_type}) but stream={self.config.stream}")
            return "no stream"
        if not live.stream_enabled:
            raise CheckFailed("no stream enabled")
        if live.stream_view_type != want:
            raise CheckFailed(f"view type {live.stream_view_type}")
        declared = self.deployment.out(names.OUT_STREAM_ARN)
        if declared and live.latest_stream_arn != declared:
            raise CheckFailed(
                f"{want}, but the live stream {live.latest_stream_arn} is not the stack's {declared} "
                "(re-created behind the stack)"
            )
        return want

    def _check_pitr(self) -> str:
        self._describe()
        status = pitr_status(self.ddb.describe_continuous_backups(TableName=self.table))
        if status != pitr_declared(self.expect.table):
            raise CheckFailed(status)
        return status

    def _check_deletion_protection(self) -> str:
        enabled = LiveTable.of(self._describe()).deletion_protection
        observed = "enabled" if enabled else "disabled"
        if enabled != self.expect.table.deletion_protection:
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

    def _compare_tags(self, tags: Mapping[str, str]) -> str:
        want = self.expect.tags
        missing = [f"{k}={v}" for k, v in want.items() if tags.get(k) != v]
        if missing:
            raise CheckFailed(
                "missing or different: "
                + ", ".join(missing)
                + f" (has {', '.join(f'{k}={v}' for k, v in tags.items()) or 'none'})"
            )
        return f"all {len(want)} present"

    def _check_table_tags(self) -> str:
        return self._compare_tags(table_tags(self.aws, self._describe()["TableArn"]))

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
        if state != MAPPING_ENABLED:
            problems.append(f"state {state} ({mapping.get('StateTransitionReason', '')})")
        problems += self._setting_problems(mapping)
        source, what = event_source(self.config, self.deployment.out, self._describe())
        if mapping.get("EventSourceArn") != source:
            problems.append(f"reads {mapping.get('EventSourceArn')}, not {what} {source}")
        want_fn = self.deployment.out(names.OUT_CONSUMER_FUNCTION_ARN) or self.config.borrowed_consumer_arn
        have_fn = mapping.get("FunctionArn", "")
        if (
            want_fn
            and have_fn.split(":function:")[-1].split(":")[0] != want_fn.split(":function:")[-1].split(":")[0]
        ):
            problems.append(f"invokes {have_fn}, not {want_fn}")
        position = mapping.get("StartingPosition")
        declared = self.expect.mapping.starting_position if self.expect.mapping else None
        if position and declared and position != declared:
            problems.append(f"starts at {position}, the knobs declare {declared}")
        observed = f"{state}, {position or '?'}, last result: {mapping.get('LastProcessingResult', 'n/a')}"
        if problems:
            self._mapping_problem = "; ".join(problems)
            raise CheckFailed(self._mapping_problem)
        return observed

    def _setting_problems(self, mapping: dict[str, Any]) -> list[str]:
        """Every declared in-place setting (batch size ... on-failure destination = the stack's bucket)."""
        if self.expect.mapping is None:
            return []
        bucket = self.deployment.out(names.OUT_FAILURE_BUCKET)
        destination = s3_bucket_arn(self.aws.partition, bucket) if bucket else None
        return [
            f"{name} {live}, declared {want}"
            for name, live, want in mapping_differences(mapping, self.expect.mapping, destination, text=True)
            if name != ENABLED_FIELD  # the state is reported above, with its reason
        ]

    def _check_mapping_tags(self) -> str:
        uuid_ = self._require_mapping_config()
        mapping = self._mapping or self._get_mapping(uuid_)
        return self._compare_tags(live_mapping_tags(self.aws, mapping, uuid_))

    # ------------------------------------------------------------------ record-level proofs (builtin only)
    def _require_builtin(self, what: str) -> None:
        if not (self.config.has_stream or self.config.reads_kinesis):
            raise Skip(f"stream={self.config.stream}: no change feed, so no {what}")
        if not self.config.has_mapping:
            raise Skip(
                f"consumer={self.config.consumer} (stream only): nothing consumes the feed, so no {what}"
            )
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
        if position != LATEST:
            return f"{position}: no settle wait needed"
        if self._settled:
            return f"{LATEST}: settled"
        last = self._mapping.get("LastModified")
        age = max(0.0, self.wall() - last.timestamp()) if isinstance(last, datetime) else 0.0
        remaining = min(self.settle, self.settle - age)
        self._settled = True
        if remaining <= 0:
            return f"{LATEST}: settled ({age:.0f}s since last change)"
        self.progress.countdown(
            f"the {LATEST} poller to settle (last change {age:.0f}s ago, --settle {self.settle:.0f})",
            remaining,
        )
        return f"{LATEST}: waited {remaining:.0f}s for the poller to settle"

    def _check_delivery(self) -> str:
        self._require_builtin("record-level stream proof")
        group = self.deployment.out(names.OUT_CONSUMER_LOG_GROUP)
        if not group:
            raise CheckFailed(f"the stack has no {names.OUT_CONSUMER_LOG_GROUP} output")
        settle = self._settle()
        write_ms = int(self.wall() * 1000)

        nudge = {**self._key("nudge"), "kind": {"S": "stream-nudge"}, "at": {"N": str(write_ms)}}
        capture = capture_kinesis_sequence if self.config.reads_kinesis else capture_sequence
        sequence = capture(
            self.aws,
            event_source(self.config, self.deployment.out, self._describe())[0],
            lambda: self._put(nudge, delete=self.expect.nudge_deletes),
            {names.PARTITION_KEY: self.pk, names.SORT_KEY: "nudge"},
            bound=min(SEQUENCE_LOOKUP_BOUND, self.timeout),
            progress=self.progress,
            event_name=self.expect.nudge_event,
        )
        what = f"seq {sequence}" if sequence else "a line after the write (sequence number unavailable)"
        line, seconds = self.progress.wait(
            f"{names.PROOF_LOG_MESSAGE} covering the nudge ({what}) in {group}",
            lambda: find_proof(self.aws, group, self.table, sequence, write_ms),
            self.timeout,
            interval=1.0,
            max_interval=5.0,
        )
        if line is None:
            raise CheckFailed(
                f"no covering {names.PROOF_LOG_MESSAGE} line within {self.timeout:.0f}s ({settle})"
            )
        batch = f"[{line.get('first_sequence_number')}..{line.get('last_sequence_number')}]"
        return f"{what} in batch {batch} of {line.get('record_count')} after {seconds:.1f}s ({settle})"

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
        return f"{len(keys)} blobs gone after {seconds:.1f}s"
