"""Bad input, tried: every bad input the project has been fed, what it gets, and where the input ends up.

Each :class:`Case` really exercises the project code (the knob resolver, the stream consumer's Lambda handler
against an in-process moto S3, the ``doctable`` console script) and returns the observed outcome as one line.
``tests/unit/test_bad_inputs.py`` runs every case, asserts the expected fragments appear in what was observed,
and asserts that ``docs/bad-input.md`` is exactly the table rendered from these observations.

Regenerate the document after changing a case or the code it exercises::

    .venv/bin/python -m tests.unit.bad_inputs --write     # rewrite docs/bad-input.md
    .venv/bin/python -m tests.unit.bad_inputs --check     # exit 1 when the document is stale
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import io
import json
import logging
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
# What pytest's ``pythonpath = [".", "functions"]`` gives the tests, for ``python -m tests.unit.bad_inputs`` too.
for _entry in (ROOT, ROOT / "functions"):
    if str(_entry) not in sys.path:
        sys.path.insert(0, str(_entry))

from tests.support.moto_seed import put_objects  # noqa: E402
from tests.unit.events import (  # noqa: E402
    STREAM_ARN,
    TABLE,
    FakeLambdaContext,
    av,
    image,
    insert,
    keys_only,
    modify,
    record,
    remove,
    seq,
    sqs_event,
    stream_event,
)

DOC_PATH = ROOT / "docs" / "bad-input.md"
GENERATOR = "python -m tests.unit.bad_inputs --write"
OBSERVED_MAX = 160  # characters of the observed outcome shown in the document (the tests check all of it)

REGION = "eu-west-1"
BUCKET = "doctable-blobs-test"
SERVICE = "doctable-consumer"

# Where a consumer record that fails ends up (the mapping in infra/compute/consumer.py: ReportBatchItemFailures,
# bisect on error, max_retries, an S3 on-failure destination; `doctable replay` re-drives what it keeps).
RETRIED = "reported in batchItemFailures → retried (max_retries, bisecting) → kept on the failure bucket for `doctable replay`"
BATCH_RETRIED = (
    "the whole invocation fails before any delete → Lambda bisects and retries the batch → the poison record "
    "is kept on the failure bucket for `doctable replay`"
)
REFUSED = "key refused: not deleted, logged as blob_key_refused with the reason, counted in KeysRefused"
SYNTH_STOPS = "synth stops before any construct (app.py: every problem, exit 1); nothing deployed"
CLI_STOPS = "the command stops before any AWS call (exit 2); nothing changed"
COLD_START = (
    "init fails before any delete → the records stay in the stream while the mapping retries (max_retries, "
    "max_record_age) → then kept on the failure bucket for `doctable replay`"
)


# ==================================================================================================== cases
@dataclass(frozen=True)
class Case:
    """One bad input: where it is fed, what it is, how to feed it, what must be observed, where it ends up."""

    area: str
    bad_input: str
    run: Callable[[], str]
    expect: tuple[str, ...]
    lands: str
    id: str = ""


CASES: list[Case] = []
AREAS: list[str] = []


def add(new: Case) -> None:
    if any(c.id == new.id for c in CASES):
        raise ValueError(f"duplicate case id {new.id!r}")
    if new.area not in AREAS:
        AREAS.append(new.area)
    CASES.append(new)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60]


# ---------------------------------------------------------------------------------------- shared harness
# Variables that would change what the code under test does or prints (a developer's shell may carry them).
_NOISY_ENV = (
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_MAX_ATTEMPTS",
    "AWS_RETRY_MODE",
    "AWS_DEFAULT_REGION",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "TABLE_NAME",
    "POWERTOOLS_DEV",
    "POWERTOOLS_LOG_LEVEL",
    "POWERTOOLS_METRICS_DISABLED",
    "LOG_LEVEL",
    "AWS_LAMBDA_LOG_LEVEL",
    "DOCTABLE_RESOLVED_BY",
)


@contextlib.contextmanager
def environment(values: Mapping[str, str | None], unset: Iterable[str] = ()) -> Iterator[None]:
    """``os.environ`` with ``values`` set (``None`` unsets) and ``unset`` removed; restored afterwards."""
    with mock.patch.dict(os.environ):
        for name in (*_NOISY_ENV, *unset):
            os.environ.pop(name, None)
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield


_SEQ_BASE = int(seq(0))
_SEQ_RE = re.compile(rf"\b{str(_SEQ_BASE)[:10]}\d{{12}}\b")
_ADDRESS_RE = re.compile(r" at 0x[0-9a-fA-F]+")


def normalize(text: str) -> str:
    """Deterministic text: the factory's sequence numbers as ``seqN``, no memory addresses, one line."""
    text = _SEQ_RE.sub(lambda m: f"seq{int(m.group()) - _SEQ_BASE}", text)
    text = _ADDRESS_RE.sub("", text)
    return " ⏎ ".join(line.strip() for line in text.strip().splitlines())


# ------------------------------------------------------------------------------------------- the knobs
KNOBS = "Knobs (`contract.knobs.resolve_config`, as `cdk synth`/`cdk deploy` and the CLI resolve them)"


def resolve(context: Mapping[str, str], environ: Mapping[str, str] | None = None) -> str:
    from contract.knobs import ConfigError, resolve_config

    try:
        config = resolve_config(context=dict(context), environ=dict(environ or {}), defaults={})
    except ConfigError as exc:
        return f"ConfigError ({len(exc.problems)}): " + " ⏎ ".join(exc.problems)
    shown = {name: getattr(config, name) for name in ("gsi", "stream", "consumer", "batch_size")}
    return "accepted, no error: " + ", ".join(f"{k}={v!r}" for k, v in shown.items())


def knob_case(
    knob: str,
    value: str,
    expect: Iterable[str],
    *,
    context: Mapping[str, str] | None = None,
    label: str | None = None,
    lands: str = SYNTH_STOPS,
    id: str | None = None,
) -> None:
    given = {"stream": "new-and-old", knob: value} if context is None else dict(context)
    add(
        Case(
            KNOBS,
            label or f"`{knob}={value}`",
            lambda: resolve(given),
            (f"{knob}=", *expect),
            lands,
            id or f"knob-{knob}-{_slug(value)[:20]}",
        )
    )


# One invalid value per knob (with the stream on, so that the consumer knobs are meaningful).
for _knob, _value, _allowed in [
    ("gsi", "gsi2", "allowed values: none|gsi1"),
    ("ttl", "yes", "allowed values: off|on"),
    ("stream", "new-image", "allowed values: none|new-and-old"),
    ("pitr", "true", "allowed values: auto|off|on"),
    ("env", "Qa", "allowed: lower-case letters, digits and -, starting with a letter"),
    ("tier", "gold", "allowed values: auto|dev|stg|uat|prod"),
    ("table_base", "Items", "one or more of [a-z0-9-]"),
    ("table_base", "items_v2", "one or more of [a-z0-9-]"),
    ("cost_center", "cc#1", "not a valid AWS tag value"),
    ("owner", "aws:me", "not starting with 'aws:'"),
    ("consumer", "lambda-fn", "auto|builtin|none|<Lambda function ARN>"),
    ("consumer", "arn:aws:lambda:us-east-1:12:function:x", "is not a Lambda function ARN"),
    ("blob_bucket", "Bad_Bucket", "not a valid S3 bucket name"),
    ("blob_bucket", "arn:aws:s3:::my-blobs", "not a valid S3 bucket name"),
    ("blob_root", "/abs/", "blob_root='/abs/' is malformed"),
    ("blob_root", "a/../b/", "blob_root='a/../b/' is malformed"),
    ("blob_root", "blobs", "ending in '/'"),
    ("blob_prefix_cleanup", "maybe", "allowed values: off|on"),
    ("blob_key_reuse", "sometimes", "allowed values: guarded|never"),
    ("snapstart", "yes", "allowed values: off|on"),
    ("starting_position", "at-timestamp", "allowed values: trim-horizon|latest"),
    ("batch_size", "0", "out of range; allowed: an integer from 1 to 10000"),
    ("batch_size", "ten", "not an integer"),
    ("batching_window", "301", "an integer from 0 to 300 seconds"),
    ("max_retries", "-1", "an integer from 0 to 10000"),
    ("max_record_age", "-1", "an integer from 60 to 604800 seconds"),
    ("parallelization_factor", "11", "an integer from 1 to 10"),
    ("powertools", "pip", "allowed values: layer|bundled"),
    ("architecture", "x86", "allowed values: arm64|x86_64"),
    ("memory", "256.0", "not an integer"),
    ("memory", "64", "an integer from 128 to 10240 MB"),
    ("timeout", "901", "an integer from 1 to 900 seconds"),
    ("deploy_target", "localstack", "allowed values: aws|local"),
]:
    knob_case(_knob, _value, [f"{_knob}={_value!r}", _allowed])

knob_case(
    "table_base",
    "a" * 200,
    [
        "(200 characters) leaves no room for an environment name in the failure bucket name",
        "at most 24 characters",
    ],
    label="`table_base=` 200 × `a` (no room left for the environment in the bucket names)",
)
knob_case(
    "env",
    "a" * 40,
    [
        "does not fit the stack name doctable-<table_base>-<env>",
        "an environment name of at most 33 characters",
    ],
    context={"env": "a" * 40, "tier": "dev", "bucket_names": "generated"},
    label="`env=` 40 × `a`, `bucket_names=generated` (the generated function and role names would cut the stack name)",
    id="knob-env-too-long",
)
knob_case(
    "env",
    "e" * 21,
    [
        "does not fit the failure bucket name <table_base>-<env>-<account>-<region>-failures",
        "an environment name of at most 20 characters",
    ],
    context={"env": "e" * 21, "tier": "dev"},
    label="`env=` 21 × `e` (the exact failure bucket name would pass S3's 63 characters)",
    id="knob-env-too-long-for-the-bucket",
)
knob_case(
    "table_base",
    "-items",
    [
        "begins the bucket names",
        "allowed: a table_base starting with a letter or digit, not with xn-- or sthree-",
    ],
    label="`table_base=-items` (S3 refuses a bucket name that starts with `-`)",
    id="knob-table_base-leading-dash",
)
knob_case("bucket_names", "auto", ["allowed values: exact|generated"])
knob_case(
    "env",
    "qa",
    ["env='qa' has no tier; allowed: tier = 'dev'|'stg'|'uat'|'prod' in [environments.qa]"],
    context={"env": "qa"},
    label="`env=qa` without a tier (only dev, stg, uat and prod are their own tier)",
    id="knob-env-without-tier",
)
knob_case(
    "owner",
    "x" * 257,
    ["is not a valid AWS tag value", "at most 256"],
    label="`owner=` 257 × `x` (tag value too long)",
)
# The table's options: one bad value each, then the contradictions between them.
for _knob, _value, _allowed in [
    ("table_class", "infrequent", "allowed values: standard|standard-ia"),
    ("max_read", "0", "off or an integer from 1 to 40000 read units"),
    ("max_write", "unlimited", "off or an integer from 1 to 40000 write units"),
    ("warm_read", "5000", "off or an integer from 12000 to 40000 reads/s"),
    ("warm_write", "100", "off or an integer from 4000 to 40000 writes/s"),
    ("pitr_days", "36", "off or an integer from 1 to 35 days"),
    ("deletion_protection", "yes", "allowed values: auto|off|on"),
    ("contributor_insights", "on", "allowed values: off|throttled-keys|accessed-and-throttled-keys"),
]:
    knob_case(_knob, _value, [f"{_knob}={_value!r}", _allowed], context={"pitr": "on", _knob: _value})
# replicas: region names, each once, and what a global table needs or does not support yet.
knob_case(
    "replicas", "us-west", ["replicas='us-west' is not a region name", "region names such as us-west-2"]
)
knob_case("replicas", "us-west-2,us-west-2", ["replicas='us-west-2' is listed twice", "each region once"])
knob_case(
    "replicas",
    "us-west-2",
    ["replicas='us-west-2' set but stream='none'", "NEW_AND_OLD_IMAGES stream"],
    context={"replicas": "us-west-2"},
    label="`replicas=us-west-2` without the stream",
    id="knob-replicas-without-stream",
)
knob_case(
    "replicas",
    "us-west-2",
    ["encryption='customer-managed' is not supported with replicas yet"],
    context={"replicas": "us-west-2", "stream": "new-and-old", "encryption": "customer-managed"},
    label="`replicas=us-west-2` with `encryption=customer-managed`",
    id="knob-replicas-customer-managed",
)
knob_case(
    "pitr_days",
    "7",
    ["pitr_days=7 set but PITR is off (pitr=auto is off in tier dev (env=dev))", "set pitr=on"],
    context={"pitr_days": "7"},
    label="`pitr_days=7` with PITR off (dev's default)",
    id="knob-pitr-days-without-pitr",
)
knob_case(
    "warm_read",
    "20000",
    ["warm_read=20000 is above max_read=15000", "allowed: warm_read <= max_read"],
    context={"max_read": "15000", "warm_read": "20000"},
    label="`warm_read=20000` above `max_read=15000`",
    id="knob-warm-above-max",
)
knob_case(
    "batch_size",
    "10001",
    ["batch_size='10001' is out of range; allowed: an integer from 1 to 10000", "needs batching_window"],
    label="`batch_size=10001` (oversized batch)",
)

# The mapping's event filter and metrics.
knob_case("events", "inserts", ["events='inserts'", "allowed values: all|cleanup"])
knob_case("mapping_metrics", "yes", ["mapping_metrics='yes'", "allowed values: off|on"])
knob_case(
    "events",
    "cleanup",
    ["events='cleanup' set but consumer='none'", "set consumer=builtin or events=all"],
    context={"stream": "new-and-old", "consumer": "none", "events": "cleanup"},
    label="`events=cleanup` with `consumer=none` (contradiction)",
    id="contradiction-events-cleanup-without-the-builtin-consumer",
)

# Kinesis Data Streams for DynamoDB, and which stream the mapping reads.
knob_case(
    "kinesis",
    "my-stream",
    ["kinesis='my-stream' is not allowed", "off|on|arn:aws:kinesis:<region>:<account>:stream/<name>"],
)
knob_case("consumer_source", "sqs", ["consumer_source='sqs'", "allowed values: dynamodb|kinesis"])
knob_case(
    "consumer_source",
    "kinesis",
    ["consumer_source='kinesis' set but kinesis='off'", "set kinesis=on"],
    label="`consumer_source=kinesis` with `kinesis=off` (contradiction)",
    id="contradiction-kinesis-source-without-kinesis",
)
knob_case(
    "consumer_source",
    "kinesis",
    ["consumer_source='kinesis' set but consumer='none'", "consumer_source=dynamodb"],
    context={"kinesis": "on", "consumer": "none", "consumer_source": "kinesis"},
    label="`consumer_source=kinesis` with `consumer=none` (contradiction)",
    id="contradiction-kinesis-source-without-a-consumer",
)

# Encryption at rest and the table's resource policy.
knob_case("encryption", "kms", ["encryption='kms'", "allowed values: aws-owned|aws-managed|customer-managed"])
knob_case(
    "kms_key",
    "alias/my-key",
    ["kms_key='alias/my-key' is not a KMS key ARN", "arn:aws:kms:<region>:<account>:key/<key id>"],
    context={"encryption": "customer-managed", "kms_key": "alias/my-key"},
)
knob_case(
    "kms_key",
    "",
    ["set but encryption='aws-managed'", "set encryption=customer-managed or unset kms_key"],
    context={
        "encryption": "aws-managed",
        "kms_key": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    },
    label="`kms_key=<key ARN>` with `encryption=aws-managed` (contradiction)",
    id="contradiction-kms-key-without-customer-managed",
)
# A resource policy document, as files in a directory of their own (the knob takes a path).
POLICY_FILES = {
    "not-json.json": "{'Version': '2012-10-17'}",
    "no-principal.json": json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Sid": "Open", "Effect": "Allow", "Action": "dynamodb:*"}]}
    ),
    "old-version.json": json.dumps({"Version": "2001-01-01", "Statement": []}),
    "s3-action.json": json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject"}],
        }
    ),
}


def resolve_policy_file(name: str) -> str:
    with tempfile.TemporaryDirectory() as directory, contextlib.chdir(directory):
        for file, text in POLICY_FILES.items():
            Path(file).write_text(text)
        return resolve({"resource_policy": name})


for _file, _fragment in [
    ("missing.json", "no such file; allowed: off or the path of a JSON policy document"),
    ("not-json.json", "is not JSON (Expecting property name enclosed in double quotes"),
    ("no-principal.json", "statement Open: a resource policy needs Principal or NotPrincipal"),
    ("old-version.json", "Version must be one of 2012-10-17, 2008-10-17"),
    ("s3-action.json", "action 's3:GetObject' is not a dynamodb: action"),
]:
    add(
        Case(
            KNOBS,
            f"`resource_policy={_file}` ({_fragment.split(';')[0].split(' (')[0]})",
            functools.partial(resolve_policy_file, _file),
            (f"resource_policy='{_file}'", _fragment),
            SYNTH_STOPS,
            f"knob-resource_policy-{_slug(_file)}",
        )
    )

# Contradictions: each value is valid alone, the combination is not.
for _context, _label, _fragment in [
    ({"consumer": "builtin"}, "`consumer=builtin` with `stream=none`", "set but stream=none"),
    (
        {"consumer": "arn:aws:lambda:us-east-1:123456789012:function:mine"},
        "`consumer=<Lambda ARN>` with `stream=none`",
        "set but stream=none",
    ),
    (
        {"stream": "new-and-old", "consumer": "none", "blob_bucket": "my-blobs"},
        "`blob_bucket=my-blobs` with `consumer=none`",
        "only consumer=builtin uses it",
    ),
    (
        {"stream": "new-and-old", "consumer": "none", "blob_root": "blobs/"},
        "`blob_root=blobs/` with `consumer=none`",
        "only consumer=builtin uses it",
    ),
    (
        {"blob_bucket": "my-blobs"},
        "`blob_bucket=my-blobs` with `stream=none` (consumer auto → none)",
        "only consumer=builtin uses it",
    ),
    (
        {"stream": "new-and-old", "consumer": "none", "blob_prefix_cleanup": "on"},
        "`blob_prefix_cleanup=on` with `consumer=none`",
        "only consumer=builtin cleans blobs",
    ),
    (
        {"stream": "new-and-old", "consumer": "none", "blob_key_reuse": "never"},
        "`blob_key_reuse=never` with `consumer=none`",
        "only consumer=builtin deletes blobs",
    ),
    (
        {"stream": "new-and-old", "consumer": "none", "snapstart": "on"},
        "`snapstart=on` with `consumer=none`",
        "only the built-in consumer's function is deployed by this stack",
    ),
    (
        {"stream": "new-and-old", "batch_size": "5000"},
        "`batch_size=5000` without `batching_window`",
        "batch_size=5000 needs batching_window >= 1",
    ),
]:
    _knob = next(iter(k for k in _context if k not in ("stream", "consumer")), "consumer")
    knob_case(
        _knob,
        "",
        [_fragment],
        context=_context,
        label=_label + " (contradiction)",
        id=f"contradiction-{_slug(_label)}",
    )

add(
    Case(
        KNOBS,
        "four bad knobs at once (`gsi=x ttl=y env=z consumer=builtin`)",
        lambda: resolve({"gsi": "x", "ttl": "y", "env": "z", "consumer": "builtin"}),
        ("ConfigError (4)", "gsi='x'", "ttl='y'", "env='z'", "consumer='builtin' set but stream=none"),
        SYNTH_STOPS + "; every problem in one message",
        "knob-all-at-once",
    )
)
add(
    Case(
        KNOBS,
        "a bad value from the environment (`DOCTABLE_GSI=bogus`, no `-c`)",
        lambda: resolve({}, {"DOCTABLE_GSI": "bogus"}),
        ("gsi='bogus' is not allowed",),
        SYNTH_STOPS + " (the message names the knob, not the variable DOCTABLE_GSI)",
        "knob-from-environment",
    )
)


def _as_the_app_reads(context: Mapping[str, str]) -> str:
    """``-c`` context read as app.py reads it (``user_context(app.node.get_all_context())``), then resolved."""
    from contract.knobs import user_context

    return resolve(user_context({"@aws-cdk/core:checkSecretUsage": True, **context}))


add(
    Case(
        KNOBS,
        "a misspelt knob name (`-c gsii=gsi1`)",
        lambda: _as_the_app_reads({"gsii": "gsi1"}),
        ("gsii='gsi1' is not a knob (did you mean gsi?)",),
        SYNTH_STOPS,
        "knob-unknown-name",
    )
)


# ------------------------------------------------------------------------------------------ the consumer
EVENTS = "Consumer: events and records (`stream_consumer.handler.lambda_handler`)"
IMAGES = "Consumer: images with unexpected types"
KEYS = "Consumer: escaping blob keys"
BATCH = "Consumer: oversized batches and a missing bucket"
COLD = "Consumer: environment at cold start (`stream_consumer.settings`)"

CONSUMER_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_REGION": REGION,
    "POWERTOOLS_TRACE_DISABLED": "1",
    "POWERTOOLS_METRICS_NAMESPACE": "Doctable",
    "POWERTOOLS_SERVICE_NAME": SERVICE,
    "BLOB_BUCKET": BUCKET,
    "BLOB_ROOT": "blobs/",
    "BLOB_PREFIX_CLEANUP": "off",
    "TABLE_NAME": TABLE,
}


@dataclass
class ConsumerRun:
    """What one invocation did: the response or error, the JSON lines it wrote, the store calls, the bucket after."""

    error: str | None = None
    response: Any = None
    lines: list[dict[str, Any]] = field(default_factory=list)
    delete_requests: int = 0
    list_requests: int = 0
    head_requests: int = 0
    left: list[str] = field(default_factory=list)
    cold_start: bool = True

    def messages(self, name: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line.get("message") == name]

    def metrics(self) -> dict[str, Any]:
        for line in self.lines:
            if "_aws" in line:
                names = [m["Name"] for d in line["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]]
                return {name: _number(line[name]) for name in names}
        return {}

    def summary(self) -> str:
        """One line, most telling first: the outcome, what was logged about the input, what the bucket keeps."""
        parts: list[str] = []
        if self.error is not None:
            parts.append(("cold start fails: " if self.cold_start else "invocation fails: ") + self.error)
        else:
            failed = [item["itemIdentifier"] for item in (self.response or {}).get("batchItemFailures", [])]
            parts.append(f"batchItemFailures=[{', '.join(failed)}]")
        for line in self.messages("unexpected_event"):
            same = self.error is not None and self.error.endswith(line["error"])
            parts.append("logged as unexpected_event" if same else f"unexpected_event: {line['error']}")
        for line in self.messages("record_rejected"):
            number = line.get("sequence_number", "(no sequence number)")
            parts.append(f"record_rejected {number}: {line['problem']}")
        for line in self.messages("delete_request_failed"):
            parts.append(f"delete_request_failed ({line['key_count']} keys): {line['error']}")
        request_failed = bool(self.messages("delete_request_failed"))
        for line in self.messages("record_failed"):
            first = next(iter((line.get("failed_keys") or {}).items()), None)
            detail = f" ({first[0]!r}: {first[1]})" if first and not request_failed else ""
            parts.append(f"record_failed {line['sequence_number']}: {line['error']}{detail}")
        for line in self.messages("blob_key_refused"):
            parts.append(f"blob_key_refused {line['key']!r}: {line['reason']} ({line['source']})")
        for line in self.messages("record_without_images"):
            parts.append(f"record_without_images {line['view_type']}: action={line['action']}")
        for line in self.messages("table_name_mismatch"):
            parts.append(f"table_name_mismatch: expected {line['expected']}, received {line['received']}")
        if self.left or (self.error is None and not self.cold_start):
            parts.append(f"bucket keeps {self.left}")
        cleaned = self.messages("record_cleaned")
        if 0 < len(cleaned) <= 3:
            parts.extend(f"record_cleaned {c['pk']}/{c['sk']}: {c['reason']}" for c in cleaned)
        elif cleaned:
            parts.append(f"record_cleaned ×{len(cleaned)}")
        metrics = self.metrics()
        if metrics:
            parts.append("metrics " + " ".join(f"{k}={v}" for k, v in metrics.items()))
        if not self.cold_start:
            parts.append(
                f"S3 requests: {self.head_requests} HEAD, {self.delete_requests} DeleteObjects, "
                f"{self.list_requests} list"
            )
        return normalize("; ".join(parts))


def _number(value: Any) -> Any:
    """An EMF metric value (a list of floats when the name was added once or more) as one plain number."""
    total = sum(value) if isinstance(value, list) else value
    return int(total) if float(total).is_integer() else total


def _purge_consumer() -> None:
    for name in [m for m in sys.modules if m == "stream_consumer" or m.startswith("stream_consumer.")]:
        del sys.modules[name]


def _point_logger(stream: io.StringIO) -> list[tuple[logging.StreamHandler[Any], Any]]:
    saved = []
    for handler in logging.getLogger(SERVICE).handlers:
        if isinstance(handler, logging.StreamHandler):
            saved.append((handler, handler.stream))
            handler.stream = stream
    return saved


@functools.cache
def _s3_client() -> Any:
    """The S3 client exactly as ``S3BlobStore`` builds it (its retry config), created once per process.

    Building a boto3 client costs ~60 ms; every consumer case reuses this one (moto intercepts it inside each
    case's own ``mock_aws``), so the whole table stays fast. Call it with :data:`CONSUMER_ENV` active.
    """
    from stream_consumer.blob_store import S3BlobStore

    return S3BlobStore(BUCKET).client


def _create_table() -> None:
    """The consumer's table, empty: no record's item exists any more (so no blob is kept as live)."""
    import boto3

    boto3.client("dynamodb", region_name=REGION).create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def run_consumer(
    event: Any,
    *,
    env: Mapping[str, str | None] | None = None,
    objects: Iterable[str] = (),
    create_bucket: bool = True,
) -> ConsumerRun:
    """Cold-start the handler with ``env`` (over :data:`CONSUMER_ENV`), invoke it once on ``event``."""
    from moto import mock_aws

    out = io.StringIO()
    run = ConsumerRun()
    saved: list[tuple[logging.StreamHandler[Any], Any]] = []
    with (
        environment({**CONSUMER_ENV, **(env or {})}),
        mock_aws(),
        contextlib.redirect_stdout(out),
    ):
        s3 = _s3_client()
        if create_bucket:
            s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
            put_objects(s3, BUCKET, list(objects))
        _create_table()
        _purge_consumer()
        try:
            try:
                handler = importlib.import_module("stream_consumer.handler")
            except Exception as exc:
                run.error = f"{type(exc).__name__}: {exc}"
                run.left = []
                return run
            saved = _point_logger(out)
            store = handler.cleaner.store
            store._client = s3  # the client the store would create (see _s3_client), built once per process
            real_delete, real_list, real_observe = store.delete_keys, store.list_prefix, store.observe

            def delete_keys(keys: Any, etags: Any = None) -> Any:
                run.delete_requests += 1
                return real_delete(keys, etags)

            def observe(key: str) -> Any:
                run.head_requests += 1
                return real_observe(key)

            def list_prefix(prefix: str) -> Any:
                run.list_requests += 1
                return real_list(prefix)

            store.delete_keys, store.list_prefix, store.observe = delete_keys, list_prefix, observe
            run.cold_start = False
            try:
                run.response = handler.lambda_handler(event, FakeLambdaContext())
            except Exception as exc:
                run.error = f"{type(exc).__name__}: {exc}"
            if create_bucket:
                pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
                run.left = sorted(item["Key"] for page in pages for item in page.get("Contents", []))
        finally:
            for handler_, previous in saved:
                handler_.stream = previous  # not setStream(): it would flush a stream that may be closed
            _purge_consumer()
    run.lines = [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]
    return run


def consumer_case(
    area: str,
    bad_input: str,
    event: Callable[[], Any],
    expect: Iterable[str],
    lands: str,
    *,
    id: str,
    env: Mapping[str, str | None] | None = None,
    objects: Iterable[str] = (),
    create_bucket: bool = True,
) -> None:
    objects = tuple(objects)
    add(
        Case(
            area,
            bad_input,
            lambda: run_consumer(event(), env=env, objects=objects, create_bucket=create_bucket).summary(),
            tuple(expect),
            lands,
            id,
        )
    )


OWN = "blobs/doc#1/v#1/own.pdf"
THEIRS = "blobs/doc#2/v#1/theirs.pdf"
GOOD_NEIGHBOUR = "blobs/b/1/y"


def _with_blobs(blobs_av: dict[str, Any], pk: str = "c", sk: str = "1") -> dict[str, Any]:
    img = image(pk, sk)
    img["blobs"] = blobs_av
    return img


def _neighboured(*bad: dict[str, Any]) -> dict[str, Any]:
    """``bad`` records followed by a good REMOVE (seq 9) whose blob must still be cleaned."""
    return stream_event(*bad, remove(9, "b", "1", [GOOD_NEIGHBOUR]))


# ---- events and records
consumer_case(
    EVENTS,
    "an empty event `{}` (not a stream invocation)",
    lambda: {},
    ["invocation fails: UnexpectedEventError", "expected a DynamoDB Streams event", "top-level keys []"],
    "the invocation errors before any record is read; nothing deleted (metrics published as zeros)",
    id="event-empty",
)
consumer_case(
    EVENTS,
    "an SQS-shaped event",
    sqs_event,
    ["invocation fails: UnexpectedEventError", "Records[0].eventSource is 'aws:sqs'"],
    "the invocation errors, nothing deleted; the error goes back to the invoker (an SQS mapping would "
    "retry and redrive the message)",
    id="event-sqs",
)
consumer_case(
    EVENTS,
    '`{"Records": []}` (no records)',
    lambda: {"Records": []},
    ["invocation fails: UnexpectedEventError", "top-level keys ['Records']"],
    "the invocation errors, nothing deleted",
    id="event-no-records",
)
consumer_case(
    EVENTS,
    "a stream record beside a record that is a string",
    lambda: stream_event(remove(1, "b", "1", [GOOD_NEIGHBOUR]), "not-a-record"),  # type: ignore[arg-type]
    ["invocation fails: UnexpectedEventError", "Records[1].eventSource is None"],
    BATCH_RETRIED.replace(" before any delete", ", nothing deleted"),
    objects=[GOOD_NEIGHBOUR],
    id="event-record-not-object",
)
consumer_case(
    EVENTS,
    "a record without `dynamodb` (so no SequenceNumber)",
    lambda: _neighboured({**insert(1), "dynamodb": None}),
    [
        "invocation fails: UnidentifiableRecordError",
        "without a sequence number (dynamodb.SequenceNumber; kinesis.sequenceNumber for a Kinesis record), "
        "failing the whole batch",
        "missing 'dynamodb' object",
        f"bucket keeps ['{GOOD_NEIGHBOUR}']",
    ],
    BATCH_RETRIED + "; the good neighbour is not deleted yet (retried with it)",
    objects=[GOOD_NEIGHBOUR],
    id="record-no-dynamodb",
)


def _no_sequence_number() -> dict[str, Any]:
    bad = remove(1, "doc#1", "v#1", [OWN])
    del bad["dynamodb"]["SequenceNumber"]
    return _neighboured(bad)


consumer_case(
    EVENTS,
    "a record without `dynamodb.SequenceNumber`",
    _no_sequence_number,
    [
        "invocation fails: UnidentifiableRecordError",
        "Records[0]: missing dynamodb.SequenceNumber",
        "RecordsFailed=2",
        f"bucket keeps ['{GOOD_NEIGHBOUR}', '{OWN}']",
    ],
    BATCH_RETRIED + "; no blob of the batch is deleted by this invocation",
    objects=[OWN, GOOD_NEIGHBOUR],
    id="record-no-sequence-number",
)
consumer_case(
    EVENTS,
    "a record without `dynamodb.Keys`",
    lambda: _neighboured(record("REMOVE", 1, keys={}, old=image("doc#1", "v#1", [OWN]))),
    ["batchItemFailures=[seq1]", "record_rejected seq1: missing dynamodb.Keys", "b/1: deleted"],
    RETRIED + "; the good neighbour is cleaned",
    objects=[OWN, GOOD_NEIGHBOUR],
    id="record-no-keys",
)
consumer_case(
    EVENTS,
    "an unknown `eventName` (`UPSERT`)",
    lambda: _neighboured(record("UPSERT", 1, new=image("doc#1", "v#1"))),
    ["batchItemFailures=[seq1]", "eventName 'UPSERT' is not one of INSERT, MODIFY, REMOVE"],
    RETRIED,
    objects=[GOOD_NEIGHBOUR],
    id="record-unknown-event-name",
)
consumer_case(
    EVENTS,
    "`pk` missing from `Keys`",
    lambda: _neighboured(record("REMOVE", 1, keys={"sk": av("v#1")}, old=image("doc#1", "v#1", [OWN]))),
    ["batchItemFailures=[seq1]", "key attribute 'pk' must be a non-empty string, got missing"],
    RETRIED + "; its blobs stay until a retry succeeds",
    objects=[OWN, GOOD_NEIGHBOUR],
    id="record-pk-missing",
)
consumer_case(
    EVENTS,
    "`pk` a number (`N`)",
    lambda: _neighboured(record("REMOVE", 1, keys={"pk": av(7), "sk": av("v#1")}, old=image("c", "1"))),
    ["batchItemFailures=[seq1]", "key attribute 'pk' must be a non-empty string, got a Decimal"],
    RETRIED,
    objects=[GOOD_NEIGHBOUR],
    id="record-pk-number",
)
consumer_case(
    EVENTS,
    "`sk` binary (`B`)",
    lambda: _neighboured(record("REMOVE", 1, keys={"pk": av("c"), "sk": {"B": "AAE="}}, old=image("c", "1"))),
    ["batchItemFailures=[]", "record_cleaned c/AAE=: deleted"],
    "⚠ not rejected: the base64 text is used as the sort key (prefix `blobs/c/AAE=/`); the table's keys are "
    "strings, so its own stream cannot carry this",
    objects=[GOOD_NEIGHBOUR],
    id="record-sk-binary",
)
consumer_case(
    EVENTS,
    "`pk` an empty string",
    lambda: _neighboured(record("REMOVE", 1, keys={"pk": av(""), "sk": av("v#1")}, old=image("c", "1"))),
    ["batchItemFailures=[seq1]", "key attribute 'pk' must be a non-empty string, got a str"],
    RETRIED,
    objects=[GOOD_NEIGHBOUR],
    id="record-pk-empty",
)
consumer_case(
    EVENTS,
    "a KEYS_ONLY-shaped REMOVE (no images), prefix cleanup off",
    lambda: stream_event(keys_only("REMOVE", 1, "doc#1", "v#1")),
    ["batchItemFailures=[]", "record_without_images KEYS_ONLY: action=none", f"bucket keeps ['{OWN}']"],
    "nothing deleted (the blobs stay, none lost); logged as record_without_images",
    objects=[OWN],
    id="record-keys-only",
)
consumer_case(
    EVENTS,
    "a KEYS_ONLY-shaped REMOVE (no images), prefix cleanup on",
    lambda: stream_event(keys_only("REMOVE", 1, "doc#1", "v#1")),
    ["batchItemFailures=[]", "action=clear-prefix", "1 list", f"bucket keeps ['{THEIRS}']"],
    "only the record's own prefix (built from `Keys`) is listed and cleared; the neighbour stays",
    env={"BLOB_PREFIX_CLEANUP": "on"},
    objects=[OWN, THEIRS],
    id="record-keys-only-prefix-cleanup",
)
consumer_case(
    EVENTS,
    "a NEW_IMAGE-shaped MODIFY (no old image)",
    lambda: stream_event(
        record("MODIFY", 1, "doc#1", "v#1", new=image("doc#1", "v#1", []), view_type="NEW_IMAGE")
    ),
    ["batchItemFailures=[]", "record_without_images NEW_IMAGE: action=none", f"bucket keeps ['{OWN}']"],
    "nothing deleted (orphans cannot be computed, none lost); logged as record_without_images",
    objects=[OWN],
    id="record-new-image-modify",
)
consumer_case(
    EVENTS,
    "a record from another table (`TABLE_NAME` set to a different table)",
    lambda: stream_event(remove(1, "doc#1", "v#1", [OWN])),
    ["batchItemFailures=[seq1]", f"bucket keeps ['{OWN}']", "0 DeleteObjects"],
    "nothing deleted; the record fails (logged as records_from_foreign_table) → retried → kept on the failure "
    "bucket, where the alarm fires",
    env={"TABLE_NAME": "other-table"},
    objects=[OWN],
    id="record-foreign-table",
)


def _from(source: Any, *records: dict[str, Any]) -> dict[str, Any]:
    """A stream event whose records carry ``source`` as eventSourceARN (``None``: the field is missing)."""
    for raw in records:
        raw.pop("eventSourceARN")
        if source is not None:
            raw["eventSourceARN"] = source
    return stream_event(*records)


consumer_case(
    EVENTS,
    "a batch mixing a record from another table with the table's own",
    lambda: stream_event(
        *_from(STREAM_ARN.replace(TABLE, "other-table"), remove(1, "doc#1", "v#1", [OWN]))["Records"],
        remove(2, "doc#2", "v#1", [THEIRS]),
    ),
    ["batchItemFailures=[seq1]", f"bucket keeps ['{OWN}']", "record_cleaned doc#2/v#1: deleted"],
    "the foreign record fails (retried → kept on the failure bucket); the table's own record is cleaned",
    objects=[OWN, THEIRS],
    id="record-foreign-beside-own",
)
for _source, _label, _id in (
    ("eventsource_arn", "an `eventSourceARN` that is not a DynamoDB stream ARN", "record-source-unknown"),
    (None, "a record without `eventSourceARN`", "record-source-missing"),
):
    consumer_case(
        EVENTS,
        _label,
        functools.partial(lambda source: _from(source, remove(1, "doc#1", "v#1", [OWN])), _source),
        ["batchItemFailures=[seq1]", f"bucket keeps ['{OWN}']", "0 DeleteObjects"],
        "refused like a record of another table: nothing deleted, the record fails → retried → kept on the "
        "failure bucket",
        objects=[OWN],
        id=_id,
    )


def _without_creation_time() -> dict[str, Any]:
    raw = remove(1, "doc#1", "v#1", [OWN])
    del raw["dynamodb"]["ApproximateCreationDateTime"]
    return stream_event(raw)


consumer_case(
    EVENTS,
    "a REMOVE without `dynamodb.ApproximateCreationDateTime`",
    _without_creation_time,
    [
        "batchItemFailures=[seq1]",
        "ApproximateCreationDateTime must be epoch seconds",
        f"bucket keeps ['{OWN}']",
    ],
    RETRIED + " (without the record's time no dropped blob can be told from a newer upload)",
    objects=[OWN],
    id="record-no-creation-time",
)
consumer_case(
    KEYS,
    "a REMOVE whose blob key was uploaded again after the record (key reuse)",
    lambda: stream_event(remove(1, "doc#1", "v#1", [OWN], created=1_000_000_000)),
    ["batchItemFailures=[]", f"bucket keeps ['{OWN}']", "1 HEAD, 0 DeleteObjects"],
    "kept: the object is newer than the record (LastModified after its ApproximateCreationDateTime), so it is "
    "not the blob the record dropped; logged in record_cleaned's keys_kept",
    objects=[OWN],
    id="key-reused-newer-upload",
)

# ---- images with unexpected types
consumer_case(
    IMAGES,
    "`blobs` a number",
    lambda: _neighboured(record("REMOVE", 1, "c", "1", old=_with_blobs(av(5)))),
    ["batchItemFailures=[seq1]", "OldImage.blobs must be a list or a string set, got Decimal"],
    RETRIED + "; the good neighbour is cleaned",
    objects=[GOOD_NEIGHBOUR],
    id="image-blobs-number",
)
consumer_case(
    IMAGES,
    "`blobs` a map",
    lambda: _neighboured(record("REMOVE", 1, "c", "1", old=_with_blobs(av({"a": "blobs/c/1/a"})))),
    ["batchItemFailures=[seq1]", "OldImage.blobs must be a list or a string set, got dict"],
    RETRIED,
    objects=[GOOD_NEIGHBOUR],
    id="image-blobs-map",
)
consumer_case(
    IMAGES,
    "`blobs` a string",
    lambda: _neighboured(record("REMOVE", 1, "c", "1", old=_with_blobs(av("blobs/c/1/a")))),
    ["batchItemFailures=[seq1]", "OldImage.blobs must be a list or a string set, got str"],
    RETRIED,
    objects=[GOOD_NEIGHBOUR],
    id="image-blobs-string",
)
consumer_case(
    IMAGES,
    "`blobs` a number set (`NS`)",
    lambda: _neighboured(record("REMOVE", 1, "c", "1", old=_with_blobs({"NS": ["1", "2"]}))),
    ["batchItemFailures=[seq1]", "OldImage.blobs must be a list or a string set, got number set"],
    RETRIED,
    objects=[GOOD_NEIGHBOUR],
    id="image-blobs-number-set",
)
consumer_case(
    IMAGES,
    "`blobs` in the new image of a MODIFY a boolean",
    lambda: _neighboured(
        record("MODIFY", 1, "c", "1", old=image("c", "1", ["blobs/c/1/a"]), new=_with_blobs(av(True)))
    ),
    ["batchItemFailures=[seq1]", "NewImage.blobs must be a list or a string set, got bool"],
    RETRIED + "; the old image's blobs stay",
    objects=["blobs/c/1/a", GOOD_NEIGHBOUR],
    id="image-blobs-bool",
)
consumer_case(
    IMAGES,
    "`blobs` NULL",
    lambda: stream_event(record("REMOVE", 1, "c", "1", old=_with_blobs({"NULL": True}))),
    ["batchItemFailures=[]", "c/1: deleted", "BlobsDeleted=0"],
    "treated as an empty list: nothing to delete, no failure",
    objects=["blobs/c/1/a"],
    id="image-blobs-null",
)
consumer_case(
    IMAGES,
    "`blobs` list holding a number",
    lambda: stream_event(record("REMOVE", 1, "doc#1", "v#1", old=_with_blobs(av([OWN, 42]), "doc#1", "v#1"))),
    ["batchItemFailures=[]", "'42': not-a-string", "KeysRefused=1", "BlobsDeleted=1"],
    REFUSED + "; the string key is deleted",
    objects=[OWN],
    id="image-blobs-non-string",
)
consumer_case(
    IMAGES,
    "`blobs` list holding a map that is not a manifest entry (no `key`)",
    lambda: stream_event(
        record("REMOVE", 1, "doc#1", "v#1", old=_with_blobs(av([OWN, {"k": "v"}]), "doc#1", "v#1"))
    ),
    ["batchItemFailures=[seq1]", "OldImage.blobs[1] is a map without 'key'"],
    RETRIED + "; its blobs stay until a retry succeeds",
    objects=[OWN],
    id="image-blobs-bad-manifest-entry",
)
consumer_case(
    IMAGES,
    "`OldImage` a list, not a map",
    lambda: _neighboured(
        {**record("REMOVE", 1, "c", "1"), "dynamodb": {**insert(1)["dynamodb"], "OldImage": []}}
    ),
    ["batchItemFailures=[seq1]", "dynamodb.OldImage is not an object"],
    RETRIED,
    objects=[GOOD_NEIGHBOUR],
    id="image-old-image-list",
)
consumer_case(
    IMAGES,
    'an attribute value of an unknown type (`{"X": "1"}`)',
    lambda: _neighboured(record("REMOVE", 1, "c", "1", old={**image("c", "1"), "size": {"X": "1"}})),
    [
        "batchItemFailures=[seq1]",
        "attribute values do not deserialize: TypeError: Dynamodb type X is not supported",
    ],
    RETRIED,
    objects=[GOOD_NEIGHBOUR],
    id="image-unknown-type",
)
consumer_case(
    IMAGES,
    'a number attribute that is not a number (`{"N": "abc"}`)',
    lambda: _neighboured(record("REMOVE", 1, "c", "1", old={**image("c", "1"), "size": {"N": "abc"}})),
    ["batchItemFailures=[seq1]", "attribute values do not deserialize: InvalidOperation"],
    RETRIED + " (⚠ the error names neither the attribute nor the value)",
    objects=[GOOD_NEIGHBOUR],
    id="image-bad-number",
)

# ---- escaping blob keys: a REMOVE of doc#1/v#1 listing its own blob and one key that is not its own
# ``_victim``: an object stored under exactly that key (S3 keys are literal), which must survive.
for _key, _reason, _label, _victim in [
    ("../x", "dot-dot-segment", "`../x`", "../x"),
    (
        "blobs/doc#1/v#1/../../doc#2/v#1/theirs.pdf",
        "dot-dot-segment",
        "`<own prefix>/../../doc#2/…`",
        "blobs/doc#1/v#1/../../doc#2/v#1/theirs.pdf",
    ),
    ("/abs", "absolute", "`/abs` (leading slash)", "/abs"),
    (THEIRS, "outside-record-prefix", "another record's key `blobs/doc#2/v#1/theirs.pdf`", THEIRS),
    (
        "blobs/doc#1/v#10/x.pdf",
        "outside-record-prefix",
        "a sibling's key `blobs/doc#1/v#10/x.pdf`",
        "blobs/doc#1/v#10/x.pdf",
    ),
    ("other/doc#1/v#1/x", "outside-record-prefix", "a key outside `BLOB_ROOT`", "other/doc#1/v#1/x"),
    ("blobs/doc#1/v#1\\win.pdf", "backslash", "a key with a backslash", "blobs/doc#1/v#1\\win.pdf"),
    ("blobs/doc#1/v#1/a\x00b", "control-character", "a key with a NUL character", None),
    ("blobs/doc#1/v#1/a\nb", "control-character", "a key with a newline", None),
    ("", "empty", "an empty key", None),
]:
    _objects = [OWN] + ([_victim] if _victim else [])
    consumer_case(
        KEYS,
        _label,
        functools.partial(lambda k: stream_event(remove(1, "doc#1", "v#1", [OWN, k])), _key),
        [
            "batchItemFailures=[]",
            f"blob_key_refused {_key!r}: {_reason}",
            "KeysRefused=1",
            "BlobsDeleted=1",
            f"bucket keeps [{_victim!r}]" if _victim else "bucket keeps []",
        ],
        REFUSED + ("; the object it names is untouched" if _victim else ""),
        objects=_objects,
        id=f"key-{_slug(_reason)}-{_slug(_label)[:24]}",
    )

consumer_case(
    KEYS,
    "`pk` containing `/` (`doc/1`: ambiguous prefix)",
    lambda: stream_event(remove(1, "doc/1", "v#1", ["blobs/doc/1/v#1/a.pdf"])),
    ["batchItemFailures=[]", "'blobs/doc/1/v#1/a.pdf': record-prefix-ambiguous", "KeysRefused=1"],
    REFUSED + " (every key of the record; `doc` + `1/v#1` would share the prefix)",
    objects=["blobs/doc/1/v#1/a.pdf"],
    id="key-pk-with-slash",
)
consumer_case(
    KEYS,
    "`sk` `..` with prefix cleanup on",
    lambda: stream_event(remove(1, "doc#1", "..", [])),
    ["batchItemFailures=[]", "'blobs/doc#1/../': record-prefix-ambiguous (prefix)", "0 list"],
    "the prefix is refused, never listed or cleared: " + REFUSED,
    env={"BLOB_PREFIX_CLEANUP": "on"},
    objects=[OWN],
    id="key-sk-dotdot-prefix-cleanup",
)
consumer_case(
    KEYS,
    "a MODIFY dropping a key that belongs to another record",
    lambda: stream_event(modify(1, "doc#1", "v#1", [OWN, THEIRS], [OWN])),
    ["batchItemFailures=[]", f"blob_key_refused '{THEIRS}': outside-record-prefix", "BlobsDeleted=0"],
    REFUSED + "; the other record's object is untouched",
    objects=[OWN, THEIRS],
    id="key-modify-foreign",
)


# ---- oversized batches and a missing bucket
def _oversized_batch() -> dict[str, Any]:
    """10,001 records: every tenth a REMOVE listing one key (1,001 keys), the others INSERTs."""
    return stream_event(
        *(remove(n, f"d{n}", "1", [f"blobs/d{n}/1/a"]) if n % 10 == 1 else insert(n, f"d{n}", "1")
          for n in range(1, 10_002))
    )  # fmt: skip


consumer_case(
    BATCH,
    "a batch of 10,001 records (1,001 REMOVEs listing a key each, 9,000 INSERTs)",
    _oversized_batch,
    [
        "batchItemFailures=[]",
        "record_cleaned ×1001",
        "RecordsReceived=10001",
        "BlobsDeleted=1001",
        "2 DeleteObjects",
        "bucket keeps ['blobs/d10000/1/keep']",
    ],
    "processed in one invocation: keys pooled, 1,000 per request; the mapping never sends more than "
    "10,000 (`batch_size` ≤ 10000)",
    objects=[*(f"blobs/d{n}/1/a" for n in range(1, 10_002, 10)), "blobs/d10000/1/keep"],
    id="batch-10001",
)
consumer_case(
    BATCH,
    "one REMOVE listing 1,001 keys",
    lambda: stream_event(remove(1, "doc#1", "v#1", [f"blobs/doc#1/v#1/{i:04d}" for i in range(1001)])),
    ["batchItemFailures=[]", "BlobsDeleted=1001", "1001 HEAD, 2 DeleteObjects"],
    "processed: one HEAD per key, deletes split into requests of 1,000 keys",
    objects=[f"blobs/doc#1/v#1/{i:04d}" for i in range(1001)],
    id="batch-1001-keys",
)
consumer_case(
    BATCH,
    "`BLOB_BUCKET` names a bucket that does not exist",
    lambda: stream_event(remove(1, "a", "1", ["blobs/a/1/x"]), insert(2, "b", "1"), remove(3, "c", "1", [])),
    [
        "batchItemFailures=[seq1]",
        "observing the object failed: NoSuchBucket",
        "record_failed seq1: 1 blob key(s) could not be deleted",
    ],
    RETRIED + "; records with nothing to delete succeed",
    env={"BLOB_BUCKET": "doctable-blobs-missing"},
    id="bucket-missing",
)
consumer_case(
    BATCH,
    "`BLOB_BUCKET` missing, prefix cleanup on",
    lambda: stream_event(keys_only("REMOVE", 1, "a", "1")),
    ["batchItemFailures=[seq1]", "listing prefix 'blobs/a/1/' failed: NoSuchBucket"],
    RETRIED,
    env={"BLOB_BUCKET": "doctable-blobs-missing", "BLOB_PREFIX_CLEANUP": "on"},
    id="bucket-missing-prefix-cleanup",
)

# ---- environment at cold start
_COLD_CASES: list[tuple[dict[str, str | None], str, str, str]] = [
    ({"BLOB_BUCKET": None}, "BLOB_BUCKET", "BLOB_BUCKET=<unset>: required", "`BLOB_BUCKET` unset"),
    ({"TABLE_NAME": None}, "TABLE_NAME", "TABLE_NAME=<unset>: required", "`TABLE_NAME` unset"),
    ({"BLOB_BUCKET": ""}, "BLOB_BUCKET", "BLOB_BUCKET='': required", "`BLOB_BUCKET` empty"),
    (
        {"BLOB_BUCKET": "arn:aws:s3:::doctable-blobs"},
        "BLOB_BUCKET",
        "not an ARN or URL",
        "`BLOB_BUCKET` an ARN",
    ),
    (
        {"BLOB_ROOT": "/x"},
        "BLOB_ROOT",
        "BLOB_ROOT='/x': must be empty or a key prefix ending in '/'",
        "`BLOB_ROOT=/x`",
    ),
    ({"BLOB_ROOT": "blobs"}, "BLOB_ROOT", "BLOB_ROOT='blobs'", "`BLOB_ROOT=blobs` (no trailing `/`)"),
    ({"BLOB_ROOT": "a/../b/"}, "BLOB_ROOT", "'..' segments", "`BLOB_ROOT=a/../b/`"),
    (
        {"BLOB_PREFIX_CLEANUP": "maybe"},
        "BLOB_PREFIX_CLEANUP",
        "BLOB_PREFIX_CLEANUP='maybe': allowed values are 'on' or 'off'",
        "`BLOB_PREFIX_CLEANUP=maybe`",
    ),
    (
        {"BLOB_KEY_REUSE": "sometimes"},
        "BLOB_KEY_REUSE",
        "BLOB_KEY_REUSE='sometimes': allowed values are 'guarded' or 'never'",
        "`BLOB_KEY_REUSE=sometimes`",
    ),
]
for _env, _variable, _fragment, _label in _COLD_CASES:
    consumer_case(
        COLD,
        _label,
        lambda: stream_event(remove(1, "doc#1", "v#1", [OWN])),
        ["cold start fails: SettingsError: invalid environment variable", _fragment],
        COLD_START,
        env=_env,
        objects=[OWN],
        id=f"cold-{_slug(_label)}",
    )


# ---------------------------------------------------------------------------------- replay's kept objects
REPLAY = "Replay: objects on the failure bucket (`doctable.operate.replay.run_replay`)"
_STREAM_ARN = "arn:aws:dynamodb:eu-west-1:123456789012:table/items-dev/stream/2024-05-01T00:00:00.000"
_METADATA_ONLY = {
    "requestContext": {"condition": "RetryAttemptsExhausted"},
    "DDBStreamBatchInfo": {"shardId": "shardId-1", "startSequenceNumber": "101", "endSequenceNumber": "103",
                           "streamArn": _STREAM_ARN, "batchSize": 3},
}  # fmt: skip


class _TrimmedStream:
    """DynamoDB Streams after the 24 h retention: the kept range is no longer there."""

    def get_shard_iterator(self, **_: Any) -> Any:
        from botocore.exceptions import ClientError

        error = {"Code": "TrimmedDataAccessException", "Message": "the requested data was trimmed"}
        raise ClientError({"Error": error}, "GetShardIterator")


def run_replay_case(body: bytes, dry_run: bool) -> str:
    """One object on a (moto) failure bucket, replayed against a consumer that must never be invoked."""
    import boto3
    from moto import mock_aws

    from doctable.operate.replay import run_replay

    class NoConsumer:
        def invoke(self, **_: Any) -> Any:
            raise AssertionError("the consumer was invoked")

    with environment({**CONSUMER_ENV}), mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket="failures", CreateBucketConfiguration={"LocationConstraint": REGION})
        s3.put_object(Bucket="failures", Key="aws/lambda/m/s/kept", Body=body)
        (outcome,) = run_replay(
            s3=s3, lambda_client=NoConsumer(), ddb=boto3.client("dynamodb", region_name=REGION),
            bucket="failures", function="f", table=TABLE, dry_run=dry_run, streams=_TrimmedStream(),
        )  # fmt: skip
        left = [o["Key"] for o in s3.list_objects_v2(Bucket="failures").get("Contents", [])]
    return normalize(f"{outcome.result}: {outcome.error}; bucket keeps {left}")


for _body, _label, _dry, _id in (
    (json.dumps(_METADATA_ONLY).encode(), "a metadata-only record (no `payload`) the stream no longer holds",
     False, "replay-metadata-trimmed"),
    (json.dumps(_METADATA_ONLY).encode(), "the same, with `--dry-run`", True, "replay-metadata-dry-run"),
    (b"not json", "an object that is not JSON", False, "replay-not-json"),
    (b'{"requestContext": {}}', "an invocation record with neither `payload` nor `DDBStreamBatchInfo`", False,
     "replay-no-payload"),
):  # fmt: skip
    add(
        Case(
            REPLAY,
            _label,
            functools.partial(run_replay_case, _body, _dry),
            ("KEPT (not replayable)", "bucket keeps ['aws/lambda/m/s/kept']"),
            "kept on the failure bucket with the one-line reason; nothing invoked, no traceback (a metadata-only "
            "record whose range the stream still holds is re-read and replayed)",
            _id,
        )
    )


# ------------------------------------------------------------------------- the local AWS's filter patterns
LOCAL_FILTERS = "Local AWS: event-source mapping FilterCriteria (`local.pollers.filtering`, as Create/UpdateEventSourceMapping check them)"
REFUSED_MAPPING = (
    "the API call fails with InvalidParameterValueException; the mapping is not created or not changed"
)


def filter_criteria(patterns: list[str]) -> str:
    from local.pollers.filtering import FilterError, parse_criteria

    try:
        parse_criteria({"Filters": [{"Pattern": p} for p in patterns]})
    except FilterError as exc:
        return f"InvalidParameterValueException: {exc}"
    return "accepted"


for _label, _patterns, _expect in [
    (
        "a pattern that is not JSON (`{eventName: [INSERT]}`)",
        ["{eventName: [INSERT]}"],
        "Invalid filter pattern",
    ),
    (
        'a rule that is not an array (`{"eventName": "INSERT"}`)',
        ['{"eventName": "INSERT"}'],
        "Invalid filter",
    ),
    ("`wildcard` (EventBridge's, not Lambda's)", ['{"eventName": [{"wildcard": "IN*"}]}'], "Invalid filter"),
    ("a numeric range with two lower bounds", ['{"n": [{"numeric": [">", 1, ">", 2]}]}'], "Invalid filter"),
    ("`anything-but` mixing strings and numbers", ['{"s": [{"anything-but": ["a", 1]}]}'], "Invalid filter"),
    ("six filters (the quota is five)", ['{"a": ["1"]}'] * 6, "exceeds the limit of 5"),
]:
    add(
        Case(
            LOCAL_FILTERS,
            _label,
            functools.partial(filter_criteria, _patterns),
            ("InvalidParameterValueException", _expect),
            REFUSED_MAPPING,
            f"filter-{_slug(_label)[:40]}",
        )
    )


# ------------------------------------------------------------------------------------------------ the CLI
CLI = "Operations CLI (`doctable …`, `doctable.cli:main`)"

CLI_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": REGION,
    "COLUMNS": "100",  # argparse wraps its usage to the terminal width
}


# Knob variables a developer's shell may carry (DOCTABLE_GSI=gsi1 ...): the CLI would read them.
def _knob_variables() -> tuple[str, ...]:
    from contract.knobs import KNOB_VARIABLES

    return (*KNOB_VARIABLES, "DOCTABLE_CONFIG")


_KNOB_VARS = _knob_variables()


def run_cli(argv: list[str], env: Mapping[str, str | None] | None = None) -> str:
    """``doctable <argv>``: the exit code, how many lines it wrote to stderr, and the last one."""
    from doctable.cli import main

    out, err = io.StringIO(), io.StringIO()
    with (
        tempfile.TemporaryDirectory() as tmp,
        environment(
            {
                **CLI_ENV,
                "DOCTABLE_STATE_DIR": f"{tmp}/state",
                "DOCTABLE_LEDGER_DIR": f"{tmp}/ledger",
                **(env or {}),
            },
            unset=(*_KNOB_VARS, "AWS_SESSION_TOKEN"),
        ),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            code: Any = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code
        except Exception as exc:  # a traceback would reach the user
            code = f"uncaught {type(exc).__name__}: {exc}"
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    traceback = " (TRACEBACK)" if "Traceback" in err.getvalue() else ""
    last = lines[-1] if lines else "(nothing on stderr)"
    return normalize(f"exit {code}; {len(lines)} line(s) on stderr{traceback}: {last}")


def cli_case(argv: list[str], expect: Iterable[str], lands: str, *, id: str, label: str | None = None,
             env: Mapping[str, str | None] | None = None) -> None:  # fmt: skip
    add(
        Case(
            CLI,
            label or "`doctable " + " ".join(argv) + "`",
            lambda: run_cli(argv, env),
            tuple(expect),
            lands,
            id,
        )
    )


ONE_LINE = ("exit 2; 1 line(s) on stderr: doctable: ",)
AWS_LINE = ("exit 4; 1 line(s) on stderr: doctable: ",)  # AWS or credentials refused or unreachable
NO_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": None,
    "AWS_SECRET_ACCESS_KEY": None,
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/doctable-credentials",
    "AWS_CONFIG_FILE": "/nonexistent/doctable-config",
    "AWS_EC2_METADATA_DISABLED": "true",
}

cli_case(
    ["verify", "-c", "gsi=bogus"],
    [*ONE_LINE, "invalid settings: gsi='bogus' is not allowed"],
    CLI_STOPS,
    id="cli-bad-knob",
)
cli_case(
    ["bootstrap", "--env", "dev", "--account", "123456789012", "--region", "us-east-1", "--dry-run"],
    [*ONE_LINE, "environment dev has no qualifier"],
    CLI_STOPS,
    id="cli-bootstrap-default-qualifier",
    label="`doctable bootstrap` of an environment without a qualifier (the CDK's shared default)",
)
cli_case(
    ["verify", "-c", "batch_size=5000", "-c", "stream=new-and-old"],
    [*ONE_LINE, "batch_size=5000 needs batching_window"],
    CLI_STOPS,
    id="cli-contradiction",
)
cli_case(
    ["verify", "-c", "notaknob"],
    [*ONE_LINE, "-c 'notaknob': expected KNOB=VALUE"],
    CLI_STOPS,
    id="cli-malformed-pair",
)
cli_case(
    ["verify", "-c", "=gsi1"],
    [*ONE_LINE, "-c '=gsi1': expected KNOB=VALUE"],
    CLI_STOPS,
    id="cli-empty-knob-name",
)
cli_case(
    ["verify", "--env", "qa"],
    [*ONE_LINE, "environment 'qa' is not declared in doctable.toml; declared: dev|stg|uat|prod"],
    CLI_STOPS,
    id="cli-bad-env",
)
cli_case(
    ["verify", "--env", "prdo"],
    [*ONE_LINE, "environment 'prdo' is not declared in doctable.toml (did you mean 'prod'?)"],
    CLI_STOPS,
    id="cli-env-did-you-mean",
)
cli_case(
    ["verify", "--env", "dev", "-c", "tier=prod"],
    [*ONE_LINE, "-c tier=prod cannot be given for one run", "set in the settings file only"],
    CLI_STOPS,
    id="cli-tier-per-run",
)
cli_case(
    ["verify", "--env", "dev", "-c", "env=prod"],
    [*ONE_LINE, "--env dev contradicts -c env=prod: give one"],
    CLI_STOPS,
    id="cli-env-contradiction",
)
cli_case(
    ["verify"],
    [*ONE_LINE, "invalid settings: gsi='bogus'"],
    CLI_STOPS,
    label="`DOCTABLE_GSI=bogus doctable verify` (knob from the environment)",
    env={"DOCTABLE_GSI": "bogus"},
    id="cli-knob-from-env",
)
cli_case(
    ["verify"],
    [*ONE_LINE, "invalid settings: DOCTABLE_GSII is not a doctable variable (did you mean DOCTABLE_GSI?)"],
    CLI_STOPS,
    label="`DOCTABLE_GSII=gsi1 doctable verify` (an unknown DOCTABLE_ variable)",
    env={"DOCTABLE_GSII": "gsi1"},
    id="cli-unknown-variable",
)
SETTINGS = "Settings file (`doctable.toml`, read by app.py and every `doctable` command)"


def _with_settings(text: str, argv: list[str]) -> str:
    """``doctable <argv>`` with DOCTABLE_CONFIG naming a settings file that holds ``text``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doctable.toml"
        path.write_text(text)
        return run_cli(argv, {"DOCTABLE_CONFIG": str(path)}).replace(tmp, "<dir>")


def settings_case(text: str, argv: list[str], expect: Iterable[str], *, id: str, label: str) -> None:
    add(Case(SETTINGS, label, lambda: _with_settings(text, argv), (*ONE_LINE, *expect), CLI_STOPS, id))


def _with_handler(text: str, argv: list[str]) -> str:
    """``doctable <argv>`` with a settings file holding ``text`` beside a subscriber handler ``search.py``."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "doctable.toml").write_text(text)
        (Path(tmp) / "search.py").write_text("def handler(event, context):\n    return None\n")
        return run_cli(argv, {"DOCTABLE_CONFIG": str(Path(tmp) / "doctable.toml")}).replace(tmp, "<dir>")


settings_case(
    "[environments.Qa]\n", ["settings"],
    ["[environments.Qa] is not an environment name; allowed: lower-case letters, digits and -, starting with a letter"],
    id="settings-unknown-environment", label="an environment table whose name is not one (`[environments.Qa]`)",
)  # fmt: skip
settings_case(
    '[environments.qa]\ntier = "stg"\n', ["settings", "--env", "dev"],
    ["environment 'dev' is not declared in doctable.toml; declared: qa"],
    id="settings-undeclared-environment", label="an environment the file does not declare (`--env dev` beside `[environments.qa]` alone)",
)  # fmt: skip
settings_case(
    '[environments.qa]\n', ["settings", "--env", "qa"],
    ["env='qa' has no tier; allowed: tier = 'dev'|'stg'|'uat'|'prod' in [environments.qa]"],
    id="settings-environment-without-tier", label="a new environment without its tier (`[environments.qa]` empty)",
)  # fmt: skip
_GRANTING = (
    '[environments.dev]\ntier = "dev"\nstream = "new-and-old"\n\n[environments.dev.subscribers.search]\n'
    'handler = "search.py:handler"\ngrants = [{resource = "%s", actions = [%s]}]\n'
)
settings_case(
    _GRANTING % ("arn:aws:iam::123456789012:role/admin", '"iam:PassRole"'), ["settings", "--env", "dev"],
    ["subscriber 'search': grant actions iam:PassRole (an IAM action: identities are not a subscriber's) may not be "
     "granted to a subscriber; allowed: actions of the Service Authorization Reference that read or write data"],
    id="settings-subscriber-grant-passrole", label="a subscriber granted `iam:PassRole` (an action that escalates)",
)  # fmt: skip
settings_case(
    _GRANTING % ("arn:aws:s3:::stg-blobs", '"s3:PutBucketPolicy"'), ["settings", "--env", "dev"],
    ["grant actions s3:PutBucketPolicy (access level Permissions management) may not be granted to a subscriber"],
    id="settings-subscriber-grant-policy-write", label="a subscriber granted a resource-policy write (`s3:PutBucketPolicy`)",
)  # fmt: skip
settings_case(
    _GRANTING % ("arn:aws:s3:::blobs-?", '"s3:GetObject"'), ["settings", "--env", "dev"],
    ["grant resource 'arn:aws:s3:::blobs-?' is not one ARN; allowed: an ARN without * or ?"],
    id="settings-subscriber-grant-wildcard", label="a subscriber grant whose ARN holds the `?` wildcard",
)  # fmt: skip
_SUBSCRIBER = (
    '[environments.dev]\ntier = "dev"\nstream = "new-and-old"\n\n[environments.dev.subscribers.search]\n%s\n'
)
settings_case(
    _SUBSCRIBER % 'handler = "search.py:handler"\nenvironment = {DB_PASSWORD = "{{resolve:secretsmanager:db:SecretString:pw}}"}',
    ["settings", "--env", "dev"],
    ["environment variable DB_PASSWORD resolves a secret at deploy ({{resolve:secretsmanager:db:SecretString:pw}}): "
     "CloudFormation writes it in plain text into the function's configuration", "allowed: the secret's ARN"],
    id="settings-subscriber-env-resolved-secret",
    label="a subscriber environment variable that resolves a secret at deploy (`{{resolve:secretsmanager:...}}`)",
)  # fmt: skip
for _variable, _value, _kind, _id, _what in (
    ("DB_PASS", "hunter2", "Secret Keyword", "keyword", "a password held by a secret-sounding name (`DB_PASS`)"),
    ("GH", "ghp_" + "1234567890abcdefghijABCDEFGHIJ123456", "GitHub Token", "github", "a GitHub token (`ghp_…`)"),
    ("PAYMENTS", "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "Stripe Access Key", "stripe", "a Stripe key (`sk_live_…`)"),
    ("UPSTREAM", "https://u:pw@host", "Basic Auth Credentials", "url-password", "a URL with a password (`https://u:pw@host`)"),
):  # fmt: skip
    _text = _SUBSCRIBER % f'handler = "search.py:handler"\nenvironment = {{{_variable} = "{_value}"}}'
    add(Case(
        SETTINGS, f"a subscriber environment value that is a secret written in the file: {_what}",
        functools.partial(_with_handler, _text, ["settings", "--env", "dev"]),
        (*ONE_LINE, f"doctable: invalid settings: subscriber 'search': environment variable {_variable} looks like a "
         f"secret written in the file (detect-secrets: {_kind}); allowed: the secret's ARN"),
        CLI_STOPS, f"settings-subscriber-env-secret-{_id}",
    ))  # fmt: skip
add(Case(
    SETTINGS, "a subscriber's extra index URL with credentials in it (`extra_index_urls = [\"https://u:pw@…\"]`)",
    functools.partial(
        _with_handler,
        _SUBSCRIBER % 'handler = "search.py:handler"\nextra_index_urls = ["https://u:pw@pypi.example.com/simple"]',
        ["settings", "--env", "dev"],
    ),
    (*ONE_LINE, "subscriber 'search': extra_index_urls = ['https://u:pw@pypi.example.com/simple'] is not allowed; "
     "allowed: an array of https:// index URLs without credentials"),
    CLI_STOPS, "settings-subscriber-extra-index-credentials",
))  # fmt: skip
settings_case(
    _SUBSCRIBER % 'handler = "../outside.py:handler"', ["settings", "--env", "dev"],
    ["subscriber 'search': handler file ../outside.py resolves outside the settings file's folder (symlinks "
     "resolved); allowed: a file inside that folder"],
    id="settings-subscriber-handler-outside", label="a subscriber handler outside the settings file's folder (`../outside.py`)",
)  # fmt: skip
settings_case(
    _SUBSCRIBER % 'handler = "search.py:handler"\nrequirements = "../../requirements.txt"', ["settings", "--env", "dev"],
    ["requirements file ../../requirements.txt resolves outside the settings file's folder"],
    id="settings-subscriber-requirements-outside",
    label="a subscriber requirements file outside the settings file's folder (`../../requirements.txt`)",
)  # fmt: skip
# A subscriber on a global table (contract/subscribers.py `regions`, contract/readers.py): where it runs, and each
# region's readers.
_GLOBAL_SUBSCRIBERS = (
    '[environments.dev]\ntier = "dev"\nstream = "new-and-old"\nreplicas = ["us-west-2"]\n\n%s'
)
_GLOBAL_ONE = '[environments.dev.subscribers.search]\nhandler = "search.py:handler"\n%s\n'
for _declared, _expected, _id, _label in (
    (
        _GLOBAL_ONE % 'regions = "everywhere"',
        "subscriber 'search': regions = 'everywhere' is not allowed; allowed: \"home\" (the default), \"all\" or a list "
        "of the table's regions",
        "regions-malformed",
        'a subscriber\'s `regions` that is neither home, all nor a list of regions (`"everywhere"`)',
    ),
    (
        _GLOBAL_ONE % 'regions = ["us-east-1", "eu-west-3"]',
        "subscriber 'search': regions = ['us-east-1', 'eu-west-3'] names us-east-1, eu-west-3, not all the table's; "
        'allowed: "home", "all" or a list of the table\'s regions (the home region and us-west-2)',
        "regions-not-the-tables",
        "a subscriber's `regions` naming two regions besides the table's replicas",
    ),
    (
        _GLOBAL_ONE % 'source = "kinesis"',
        "subscriber 'search': source = \"kinesis\" on a global table: a Kinesis destination is per replica and per "
        'region and is not built with replicas; allowed: source = "dynamodb"',
        "kinesis-on-global",
        'a subscriber reading Kinesis on a global table (`source = "kinesis"` with `replicas`)',
    ),
    (
        _GLOBAL_ONE % 'regions = ["us-west-2"]'
        + '[environments.dev.subscribers.audit]\nhandler = "search.py:handler"\nregions = "all"\n',
        "3 readers of the replica stream in us-west-2 (the cleanup consumer, search, audit); allowed: at most 2 per "
        "shard in each region (more are throttled; AWS recommends 1 on a global table)",
        "readers-in-a-region",
        "two subscribers beside the cleanup consumer on one replica region's stream",
    ),
):
    add(Case(
        SETTINGS, _label,
        functools.partial(_with_handler, _GLOBAL_SUBSCRIBERS % _declared, ["settings", "--env", "dev"]),
        (*ONE_LINE, _expected), CLI_STOPS, f"settings-subscriber-{_id}",
    ))  # fmt: skip
_FOREIGN = (
    '[environments.stg]\ntier = "stg"\n\n[environments.dev]\ntier = "dev"\nstream = "new-and-old"\n'
    'account = "123456789012"\nregion = "eu-west-1"\n\n[environments.dev.subscribers.search]\n'
    'handler = "search.py:handler"\ngrants = [{resource = "%s", actions = ["dynamodb:PutItem"]}]\n'
)
for _resource, _named, _id in (
    (
        "arn:aws:dynamodb:eu-west-1:123456789012:table/items-stg",
        "environment stg's table items-stg",
        "stg-table",
    ),
    (
        "arn:aws:dynamodb:eu-west-1:210987654321:table/search",
        "account 210987654321, not the environment's",
        "account",
    ),
    (
        "arn:aws:dynamodb:us-east-1:123456789012:table/search",
        "region us-east-1, where the table is not",
        "region",
    ),
):
    add(Case(
        SETTINGS, f"a subscriber grant on {_named.split(',')[0]} (`{_resource}`)",
        lambda r=_resource: _with_handler(_FOREIGN % r, ["settings", "--env", "dev"]),
        (*ONE_LINE, f"subscriber 'search': grant resource '{_resource}' names {_named}",
         "allowed: resources of this environment's account and regions, never another declared environment's"),
        CLI_STOPS, f"settings-subscriber-grant-foreign-{_id}",
    ))  # fmt: skip
settings_case(
    '[defaults]\ntier = "prod"\n', ["settings"],
    ["doctable.toml [defaults]: tier = 'prod' belongs to each environment; allowed: tier in [environments.<env>]"],
    id="settings-tier-in-defaults", label="a tier in `[defaults]`",
)  # fmt: skip
settings_case(
    '[environments.prod]\ntier = "prod"\n\n[environments.prod-eu]\ntier = "prod"\n', ["settings", "--env", "prod"],
    ["doctable.toml [environments.prod-eu]: its stack doctable-items-prod-eu begins with doctable-items-prod- "
     "(environment prod's stack"],
    id="settings-environment-prefix", label="an environment whose stack name extends another's (`prod-eu` beside `prod`)",
)  # fmt: skip
settings_case(
    '[defaults]\ngsii = "gsi1"\n', ["settings"], ["gsii='gsi1' is not a knob (did you mean gsi?)"],
    id="settings-unknown-knob", label="a misspelt knob in the file (`gsii = \"gsi1\"`)",
)  # fmt: skip
settings_case(
    '[defaults]\nbatch_size = "50"\n', ["settings"],
    ["batch_size = '50' is a TOML string; allowed: a TOML integer (1..10000)"],
    id="settings-wrong-type", label="a value of the wrong type (`batch_size = \"50\"`)",
)  # fmt: skip
settings_case(
    '[environments.stg]\nttl = "yes"\n', ["settings", "--env", "stg"],
    ["doctable.toml [environments.stg]: ttl='yes' is not allowed; allowed values: off|on"],
    id="settings-bad-value", label="a bad value in an environment's table (`ttl = \"yes\"`)",
)  # fmt: skip
settings_case(
    '[defaults]\n\ngsi = "gsi1\n', ["settings"], ["not valid TOML: ", "(at line 3, column"],
    id="settings-toml-syntax", label="a TOML syntax error (an unclosed string on line 3)",
)  # fmt: skip
settings_case(
    '[environments.prod]\naccount = "12345"\n', ["settings"], ["account = '12345' is not an AWS account"],
    id="settings-bad-account", label="a malformed account binding (`account = \"12345\"`)",
)  # fmt: skip
settings_case(
    '[environments.prod]\nqualifier = "Prod_Main"\n', ["settings"],
    ["qualifier = 'Prod_Main' is not a CDK bootstrap qualifier"],
    id="settings-bad-qualifier", label="a malformed bootstrap qualifier (`qualifier = \"Prod_Main\"`)",
)  # fmt: skip
settings_case(
    '[defaults]\nenv = "prod"\n', ["settings"], ["env = 'prod' cannot be set in the file"],
    id="settings-env-in-file", label="the environment written in the file (`env = \"prod\"`)",
)  # fmt: skip
settings_case(
    '[environments.stg.indexes.byOwner]\npartition = "owner:Q"\n', ["settings", "--env", "stg"],
    ["index 'byOwner': partition = 'owner:Q' has type 'Q'; allowed: S|N|B"],
    id="settings-index-bad-type", label="an index key of an unknown type (`partition = \"owner:Q\"`)",
)  # fmt: skip
settings_case(
    '[environments.stg]\ngsi = "gsi1"\n[environments.stg.indexes.gsi1]\npartition = "a:S"\n',
    ["settings", "--env", "stg"], ["index 'gsi1' is declared in indexes and by the gsi knob"],
    id="settings-index-twice", label="an index declared both by `gsi` and in `indexes`",
)  # fmt: skip
settings_case(
    '[environments.stg.indexes.one]\npartition = "owner:S"\n[environments.stg.indexes.two]\npartition = "owner:N"\n',
    ["settings", "--env", "stg"], ["attribute 'owner' is N in index 'two' but S in index 'one'"],
    id="settings-index-type-conflict", label="one attribute given two types by two indexes",
)  # fmt: skip
settings_case(
    '[environments.stg.indexes.byMatch]\npartition = []\n', ["settings", "--env", "stg"],
    ["index 'byMatch': partition = [] names no attribute; allowed: \"attribute:type\" or an array of 1 to 4 of them"],
    id="settings-index-key-empty", label="an empty multi-attribute key (`partition = []`)",
)  # fmt: skip
settings_case(
    '[environments.stg.indexes.byMatch]\npartition = ["a:S", "b:S", "c:S", "d:S", "e:S"]\n', ["settings", "--env", "stg"],
    ["index 'byMatch': partition lists 5 attributes; allowed: at most 4 (DynamoDB's multi-attribute keys)"],
    id="settings-index-key-five", label="a key of five attributes (`partition = [\"a:S\", …, \"e:S\"]`)",
)  # fmt: skip
settings_case(
    '[environments.stg.indexes.byMatch]\npartition = ["tenant:S", "tenant:S"]\n', ["settings", "--env", "stg"],
    ["index 'byMatch': partition names 'tenant' twice; allowed: each attribute once in an index's keys"],
    id="settings-index-key-twice", label="an attribute twice in one key (`partition = [\"tenant:S\", \"tenant:S\"]`)",
)  # fmt: skip
settings_case(
    '[environments.stg.indexes.byMatch]\npartition = ["tenant:S", "region:S"]\nsort = ["year:N", "region:S"]\n', ["settings", "--env", "stg"],
    ["index 'byMatch': 'region' is both the partition and the sort key; allowed: each attribute once"],
    id="settings-index-key-both", label="an attribute in both the partition and the sort key of one index",
)  # fmt: skip
settings_case(
    '[environments.stg.indexes.byMatch]\npartition = ["tenant:S", 7]\n', ["settings", "--env", "stg"],
    ["index 'byMatch': partition[1] = 7 is not a string; allowed: \"attribute:type\", type S|N|B"],
    id="settings-index-key-not-string", label="a non-string in a multi-attribute key (`partition = [\"tenant:S\", 7]`)",
)  # fmt: skip
settings_case(
    '[environments.stg.indexes.byMatch]\npartition = ["tenant:S", "region:X"]\n', ["settings", "--env", "stg"],
    ["index 'byMatch': partition[1] = 'region:X' has type 'X'; allowed: S|N|B"],
    id="settings-index-key-list-type", label="an unknown type in a multi-attribute key (`\"region:X\"`)",
)  # fmt: skip
settings_case(
    '[environments.stg.indexes.byMatch]\nsort = ["year:N", "round:S"]\n', ["settings", "--env", "stg"],
    ["index 'byMatch': a global index needs a partition key"],
    id="settings-index-sort-without-partition", label="a sort array without a partition (`sort = [\"year:N\", \"round:S\"]`)",
)  # fmt: skip
settings_case(
    '[environments.stg.indexes.byMatch]\nkind = "local"\nsort = ["year:N", "round:S"]\n', ["settings", "--env", "stg"],
    ["index 'byMatch': a local index's sort key is one attribute"],
    id="settings-index-local-multi", label="a multi-attribute sort key on a local index",
)  # fmt: skip
settings_case(
    '[environments.stg.indexes.byMatch]\npartition = ["tenant:S", "region:S"]\n[environments.stg.indexes.byYear]\npartition = ["tenant:S", "region:N"]\n', ["settings", "--env", "stg"],
    ["attribute 'region' is N in index 'byYear' but S in index 'byMatch'"],
    id="settings-index-key-list-type-conflict", label="one attribute given two types by two multi-attribute keys",
)  # fmt: skip
add(
    Case(
        SETTINGS, "a settings file that does not exist (`--config missing.toml`)",
        lambda: run_cli(["settings", "--config", "/nonexistent/missing.toml"]),
        (*ONE_LINE, "settings file /nonexistent/missing.toml not found"), CLI_STOPS, "settings-missing-file",
    )
)  # fmt: skip

PREVIEWS = "Previews (`doctable preview …`: contract/settings/preview.py, checked before any AWS call)"
_STG = '[environments.stg]\nstream = "new-and-old"\n'
_KEY_ARN = "arn:aws:kms:eu-west-1:123456789012:key/0123abcd-0123-0123-0123-0123456789ab"


def preview_case(text: str, argv: list[str], expect: Iterable[str], *, id: str, label: str) -> None:
    add(Case(PREVIEWS, label, lambda: _with_settings(text, argv), (*ONE_LINE, *expect), CLI_STOPS, id))


for _knob, _value, _extra in [
    ("blob_bucket", '"shared-blobs"', ""),
    ("kinesis", '"arn:aws:kinesis:eu-west-1:123456789012:stream/shared"', ""),
    ("consumer", '"arn:aws:lambda:eu-west-1:123456789012:function:shared"', ""),
    ("kms_key", f'"{_KEY_ARN}"', 'encryption = "customer-managed"\n'),
    ("replicas", '["us-west-2"]', 'region = "eu-west-1"\n'),
]:
    preview_case(
        f"{_STG}{_extra}{_knob} = {_value}\n", ["preview", "deploy", "12", "--from", "stg"],
        [f"preview pr-12 from stg: {_knob}=", "is a borrowed resource; allowed: previews own every resource"],
        id=f"preview-borrowed-{_knob}", label=f"a preview of an environment that borrows a resource (`{_knob} = {_value}`)",
    )  # fmt: skip
preview_case(
    _STG, ["preview", "deploy", "12", "--from", "qa"],
    ["preview pr-12 from qa: environment 'qa' is not declared in doctable.toml; declared: stg"],
    id="preview-undeclared-template", label="a preview from an environment the file does not declare (`--from qa`)",
)  # fmt: skip
preview_case(
    _STG, ["preview", "deploy", "Pr_1", "--from", "stg"],
    ["preview name 'Pr_1' is not a name; allowed: lower-case letters, digits and -"],
    id="preview-bad-name", label="a preview name that is not one (`Pr_1`)",
)  # fmt: skip
preview_case(
    _STG, ["preview", "deploy", "x" * 40, "--from", "stg"],
    [f"env='pr-{'x' * 40}' with table_base='items' does not fit the ", "allowed: at most"],
    id="preview-name-too-long", label="a preview name too long for the generated names (40 characters)",
)  # fmt: skip
preview_case(
    _STG + '\n[environments.pr]\ntier = "dev"\n', ["preview", "deploy", "1", "--from", "stg"],
    ["preview pr-1: its stack doctable-items-pr-1 begins with environment pr's stack doctable-items-pr"],
    id="preview-extends-declared", label="a preview whose stack extends a declared environment's (`pr-1` beside `[environments.pr]`)",
)  # fmt: skip
preview_case(
    _STG, ["preview", "deploy", "12", "--from", "stg", "--expires", "3x"],
    ["--expires '3x' is not a preview lifetime; allowed: a whole number of minutes, hours or days"],
    id="preview-bad-lifetime", label="a lifetime that is not one (`--expires 3x`)",
)  # fmt: skip
preview_case(
    _STG + "\n[previews]\nprefix = 7\n", ["preview", "list"],
    ["doctable.toml [previews]: prefix = 7 is not a preview prefix; allowed: a string of lower-case letters"],
    id="preview-bad-prefix", label="a `[previews] prefix` that is not one (`prefix = 7`)",
)  # fmt: skip
preview_case(
    _STG + "\n[environments.pr-main]\ntier = \"dev\"\n", ["preview", "list"],
    ["[environments.pr-main]: its name begins with the preview prefix 'pr-', so it would be taken for a preview"],
    id="preview-declared-with-prefix", label="a declared environment whose name carries the preview prefix (`pr-main`)",
)  # fmt: skip
preview_case(
    _STG + "\n[previews]\ndeletion_protection = \"on\"\n", ["preview", "deploy", "12", "--from", "stg"],
    ["preview pr-12 from stg: deletion_protection='on' keeps the preview from being torn down"],
    id="preview-protected", label="deletion protection for previews (`[previews] deletion_protection = \"on\"`)",
)  # fmt: skip
preview_case(
    _STG + "\n[previews]\ntier = \"prod\"\n", ["preview", "list"],
    ["doctable.toml [previews]: tier = 'prod' belongs to each environment"],
    id="preview-tier", label="a tier for previews (`[previews] tier = \"prod\"`: a preview's is always dev)",
)  # fmt: skip

_SEARCH_STG = "arn:aws:dynamodb:eu-west-1:123456789012:table/search-stg"
_STG_SEARCH = _STG + '\n[environments.stg.subscribers.search]\nhandler = "search.py:handler"\n'
for _what, _lines, _expect, _id in [
    (
        f"a grant on stg's search table (`{_SEARCH_STG}`)",
        f'grants = [{{resource = "{_SEARCH_STG}", actions = ["dynamodb:PutItem"]}}]\n',
        f"subscriber 'search': grant resource '{_SEARCH_STG}' names search-stg, outside the preview (refused, not rewritten)",
        "grant",
    ),
    (
        'an environment value naming stg (`SEARCH_TABLE = "search-stg"`)',
        '[environments.stg.subscribers.search.environment]\nSEARCH_TABLE = "search-stg"\n',
        "subscriber 'search': environment SEARCH_TABLE 'search-stg' names environment stg, outside the preview",
        "environment",
    ),
    (
        "a filter on stg's table stream (`eventSourceARN` prefix `…table/items-stg`)",
        'filters = [\'{"eventSourceARN": [{"prefix": "arn:aws:dynamodb:eu-west-1:123456789012:table/items-stg"}]}\']\n',
        "subscriber 'search': filter value 'arn:aws:dynamodb:eu-west-1:123456789012:table/items-stg' names items-stg",
        "filter",
    ),
]:
    add(Case(
        PREVIEWS, f"a preview of stg whose inherited subscriber holds {_what}",
        functools.partial(_with_handler, _STG_SEARCH + _lines, ["preview", "deploy", "12", "--from", "stg"]),
        (*ONE_LINE, f"preview pr-12 from stg: {_expect}", "allowed: the preview's own names (items-pr-12, "
         "doctable-items-pr-12", "[previews.subscribers.<name>]"),
        CLI_STOPS, f"preview-subscriber-{_id}-outside",
    ))  # fmt: skip
preview_case(
    '[project]\nname = "orders api"\n\n' + _STG, ["preview", "list"],
    ["doctable.toml [project]: name = 'orders api' is not a project name; allowed: letters, digits, ., _ and -"],
    id="preview-bad-project-name", label="a project name that is not one (`[project] name = \"orders api\"`)",
)  # fmt: skip


def _another_projects_preview(argv: list[str]) -> str:
    """``doctable <argv>`` (project ``orders``) against preview pr-2 (moto) tagged ``Project=billing``."""
    import boto3
    from moto import mock_aws

    from contract.settings.preview import TAG_EXPIRES_AT, TAG_PREVIEW_OF, TAG_PROJECT
    from tests.support import ops

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doctable.toml"
        path.write_text('[project]\nname = "orders"\n\n' + _STG)
        config = ops.config_of(env="pr-2", tier="dev")
        extra = {TAG_PROJECT: "billing", TAG_PREVIEW_OF: "stg", TAG_EXPIRES_AT: "2020-01-01T00:00:00Z"}
        with environment(CLI_ENV), mock_aws():
            cfn = boto3.client("cloudformation", region_name=REGION)
            cfn.create_stack(StackName=config.stack_name, TemplateBody=json.dumps(ops.template(config)),
                             Tags=[{"Key": k, "Value": v} for k, v in {**config.tags(), **extra}.items()])  # fmt: skip
            observed = run_cli(argv, {"DOCTABLE_CONFIG": str(path)})
            left = cfn.describe_stacks(StackName=config.stack_name)["Stacks"][0]["StackStatus"]
            return f"{observed}; {config.stack_name}: {left}"


add(
    Case(
        PREVIEWS,
        "`doctable preview destroy 2 --yes` in project `orders` where pr-2 is tagged `Project=billing`",
        functools.partial(_another_projects_preview, ["preview", "destroy", "2", "--yes"]),
        (
            "exit 3; 1 line(s) on stderr: doctable: ",
            "stack doctable-items-pr-2 is not a preview of this project (tagged Project=billing: another project's",
            "doctable-items-pr-2: CREATE_COMPLETE",
        ),
        "refused after the survey (exit 3; `preview.other_project` in `preview list --json`): the stack untouched",
        "preview-other-project",
    )
)

_WEST = "us-west-2"


def _replica_region(argv: list[str], *, deployed_replicas: bool) -> str:
    """``doctable <argv>`` (moto) for env stg, declared global (replica us-west-2), its home stack in eu-west-1
    deployed without the replica (``deployed_replicas`` False) or with it and its replica stack in us-west-2."""
    import boto3
    from moto import mock_aws

    from contract import names
    from tests.support import ops

    knobs = {"env": "stg", "stream": "new-and-old"}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doctable.toml"
        path.write_text(
            f'[environments.stg]\nstream = "new-and-old"\nregion = "{REGION}"\nreplicas = ["{_WEST}"]\n'
        )
        deployed = ops.config_of(**knobs, **({"replicas": _WEST} if deployed_replicas else {}))
        template = ops.template(ops.config_of(**knobs), record_knobs=False)
        template["Outputs"][names.OUT_KNOBS] = {"Value": deployed.deployed_record()}
        with environment(CLI_ENV), mock_aws():
            home = boto3.client("cloudformation", region_name=REGION)
            home.create_stack(StackName=deployed.stack_name, TemplateBody=json.dumps(template))
            if deployed_replicas:
                outputs = {names.OUT_CONSUMER_FUNCTION_NAME: "doctable-items-stg-us-west-2-Consumer-1",
                           names.OUT_CONSUMER_LOG_GROUP: "doctable-items-stg-us-west-2-Log-1"}  # fmt: skip
                body = {"Resources": {"Nothing": {"Type": "AWS::SNS::Topic"}},
                        "Outputs": {k: {"Value": v} for k, v in outputs.items()}}  # fmt: skip
                west = boto3.client("cloudformation", region_name=_WEST)
                west.create_stack(StackName=deployed.replica_stack_name(_WEST), TemplateBody=json.dumps(body))
            return run_cli(argv, {"DOCTABLE_CONFIG": str(path)})


REGIONS = "A global table's replica region named by `--region` (doctable/core/command.py)"
add(
    Case(
        REGIONS,
        "`doctable logs --env stg --region us-west-2` where the file declares the replica but the deployed table "
        "has none yet",
        functools.partial(_replica_region, ["logs", "--env", "stg", "--region", _WEST], deployed_replicas=False),
        ("exit 2;", "--region us-west-2: the deployed table items-stg has no replica there; its replica regions: "
         "none (deploy the settings first: doctable deploy --env stg)"),
        "refused after reading the home stack's knobs (exit 2, `region.not_a_replica` in `--json`); the pending "
        "`replicas` knob said on the line before",
        "region-not-a-replica",
    )
)  # fmt: skip
add(
    Case(
        REGIONS,
        "`doctable replay --env stg --region us-west-2` (no `--subscriber`): the replica region's consumer",
        functools.partial(_replica_region, ["replay", "--env", "stg", "--region", _WEST], deployed_replicas=True),
        (*ONE_LINE, "the consumer in us-west-2 keeps no failed batches: a replica region's consumer deletes nothing",
         "or a subscriber's in us-west-2 with --subscriber NAME"),
        "refused after reading that region's stack, before any bucket is listed (exit 2, "
        "`replay.replica_consumer` in `--json`)",
        "region-replay-replica-consumer",
    )
)  # fmt: skip

LOCKS = "The environment's lock (`doctable deploy --wait`, `doctable unlock`: doctable/lifecycle/lock.py)"


def _unlock_another_id(lock_id: str) -> str:
    """``doctable unlock --env stg ID`` (moto) while stg's lock is held by another id."""
    import boto3
    from moto import mock_aws

    from contract.iam.lock import lock_bucket, lock_key

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doctable.toml"
        path.write_text(_STG)
        with environment(CLI_ENV), mock_aws():
            s3 = boto3.client("s3", region_name=REGION)
            bucket, key = lock_bucket("123456789012", REGION), lock_key("doctable-items-stg")
            _bootstrapped(s3)
            holder = {"id": "held-1", "who": "arn:aws:iam::123456789012:user/ci", "host": "runner", "pid": 7,
                      "checkout": "/work/ci", "command": "doctable deploy --env stg", "env": "stg",
                      "stack": "doctable-items-stg", "since": "2026-01-01T00:00:00Z",
                      "until": "2026-01-01T00:03:00Z"}  # fmt: skip
            s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(holder).encode())
            observed = run_cli(["unlock", "--env", "stg", lock_id], {"DOCTABLE_CONFIG": str(path)})
            kept = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())["id"]
            return f"{observed}; the lock kept: {kept}"


add(
    Case(
        LOCKS,
        "`doctable unlock --env stg not-the-id` while lock `held-1` holds stg",
        functools.partial(_unlock_another_id, "not-the-id"),
        (*ONE_LINE, "lock id not-the-id is not the holder's: environment stg is held by doctable deploy --env stg",
         "lock id held-1; nothing changed", "the lock kept: held-1"),
        "refused after reading the lock (exit 2, `env.lock_id` in `--json` with the holder's fields); the lock "
        "untouched",
        "lock-unlock-another-id",
    )
)  # fmt: skip
cli_case(
    ["deploy", "--env", "stg", "--wait", "x"],
    [*ONE_LINE, "--wait 'x': not a duration; allowed: seconds (90) or a number with s, m or h (90s, 5m, 1h)"],
    CLI_STOPS,
    id="lock-wait-not-a-duration",
    label="`doctable deploy --env stg --wait x`",
)
cli_case(
    ["teardown", "--env", "stg", "--wait", "2d"],
    [*ONE_LINE, "--wait '2d': not a duration"],
    CLI_STOPS,
    id="lock-wait-unit",
    label="`doctable teardown --env stg --wait 2d` (a unit other than s, m, h)",
)

cli_case(
    ["verify", "--timeout", "-5"],
    ["exit 2;", "argument --timeout: must be >= 0"],
    "argparse refuses it (usage + one error line, exit 2); nothing run",
    id="cli-negative-timeout",
)
cli_case(
    ["verify", "--read-only", "--ledger"],
    [*ONE_LINE, "--read-only with --ledger: the ledger records full runs only", "allowed: --read-only alone"],
    CLI_STOPS,
    id="cli-read-only-ledger",
)
cli_case(
    ["frobnicate"],
    ["exit 2;", "invalid choice: 'frobnicate'"],
    "argparse refuses it (usage + one error line, exit 2); nothing run",
    id="cli-unknown-command",
)
cli_case(
    ["verify"],
    [*AWS_LINE, "no usable AWS credentials while checking who you are"],
    "stops at the first AWS call (sts get-caller-identity), exit 4; nothing changed",
    label="`doctable verify` with no credentials anywhere",
    env=NO_CREDENTIALS,
    id="cli-no-credentials",
)
cli_case(
    ["verify"],
    [*AWS_LINE, "cannot reach AWS", "http://localhost:9", "`doctable local up`"],
    "stops at the first AWS call, exit 4; nothing changed",
    label="`doctable verify` against a closed port (`AWS_ENDPOINT_URL=http://localhost:9`)",
    env={"AWS_ENDPOINT_URL": "http://localhost:9", "AWS_MAX_ATTEMPTS": "1"},
    id="cli-unreachable-endpoint",
)
cli_case(
    ["preflight"],
    [*AWS_LINE, "cannot reach AWS", "`doctable local up`"],
    "stops at the first AWS call, exit 4; nothing changed",
    label="`doctable preflight` against a closed port",
    env={"AWS_ENDPOINT_URL": "http://localhost:9", "AWS_MAX_ATTEMPTS": "1"},
    id="cli-unreachable-preflight",
)
cli_case(
    ["verify", "--region", "eu west 1"],
    [*ONE_LINE, "eu west 1"],
    "stops before any request, exit 2; nothing changed",
    id="cli-malformed-region",
)
cli_case(
    ["verify", "-c", "gsii=gsi1"],
    [*ONE_LINE, "gsii='gsi1' is not a knob (did you mean gsi?)"],
    "stops before any request, exit 2; nothing changed",
    label="`doctable verify -c gsii=gsi1` (misspelt knob name)",
    env={"AWS_ENDPOINT_URL": "http://localhost:9", "AWS_MAX_ATTEMPTS": "1"},
    id="cli-unknown-knob",
)


def _against_subscriber_search(argv: list[str]) -> str:
    """``doctable <argv>`` against a stack (moto) deployed from settings declaring the subscriber ``search``."""
    import boto3
    from moto import mock_aws

    from contract.settings.resolve import resolve_settings
    from tests.support import ops

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doctable.toml"
        path.write_text('[defaults]\nstream = "new-and-old"\n\n[environments.dev]\ntier = "dev"\n\n'
                        '[environments.dev.subscribers.search]\nhandler = "search.py:handler"\n')  # fmt: skip
        (Path(tmp) / "search.py").write_text("def handler(event, context):\n    return None\n")
        config = resolve_settings(context={"env": "dev"}, environ={}, config_path=path).config
        with environment(CLI_ENV), mock_aws():
            ops.deploy(lambda service: boto3.client(service, region_name=REGION), config)
            return run_cli(argv, {"DOCTABLE_CONFIG": str(path)}).replace(tmp, "<dir>")


for _command in ("watch", "replay"):
    add(
        Case(
            CLI,
            f"`doctable {_command} --subscriber serch` (a subscriber the stack does not have; it has `search`)",
            functools.partial(
                _against_subscriber_search, [_command, "--env", "dev", "--subscriber", "serch"]
            ),
            (*ONE_LINE, "has no subscriber 'serch' (did you mean 'search'?); declared: search"),
            "stops after reading the stack's outputs (exit 2): nothing sent, nothing replayed",
            f"cli-{_command}-unknown-subscriber",
        )
    )
cli_case(
    ["watch", "--subscriber", "search", "--source", "functions/stream_consumer"],
    ["exit 2;", "argument --source: not allowed with argument --subscriber"],
    "argparse refuses it (usage + one error line, exit 2); nothing run",
    id="cli-watch-subscriber-and-source",
)


def _bootstrapped(s3: Any) -> None:
    """The CDK bootstrap's assets bucket (moto's account, the cases' region), where a deploy takes its lock."""
    from contract.iam.lock import lock_bucket

    bucket = lock_bucket("123456789012", REGION)
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})


def _claiming_stg(argv: list[str]) -> str:
    """``doctable <argv>`` against dev's stack (moto) whose Knobs output claims env=stg, stg deployed beside it."""
    import boto3
    from moto import mock_aws

    from contract import names
    from tests.support import ops

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doctable.toml"
        path.write_text("[defaults]\n\n[environments.dev]\n\n[environments.stg]\n")
        dev, stg = ops.config_of(env="dev"), ops.config_of(env="stg")
        with environment(CLI_ENV), mock_aws():
            clients = functools.partial(boto3.client, region_name=REGION)
            _bootstrapped(clients("s3"))
            ops.deploy(clients, stg)
            ops.deploy(
                clients, dev, record_knobs=False, extra_outputs={names.OUT_KNOBS: stg.deployed_record()}
            )
            observed = run_cli(argv, {"DOCTABLE_CONFIG": str(path)})
            left = clients("cloudformation").describe_stacks(StackName=stg.stack_name)["Stacks"][0]
            return f"{observed}; stg: {left['StackStatus']}"


add(
    Case(
        CLI,
        "`doctable teardown --env dev --yes` on a stack whose `Knobs` output claims `env=stg`",
        functools.partial(_claiming_stg, ["teardown", "--env", "dev", "--yes"]),
        (
            "exit 3; 1 line(s) on stderr: doctable: ",
            "records env=stg, table_base=items, which names stack doctable-items-stg: refusing",
            "stg: CREATE_COMPLETE",
        ),
        "refused before the record is used (exit 3, `stack.identity_mismatch` in --json): neither stack touched",
        "cli-record-claims-another-stack",
    )
)


def _bucket_name_taken(argv: list[str]) -> str:
    """``doctable <argv>`` (moto) where the blob bucket's exact name is a bucket that exists outside the stack."""
    import boto3
    from moto import mock_aws

    from contract import names

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doctable.toml"
        path.write_text('[defaults]\nstream = "new-and-old"\n\n[environments.dev]\n')
        taken = names.bucket_name("items-dev", "123456789012", REGION, names.BLOB_BUCKET_SUFFIX)
        with environment(CLI_ENV), mock_aws():
            s3 = boto3.client("s3", region_name=REGION)
            s3.create_bucket(Bucket=taken, CreateBucketConfiguration={"LocationConstraint": REGION})
            _bootstrapped(s3)
            observed = run_cli(argv, {"DOCTABLE_CONFIG": str(path)})
            stacks = boto3.client("cloudformation", region_name=REGION).list_stacks()["StackSummaries"]
            return f"{observed}; stacks: {len(stacks)}"


add(
    Case(
        CLI,
        "`doctable deploy --env dev` when the blob bucket's exact name (`items-dev-<account>-<region>-blobs`) is a "
        "bucket outside the stack",
        functools.partial(_bucket_name_taken, ["deploy", "--env", "dev"]),
        (
            "exit 1; 1 line(s) on stderr: doctable deploy: STOP bucket.taken: bucket "
            "items-dev-123456789012-eu-west-1-blobs (blob bucket) exists outside stack doctable-items-dev",
            'allowed: another name (another table_base or env) or one doctable derives (bucket_names = "generated"',
            "stacks: 0",
        ),
        "stopped by preflight before cdk runs (exit 1, `bucket.taken` in --json): no stack, the bucket untouched",
        "cli-bucket-name-taken",
    )
)  # fmt: skip

REQUIREMENTS = (
    "Subscriber requirements (`tooling/wheelhouse.py`: read with the settings, installed when staged)"
)
_SUBSCRIBER = '[environments.dev.subscribers.search]\nhandler = "search.py:handler"\nrequirements = "requirements.txt"\n'


def _with_requirements(requirements: str | None) -> str:
    """``doctable settings --env dev`` beside a subscriber whose requirements file holds ``requirements``."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "doctable.toml").write_text('[defaults]\nstream = "new-and-old"\n\n' + _SUBSCRIBER)
        (Path(tmp) / "search.py").write_text("def handler(event, context):\n    return None\n")
        if requirements is not None:
            (Path(tmp) / "requirements.txt").write_text(requirements)
        observed = run_cli(["settings", "--env", "dev"], {"DOCTABLE_CONFIG": f"{tmp}/doctable.toml"})
        return observed.replace(tmp, "<dir>")


def _staged_without_a_wheel() -> str:
    """A requirement with a wheel for Windows alone, staged for an arm64 function as the synth stages it."""
    from tests.unit.test_wheelhouse import offline_index, tiny_wheel
    from tooling.asset import stage_subscriber
    from tooling.wheelhouse import lambda_platform

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tiny_wheel(root / "index", "winonly", "cp313-cp313-win_amd64")
        (root / "search.py").write_text("def handler(event, context):\n    return None\n")
        (root / "requirements.txt").write_text("winonly\n")
        with environment(offline_index(root / "index")):
            try:
                stage_subscriber(
                    ROOT / "functions" / "subscriber_runtime", "search.py", "handler", root, root / "build",
                    requirements="requirements.txt", platform=lambda_platform("arm64"), cache=root / "cache",
                )  # fmt: skip
            except ValueError as exc:  # infra/compute/subscribers.py makes it the synth's one problem
                return f"ConfigError (1): subscriber 'search': {exc}"
        return "accepted, no error"


def _staged(requirements: str, env: Mapping[str, str], extra_indexes: tuple[str, ...] = ()) -> str:
    """tinypkg's requirements (``{sha}`` the wheel's sha256) staged for an arm64 function as the synth stages
    them, with ``env`` set for pip beside the offline index."""
    import hashlib

    from tests.unit.test_wheelhouse import offline_index, tiny_wheel
    from tooling.asset import stage_subscriber
    from tooling.wheelhouse import lambda_platform

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        wheel = tiny_wheel(root / "index", "tinypkg")
        (root / "search.py").write_text("def handler(event, context):\n    return None\n")
        sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
        (root / "requirements.txt").write_text(requirements.format(sha=sha))
        with environment({**offline_index(root / "index"), **env}):
            try:
                stage_subscriber(
                    ROOT / "functions" / "subscriber_runtime", "search.py", "handler", root, root / "build",
                    requirements="requirements.txt", platform=lambda_platform("arm64"), cache=root / "cache",
                    extra_indexes=extra_indexes,
                )  # fmt: skip
            except ValueError as exc:  # infra/compute/subscribers.py makes it the synth's one problem
                return f"ConfigError (1): subscriber 'search': {exc}".replace(sha, "<sha256>")
        return "accepted, no error"


SYNTH_STAGING_STOPS = (
    "synth stops while staging the subscriber's asset (app.py: the one problem, exit 1); nothing deployed"
)
add(Case(
    REQUIREMENTS, "a hash-pinned requirement whose wheel matches no pin (`tinypkg==1.0 --hash=sha256:000…`)",
    functools.partial(_staged, f"tinypkg==1.0 --hash=sha256:{'0' * 64}\n", {}),
    ("ConfigError (1): subscriber 'search': package tinypkg==1.0: its wheel for manylinux2014_aarch64 (up to "
     "manylinux_2_34), CPython 3.13 has sha256 <sha256>, which no --hash of the requirements file names; allowed: "
     "the hashes of the wheels pip installs"),
    SYNTH_STAGING_STOPS + " (pip ran with --require-hashes)", "requirements-hash-mismatch",
))  # fmt: skip
add(Case(
    REQUIREMENTS, "`PIP_EXTRA_INDEX_URL` set for a subscriber's build whose `extra_index_urls` does not name it",
    functools.partial(_staged, "tinypkg==1.0\n", {"PIP_EXTRA_INDEX_URL": "https://pypi.example.com/simple"}),
    ("ConfigError (1): subscriber 'search': PIP_EXTRA_INDEX_URL names https://pypi.example.com/simple, an index pip "
     "would search beside the main one", "allowed: unset it, or name each of its indexes in the subscriber's "
     "extra_index_urls"),
    SYNTH_STAGING_STOPS + " (before pip runs)", "requirements-extra-index",
))  # fmt: skip

for _id, _label, _text, _expect in [
    ("requirements-missing", "a subscriber's requirements file that does not exist", None,
     "subscriber 'search': requirements file requirements.txt not found (looked in <dir>); allowed: a requirements file relative to the settings file's folder"),
    ("requirements-editable", "a requirements line that is an option (`-e .`)", "attrs\n-e .\n",
     "subscriber 'search': requirements file requirements.txt line 2: '-e .' is not a plain requirement; allowed: one package per line"),
    ("requirements-index", "a requirements line naming an index (`--index-url …`)", "--index-url https://example.com/simple\n",
     "line 1: '--index-url https://example.com/simple' is not a plain requirement"),
    ("requirements-url", "a requirement from a URL (`pkg @ https://…`)", "pkg @ https://example.com/pkg-1.0-py3-none-any.whl\n",
     "line 1: 'pkg @ https://example.com/pkg-1.0-py3-none-any.whl' is not a plain requirement"),
    ("requirements-hash-partial", "hash pins on some lines only (`--hash` on line 1, none on line 2)",
     f"attrs==23.1.0 --hash=sha256:{'a' * 64}\nidna==3.4\n",
     "requirements file requirements.txt line 2: no --hash while line 1 has one; allowed: --hash on every line, each "
     "line pinned with =="),
    ("requirements-hash-unpinned", "a hashed line without an exact version (`attrs>=23 --hash=…`)",
     f"attrs>=23 --hash=sha256:{'a' * 64}\n", "line 1: 'attrs>=23' is hashed without an exact version"),
]:  # fmt: skip
    _run = functools.partial(_with_requirements, _text)
    add(Case(REQUIREMENTS, _label, _run, (*ONE_LINE, _expect), CLI_STOPS, _id))
cli_case(
    ["plan", "--writes-per-second", "5", "--subscriber-ms", "nope=5"],
    [*ONE_LINE, "--subscriber-ms nope=5: environment dev declares no subscriber 'nope'; declared: none"],
    CLI_STOPS,
    id="cli-plan-unknown-subscriber",
)
cli_case(
    ["plan", "--writes-per-second", "5", "--subscriber-ms", "search"],
    [*ONE_LINE, "--subscriber-ms 'search': expected NAME=MS, a subscriber's milliseconds per record"],
    CLI_STOPS,
    id="cli-plan-subscriber-ms-malformed",
)
add(
    Case(
        REQUIREMENTS,
        "a requirement without a wheel for the function's platform (a `win_amd64` wheel alone, an arm64 function)",
        _staged_without_a_wheel,
        ("ConfigError (1): subscriber 'search': package winonly has no wheel for manylinux2014_aarch64",
         "allowed: a package with a wheel for manylinux2014_aarch64 (up to manylinux_2_34), CPython 3.13, or pure "
         "Python (a py3-none-any wheel)"),
        "synth stops while staging the subscriber's asset (app.py: the one problem, exit 1; no Docker, nothing "
        "compiled); nothing deployed",
        "requirements-no-wheel",
    )
)  # fmt: skip


# ================================================================================================ running
@functools.cache
def observe(case_id: str) -> str:
    """The observed outcome of one case (run once per process; the document and the tests share it)."""
    (found,) = [c for c in CASES if c.id == case_id]
    try:
        return normalize(found.run())
    except Exception as exc:  # the harness itself failed: visible in the table and failing the test
        return normalize(f"HARNESS ERROR {type(exc).__name__}: {exc}")


def unmet() -> list[tuple[Case, list[str]]]:
    """The cases whose observed outcome lacks an expected fragment, with the fragments it lacks."""
    result = []
    for found in CASES:
        observed = observe(found.id)
        missing = [fragment for fragment in found.expect if fragment not in observed]
        if missing:
            result.append((found, missing))
    return result


def _cell(text: str) -> str:
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("\n", " ")


def _trim(text: str, limit: int = OBSERVED_MAX) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def render(observed: Mapping[str, str] | None = None) -> str:
    """The whole document, from the observed outcomes (deterministic: same code, same text)."""
    observed = observed if observed is not None else {c.id: observe(c.id) for c in CASES}
    lines = [
        "# Bad input, tried",
        "",
        "Every bad input the project has been fed, what it gets, and where the input ends up. The middle column",
        "is what the code really did, trimmed to "
        f"{OBSERVED_MAX} characters: `tests/unit/bad_inputs.py` feeds each input to the real",
        "code (the knob resolver, the consumer's Lambda handler against an in-process moto S3, the `doctable`",
        "console script) and this page is rendered from what it observed. `tests/unit/test_bad_inputs.py` runs",
        "every case, checks the expected fragments of each outcome, and fails when this page is stale;",
        f"`make bad-input-doc` (or `.venv/bin/{GENERATOR}`) regenerates it. Do not edit it by hand.",
        "",
        f"{len(CASES)} cases. Sequence numbers are shown as `seqN` (the Nth record the tests generated); "
        "rows marked ⚠ are gaps, not guarantees.",
        "",
    ]
    for area in AREAS:
        rows = [c for c in CASES if c.area == area]
        lines += [
            f"## {area}",
            "",
            "| bad input | what it gets (observed) | where it ends up (nothing lost) |",
        ]
        lines.append("|---|---|---|")
        for row in rows:
            lines.append(f"| {row.bad_input} | {_cell(_trim(observed[row.id]))} | {row.lands} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.unit.bad_inputs", description=__doc__.splitlines()[0]
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"rewrite {DOC_PATH.relative_to(ROOT)}")
    mode.add_argument("--check", action="store_true", help="exit 1 when the document is stale")
    args = parser.parse_args(argv)
    text = render()
    failing = unmet()
    for found, missing in failing:
        print(f"case {found.id}: expected {missing} in: {observe(found.id)}", file=sys.stderr)
    if failing and args.write:
        print(
            f"{len(failing)} case(s) do not see what they expect: not writing the document", file=sys.stderr
        )
        return 1
    if args.write:
        DOC_PATH.parent.mkdir(parents=True, exist_ok=True)
        DOC_PATH.write_text(text)
        print(f"wrote {DOC_PATH.relative_to(ROOT)} ({len(CASES)} cases)")
        return 0
    if args.check:
        current = DOC_PATH.read_text() if DOC_PATH.exists() else ""
        if current != text:
            print(f"{DOC_PATH.relative_to(ROOT)} is stale: run `{GENERATOR}`", file=sys.stderr)
            return 1
        print(f"{DOC_PATH.relative_to(ROOT)} is current ({len(CASES)} cases)")
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
