"""The consumer's deployed shape: function, mapping, destination, buckets, and every IAM statement."""

from __future__ import annotations

import importlib
import importlib.util
import json
import marshal
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from contract import names
from contract.names import powertools_layer_parameter
from tests.infra.synth import only, resources, synth, tag_map
from tooling.asset import compiles_bytecode

STREAM = {"stream": "new-and-old"}
ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "functions" / "stream_consumer"
BORROWED = "arn:aws:lambda:us-east-1:123456789012:function:their-consumer"


def _function_asset(template: dict[str, Any], outdir: Path) -> Path:
    """The staged directory of the function's code asset, found through the assets manifest."""
    key = only(template, "AWS::Lambda::Function")["Properties"]["Code"]["S3Key"]
    (manifest,) = outdir.glob("*.assets.json")
    for asset_hash, entry in json.loads(manifest.read_text())["files"].items():
        if key.startswith(asset_hash):
            return outdir / entry["source"]["path"]
    raise AssertionError(f"no asset for {key}")


def _logical(template: dict[str, Any], type_name: str, contains: str = "") -> str:
    return next(k for k in resources(template, type_name) if contains in k)


def test_no_consumer_without_a_stream() -> None:
    _, template, _ = synth()
    for type_name in ("AWS::Lambda::Function", "AWS::Lambda::EventSourceMapping", "AWS::S3::Bucket"):
        assert resources(template, type_name) == {}


def test_function_runs_the_thin_handler_on_arm64_with_the_pinned_powertools_layer() -> None:
    _, template, _ = synth(**STREAM)
    props = only(template, "AWS::Lambda::Function")["Properties"]
    assert props["Handler"] == "stream_consumer.handler.lambda_handler"
    assert props["Runtime"] == "python3.13"
    assert props["Architectures"] == ["arm64"]
    assert props["TracingConfig"] == {"Mode": "Active"}
    assert props["LoggingConfig"] == {"LogGroup": {"Ref": _logical(template, "AWS::Logs::LogGroup")}}
    env = props["Environment"]["Variables"]
    assert env[names.ENV_BLOB_BUCKET] == {"Ref": _logical(template, "AWS::S3::Bucket", "BlobBucket")}
    assert env[names.ENV_BLOB_PREFIX_CLEANUP] == "off"
    assert env[names.ENV_BLOB_KEY_REUSE] == "guarded"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == names.METRICS_NAMESPACE
    # the layer comes from Powertools' public SSM parameter for the pinned version, resolved at deploy time
    (layer,) = props["Layers"]
    parameter = template["Parameters"][layer["Ref"]]
    assert parameter["Type"] == "AWS::SSM::Parameter::Value<String>"
    assert parameter["Default"] == powertools_layer_parameter("arm64")
    assert parameter["Default"].endswith(f"/python3.13/{names.POWERTOOLS_VERSION}")


def test_x86_architecture_resolves_the_x86_layer() -> None:
    _, template, _ = synth(**STREAM, architecture="x86_64")
    props = only(template, "AWS::Lambda::Function")["Properties"]
    assert props["Architectures"] == ["x86_64"]
    assert template["Parameters"][props["Layers"][0]["Ref"]]["Default"].startswith(
        "/aws/service/powertools/python/x86_64/"
    )


def test_bundled_powertools_needs_no_layer(tmp_path: Any) -> None:
    _, template, outdir = synth(**STREAM, powertools="bundled")
    props = only(template, "AWS::Lambda::Function")["Properties"]
    assert "Layers" not in props
    asset = _function_asset(template, outdir)
    assert (asset / "aws_lambda_powertools" / "__init__.py").exists()
    assert (asset / "stream_consumer" / "handler.py").exists()
    # AND the Powertools parts the consumer never imports stay out, as does any machine-built binary
    assert not (asset / "aws_lambda_powertools" / "event_handler").exists()
    assert not list(asset.rglob("*.so"))


# What the managed Python runtime provides beside a function's own code (the SDK and its dependencies).
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six")


def test_bundled_asset_starts_with_only_what_the_runtime_provides(tmp_path: Any) -> None:
    # GIVEN the bundled asset and a directory holding only what the Lambda runtime provides
    _, template, outdir = synth(**STREAM, powertools="bundled", architecture="x86_64")
    asset = _function_asset(template, outdir)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    for name in RUNTIME_PROVIDED:
        module = importlib.import_module(name)
        source = (
            Path(module.__file__).parent if module.__file__.endswith("__init__.py") else Path(module.__file__)
        )
        (runtime / source.name).symlink_to(source)
    env = {
        "PATH": os.environ["PATH"],
        "BLOB_BUCKET": "blobs-bucket",
        "BLOB_ROOT": "",
        "BLOB_PREFIX_CLEANUP": "off",
        "TABLE_NAME": "items-dev",
        "AWS_REGION": "us-east-1",
        "POWERTOOLS_SERVICE_NAME": names.SERVICE_NAME,
        "POWERTOOLS_TRACE_DISABLED": "1",
    }
    # WHEN an isolated interpreter (no site-packages) cold-starts the handler from that path alone
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c",
         f"import sys; sys.path[:0] = [{str(asset)!r}, {str(runtime)!r}]; import stream_consumer.handler; "
         "s3 = stream_consumer.blob_store.lazy_client('s3'); "
         "print(sorted(s3.meta.service_model.operation_names))"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    # THEN it imports, and builds its first AWS client with tracing set up: nothing the asset needs is missing
    assert result.returncode == 0, result.stderr[-2000:]
    # AND from the asset's own models of the operations the consumer calls
    assert result.stdout.split("\n")[-2] == str(sorted(names.CONSUMER_SDK_OPERATIONS["s3"]))


def test_layer_asset_holds_only_the_handler_code() -> None:
    _, template, outdir = synth(**STREAM)
    asset = _function_asset(template, outdir)
    files = {p.relative_to(asset).parts[0] for p in asset.rglob("*") if p.is_file()}
    assert files == {"stream_consumer"}
    # AND botocore's models of the consumer's operations, one per service
    models = sorted(p.relative_to(asset / "stream_consumer").parts for p in asset.rglob("service-2.json"))
    assert [(parts[0], parts[1]) for parts in models] == [
        (names.SDK_MODELS_DIR, service) for service in sorted(names.CONSUMER_SDK_OPERATIONS)
    ]
    # AND under the runtime's Python, one unchecked-hash .pyc per module (valid whatever the zip's timestamps,
    # never compiled again on Lambda's read-only /var/task), recorded as run from /var/task; else none
    sources = sorted(p.stem for p in (asset / "stream_consumer").glob("*.py"))
    pycs = sorted(asset.rglob("*.pyc"))
    if not compiles_bytecode():
        assert pycs == []
        return
    assert [p.name for p in pycs] == [f"{stem}.{sys.implementation.cache_tag}.pyc" for stem in sources]
    for pyc in pycs:
        data = pyc.read_bytes()
        assert data[:4] == importlib.util.MAGIC_NUMBER
        assert int.from_bytes(data[4:8], "little") == 0b01  # hash-based, source not checked
        code = marshal.loads(data[16:])
        assert code.co_filename == f"/var/task/stream_consumer/{pyc.name.split('.')[0]}.py"


def test_staged_asset_is_byte_for_byte_reproducible(tmp_path: Path) -> None:
    # GIVEN the consumer staged twice, by two interpreters with different hash seeds
    stages = []
    for seed in ("1", "2"):
        build = tmp_path / f"build-{seed}"
        script = (
            "import sys; from pathlib import Path; from tooling.asset import stage_package; "
            f"print(stage_package(Path({str(PACKAGE)!r}), Path({str(build)!r})))"
        )
        result = subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": seed},
            cwd=str(ROOT),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        stages.append(Path(result.stdout.strip()))
    # THEN both hold the same files with the same bytes (so the asset's hash changes only with the sources and the installed botocore's models)
    contents = [
        {p.relative_to(s).as_posix(): p.read_bytes() for p in s.rglob("*") if p.is_file()} for s in stages
    ]
    assert contents[0] == contents[1]
    assert stages[0].name == stages[1].name


def test_mapping_properties_and_tags() -> None:
    config, template, _ = synth(**STREAM, owner="docs", cost_center="cc-7")
    mapping = only(template, "AWS::Lambda::EventSourceMapping")
    props = mapping["Properties"]
    table_id = _logical(template, "AWS::DynamoDB::Table")
    assert props["EventSourceArn"] == {"Fn::GetAtt": [table_id, "StreamArn"]}
    # the mapping's function is an alias of the consumer named after the starting position, on $LATEST
    alias_id = _logical(template, "AWS::Lambda::Alias")
    assert props["FunctionName"] == {"Ref": alias_id}
    assert only(template, "AWS::Lambda::Alias")["Properties"] == {
        "FunctionName": {"Ref": _logical(template, "AWS::Lambda::Function")},
        "FunctionVersion": "$LATEST",
        "Name": "from-trim-horizon",
    }
    assert props["StartingPosition"] == "TRIM_HORIZON"
    assert props["BatchSize"] == config.batch_size == 100
    assert props["BisectBatchOnFunctionError"] is True
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["MaximumRetryAttempts"] == config.max_retries == 5
    assert props["MaximumRecordAgeInSeconds"] == config.max_record_age == 21600
    assert props["ParallelizationFactor"] == config.parallelization_factor == 4
    assert props["DestinationConfig"] == {
        "OnFailure": {
            "Destination": {"Fn::GetAtt": [_logical(template, "AWS::S3::Bucket", "Failure"), "Arn"]}
        }
    }
    assert tag_map(props["Tags"]) == {
        "ManagedBy": "ephemera",
        "Source": "doctable",
        "PlanVersion": config.tags()["PlanVersion"],
        "Environment": "dev",
        "Tier": "dev",
        "Owner": "docs",
        "CostCenter": "cc-7",
    }
    # the mapping waits for the role's policy: no race with IAM propagation on a first deploy
    assert _logical(template, "AWS::IAM::Policy", "RolePolicy") in mapping["DependsOn"]


@pytest.mark.parametrize(
    ("knobs", "expected"),
    [
        ({"starting_position": "latest"}, {"StartingPosition": "LATEST"}),
        (
            {"batch_size": "10", "batching_window": "5"},
            {"BatchSize": 10, "MaximumBatchingWindowInSeconds": 5},
        ),
        (
            {"max_retries": "0", "max_record_age": "60"},
            {"MaximumRetryAttempts": 0, "MaximumRecordAgeInSeconds": 60},
        ),
        ({"parallelization_factor": "1"}, {"ParallelizationFactor": 1}),
    ],
)
def test_mapping_knobs(knobs: dict[str, str], expected: dict[str, Any]) -> None:
    _, template, _ = synth(**STREAM, **knobs)
    props = only(template, "AWS::Lambda::EventSourceMapping")["Properties"]
    assert {k: props[k] for k in expected} == expected


def test_a_new_starting_position_targets_a_new_alias() -> None:
    # GIVEN the same stack synthesized with each starting position
    _, horizon, _ = synth(**STREAM)
    _, latest, _ = synth(**STREAM, starting_position="latest")
    # WHEN the mapping and its alias are read from both
    aliases = [only(t, "AWS::Lambda::Alias")["Properties"]["Name"] for t in (horizon, latest)]
    mappings = [only(t, "AWS::Lambda::EventSourceMapping")["Properties"] for t in (horizon, latest)]
    # THEN the replacing mapping targets another function ARN (Lambda's 409 is per stream and function ARN)
    assert aliases == ["from-trim-horizon", "from-latest"]
    assert [m["StartingPosition"] for m in mappings] == ["TRIM_HORIZON", "LATEST"]
    assert all(m["FunctionName"] == {"Ref": _logical(horizon, "AWS::Lambda::Alias")} for m in mappings)
    assert _logical(horizon, "AWS::Lambda::Alias") == _logical(latest, "AWS::Lambda::Alias")


def test_borrowed_consumer_wires_the_mapping_only() -> None:
    _, template, _ = synth(**STREAM, consumer=BORROWED)
    assert resources(template, "AWS::Lambda::Function") == {}
    assert resources(template, "AWS::IAM::Role") == {}
    assert resources(template, "AWS::Lambda::Alias") == {}  # a borrowed function gets no alias of ours
    props = only(template, "AWS::Lambda::EventSourceMapping")["Properties"]
    assert props["FunctionName"] == BORROWED
    assert "DestinationConfig" in props


def test_consumer_none_keeps_the_stream_only() -> None:
    _, template, _ = synth(**STREAM, consumer="none")
    assert resources(template, "AWS::Lambda::EventSourceMapping") == {}
    assert "StreamSpecification" in only(template, "AWS::DynamoDB::Table")["Properties"]


def test_buckets_are_encrypted_private_and_tls_only() -> None:
    _, template, _ = synth(**STREAM)
    buckets = resources(template, "AWS::S3::Bucket")
    assert len(buckets) == 2
    for bucket in buckets.values():
        props = bucket["Properties"]
        assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
            "ServerSideEncryptionByDefault"
        ] == {"SSEAlgorithm": "AES256"}
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }
    for policy in resources(template, "AWS::S3::BucketPolicy").values():
        (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
        assert statement["Effect"] == "Deny"
        assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_borrowed_blob_bucket_is_not_created() -> None:
    _, template, _ = synth(**STREAM, blob_bucket="their-blobs")
    assert len(resources(template, "AWS::S3::Bucket")) == 1  # the failure bucket only
    env = only(template, "AWS::Lambda::Function")["Properties"]["Environment"]["Variables"]
    assert env[names.ENV_BLOB_BUCKET] == "their-blobs"


def _statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        out.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return out


@pytest.mark.parametrize("prefix_cleanup", ["off", "on"])
def test_every_iam_statement_is_scoped(prefix_cleanup: str) -> None:
    # GIVEN the consumer's role policies
    _, template, _ = synth(**STREAM, blob_prefix_cleanup=prefix_cleanup, blob_root="blobs/")
    statements = _statements(template)
    table_id = _logical(template, "AWS::DynamoDB::Table")
    blob_id = _logical(template, "AWS::S3::Bucket", "BlobBucket")
    failure_id = _logical(template, "AWS::S3::Bucket", "Failure")
    by_sid = {s.get("Sid", "cdk-default"): s for s in statements}
    # THEN no statement has a wildcard action, and each names exactly one resource
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert all("*" not in a for a in actions), statement
        assert not isinstance(statement["Resource"], list), statement
    # AND the resources are the consumer's own
    assert by_sid["ReadOwnStream"]["Resource"] == {"Fn::GetAtt": [table_id, "StreamArn"]}
    assert by_sid["DeleteBlobs"]["Action"] == ["s3:DeleteObject", "s3:GetObject"]  # GetObject: the HEAD
    assert by_sid["DeleteBlobs"]["Resource"] == {
        "Fn::Join": ["", [{"Fn::GetAtt": [blob_id, "Arn"]}, "/blobs/*"]]
    }
    assert by_sid["ReadLiveItems"] == {
        "Sid": "ReadLiveItems",
        "Effect": "Allow",
        "Action": "dynamodb:BatchGetItem",
        "Resource": {"Fn::GetAtt": [table_id, "Arn"]},
    }
    assert by_sid["KeepFailedBatches"]["Resource"] == {
        "Fn::Join": ["", [{"Fn::GetAtt": [failure_id, "Arn"]}, "/aws/lambda/*"]]
    }
    assert by_sid["WriteOwnLogs"]["Resource"] == {
        "Fn::GetAtt": [_logical(template, "AWS::Logs::LogGroup"), "Arn"]
    }
    # AND the role can never write the table (it reads items only to keep the blobs they list)
    all_actions = {
        a for s in statements for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    }
    assert not any(
        a.startswith("dynamodb:")
        and a
        not in {
            "dynamodb:DescribeStream",
            "dynamodb:GetRecords",
            "dynamodb:GetShardIterator",
            "dynamodb:ListStreams",
            "dynamodb:BatchGetItem",
        }
        for a in all_actions
    )
    # AND listing the blob bucket exists only with prefix cleanup, limited to the blob root
    listing = by_sid.get("ListRecordPrefixes")
    if prefix_cleanup == "on":
        assert listing is not None
        assert listing["Resource"] == {"Fn::GetAtt": [blob_id, "Arn"]}
        assert listing["Condition"] == {"StringLike": {"s3:prefix": ["blobs/*"]}}
    else:
        assert listing is None
    # AND the only `*` resources are for actions that have no resource type
    star = {
        a
        for s in statements
        if s["Resource"] == "*"
        for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    }
    assert star == {"dynamodb:ListStreams", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}


def test_with_key_reuse_never_the_role_may_only_delete_blobs() -> None:
    # GIVEN blob_key_reuse=never: the consumer deletes a dropped key without observing it or reading the items
    _, template, _ = synth(**STREAM, blob_key_reuse="never", blob_root="blobs/")
    by_sid = {s.get("Sid", "cdk-default"): s for s in _statements(template)}
    env = only(template, "AWS::Lambda::Function")["Properties"]["Environment"]["Variables"]
    # THEN the function is told so, its role may delete blobs but not read them (no HEAD), and it reads no item
    assert env[names.ENV_BLOB_KEY_REUSE] == "never"
    assert by_sid["DeleteBlobs"]["Action"] == "s3:DeleteObject"
    assert "ReadLiveItems" not in by_sid
    assert not any(
        a in ("s3:GetObject", "dynamodb:BatchGetItem")
        for s in by_sid.values()
        for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    )


def test_role_has_no_managed_policies() -> None:
    _, template, _ = synth(**STREAM)
    role = only(template, "AWS::IAM::Role")["Properties"]
    assert "ManagedPolicyArns" not in role
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "lambda.amazonaws.com"
    }


def test_runtime_and_powertools_pins_agree_with_the_contract() -> None:
    # GIVEN the runtime the construct deploys and the Powertools library installed here
    from importlib import metadata

    from infra.compute.consumer import RUNTIME

    # THEN both are the ones the contract names (the layer parameter and the local stand-in read the contract)
    assert RUNTIME.name == names.LAMBDA_RUNTIME
    assert metadata.version("aws-lambda-powertools") == names.POWERTOOLS_VERSION


def _one(template: dict[str, Any], type_name: str) -> tuple[str, dict[str, Any]]:
    (found,) = resources(template, type_name).items()
    return found


def _consumer_function(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    (found,) = (
        (k, v)
        for k, v in resources(template, "AWS::Lambda::Function").items()
        if v["Properties"].get("Handler") == "stream_consumer.handler.lambda_handler"
    )
    return found


def test_snapstart_publishes_a_version_that_the_mapping_alias_targets() -> None:
    # GIVEN snapstart=on
    _, template, _ = synth(**STREAM, snapstart="on")
    function_id, function = _consumer_function(template)
    # THEN the function snapshots its published versions, one version is published and deleted when replaced
    assert function["Properties"]["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    version_id, version = _one(template, "AWS::Lambda::Version")
    assert version["Properties"]["FunctionName"] == {"Ref": function_id}
    assert version.get("DeletionPolicy", "Delete") == "Delete"
    # AND the mapping's alias targets that version, never $LATEST (SnapStart does not apply to it)
    alias_id, alias = _one(template, "AWS::Lambda::Alias")
    assert alias["Properties"]["FunctionVersion"] == {"Fn::GetAtt": [version_id, "Version"]}
    _, mapping = _one(template, "AWS::Lambda::EventSourceMapping")
    assert mapping["Properties"]["FunctionName"] == {"Ref": alias_id}
    # AND a change of the function publishes another version (a new logical id: created, then the old deleted)
    _, changed, _ = synth(**STREAM, snapstart="on", memory="1024")
    assert _one(changed, "AWS::Lambda::Version")[0] != version_id


def test_without_snapstart_the_alias_targets_latest_and_nothing_is_published() -> None:
    _, template, _ = synth(**STREAM)
    _, function = _consumer_function(template)
    assert "SnapStart" not in function["Properties"]
    assert resources(template, "AWS::Lambda::Version") == {}
    _, alias = _one(template, "AWS::Lambda::Alias")
    assert alias["Properties"]["FunctionVersion"] == "$LATEST"
