"""The replicas knob: the regions besides the environment's own that hold a replica of the table (a global
table), what a global table needs, and what it does not support yet."""

from __future__ import annotations

from typing import Any

from contract.knobs.declare import NONE, OFF, STRING_ARRAY, Knob, Parser, Problems
from contract.knobs.naming import REGION_RE
from contract.knobs.stream import SOURCE_KINESIS, STREAM_NEW_AND_OLD
from contract.knobs.table import ENCRYPTION_CUSTOMER_MANAGED


def _regions(problems: Problems, name: str, value: str) -> tuple[str, ...]:
    """Comma-separated region names (``none`` or empty: none), each once."""
    if value in ("", NONE):
        return ()
    regions = tuple(part.strip() for part in value.split(","))
    seen: set[str] = set()
    for region in regions:
        if not REGION_RE.match(region):
            problems.append(
                f"{name}={region!r} is not a region name; allowed: none or region names such as us-west-2"
            )
        elif region in seen:
            problems.append(f"{name}={region!r} is listed twice; allowed: each region once")
        seen.add(region)
    return regions


def region_list() -> Parser:
    return Parser(
        "none or region names besides the environment's own (in the file an array; -c and DOCTABLE_: "
        "comma-separated)",
        STRING_ARRAY,
        _regions,
    )


REPLICAS = Knob(
    NONE,
    region_list(),
    "regions besides the environment's own holding a replica of the table (a global table, version "
    "2019.11.21; needs stream=new-and-old)",
    "adding a replica copies the table to the new region (online); removing one deletes that region's copy "
    "(destructive)",
)


def replica_rules(problems: Problems, values: dict[str, Any], region: str | None) -> None:
    """What a global table needs, and what it does not support yet."""
    replicas: tuple[str, ...] = values["replicas"]
    if not replicas:
        return
    shown = ",".join(replicas)
    if region is not None and region in replicas:
        problems.append(
            f"replicas={region!r} is the environment's own region (region = {region!r}); allowed: regions "
            "besides the environment's own"
        )
    if values["stream"] != STREAM_NEW_AND_OLD:
        problems.append(
            f"replicas={shown!r} set but stream={values['stream']!r} — a global table replicates through its "
            "NEW_AND_OLD_IMAGES stream: set stream=new-and-old, or replicas=none"
        )
    unsupported = (
        ("encryption", ENCRYPTION_CUSTOMER_MANAGED, "a key per region is needed"),
        ("kinesis", None, "Kinesis Data Streams for DynamoDB is set per replica"),
        ("consumer_source", SOURCE_KINESIS, "the consumer reads each replica's DynamoDB stream"),
    )
    for name, refused, why in unsupported:
        value = values[name]
        if (value != OFF) if refused is None else (value == refused):
            problems.append(
                f"{name}={value!r} is not supported with replicas yet ({why}); allowed with replicas={shown!r}: "
                + ("kinesis=off" if refused is None else f"{name} other than {refused}")
            )
