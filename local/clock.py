"""The local AWS's clock control: a test says that an interval AWS measures in hours has passed, instead of
waiting for it. ``POST /_doctable/clock`` on the local AWS itself::

    {"ttl_interval_elapsed": "TABLE"}   UpdateTimeToLive's change interval (an hour on AWS) has passed for TABLE,
                                        in every region holding a table of that name: the next change is taken

Answers ``{"tables": [REGION, ...]}``, the regions where it found the table; 404 when none holds it. Nothing
else is moved: item TTL expiry, stream retention and every other wait go by the real clock.
"""

from __future__ import annotations

import json
from typing import Any

PATH = "/_doctable/clock"
TTL_CHANGED_ATTRIBUTE = "doctable_ttl_changed"  # time.monotonic() of the table's last TTL change


def ttl_interval_elapsed(table_name: str) -> list[str]:
    """Forget the last TTL change of every table named ``table_name``; the regions holding one, sorted."""
    from moto.dynamodb.models import dynamodb_backends

    regions: list[str] = []
    for account in list(dynamodb_backends):
        for region, backend in list(dynamodb_backends[account].items()):
            table = backend.tables.get(table_name)
            if table is not None:
                setattr(table, TTL_CHANGED_ATTRIBUTE, None)
                regions.append(region)
    return sorted(regions)


def handle(environ: dict[str, Any], start_response: Any, body: bytes) -> list[bytes]:
    """The WSGI answer to a request on ``PATH`` (its body already read)."""
    if environ.get("REQUEST_METHOD") != "POST":
        return _json(start_response, "405 Method Not Allowed", {"error": "POST only"})
    try:
        spec = json.loads(body or b"{}")
    except ValueError as exc:
        return _json(start_response, "400 Bad Request", {"error": f"not JSON: {exc}"})
    table = spec.get("ttl_interval_elapsed") if isinstance(spec, dict) else None
    if not isinstance(table, str) or not table or set(spec) != {"ttl_interval_elapsed"}:
        return _json(
            start_response, "400 Bad Request", {"error": 'expected {"ttl_interval_elapsed": "<table name>"}'}
        )
    regions = ttl_interval_elapsed(table)
    if not regions:
        return _json(start_response, "404 Not Found", {"error": f"no table named {table!r}"})
    return _json(start_response, "200 OK", {"tables": regions})


def _json(start_response: Any, status: str, body: Any) -> list[bytes]:
    data = json.dumps(body).encode("utf-8")
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]
