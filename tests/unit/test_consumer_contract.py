"""The consumer's copy of the runtime contract agrees with ``contract/``: names equal, config at least as strict.

The function's asset imports nothing outside ``functions/``, so it keeps its own constants and rules; these
tests are what keeps them and the stack's knobs from drifting apart.
"""

from __future__ import annotations

import pytest
from stream_consumer import constants
from stream_consumer.settings import Settings, SettingsError

from contract import names
from contract.knobs import CONSUMER_BUILTIN, STREAM_NEW_AND_OLD, ConfigError, resolve_config

SHARED_NAMES = (
    "SERVICE_NAME",
    "METRICS_NAMESPACE",
    "PROOF_LOG_MESSAGE",
    "PARTITION_KEY",
    "SORT_KEY",
    "BLOBS_ATTRIBUTE",
    "ENV_BLOB_BUCKET",
    "ENV_BLOB_ROOT",
    "ENV_BLOB_PREFIX_CLEANUP",
    "ENV_BLOB_KEY_REUSE",
    "ENV_TABLE_NAME",
    "ENV_ENVIRONMENT",
    "ENV_BLOB_CLEANUP",
    "METRIC_DIMENSION_ENVIRONMENT",
    "METRIC_DIMENSION_TABLE",
    "ENV_FLAG_ON",
    "ENV_FLAG_OFF",
    "SDK_MODELS_DIR",
)

# Names near the edges of S3's rules and of the knob's own pattern: both accepted and refused ones.
BUCKET_SAMPLES = [
    "abc",
    "my-bucket",
    "my.bucket-1",
    "a" * 63,
    "a" * 64,
    "ab",
    "1.2.3.4",
    "a..b",
    "a.-b",
    "-abc",
    "abc-",
    "abc.",
    "ABC",
    "my_bucket",
    "xn--bucket",
    "sthree-bucket",
    "bucket-s3alias",
    "bucket--ol-s3",
    "arn:aws:s3:::bucket",
    "s3://bucket",
    "b\u00fccket",
    "bucket\n",
    " bucket",
]
ROOT_SAMPLES = [
    "",
    "blobs/",
    "a/b/",
    "a.b/",
    "!_.*'()-/",
    "x/..y/",
    "blobs",
    "/blobs/",
    "a//",
    "//",
    "../",
    "a/../b/",
    "./",
    "a b/",
    "a\\b/",
    "a\tb/",
    "a\x7fb/",
    "bl\u00f6bs/",
    "blobs/\n",
    "a:b/",
    "a#b/",
]


def knob_value(knob: str, value: str) -> str | None:
    """What the stack's config makes of ``value`` for ``knob`` (with the built-in consumer); None if refused."""
    context = {"stream": STREAM_NEW_AND_OLD, "consumer": CONSUMER_BUILTIN, knob: value}
    try:
        config = resolve_config(context=context, environ={})
    except ConfigError as exc:
        assert all(problem.startswith(f"{knob}=") for problem in exc.problems), exc.problems
        return None
    return str(getattr(config, knob))


def assert_config_at_least_as_strict(knob: str, variable: str, value: str) -> None:
    resolved = knob_value(knob, value)
    if resolved is None:
        # the knobs refuse it: so does the consumer (the rules agree; knobs strip surrounding blanks first)
        assert not consumer_accepts(**{variable: value.strip()}), value
    else:
        # the stack would deploy it: the function's cold start accepts it
        assert consumer_accepts(**{variable: resolved}), resolved


def consumer_accepts(**env: str) -> bool:
    try:
        Settings.from_env({"BLOB_BUCKET": "my-bucket", "TABLE_NAME": "items-dev", **env})
    except SettingsError:
        return False
    return True


@pytest.mark.parametrize("name", SHARED_NAMES)
def test_consumer_constants_equal_the_contract(name):
    # GIVEN a name the stack writes (env var, flag value) or reads (log message, metrics namespace, service)
    # THEN the consumer's copy is the same string
    assert getattr(constants, name) == getattr(names, name)


@pytest.mark.parametrize("value", BUCKET_SAMPLES)
def test_consumer_accepts_every_bucket_the_knobs_accept(value):
    # GIVEN a bucket name  WHEN the knobs and the consumer's settings judge it
    # THEN they agree; above all, nothing the stack can deploy fails the function's cold start
    assert_config_at_least_as_strict("blob_bucket", "BLOB_BUCKET", value)


@pytest.mark.parametrize("value", ROOT_SAMPLES)
def test_consumer_accepts_every_blob_root_the_knobs_accept(value):
    # GIVEN a blob root  WHEN the knobs and the consumer's settings judge it  THEN they agree
    assert_config_at_least_as_strict("blob_root", "BLOB_ROOT", value)


def test_the_samples_cover_both_verdicts():
    # GIVEN the samples  THEN each list holds values the knobs accept and values they refuse
    for knob, samples in (("blob_bucket", BUCKET_SAMPLES), ("blob_root", ROOT_SAMPLES)):
        verdicts = {knob_value(knob, value) is not None for value in samples}
        assert verdicts == {True, False}, knob
