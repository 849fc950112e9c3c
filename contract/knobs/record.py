"""What a deployed stack recorded: its knob record (the ``Knobs`` output, ``DocTableConfig.deployed_record``) read
back as knobs, index declarations and subscriber declarations."""

from __future__ import annotations

import json
from typing import Any

from contract import indexes as index_specs
from contract import subscribers as subscriber_specs
from contract.knobs.config import INDEXES, KNOB_DEFAULTS
from contract.knobs.consumer import BUCKET_NAMES_GENERATED

# A knob that a stack's knob record predates, with the value such a stack was deployed with: its buckets were named
# by CloudFormation. Read back so, a deploy of settings that leave the knob at its default (exact) is a rename of
# the buckets (bucket.renamed, destructive), which the gate stops until the file keeps the names or says yes.
RECORD_PREDATES = {"bucket_names": BUCKET_NAMES_GENERATED}


def knobs_from_record(record: str) -> dict[str, str]:
    """The knobs a deployed stack recorded (its ``Knobs`` output); ValueError when the record is not that."""
    try:
        values = json.loads(record)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the stack's knob record is not JSON: {exc}") from None
    if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
        raise ValueError("the stack's knob record is not an object of knob names to strings")
    return {**RECORD_PREDATES, **{k: v for k, v in values.items() if k in KNOB_DEFAULTS}}


def indexes_of_record(record: str) -> dict[str, Any]:
    """The index declarations a deployed stack recorded in its knob record (none: an empty mapping)."""
    values = json.loads(record)
    text = values.get(INDEXES) if isinstance(values, dict) else None
    return index_specs.indexes_from_record(text) if isinstance(text, str) else {}


def subscribers_of_record(record: str) -> dict[str, Any]:
    """The subscriber declarations a deployed stack recorded in its knob record (none: an empty mapping)."""
    values = json.loads(record)
    text = values.get(subscriber_specs.SUBSCRIBERS) if isinstance(values, dict) else None
    declared = json.loads(text) if isinstance(text, str) else {}
    return declared if isinstance(declared, dict) else {}
