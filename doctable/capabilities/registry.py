"""Every capability, in the order the commands report them: preflight's findings follow ``REGISTRY``, reconcile's
drift follows ``DRIFTING`` (then each subscriber's mapping: reconcile reads and repairs them apart, mapping by
mapping, doctable/capabilities/mapping.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from doctable.capabilities.borrowed import BORROWED
from doctable.capabilities.consumer import CONSUMER
from doctable.capabilities.kinesis import KINESIS
from doctable.capabilities.mapping import MAPPING, SUBSCRIBER_MAPPINGS
from doctable.capabilities.ownership import OWNERSHIP
from doctable.capabilities.replicas import REPLICAS
from doctable.capabilities.table_options import TABLE_OPTIONS
from doctable.capabilities.table_security import TABLE_SECURITY
from doctable.capabilities.table_shape import TABLE_SHAPE

if TYPE_CHECKING:
    from doctable.capabilities.protocol import Capability, Drifting

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
    SUBSCRIBER_MAPPINGS,
    BORROWED,
)
# The table's own settings, then what streams from it, then the mapping reading it.
DRIFTING: tuple[Drifting, ...] = (TABLE_SHAPE, TABLE_OPTIONS, OWNERSHIP, TABLE_SECURITY, KINESIS, MAPPING)
