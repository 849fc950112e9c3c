"""The consumer's knobs: what the mapping invokes (the built-in consumer, a function of yours, or nothing), the
built-in consumer's function and its blobs (their bucket, root and cleanup), the stack's bucket names, and the
rules that tie them to the stream."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from contract.knobs.declare import (
    IN_PLACE,
    NONE,
    OFF,
    ONOFF,
    Knob,
    Problems,
    enum,
    integer,
    optional_match,
    switch,
    text,
)
from contract.knobs.naming import BUCKET_NAME_RE
from contract.knobs.stream import EVENTS_CLEANUP, SOURCE_DYNAMODB, SOURCE_KINESIS, STREAM_VIEW_TYPES

CONSUMER_AUTO, CONSUMER_BUILTIN = "auto", "builtin"
CONSUMER_MODES = (CONSUMER_AUTO, CONSUMER_BUILTIN, NONE)
POWERTOOLS_LAYER, POWERTOOLS_BUNDLED = "layer", "bundled"
POWERTOOLS_MODES = (POWERTOOLS_LAYER, POWERTOOLS_BUNDLED)
ARCHITECTURES = ("arm64", "x86_64")  # the knob's values are Lambda's architecture names
LAMBDA_ARN_RE = re.compile(
    r"^arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:[a-zA-Z0-9-_]{1,64}(:(\$LATEST|[a-zA-Z0-9-_]+))?$"
)
BLOB_ROOT_RE = re.compile(r"^([A-Za-z0-9!_.*'()-]+/)*$")
MEMORY_RANGE = (128, 10_240)
TIMEOUT_RANGE = (1, 900)
# blob_key_reuse: may the application list a blob key again after a record dropped it (a re-upload under the same
# key)? guarded: yes, and the consumer checks each key before deleting it (a HEAD, the live items, a conditional
# delete); never: every upload gets a new key, so a dropped key is deleted at once (one request per 1,000 keys).
KEY_REUSE_GUARDED, KEY_REUSE_NEVER = "guarded", "never"
KEY_REUSE_VALUES = (KEY_REUSE_GUARDED, KEY_REUSE_NEVER)
BUCKET_NAMES_EXACT, BUCKET_NAMES_GENERATED = "exact", "generated"
BUCKET_NAMES_VALUES = (BUCKET_NAMES_EXACT, BUCKET_NAMES_GENERATED)
# snapstart: on publishes a version of the consumer at each change (Lambda runs its init then and snapshots it) and
# the mapping's alias targets it, so a new execution environment resumes from the snapshot instead of importing.
SNAPSTART_VALUES = ONOFF


def _check_consumer(problems: Problems, name: str, value: str) -> str:
    if value.startswith("arn:"):
        if not LAMBDA_ARN_RE.match(value):
            problems.append(
                f"consumer={value!r} is not a Lambda function ARN; allowed: auto|builtin|none|"
                "arn:aws:lambda:<region>:<account>:function:<name>"
            )
    elif value not in CONSUMER_MODES:
        problems.append(
            f"consumer={value!r} is not allowed; allowed values: auto|builtin|none|<Lambda function ARN>"
        )
    return value


_check_bucket = optional_match(
    lambda value: bool(BUCKET_NAME_RE.match(value)),
    "is not a valid S3 bucket name; allowed: empty (the stack creates one) or 3-63 characters of [a-z0-9.-], "
    "starting and ending with a letter or digit",
)
_check_blob_root = optional_match(
    lambda value: bool(BLOB_ROOT_RE.match(value)) and ".." not in value.split("/"),
    "is malformed; allowed: empty (bucket root) or a key prefix of safe characters ending in '/', e.g. 'blobs/'",
)

CONSUMER = Knob(
    "auto",
    text("auto|builtin|none|<Lambda function ARN>", _check_consumer),
    "what the mapping invokes: the built-in consumer, a function of yours, or nothing",
    "switching re-creates the mapping; none also takes the blob bucket out of the stack",
    per_env="auto is builtin with a stream to read, none without",
)
BLOB_BUCKET = Knob(
    "",
    text("empty|<bucket name>", _check_bucket),
    "empty: the stack creates the blob bucket; a name borrows yours",
    "cleanup moves to the other bucket; the stack's bucket leaves the stack",
)
BUCKET_NAMES = Knob(
    BUCKET_NAMES_EXACT,
    enum(BUCKET_NAMES_VALUES),
    "exact: the stack's buckets are <table>-<account>-<region>-blobs|failures, which doctable policy names "
    "exactly; generated: CloudFormation names them (a stack deployed before this knob has those)",
    "a bucket's name is fixed at creation: a change replaces the stack's buckets (destructive; the old ones are "
    "kept with their objects, docs/environments.md)",
)
BLOB_ROOT = Knob(
    "",
    text("empty|<prefix/>", _check_blob_root),
    "blobs of record (pk, sk) live under <blob_root><pk>/<sk>/",
    IN_PLACE,
)
BLOB_PREFIX_CLEANUP = Knob(
    "off",
    switch(),
    "on REMOVE also delete every object under the record's own prefix",
    "in place; turning it on makes a REMOVE delete unlisted objects too",
)
BLOB_KEY_REUSE = Knob(
    "guarded",
    enum(KEY_REUSE_VALUES),
    "guarded: each dropped key is checked before its conditional delete; never: every upload gets a new key",
    "in place; never deletes dropped keys unchecked",
)
SNAPSTART = Knob(
    "off",
    switch(),
    "Lambda SnapStart for the built-in consumer (a version published at each change)",
    "publishes a version the mapping's alias moves to",
)
POWERTOOLS = Knob(
    "layer",
    enum(POWERTOOLS_MODES),
    "Powertools from its public layer, or copied into the function asset",
    IN_PLACE,
)
ARCHITECTURE = Knob("arm64", enum(ARCHITECTURES), "the consumer function's architecture", IN_PLACE)
# 512: CPU scales with memory, and a batch of 100 parses and signs its requests on it (doctable plan: 0.26 s
# a batch at 512 MB against 0.35 s at 256; the bench's full-shard replay measured 0.27 s at 512).
MEMORY = Knob("512", integer(MEMORY_RANGE, " MB"), "the consumer function's memory", IN_PLACE)
TIMEOUT = Knob("30", integer(TIMEOUT_RANGE, " seconds"), "the consumer function's timeout", IN_PLACE)


def consumer_rules(problems: Problems, raw: Mapping[str, str], values: dict[str, Any]) -> None:
    """What the mapping reads and invokes, and the knobs only the built-in consumer uses."""
    consumer, kinesis, source = values["consumer"], values["kinesis"], values["consumer_source"]
    # The consumer's source: the table's DynamoDB stream, or the Kinesis data stream.
    has_source = kinesis != OFF if source == SOURCE_KINESIS else values["stream"] in STREAM_VIEW_TYPES
    if consumer == CONSUMER_AUTO:
        consumer = values["consumer"] = CONSUMER_BUILTIN if has_source else NONE
    elif consumer != NONE and not has_source and source == SOURCE_DYNAMODB:
        problems.append(
            f"consumer={consumer!r} set but stream=none — enable the stream (stream=new-and-old) "
            "or unset the consumer (consumer=none)"
        )
    if source == SOURCE_KINESIS and kinesis == OFF:
        problems.append(
            "consumer_source='kinesis' set but kinesis='off' — the consumer reads the Kinesis data stream: set "
            "kinesis=on (the stack creates it) or kinesis=<stream ARN>, or consumer_source=dynamodb"
        )
    elif source == SOURCE_KINESIS and consumer == NONE:
        problems.append(
            "consumer_source='kinesis' set but consumer='none' — no mapping reads any stream; "
            "set consumer=builtin|<Lambda function ARN> or consumer_source=dynamodb"
        )
    # Knobs that only the built-in consumer reads: setting them otherwise is a contradiction, not a no-op.
    if consumer != CONSUMER_BUILTIN:
        for name in ("blob_bucket", "blob_root"):
            if raw[name]:
                problems.append(
                    f"{name}={raw[name]!r} set but consumer={consumer!r} — only consumer=builtin uses it"
                )
        if values["blob_prefix_cleanup"]:
            problems.append(
                f"blob_prefix_cleanup='on' set but consumer={consumer!r} — only consumer=builtin cleans blobs"
            )
        if values["blob_key_reuse"] == KEY_REUSE_NEVER:
            problems.append(
                f"blob_key_reuse='never' set but consumer={consumer!r} — only consumer=builtin deletes blobs"
            )
        if values["snapstart"]:
            problems.append(
                f"snapstart='on' set but consumer={consumer!r} — only the built-in consumer's function is "
                "deployed by this stack"
            )
        if values["events"] == EVENTS_CLEANUP:
            problems.append(
                f"events='cleanup' set but consumer={consumer!r} — the filter passes only what the built-in "
                "consumer's blob cleanup needs; set consumer=builtin or events=all"
            )
