"""The names an environment completes: the table_base knob, the table's, the stack's and the buckets' names and
their limits, and the region names the replicas and the settings file's ``region`` give."""

from __future__ import annotations

import re

from contract import names
from contract.knobs.declare import Knob, Problems, text

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
BUCKET_NAME_RE = re.compile(r"^(?!xn--)(?!sthree-)(?!.*\.\.)(?!.*-s3alias$)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def _check_table_base(problems: Problems, name: str, value: str) -> str:
    if not TABLE_BASE_RE.match(value):
        problems.append(f"table_base={value!r} is malformed; allowed: one or more of [a-z0-9-]")
    return value


TABLE_BASE = Knob(
    "items",
    text("[a-z0-9-]+", _check_table_base),
    f"the table is <table_base>-<env>, its stack doctable-<table_base>-<env> (at most {PREFIXED_STACK_MAX} characters)",
    "a new name is a new table: a migration with a data copy",
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


def name_rules(
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
