"""What a deploy, a drift check or a verification found, as data: a level, a stable code, a destructive flag and
structured before/after values beside the prose. Gates, ``--json`` and tests read the codes and values; only
people read the prose.

Standard library only, so that every part (the CLI's commands, the stack's tests, the bench) may import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Level(StrEnum):
    """How a finding weighs on a deploy, most severe first."""

    STOP = "STOP"  # the deploy cannot go ahead as it is (a foreign table, a busy stack, an immutable key)
    WARN = "WARN"  # it can, but something deserves a look first
    CHANGE = "CHANGE"  # the deploy changes this
    DRIFT = "DRIFT"  # changed behind the stack; the deploy leaves it so
    OK = "OK"
    INFO = "INFO"

    def __str__(self) -> str:
        return self.value


# Every code a finding may carry, with what it means. A code is stable: tests, gates and dashboards key on it.
# Grouped by what the finding is about; ``<thing>.<what happens to it>``.
CODES: dict[str, str] = {
    # the stack and the table as a whole
    "stack.busy": "the stack is in an *_IN_PROGRESS state",
    "stack.rollback_failed": "the stack is UPDATE_ROLLBACK_FAILED: continue the rollback first",
    "stack.failed_create": "a failed first create: the deploy deletes and re-creates the stack",
    "table.created": "the table does not exist yet and will be created",
    "table.missing": "the stack lists the table but it is gone",
    "table.foreign": "a same-named table exists that doctable did not make",
    "table.unmanaged": "a same-named table doctable made exists outside this stack",
    "table.unchanged": "the deploy leaves the table as it is",
    "table.no_template_change": "the deploy changes nothing of the table; drift is listed apart",
    "table.replaced": "the key schema changes, or an LSI is added, removed or changed: a new table and a data copy",
    "table.billing_mode_changed": "the billing mode changes",
    "table.to_global": "replicas are declared for a single-region table: doctable deploy converts it, items kept",
    "table.handover": "a conversion to a global table stopped with the table out of the stack: deploy continues it",
    "table.to_single": "replicas are dropped from a global table: the type changes, refused (a replacement)",
    # a global table's replica regions
    "replica.added": "a replica region is added: an online copy, billed per region (writes, storage, transfer)",
    "replica.removed": "a replica region is removed: that region's copy and its consumer stack are deleted",
    "replica.busy": "a replica is not ACTIVE: another replica change is refused until it is",
    # indexes
    "index.added": "a global secondary index is added: an online backfill",
    "index.removed": "a global secondary index is deleted: queries on it fail",
    "index.replaced": "an index's keys or projection change: a delete then a create",
    "index.busy": "an index is not ACTIVE: another index change is rejected until it is",
    "index.throughput_changed": "a global index's on-demand cap or warm throughput changes in place",
    "index.multi_step": "several GSI creations/deletions: doctable deploy applies them one update at a time",
    # stream
    "stream.enabled": "the table's stream is turned on: a new stream ARN",
    "stream.disabled": "the table's stream is turned off: the feed is gone after 24 h",
    "stream.recreated": "the stream's view type changes: disable then enable, a new stream ARN",
    # TTL
    "ttl.enabled": "TTL is turned on: DynamoDB deletes every item whose expiry is past",
    "ttl.disabled": "TTL is turned off: items stop expiring",
    "ttl.attribute_changed": "the TTL attribute changes: disable then enable, rate-limited",
    "ttl.busy": "a TTL change is in progress",
    # backups and protection
    "pitr.enabled": "point-in-time recovery is turned on",
    "pitr.disabled": "point-in-time recovery is turned off: the restore window is lost",
    "pitr.window_lengthened": "the PITR recovery period grows",
    "pitr.window_shortened": "the PITR recovery period shrinks: older restore points are lost",
    "deletion_protection.enabled": "deletion protection is turned on",
    "deletion_protection.disabled": "deletion protection is turned off: the table becomes deletable",
    # table options
    "table_class.changed": "the table class changes",
    "throughput.max_changed": "the on-demand throughput cap changes",
    "throughput.warm_changed": "the warm throughput changes",
    "contributor_insights.changed": "contributor insights change",
    # security
    "key.changed": "the table's encryption (or its key) changes",
    "resource_policy.changed": "the table's resource policy changes",
    # the mapping
    "mapping.created": "the event-source mapping is created",
    "mapping.deleted": "the event-source mapping is deleted: the stream is no longer consumed",
    "mapping.replaced": "the event-source mapping is replaced (a new one, then the old one deleted)",
    "mapping.updated": "the event-source mapping is updated in place",
    "mapping.events_changed": "the mapping's event filter changes",
    "mapping.metrics_changed": "the mapping's metrics change",
    # the consumer and its blobs
    "consumer.changed": "a setting of the built-in consumer's function changes in place",
    "consumer.republished": "snapstart=on: the change publishes a new version",
    "consumer.prefix_cleanup_enabled": "blob_prefix_cleanup turns on: a REMOVE deletes unlisted objects too",
    "consumer.key_reuse_never": "blob_key_reuse turns to never: dropped keys are deleted unchecked",
    "consumer.missing": "the borrowed consumer function does not exist or cannot be read",
    "consumer.other_region": "the borrowed consumer function is in another region than the table",
    "consumer.cannot_read_stream": "the borrowed consumer's role cannot read the stream",
    "consumer.ok": "the borrowed consumer exists and can read the stream",
    "bucket.leaves_stack": "the blob bucket leaves the stack",
    "bucket.taken": "a bucket name the deploy creates exists outside the stack (this account's or another's)",
    # the CDK bootstrap the environment deploys through (its qualifier; `doctable bootstrap`)
    "bootstrap.admin_execution": "the bootstrap's CloudFormation execution role is an administrator",
    "bootstrap.qualifier_mismatch": "the stack was deployed through another bootstrap qualifier than the settings name",
    "bootstrap.missing": "no CDK bootstrap of the environment's qualifier in its account and region",
    # a team's subscribers (contract/subscribers.py)
    "subscriber.added": "a subscriber is added: its function and mapping are created",
    "subscriber.removed": "a subscriber is removed: its function and mapping are deleted",
    "subscriber.replaced": "a subscriber's source or starting position changes: a new mapping replaces its mapping",
    "subscriber.updated": "a subscriber's filters, batching or function settings change in place",
    "subscriber.region_added": "a subscriber of a global table runs in another region: its stack there deploys it",
    "subscriber.region_removed": "a subscriber of a global table leaves a region: its function, mapping and bucket there go",
    # a subscriber's mapping changed behind the stack (drift: the deploy leaves it so; reconcile restores it)
    "subscriber.mapping_missing": "a subscriber's mapping was deleted behind the stack: a deploy must replace it",
    "subscriber.mapping_disabled": "a subscriber's mapping was disabled behind the stack: reconcile enables it",
    "subscriber.filter_drifted": "a subscriber's mapping filter differs from its declared filters",
    "subscriber.mapping_drifted": "a subscriber's mapping setting (batching, retries, destination) is not as declared",
    "subscriber.mapping_tags_drifted": "a subscriber's mapping lacks a tag of the stack's, or holds another value",
    "subscriber.readers_exceeded": "more readers of the table's stream than a shard takes (2), others' counted",
    "subscriber.readers_recommended": "more readers of a global table's replica stream than AWS recommends (1)",
    "subscriber.readers_unlisted": "the mappings on the table's stream cannot be listed: the reader limit is unchecked",
    "bucket.renamed": "bucket_names changes: the stack's buckets are replaced under new names, the old ones kept",
    # Kinesis
    "kinesis.enabled": "table changes start flowing to a Kinesis data stream",
    "kinesis.changed": "the Kinesis destination changes",
    "kinesis.stream_deleted": "the stack's Kinesis data stream is deleted",
    "kinesis.disabled": "table changes stop flowing to the Kinesis data stream",
    "kinesis.stream_missing": "the borrowed Kinesis stream does not exist or cannot be read",
    "kinesis.stream_other_region": "the borrowed Kinesis stream is in another region than the table",
    "kinesis.stream_not_active": "the borrowed Kinesis stream exists but is not ACTIVE",
    "kinesis.ok": "the borrowed Kinesis stream exists",
    # drift
    "drift.detected": "changed behind the stack; the deploy will not repair it",
    # where the settings came from
    "settings.override": "a knob is overridden for this run (-c or DOCTABLE_<KNOB>) and differs from the file",
    # the environment
    "env.prod_unbound": "a prod-tier environment has no account binding: it deploys wherever credentials point",
    "env.tier_changed": "the environment's tier changes (from prod, or from a tier that keeps data: destructive)",
    "env.orphaned": "a stack of this table names an environment the settings no longer declare (renamed or removed)",
    # doctable plan (a workload on the declared shape)
    "plan.subscriber_lags": "a subscriber sustains fewer records per second per shard (from its time per record) "
    "than its shards deliver: its iterator age grows",
    "plan.subscriber_batch_timeout": "a subscriber's full batch takes longer than its function's timeout",
    # preview environments
    "preview.prod_account": "a preview deploys where a prod-tier environment's stack lives (same account and region)",
}


@dataclass
class Finding:
    """One thing a command found. ``before``/``after`` are the structured values (None where absent)."""

    level: Level
    code: str
    subject: str
    live: str
    declared: str
    effect: str
    destructive: bool = False
    before: Any = None
    after: Any = None

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"finding code {self.code!r} is not in contract.findings.CODES")
        self.level = Level(self.level)

    def as_dict(self) -> dict[str, Any]:
        return finding_document(self)


def destructive(findings: list[Finding]) -> list[Finding]:
    """The findings a deploy gate stops on unless the user says yes."""
    return [f for f in findings if f.destructive and f.level is not Level.DRIFT]


def finding_document(finding: Any) -> dict[str, Any]:
    """A finding as ``--json`` prints it (a Finding, or a frozen copy of one with the same fields)."""
    return {
        "level": finding.level.value,
        "code": finding.code,
        "destructive": finding.destructive,
        "subject": finding.subject,
        "before": finding.before,
        "after": finding.after,
        "live": finding.live,
        "declared": finding.declared,
        "effect": finding.effect,
    }
