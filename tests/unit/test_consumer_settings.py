"""Settings contract, cold-start validation and the shape of the deployed package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from stream_consumer import constants
from stream_consumer.settings import Settings, SettingsError

from contract import names

PACKAGE = Path(__file__).resolve().parents[2] / "functions" / "stream_consumer"


def test_defaults():
    # GIVEN only the bucket  WHEN loaded  THEN the optional variables take their defaults
    assert Settings.from_env({"BLOB_BUCKET": "my-bucket"}) == Settings("my-bucket", "", False, None)


def test_all_variables():
    env = {
        "BLOB_BUCKET": "my.bucket-1",
        "BLOB_ROOT": "a/b/",
        "BLOB_PREFIX_CLEANUP": " ON ",
        "TABLE_NAME": "t",
    }
    assert Settings.from_env(env) == Settings("my.bucket-1", "a/b/", True, "t")


@pytest.mark.parametrize(
    ("env", "variable", "shown"),
    [
        ({}, "BLOB_BUCKET", "<unset>"),
        ({"BLOB_BUCKET": ""}, "BLOB_BUCKET", "''"),
        ({"BLOB_BUCKET": "arn:aws:s3:::bucket"}, "BLOB_BUCKET", "'arn:aws:s3:::bucket'"),
        ({"BLOB_BUCKET": "b1b", "BLOB_ROOT": "blobs"}, "BLOB_ROOT", "'blobs'"),
        ({"BLOB_BUCKET": "b1b", "BLOB_ROOT": "a/../b/"}, "BLOB_ROOT", "'a/../b/'"),
        ({"BLOB_BUCKET": "b1b", "BLOB_ROOT": "/blobs/"}, "BLOB_ROOT", "'/blobs/'"),
        ({"BLOB_BUCKET": "b1b", "BLOB_PREFIX_CLEANUP": "yes"}, "BLOB_PREFIX_CLEANUP", "'yes'"),
    ],
)
def test_invalid_values_raise_one_clear_error(env, variable, shown):
    # GIVEN an invalid environment  WHEN loaded
    # THEN one error names the variable, the value and what is allowed
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(env)
    assert caught.value.variable == variable
    assert str(caught.value).startswith(f"invalid environment variable {variable}={shown}: ")
    allowed = {
        "BLOB_BUCKET": "S3 bucket name",
        "BLOB_ROOT": "ending in '/'",
        "BLOB_PREFIX_CLEANUP": "'on' or 'off'",
    }
    assert allowed[variable] in str(caught.value)


def test_cold_start_fails_without_blob_bucket(load_consumer):
    # GIVEN BLOB_BUCKET is missing
    # WHEN the handler module is imported (cold start)
    # THEN the init fails with the settings error (a ValueError; the class is re-imported with the module)
    with pytest.raises(
        ValueError, match=r"invalid environment variable BLOB_BUCKET=<unset>: required"
    ) as caught:
        load_consumer(BLOB_BUCKET=None)
    assert type(caught.value).__name__ == "SettingsError"


def test_cold_start_does_not_create_the_s3_client(load_consumer):
    # GIVEN a valid environment  WHEN the handler is imported  THEN the S3 client does not exist yet
    handler = load_consumer()
    assert handler.cleaner.store._client is None


def test_constants_match_the_shared_names():
    # GIVEN the constants duplicated in the Lambda asset  THEN they equal infra/names.py
    for name in (
        "SERVICE_NAME",
        "METRICS_NAMESPACE",
        "PROOF_LOG_MESSAGE",
        "PARTITION_KEY",
        "SORT_KEY",
        "BLOBS_ATTRIBUTE",
        "ENV_BLOB_BUCKET",
        "ENV_BLOB_ROOT",
        "ENV_BLOB_PREFIX_CLEANUP",
        "ENV_TABLE_NAME",
    ):
        assert getattr(constants, name) == getattr(names, name), name


def test_package_is_small_code_only_and_self_contained():
    # GIVEN the Lambda package directory
    files = [p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts]

    # THEN it holds only Python modules, well under 50 KB, importing nothing from infra or absolute self-paths
    assert {p.suffix for p in files} == {".py"}
    assert not any(p.name.startswith("test") for p in files)
    assert sum(p.stat().st_size for p in files) < 50_000
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                assert node.module and not node.module.startswith(("infra", "stream_consumer")), path
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith(("infra", "stream_consumer")) for a in node.names), path
