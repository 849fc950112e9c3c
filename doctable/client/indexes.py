"""A query of one of the table's indexes by a dict of key values, checked before any call as DynamoDB checks it.

    docs.query_index("byMatch", {"tenant": "a", "region": "eu"})                         # the whole partition
    docs.query_index("byMatch", {"tenant": "a", "region": "eu", "year": 2025, "round": ("begins_with", "semi")})
    docs.query_index("byOwner", {"owner": "ann", "createdAt": ("between", 1, 9)})

A value is a condition of equality; ``(op, value)`` with op ``<``, ``<=``, ``>``, ``>=``, ``begins_with`` (S and B),
or ``("between", low, high)``, a range. DynamoDB's rules for an index's key (developer guide, "Multi-attribute
keys pattern", GSI.DesignPattern.MultiAttributeKeys; up to four partition and four sort attributes): every
partition attribute with equality; the sort attributes left to right, equality on each but the last one given,
which may take a range, none skipped. The index's key schema comes from the deployment (the stack's Knobs output
records the declared indexes), the client's ``indexes=``, or else DescribeTable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from doctable.client import rules
from doctable.client.errors import (
    CONFIGURE,
    DESCRIBE_TABLE,
    QUERY,
    VALIDATE,
    AwsError,
    ConfigurationError,
    ValidationError,
)

if TYPE_CHECKING:
    from doctable.client.document import Document
    from doctable.client.retry import RetryPolicy

HASH, RANGE = "HASH", "RANGE"
KEY_TYPES = ("S", "N", "B")
KEY_RE = re.compile(r"^(?P<name>[^:\s]{1,255}):(?P<type>[SNB])$")
RANGE_OPERATORS = ("<", "<=", ">", ">=")
BEGINS_WITH, BETWEEN = "begins_with", "between"
CONDITIONS = "a value (=), or (op, value) with op <, <=, >, >=, begins_with, or ('between', low, high)"
INDEXES_KNOB, GSI_KNOB = "indexes", "gsi"  # the stack's Knobs record (contract/knobs)


@dataclass(frozen=True)
class IndexKeys:
    """An index's key schema: the partition attributes and the sort attributes, each (name, type), in order."""

    name: str
    partition: tuple[tuple[str, str], ...]
    sort: tuple[tuple[str, str], ...] = ()

    def text(self) -> str:
        sort = f"; sort {', '.join(a for a, _ in self.sort)}" if self.sort else ""
        return f"partition {', '.join(a for a, _ in self.partition)}{sort}"


def _declared_keys(where: str, field: str, value: Any) -> tuple[tuple[str, str], ...]:
    texts = value if isinstance(value, list) else [value]
    found = []
    for text in texts:
        match = KEY_RE.match(text) if isinstance(text, str) else None
        if match is None:
            raise ConfigurationError(
                f'{where}: {field} = {value!r}; allowed: "attribute:type" or an array of them, type S|N|B',
                step=CONFIGURE,
            )
        found.append((match["name"], match["type"]))
    return tuple(found)


def index_keys_of(declared: Mapping[str, Any], *, where: str = "indexes") -> tuple[IndexKeys, ...]:
    """Index name -> its declaration as the settings file writes it (``partition``/``sort``: "attr:T" or an array
    of them; ``kind = "local"``: the table's pk is the partition)."""
    found = []
    for name, fields in declared.items():
        if not isinstance(fields, Mapping):
            raise ConfigurationError(f"{where}: index {name!r} is not a table of fields", step=CONFIGURE)
        here = f"{where}: index {name!r}"
        if fields.get("kind") == "local":
            partition: tuple[tuple[str, str], ...] = ((rules.PARTITION_KEY, "S"),)
        else:
            partition = _declared_keys(here, "partition", fields.get("partition"))
        sort = _declared_keys(here, "sort", fields["sort"]) if "sort" in fields else ()
        found.append(IndexKeys(str(name), partition, sort))
    return tuple(found)


def index_keys_of_record(knobs: Mapping[str, Any]) -> tuple[IndexKeys, ...]:
    """The indexes a stack's Knobs record declares: the gsi knob's generic index and the ``indexes`` record."""
    found: list[IndexKeys] = []
    if knobs.get(GSI_KNOB) == rules.GSI_INDEX:
        found.append(IndexKeys(rules.GSI_INDEX, ((rules.GSI_KEYS[0], "S"),), ((rules.GSI_KEYS[1], "S"),)))
    text = knobs.get(INDEXES_KNOB)
    if isinstance(text, str):
        try:
            declared = json.loads(text)
        except json.JSONDecodeError:
            declared = None
        if not isinstance(declared, dict):
            raise ConfigurationError(
                "the stack's Knobs output records indexes that are not JSON", step=CONFIGURE
            )
        found += index_keys_of(declared, where="the stack's Knobs output")
    return tuple(found)


def index_keys_of_table(table: Mapping[str, Any]) -> tuple[IndexKeys, ...]:
    """Every secondary index of a DescribeTable ``Table``: its KeySchema's HASH and RANGE entries, each in order."""
    types = {a["AttributeName"]: a["AttributeType"] for a in table.get("AttributeDefinitions") or []}
    found = []
    for index in [*(table.get("GlobalSecondaryIndexes") or []), *(table.get("LocalSecondaryIndexes") or [])]:
        schema = index.get("KeySchema") or []
        keys = {
            kind: tuple(
                (k["AttributeName"], types.get(k["AttributeName"], "?"))
                for k in schema
                if k["KeyType"] == kind
            )
            for kind in (HASH, RANGE)
        }
        found.append(IndexKeys(index["IndexName"], keys[HASH], keys[RANGE]))
    return tuple(found)


# ---- the key condition ----
def _refuse(index: str, detail: str) -> ValidationError:
    return ValidationError(f"query of index {index!r}: {detail}", step=VALIDATE)


def _value(index: IndexKeys, attribute: str, kind: str, value: Any) -> dict[str, Any]:
    """A key value as DynamoDB's JSON, refused unless it has the attribute's type."""
    if kind == "S" and isinstance(value, str) and value:
        return {"S": value}
    if kind == "N" and isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        return {"N": str(value)}
    if kind == "B" and isinstance(value, (bytes, bytearray)) and value:
        return {"B": bytes(value)}
    wanted = {"S": "a non-empty str", "N": "an int or a Decimal", "B": "non-empty bytes"}[kind]
    raise _refuse(
        index.name,
        f"{attribute!r} is {kind} in the index; got {type(value).__name__} {value!r}, allowed: {wanted}",
    )


def key_condition(index: IndexKeys, key: Any) -> dict[str, Any]:
    """KeyConditionExpression, ExpressionAttributeNames and ExpressionAttributeValues for a query of ``index`` by
    ``key`` (attribute -> value or condition); ValidationError, one line, for a condition DynamoDB refuses."""
    name = index.name
    if not isinstance(key, Mapping) or not key:
        raise _refuse(name, f"the key must be a non-empty dict of attribute to value ({index.text()})")
    known = {a for a, _ in (*index.partition, *index.sort)}
    for attribute in key:
        if attribute not in known:
            raise _refuse(name, f"{attribute!r} is not a key attribute of the index ({index.text()})")
    conditions: list[str] = []
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    for number, (attribute, kind) in enumerate(index.partition):
        if attribute not in key:
            raise _refuse(
                name,
                f"partition attribute {attribute!r} is missing; a query gives every partition attribute with = "
                f"({index.text()})",
            )
        if isinstance(key[attribute], tuple):
            raise _refuse(
                name, f"{attribute!r} is a partition attribute: only equality (a plain value) is allowed"
            )
        names[f"#p{number}"], values[f":p{number}"] = (
            attribute,
            _value(index, attribute, kind, key[attribute]),
        )
        conditions.append(f"#p{number} = :p{number}")
    given = [(a, k) for a, k in index.sort if a in key]
    for number, (attribute, kind) in enumerate(index.sort[: len(given)]):
        if attribute not in key:
            after = given[-1][0]
            raise _refuse(
                name,
                f"sort attribute {after!r} is given without {attribute!r} before it; the sort attributes go left "
                f"to right, none skipped ({index.text()})",
            )
        alias = f"#s{number}"
        names[alias] = attribute
        condition = key[attribute]
        if not isinstance(condition, tuple):
            values[f":s{number}"] = _value(index, attribute, kind, condition)
            conditions.append(f"{alias} = :s{number}")
            continue
        if number < len(given) - 1:
            raise _refuse(
                name,
                f"{attribute!r} has a range but {index.sort[number + 1][0]!r} after it is given too; a range is "
                "allowed only on the last sort attribute given, the ones before it take =",
            )
        conditions.append(_range(index, attribute, kind, alias, f":s{number}", condition, values))
    return {
        "KeyConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


def _range(
    index: IndexKeys,
    attribute: str,
    kind: str,
    alias: str,
    placeholder: str,
    condition: tuple[Any, ...],
    values: dict[str, Any],
) -> str:
    op = str(condition[0]).lower() if condition else ""
    if op in RANGE_OPERATORS and len(condition) == 2:
        values[placeholder] = _value(index, attribute, kind, condition[1])
        return f"{alias} {op} {placeholder}"
    if op == BEGINS_WITH and len(condition) == 2:
        if kind == "N":
            raise _refuse(index.name, f"{attribute!r} is N: begins_with applies to S and B attributes")
        values[placeholder] = _value(index, attribute, kind, condition[1])
        return f"begins_with({alias}, {placeholder})"
    if op == BETWEEN and len(condition) == 3:
        values[placeholder] = _value(index, attribute, kind, condition[1])
        values[f"{placeholder}b"] = _value(index, attribute, kind, condition[2])
        return f"{alias} BETWEEN {placeholder} AND {placeholder}b"
    raise _refuse(index.name, f"{attribute!r}: {condition!r} is not a condition; allowed: {CONDITIONS}")


@dataclass
class KnownIndexes:
    """The table's indexes whose key schemas the client knows: given, recorded by the stack, or read once."""

    table: str
    keys: dict[str, IndexKeys]


class IndexQueries:
    """DocClient's queries of the table's indexes (doctable/client/client.py: DocClient derives from this)."""

    retry: RetryPolicy
    _indexes: KnownIndexes

    def _call(self, operation: str, step: str, pk: str | None, sk: str | None, **request: Any) -> Any:
        raise NotImplementedError

    def _client(self, service: str) -> Any:
        raise NotImplementedError

    def _document(self, item: Mapping[str, Any]) -> Document:
        raise NotImplementedError

    def query_index(
        self, index: str, key: Mapping[str, Any], *, limit: int | None = None, ascending: bool = True
    ) -> list[Document]:
        """The documents ``index`` holds under ``key``: attribute -> value (=) or a range condition on the last
        sort attribute given (``(op, value)``, op <, <=, >, >=, begins_with; ``("between", low, high)``). Every
        partition attribute is given; the sort attributes left to right, none skipped (DynamoDB's rules for
        multi-attribute keys; doctable/client/indexes.py). A key DynamoDB would refuse is refused here, in one
        line, before any call. Follows LastEvaluatedKey until ``limit`` documents (default: all). An index that
        projects only some attributes gives documents with only those."""
        if not isinstance(index, str) or not index:
            raise ValidationError("query_index: the index must be a non-empty string", step=VALIDATE)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise ValidationError(
                f"query of index {index!r}: limit = {limit!r}; allowed: an integer >= 1", step=VALIDATE
            )
        request = key_condition(self._index(index), key)
        found: list[Document] = []
        start: dict[str, Any] | None = None
        while limit is None or len(found) < limit:
            page = {"Limit": limit - len(found)} if limit is not None else {}
            reply = self._call(
                "query",
                QUERY,
                None,
                None,
                IndexName=index,
                ScanIndexForward=ascending,
                **request,
                **page,
                **({"ExclusiveStartKey": start} if start else {}),
            )
            found += [self._document(item) for item in reply.get("Items", [])]
            start = reply.get("LastEvaluatedKey")
            if not start:
                break
        return found

    def _index(self, name: str) -> IndexKeys:
        """The key schema of index ``name``: known from the deployment or ``indexes=``, else read once with
        DescribeTable (which the runtime policy does not grant: give ``indexes=`` or use ``from_stack``)."""
        if name not in self._indexes.keys:
            table = self._indexes.table
            try:
                reply = self.retry.call(
                    lambda: self._client("dynamodb").describe_table(TableName=table), step=DESCRIBE_TABLE
                )
            except AwsError as exc:
                raise ConfigurationError(
                    f"index {name!r} is not one the deployment records and DescribeTable of {table} failed "
                    f"({exc.code or exc.detail}): pass indexes= or use DocClient.from_stack",
                    step=DESCRIBE_TABLE,
                ) from exc
            self._indexes.keys.update({i.name: i for i in index_keys_of_table(reply.get("Table", {}))})
        if name not in self._indexes.keys:
            known = ", ".join(sorted(self._indexes.keys)) or "none"
            raise ValidationError(
                f"query of index {name!r}: the table has no such index; known: {known}", step=VALIDATE
            )
        return self._indexes.keys[name]
