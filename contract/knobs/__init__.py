"""The knobs: each declared once, as a field of the frozen, typed config (its default, parser, meaning and what a
change does on a live stack); the config type, the defaults, the validation and the docs all come from there.

Pure Python on purpose (no CDK import): the console script resolves knobs exactly as the app does, and the
unit tests exercise every rule without synthesizing anything. Where the values come from (doctable.toml, then
-c and DOCTABLE_ overrides) is contract/settings/resolve.py. Every knob value literal lives here; the rest of
the project reads the config's derived facts (``has_gsi``, ``starting_position_cfn``, ...), never raw strings.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from contract import indexes as index_specs
from contract import names, policy_doc
from contract import subscribers as subscriber_specs

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PLAN_SOURCE = "doctable"
PLAN_VERSION = "2026-11-29"
MANAGED_BY = "ephemera"

# Closed enums. Order is the order shown in error messages. The CloudFormation value each maps to stands beside it.
OFF, ON = "off", "on"
ONOFF = (OFF, ON)
NONE = "none"
GSI_VALUES = (NONE, names.GSI_NAME)  # the knob's value is the index's name
# What gsi=gsi1 declares: the generic index on gsi1pk/gsi1sk, strings, projection ALL.
GSI_SHORTHAND = (
    index_specs.IndexSpec(
        name=names.GSI_NAME, partition=(names.GSI_PARTITION_KEY, "S"), sort=(names.GSI_SORT_KEY, "S")
    ),
)
TTL_VALUES = ONOFF
STREAM_NEW_AND_OLD = "new-and-old"
STREAM_VALUES = (NONE, STREAM_NEW_AND_OLD)
STREAM_VIEW_TYPES = {STREAM_NEW_AND_OLD: "NEW_AND_OLD_IMAGES"}
PITR_VALUES = ONOFF
# The environments the shipped settings file declares (and the ones a run without a settings file may choose):
# each is its own tier. A settings file may declare any others (ENV_NAME_RE), each with its tier.
ENV_VALUES = ("dev", "stg", "uat", "prod")
ENV_NAME_RE = re.compile(r"^[a-z][a-z0-9-]*$")
ENV_NAME_ALLOWED = "lower-case letters, digits and -, starting with a letter"
# A tier carries the rules an environment's data lives by; an environment's tier is set in the settings file only.
TIERS = ("dev", "stg", "uat", "prod")
PROD_TIER = "prod"
RETAINING_TIERS = ("uat", "prod")  # data survives a stack deletion
PROTECTED_TIERS = (PROD_TIER,)  # deletion protection: teardown needs a deliberate unlock step
CONSUMER_AUTO, CONSUMER_BUILTIN = "auto", "builtin"
CONSUMER_MODES = (CONSUMER_AUTO, CONSUMER_BUILTIN, NONE)
STARTING_TRIM_HORIZON, STARTING_LATEST = "trim-horizon", "latest"
STARTING_POSITION_CFN = {STARTING_TRIM_HORIZON: "TRIM_HORIZON", STARTING_LATEST: "LATEST"}
STARTING_POSITIONS = tuple(STARTING_POSITION_CFN)
POWERTOOLS_LAYER, POWERTOOLS_BUNDLED = "layer", "bundled"
POWERTOOLS_MODES = (POWERTOOLS_LAYER, POWERTOOLS_BUNDLED)
ARCHITECTURES = ("arm64", "x86_64")  # the knob's values are Lambda's architecture names
DEPLOY_AWS, DEPLOY_LOCAL = "aws", "local"
DEPLOY_TARGETS = (DEPLOY_AWS, DEPLOY_LOCAL)
AUTO = "auto"  # pitr, deletion_protection: the environment decides
ENV_DEFAULT_VALUES = (AUTO, OFF, ON)
PITR_TIERS = (PROD_TIER,)  # PITR is on unless set off explicitly
TABLE_CLASS_CFN = {"standard": "STANDARD", "standard-ia": "STANDARD_INFREQUENT_ACCESS"}  # TableClass
TABLE_CLASSES = tuple(TABLE_CLASS_CFN)
TABLE_CLASS_DEFAULT_CFN = TABLE_CLASS_CFN["standard"]  # what a table without TableClassSummary has
CONTRIBUTOR_INSIGHTS_CFN = {  # ContributorInsightsSpecification.Mode; off is Enabled false
    "throttled-keys": "THROTTLED_KEYS",
    "accessed-and-throttled-keys": "ACCESSED_AND_THROTTLED_KEYS",
}
CONTRIBUTOR_INSIGHTS_MODES = (OFF, *CONTRIBUTOR_INSIGHTS_CFN)
ENCRYPTION_AWS_OWNED, ENCRYPTION_AWS_MANAGED, ENCRYPTION_CUSTOMER_MANAGED = (
    "aws-owned",
    "aws-managed",
    "customer-managed",
)
ENCRYPTION_VALUES = (ENCRYPTION_AWS_OWNED, ENCRYPTION_AWS_MANAGED, ENCRYPTION_CUSTOMER_MANAGED)
KMS_KEY_ARN_RE = re.compile(
    r"^arn:aws[a-zA-Z-]*:kms:[a-z0-9-]+:\d{12}:key/"
    r"(mrk-[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$"
)

# kinesis: Kinesis Data Streams for DynamoDB. "on": the stack creates an on-demand stream; or a stream's ARN.
KINESIS_STREAM_ARN_RE = re.compile(
    r"^arn:aws[a-zA-Z-]*:kinesis:[a-z0-9-]+:\d{12}:stream/[A-Za-z0-9_.-]{1,128}$"
)
SOURCE_DYNAMODB, SOURCE_KINESIS = "dynamodb", "kinesis"  # consumer_source: what the mapping reads
CONSUMER_SOURCES = (SOURCE_DYNAMODB, SOURCE_KINESIS)
KINESIS_RETENTION_HOURS = 24  # the created stream's retention (Kinesis's minimum and default)
# replicas: the regions besides the environment's own that hold a replica of the table (a global table, version
# 2019.11.21). The settings file's `region` binding is checked against the same pattern.
REGION_RE = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d{1,2}$")

TABLE_BASE_RE = re.compile(r"^[a-z0-9-]+$")
# DynamoDB allows 3..255 characters; the stack name (``doctable-<table>``) is the tighter bound: 128.
STACK_PREFIX = "doctable-"
STACK_NAME_MAX = 128
# CloudFormation names what it generates for a stack <stack>-<logical id>-<13-character suffix> within the resource's
# own limit (64 for a Lambda function and an IAM role), shortening the logical id first. doctable's policies and
# commands match the consumer's function, its role and its log group by ``<stack>-*``, so the stack name must stay
# whole in them: at most 64 - 13 - 2 separators - 1 character of logical id = 48 (a replica region's stack,
# ``<stack>-<region>``, too).
GENERATED_NAME_MAX = 64
GENERATED_SUFFIX = 13
PREFIXED_STACK_MAX = GENERATED_NAME_MAX - GENERATED_SUFFIX - 3
TABLE_NAME_MIN = 3
TABLE_NAME_MAX = STACK_NAME_MAX - len(STACK_PREFIX)
LAMBDA_ARN_RE = re.compile(
    r"^arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:[a-zA-Z0-9-_]{1,64}(:(\$LATEST|[a-zA-Z0-9-_]+))?$"
)
BUCKET_NAME_RE = re.compile(r"^(?!xn--)(?!sthree-)(?!.*\.\.)(?!.*-s3alias$)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
BLOB_ROOT_RE = re.compile(r"^([A-Za-z0-9!_.*'()-]+/)*$")
# AWS tag rules: letters, digits, spaces and + - = . _ : / @ ; value <= 256 chars.
TAG_VALUE_RE = re.compile(r"^[\w\s+\-=.:/@]*$", re.UNICODE)
TAG_VALUE_MAX = 256

BATCH_SIZE_RANGE = (1, 10_000)
# -1 means "retry until the record expires" on AWS; we refuse it: a poison record must not block a shard.
MAX_RETRIES_RANGE = (0, 10_000)
MAX_RECORD_AGE_RANGE = (60, 604_800)  # seconds; AWS allows -1 (infinite) too, refused for the same reason
PARALLELIZATION_RANGE = (1, 10)
BATCHING_WINDOW_RANGE = (0, 300)
MEMORY_RANGE = (128, 10_240)
TIMEOUT_RANGE = (1, 900)
# events: which stream records the mapping delivers; cleanup passes only those that can need blob cleanup.
EVENTS_ALL, EVENTS_CLEANUP = "all", "cleanup"
EVENTS_VALUES = (EVENTS_ALL, EVENTS_CLEANUP)
MAPPING_METRICS_VALUES = ONOFF
# blob_key_reuse: may the application list a blob key again after a record dropped it (a re-upload under the same
# key)? guarded: yes, and the consumer checks each key before deleting it (a HEAD, the live items, a conditional
# delete); never: every upload gets a new key, so a dropped key is deleted at once (one request per 1,000 keys).
KEY_REUSE_GUARDED, KEY_REUSE_NEVER = "guarded", "never"
KEY_REUSE_VALUES = (KEY_REUSE_GUARDED, KEY_REUSE_NEVER)
BUCKET_NAMES_EXACT, BUCKET_NAMES_GENERATED = "exact", "generated"
BUCKET_NAMES_VALUES = (BUCKET_NAMES_EXACT, BUCKET_NAMES_GENERATED)
# A knob that a stack's knob record predates, with the value such a stack was deployed with: its buckets were named
# by CloudFormation. Read back so, a deploy of settings that leave the knob at its default (exact) is a rename of
# the buckets (bucket.renamed, destructive), which the gate stops until the file keeps the names or says yes.
RECORD_PREDATES = {"bucket_names": BUCKET_NAMES_GENERATED}
# snapstart: on publishes a version of the consumer at each change (Lambda runs its init then and snapshots it) and
# the mapping's alias targets it, so a new execution environment resumes from the snapshot instead of importing.
SNAPSTART_VALUES = ONOFF
PITR_DAYS_RANGE = (1, 35)  # PointInTimeRecoverySpecification.RecoveryPeriodInDays (AWS's default: 35)
# OnDemandThroughput.MaxRead/WriteRequestUnits: AWS takes >= 1 (-1 lifts the cap); 40,000 is the per-table
# quota an on-demand table gets by default, so a higher cap guards nothing.
MAX_THROUGHPUT_RANGE = (1, 40_000)
# WarmThroughput.Read/WriteUnitsPerSecond: an on-demand table starts warm at 12,000 reads and 4,000 writes per
# second and DynamoDB refuses less; the upper bound is the same per-table quota.
WARM_READ_RANGE = (12_000, 40_000)
WARM_WRITE_RANGE = (4_000, 40_000)


def _enum(problems: list[str], name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        problems.append(f"{name}={value!r} is not allowed; allowed values: {'|'.join(allowed)}")
    return value


def _int(problems: list[str], name: str, value: str, bounds: tuple[int, int], unit: str = "") -> int:
    lo, hi = bounds
    try:
        number = int(value)
    except ValueError:
        problems.append(f"{name}={value!r} is not an integer; allowed: an integer from {lo} to {hi}{unit}")
        return lo
    if not lo <= number <= hi:
        problems.append(f"{name}={value!r} is out of range; allowed: an integer from {lo} to {hi}{unit}")
    return number


def _optional_int(
    problems: list[str], name: str, value: str, bounds: tuple[int, int], unit: str = ""
) -> int | None:
    """``off`` (or empty) is None; else an integer within ``bounds``."""
    if value in ("", OFF):
        return None
    lo, hi = bounds
    try:
        number = int(value)
    except ValueError:
        problems.append(
            f"{name}={value!r} is not allowed; allowed: off or an integer from {lo} to {hi}{unit}"
        )
        return None
    if not lo <= number <= hi:
        problems.append(
            f"{name}={value!r} is out of range; allowed: off or an integer from {lo} to {hi}{unit}"
        )
    return number


def _tag_value(problems: list[str], name: str, value: str) -> str:
    if len(value) > TAG_VALUE_MAX or not TAG_VALUE_RE.match(value) or value.lower().startswith("aws:"):
        problems.append(
            f"{name}={value!r} is not a valid AWS tag value; allowed: at most {TAG_VALUE_MAX} letters, digits, "
            "spaces and + - = . _ : / @, not starting with 'aws:'"
        )
    return value


class ConfigError(ValueError):
    """Every knob problem found at once, one line each, naming the knob, the value given and what is allowed."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid doctable configuration:\n  - " + "\n  - ".join(problems))


# ------------------------------------------------------------------------------------ knob declarations
# A parser turns a knob's text (as `-c`, a DOCTABLE_ variable or the settings file give it) into the config's
# value, appending one line per problem; ``allowed`` is what errors and the generated docs say is allowed, and
# ``toml`` the TOML type the settings file writes it as.
STRING, INTEGER, INTEGER_OR_OFF = "string", "integer", "integer or off"
STRING_ARRAY = "array of strings"  # -c and DOCTABLE_ give it as comma-separated text
Problems = list[str]


@dataclass(frozen=True)
class Parser:
    allowed: str
    toml: str
    parse: Callable[[Problems, str, str], Any]


def enum(values: tuple[str, ...]) -> Parser:
    return Parser(
        "|".join(values), STRING, lambda problems, name, value: _enum(problems, name, value, values)
    )


def switch() -> Parser:
    """off|on, the config's value a bool."""
    return Parser("off|on", STRING, lambda problems, name, value: _enum(problems, name, value, ONOFF) == ON)


def integer(bounds: tuple[int, int], unit: str = "") -> Parser:
    return Parser(
        f"{bounds[0]}..{bounds[1]}{unit}",
        INTEGER,
        lambda problems, name, value: _int(problems, name, value, bounds, unit),
    )


def optional_integer(bounds: tuple[int, int], unit: str = "") -> Parser:
    return Parser(
        f"off|{bounds[0]}..{bounds[1]}{unit}",
        INTEGER_OR_OFF,
        lambda problems, name, value: _optional_int(problems, name, value, bounds, unit),
    )


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


def text(allowed: str, check: Callable[[Problems, str, str], Any] | None = None) -> Parser:
    """Free text checked by ``check`` (or taken as it is); cross-knob rules come after."""
    return Parser(allowed, STRING, check or (lambda problems, name, value: value))


@dataclass(frozen=True)
class Knob:
    """One knob: its default (as text), its parser, what it means, and what changing it does on a live stack."""

    default: str
    parser: Parser
    meaning: str
    live: str
    per_env: str = ""  # the rule by which ``auto`` depends on the environment, when it does
    # Chosen for each run, never written in the settings file: which environment, and where it is deployed.
    per_run: bool = False
    # Written in an environment's table of the settings file only: never [defaults], -c or DOCTABLE_ (the tier).
    file_only: bool = False


KNOB_METADATA = "doctable.knob"


def knob(
    default: str,
    parser: Parser,
    meaning: str,
    live: str,
    per_env: str = "",
    *,
    per_run: bool = False,
    file_only: bool = False,
) -> Any:
    """A DocTableConfig field declared as a knob: everything about the knob sits in this one call."""
    return field(metadata={KNOB_METADATA: Knob(default, parser, meaning, live, per_env, per_run, file_only)})


def _check_env(problems: Problems, name: str, value: str) -> str:
    if not ENV_NAME_RE.match(value):
        problems.append(f"env={value!r} is not an environment name; allowed: {ENV_NAME_ALLOWED}")
    return value


def _check_table_base(problems: Problems, name: str, value: str) -> str:
    if not TABLE_BASE_RE.match(value):
        problems.append(f"table_base={value!r} is malformed; allowed: one or more of [a-z0-9-]")
    return value


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


def _check_kinesis(problems: Problems, name: str, value: str) -> str:
    value = value or OFF
    if value not in ONOFF and not KINESIS_STREAM_ARN_RE.match(value):
        problems.append(
            f"kinesis={value!r} is not allowed; allowed values: off|on|arn:aws:kinesis:<region>:<account>:stream/<name>"
        )
    return value


def _optional_match(valid: Callable[[str], bool], complaint: str) -> Callable[[Problems, str, str], str]:
    """A check of text that may be empty and is otherwise ``valid``; ``complaint`` follows ``name='value'``."""

    def check(problems: Problems, name: str, value: str) -> str:
        if value and not valid(value):
            problems.append(f"{name}={value!r} {complaint}")
        return value

    return check


_check_bucket = _optional_match(
    lambda value: bool(BUCKET_NAME_RE.match(value)),
    "is not a valid S3 bucket name; allowed: empty (the stack creates one) or 3-63 characters of [a-z0-9.-], "
    "starting and ending with a letter or digit",
)
_check_blob_root = _optional_match(
    lambda value: bool(BLOB_ROOT_RE.match(value)) and ".." not in value.split("/"),
    "is malformed; allowed: empty (bucket root) or a key prefix of safe characters ending in '/', e.g. 'blobs/'",
)
_check_kms_key = _optional_match(
    lambda value: bool(KMS_KEY_ARN_RE.match(value)),
    "is not a KMS key ARN; allowed: empty (the stack creates the key) or arn:aws:kms:<region>:<account>:key/<key id>",
)


def _check_resource_policy(problems: Problems, name: str, value: str) -> str:
    value = value or OFF
    if value != OFF:
        try:
            policy_doc.load_policy_document(value)
        except policy_doc.PolicyDocumentError as exc:
            problems.append(str(exc))
    return value


IN_PLACE = "in place"
INDEXES = "indexes"  # the settings key (and knob-record key) of the declared indexes


@dataclass(frozen=True)
class DocTableConfig:
    """The resolved knobs. Each field is one knob's whole declaration; derived facts follow as properties."""

    gsi: str = knob(
        "none",
        enum(GSI_VALUES),
        "the generic index gsi1 on gsi1pk/gsi1sk (strings, projection ALL)",
        "adding it is an online backfill (queries on it are refused until ACTIVE); removing it deletes the index",
    )
    ttl: str = knob(
        "off",
        enum(TTL_VALUES),
        "TTL on expiresAt (epoch seconds); expiry lags up to ~48 h",
        "cheap but rate-limited (about one change an hour); turning it on deletes every item already expired",
    )
    stream: str = knob(
        "none",
        enum(STREAM_VALUES),
        "the table's NEW_AND_OLD_IMAGES stream (and, by default, the built-in consumer)",
        "turning it on or off gives a new stream ARN; the mapping is re-created on it",
    )
    pitr: str = knob(
        "auto",
        enum(ENV_DEFAULT_VALUES),
        "point-in-time recovery (continuous backups, billed on table size)",
        "a toggle in place; turning it off drops the restore window",
        per_env="auto is on in the prod tier, off in the others",
    )
    table_base: str = knob(
        "items",
        text("[a-z0-9-]+", _check_table_base),
        f"the table is <table_base>-<env>, its stack doctable-<table_base>-<env> (at most {PREFIXED_STACK_MAX} characters)",
        "a new name is a new table: a migration with a data copy",
    )
    env: str = knob(
        "dev",
        text(f"an environment the settings file declares ({ENV_NAME_ALLOWED})", _check_env),
        "the environment: its names and the Environment tag (its tier says how its data is kept)",
        "each environment is its own stack",
        per_run=True,
    )
    tier: str = knob(
        AUTO,
        enum((AUTO, *TIERS)),
        "the environment's tier: deletion protection and PITR by default, RETAIN on delete and what the gate "
        "guards; set in [environments.<env>] only, never per run",
        "a change to or from prod goes through the gate; lowering prod's protections is destructive",
        per_env="auto is the environment's own name for dev, stg, uat and prod; any other environment says its tier",
        file_only=True,
    )
    cost_center: str = knob(
        "",
        text("an AWS tag value", _tag_value),
        "the CostCenter tag (dropped when empty)",
        "tags update in place",
    )
    owner: str = knob(
        "", text("an AWS tag value", _tag_value), "the Owner tag (dropped when empty)", "tags update in place"
    )
    consumer: str = knob(
        "auto",
        text("auto|builtin|none|<Lambda function ARN>", _check_consumer),
        "what the mapping invokes: the built-in consumer, a function of yours, or nothing",
        "switching re-creates the mapping; none also takes the blob bucket out of the stack",
        per_env="auto is builtin with a stream to read, none without",
    )
    blob_bucket: str = knob(
        "",
        text("empty|<bucket name>", _check_bucket),
        "empty: the stack creates the blob bucket; a name borrows yours",
        "cleanup moves to the other bucket; the stack's bucket leaves the stack",
    )
    bucket_names: str = knob(
        BUCKET_NAMES_EXACT,
        enum(BUCKET_NAMES_VALUES),
        "exact: the stack's buckets are <table>-<account>-<region>-blobs|failures, which doctable policy names "
        "exactly; generated: CloudFormation names them (a stack deployed before this knob has those)",
        "a bucket's name is fixed at creation: a change replaces the stack's buckets (destructive; the old ones are "
        "kept with their objects, docs/environments.md)",
    )
    blob_root: str = knob(
        "",
        text("empty|<prefix/>", _check_blob_root),
        "blobs of record (pk, sk) live under <blob_root><pk>/<sk>/",
        IN_PLACE,
    )
    blob_prefix_cleanup: bool = knob(
        "off",
        switch(),
        "on REMOVE also delete every object under the record's own prefix",
        "in place; turning it on makes a REMOVE delete unlisted objects too",
    )
    blob_key_reuse: str = knob(
        "guarded",
        enum(KEY_REUSE_VALUES),
        "guarded: each dropped key is checked before its conditional delete; never: every upload gets a new key",
        "in place; never deletes dropped keys unchecked",
    )
    snapstart: bool = knob(
        "off",
        switch(),
        "Lambda SnapStart for the built-in consumer (a version published at each change)",
        "publishes a version the mapping's alias moves to",
    )
    starting_position: str = knob(
        "trim-horizon",
        enum(STARTING_POSITIONS),
        "where a new mapping starts reading: TRIM_HORIZON misses nothing, LATEST races the first writes",
        "replaces the mapping",
    )
    # 100, not the seed's 10: one full shard (~1,000 writes/s) with 30% deletes of 3 blobs needs batches this
    # size to keep up (doctable plan); an environment may still set 10.
    batch_size: int = knob(
        "100",
        integer(BATCH_SIZE_RANGE),
        "records per invocation (above 1000 needs batching_window)",
        IN_PLACE,
    )
    batching_window: int = knob(
        "0", integer(BATCHING_WINDOW_RANGE, " seconds"), "how long the mapping gathers a batch", IN_PLACE
    )
    max_retries: int = knob(
        "5",
        integer(MAX_RETRIES_RANGE),
        "retries of a failing batch (bisected) before its records go to the failure bucket",
        IN_PLACE,
    )
    max_record_age: int = knob(
        "21600",
        integer(MAX_RECORD_AGE_RANGE, " seconds"),
        "older records go to the failure bucket instead of being retried",
        IN_PLACE,
    )
    # 4: four concurrent batches per shard (Lambda keeps each item's changes in order), so a full shard's cleanup
    # is not one batch at a time; it costs nothing until batches are there to run.
    parallelization_factor: int = knob(
        "4", integer(PARALLELIZATION_RANGE), "concurrent batches per shard (order kept per key)", IN_PLACE
    )
    powertools: str = knob(
        "layer",
        enum(POWERTOOLS_MODES),
        "Powertools from its public layer, or copied into the function asset",
        IN_PLACE,
    )
    architecture: str = knob("arm64", enum(ARCHITECTURES), "the consumer function's architecture", IN_PLACE)
    # 512: CPU scales with memory, and a batch of 100 parses and signs its requests on it (doctable plan: 0.26 s
    # a batch at 512 MB against 0.35 s at 256; the bench's full-shard replay measured 0.27 s at 512).
    memory: int = knob("512", integer(MEMORY_RANGE, " MB"), "the consumer function's memory", IN_PLACE)
    timeout: int = knob("30", integer(TIMEOUT_RANGE, " seconds"), "the consumer function's timeout", IN_PLACE)
    deploy_target: str = knob(
        "aws",
        enum(DEPLOY_TARGETS),
        "local drops the bootstrap-version rule the local AWS cannot evaluate (doctable local env sets it)",
        "none",
        per_run=True,
    )
    events: str = knob(
        "all",
        enum(EVENTS_VALUES),
        "cleanup: the mapping passes only the records that can need blob cleanup (needs consumer=builtin)",
        "in place, for records polled after the update",
    )
    mapping_metrics: bool = knob(
        "on", switch(), "the mapping's EventCount metrics and the DroppedEvents alarm", IN_PLACE
    )
    table_class: str = knob(
        "standard",
        enum(TABLE_CLASSES),
        "STANDARD or STANDARD_INFREQUENT_ACCESS (cheaper storage, dearer requests)",
        "in place; AWS allows two class changes per table in 30 days",
    )
    max_read: int | None = knob(
        "off",
        optional_integer(MAX_THROUGHPUT_RANGE, " read units"),
        "on-demand read cap (a cost guard)",
        IN_PLACE,
    )
    max_write: int | None = knob(
        "off",
        optional_integer(MAX_THROUGHPUT_RANGE, " write units"),
        "on-demand write cap (a cost guard)",
        IN_PLACE,
    )
    warm_read: int | None = knob(
        "off",
        optional_integer(WARM_READ_RANGE, " reads/s"),
        "warm throughput for reads",
        "in place; it only rises",
    )
    warm_write: int | None = knob(
        "off",
        optional_integer(WARM_WRITE_RANGE, " writes/s"),
        "warm throughput for writes",
        "in place; it only rises",
    )
    pitr_days: int | None = knob(
        "off",
        optional_integer(PITR_DAYS_RANGE, " days"),
        "PITR's recovery period (off: AWS's 35 days); needs PITR on",
        "in place; a shorter window drops the older restore points",
    )
    deletion_protection: bool = knob(
        "auto",
        enum(ENV_DEFAULT_VALUES),
        "the table cannot be deleted until this is turned off",
        "a toggle in place; off makes the table deletable",
        per_env="auto is on in the prod tier, off in the others",
    )
    contributor_insights: str = knob(
        "off",
        enum(CONTRIBUTOR_INSIGHTS_MODES),
        "CloudWatch Contributor Insights on the table's keys",
        IN_PLACE,
    )
    encryption: str = knob(
        "aws-owned",
        enum(ENCRYPTION_VALUES),
        "encryption at rest of the table, its stream and the stack's buckets",
        "the key changes in place (a change of key is refused by the deploy gate without a yes)",
    )
    kms_key: str = knob(
        "",
        text("empty|<KMS key ARN>", _check_kms_key),
        "with customer-managed: a key of yours (empty: the stack creates one)",
        "changes the key",
    )
    resource_policy: str = knob(
        "off",
        text("off|<path to a JSON policy document>", _check_resource_policy),
        "the table's resource-based policy ({{account}} and {{table_arn}} filled in)",
        IN_PLACE,
    )
    kinesis: str = knob(
        "off",
        text("off|on|<Kinesis stream ARN>", _check_kinesis),
        "Kinesis Data Streams for DynamoDB: on creates an on-demand stream, an ARN uses yours",
        "turning it off deletes the stack's stream",
    )
    consumer_source: str = knob(
        "dynamodb", enum(CONSUMER_SOURCES),
        "what the mapping reads: the table's DynamoDB stream or the Kinesis data stream",
        "replaces the mapping",
    )  # fmt: skip
    replicas: tuple[str, ...] = knob(
        NONE,
        region_list(),
        "regions besides the environment's own holding a replica of the table (a global table, version "
        "2019.11.21; needs stream=new-and-old)",
        "adding a replica copies the table to the new region (online); removing one deletes that region's copy "
        "(destructive)",
    )

    # ---- derived facts: every downstream decision reads these, never the raw strings ----
    # The table's own secondary indexes: structured, so declared only in the settings file (contract/indexes.py),
    # never by -c or DOCTABLE_ variables; not a knob.
    indexes: tuple[index_specs.IndexSpec, ...] = field(default=())
    # A team's own stream consumers (contract/subscribers.py): declared in the settings file only; not a knob.
    subscribers: tuple[subscriber_specs.SubscriberSpec, ...] = field(default=())
    # A preview environment's template and expiry (PREVIEW_CONTEXT), carried to its stacks' tags; not knobs.
    preview_of: str = field(default="")
    expires_at: str = field(default="")
    # The project's identity (contract/settings/project.py), the Project tag: the settings file gives it; not a knob.
    project: str = field(default="")

    @property
    def table_name(self) -> str:
        return f"{self.table_base}-{self.env}"

    @property
    def stack_name(self) -> str:
        return f"{STACK_PREFIX}{self.table_name}"

    @property
    def exact_bucket_names(self) -> bool:
        """The stack names its buckets itself (contract.names.bucket_name), not CloudFormation."""
        return self.bucket_names == BUCKET_NAMES_EXACT

    @property
    def is_global(self) -> bool:
        """The table has replicas in other regions: an AWS::DynamoDB::GlobalTable."""
        return bool(self.replicas)

    def replica_stack_name(self, region: str) -> str:
        """The stack of the consumer reading the replica in ``region``."""
        return f"{self.stack_name}-{region}"

    @property
    def has_gsi(self) -> bool:
        return self.gsi == names.GSI_NAME

    @property
    def has_ttl(self) -> bool:
        return self.ttl == ON

    @property
    def has_stream(self) -> bool:
        return self.stream in STREAM_VIEW_TYPES

    @property
    def stream_view_type(self) -> str | None:
        """The table's StreamViewType, or None without a stream."""
        return STREAM_VIEW_TYPES.get(self.stream)

    @property
    def has_pitr(self) -> bool:
        return self.pitr == ON

    @property
    def builtin_consumer(self) -> bool:
        return self.consumer == CONSUMER_BUILTIN

    @property
    def borrowed_consumer_arn(self) -> str | None:
        return self.consumer if self.consumer.startswith("arn:") else None

    @property
    def has_mapping(self) -> bool:
        return self.builtin_consumer or self.borrowed_consumer_arn is not None

    @property
    def guards_key_reuse(self) -> bool:
        """The consumer observes each dropped key and reads the live items before a conditional delete."""
        return self.blob_key_reuse == KEY_REUSE_GUARDED

    @property
    def has_kinesis(self) -> bool:
        """Table changes are also written to a Kinesis data stream (Kinesis Data Streams for DynamoDB)."""
        return self.kinesis != OFF

    @property
    def creates_kinesis_stream(self) -> bool:
        return self.kinesis == ON

    @property
    def borrowed_kinesis_arn(self) -> str | None:
        return self.kinesis if self.kinesis.startswith("arn:") else None

    @property
    def reads_kinesis(self) -> bool:
        """The mapping reads the Kinesis data stream instead of the table's DynamoDB stream."""
        return self.has_mapping and self.consumer_source == SOURCE_KINESIS

    @property
    def pitr_by_default(self) -> bool:
        """The environment turns PITR on unless the knob sets it off."""
        return self.tier in PITR_TIERS

    @property
    def table_class_cfn(self) -> str:
        return TABLE_CLASS_CFN[self.table_class]

    @property
    def on_demand_throughput(self) -> dict[str, int] | None:
        """OnDemandThroughput as CloudFormation and DescribeTable spell it; None without a cap."""
        caps = {"MaxReadRequestUnits": self.max_read, "MaxWriteRequestUnits": self.max_write}
        return {k: v for k, v in caps.items() if v is not None} or None

    @property
    def warm_throughput(self) -> dict[str, int] | None:
        """WarmThroughput as CloudFormation spells it; None when the knobs leave it to DynamoDB."""
        warm = {"ReadUnitsPerSecond": self.warm_read, "WriteUnitsPerSecond": self.warm_write}
        return {k: v for k, v in warm.items() if v is not None} or None

    @property
    def contributor_insights_mode(self) -> str | None:
        """ContributorInsightsSpecification.Mode; None when contributor insights are off."""
        return CONTRIBUTOR_INSIGHTS_CFN.get(self.contributor_insights)

    def warnings(self) -> list[str]:
        """Allowed choices that drop one of the prod tier's protections: printed at synth."""
        found = []
        where = f"env={self.env} (tier {self.tier})"
        if self.pitr_by_default and not self.has_pitr:
            found.append(f"{where} with pitr=off: the table has no point-in-time recovery")
        if self.tier in PROTECTED_TIERS and not self.deletion_protection:
            found.append(
                f"{where} with deletion_protection=off: the table can be deleted without an unlock step"
            )
        return found

    @property
    def retain_on_delete(self) -> bool:
        """The uat and prod tiers keep their data when the stack goes; dev and stg are rebuilt at will."""
        return self.tier in RETAINING_TIERS

    @property
    def is_prod(self) -> bool:
        return self.tier == PROD_TIER

    @property
    def starting_position_cfn(self) -> str:
        return STARTING_POSITION_CFN[self.starting_position]

    @property
    def bundles_powertools(self) -> bool:
        """Powertools copied into the function asset instead of the public layer."""
        return self.powertools == POWERTOOLS_BUNDLED

    @property
    def is_local(self) -> bool:
        return self.deploy_target == DEPLOY_LOCAL

    @property
    def filters_events(self) -> bool:
        """The mapping passes only the records that can need blob cleanup (REMOVE, MODIFY with old blobs)."""
        return self.events == EVENTS_CLEANUP

    @property
    def has_mapping_metrics(self) -> bool:
        """The mapping publishes its EventCount metrics (polled, filtered out, invoked, failed, dropped...)."""
        return self.mapping_metrics

    @property
    def customer_managed_key(self) -> bool:
        """The table and the stack's buckets are encrypted with a customer managed KMS key."""
        return self.encryption == ENCRYPTION_CUSTOMER_MANAGED

    @property
    def aws_managed_key(self) -> bool:
        """The AWS managed keys (aws/dynamodb, aws/s3): KMS encryption with no key of the stack's own."""
        return self.encryption == ENCRYPTION_AWS_MANAGED

    @property
    def creates_kms_key(self) -> bool:
        return self.customer_managed_key and not self.kms_key

    @property
    def borrowed_kms_key_arn(self) -> str | None:
        return self.kms_key or None

    @property
    def has_resource_policy(self) -> bool:
        return self.resource_policy != OFF

    @property
    def resource_policy_path(self) -> str | None:
        return self.resource_policy if self.has_resource_policy else None

    def tags(self) -> dict[str, str]:
        """Provenance tags in a stable order; an empty CostCenter, Owner or Project is dropped, not written empty."""
        tags = {
            "ManagedBy": MANAGED_BY,
            "Source": PLAN_SOURCE,
            "Project": self.project,
            "PlanVersion": PLAN_VERSION,
            "CostCenter": self.cost_center,
            "Owner": self.owner,
            "Environment": self.env,
            "Tier": self.tier,
            "PreviewOf": self.preview_of,
            "ExpiresAt": self.expires_at,
        }
        return {k: v for k, v in tags.items() if v}

    def as_knobs(self) -> dict[str, Any]:
        return asdict(self)

    def knob_values(self) -> dict[str, str]:
        """The knobs as resolve_config takes them: resolving these gives this config back."""
        return {name: _knob_text(value) for name, value in asdict(self).items() if name in KNOBS}

    def deployed_record(self) -> str:
        """The stack output that records the resolved knobs and the declared indexes (compact JSON), read back
        by knobs_from_record and indexes_of_record."""
        record: dict[str, str] = self.knob_values()
        if self.indexes:
            record[INDEXES] = index_specs.indexes_record(self.indexes)
        if self.subscribers:
            record[subscriber_specs.SUBSCRIBERS] = subscriber_specs.subscribers_record(self.subscribers)
        return json.dumps(record, sort_keys=True, separators=(",", ":"))

    @property
    def index_declarations(self) -> dict[str, dict[str, Any]]:
        """The declared indexes as the settings file writes them (the gsi shorthand not included)."""
        return dict(index_specs.declarations(self.indexes))


def _knob_text(value: Any) -> str:
    """A resolved knob value as the text its parser takes back."""
    if isinstance(value, bool):
        return ON if value else OFF
    if value is None:
        return OFF
    if isinstance(value, tuple):
        return ",".join(value) or NONE
    return str(value)


def knobs_from_record(record: str) -> dict[str, str]:
    """The knobs a deployed stack recorded (its ``Knobs`` output); ValueError when the record is not that."""
    try:
        values = json.loads(record)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the stack's knob record is not JSON: {exc}") from None
    if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
        raise ValueError("the stack's knob record is not an object of knob names to strings")
    return {**RECORD_PREDATES, **{k: v for k, v in values.items() if k in KNOB_DEFAULTS}}


def indexes_of_record(record: str) -> dict[str, Any]:
    """The index declarations a deployed stack recorded in its knob record (none: an empty mapping)."""
    values = json.loads(record)
    text = values.get(INDEXES) if isinstance(values, dict) else None
    return index_specs.indexes_from_record(text) if isinstance(text, str) else {}


KNOBS: dict[str, Knob] = {
    f.name: f.metadata[KNOB_METADATA] for f in fields(DocTableConfig) if KNOB_METADATA in f.metadata
}
KNOB_DEFAULTS: dict[str, str] = {name: declared.default for name, declared in KNOBS.items()}

# An override for one run: DOCTABLE_<KNOB> (DOCTABLE_ENV selects the environment). Unprefixed names (GSI, TTL,
# ENV...) are never read: they are common in shells and CI for other purposes.
VARIABLE_PREFIX = "DOCTABLE_"
# The project's other variables: not knobs, and not misspellings of one.
NON_KNOB_VARIABLES = frozenset(
    {
        "DOCTABLE_CONFIG",
        "DOCTABLE_STATE_DIR",
        "DOCTABLE_LEDGER_DIR",
        "DOCTABLE_LIVE",
        "DOCTABLE_SOAK",
        "DOCTABLE_RESOLVED_BY",
        "DOCTABLE_WORKER_PATH",
        "DOCTABLE_PROFILE",
        "DOCTABLE_CDK_OUTPUT",  # doctable deploy's cloud assembly directory
        "DOCTABLE_SYNTH_CACHE",  # app.py's cache of assemblies (infra/synth/cache.py)
        "DOCTABLE_SYNTH_WORKER",  # the warm process app.py hands its synth to (infra/synth/worker.py)
    }
)
LOCAL_VARIABLE_PREFIX = "DOCTABLE_LOCAL_"  # the local AWS's own settings


def knob_variable(name: str) -> str:
    """The environment variable that overrides knob ``name`` for one run."""
    return f"{VARIABLE_PREFIX}{name.upper()}"


KNOB_VARIABLES: dict[str, str] = {knob_variable(name): name for name in KNOBS}


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One problem per DOCTABLE_ variable that is neither a knob's nor one of the project's own."""
    problems = []
    for variable in sorted(environ):
        if not variable.startswith(VARIABLE_PREFIX) or variable.startswith(LOCAL_VARIABLE_PREFIX):
            continue
        if variable in KNOB_VARIABLES or variable in NON_KNOB_VARIABLES:
            continue
        close = difflib.get_close_matches(variable, [*KNOB_VARIABLES, *NON_KNOB_VARIABLES], n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        problems.append(
            f"{variable} is not a doctable variable{hint}; a knob is overridden by DOCTABLE_<KNOB>, "
            f"e.g. {knob_variable('gsi')}={names.GSI_NAME}"
        )
    return problems


def unknown_knob(name: str, value: Any) -> str:
    """The problem of a name that is not a knob, with the closest knob when there is one."""
    close = difflib.get_close_matches(name, KNOBS, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{name}={value!r} is not a knob{hint}; knobs: {', '.join(KNOBS)}"


def raw_value(
    name: str, context: Mapping[str, Any], environ: Mapping[str, str], defaults: Mapping[str, Any]
) -> str:
    """``-c`` first, then DOCTABLE_<KNOB> (an empty one is unset), then ``defaults``, then the built-in."""
    from_env = environ.get(knob_variable(name)) or None
    for value in (context.get(name), from_env, defaults.get(name)):
        if value is not None:
            return str(value).strip()
    return KNOB_DEFAULTS[name]


def resolve_config(
    context: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    defaults: Mapping[str, Any] | None = None,
    indexes: Mapping[str, Any] | None = None,
    region: str | None = None,
    subscribers: Mapping[str, Any] | None = None,
    settings_dir: Path | None = None,
) -> DocTableConfig:
    """Build the config from the overrides (``context``, DOCTABLE_ variables) over ``defaults`` (the settings
    file's values for the environment, as text) over the built-in defaults; ``indexes``: the environment's
    index declarations (name -> table); ``region``: the region the environment binds, if any.
    ConfigError lists every problem."""
    context = context or {}
    environ = environ or {}
    defaults = defaults or {}
    problems: list[str] = [unknown_knob(name, context[name]) for name in sorted(set(context) - set(KNOBS))]
    problems += unknown_variables(environ)
    raw = {name: raw_value(name, context, environ, defaults) for name in KNOBS}
    values = {name: declared.parser.parse(problems, name, raw[name]) for name, declared in KNOBS.items()}
    _environment_rules(problems, raw, values)
    _consumer_rules(problems, raw, values)
    _option_rules(problems, raw, values)
    _replica_rules(problems, values, region)
    specs = index_specs.parse_indexes(problems, "", dict(indexes or {}))
    index_specs.check_indexes(
        problems, specs, shorthand=GSI_SHORTHAND if values["gsi"] == names.GSI_NAME else ()
    )
    subscribed = _subscriber_rules(problems, values, subscribers, settings_dir)
    if problems:
        raise ConfigError(problems)
    return DocTableConfig(**values, indexes=specs, subscribers=subscribed)


def _option_text(problems: Problems, at: str, option: str, value: Any) -> str | None:
    """A subscriber's option as its knob's text, checked by that knob's parser; None with one problem."""
    declared = KNOBS[option].parser
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        problems.append(f"{at} = {value!r} is not allowed; allowed: {declared.allowed}")
        return None
    found: list[str] = []
    declared.parse(found, option, str(value))
    if found:
        problems.append(f"{at}: {found[0]}")
        return None
    return str(value)


def _subscriber_rules(
    problems: Problems, values: dict[str, Any], declared: Mapping[str, Any] | None, settings_dir: Path | None
) -> tuple[subscriber_specs.SubscriberSpec, ...]:
    """The declared subscribers, each checked, and the rules across them and the table (contract/subscribers.py)."""
    if not declared:
        return ()
    specs = subscriber_specs.parse_subscribers(problems, "", dict(declared), settings_dir, _option_text)
    builtin = values["consumer"] == CONSUMER_BUILTIN
    subscriber_specs.check_subscribers(
        problems,
        specs,
        stream_on=values["stream"] in STREAM_VIEW_TYPES,
        kinesis_on=values["kinesis"] != OFF,
        is_global=bool(values["replicas"]),
        consumer_reads_stream=values["consumer"] != NONE and values["consumer_source"] != SOURCE_KINESIS,
    )
    if values["bucket_names"] == BUCKET_NAMES_EXACT:
        problems += subscriber_specs.failure_bucket_problems(f"{values['table_base']}-{values['env']}", specs)
    if not builtin and not values["blob_bucket"]:
        problems += [
            f"subscriber {s.name!r}: a blobs grant needs the blob bucket; allowed: table grants, or the built-in "
            "consumer's bucket (consumer=builtin) or blob_bucket"
            for s in specs
            if any(g.resource == "blobs" for g in s.grants)
        ]
    return specs


def subscribers_of_record(record: str) -> dict[str, Any]:
    """The subscriber declarations a deployed stack recorded in its knob record (none: an empty mapping)."""
    values = json.loads(record)
    text = values.get(subscriber_specs.SUBSCRIBERS) if isinstance(values, dict) else None
    declared = json.loads(text) if isinstance(text, str) else {}
    return declared if isinstance(declared, dict) else {}


# CDK context that deploys an intermediate index set (``doctable deploy`` applies several GSI creations and
# deletions as one CloudFormation update each): JSON of index name -> declaration, replacing the gsi shorthand
# and the declared indexes for that one update. Namespaced, so never taken for a knob.
INDEX_STEP_CONTEXT = "doctable:indexStep"
# CDK context that makes the run a preview environment (contract/settings/resolve.py): JSON {"from": ENV, "expires_at":
# ISO-8601 UTC}. Namespaced, so never taken for a knob; the settings resolve it (user_context keeps it for them).
PREVIEW_CONTEXT = "doctable:preview"


def with_index_step(config: DocTableConfig, declarations: Mapping[str, Any] | str) -> DocTableConfig:
    """``config`` with exactly these indexes (the gsi shorthand spelt out among them), given as a mapping or
    its JSON text; ConfigError if invalid."""
    problems: list[str] = []
    if isinstance(declarations, str):
        try:
            declarations = json.loads(declarations)
        except json.JSONDecodeError as exc:
            raise ConfigError([f"{INDEX_STEP_CONTEXT}: not JSON ({exc})"]) from None
    specs = index_specs.parse_indexes(problems, INDEX_STEP_CONTEXT, declarations)
    index_specs.check_indexes(problems, specs)
    if problems:
        raise ConfigError(problems)
    return replace(config, gsi=NONE, indexes=specs)


def _environment_rules(problems: Problems, raw: Mapping[str, str], values: dict[str, Any]) -> None:
    """The environment's tier, the knobs whose ``auto`` is the tier's, and the names the environment completes."""
    env = values["env"]
    if values["tier"] == AUTO:
        if env in ENV_VALUES:
            values["tier"] = env
        elif ENV_NAME_RE.match(env):
            problems.append(
                f"env={env!r} has no tier; allowed: tier = {'|'.join(repr(t) for t in TIERS)} in "
                f"[environments.{env}] (the tier carries the rules: deletion protection, PITR, RETAIN)"
            )
            values["tier"] = TIERS[0]
    if TABLE_BASE_RE.match(values["table_base"]) and ENV_NAME_RE.match(env):
        exact = values["bucket_names"] == BUCKET_NAMES_EXACT
        _name_rules(problems, values["table_base"], env, values["replicas"], exact_buckets=exact)
    tier = values["tier"]
    if values["pitr"] == AUTO:
        values["pitr"] = ON if tier in PITR_TIERS else OFF
    protection = values["deletion_protection"]
    values["deletion_protection"] = tier in PROTECTED_TIERS if protection == AUTO else protection == ON
    if values["pitr_days"] is not None and values["pitr"] != ON:
        why = "pitr=off" if raw["pitr"] == OFF else f"pitr=auto is off in tier {tier} (env={env})"
        problems.append(
            f"pitr_days={values['pitr_days']} set but PITR is off ({why}) — a recovery period needs PITR: "
            "set pitr=on, or unset pitr_days (pitr_days=off)"
        )


def name_limits(
    table_base: str, replicas: tuple[str, ...] = (), *, exact_buckets: bool = True
) -> list[tuple[str, int, int]]:
    """Each generated name an environment of ``table_base`` completes, as (what, its fixed part's length, its
    limit), the tightest first: the environment name may be as long as the first leaves room for."""
    table_fixed = len(table_base) + 1
    stack_fixed = len(STACK_PREFIX) + table_fixed
    limits = [
        ("the table name <table_base>-<env> (its stack's name is longer)", table_fixed, TABLE_NAME_MAX),
        (
            f"the stack name doctable-<table_base>-<env>, which the Lambda function, IAM role and log group names "
            f"CloudFormation generates for it (at most {GENERATED_NAME_MAX} characters) must keep whole",
            stack_fixed,
            PREFIXED_STACK_MAX,
        ),
    ]
    if exact_buckets:
        # The failure bucket's is the longer of the two bucket names (bucket_names=exact).
        suffix = names.FAILURE_BUCKET_SUFFIX
        limits.append(
            (
                f"the failure bucket name <table_base>-<env>-<account>-<region>-{suffix} (bucket_names=exact; "
                f"S3 allows {names.BUCKET_NAME_MAX} characters, the region counted as the longest, "
                f"{names.REGION_NAME_MAX})",
                table_fixed + names.bucket_name_fixed_length(suffix),
                names.BUCKET_NAME_MAX,
            )
        )
    regions = [r for r in replicas if REGION_RE.match(r)]
    if regions:
        longest = max(regions, key=len)
        limits.append(
            (
                f"the replica stack name doctable-<table_base>-<env>-{longest}, whose generated names must keep it "
                "whole",
                stack_fixed + 1 + len(longest),
                PREFIXED_STACK_MAX,
            )
        )
    return sorted(limits, key=lambda limit: limit[2] - limit[1])


def _name_rules(
    problems: Problems, table_base: str, env: str, replicas: tuple[str, ...], *, exact_buckets: bool
) -> None:
    """One problem naming the tightest generated name the environment would not fit in (the shortest table name,
    ``a-b``, is DynamoDB's minimum of 3), or the bucket names S3 would refuse."""
    sample = names.bucket_name(
        f"{table_base}-{env}", "0" * names.ACCOUNT_ID_LENGTH, "us-east-1", names.BLOB_BUCKET_SUFFIX
    )
    if exact_buckets and len(sample) <= names.BUCKET_NAME_MAX and not BUCKET_NAME_RE.match(sample):
        problems.append(
            f"table_base={table_base!r} begins the bucket names <table_base>-<env>-<account>-<region>-blobs|failures "
            "(bucket_names=exact), which S3 refuses; allowed: a table_base starting with a letter or digit, "
            "not with xn-- or sthree-"
        )
    what, fixed, limit = name_limits(table_base, replicas, exact_buckets=exact_buckets)[0]
    room = limit - fixed
    if room < 1:
        problems.append(
            f"table_base={table_base!r} ({len(table_base)} characters) leaves no room for an environment name in "
            f"{what}; allowed: a table_base of at most {len(table_base) + room - 1} characters"
        )
    elif len(env) > room:
        problems.append(
            f"env={env!r} with table_base={table_base!r} does not fit {what}: {fixed + len(env)} characters; "
            f"allowed: at most {limit} (an environment name of at most {room} characters)"
        )


def _consumer_rules(problems: Problems, raw: Mapping[str, str], values: dict[str, Any]) -> None:
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


def _option_rules(problems: Problems, raw: Mapping[str, str], values: dict[str, Any]) -> None:
    """The mapping's and the table's options that constrain each other."""
    if values["batch_size"] > 1000 and values["batching_window"] == 0:
        # AWS rejects a DynamoDB mapping with BatchSize > 1000 and no batching window.
        problems.append(
            f"batch_size={values['batch_size']} needs batching_window >= 1 (AWS requires a window above 1000 "
            "records); allowed: batch_size 1..1000 with batching_window 0, or set batching_window"
        )
    kms_key, encryption = values["kms_key"], values["encryption"]
    if kms_key and KMS_KEY_ARN_RE.match(kms_key) and encryption != ENCRYPTION_CUSTOMER_MANAGED:
        problems.append(
            f"kms_key={kms_key!r} set but encryption={encryption!r} — only encryption=customer-managed uses "
            "a key of yours; set encryption=customer-managed or unset kms_key"
        )
    for what in ("read", "write"):
        cap, warm = values[f"max_{what}"], values[f"warm_{what}"]
        if cap is not None and warm is not None and warm > cap:
            problems.append(
                f"warm_{what}={warm} is above max_{what}={cap} — a table warmed beyond the most it may serve; "
                f"allowed: warm_{what} <= max_{what}, or max_{what}=off"
            )


def _replica_rules(problems: Problems, values: dict[str, Any], region: str | None) -> None:
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


# CDK context that is not a knob: a JSON object of replica region -> that replica's stream ARN, given to the app
# because CloudFormation cannot give another region's stream ARN (infra/replica_stack.py).
REPLICA_STREAMS_CONTEXT = "replica_streams"
# CDK context that is not a knob: a step of converting a single-region table to a global table (``retain``,
# ``detached``, ``import``; infra/data/handover.py), and the live table's stream ARN the detached steps reference.
TABLE_HANDOVER_CONTEXT = "table_handover"
TABLE_STREAM_CONTEXT = "table_stream_arn"
NON_KNOB_CONTEXT = frozenset({REPLICA_STREAMS_CONTEXT, TABLE_HANDOVER_CONTEXT, TABLE_STREAM_CONTEXT})


def user_context(all_context: Mapping[str, Any]) -> dict[str, Any]:
    """The context entries a user could have meant as knobs: CDK's own keys (``@aws-cdk/...``, ``aws:cdk:...``)
    are namespaced, a knob never is; the app's own (NON_KNOB_CONTEXT) are not knobs. Unknown names then fail in
    resolve_config. The preview (PREVIEW_CONTEXT) is kept: contract.settings.resolve.resolve_settings takes it out."""
    return {
        k: v
        for k, v in all_context.items()
        if (":" not in k and not k.startswith("@") and k not in NON_KNOB_CONTEXT) or k == PREVIEW_CONTEXT
    }
