"""Which writes a subscriber's verify nudge makes (verify/subscribers.py): the shortest writes on one probe item
whose last change the subscriber's filter passes, with one before it the filter excludes when a probe can make one.

The filter is read as Lambda matches a pattern against a change record (the grammar of
local/pollers/filtering.py, which runs it in the local AWS), three-valued: a field the probe cannot know when the
plan is made (the run's partition key, a sequence number, the region) matches neither way, and so does a rule
form this reading does not model. Pure: no AWS."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contract import names
from contract.shape import EVENT_INSERT, EVENT_MODIFY, EVENT_REMOVE

if TYPE_CHECKING:
    from contract.subscribers import SubscriberSpec

NUDGE_KIND = "subscriber-nudge"  # the probe item's ``kind``
MAX_OPS = 4  # the longest write sequence a plan tries (put, delete, put covers every eventName filter)


# ------------------------------------------------------------------------------ which writes the filter passes
class _Unknown:
    """A field of the change record the probe cannot know in advance: a pattern on it matches neither way."""

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN = _Unknown()
Verdict = bool | None  # a pattern matches (True), does not (False), or cannot be told (None)
Attributes = tuple[tuple[str, str, Any], ...]  # (name, DynamoDB type, value) of each attribute a put sets


def _any(verdicts: Iterable[Verdict]) -> Verdict:
    found = list(verdicts)
    return True if True in found else (None if None in found else False)


def _children(nodes: list[Any], key: str) -> list[Any]:
    """The values under ``key`` of each object among ``nodes``, arrays opened element by element."""
    out: list[Any] = []
    for node in nodes:
        if isinstance(node, dict) and key in node:
            value = node[key]
            out += value if isinstance(value, list) else [value]
    return out


def _equal(rule: Any, value: Any) -> bool:
    if isinstance(rule, bool) or isinstance(value, bool) or rule is None or value is None:
        return type(rule) is type(value) and rule == value
    return type(rule) is type(value) and bool(rule == value)


def _rule(rule: Any, leaves: list[Any]) -> Verdict:
    """One rule of a pattern's leaf (Lambda's filter grammar) against the leaves found there."""
    if not isinstance(rule, dict):
        return any(_equal(rule, leaf) for leaf in leaves)
    (kind, operand), *_ = rule.items()
    strings = [leaf for leaf in leaves if isinstance(leaf, str)]
    if kind == "exists":
        return bool(leaves) is operand
    if kind == "numeric":  # a change record's numbers are strings ({"N": "5"}): a numeric rule never holds
        return False if not any(isinstance(leaf, int | float) for leaf in leaves) else None
    if not isinstance(operand, str):
        if kind == "anything-but" and isinstance(operand, list | int | float):
            excluded = operand if isinstance(operand, list) else [operand]
            return any(not any(_equal(v, leaf) for v in excluded) for leaf in leaves)
        if kind == "anything-but" and isinstance(operand, dict) and isinstance(operand.get("prefix"), str):
            return any(not leaf.startswith(operand["prefix"]) for leaf in strings)
        return None  # a form this reading does not model: neither way
    if kind == "prefix":
        return any(leaf.startswith(operand) for leaf in strings)
    if kind == "suffix":
        return any(leaf.endswith(operand) for leaf in strings)
    if kind == "equals-ignore-case":
        return any(leaf.casefold() == operand.casefold() for leaf in strings)
    if kind == "anything-but":
        return any(not _equal(operand, leaf) for leaf in leaves)
    return None


def _holds(pattern: Mapping[str, Any], nodes: list[Any]) -> Verdict:
    """A pattern (or a nested object of one) against ``nodes``: keys ANDed, ``$or`` alternatives ORed."""
    verdict: Verdict = True
    for key, value in pattern.items():
        if key == "$or":
            got = _any(_holds(alternative, nodes) for alternative in value)
        else:
            children = _children(nodes, key)
            if any(child is UNKNOWN for child in children):
                got = None
            elif isinstance(value, dict):
                got = _holds(value, children)
            else:
                leaves = [child for child in children if not isinstance(child, dict)]
                got = _any(_rule(rule, leaves) for rule in value)
        if got is False:
            return False
        verdict = None if got is None else verdict
    return verdict


def passes(patterns: list[dict[str, Any]], record: Mapping[str, Any]) -> Verdict:
    """A change record passes a mapping's filters (none: every record; several: ORed)."""
    return True if not patterns else _any(_holds(pattern, [record]) for pattern in patterns)


@dataclass(frozen=True)
class Write:
    """One write of a probe: a put of the item with ``attributes`` (beside its keys, kind and counter), or a
    delete (``attributes`` None); the change it makes, and whether the filter passes that change."""

    attributes: Attributes | None
    event: str
    passes: Verdict

    @property
    def item_attributes(self) -> dict[str, Any]:
        """The attributes it puts, as an item holds them ({name: {type: value}})."""
        return typed(self.attributes or ())

    @property
    def verb(self) -> str:
        return "delete" if self.attributes is None else ("put" + (" with " if self.attributes else ""))


@dataclass(frozen=True)
class ProbePlan:
    """The writes of one subscriber's nudge, on one item: ``witness`` the index of the last one, which its filter
    passes; ``excluded`` the index of one before it its filter excludes (None: ``why`` says why there is none)."""

    writes: tuple[Write, ...] = ()
    witness: int | None = None
    excluded: int | None = None
    why: str = ""

    @property
    def witness_event(self) -> str | None:
        return None if self.witness is None else self.writes[self.witness].event

    @property
    def excluded_event(self) -> str | None:
        return None if self.excluded is None else self.writes[self.excluded].event

    @property
    def text(self) -> str:
        """The writes, each with its change and whether the filter passes it."""
        said = {True: "passes", False: "excluded", None: "either"}
        return ", ".join(
            f"{w.verb}{', '.join(f'{n}={t}:{v}' for n, t, v in w.attributes or ())} ({w.event} {said[w.passes]})"
            for w in self.writes
        )


def typed(attributes: Attributes) -> dict[str, Any]:
    return {name: {kind: value} for name, kind, value in attributes}


# Attributes a probe never sets: its keys, its own fields, the blobs list (the cleanup consumer would delete them)
# and the TTL attribute (DynamoDB would expire the item).
RESERVED = frozenset(
    {names.PARTITION_KEY, names.SORT_KEY, "kind", "n", names.BLOBS_ATTRIBUTE, names.TTL_ATTRIBUTE}
)


def _value_for(kind: str, rule: Any) -> Any:
    """A value of type ``kind`` that one rule of a pattern holds for (None: none the probe can make)."""
    if kind == "BOOL":
        return rule if isinstance(rule, bool) else None
    if rule == {"exists": True}:
        return "1" if kind == "N" else "doctable-probe"
    if kind == "S" and isinstance(rule, str):
        return rule
    if kind == "S" and isinstance(rule, dict) and isinstance(rule.get("prefix"), str):
        return f"{rule['prefix']}probe"
    if kind == "N" and isinstance(rule, str) and rule.isdigit() and str(int(rule)) == rule:
        return rule
    return None


def attributes_for(pattern: Mapping[str, Any]) -> Attributes:
    """Attributes of a new image that the pattern's ``dynamodb.NewImage`` rules hold for (those it can set)."""
    image = (
        (pattern.get("dynamodb") or {}).get("NewImage") if isinstance(pattern.get("dynamodb"), dict) else None
    )
    found = []
    for name, typed in (image or {}).items() if isinstance(image, dict) else ():
        if name in RESERVED or not isinstance(typed, dict):
            continue
        for kind, rules in typed.items():
            values = [_value_for(kind, r) for r in rules] if isinstance(rules, list) else []
            value = next((v for v in values if v is not None), None)
            if value is not None:
                found.append((name, kind, value))
                break
    return tuple(found)


def _image(sort_key: str, number: int, attributes: Attributes) -> dict[str, Any]:
    return {
        names.PARTITION_KEY: {"S": UNKNOWN},  # the run's: not known when the plan is made
        names.SORT_KEY: {"S": sort_key},
        "kind": {"S": NUDGE_KIND},
        "n": {"N": str(number)},
        **typed(attributes),
    }


def _record(
    event: str, sort_key: str, old: dict[str, Any] | None, new: dict[str, Any] | None, view: str | None
) -> dict[str, Any]:
    """The change record Lambda matches the filter against (``view``: the stream's view type; None: Kinesis,
    whose records carry both images)."""
    images: dict[str, Any] = {
        "Keys": {names.PARTITION_KEY: {"S": UNKNOWN}, names.SORT_KEY: {"S": sort_key}},
        "SequenceNumber": UNKNOWN,
        "SizeBytes": UNKNOWN,
        "ApproximateCreationDateTime": UNKNOWN,
    }
    if view is not None:
        images["StreamViewType"] = view
    if new is not None and (view is None or "NEW" in view):
        images["NewImage"] = new
    if old is not None and (view is None or "OLD" in view):
        images["OldImage"] = old
    unknown = dict.fromkeys(("eventID", "eventVersion", "awsRegion", "eventSourceARN", "tableName"), UNKNOWN)
    return {**unknown, "eventName": event, "eventSource": "aws:dynamodb", "dynamodb": images}


def _simulate(
    steps: tuple[Attributes | None, ...],
    patterns: list[dict[str, Any]],
    sort_key: str,
    view: str | None,
) -> tuple[Write, ...] | None:
    """The writes ``steps`` (a put's attributes, or None: a delete) make from an absent item; None when one
    deletes an absent item (no change)."""
    writes, item = [], None
    for number, attributes in enumerate(steps, 1):
        if attributes is None:
            if item is None:
                return None
            event, new = EVENT_REMOVE, None
        else:
            event, new = (
                (EVENT_INSERT if item is None else EVENT_MODIFY),
                _image(sort_key, number, attributes),
            )
        writes.append(Write(attributes, event, passes(patterns, _record(event, sort_key, item, new, view))))
        item = new
    return tuple(writes)


def _told_apart(writes: tuple[Write, ...], index: int) -> bool:
    """The excluded write's change is the only one of its event name that may reach the subscriber's proof
    lines: a line counting that event name then counts it (the lines count records per event name)."""
    return all(w.event != writes[index].event or w.passes is False for w in writes)


def probe_plan(spec: SubscriberSpec, view: str | None) -> ProbePlan:
    """The shortest writes on one item whose last change the subscriber's filter passes, with one before it
    the filter excludes when a probe can make one (``view``: the table stream's view type)."""
    patterns = [json.loads(p) for p in spec.filters]
    sort_key = f"subscriber-{spec.name}"
    view = None if spec.reads_kinesis else view
    puts = list(dict.fromkeys([(), *(attributes_for(p) for p in patterns)]))
    alphabet: list[Attributes | None] = [*puts, None]
    passing: tuple[Write, ...] = ()
    for length in range(1, MAX_OPS + 1):
        for steps in itertools.product(alphabet, repeat=length):
            writes = _simulate(steps, patterns, sort_key, view)
            if writes is None or writes[-1].passes is not True:
                continue
            if not patterns:
                return ProbePlan(
                    writes, length - 1, None, "no filter: every change reaches it, none is excluded"
                )
            excluded = next(
                (i for i in range(length - 1) if writes[i].passes is False and _told_apart(writes, i)), None
            )
            if excluded is not None:
                return ProbePlan(writes, length - 1, excluded)
            passing = passing or writes
    fields = ", ".join(sorted({key for p in patterns for key in p}))
    if passing:
        why = (
            f"its filters ({fields}) exclude no change a probe can make and tell apart: the passing half only"
        )
        return ProbePlan(passing, len(passing) - 1, None, why)
    why = f"its filters ({fields}) pass no change a probe can make (its keys are the run's; a sequence number is unknown)"
    return ProbePlan((), None, None, why)
