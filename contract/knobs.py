"""The knobs: one frozen, typed config resolved from CDK context, the environment and cdk.json defaults.

Pure Python on purpose (no CDK import): the console script resolves knobs exactly as the app does, and the
unit tests exercise every rule without synthesizing anything. Every knob value literal lives here; the rest of
the project reads the config's derived facts (``has_gsi``, ``starting_position_cfn``, ...), never raw strings.
Long on purpose: it holds one idea, the closed set of knobs with their rules, read in one place.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from contract import names, policy_doc

PLAN_SOURCE = "doctable"
PLAN_VERSION = "2026-11-29"
MANAGED_BY = "ephemera"

# Closed enums. Order is the order shown in error messages. The CloudFormation value each maps to stands beside it.
OFF, ON = "off", "on"
ONOFF = (OFF, ON)
NONE = "none"
GSI_VALUES = (NONE, names.GSI_NAME)  # the knob's value is the index's name
TTL_VALUES = ONOFF
STREAM_NEW_AND_OLD = "new-and-old"
STREAM_VALUES = (NONE, STREAM_NEW_AND_OLD)
STREAM_VIEW_TYPES = {STREAM_NEW_AND_OLD: "NEW_AND_OLD_IMAGES"}
PITR_VALUES = ONOFF
ENV_VALUES = ("dev", "stg", "uat", "prod")
RETAINING_ENVS = ("uat", "prod")  # data survives a stack deletion
PROTECTED_ENVS = ("prod",)  # deletion protection: teardown needs a deliberate unlock step
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
PITR_ENVS = ("prod",)  # PITR is on unless set off explicitly
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

TABLE_BASE_RE = re.compile(r"^[a-z0-9-]+$")
# DynamoDB allows 3..255 characters; the stack name (``doctable-<table>``) is the tighter bound: 128.
STACK_PREFIX = "doctable-"
STACK_NAME_MAX = 128
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

# Every knob: (name, default). cdk.json's context must carry exactly these (a test checks it).
KNOB_DEFAULTS: dict[str, str] = {
    "gsi": "none",
    "ttl": "off",
    "stream": "none",
    "pitr": "auto",
    "table_base": "items",
    "env": "dev",
    "cost_center": "",
    "owner": "",
    "consumer": "auto",
    "blob_bucket": "",
    "blob_root": "",
    "blob_prefix_cleanup": "off",
    "blob_key_reuse": "guarded",
    "snapstart": "off",
    "starting_position": "trim-horizon",
    "batch_size": "10",
    "batching_window": "0",
    "max_retries": "5",
    "max_record_age": "21600",
    "parallelization_factor": "1",
    "powertools": "layer",
    "architecture": "arm64",
    "memory": "256",
    "timeout": "30",
    "deploy_target": "aws",
    "events": "all",
    "mapping_metrics": "on",
    "table_class": "standard",
    "max_read": "off",
    "max_write": "off",
    "warm_read": "off",
    "warm_write": "off",
    "pitr_days": "off",
    "deletion_protection": "auto",
    "contributor_insights": "off",
    "encryption": "aws-owned",
    "kms_key": "",
    "resource_policy": "off",
    "kinesis": "off",
    "consumer_source": "dynamodb",
}


class ConfigError(ValueError):
    """Every knob problem found at once, one line each, naming the knob, the value given and what is allowed."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid doctable configuration:\n  - " + "\n  - ".join(problems))


@dataclass(frozen=True)
class DocTableConfig:
    gsi: str
    ttl: str
    stream: str
    pitr: str
    table_base: str
    env: str
    cost_center: str
    owner: str
    consumer: str  # "builtin" | "none" | a Lambda function ARN ("auto" is resolved away)
    blob_bucket: str  # empty: the stack creates the bucket
    blob_root: str
    blob_prefix_cleanup: bool
    blob_key_reuse: str  # guarded | never
    snapstart: bool
    starting_position: str
    batch_size: int
    batching_window: int
    max_retries: int
    max_record_age: int
    parallelization_factor: int
    powertools: str
    architecture: str
    memory: int
    timeout: int
    deploy_target: str
    events: str  # all | cleanup
    mapping_metrics: bool
    table_class: str
    max_read: int | None  # None: no cap (the knob is off)
    max_write: int | None
    warm_read: int | None  # None: left to DynamoDB
    warm_write: int | None
    pitr_days: int | None  # None: AWS's default period (35 days)
    deletion_protection: bool  # on/off as given, else the environment's default
    contributor_insights: str
    encryption: str
    kms_key: str  # empty: with customer-managed encryption the stack creates the key
    resource_policy: str  # "off" or the path of the table's resource policy document
    kinesis: str  # "off", "on" (the stack creates the stream) or the ARN of a stream of yours
    consumer_source: str  # dynamodb | kinesis: the stream the mapping reads

    # ---- derived facts: every downstream decision reads these, never the raw strings ----
    @property
    def table_name(self) -> str:
        return f"{self.table_base}-{self.env}"

    @property
    def stack_name(self) -> str:
        return f"{STACK_PREFIX}{self.table_name}"

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
        return self.env in PITR_ENVS

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
        """Allowed choices that drop one of prod's protections: printed at synth."""
        found = []
        if self.pitr_by_default and not self.has_pitr:
            found.append(f"env={self.env} with pitr=off: the table has no point-in-time recovery")
        if self.env in PROTECTED_ENVS and not self.deletion_protection:
            found.append(
                f"env={self.env} with deletion_protection=off: the table can be deleted without an unlock step"
            )
        return found

    @property
    def retain_on_delete(self) -> bool:
        """uat and prod keep their data when the stack goes; dev and stg are rebuilt at will."""
        return self.env in RETAINING_ENVS

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
        """Provenance tags in a stable order; an empty CostCenter or Owner is dropped, not written empty."""
        tags = {
            "ManagedBy": MANAGED_BY,
            "Source": PLAN_SOURCE,
            "PlanVersion": PLAN_VERSION,
            "CostCenter": self.cost_center,
            "Owner": self.owner,
            "Environment": self.env,
        }
        return {k: v for k, v in tags.items() if v}

    def as_knobs(self) -> dict[str, Any]:
        return asdict(self)

    def knob_values(self) -> dict[str, str]:
        """The knobs as resolve_config takes them: resolving these gives this config back."""
        return {
            name: (ON if value else OFF) if isinstance(value, bool) else OFF if value is None else str(value)
            for name, value in asdict(self).items()
        }

    def deployed_record(self) -> str:
        """The stack output that records the resolved knobs (compact JSON), read back by knobs_from_record."""
        return json.dumps(self.knob_values(), sort_keys=True, separators=(",", ":"))


def knobs_from_record(record: str) -> dict[str, str]:
    """The knobs a deployed stack recorded (its ``Knobs`` output); ValueError when the record is not that."""
    try:
        values = json.loads(record)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the stack's knob record is not JSON: {exc}") from None
    if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
        raise ValueError("the stack's knob record is not an object of knob names to strings")
    return {k: v for k, v in values.items() if k in KNOB_DEFAULTS}


def _raw(
    name: str, context: Mapping[str, Any], environ: Mapping[str, str], defaults: Mapping[str, Any]
) -> str:
    """Context first (``-c gsi=gsi1``), then the upper-cased environment variable (``GSI=gsi1``), then cdk.json."""
    from_env = environ.get(name.upper())
    for value in (context.get(name), from_env or None, defaults.get(name)):  # an empty variable is unset
        if value is not None:
            return str(value).strip()
    return KNOB_DEFAULTS[name]


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


def resolve_config(
    context: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> DocTableConfig:
    """Build the config from the three sources; raise ConfigError listing every problem at once."""
    context = context or {}
    environ = environ or {}
    defaults = defaults if defaults is not None else load_cdk_json_defaults()
    raw = {name: _raw(name, context, environ, defaults) for name in KNOB_DEFAULTS}
    problems: list[str] = []
    for unknown in sorted(set(context) - set(KNOB_DEFAULTS)):
        # A misspelt knob must not silently deploy the default shape.
        close = difflib.get_close_matches(unknown, KNOB_DEFAULTS, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        problems.append(
            f"{unknown}={context[unknown]!r} is not a knob{hint}; knobs: {', '.join(KNOB_DEFAULTS)}"
        )

    gsi = _enum(problems, "gsi", raw["gsi"], GSI_VALUES)
    ttl = _enum(problems, "ttl", raw["ttl"], TTL_VALUES)
    stream = _enum(problems, "stream", raw["stream"], STREAM_VALUES)
    env = _enum(problems, "env", raw["env"], ENV_VALUES)
    pitr, table_options = _table_options(problems, raw, env)

    table_base = raw["table_base"]
    if not TABLE_BASE_RE.match(table_base):
        problems.append(f"table_base={table_base!r} is malformed; allowed: one or more of [a-z0-9-]")
    else:
        table_len = len(table_base) + 1 + len(env)
        if not TABLE_NAME_MIN <= table_len <= TABLE_NAME_MAX:
            problems.append(
                f"table_base={table_base!r} gives a table name of {table_len} characters with '-{env}'; allowed: "
                f"{TABLE_NAME_MIN}..{TABLE_NAME_MAX} (DynamoDB allows 255, the stack name "
                f"'{STACK_PREFIX}<table>' at most {STACK_NAME_MAX})"
            )

    cost_center = _tag_value(problems, "cost_center", raw["cost_center"])
    owner = _tag_value(problems, "owner", raw["owner"])

    consumer = raw["consumer"]
    if consumer.startswith("arn:"):
        if not LAMBDA_ARN_RE.match(consumer):
            problems.append(
                f"consumer={consumer!r} is not a Lambda function ARN; allowed: auto|builtin|none|"
                "arn:aws:lambda:<region>:<account>:function:<name>"
            )
    elif consumer not in CONSUMER_MODES:
        problems.append(
            f"consumer={consumer!r} is not allowed; allowed values: auto|builtin|none|<Lambda function ARN>"
        )
    kinesis = raw["kinesis"] or OFF
    if kinesis not in ONOFF and not KINESIS_STREAM_ARN_RE.match(kinesis):
        problems.append(
            f"kinesis={kinesis!r} is not allowed; allowed values: off|on|"
            "arn:aws:kinesis:<region>:<account>:stream/<name>"
        )
    source = _enum(problems, "consumer_source", raw["consumer_source"], CONSUMER_SOURCES)
    # The consumer's source: the table's DynamoDB stream, or the Kinesis data stream.
    has_source = kinesis != OFF if source == SOURCE_KINESIS else stream in STREAM_VIEW_TYPES
    if consumer == CONSUMER_AUTO:
        consumer = CONSUMER_BUILTIN if has_source else NONE
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

    blob_bucket = raw["blob_bucket"]
    if blob_bucket and not BUCKET_NAME_RE.match(blob_bucket):
        problems.append(
            f"blob_bucket={blob_bucket!r} is not a valid S3 bucket name; allowed: empty (the stack creates one) "
            "or 3-63 characters of [a-z0-9.-], starting and ending with a letter or digit"
        )
    blob_root = raw["blob_root"]
    if blob_root and (not BLOB_ROOT_RE.match(blob_root) or ".." in blob_root.split("/")):
        problems.append(
            f"blob_root={blob_root!r} is malformed; allowed: empty (bucket root) or a key prefix of safe "
            "characters ending in '/', e.g. 'blobs/'"
        )
    prefix_cleanup = _enum(problems, "blob_prefix_cleanup", raw["blob_prefix_cleanup"], ONOFF) == ON
    key_reuse = _enum(problems, "blob_key_reuse", raw["blob_key_reuse"], KEY_REUSE_VALUES)
    snapstart = _enum(problems, "snapstart", raw["snapstart"], SNAPSTART_VALUES) == ON
    starting_position = _enum(problems, "starting_position", raw["starting_position"], STARTING_POSITIONS)
    batch_size = _int(problems, "batch_size", raw["batch_size"], BATCH_SIZE_RANGE)
    batching_window = _int(
        problems, "batching_window", raw["batching_window"], BATCHING_WINDOW_RANGE, " seconds"
    )
    max_retries = _int(problems, "max_retries", raw["max_retries"], MAX_RETRIES_RANGE)
    max_record_age = _int(problems, "max_record_age", raw["max_record_age"], MAX_RECORD_AGE_RANGE, " seconds")
    parallelization = _int(
        problems, "parallelization_factor", raw["parallelization_factor"], PARALLELIZATION_RANGE
    )
    powertools = _enum(problems, "powertools", raw["powertools"], POWERTOOLS_MODES)
    architecture = _enum(problems, "architecture", raw["architecture"], ARCHITECTURES)
    memory = _int(problems, "memory", raw["memory"], MEMORY_RANGE, " MB")
    timeout = _int(problems, "timeout", raw["timeout"], TIMEOUT_RANGE, " seconds")
    deploy_target = _enum(problems, "deploy_target", raw["deploy_target"], DEPLOY_TARGETS)
    mapping_options = _mapping_options(problems, raw, consumer)
    encryption = _enum(problems, "encryption", raw["encryption"], ENCRYPTION_VALUES)
    kms_key = raw["kms_key"]
    if kms_key and not KMS_KEY_ARN_RE.match(kms_key):
        problems.append(
            f"kms_key={kms_key!r} is not a KMS key ARN; allowed: empty (the stack creates the key) or "
            "arn:aws:kms:<region>:<account>:key/<key id>"
        )
    elif kms_key and encryption != ENCRYPTION_CUSTOMER_MANAGED:
        problems.append(
            f"kms_key={kms_key!r} set but encryption={encryption!r} — only encryption=customer-managed uses "
            "a key of yours; set encryption=customer-managed or unset kms_key"
        )
    resource_policy = raw["resource_policy"] or OFF
    if resource_policy != OFF:
        try:
            policy_doc.load_policy_document(resource_policy)
        except policy_doc.PolicyDocumentError as exc:
            problems.append(str(exc))

    # Knobs that only the built-in consumer reads: setting them otherwise is a contradiction, not a no-op.
    if consumer != CONSUMER_BUILTIN:
        for name in ("blob_bucket", "blob_root"):
            if raw[name]:
                problems.append(
                    f"{name}={raw[name]!r} set but consumer={consumer!r} — only consumer=builtin uses it"
                )
        if prefix_cleanup:
            problems.append(
                f"blob_prefix_cleanup='on' set but consumer={consumer!r} — only consumer=builtin cleans blobs"
            )
        if key_reuse == KEY_REUSE_NEVER:
            problems.append(
                f"blob_key_reuse='never' set but consumer={consumer!r} — only consumer=builtin deletes blobs"
            )
        if snapstart:
            problems.append(
                f"snapstart='on' set but consumer={consumer!r} — only the built-in consumer's function is "
                "deployed by this stack"
            )
    if batch_size > 1000 and batching_window == 0:
        # AWS rejects a DynamoDB mapping with BatchSize > 1000 and no batching window.
        problems.append(
            f"batch_size={batch_size} needs batching_window >= 1 (AWS requires a window above 1000 records); "
            "allowed: batch_size 1..1000 with batching_window 0, or set batching_window"
        )

    if problems:
        raise ConfigError(problems)
    return DocTableConfig(
        gsi=gsi, ttl=ttl, stream=stream, pitr=pitr, table_base=table_base, env=env,
        cost_center=cost_center, owner=owner, consumer=consumer, blob_bucket=blob_bucket,
        blob_root=blob_root, blob_prefix_cleanup=prefix_cleanup, blob_key_reuse=key_reuse,
        snapstart=snapstart, starting_position=starting_position,
        batch_size=batch_size, batching_window=batching_window, max_retries=max_retries,
        max_record_age=max_record_age, parallelization_factor=parallelization, powertools=powertools,
        architecture=architecture, memory=memory, timeout=timeout, deploy_target=deploy_target,
        **mapping_options,
        **table_options,
        encryption=encryption, kms_key=kms_key, resource_policy=resource_policy,
        kinesis=kinesis, consumer_source=source,
    )  # fmt: skip


def _table_options(problems: list[str], raw: Mapping[str, str], env: str) -> tuple[str, dict[str, Any]]:
    """pitr (resolved against the environment) and the table's own options, checked together."""
    pitr = _enum(problems, "pitr", raw["pitr"], ENV_DEFAULT_VALUES)
    if pitr == AUTO:
        pitr = ON if env in PITR_ENVS else OFF
    protection = _enum(problems, "deletion_protection", raw["deletion_protection"], ENV_DEFAULT_VALUES)
    options: dict[str, Any] = {
        "table_class": _enum(problems, "table_class", raw["table_class"], TABLE_CLASSES),
        "max_read": _optional_int(problems, "max_read", raw["max_read"], MAX_THROUGHPUT_RANGE, " read units"),
        "max_write": _optional_int(
            problems, "max_write", raw["max_write"], MAX_THROUGHPUT_RANGE, " write units"
        ),
        "warm_read": _optional_int(problems, "warm_read", raw["warm_read"], WARM_READ_RANGE, " reads/s"),
        "warm_write": _optional_int(problems, "warm_write", raw["warm_write"], WARM_WRITE_RANGE, " writes/s"),
        "pitr_days": _optional_int(problems, "pitr_days", raw["pitr_days"], PITR_DAYS_RANGE, " days"),
        "deletion_protection": env in PROTECTED_ENVS if protection == AUTO else protection == ON,
        "contributor_insights": _enum(
            problems, "contributor_insights", raw["contributor_insights"], CONTRIBUTOR_INSIGHTS_MODES
        ),
    }
    if options["pitr_days"] is not None and pitr != ON:
        why = "pitr=off" if raw["pitr"] == OFF else f"pitr=auto is off for env={env}"
        problems.append(
            f"pitr_days={options['pitr_days']} set but PITR is off ({why}) — a recovery period needs PITR: "
            "set pitr=on, or unset pitr_days (pitr_days=off)"
        )
    for what in ("read", "write"):
        cap, warm = options[f"max_{what}"], options[f"warm_{what}"]
        if cap is not None and warm is not None and warm > cap:
            problems.append(
                f"warm_{what}={warm} is above max_{what}={cap} — a table warmed beyond the most it may serve; "
                f"allowed: warm_{what} <= max_{what}, or max_{what}=off"
            )
    return pitr, options


def _mapping_options(problems: list[str], raw: Mapping[str, str], consumer: str) -> dict[str, Any]:
    """The mapping's event filter and its metrics."""
    events = _enum(problems, "events", raw["events"], EVENTS_VALUES)
    if events == EVENTS_CLEANUP and consumer != CONSUMER_BUILTIN:
        problems.append(
            f"events='cleanup' set but consumer={consumer!r} — the filter passes only what the built-in "
            "consumer's blob cleanup needs; set consumer=builtin or events=all"
        )
    metrics = _enum(problems, "mapping_metrics", raw["mapping_metrics"], MAPPING_METRICS_VALUES) == ON
    return {"events": events, "mapping_metrics": metrics}


PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULTS_CONTEXT_KEY = "doctable:knobDefaults"


def load_cdk_json_defaults(path: Path | None = None) -> dict[str, Any]:
    """The knob defaults recorded in cdk.json under ``context[DEFAULTS_CONTEXT_KEY]``.

    They sit under their own key, not as top-level context, so that the app can tell ``-c gsi=none`` (which beats
    ``GSI=gsi1`` in the environment) from a default (which loses to it).
    """
    path = path or PROJECT_ROOT / "cdk.json"
    try:
        defaults = json.loads(path.read_text())["context"][DEFAULTS_CONTEXT_KEY]
    except (FileNotFoundError, KeyError):
        return dict(KNOB_DEFAULTS)
    return {k: v for k, v in defaults.items() if k in KNOB_DEFAULTS}


def user_context(all_context: Mapping[str, Any]) -> dict[str, Any]:
    """The context entries a user could have meant as knobs: CDK's own keys (``@aws-cdk/...``, ``aws:cdk:...``,
    ``doctable:knobDefaults``) are namespaced, a knob never is. Unknown names then fail in resolve_config."""
    return {k: v for k, v in all_context.items() if ":" not in k and not k.startswith("@")}
