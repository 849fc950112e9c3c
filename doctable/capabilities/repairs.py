"""The calls that restore a live table's settings (reconcile's repairs, a replica's too): their names as the
findings and drift rows spell them, and the one function that makes each."""

from __future__ import annotations

from typing import Any

UPDATE_TABLE, PITR_CALL, INSIGHTS_CALL = "UpdateTable", "UpdateContinuousBackups", "UpdateContributorInsights"
TTL = "UpdateTimeToLive"  # the repair of TTL; PITR and deletion protection share UpdateContinuousBackups/UpdateTable


def period_text(days: int | None) -> str:
    """A PITR recovery period as the rows show it."""
    return "no PITR" if days is None else f"{days} days"


def restore_setting(ddb: Any, name: str, call: str, params: dict[str, Any]) -> None:
    """One repair call on the table ``name`` through the DynamoDB client ``ddb`` (the home table's or, for a
    replica's drift, the client of its region); ClientErrors propagate."""
    if call == TTL:
        ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=params)
    elif call == PITR_CALL:
        ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification=params)
    elif call == UPDATE_TABLE:
        ddb.update_table(TableName=name, **params)
    else:  # pragma: no cover - calls only
        raise ValueError(call)
