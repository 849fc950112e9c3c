"""Converting a live single-region table (``AWS::DynamoDB::Table``) to a global table
(``AWS::DynamoDB::GlobalTable``) with its items kept: CloudFormation cannot change a resource's type in place, so
the table is retained, taken out of the stack, and imported back as a global table (the procedure of CDK's
Table -> TableV2 migration). ``doctable deploy`` drives it (doctable/lifecycle/global_table.py), one step per
CloudFormation operation, each step given to the app in the ``table_handover`` context (not a knob):

- ``retain``: the single-region table as it is live, with DeletionPolicy and UpdateReplacePolicy Retain;
- ``detached``: no table resource (CloudFormation keeps the retained table); what referred to it refers to it by
  its name, ARN and stream ARN (the ``table_stream_arn`` context: the table is kept, so is its stream);
- ``import``: the global table with no replica besides the stack's region, DeletionPolicy Retain, the references
  still literal as in ``detached``, so that the import (``cdk import``) changes nothing else.

The next ordinary deploy (no context) adds the replicas and points the references back at the resource.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from contract.knobs import TABLE_HANDOVER_CONTEXT, TABLE_STREAM_CONTEXT, ConfigError, DocTableConfig

RETAIN, DETACHED, IMPORT = "retain", "detached", "import"
STEPS = (RETAIN, DETACHED, IMPORT)
STREAM_ARN_RE = re.compile(r"^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:\d{12}:table/(?P<table>[^/]+)/stream/\S+$")


@dataclass(frozen=True)
class Handover:
    step: str
    stream_arn: str | None = None

    @property
    def detached(self) -> bool:
        """The stack refers to the table by its name and stream ARN (no single-region table resource)."""
        return self.step in (DETACHED, IMPORT)


def table_handover(step: Any, stream_arn: Any, config: DocTableConfig) -> Handover | None:
    """The ``table_handover`` and ``table_stream_arn`` contexts; None without a step; ConfigError naming every
    problem."""
    if step is None:
        if stream_arn is not None:
            raise ConfigError([f"{TABLE_STREAM_CONTEXT} is given without {TABLE_HANDOVER_CONTEXT}"])
        return None
    problems = []
    if step not in STEPS:
        problems.append(f"{TABLE_HANDOVER_CONTEXT}={step!r}; allowed: {', '.join(STEPS)}")
    if not config.is_global:
        problems.append(
            f"{TABLE_HANDOVER_CONTEXT}={step!r} converts the table to a global table, but replicas=none"
        )
    if step in (DETACHED, IMPORT):
        match = STREAM_ARN_RE.match(str(stream_arn or ""))
        if match is None or match.group("table") != config.table_name:
            problems.append(
                f"{TABLE_STREAM_CONTEXT}={stream_arn!r}; allowed with {TABLE_HANDOVER_CONTEXT}={step}: the stream "
                f"ARN of the live table {config.table_name}"
            )
    if problems:
        raise ConfigError(problems)
    return Handover(str(step), str(stream_arn) if step in (DETACHED, IMPORT) else None)
