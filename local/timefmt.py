"""Timestamps as AWS writes them in logs and failure records: ISO 8601, UTC, milliseconds, ``Z``."""

from __future__ import annotations

import time
from datetime import UTC, datetime


def iso_ms(epoch: float | None = None) -> str:
    """``epoch`` (default: now) as ``2024-05-01T12:00:00.123Z``."""
    moment = datetime.fromtimestamp(time.time() if epoch is None else epoch, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
