"""What changing the mapping's event filter (``events``) or its metrics (``mapping_metrics``) on a live mapping
does and costs: preflight's lines for the two knobs, read from the shapes the deployed and target knobs declare."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contract.findings import Finding, Level
from contract.shape import mapping_shape
from doctable.core.live import FILTER_FIELD, METRICS_FIELD, setting_text

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig


def findings(deployed: DocTableConfig, target: DocTableConfig) -> list[Finding]:
    """Preflight's CHANGE findings for each of the two settings the deploy changes in place (before/after: the
    knobs' values)."""
    before, after = mapping_shape(deployed), mapping_shape(target)
    if before is None or after is None:
        return []  # the mapping is created or deleted: the mapping line says so
    found = []
    if before.filter_patterns != after.filter_patterns:
        live, want = (
            setting_text(FILTER_FIELD, before.filter_criteria),
            setting_text(FILTER_FIELD, after.filter_criteria),
        )
        if after.filter_patterns:
            effect = (
                f"events={target.events}: applies to records polled after the update (a batch already read is "
                "delivered whole); then INSERTs and MODIFYs whose old image lists no blobs are dropped by Lambda, "
                "not retried and not billed as invocations, and no proof line covers them; verify's nudge becomes "
                "a delete"
            )
        else:
            effect = (
                f"events={target.events}: every record polled after the update is delivered (more invocations); "
                "records dropped while the filter was on are not re-read"
            )
        found.append(
            Finding(
                Level.CHANGE, "mapping.events_changed", "mapping events", live, want, effect,
                before=deployed.events, after=target.events,
            )
        )  # fmt: skip
    if before.metrics != after.metrics:
        live, want = (
            setting_text(METRICS_FIELD, before.metrics_config),
            setting_text(METRICS_FIELD, after.metrics_config),
        )
        if after.metrics:
            effect = (
                "the mapping publishes its EventCount metrics (polled, filtered out, invoked, failed to invoke, "
                "dropped, sent to the failure bucket) per EventSourceMappingUUID, charged as CloudWatch metrics, "
                "and the stack adds the DroppedEvents alarm; in place, no re-read"
            )
        else:
            effect = (
                "the EventCount metrics stop (and their CloudWatch charge) and the DroppedEvents alarm is removed: "
                "records lost because the failure bucket refused them go unnoticed; in place, no re-read"
            )
        found.append(
            Finding(
                Level.CHANGE, "mapping.metrics_changed", "mapping metrics", live, want, effect,
                before=deployed.mapping_metrics, after=target.mapping_metrics,
            )
        )  # fmt: skip
    return found
