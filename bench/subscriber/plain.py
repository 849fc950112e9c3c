"""The bench's plain team handler: the same work as ``small.py`` without Powertools (a print per batch)."""

from __future__ import annotations

import json
from typing import Any


def on_record(record: dict[str, Any], context: Any) -> dict[str, Any]:
    image = record["dynamodb"].get("NewImage") or {}
    return {name: next(iter(value.values())) for name, value in image.items()}


def handler(event: dict[str, Any], context: Any) -> dict[str, list[Any]]:
    projected = [on_record(record, context) for record in event["Records"]]
    print(json.dumps({"message": "projected", "count": len(projected)}))
    return {"batchItemFailures": []}


lambda_handler = handler
