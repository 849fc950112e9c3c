"""The table's own knobs: its index shorthand, TTL, recovery, deletion protection, class, throughput and
encryption at rest, their values and CloudFormation's, and the rules between them."""

from __future__ import annotations

import re
from typing import Any

from contract import indexes as index_specs
from contract import names, policy_doc
from contract.knobs.declare import (
    AUTO,
    IN_PLACE,
    NONE,
    OFF,
    ON,
    ONOFF,
    Knob,
    Problems,
    enum,
    optional_integer,
    optional_match,
    text,
)

GSI_VALUES = (NONE, names.GSI_NAME)  # the knob's value is the index's name
# What gsi=gsi1 declares: the generic index on gsi1pk/gsi1sk, strings, projection ALL.
GSI_SHORTHAND = (
    index_specs.IndexSpec(
        name=names.GSI_NAME, partition=(names.GSI_PARTITION_KEY, "S"), sort=(names.GSI_SORT_KEY, "S")
    ),
)
TTL_VALUES = ONOFF
PITR_VALUES = ONOFF
ENV_DEFAULT_VALUES = (AUTO, OFF, ON)
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
PITR_DAYS_RANGE = (1, 35)  # PointInTimeRecoverySpecification.RecoveryPeriodInDays (AWS's default: 35)
# OnDemandThroughput.MaxRead/WriteRequestUnits: AWS takes >= 1 (-1 lifts the cap); 40,000 is the per-table
# quota an on-demand table gets by default, so a higher cap guards nothing.
MAX_THROUGHPUT_RANGE = (1, 40_000)
# WarmThroughput.Read/WriteUnitsPerSecond: an on-demand table starts warm at 12,000 reads and 4,000 writes per
# second and DynamoDB refuses less; the upper bound is the same per-table quota.
WARM_READ_RANGE = (12_000, 40_000)
WARM_WRITE_RANGE = (4_000, 40_000)

_check_kms_key = optional_match(
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


GSI = Knob(
    "none",
    enum(GSI_VALUES),
    "the generic index gsi1 on gsi1pk/gsi1sk (strings, projection ALL)",
    "adding it is an online backfill (queries on it are refused until ACTIVE); removing it deletes the index",
)
TTL = Knob(
    "off",
    enum(TTL_VALUES),
    "TTL on expiresAt (epoch seconds); expiry lags up to ~48 h",
    "cheap but rate-limited (about one change an hour); turning it on deletes every item already expired",
)
PITR = Knob(
    "auto",
    enum(ENV_DEFAULT_VALUES),
    "point-in-time recovery (continuous backups, billed on table size)",
    "a toggle in place; turning it off drops the restore window",
    per_env="auto is on in the prod tier, off in the others",
)
TABLE_CLASS = Knob(
    "standard",
    enum(TABLE_CLASSES),
    "STANDARD or STANDARD_INFREQUENT_ACCESS (cheaper storage, dearer requests)",
    "in place; AWS allows two class changes per table in 30 days",
)
MAX_READ = Knob(
    "off",
    optional_integer(MAX_THROUGHPUT_RANGE, " read units"),
    "on-demand read cap (a cost guard)",
    IN_PLACE,
)
MAX_WRITE = Knob(
    "off",
    optional_integer(MAX_THROUGHPUT_RANGE, " write units"),
    "on-demand write cap (a cost guard)",
    IN_PLACE,
)
WARM_READ = Knob(
    "off",
    optional_integer(WARM_READ_RANGE, " reads/s"),
    "warm throughput for reads",
    "in place; it only rises",
)
WARM_WRITE = Knob(
    "off",
    optional_integer(WARM_WRITE_RANGE, " writes/s"),
    "warm throughput for writes",
    "in place; it only rises",
)
PITR_DAYS = Knob(
    "off",
    optional_integer(PITR_DAYS_RANGE, " days"),
    "PITR's recovery period (off: AWS's 35 days); needs PITR on",
    "in place; a shorter window drops the older restore points",
)
DELETION_PROTECTION = Knob(
    "auto",
    enum(ENV_DEFAULT_VALUES),
    "the table cannot be deleted until this is turned off",
    "a toggle in place; off makes the table deletable",
    per_env="auto is on in the prod tier, off in the others",
)
CONTRIBUTOR_INSIGHTS = Knob(
    "off",
    enum(CONTRIBUTOR_INSIGHTS_MODES),
    "CloudWatch Contributor Insights on the table's keys",
    IN_PLACE,
)
ENCRYPTION = Knob(
    "aws-owned",
    enum(ENCRYPTION_VALUES),
    "encryption at rest of the table, its stream and the stack's buckets",
    "the key changes in place (a change of key is refused by the deploy gate without a yes)",
)
KMS_KEY = Knob(
    "",
    text("empty|<KMS key ARN>", _check_kms_key),
    "with customer-managed: a key of yours (empty: the stack creates one)",
    "changes the key",
)
RESOURCE_POLICY = Knob(
    "off",
    text("off|<path to a JSON policy document>", _check_resource_policy),
    "the table's resource-based policy ({{account}} and {{table_arn}} filled in)",
    IN_PLACE,
)


def table_rules(problems: Problems, values: dict[str, Any]) -> None:
    """The table's options that constrain each other: the key and its encryption, the warm throughput and its cap."""
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
