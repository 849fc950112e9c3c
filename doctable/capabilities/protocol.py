"""What every capability (the table's shape, options and security, its ownership, the mapping, Kinesis, the
consumer, what is borrowed) reads from one look at a deployment, and the protocol each one implements: the
findings of a deploy of the target, and where it has them, the drift and the calls that restore it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from botocore.exceptions import ClientError

from contract import names
from contract.shape import GLOBAL_TABLE_TYPE, TABLE_TYPE
from doctable.core.answers import call_or_none, error_code
from doctable.core.live import pitr_status

if TYPE_CHECKING:
    from contract.findings import Finding
    from contract.knobs import DocTableConfig
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment

# The resource types a stack's table has: a single-region table, or a global table (the same name in every region).
TABLE_TYPES = (TABLE_TYPE, GLOBAL_TABLE_TYPE)
T = TypeVar("T")


def stack_physical_ids(aws: Aws, deployment: Deployment) -> dict[str, set[str]]:
    """resource type -> physical ids of the stack's resources (empty when the stack does not exist)."""
    found: dict[str, set[str]] = {}
    if not deployment.exists:
        return found
    paginator = aws.client("cloudformation").get_paginator("list_stack_resources")
    for page in paginator.paginate(StackName=deployment.config.stack_name):
        for resource in page.get("StackResourceSummaries", []):
            if resource.get("PhysicalResourceId"):
                found.setdefault(resource["ResourceType"], set()).add(resource["PhysicalResourceId"])
    return found


def replica_stack(aws: Aws, stack_name: str) -> dict[str, Any] | None:
    """DescribeStacks' answer for ``stack_name`` in ``aws``'s region; None when it does not exist."""
    try:
        stacks = aws.client("cloudformation").describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        if error_code(exc) == "ValidationError" and "does not exist" in str(exc):
            return None
        raise
    live = [s for s in stacks if s.get("StackStatus") != "DELETE_COMPLETE"]
    return dict(live[0]) if live else None


def replica_table(observed: Observed, region: str) -> dict[str, Any] | None:
    """DescribeTable's ``Table`` of the replica in ``region`` (None: no replica there), read once per observation
    (the replica's drift and the readers of its stream share it)."""

    def read() -> dict[str, Any] | None:
        ddb = observed.aws.in_region(region).client("dynamodb")
        found = call_or_none(ddb.describe_table, TableName=observed.live_table["TableName"])
        return dict(found["Table"]) if found else None

    return observed.once(f"replica-table:{region}", read)


def stack_table_type(found: dict[str, set[str]], name: str) -> str | None:
    """The resource type under which the stack lists the table ``name`` (``found``: ``stack_physical_ids``'s
    answer); None when the stack does not list it."""
    return next((type_ for type_ in TABLE_TYPES if name in found.get(type_, set())), None)


def stack_table_ids(aws: Aws, deployment: Deployment) -> set[str]:
    """The physical ids (table names) of the stack's tables, single-region or global."""
    found = stack_physical_ids(aws, deployment)
    return set().union(*(found.get(type_, set()) for type_ in TABLE_TYPES))


@dataclass(frozen=True)
class Observed:
    """One look at a deployment and its live table, shared by every capability of one command run."""

    aws: Aws
    deployment: Deployment
    table: dict[str, Any] | None  # DescribeTable's Table; None when there is none
    in_stack: bool  # the stack's resources list the table
    ttl: dict[str, Any]  # DescribeTimeToLive's TimeToLiveDescription ({} unless ``compared``)
    backups: dict[str, Any]  # DescribeContinuousBackups' reply ({} unless ``compared``)
    table_type: str | None = None  # the stack's resource type of the table (TABLE_TYPES); None: not listed
    _reads: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def compared(self) -> bool:
        """The table exists and is the stack's: its live settings are compared with the knobs."""
        return self.table is not None and self.in_stack

    @property
    def live_table(self) -> dict[str, Any]:
        """The table's description, for capabilities that run only when it is ``compared``."""
        assert self.table is not None, "no live table"
        return self.table

    @property
    def deployed(self) -> DocTableConfig:
        return self.deployment.config

    @property
    def target(self) -> DocTableConfig:
        return self.deployment.target

    @property
    def pitr(self) -> str:
        return pitr_status(self.backups)

    @property
    def stack_key(self) -> str | None:
        """The KMS key the stack created (its output), None without one."""
        return self.deployment.out(names.OUT_KMS_KEY_ARN)

    def once(self, key: str, read: Callable[[], T]) -> T:
        """``read()``'s answer, read at most once per observation (findings and drift share it)."""
        if key not in self._reads:
            self._reads[key] = read()
        value: T = self._reads[key]
        return value


def observe_table(
    aws: Aws,
    deployment: Deployment,
    table: dict[str, Any] | None,
    *,
    in_stack: bool = True,
    table_type: str | None = None,
) -> Observed:
    """The observation of an already described table: its TTL and PITR are read when it is the stack's.
    ``table_type`` None with ``in_stack``: the type the table's description implies (a global table version)."""
    if table is None or not in_stack:
        return Observed(aws, deployment, table, in_stack, {}, {})
    if table_type is None:
        table_type = GLOBAL_TABLE_TYPE if table.get("GlobalTableVersion") else TABLE_TYPE
    ddb = aws.client("dynamodb")
    ttl = ddb.describe_time_to_live(TableName=table["TableName"]).get("TimeToLiveDescription", {})
    backups = ddb.describe_continuous_backups(TableName=table["TableName"])
    return Observed(aws, deployment, table, in_stack, ttl, backups, table_type)


def observe(aws: Aws, deployment: Deployment) -> Observed:
    """Describe the target's table, whether the stack holds it (and as which type), and when it does, its TTL and
    PITR."""
    name = deployment.target.table_name
    table = (call_or_none(aws.client("dynamodb").describe_table, TableName=name) or {}).get("Table")
    table_type = stack_table_type(stack_physical_ids(aws, deployment), name)
    return observe_table(aws, deployment, table, in_stack=table_type is not None, table_type=table_type)


@dataclass
class Drift:
    """One property whose live value differs from the declared one.

    ``prop`` names the property for comparison with a deploy's changes (``ttl``, ``mapping:BatchSize``,
    ``table-tag:Owner``); ``op``/``params`` are the repair (op None: reconcile cannot repair it; ``how`` says
    what can); ``region`` is the replica region it was read in and is repaired in (None: the home table's).
    """

    prop: str
    subject: str
    live: str
    declared: str
    op: str | None
    params: dict[str, Any] = field(default_factory=dict)
    how: str = ""
    region: str | None = None

    @property
    def action(self) -> str:
        if self.op is None:
            return f"not repairable by reconcile: {self.how}"
        shown = ", ".join(f"{k}={v}" for k, v in self.params.items())
        where = f" in {self.region}:" if self.region else ""
        return f"{self.op}{where} {shown}"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "action": self.action}


class Capability(Protocol):
    """One part of a deployment: what a deploy of the target changes of it, as findings."""

    @property
    def name(self) -> str: ...

    @property
    def compares_live(self) -> bool:
        """Its findings compare the live table with the target: one may be drift rather than the deploy's."""
        ...

    @property
    def codes(self) -> frozenset[str]:
        """Every finding code it may emit (each one in ``contract.findings.CODES``)."""
        ...

    def findings(self, observed: Observed) -> list[Finding]: ...


class Drifting(Capability, Protocol):
    """A capability whose live settings can drift from the deployed knobs, and the calls that restore them."""

    @property
    def calls(self) -> tuple[str, ...]:
        """The service calls ``apply`` makes (a repair's ``op``)."""
        ...

    def drift(self, observed: Observed) -> list[Drift]:
        """Each live setting that differs from the deployed knobs (``observed.deployed``)."""
        ...

    def apply(
        self, aws: Aws, deployment: Deployment, table: dict[str, Any], call: str, params: dict[str, Any]
    ) -> None:
        """Make ``call``; ClientErrors propagate."""
        ...


def drift_text(value: object) -> str:
    """A drift's value as one word: booleans in lower case, lists in brackets."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)
