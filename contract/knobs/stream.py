"""The stream's and the mapping's knobs: the table's DynamoDB stream, its Kinesis data stream, what the mapping
reads, where it starts, how it batches and retries, which records it passes and the metrics it publishes."""

from __future__ import annotations

import re
from typing import Any

from contract.knobs.declare import IN_PLACE, NONE, OFF, ONOFF, Knob, Problems, enum, integer, switch, text

STREAM_NEW_AND_OLD = "new-and-old"
STREAM_VALUES = (NONE, STREAM_NEW_AND_OLD)
STREAM_VIEW_TYPES = {STREAM_NEW_AND_OLD: "NEW_AND_OLD_IMAGES"}
STARTING_TRIM_HORIZON, STARTING_LATEST = "trim-horizon", "latest"
STARTING_POSITION_CFN = {STARTING_TRIM_HORIZON: "TRIM_HORIZON", STARTING_LATEST: "LATEST"}
STARTING_POSITIONS = tuple(STARTING_POSITION_CFN)

# kinesis: Kinesis Data Streams for DynamoDB. "on": the stack creates an on-demand stream; or a stream's ARN.
KINESIS_STREAM_ARN_RE = re.compile(
    r"^arn:aws[a-zA-Z-]*:kinesis:[a-z0-9-]+:\d{12}:stream/[A-Za-z0-9_.-]{1,128}$"
)
SOURCE_DYNAMODB, SOURCE_KINESIS = "dynamodb", "kinesis"  # consumer_source: what the mapping reads
CONSUMER_SOURCES = (SOURCE_DYNAMODB, SOURCE_KINESIS)
KINESIS_RETENTION_HOURS = 24  # the created stream's retention (Kinesis's minimum and default)

BATCH_SIZE_RANGE = (1, 10_000)
# -1 means "retry until the record expires" on AWS; we refuse it: a poison record must not block a shard.
MAX_RETRIES_RANGE = (0, 10_000)
MAX_RECORD_AGE_RANGE = (60, 604_800)  # seconds; AWS allows -1 (infinite) too, refused for the same reason
PARALLELIZATION_RANGE = (1, 10)
BATCHING_WINDOW_RANGE = (0, 300)
# events: which stream records the mapping delivers; cleanup passes only those that can need blob cleanup.
EVENTS_ALL, EVENTS_CLEANUP = "all", "cleanup"
EVENTS_VALUES = (EVENTS_ALL, EVENTS_CLEANUP)
MAPPING_METRICS_VALUES = ONOFF


def _check_kinesis(problems: Problems, name: str, value: str) -> str:
    value = value or OFF
    if value not in ONOFF and not KINESIS_STREAM_ARN_RE.match(value):
        problems.append(
            f"kinesis={value!r} is not allowed; allowed values: off|on|arn:aws:kinesis:<region>:<account>:stream/<name>"
        )
    return value


STREAM = Knob(
    "none",
    enum(STREAM_VALUES),
    "the table's NEW_AND_OLD_IMAGES stream (and, by default, the built-in consumer)",
    "turning it on or off gives a new stream ARN; the mapping is re-created on it",
)
STARTING_POSITION = Knob(
    "trim-horizon",
    enum(STARTING_POSITIONS),
    "where a new mapping starts reading: TRIM_HORIZON misses nothing, LATEST races the first writes",
    "replaces the mapping",
)
# 100, not the seed's 10: one full shard (~1,000 writes/s) with 30% deletes of 3 blobs needs batches this
# size to keep up (doctable plan); an environment may still set 10.
BATCH_SIZE = Knob(
    "100",
    integer(BATCH_SIZE_RANGE),
    "records per invocation (above 1000 needs batching_window)",
    IN_PLACE,
)
BATCHING_WINDOW = Knob(
    "0", integer(BATCHING_WINDOW_RANGE, " seconds"), "how long the mapping gathers a batch", IN_PLACE
)
MAX_RETRIES = Knob(
    "5",
    integer(MAX_RETRIES_RANGE),
    "retries of a failing batch (bisected) before its records go to the failure bucket",
    IN_PLACE,
)
MAX_RECORD_AGE = Knob(
    "21600",
    integer(MAX_RECORD_AGE_RANGE, " seconds"),
    "older records go to the failure bucket instead of being retried",
    IN_PLACE,
)
# 4: four concurrent batches per shard (Lambda keeps each item's changes in order), so a full shard's cleanup
# is not one batch at a time; it costs nothing until batches are there to run.
PARALLELIZATION_FACTOR = Knob(
    "4", integer(PARALLELIZATION_RANGE), "concurrent batches per shard (order kept per key)", IN_PLACE
)
EVENTS = Knob(
    "all",
    enum(EVENTS_VALUES),
    "cleanup: the mapping passes only the records that can need blob cleanup (needs consumer=builtin)",
    "in place, for records polled after the update",
)
MAPPING_METRICS = Knob(
    "on", switch(), "the mapping's EventCount metrics and the DroppedEvents alarm", IN_PLACE
)
KINESIS = Knob(
    "off",
    text("off|on|<Kinesis stream ARN>", _check_kinesis),
    "Kinesis Data Streams for DynamoDB: on creates an on-demand stream, an ARN uses yours",
    "turning it off deletes the stack's stream",
)
CONSUMER_SOURCE = Knob(
    "dynamodb",
    enum(CONSUMER_SOURCES),
    "what the mapping reads: the table's DynamoDB stream or the Kinesis data stream",
    "replaces the mapping",
)


def mapping_rules(problems: Problems, values: dict[str, Any]) -> None:
    """The mapping's options that constrain each other."""
    if values["batch_size"] > 1000 and values["batching_window"] == 0:
        # AWS rejects a DynamoDB mapping with BatchSize > 1000 and no batching window.
        problems.append(
            f"batch_size={values['batch_size']} needs batching_window >= 1 (AWS requires a window above 1000 "
            "records); allowed: batch_size 1..1000 with batching_window 0, or set batching_window"
        )
