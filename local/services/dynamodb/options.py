"""DynamoDB table options moto 5.2.5 drops or never refuses: table class, on-demand maximum throughput, warm
throughput, the PITR recovery period and contributor insights, through the API and CloudFormation alike.

- CreateTable/UpdateTable and AWS::DynamoDB::Table keep ``TableClass`` (DescribeTable's ``TableClassSummary``)
  and ``OnDemandThroughput`` (DescribeTable reports -1 for a direction without a cap, as AWS does); a table
  class change counts against AWS's limit of two per 30 days (``DOCTABLE_LOCAL_TABLE_CLASS_CHANGES``);
- ``WarmThroughput`` is applied on a CloudFormation update too; lowering it is refused (DynamoDB only raises it);
- ``RecoveryPeriodInDays`` outside 1..35 is refused; a template enabling PITR without a period gets AWS's 35;
- Describe/Update/ListContributorInsights, which moto lacks: a switch takes effect at once (AWS: ENABLING, then
  ENABLED), with the mode and the four rule names AWS reports; ContributorInsightsSpecification in templates.

This module owns UpdateTable's handler and DescribeTable's ``Table.describe``: replicas.py's and security.py's
parts of UpdateTable are steps it calls first, in that order (a global table's ReplicaUpdates can answer the
request alone); indexes.py's and replicas.py's parts of a description are steps it calls after its own.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from typing import Any

from local import clock
from local.patching import Patches, Target, replace, truthy
from local.services.dynamodb import index_lifecycle as dynamodb_index_lifecycle
from local.services.dynamodb import indexes as dynamodb_indexes
from local.services.dynamodb import limit_exceeded, validation
from local.services.dynamodb import replicas as dynamodb_replicas
from local.services.dynamodb import security as dynamodb_security

CLASS_CHANGES_ENV = "DOCTABLE_LOCAL_TABLE_CLASS_CHANGES"  # class changes allowed per window (AWS: 2)
CLASS_WINDOW_SECONDS = 30 * 86_400
STANDARD = "STANDARD"
TABLE_CLASSES = (STANDARD, "STANDARD_INFREQUENT_ACCESS")
NO_CAP = -1
PITR_DAYS = (1, 35)
PITR_DEFAULT_DAYS = 35
INSIGHTS_MODES = ("ACCESSED_AND_THROTTLED_KEYS", "THROTTLED_KEYS")
CLASS_LIMIT = (
    "Subscriber limit exceeded: Table class can be updated at most {n} times in a 30-day trailing window "
    "for table: {table}"
)
WARM_LOWER = (
    "One or more parameter values were invalid: Requested {field} for WarmThroughput for table is lower than "
    "the current WarmThroughput {current}"
)
_LOCK = threading.Lock()

_TABLE = "moto.dynamodb.models.table"
_RESPONSES = "moto.dynamodb.responses"
PATCHES = Patches()


# --------------------------------------------------------------------------------------------- errors


def _constraint(field: str, value: object, rule: str) -> Exception:
    return validation(
        f"1 validation error detected: Value '{value}' at '{field}' failed to satisfy constraint: {rule}"
    )


# ---------------------------------------------------------------------------------- the options, applied
def set_table_class(table: Any, wanted: str | None) -> None:
    """TableClass as given (a change is counted against the 30-day limit); None leaves it."""
    if wanted is None:
        return
    if wanted not in TABLE_CLASSES:
        raise _constraint(
            "tableClass", wanted, f"Member must satisfy enum value set: [{', '.join(TABLE_CLASSES)}]"
        )
    current = getattr(table, "doctable_table_class", None)
    if current is None:
        table.doctable_table_class = wanted
        table.doctable_table_class_changes = []
        return
    if current == wanted:
        return
    with _LOCK:
        now = time.time()
        changes = [t for t in table.doctable_table_class_changes if now - t < CLASS_WINDOW_SECONDS]
        allowed = int(os.environ.get(CLASS_CHANGES_ENV, "2") or 2)
        if len(changes) >= allowed:
            raise limit_exceeded(CLASS_LIMIT.format(n=allowed, table=table.name))
        table.doctable_table_class = wanted
        table.doctable_table_class_changes = [*changes, now]
        table.doctable_table_class_updated = now


def set_on_demand(table: Any, wanted: dict[str, Any] | None, *, lift_when_absent: bool) -> None:
    """OnDemandThroughput: each direction >= 1, or -1 to lift its cap."""
    if wanted is None:
        if lift_when_absent:
            table.doctable_on_demand = None
        return
    current = dict(getattr(table, "doctable_on_demand", None) or {})
    for field in ("MaxReadRequestUnits", "MaxWriteRequestUnits"):
        if field not in wanted:
            continue
        value = int(wanted[field])
        if value != NO_CAP and value < 1:
            raise validation(
                f"One or more parameter values were invalid: {field} must be greater than or equal to 1, or -1 "
                "to remove the maximum"
            )
        if value == NO_CAP:
            current.pop(field, None)
        else:
            current[field] = value
    table.doctable_on_demand = current or None


def check_warm(table: Any, wanted: dict[str, Any] | None) -> None:
    """DynamoDB raises warm throughput by itself and never lowers it: a lower request is refused."""
    if not wanted:
        return
    current = table.warm_throughput or {}
    for field in ("ReadUnitsPerSecond", "WriteUnitsPerSecond"):
        if field in wanted and int(wanted[field]) < int(current.get(field, 0)):
            raise validation(WARM_LOWER.format(field=field, current=current.get(field)))


def set_warm(table: Any, wanted: dict[str, Any] | None) -> None:
    if not wanted:
        return
    check_warm(table, wanted)
    merged = {k: v for k, v in (table.warm_throughput or {}).items() if k != "Status"}
    merged.update(
        {k: int(v) for k, v in wanted.items() if k in ("ReadUnitsPerSecond", "WriteUnitsPerSecond")}
    )
    table.warm_throughput = {**merged, "Status": "ACTIVE"}


def rule_names(table: str, mode: str) -> list[str]:
    """The CloudWatch Contributor Insights rules DynamoDB manages for a table (per key, accessed/throttled)."""
    kinds = ["PKT", "SKT"] if mode == "THROTTLED_KEYS" else ["PKC", "SKC", "PKT", "SKT"]
    return [f"DynamoDBContributorInsights-{kind}-{table}-{int(time.time())}" for kind in kinds]


def set_insights(table: Any, enabled: bool, mode: str | None) -> None:
    if mode is not None and mode not in INSIGHTS_MODES:
        raise _constraint(
            "contributorInsightsMode",
            mode,
            f"Member must satisfy enum value set: [{', '.join(INSIGHTS_MODES)}]",
        )
    current = getattr(table, "doctable_insights", None) or {}
    if enabled:
        mode = mode or current.get("mode") or INSIGHTS_MODES[0]
        if current.get("status") == "ENABLED" and current.get("mode") == mode:
            return
        table.doctable_insights = {
            "status": "ENABLED",
            "mode": mode,
            "rules": rule_names(table.name, mode),
            "updated": time.time(),
        }
    elif current.get("status") == "ENABLED":
        table.doctable_insights = {"status": "DISABLED", "mode": current.get("mode"), "updated": time.time()}


def apply_template(table: Any, properties: dict[str, Any], *, creating: bool) -> None:
    """The options of an AWS::DynamoDB::Table's properties, on create and on update."""
    set_table_class(table, properties.get("TableClass") or (STANDARD if creating else None))
    caps = properties.get("OnDemandThroughput")
    if caps is not None:  # a template states the whole setting: a direction it leaves out has no cap
        caps = {field: caps.get(field, NO_CAP) for field in ("MaxReadRequestUnits", "MaxWriteRequestUnits")}
    set_on_demand(table, caps, lift_when_absent=not creating)
    if not creating:
        set_warm(table, properties.get("WarmThroughput"))
    spec = properties.get("ContributorInsightsSpecification")
    if spec is not None or not creating:
        spec = spec or {}
        set_insights(table, truthy(spec.get("Enabled")), spec.get("Mode"))


def pitr_period(pitr: dict[str, Any]) -> int:
    """A template's recovery period: the one given, else AWS's default."""
    return int(pitr.get("RecoveryPeriodInDays", PITR_DEFAULT_DAYS))


# ------------------------------------------------------------------------------------------- patches
@PATCHES.replace(Target(_TABLE, "Table.describe", ("self", "base_key")))
def describe(self: Any, base_key: str = "TableDescription") -> dict[str, Any]:
    """Table.describe, in steps: the indexes' status worked out from the clock (index_lifecycle.py); moto's
    description; the table's options (``describe_options``); its indexes (indexes.py); its replicas (replicas.py)."""
    dynamodb_index_lifecycle.settle(self)
    result: dict[str, Any] = PATCHES.original(describe)(self, base_key)
    describe_options(self, result[base_key])
    dynamodb_indexes.describe_indexes(self, result[base_key])
    dynamodb_replicas.describe_replicas(self, result, base_key)
    return result


def describe_options(self: Any, body: dict[str, Any]) -> None:
    """TableClassSummary, TableId, and an on-demand table's OnDemandThroughput (-1 for no cap), on moto's
    description."""
    table_class = getattr(self, "doctable_table_class", None)
    if table_class:
        summary: dict[str, Any] = {"TableClass": table_class}
        updated = getattr(self, "doctable_table_class_updated", None)
        if updated:
            summary["LastUpdateDateTime"] = updated
        body["TableClassSummary"] = summary
    if getattr(self, "doctable_table_id", None) is None:
        self.doctable_table_id = str(uuid.uuid4())
    body["TableId"] = self.doctable_table_id
    if self.billing_mode == "PAY_PER_REQUEST":
        summary = body.setdefault("BillingModeSummary", {"BillingMode": "PAY_PER_REQUEST"})
        # the table was made on demand, or switched to it (UpdateTable keeps the time it switched)
        since = getattr(self, "doctable_pay_per_request_since", None)
        summary["LastUpdateToPayPerRequestDateTime"] = since or body.get("CreationDateTime")
        caps = getattr(self, "doctable_on_demand", None) or {}
        body["OnDemandThroughput"] = {
            "MaxReadRequestUnits": caps.get("MaxReadRequestUnits", NO_CAP),
            "MaxWriteRequestUnits": caps.get("MaxWriteRequestUnits", NO_CAP),
        }


# What an UpdateTable must change, one at least (an empty list counts as absent), in AWS's words.
UPDATE_MEMBERS = ("ProvisionedThroughput", "BillingMode", "StreamSpecification", "GlobalSecondaryIndexUpdates",
                  "SSESpecification", "ReplicaUpdates", "MultiRegionConsistency", "GlobalTableWitnessUpdates",
                  "DeletionProtectionEnabled", "OnDemandThroughput", "WarmThroughput", "TableClass")  # fmt: skip
NOTHING_TO_UPDATE = (
    "At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates, "
    "SSESpecification, ReplicaUpdates, MultiAccountReplicaReady, ReplicaTransitRoleArn, MultiRegionConsistency, "
    "DeletionProtectionEnabled, OnDemandThroughput, WarmThroughput or TableClass is required"
)
# What DeleteTable's TableDescription leaves out of DescribeTable's: the table is going, its schema is not told.
_NOT_IN_DELETE = ("KeySchema", "AttributeDefinitions", "CreationDateTime", "GlobalSecondaryIndexes",
                  "LocalSecondaryIndexes")  # fmt: skip


@PATCHES.replace(Target(_RESPONSES, "DynamoHandler.delete_table", ("self",)))
def delete_table(self: Any) -> Any:
    """DeleteTable answers the table DELETING, without its key schema, attribute definitions, creation time or
    indexes (moto answered DescribeTable's whole description, ACTIVE)."""
    result = PATCHES.original(delete_table)(self)
    body = (getattr(result, "result", None) or {}).get("TableDescription")
    if isinstance(body, dict):
        body["TableStatus"] = "DELETING"
        for name in _NOT_IN_DELETE:
            body.pop(name, None)
    return result


@PATCHES.replace(Target(_RESPONSES, "DynamoHandler.create_table", ("self",)))
def create_table(self: Any) -> Any:
    """CreateTable keeps TableClass (STANDARD by default) and OnDemandThroughput."""
    from moto.dynamodb.responses import DynamoResult

    body = self.body
    created = PATCHES.original(create_table)(self)
    table = self.dynamodb_backend.tables.get(body["TableName"])
    if table is None:  # deleted by a concurrent DeleteTable since: moto's answer of its creation stands
        return created
    set_table_class(table, body.get("TableClass") or STANDARD)
    set_on_demand(table, body.get("OnDemandThroughput"), lift_when_absent=False)
    return DynamoResult(table.describe())


@PATCHES.replace(Target(_RESPONSES, "DynamoHandler.update_table", ("self",)))
def update_table(self: Any) -> Any:
    """UpdateTable, in steps: 1. ReplicaUpdates (replicas.py: a request of them alone is answered there); 2. the
    SSESpecification kept (security.py); 3. this module's: a table class change (counted against the limit), warm
    throughput (raised only) and OnDemandThroughput, a refusal before anything changes; moto's handler."""
    from moto.dynamodb.exceptions import MockValidationException
    from moto.dynamodb.responses import DynamoResult

    answered = dynamodb_replicas.update_table_replicas(self)
    if answered is not None:
        return answered
    dynamodb_security.keep_sse(self)
    body = self.body
    if not any(body.get(member) not in (None, [], {}) for member in UPDATE_MEMBERS):
        raise MockValidationException(NOTHING_TO_UPDATE)
    table = self.dynamodb_backend.get_table(body["TableName"])
    check_warm(table, body.get("WarmThroughput"))
    # Refused before anything changes, as AWS refuses the whole request.
    if body.get("TableClass") and body["TableClass"] != getattr(table, "doctable_table_class", STANDARD):
        set_table_class(table, body["TableClass"])
    warm = body.pop("WarmThroughput", None)  # moto replaces the whole setting; a request names what changes
    was = table.billing_mode
    PATCHES.original(update_table)(self)
    if was != "PAY_PER_REQUEST" and table.billing_mode == "PAY_PER_REQUEST":
        table.doctable_pay_per_request_since = clock.now()
    set_warm(table, warm)
    set_on_demand(table, body.get("OnDemandThroughput"), lift_when_absent=False)
    return DynamoResult(table.describe())


def describe_contributor_insights(self: Any) -> Any:
    """DescribeContributorInsights: the table's status, and its mode and rules while enabled."""
    from moto.core.responses import ActionResult

    name = self.body["TableName"]
    table = self.dynamodb_backend.get_table(name)
    state = getattr(table, "doctable_insights", None) or {}
    result: dict[str, Any] = {
        "TableName": table.name,
        "ContributorInsightsStatus": state.get("status", "DISABLED"),
    }
    if state.get("status") == "ENABLED":
        result["ContributorInsightsRuleList"] = list(state["rules"])
        result["ContributorInsightsMode"] = state["mode"]
    if state.get("updated"):
        result["LastUpdateDateTime"] = state["updated"]
    return ActionResult(result)


def update_contributor_insights(self: Any) -> Any:
    """UpdateContributorInsights: the switch takes effect at once; the answer is AWS's ENABLING/DISABLING."""
    from moto.core.responses import ActionResult

    body = self.body
    table = self.dynamodb_backend.get_table(body["TableName"])
    action = body.get("ContributorInsightsAction")
    if action not in ("ENABLE", "DISABLE"):
        raise _constraint(
            "contributorInsightsAction", action, "Member must satisfy enum value set: [ENABLE, DISABLE]"
        )
    set_insights(table, action == "ENABLE", body.get("ContributorInsightsMode"))
    state = getattr(table, "doctable_insights", None) or {}
    result = {
        "TableName": table.name,
        "ContributorInsightsStatus": "ENABLING" if action == "ENABLE" else "DISABLING",
    }
    if action == "ENABLE":
        result["ContributorInsightsMode"] = state.get("mode", INSIGHTS_MODES[0])
    return ActionResult(result)


def list_contributor_insights(self: Any) -> Any:
    """ListContributorInsights: every table's status (or the one named), with the mode while enabled."""
    from moto.core.responses import ActionResult

    backend = self.dynamodb_backend
    wanted = self.body.get("TableName")
    summaries = []
    for name, table in backend.tables.items():
        if wanted and name != wanted:
            continue
        state = getattr(table, "doctable_insights", None) or {}
        summary = {"TableName": name, "ContributorInsightsStatus": state.get("status", "DISABLED")}
        if state.get("status") == "ENABLED":
            summary["ContributorInsightsMode"] = state["mode"]
        summaries.append(summary)
    return ActionResult({"ContributorInsightsSummaries": summaries})


@PATCHES.on_install
def _add_contributor_insights_actions() -> None:
    """Describe/Update/ListContributorInsights on moto's DynamoDB handler (moto lacks them)."""
    from moto.dynamodb.responses import DynamoHandler

    # Actions moto lacks: its handler dispatches an X-Amz-Target to the method of the same snake_case name.
    # They are new attributes, so no Target names them (local/compat.py checks that a Target exists in moto).
    for action in (describe_contributor_insights, update_contributor_insights, list_contributor_insights):
        replace(DynamoHandler, action.__name__, action)


@PATCHES.replace(
    Target(
        "moto.dynamodb.models",
        "DynamoDBBackend.update_continuous_backups",
        ("self", "table_name", "point_in_time_spec"),
    )
)
def update_continuous_backups(self: Any, table_name: str, point_in_time_spec: dict[str, Any]) -> Any:
    """UpdateContinuousBackups: a RecoveryPeriodInDays outside 1..35 is refused."""
    days = point_in_time_spec.get("RecoveryPeriodInDays")
    if days is not None:
        lo, hi = PITR_DAYS
        if int(days) < lo:
            rule = f"Member must have value greater than or equal to {lo}"
            raise _constraint("pointInTimeRecoverySpecification.recoveryPeriodInDays", days, rule)
        if int(days) > hi:
            rule = f"Member must have value less than or equal to {hi}"
            raise _constraint("pointInTimeRecoverySpecification.recoveryPeriodInDays", days, rule)
    return PATCHES.original(update_continuous_backups)(self, table_name, point_in_time_spec)


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_RESPONSES, "DynamoHandler.dynamodb_backend"),
    Target(_RESPONSES, "DynamoResult"),
    Target("moto.core.responses", "ActionResult"),
)
