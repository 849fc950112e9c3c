"""One invocation's partial-batch response: the batch-wide cleanup, then each record's verdict (a loop, not
Powertools' batch utility: docs/consumer.md)."""

from __future__ import annotations

from typing import Any

from .cleanup import BlobCleaner
from .domain import parse_batch, sequence_number_of


def process(cleaner: BlobCleaner, records: list[Any]) -> dict[str, list[dict[str, Any]]]:
    """``{"batchItemFailures": [...]}`` naming each failed record by its sequence number (every record may)."""
    outcome = cleaner.clean(parse_batch(records, cleaner.settings.table_name))
    failed: list[dict[str, Any]] = []
    try:
        for raw in records:
            number = sequence_number_of(raw)
            try:
                cleaner.settle(outcome, number)
            except Exception:  # the record's verdict: retried by the mapping
                failed.append({"itemIdentifier": number})
    finally:
        cleaner.publish(outcome)
    return {"batchItemFailures": failed}
