"""The calls that restore a live table's settings (reconcile's repairs, a replica's too): their names as the
findings and drift rows spell them, and the one function that makes each; and those restoring a subscriber's
mapping, one call per mapping and operation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

UPDATE_TABLE, PITR_CALL, INSIGHTS_CALL = "UpdateTable", "UpdateContinuousBackups", "UpdateContributorInsights"
# A mapping's repairs: the consumer's (doctable/capabilities/mapping.py) and each subscriber's (below).
UPDATE_MAPPING, TAG_MAPPING = "UpdateEventSourceMapping", "TagResource (mapping)"
TTL = "UpdateTimeToLive"  # the repair of TTL; PITR and deletion protection share UpdateContinuousBackups/UpdateTable


def period_text(days: int | None) -> str:
    """A PITR recovery period as the rows show it."""
    return "no PITR" if days is None else f"{days} days"


def restore_setting(ddb: Any, name: str, call: str, params: dict[str, Any]) -> None:
    """One repair call on the table ``name`` through the DynamoDB client ``ddb`` (the home table's or, for a
    replica's drift, the client of its region); ClientErrors propagate."""
    if call == TTL:
        ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=params)
    elif call == PITR_CALL:
        ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification=params)
    elif call == UPDATE_TABLE:
        ddb.update_table(TableName=name, **params)
    else:  # pragma: no cover - calls only
        raise ValueError(call)


# ------------------------------------------------------------------------------ a subscriber's mapping
class MappingDrift(Protocol):
    """What a subscriber's mapping drift gives its repair (doctable/capabilities/mapping.py SubscriberDrift)."""

    subscriber: str
    uuid: str
    subject: str
    op: str | None
    params: dict[str, Any]


@dataclass
class MappingRepair:
    """One call restoring subscriber ``subscriber``'s mapping ``uuid``: ``op`` with ``params``, for the drifted
    ``subjects``."""

    subscriber: str
    uuid: str
    op: str
    params: dict[str, Any]
    subjects: list[str]


def plan_mapping_repairs(drifts: Sequence[MappingDrift]) -> list[MappingRepair]:
    """The repairable drifts merged into one call per mapping and operation: mapping by mapping (in the drifts'
    order), its settings (enabled, filter, batching...) before its tags."""
    repairs: dict[tuple[str, str], MappingRepair] = {}
    for drift in drifts:
        if drift.op is None:
            continue
        key = (drift.uuid, drift.op)
        repair = repairs.setdefault(key, MappingRepair(drift.subscriber, drift.uuid, drift.op, {}, []))
        repair.params.update(drift.params)
        repair.subjects.append(drift.subject)
    uuids = list(dict.fromkeys(uuid for uuid, _ in repairs))
    order = (UPDATE_MAPPING, TAG_MAPPING)
    return [repairs[key] for key in sorted(repairs, key=lambda k: (uuids.index(k[0]), order.index(k[1])))]


def restore_mapping(lam: Any, repair: MappingRepair) -> None:
    """One repair call through the Lambda client ``lam``; ClientErrors propagate."""
    if repair.op == UPDATE_MAPPING:
        lam.update_event_source_mapping(UUID=repair.uuid, **repair.params)
    elif repair.op == TAG_MAPPING:
        arn = lam.get_event_source_mapping(UUID=repair.uuid)["EventSourceMappingArn"]
        lam.tag_resource(Resource=arn, Tags=repair.params)
    else:  # pragma: no cover - calls only
        raise ValueError(repair.op)
