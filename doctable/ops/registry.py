"""Every capability, in the order the commands report them: preflight's findings follow ``REGISTRY``, reconcile's
drift follows ``DRIFTING``."""

from __future__ import annotations

from doctable.ops.borrowed import BORROWED
from doctable.ops.capability import Capability, Drifting
from doctable.ops.consumer_plan import CONSUMER
from doctable.ops.kinesis import KINESIS
from doctable.ops.mapping_plan import MAPPING
from doctable.ops.ownership import OWNERSHIP
from doctable.ops.replicas import REPLICAS
from doctable.ops.table_options import TABLE_OPTIONS
from doctable.ops.table_security import TABLE_SECURITY
from doctable.ops.table_shape import TABLE_SHAPE

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
    BORROWED,
)
# The table's own settings, then what streams from it, then the mapping reading it.
DRIFTING: tuple[Drifting, ...] = (TABLE_SHAPE, TABLE_OPTIONS, OWNERSHIP, TABLE_SECURITY, KINESIS, MAPPING)
