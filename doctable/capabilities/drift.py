"""Every capability, in the order the commands report them (preflight's findings follow ``REGISTRY``, reconcile's
drift follows ``DRIFTING``, then each subscriber's mapping: reconcile reads and repairs them apart, mapping by
mapping, doctable/capabilities/mapping.py), and drift: live settings changed out of band that CloudFormation will
not repair (it updates a property only when its template value changes), detected against the knobs the stack was
deployed with by each capability of ``DRIFTING``, and the service calls that restore them (``doctable
reconcile``). The registry and the drift across it are one module: the capabilities' one floor above them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contract.shape import mapping_shape, table_shape
from doctable.capabilities import kinesis, repairs, replicas, sources, table_options, table_security
from doctable.capabilities.borrowed import BORROWED
from doctable.capabilities.consumer import CONSUMER
from doctable.capabilities.kinesis import KINESIS
from doctable.capabilities.mapping import MAPPING, SUBSCRIBER_MAPPINGS, TAG_MAPPING, UPDATE_MAPPING
from doctable.capabilities.ownership import OWNERSHIP, TABLE_TAGS
from doctable.capabilities.readers import READERS
from doctable.capabilities.repairs import TTL
from doctable.capabilities.replicas import REPLICAS
from doctable.capabilities.table_options import TABLE_OPTIONS
from doctable.capabilities.table_security import TABLE_SECURITY
from doctable.capabilities.table_shape import TABLE_SHAPE

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from doctable.capabilities.protocol import Capability, Drift, Drifting, Observed
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment

# Those comparing the live table come first: preflight tells their drift apart before the others' findings.
REGISTRY: tuple[Capability, ...] = (
    OWNERSHIP,
    TABLE_SHAPE,
    TABLE_OPTIONS,
    TABLE_SECURITY,
    REPLICAS,
    MAPPING,
    KINESIS,
    CONSUMER,
    READERS,
    SUBSCRIBER_MAPPINGS,
    BORROWED,
)
# The table's own settings, then what streams from it, then the mapping reading it.
DRIFTING: tuple[Drifting, ...] = (TABLE_SHAPE, TABLE_OPTIONS, OWNERSHIP, TABLE_SECURITY, KINESIS, MAPPING)

# The order repairs run in: the rate-limited TTL change last, so a refusal leaves every other repair done.
REPAIR_ORDER = (
    TABLE_TAGS,
    repairs.UPDATE_TABLE,
    repairs.PITR_CALL,
    repairs.INSIGHTS_CALL,
    *table_security.CALLS,
    *kinesis.CALLS,
    UPDATE_MAPPING,
    TAG_MAPPING,
    TTL,
)


def detect(observed: Observed) -> list[Drift]:
    """Every drift of the deployed configuration (``observed.deployed``) on the stack's live table and what
    hangs off it, capability by capability, then each replica region's (a global table's)."""
    found = [found for capability in DRIFTING for found in capability.drift(observed)]
    return found + replicas.replica_drifts(observed)


def changed_by_deploy(prop: str, deployed: DocTableConfig, target: DocTableConfig) -> bool:
    """Whether a deploy from ``deployed`` to ``target`` rewrites ``prop`` (then CloudFormation sets it, and its
    live value is the deploy's business, not drift)."""
    replica = replicas.split_prop(prop)
    if replica is not None:  # a replica's option: the deploy sets it when it sets the home table's
        region, base = replica
        gone = region not in deployed.replicas or region not in target.replicas
        return gone or changed_by_deploy(base, deployed, target)
    if prop.startswith("table-tag:") or prop.startswith("mapping-tag:"):
        key = prop.split(":", 1)[1]
        return deployed.tags().get(key) != target.tags().get(key)
    if prop.startswith("mapping:"):
        before, after = mapping_shape(deployed), mapping_shape(target)
        if before is None or after is None or before.starting_position != after.starting_position:
            return True  # the mapping goes or is replaced
        if (deployed.stream, deployed.consumer) != (target.stream, target.consumer):
            return True
        if sources.source_text(deployed) != sources.source_text(target):
            return True  # the mapping moves to another source: a new mapping
        name = prop.split(":", 1)[1]
        return before.live_fields().get(name) != after.live_fields().get(name)
    if prop.startswith("kinesis:"):
        return kinesis.changed_by_deploy(deployed, target)
    if prop in table_security.PROPS:
        return table_security.changed_by_deploy(prop, deployed, target)
    before_table, after_table = table_shape(deployed), table_shape(target)
    if prop.startswith("index:"):
        name = prop.split(":", 1)[1]
        return before_table.index(name) != after_table.index(name)
    if prop == "ttl":
        return before_table.ttl_attribute != after_table.ttl_attribute
    if prop == "pitr":
        return before_table.pitr != after_table.pitr
    if prop == "deletion_protection":
        return before_table.deletion_protection != after_table.deletion_protection
    return table_options.changed_by_deploy(prop, before_table, after_table)


# ---------------------------------------------------------------------------------------------- repairs
@dataclass
class Repair:
    """One service call restoring one or more drifted properties (in ``region``: a replica's; None: at home)."""

    op: str
    params: dict[str, Any]
    subjects: list[str]
    region: str | None = None


def plan_repairs(drifts: list[Drift]) -> list[Repair]:
    """The repairable drifts merged into one call per operation and region, in REPAIR_ORDER (each call at home
    before the replicas', in the order the drifts name their regions)."""
    repairs: dict[tuple[str, str | None], Repair] = {}
    for drift in drifts:
        if drift.op is None:
            continue
        repair = repairs.setdefault((drift.op, drift.region), Repair(drift.op, {}, [], drift.region))
        repair.params.update(drift.params)
        repair.subjects.append(drift.subject)
    regions = list(dict.fromkeys([None, *(region for _, region in repairs)]))
    return [
        repairs[key] for key in sorted(repairs, key=lambda k: (REPAIR_ORDER.index(k[0]), regions.index(k[1])))
    ]


def apply_repair(aws: Aws, deployment: Deployment, table: dict[str, Any], repair: Repair) -> None:
    """Make the call, in the replica's region or through the first capability that makes it; ClientErrors
    propagate (the caller words them)."""
    if repair.region is not None:
        replicas.apply(aws.in_region(repair.region), table["TableName"], repair.op, repair.params)
        return
    owner = next(c for c in DRIFTING if repair.op in c.calls)
    owner.apply(aws, deployment, table, repair.op, repair.params)
