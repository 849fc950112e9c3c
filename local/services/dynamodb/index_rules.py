"""DynamoDB's and CloudFormation's refusals about secondary indexes, in their codes and words, as checks of a
request against the table as it is (local/services/dynamodb/indexes.py calls them before changing anything).

Where each message was checked: local/README.md, "Secondary indexes".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from local.patching import Target
from local.services.dynamodb import limit_exceeded, not_found, validation
from local.services.dynamodb.index_lifecycle import (
    CREATING,
    DELETING,
    key_names,
    settle,
    transition_of,
)

MAX_GLOBAL = 20  # DynamoDB's default quota of GSIs per table
MAX_LOCAL = 5
MAX_PROJECTED = 100  # NonKeyAttributes summed over every index of a table
MAX_NON_KEY_PER_INDEX = 20  # the API's NonKeyAttributeNameList length
NO_CAP = -1

# DynamoDB's and CloudFormation's words.
INVALID = "One or more parameter values were invalid: "
BACKFILLING = "Cannot read from backfilling global secondary index: {index}"
ONLINE_LIMIT = (
    "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table"
)
GLOBAL_LIMIT_UPDATE = (
    f"Subscriber limit exceeded: Number of global secondary indexes exceeds per-table limit of {MAX_GLOBAL}"
)
GLOBAL_LIMIT_CREATE = INVALID + f"GlobalSecondaryIndex count exceeds the per-table limit of {MAX_GLOBAL}"
LOCAL_LIMIT = INVALID + f"Number of LocalSecondaryIndexes exceeds per-table limit of {MAX_LOCAL}"
PROJECTED_LIMIT = INVALID + f"Number of projected attributes in all indexes exceeds limit of {MAX_PROJECTED}"
DUPLICATE_ATTRIBUTE = "Attribute Name is duplicated: {name}"
# The attribute set is moto's own check, worded as AWS words it (UNUSED_ATTRIBUTES, UNMATCHED_ATTRIBUTES).
UNUSED_ATTRIBUTES = (
    INVALID + "Some AttributeDefinitions are not used. AttributeDefinitions: [{defined}], keys used: [{used}]"
)
UNMATCHED_ATTRIBUTES = (
    INVALID
    + "Number of attributes in KeySchema does not exactly match number of attributes defined in AttributeDefinitions"
)
UNDEFINED_KEYS = (
    INVALID + "Some index key attributes are not defined in AttributeDefinitions. Keys: [{keys}], "
    "AttributeDefinitions: [{defined}]"
)
NO_DEFINITIONS = INVALID + "AttributeDefinitions is not specified for index: {index}"
INCLUDE_WITHOUT_NON_KEY = INVALID + "ProjectionType is INCLUDE, but NonKeyAttributes is not specified"
NON_KEY_WITHOUT_INCLUDE = INVALID + "ProjectionType is {type}, but NonKeyAttributes is specified"
UNKNOWN_PROJECTION = INVALID + "Unknown ProjectionType: null"
DUPLICATE_NON_KEY = INVALID + "Duplicate element in NonKeyAttributes: {name}"
NON_KEY_LENGTH = (
    "1 validation error detected: Value '[{values}]' at '{field}' failed to satisfy constraint: "
    f"Member must have length less than or equal to {MAX_NON_KEY_PER_INDEX}"
)
DUPLICATE_INDEX = INVALID + "Duplicate index name: {index}"
LSI_NEEDS_TABLE_RANGE = (
    INVALID
    + "Table KeySchema does not have a range key, which is required when specifying a LocalSecondaryIndex"
)
FIRST_NOT_HASH = "Invalid KeySchema: The first KeySchemaElement is not a HASH key type"
SAME_NAME = "Both the Hash Key and the Range Key element in the KeySchema have the same name"
# A GSI's multi-attribute key (developer guide, "Multi-attribute key schemas"): up to 4 HASH and 4 RANGE attributes,
# every HASH before every RANGE, no attribute twice. AWS's words are unpublished: these carry the fragments the
# AWS-run Alternator suite matches ("HASH"/"RANGE", "HASH ... precede ... RANGE", "same name").
MAX_KEY_PART = 4
KEY_PART_LIMIT = INVALID + "Index KeySchema of index: {index} has more than {limit} {kind} key attributes"
HASH_AFTER_RANGE = (
    INVALID + "All HASH key elements must precede the RANGE key elements in the KeySchema of index: {index}"
)
SAME_NAME_TWICE = "Two {kind} Key elements in the KeySchema have the same name: {name}"
LSI_NEEDS_RANGE = INVALID + "Index KeySchema does not have a range key for index: {index}"
LSI_HASH = (
    INVALID
    + "Index KeySchema does not have the same leading hash key as table KeySchema for index: {index}. "
    "index hash key: {index_hash}, table hash key: {table_hash}"
)
NO_ACTION = (
    INVALID + "One of GlobalSecondaryIndexUpdate.Update, GlobalSecondaryIndexUpdate.Create, "
    "GlobalSecondaryIndexUpdate.Delete must not be null"
)
TWO_ACTIONS = (
    INVALID + "Only one global secondary index action is allowed per GlobalSecondaryIndexUpdate object"
)
SAME_INDEX_TWICE = (
    INVALID + "Only one global secondary index update per index is allowed simultaneously. Index: {index}"
)
EXISTS = "Attempting to create an index which already exists"
UNKNOWN_INDEX = "The table does not have the specified index: {index}"
NOT_GLOBAL = "Cannot {action} an index that is not a GlobalSecondaryIndex: {index}"
NOT_FOUND = "Requested resource not found: Index {index} for table {table}"
TABLE_INDEXES_BUSY = (
    "Attempt to change a resource which is still in use: Cannot delete table while indexes are being created, "
    "updated, or deleted."
)
INDEX_BEING_DELETED = "Attempt to change a resource which is still in use: Index is being deleted. Table: {table} Index: {index}"
TYPE_MISMATCH = (
    INVALID + "Type mismatch for Index Key {key} Expected: {expected} Actual: {actual} IndexName: {index}"
)
ON_DEMAND_RANGE = (
    INVALID + "Requested {field} for OnDemandThroughput for index : {index} is outside of valid range"
)
WARM_LOWER = (
    INVALID + "Requested {field} for WarmThroughput for index {index} is lower than current WarmThroughput, "
    "decreasing WarmThroughput is not supported"
)
CFN_GSI_LIMIT = "Cannot perform more than one GSI creation or deletion in a single update"
CFN_GSI_PROPERTIES = (
    "Cannot update GSI's properties other than Provisioned Throughput and Contributor Insights Specification. "
    "You can create a new GSI with a different name."
)

_EXCEPTIONS = "moto.dynamodb.exceptions"
MOTO_TARGETS = (
    Target(_EXCEPTIONS, "MockValidationException"),
    Target(_EXCEPTIONS, "ResourceNotFoundException"),
    Target(_EXCEPTIONS, "ResourceInUseException"),
    Target(_EXCEPTIONS, "DynamodbException"),
    Target(_EXCEPTIONS, "ERROR_TYPE_PREFIX"),
)


# ------------------------------------------------------------------------------------------------ errors
def in_use(message: str) -> Exception:
    from moto.dynamodb.exceptions import ResourceInUseException

    return ResourceInUseException(message)


class TemplateRefusal(Exception):
    """CloudFormation's own refusal of a table update (its handler's InvalidRequest), before DynamoDB is asked."""

    error_type = "InvalidRequest"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# ------------------------------------------------------------------------------------------ the rules
def refuse_backfilling_read(table: Any, index_name: str | None) -> None:
    """Query and Scan on an index the table does not have, or on a GSI that is still CREATING, are refused
    (ValidationException; moto answered an unknown index with ResourceNotFoundException)."""
    if not index_name:
        return
    settle(table)
    if index_name not in {index.name for index in [*table.global_indexes, *table.indexes]}:
        raise validation(UNKNOWN_INDEX.format(index=index_name))
    for index in table.global_indexes:
        transition = transition_of(index)
        if index.name == index_name and transition is not None and transition.status == CREATING:
            raise validation(BACKFILLING.format(index=index_name))


def _names(values: Iterable[str]) -> str:
    return ", ".join(values)


def check_create_definitions(
    table: Any, creates: Sequence[Mapping[str, Any]], given: Sequence[Mapping[str, Any]] | None
) -> None:
    """An index created on a live table has a valid key schema and needs its key attributes defined (the
    request's or the table's)."""
    check_global_key_schemas(creates)
    for spec in creates:
        if not given:
            raise validation(NO_DEFINITIONS.format(index=spec.get("IndexName")))
        known = {str(d["AttributeName"]) for d in [*given, *(table.attr or [])]}
        keys = key_names(spec.get("KeySchema"))
        if any(k not in known for k in keys):
            defined = _names(str(d["AttributeName"]) for d in given)
            raise validation(UNDEFINED_KEYS.format(keys=_names(keys), defined=defined))


def _projection_errors(spec: Mapping[str, Any], field: str) -> None:
    projection = spec.get("Projection") or {}
    kind = projection.get("ProjectionType")
    non_key = projection.get("NonKeyAttributes")
    if kind is None:
        raise validation(UNKNOWN_PROJECTION)
    if non_key is not None and kind != "INCLUDE":
        raise validation(NON_KEY_WITHOUT_INCLUDE.format(type=kind))
    if kind == "INCLUDE" and not non_key:
        raise validation(INCLUDE_WITHOUT_NON_KEY)
    if non_key and len(non_key) > MAX_NON_KEY_PER_INDEX:
        raise validation(
            NON_KEY_LENGTH.format(values=_names(non_key), field=f"{field}.projection.nonKeyAttributes")
        )
    seen: set[str] = set()
    for name in non_key or []:
        if name in seen:
            raise validation(DUPLICATE_NON_KEY.format(name=name))
        seen.add(name)


def _on_demand_errors(spec: Mapping[str, Any], *, updating: bool) -> None:
    for field, value in (spec.get("OnDemandThroughput") or {}).items():
        lifted = updating and int(value) == NO_CAP  # -1 on an update removes the cap
        if field in ("MaxReadRequestUnits", "MaxWriteRequestUnits") and int(value) < 1 and not lifted:
            raise validation(ON_DEMAND_RANGE.format(field=field, index=spec.get("IndexName")))


def projected_count(specs: Iterable[Mapping[str, Any]]) -> int:
    """User-named projected attributes over ``specs`` (the same name in two indexes counts twice)."""
    return sum(len((s.get("Projection") or {}).get("NonKeyAttributes") or []) for s in specs)


def described(index: Any) -> dict[str, Any]:
    return {"IndexName": index.name, "KeySchema": index.schema, "Projection": index.projection or {}}


def validate_table_spec(spec: Mapping[str, Any]) -> None:
    """CreateTable's (and a template's) index rules moto lacks, in DynamoDB's order (after the attribute set,
    which moto checks): the LSIs, the GSIs, then the projected attributes of the whole table."""
    table_keys = {str(k["KeyType"]): str(k["AttributeName"]) for k in spec.get("KeySchema") or []}
    names: set[str] = set()
    locals_ = list(spec.get("LocalSecondaryIndexes") or [])
    if locals_ and "RANGE" not in table_keys:
        raise validation(LSI_NEEDS_TABLE_RANGE)
    for position, index in enumerate(locals_, start=1):
        name = str(index.get("IndexName"))
        _key_schema_errors(index.get("KeySchema") or [])
        keys = {str(k["KeyType"]): str(k["AttributeName"]) for k in index.get("KeySchema") or []}
        if "RANGE" not in keys:
            raise validation(LSI_NEEDS_RANGE.format(index=name))
        if keys.get("HASH") != table_keys.get("HASH"):
            raise validation(
                LSI_HASH.format(index=name, index_hash=keys.get("HASH"), table_hash=table_keys.get("HASH"))
            )
        _projection_errors(index, f"localSecondaryIndexes.{position}.member")
        if name in names:
            raise validation(DUPLICATE_INDEX.format(index=name))
        names.add(name)
    if len(locals_) > MAX_LOCAL:
        raise validation(LOCAL_LIMIT)
    globals_ = list(spec.get("GlobalSecondaryIndexes") or [])
    check_global_key_schemas(globals_)
    for position, index in enumerate(globals_, start=1):
        name = str(index.get("IndexName"))
        _key_schema_errors(index.get("KeySchema") or [])
        _projection_errors(index, f"globalSecondaryIndexes.{position}.member")
        _on_demand_errors(index, updating=False)
        if name in names:
            raise validation(DUPLICATE_INDEX.format(index=name))
        names.add(name)
    if len(globals_) > MAX_GLOBAL:
        raise validation(GLOBAL_LIMIT_CREATE)
    if projected_count([*locals_, *globals_]) > MAX_PROJECTED:
        raise validation(PROJECTED_LIMIT)


SECOND_NOT_RANGE = "Invalid KeySchema: The second KeySchemaElement is not a RANGE key type"


def check_table_key_schema(schema: Sequence[Mapping[str, Any]]) -> None:
    """A table's KeySchema: its partition key, then at most its sort key, two attributes apart."""
    if len(schema) > 1 and schema[0].get("KeyType") == "HASH" and schema[1].get("KeyType") != "RANGE":
        raise validation(SECOND_NOT_RANGE)
    _key_schema_errors(schema)


def _key_schema_errors(schema: Sequence[Mapping[str, Any]]) -> None:
    """An index's KeySchema begins with its partition key, and no attribute is both its partition and sort key."""
    if schema and schema[0].get("KeyType") != "HASH":
        raise validation(FIRST_NOT_HASH)
    hashes = {k.get("AttributeName") for k in schema if k.get("KeyType") == "HASH"}
    if any(k.get("KeyType") == "RANGE" and k.get("AttributeName") in hashes for k in schema):
        raise validation(SAME_NAME)


def check_global_key_schemas(specs: Iterable[Mapping[str, Any]] | None) -> None:
    """Each GSI's multi-attribute key schema (CreateTable, UpdateTable's Create, a template), before the attribute
    definitions are compared with the keys: up to 4 HASH then up to 4 RANGE attributes, each named once."""
    for spec in specs or []:
        index = spec.get("IndexName")
        schema = [(str(k.get("AttributeName")), str(k.get("KeyType"))) for k in spec.get("KeySchema") or []]
        for kind in ("HASH", "RANGE"):
            if sum(1 for _, t in schema if t == kind) > MAX_KEY_PART:
                raise validation(KEY_PART_LIMIT.format(index=index, limit=MAX_KEY_PART, kind=kind))
        kinds = [t for _, t in schema]
        if "RANGE" in kinds and "HASH" in kinds[kinds.index("RANGE") :] and kinds[0] == "HASH":
            raise validation(HASH_AFTER_RANGE.format(index=index))
        seen: dict[str, str] = {}
        for name, kind in schema:
            if name in seen:
                if seen[name] != kind:
                    raise validation(SAME_NAME)
                raise validation(SAME_NAME_TWICE.format(kind=kind.title(), name=name))
            seen[name] = kind


def _action_of(update: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    actions = [(k, v) for k, v in update.items() if k in ("Create", "Update", "Delete") and v is not None]
    if not actions:
        raise validation(NO_ACTION)
    if len(actions) > 1:
        raise validation(TWO_ACTIONS)
    return actions[0]


def check_index_updates(
    table: Any, updates: Sequence[Mapping[str, Any]]
) -> list[tuple[str, Mapping[str, Any]]]:
    """UpdateTable's GlobalSecondaryIndexUpdates against the table as it is: every refusal before any change."""
    actions = [_action_of(u) for u in updates]
    seen: set[str] = set()
    for _, body in actions:
        name = str(body.get("IndexName"))
        if name in seen:
            raise validation(SAME_INDEX_TWICE.format(index=name))
        seen.add(name)
    if sum(1 for kind, _ in actions if kind in ("Create", "Delete")) > 1:
        raise limit_exceeded(ONLINE_LIMIT)
    globals_ = {i.name: i for i in table.global_indexes}
    locals_ = {i.name for i in table.indexes}
    for position, (kind, body) in enumerate(actions, start=1):
        name = str(body.get("IndexName"))
        if kind == "Create":
            if name in globals_ or name in locals_:
                raise validation(EXISTS)
            if any(transition_of(i) is not None for i in globals_.values()):
                raise limit_exceeded(ONLINE_LIMIT)
            if len(globals_) >= MAX_GLOBAL:
                raise limit_exceeded(GLOBAL_LIMIT_UPDATE)
            _projection_errors(body, f"globalSecondaryIndexUpdates.{position}.member.create")
            _on_demand_errors(body, updating=False)
            others = [described(i) for i in [*table.indexes, *table.global_indexes]]
            if projected_count([*others, body]) > MAX_PROJECTED:
                raise validation(PROJECTED_LIMIT)
            continue
        if name in locals_:
            raise validation(NOT_GLOBAL.format(action=kind.lower(), index=name))
        if name not in globals_:
            raise not_found(NOT_FOUND.format(index=name, table=table.name))
        transition = transition_of(globals_[name])
        if transition is not None and transition.status == DELETING:
            raise in_use(INDEX_BEING_DELETED.format(table=table.name, index=name))
        if kind == "Delete":
            # The index itself may go while it backfills; another index's change must end first.
            if any(transition_of(i) is not None for n, i in globals_.items() if n != name):
                raise limit_exceeded(ONLINE_LIMIT)
        else:
            _on_demand_errors(body, updating=True)
            _check_warm(globals_[name], body.get("WarmThroughput"))
    return actions


def _check_warm(index: Any, wanted: Mapping[str, Any] | None) -> None:
    current = getattr(index, "warm_throughput", None) or {}
    for field in ("ReadUnitsPerSecond", "WriteUnitsPerSecond"):
        if wanted and field in wanted and int(wanted[field]) < int(current.get(field, 0)):
            raise validation(WARM_LOWER.format(field=field, index=index.name))


def check_duplicate_definitions(definitions: list[Mapping[str, Any]]) -> None:
    """One attribute named twice in AttributeDefinitions (two types or the same) is refused."""
    names = [str(d.get("AttributeName")) for d in definitions]
    for name in names:
        if names.count(name) > 1:
            raise validation(DUPLICATE_ATTRIBUTE.format(name=name))


# -------------------------------------------------------------------------------------- index key types
def check_index_key_types(item: Mapping[str, Any], table: Any) -> None:
    """A written item's index key attributes must have the types AttributeDefinitions give them."""
    types = {str(d["AttributeName"]): str(d["AttributeType"]) for d in table.attr or []}
    table_keys = set(table.table_key_attrs)
    for index in [*table.global_indexes, *table.indexes]:
        for key in key_names(index.schema):
            value = item.get(key)
            if key in table_keys or not isinstance(value, dict) or not value:
                continue
            actual = next(iter(value))
            expected = types.get(key)
            if expected is not None and actual != expected:
                raise validation(
                    TYPE_MISMATCH.format(key=key, expected=expected, actual=actual, index=index.name)
                )


_MISMATCH = re.compile(r"Type mismatch for key (\S+) expected: (\S+) actual: (\S+)$")


def index_type_mismatch(table: Any, message: str) -> Exception | None:
    """moto's UpdateItem type error for a key attribute, as DynamoDB words it for an index key."""
    found = _MISMATCH.search(message)
    if found is None:
        return None
    key, expected, actual = found.groups()
    for index in [*table.global_indexes, *table.indexes]:
        if key in key_names(index.schema):
            return validation(
                TYPE_MISMATCH.format(key=key, expected=expected, actual=actual, index=index.name)
            )
    return None
