"""What a deploy does to the event-source mapping: created, deleted, replaced or updated in place, found by
comparing the mapping the deployed knobs declare with the one the target knobs declare (``contract.shape``); and
the live mapping's drift from the deployed knobs with the calls that restore it (reconcile)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from contract import names
from contract.findings import Finding, Level
from contract.knobs import STARTING_LATEST, STARTING_POSITION_CFN, DocTableConfig
from contract.shape import MappingShape, mapping_shape, subscriber_mapping_shape
from doctable.capabilities.protocol import Drift, Observed, drift_text
from doctable.capabilities.repairs import TAG_MAPPING, UPDATE_MAPPING  # what each repair calls
from doctable.capabilities.sources import source_text, switch_text
from doctable.core.answers import call_or_none
from doctable.core.live import (
    DESTINATION_FIELD,
    ENABLED_FIELD,
    FILTER_FIELD,
    METRICS_FIELD,
    mapping_differences,
    s3_bucket_arn,
    setting_text,
)

if TYPE_CHECKING:
    from contract.subscribers import SubscriberSpec
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment

LATEST = STARTING_POSITION_CFN[STARTING_LATEST]

MAPPING_SUBJECT = "mapping"
CREATED, DELETED, REPLACED, UPDATED = (
    "mapping.created",
    "mapping.deleted",
    "mapping.replaced",
    "mapping.updated",
)
MAPPING_PARAMETERS = {  # GetEventSourceMapping field -> UpdateEventSourceMapping parameter
    "BatchSize": "BatchSize",
    "MaximumBatchingWindowInSeconds": "MaximumBatchingWindowInSeconds",
    "MaximumRetryAttempts": "MaximumRetryAttempts",
    "MaximumRecordAgeInSeconds": "MaximumRecordAgeInSeconds",
    "ParallelizationFactor": "ParallelizationFactor",
    "BisectBatchOnFunctionError": "BisectBatchOnFunctionError",
    "FunctionResponseTypes": "FunctionResponseTypes",
    "FilterCriteria": "FilterCriteria",
    "MetricsConfig": "MetricsConfig",
}
# What UpdateEventSourceMapping takes to remove a setting the knobs leave unset (AWS documents {} for filters).
MAPPING_CLEARED: dict[str, Any] = {"FilterCriteria": {}, "MetricsConfig": {"Metrics": []}}


@dataclass(frozen=True)
class MappingChange:
    """``before``/``after``: the starting positions (None when absent), or the in-place fields that change."""

    code: str  # CREATED | DELETED | REPLACED | UPDATED
    live: str
    declared: str
    effect: str
    before: Any = None
    after: Any = None

    @property
    def destructive(self) -> bool:
        # Deleted: nothing consumes the stream. Replaced toward LATEST: records the old mapping had not read,
        # and those written before the new one settles, are never delivered.
        return self.code == DELETED or (self.code == REPLACED and self.after == LATEST)

    def finding(self) -> Finding:
        return Finding(
            Level.CHANGE, self.code, MAPPING_SUBJECT, self.live, self.declared, self.effect,
            self.destructive, self.before, self.after,
        )  # fmt: skip


def _target_function(config: DocTableConfig) -> str:
    """What the mapping invokes: a borrowed ARN, or the built-in consumer's alias named after the position."""
    return config.borrowed_consumer_arn or f"built-in consumer ({config.starting_position_cfn})"


def _on(config: DocTableConfig, shown: bool) -> str:
    return f" on {source_text(config)}" if shown else ""


def mapping_change(deployed: DocTableConfig, target: DocTableConfig) -> MappingChange | None:
    """The deploy's change to the mapping (None: it leaves the mapping as it is)."""
    before, after = mapping_shape(deployed), mapping_shape(target)
    if before is None and after is None:
        return None
    if before is None:
        assert after is not None
        return MappingChange(
            CREATED, "absent", after.starting_position,
            f"creates the event-source mapping: it reads the {source_text(target)} from {after.starting_position}",
            None, after.starting_position,
        )  # fmt: skip
    if after is None:
        return MappingChange(
            DELETED, before.starting_position, "absent",
            f"deletes the event-source mapping: the {source_text(deployed)} is no longer consumed",
            before.starting_position, None,
        )  # fmt: skip
    # The source: the DynamoDB stream (a view-type change makes a new one) or the Kinesis data stream.
    source_changes = source_text(deployed) != source_text(target)
    if (
        before.starting_position != after.starting_position
        or _target_function(deployed) != _target_function(target)
        or source_changes
    ):
        if deployed.reads_kinesis != target.reads_kinesis or (source_changes and target.reads_kinesis):
            records = switch_text(deployed, target, after.starting_position, LATEST)
        elif after.starting_position == LATEST:
            records = "records written before the new poller settles may be skipped"
        else:
            records = "the new one reads the stream from its start (records are re-delivered; the consumer tolerates it)"
        moved = f" from {source_text(deployed)} to {source_text(target)}" if source_changes else ""
        return MappingChange(
            REPLACED, f"{before.starting_position} → {_target_function(deployed)}{_on(deployed, source_changes)}",
            f"{after.starting_position} → {_target_function(target)}{_on(target, source_changes)}",
            f"replaces the event-source mapping{moved} (a new one is created first, then the old one deleted; no "
            f"409: the built-in consumer's mapping targets an alias per position): {records}",
            before.starting_position, after.starting_position,
        )  # fmt: skip
    was, will = before.live_fields(), after.live_fields()
    changed = [name for name in will if was[name] != will[name]]
    if not changed:
        return None
    return MappingChange(
        UPDATED,
        ", ".join(f"{name} {was[name]}" for name in changed),
        ", ".join(f"{name} {will[name]}" for name in changed),
        "updates the event-source mapping in place (same UUID, no re-read)",
        {name: was[name] for name in changed},
        {name: will[name] for name in changed},
    )


# --------------------------------------------------------------------------------------- drift, repairs
def live_mapping_tags(aws: Aws, mapping: dict[str, Any], uuid: str) -> dict[str, str]:
    """The live mapping's tags (ListTags), read on its ARN (``mapping``: GetEventSourceMapping's reply; without
    the ARN, the one its ``uuid`` makes)."""
    arn = mapping.get("EventSourceMappingArn") or (
        f"arn:{aws.partition}:lambda:{aws.region}:{aws.account}:event-source-mapping:{uuid}"
    )
    tags: dict[str, str] = aws.client("lambda").list_tags(Resource=arn).get("Tags", {})
    return tags


def _difference_drift(name: str, live: Any, want: Any, destination: str | None) -> Drift:
    """The drift of one of ``mapping_differences``: the enabled state, the on-failure destination, a setting."""
    if name == ENABLED_FIELD:
        return Drift(
            "mapping:Enabled",
            "mapping state",
            drift_text(live),
            drift_text(want),
            UPDATE_MAPPING,
            {"Enabled": True},
        )
    if name == DESTINATION_FIELD:
        params: dict[str, Any] = {"DestinationConfig": {"OnFailure": {"Destination": destination}}}
        op = UPDATE_MAPPING if destination else None
        how = f"the stack has no {names.OUT_FAILURE_BUCKET} output"
        return Drift(
            f"mapping:{name}",
            "mapping on-failure destination",
            drift_text(live),
            drift_text(want),
            op,
            params,
            how,
        )
    return Drift(
        f"mapping:{name}",
        f"mapping {name}",
        drift_text(live) if name not in MAPPING_CLEARED else setting_text(name, live),
        drift_text(want) if name not in MAPPING_CLEARED else setting_text(name, want),
        UPDATE_MAPPING,
        {MAPPING_PARAMETERS[name]: MAPPING_CLEARED.get(name) if want is None else want},
    )


def _position_drift(mapping: dict[str, Any], shape: MappingShape) -> list[Drift]:
    """The live starting position against the declared one (no repair: it is fixed at creation)."""
    position = mapping.get("StartingPosition")
    if not position or position == shape.starting_position:
        return []
    how = "a mapping's starting position is fixed at creation: redeploy with a starting_position change"
    return [
        Drift(
            "mapping:StartingPosition",
            "mapping StartingPosition",
            position,
            shape.starting_position,
            None,
            how=how,
        )
    ]


def _tag_drifts(config: DocTableConfig, tags: dict[str, str]) -> list[Drift]:
    """Each of the knobs' tags the live mapping lacks or holds another value of."""
    return [
        Drift(
            f"mapping-tag:{key}",
            f"mapping tag {key}",
            tags.get(key, "absent"),
            value,
            TAG_MAPPING,
            {key: value},
        )
        for key, value in config.tags().items()
        if tags.get(key) != value
    ]


def mapping_drift(aws: Aws, deployment: Deployment) -> list[Drift]:
    """The mapping's settings, enabled state, on-failure destination and tags against the deployed knobs."""
    config = deployment.config
    shape = mapping_shape(config)
    uuid = deployment.out(names.OUT_MAPPING_UUID)
    if shape is None or not uuid:
        return []
    mapping = call_or_none(aws.client("lambda").get_event_source_mapping, UUID=uuid)
    if mapping is None:
        how = "CloudFormation does not re-create a resource deleted behind it: tear down and deploy again"
        return [Drift("mapping:present", "mapping", "absent", uuid, None, how=how)]
    bucket = deployment.out(names.OUT_FAILURE_BUCKET)
    destination = s3_bucket_arn(aws.partition, bucket) if bucket else None
    drifts = [
        _difference_drift(name, live, want, destination)
        for name, live, want in mapping_differences(mapping, shape, destination)
    ]
    drifts += _position_drift(mapping, shape)
    return drifts + _tag_drifts(config, live_mapping_tags(aws, mapping, uuid))


# ------------------------------------------------------------------------------------------ capability
# ------------------------------------------------------------------ the mapping's event filter and metrics
# What changing the mapping's event filter (``events``) or its metrics (``mapping_metrics``) on a live mapping does
# and costs: preflight's lines for the two knobs, read from the shapes the deployed and target knobs declare.
def option_findings(deployed: DocTableConfig, target: DocTableConfig) -> list[Finding]:
    """Preflight's CHANGE findings for each of the two settings the deploy changes in place (before/after: the
    knobs' values)."""
    before, after = mapping_shape(deployed), mapping_shape(target)
    if before is None or after is None:
        return []  # the mapping is created or deleted: the mapping line says so
    found = []
    if before.filter_patterns != after.filter_patterns:
        live, want = (
            setting_text(FILTER_FIELD, before.filter_criteria),
            setting_text(FILTER_FIELD, after.filter_criteria),
        )
        if after.filter_patterns:
            effect = (
                f"events={target.events}: applies to records polled after the update (a batch already read is "
                "delivered whole); then INSERTs and MODIFYs whose old image lists no blobs are dropped by Lambda, "
                "not retried and not billed as invocations, and no proof line covers them; verify's nudge becomes "
                "a delete"
            )
        else:
            effect = (
                f"events={target.events}: every record polled after the update is delivered (more invocations); "
                "records dropped while the filter was on are not re-read"
            )
        found.append(
            Finding(
                Level.CHANGE, "mapping.events_changed", "mapping events", live, want, effect,
                before=deployed.events, after=target.events,
            )
        )  # fmt: skip
    if before.metrics != after.metrics:
        live, want = (
            setting_text(METRICS_FIELD, before.metrics_config),
            setting_text(METRICS_FIELD, after.metrics_config),
        )
        if after.metrics:
            effect = (
                "the mapping publishes its EventCount metrics (polled, filtered out, invoked, failed to invoke, "
                "dropped, sent to the failure bucket) per EventSourceMappingUUID, charged as CloudWatch metrics, "
                "and the stack adds the DroppedEvents alarm; in place, no re-read"
            )
        else:
            effect = (
                "the EventCount metrics stop (and their CloudWatch charge) and the DroppedEvents alarm is removed: "
                "records lost because the failure bucket refused them go unnoticed; in place, no re-read"
            )
        found.append(
            Finding(
                Level.CHANGE, "mapping.metrics_changed", "mapping metrics", live, want, effect,
                before=deployed.mapping_metrics, after=target.mapping_metrics,
            )
        )  # fmt: skip
    return found


class MappingCapability:
    """The event-source mapping: findings of a change against the recorded knobs (its starting position and
    target, its settings, its filter and metrics); the live mapping's drift."""

    name = "mapping"
    compares_live = False
    codes = frozenset(
        {CREATED, DELETED, REPLACED, UPDATED, "mapping.events_changed", "mapping.metrics_changed"}
    )
    calls = (UPDATE_MAPPING, TAG_MAPPING)

    def findings(self, observed: Observed) -> list[Finding]:
        if not observed.deployment.recorded:
            return []
        change = mapping_change(observed.deployed, observed.target)
        found = [change.finding()] if change is not None else []
        return found + option_findings(observed.deployed, observed.target)

    def drift(self, observed: Observed) -> list[Drift]:
        return mapping_drift(observed.aws, observed.deployment)

    def apply(
        self, aws: Aws, deployment: Deployment, table: dict[str, Any], call: str, params: dict[str, Any]
    ) -> None:
        lam, uuid = aws.client("lambda"), deployment.out(names.OUT_MAPPING_UUID)
        if call == UPDATE_MAPPING:
            lam.update_event_source_mapping(UUID=uuid, **params)
        elif call == TAG_MAPPING:
            mapping = lam.get_event_source_mapping(UUID=uuid)
            lam.tag_resource(Resource=mapping["EventSourceMappingArn"], Tags=params)
        else:  # pragma: no cover - calls only
            raise ValueError(call)


MAPPING = MappingCapability()


# ------------------------------------------------------------------------ a subscriber's mapping, its drift
# A team's subscriber (contract/subscribers.py) has its own mapping (infra/compute/subscribers.py): preflight finds it
# changed behind the stack (each finding's code says how), reconcile restores it (doctable/capabilities/repairs.py).
SUB_MISSING, SUB_DISABLED = "subscriber.mapping_missing", "subscriber.mapping_disabled"
SUB_FILTER, SUB_SETTING = "subscriber.filter_drifted", "subscriber.mapping_drifted"
SUB_TAGS = "subscriber.mapping_tags_drifted"
# States a mapping passes through on its own: neither enabled nor disabled by hand.
IN_TRANSITION = ("Creating", "Updating")


@dataclass
class SubscriberDrift(Drift):
    """A drift of subscriber ``subscriber``'s mapping ``uuid``, with the code of its preflight finding."""

    code: str = SUB_SETTING
    subscriber: str = ""
    uuid: str = ""

    def finding(self) -> Finding:
        repair = (
            "`doctable reconcile --apply` restores it"
            if self.op
            else f"reconcile cannot restore it: {self.how}"
        )
        effect = (
            "changed behind the stack: the deploy will NOT repair it (CloudFormation updates only what its "
            f"template changes); {repair}"
        )
        return Finding(
            Level.DRIFT, self.code, self.subject, self.live, self.declared, effect,
            before=self.live, after=self.declared,
        )  # fmt: skip


def subscriber_shape(config: DocTableConfig, spec: SubscriberSpec) -> MappingShape:
    """The mapping infra/compute/subscribers.py declares for ``spec`` (contract/shape.py)."""
    return subscriber_mapping_shape(config, spec)


def _subscriber_code(prop: str) -> str:
    if prop == "mapping:Enabled":  # _difference_drift's prop of the enabled state
        return SUB_DISABLED
    if prop == f"mapping:{FILTER_FIELD}":
        return SUB_FILTER
    return SUB_TAGS if prop.startswith("mapping-tag:") else SUB_SETTING


def _of_subscriber(drift: Drift, name: str, uuid: str) -> SubscriberDrift:
    """One of the consumer mapping's drift rows, as subscriber ``name``'s (its prop, subject and code)."""
    kind, _, what = drift.prop.partition(":")
    how = drift.how
    if drift.op is None and drift.prop == f"mapping:{DESTINATION_FIELD}":
        output = names.subscriber_output(name, names.OUT_SUBSCRIBER_FAILURE_BUCKET)
        how = f"the stack has no {output} output"
    return SubscriberDrift(
        f"subscriber{kind.removeprefix('mapping')}:{name}:{what}", f"subscriber {name} {drift.subject}",
        drift.live, drift.declared, drift.op, drift.params, how,
        code=_subscriber_code(drift.prop), subscriber=name, uuid=uuid,
    )  # fmt: skip


def one_subscriber_drift(aws: Aws, deployment: Deployment, spec: SubscriberSpec) -> list[SubscriberDrift]:
    """Subscriber ``spec``'s live mapping against what the deployed knobs declare: present, enabled, its filter,
    settings, on-failure destination (its own failure bucket) and tags. None before its outputs exist."""
    name = spec.name
    uuid = deployment.out(names.subscriber_output(name, names.OUT_SUBSCRIBER_MAPPING))
    if not uuid:
        return []
    mapping = call_or_none(aws.client("lambda").get_event_source_mapping, UUID=uuid)
    if mapping is None:
        how = (
            "CloudFormation re-creates a resource deleted behind it only when its template replaces it: deploy "
            f"with subscriber {name}'s starting_position changed (a new mapping), or without it and then with it"
        )
        gone = Drift("mapping:present", "mapping", "absent", uuid, None, how=how)
        return [replace(_of_subscriber(gone, name, uuid), code=SUB_MISSING)]
    shape = subscriber_shape(deployment.config, spec)
    bucket = deployment.out(names.subscriber_output(name, names.OUT_SUBSCRIBER_FAILURE_BUCKET))
    destination = s3_bucket_arn(aws.partition, bucket) if bucket else None
    drifts = [
        _difference_drift(field, live, want, destination)
        for field, live, want in mapping_differences(mapping, shape, destination)
        if not (field == ENABLED_FIELD and live in IN_TRANSITION)
    ]
    drifts += _position_drift(mapping, shape)
    drifts += _tag_drifts(deployment.config, live_mapping_tags(aws, mapping, uuid))
    return [_of_subscriber(drift, name, uuid) for drift in drifts]


def subscriber_drift(aws: Aws, deployment: Deployment) -> list[SubscriberDrift]:
    """Every deployed subscriber's mapping drift, subscriber by subscriber (their declared order)."""
    return [d for spec in deployment.config.subscribers for d in one_subscriber_drift(aws, deployment, spec)]


def rewritten_by_deploy(drift: SubscriberDrift, deployed: DocTableConfig, target: DocTableConfig) -> bool:
    """A deploy from ``deployed`` to ``target`` sets what drifted (then it is the deploy's change, not drift): the
    subscriber goes or gets a new mapping, or its template value of the drifted setting or tag changes."""
    before = next((s for s in deployed.subscribers if s.name == drift.subscriber), None)
    after = next((s for s in target.subscribers if s.name == drift.subscriber), None)
    if before is None or after is None:
        return True
    was, will = subscriber_shape(deployed, before), subscriber_shape(target, after)
    if (before.source, was.starting_position) != (after.source, will.starting_position):
        return True  # a new mapping replaces the drifted one
    what = drift.prop.split(":", 2)[2]
    if drift.prop.startswith("subscriber-tag:"):
        return deployed.tags().get(what) != target.tags().get(what)
    fields = was.live_fields()
    return what in fields and fields[what] != will.live_fields()[what]


class SubscriberMappingsCapability:
    """Each subscriber's mapping: its drift from the deployed declaration, as preflight findings with their own
    codes (reconcile restores it; not in ``DRIFTING``: each subscriber's repairs call its own mapping)."""

    name = "subscriber mappings"
    compares_live = False
    codes = frozenset({SUB_MISSING, SUB_DISABLED, SUB_FILTER, SUB_SETTING, SUB_TAGS})

    def findings(self, observed: Observed) -> list[Finding]:
        deployment = observed.deployment
        if not (deployment.exists and deployment.recorded):
            return []
        drifts = observed.once("subscriber-drift", lambda: subscriber_drift(observed.aws, deployment))
        return [d.finding() for d in drifts if not rewritten_by_deploy(d, observed.deployed, observed.target)]


SUBSCRIBER_MAPPINGS = SubscriberMappingsCapability()
