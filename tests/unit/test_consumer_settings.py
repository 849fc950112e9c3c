"""Settings contract, cold-start validation and the shape of the deployed package."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from stream_consumer.settings import Settings, SettingsError

# What the function may import besides the standard library: Powertools (its layer) and the runtime's boto3.
RUNTIME_PACKAGES = {"aws_lambda_powertools", "boto3", "botocore"}
PACKAGE = Path(__file__).resolve().parents[2] / "functions" / "stream_consumer"


def test_defaults():
    # GIVEN only the bucket and the table  WHEN loaded  THEN the optional variables take their defaults
    env = {"BLOB_BUCKET": "my-bucket", "TABLE_NAME": "items-dev"}
    assert Settings.from_env(env) == Settings("my-bucket", "", False, "items-dev", None)


def test_all_variables():
    env = {
        "BLOB_BUCKET": "my.bucket-1",
        "BLOB_ROOT": "a/b/",
        "BLOB_PREFIX_CLEANUP": " ON ",
        "TABLE_NAME": "items-prod",
        "ENVIRONMENT": "prod",
    }
    assert Settings.from_env(env) == Settings("my.bucket-1", "a/b/", True, "items-prod", "prod")


@pytest.mark.parametrize(
    ("env", "variable", "shown"),
    [
        ({}, "BLOB_BUCKET", "<unset>"),
        ({"BLOB_BUCKET": "b1b"}, "TABLE_NAME", "<unset>"),
        ({"BLOB_BUCKET": "b1b", "TABLE_NAME": "t"}, "TABLE_NAME", "'t'"),
        (
            {"BLOB_BUCKET": "b1b", "TABLE_NAME": "arn:aws:dynamodb:eu-west-1:1:table/t"},
            "TABLE_NAME",
            "'arn:aws:dynamodb:eu-west-1:1:table/t'",
        ),
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
        "TABLE_NAME": "the DynamoDB table whose stream",
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
    handler = load_consumer(AWS_LAMBDA_INITIALIZATION_TYPE="on-demand")
    assert handler.cleaner.store._client is None
    assert handler.cleaner.live._client is None


@pytest.mark.parametrize(("reuse", "reads_items"), [("guarded", True), ("never", False)])
def test_a_snapstart_init_builds_the_clients_the_snapshot_keeps(load_consumer, reuse, reads_items):
    # GIVEN the init Lambda runs when it publishes a SnapStart version
    handler = load_consumer(AWS_LAMBDA_INITIALIZATION_TYPE="snap-start", BLOB_KEY_REUSE=reuse)
    # THEN the clients a batch needs exist before any batch (the DynamoDB one only if items are read)
    assert handler.cleaner.store._client is not None
    assert (handler.cleaner.live._client is not None) is reads_items


def test_package_is_small_code_only_and_self_contained():
    # GIVEN the Lambda package directory
    files = [p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts]

    # THEN it holds only Python modules, under 80 KB of source (the handler's own logic, about 70 KB with blob
    # manifests: a vendored library would be hundreds of KB), importing only the standard library, the Lambda
    # runtime's packages and itself (relatively): nothing of the repository outside functions/
    assert {p.suffix for p in files} == {".py"}
    assert not any(p.name.startswith("test") for p in files)
    assert sum(p.stat().st_size for p in files) < 80_000
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                assert node.module and _allowed_import(node.module), (path, node.module)
            if isinstance(node, ast.Import):
                assert all(_allowed_import(a.name) for a in node.names), path


def _allowed_import(module: str) -> bool:
    top = module.split(".")[0]
    return top in sys.stdlib_module_names or top in RUNTIME_PACKAGES


@pytest.mark.parametrize(("value", "cleanup"), [(None, True), ("on", True), (" OFF ", False), ("off", False)])
def test_blob_cleanup_is_on_unless_turned_off(value, cleanup):
    # GIVEN BLOB_CLEANUP unset or set  WHEN loaded  THEN cleanup follows it, on by default
    env = {"BLOB_BUCKET": "my-bucket", "TABLE_NAME": "items-dev"}
    if value is not None:
        env["BLOB_CLEANUP"] = value
    assert Settings.from_env(env).blob_cleanup is cleanup


def test_without_cleanup_the_bucket_is_optional_and_still_checked_when_given():
    # GIVEN a replica region's consumer: cleanup off and no bucket  THEN it loads with no bucket
    assert Settings.from_env({"BLOB_CLEANUP": "off", "TABLE_NAME": "items-dev"}).blob_bucket == ""
    # AND a malformed bucket is still refused, naming the variable
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"BLOB_CLEANUP": "off", "BLOB_BUCKET": "arn:aws:s3:::b", "TABLE_NAME": "items-dev"})
    assert (caught.value.variable, caught.value.value) == ("BLOB_BUCKET", "arn:aws:s3:::b")


def test_a_malformed_blob_cleanup_names_the_variable():
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"BLOB_BUCKET": "my-bucket", "TABLE_NAME": "items-dev", "BLOB_CLEANUP": "no"})
    assert (caught.value.variable, caught.value.value) == ("BLOB_CLEANUP", "no")


def test_with_cleanup_off_a_remove_is_logged_and_no_s3_call_is_made(s3, load_consumer, stdout_json):
    # GIVEN a replica region's consumer (BLOB_CLEANUP=off, no bucket) and blobs a deleted item listed
    from tests.unit.events import FakeLambdaContext, insert, remove, stream_event

    own = ["blobs/doc#1/v#1/a.pdf", "blobs/doc#1/v#1/b.pdf"]
    s3.put(*own)
    handler = load_consumer(BLOB_CLEANUP="off", BLOB_BUCKET=None, AWS_LAMBDA_INITIALIZATION_TYPE="snap-start")
    # WHEN it receives the REMOVE beside an INSERT
    response = handler.lambda_handler(
        stream_event(remove(1, "doc#1", "v#1", own), insert(2, "doc#2", "v#1")), FakeLambdaContext()
    )
    # THEN every record succeeds and both blobs are still there
    assert response == {"batchItemFailures": []}
    assert s3.keys() == set(own)
    # AND no S3 (nor DynamoDB) client was ever built, not even by the SnapStart init: no request was made
    assert handler.cleaner.store._client is None and handler.cleaner.live._client is None
    # AND the proof line counts both records, and the REMOVE has its own line naming its item and keys
    lines = stdout_json()
    (proof,) = [line for line in lines if line.get("message") == "stream_records_received"]
    assert proof["record_count"] == 2
    (uncleaned,) = [line for line in lines if line.get("message") == "record_not_cleaned"]
    assert (uncleaned["pk"], uncleaned["sk"], uncleaned["reason"], uncleaned["keys_dropped"]) == (
        "doc#1",
        "v#1",
        "deleted",
        2,
    )
    assert not [line for line in lines if line.get("message") == "record_cleaned"]
