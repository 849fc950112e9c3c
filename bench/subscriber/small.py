"""The bench's small team handler: what a subscriber on the Powertools layer does with little work per record
(each new image's attributes read into a dict, one log line per batch). Deployed alone, Lambda calls
``lambda_handler``; through doctable's wrapper, ``handler`` (a batch) or ``on_record`` (per_record)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import Logger

logger = Logger(service="bench-small-subscriber")


def on_record(record: dict[str, Any], context: Any) -> dict[str, Any]:
    image = record["dynamodb"].get("NewImage") or {}
    return {name: next(iter(value.values())) for name, value in image.items()}


def handler(event: dict[str, Any], context: Any) -> dict[str, list[Any]]:
    projected = [on_record(record, context) for record in event["Records"]]
    logger.info("projected", extra={"count": len(projected)})
    return {"batchItemFailures": []}


lambda_handler = handler
