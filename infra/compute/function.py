"""The built-in consumer's function and its event-source mapping, built the same way by the home stack
(infra/compute/consumer.py) and by each replica region's stack (infra/replica_stack.py): one code asset, one set of
options from the knobs."""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from contract import names
from contract.knobs import PROJECT_ROOT, DocTableConfig
from contract.shape import consumer_shape, mapping_shape
from infra.synth.nag import acknowledge
from tooling.asset import TASK_ROOT, compile_tree, compiles_bytecode, stage_package, write_sdk_models

FUNCTIONS_DIR = PROJECT_ROOT / "functions"
# Keyed by Lambda's architecture name, which is the `architecture` knob's value.
ARCHITECTURES = {a.name: a for a in (lambda_.Architecture.ARM_64, lambda_.Architecture.X86_64)}
RUNTIME = lambda_.Runtime.PYTHON_3_13  # names.LAMBDA_RUNTIME (a test checks they agree)


def consumer_function(
    scope: Construct,
    config: DocTableConfig,
    *,
    role: iam.Role,
    log_group: logs.ILogGroup,
    environment: dict[str, str],
    description: str,
) -> lambda_.Function:
    """The consumer's function ("Function" in ``scope``) with the knobs' runtime, memory, timeout, tracing and
    SnapStart, and ``environment`` (the consumer's settings, functions/stream_consumer/settings.py)."""
    layers: list[lambda_.ILayerVersion] = []
    if config.bundles_powertools:
        code = lambda_.Code.from_asset(str(_bundle_with_powertools()), exclude=["**/*.md"])
    else:
        code = lambda_.Code.from_asset(
            str(stage_package(FUNCTIONS_DIR / "stream_consumer", PROJECT_ROOT / "build")),
            exclude=["**/*.md"],
        )
        # An `AWS::SSM::Parameter::Value<String>` template parameter resolves the public layer ARN at
        # deploy time: synth stays offline and the layer always matches the pinned library version.
        layer_arn = ssm.StringParameter.value_for_string_parameter(
            scope, names.powertools_layer_parameter(config.architecture)
        )
        layers.append(lambda_.LayerVersion.from_layer_version_arn(scope, "PowertoolsLayer", layer_arn))
    shape = consumer_shape(config)
    assert shape is not None
    function = lambda_.Function(
        scope,
        "Function",
        description=description,
        runtime=RUNTIME,
        architecture=ARCHITECTURES[shape.architecture],
        handler="stream_consumer.handler.lambda_handler",
        code=code,
        layers=layers,
        role=role,
        memory_size=shape.memory,
        timeout=Duration.seconds(shape.timeout),
        tracing=lambda_.Tracing(shape.tracing.upper()),
        log_group=log_group,
        environment=environment,
        # SnapStart: Lambda runs the init when a version is published and resumes new environments from its
        # snapshot. Each change publishes a version (current_version); the one it replaces is deleted, as
        # every kept version's snapshot is charged for while it exists.
        snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS if shape.snapstart else None,
        current_version_options=lambda_.VersionOptions(removal_policy=RemovalPolicy.DESTROY)
        if shape.snapstart
        else None,
    )
    assert function.role is not None
    acknowledge(
        function.role,
        "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
        "Active tracing: CDK grants xray:PutTraceSegments/PutTelemetryRecords, which have no resource type.",
    )
    acknowledge(
        function,
        "AwsSolutions::AwsSolutions-L1",
        "Python 3.13 is the newest runtime the project's tests run on (the build machines "
        "carry 3.11-3.13); the runtime moves when the test interpreter does.",
    )
    return function


def consumer_mapping(
    scope: Construct,
    config: DocTableConfig,
    *,
    function: lambda_.Function | None,
    function_name: str,
    source_arn: str,
    failure_destination: str | None,
) -> lambda_.CfnEventSourceMapping:
    """The mapping ("Mapping" in ``scope``) from ``source_arn`` to ``function`` (through an alias) or to the
    function named ``function_name``; records that exhaust their retries go to ``failure_destination`` (an S3
    bucket's ARN), or are dropped without one."""
    shape = mapping_shape(config)
    assert shape is not None
    patterns = shape.filter_patterns  # nested under `data` for a mapping on the Kinesis stream
    target = function_name
    if function is not None:
        # Lambda allows one mapping per stream and function ARN (qualifier included), and CloudFormation
        # creates a replacing mapping before it deletes the old one: a mapping replaced on the same stream
        # (a new starting position) would meet a 409. Its function is therefore an alias named after the
        # settings that force a replacement; a new alias comes with the new mapping, and the old mapping
        # and alias are deleted in the cleanup phase.
        # With SnapStart the alias targets the published version (SnapStart never applies to $LATEST).
        alias = lambda_.Alias(
            scope,
            "Alias",
            alias_name="from-" + shape.starting_position.lower().replace("_", "-"),
            version=function.current_version if config.snapstart else function.latest_version,
        )
        target = alias.function_arn
    return lambda_.CfnEventSourceMapping(
        scope,
        "Mapping",
        function_name=target,
        event_source_arn=source_arn,
        starting_position=shape.starting_position,
        batch_size=shape.batch_size,
        maximum_batching_window_in_seconds=shape.batching_window,
        enabled=True,
        bisect_batch_on_function_error=shape.bisect_on_error,
        function_response_types=list(shape.function_response_types),
        maximum_retry_attempts=shape.max_retries,
        maximum_record_age_in_seconds=shape.max_record_age,
        parallelization_factor=shape.parallelization_factor,
        # events=cleanup: Lambda drops the records no pattern matches (not retried, not billed as
        # invocations) and moves past them; verify's nudge is a REMOVE so that it still reaches the consumer.
        filter_criteria=lambda_.CfnEventSourceMapping.FilterCriteriaProperty(
            filters=[lambda_.CfnEventSourceMapping.FilterProperty(pattern=p) for p in patterns]
        )
        if patterns
        else None,
        metrics_config=lambda_.CfnEventSourceMapping.MetricsConfigProperty(metrics=list(shape.metrics))
        if shape.metrics
        else None,
        # S3, not SQS: an S3 destination receives the whole invocation record, records included, so a
        # poison batch can be replayed after the stream has trimmed it (24 h); SQS gets only metadata.
        destination_config=lambda_.CfnEventSourceMapping.DestinationConfigProperty(
            on_failure=lambda_.CfnEventSourceMapping.OnFailureProperty(destination=failure_destination)
        )
        if failure_destination is not None
        else None,
    )


# Powertools' subpackages the consumer never imports (it uses logging and metrics; importing the package loads
# tracing's module, not the X-Ray SDK):
# left out of the bundled asset, where event_handler alone is 2.9 MB of the library's 7 MB.
POWERTOOLS_UNUSED = (
    "event_handler",
    "utilities/auth_alpha",
    "utilities/circuit_breaker",
    "utilities/data_masking",
    "utilities/feature_flags",
    "utilities/idempotency",
    "utilities/kafka",
    "utilities/parameters",
    "utilities/parser",
    "utilities/streaming",
    "utilities/validation",
)
SKIPPED_FILES = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.c")


def _bundle_with_powertools() -> Path:
    """Stage the handler beside Powertools, from this environment (no Docker).

    Staged once per content under build/ (the sources', Powertools' and the interpreter's digest in the name)
    and moved into place whole, so concurrent synths (the test workers') never see a half-written stage."""
    import aws_lambda_powertools
    import typing_extensions

    powertools = Path(aws_lambda_powertools.__file__).parent
    digest = hashlib.sha256(f"{sys.version_info[:2]}|{compiles_bytecode()}|{POWERTOOLS_UNUSED}".encode())
    for root in (FUNCTIONS_DIR, powertools):
        for path in sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    digest.update(Path(typing_extensions.__file__).read_bytes())
    build = PROJECT_ROOT / "build"
    stage = build / f"consumer-bundled-{digest.hexdigest()[:16]}"
    if stage.is_dir():
        return stage
    build.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".consumer-bundled-", dir=build))
    shutil.copytree(FUNCTIONS_DIR, scratch, ignore=SKIPPED_FILES, dirs_exist_ok=True)
    write_sdk_models(scratch / "stream_consumer")
    if compiles_bytecode():
        compile_tree(scratch / "stream_consumer", f"{TASK_ROOT}/stream_consumer")
    unused = {powertools / part for part in POWERTOOLS_UNUSED}

    def skip(directory: str, entries: list[str]) -> set[str]:
        return set(SKIPPED_FILES(directory, entries)) | {e for e in entries if Path(directory, e) in unused}

    shutil.copytree(powertools, scratch / "aws_lambda_powertools", ignore=skip)
    shutil.copy2(typing_extensions.__file__, scratch / "typing_extensions.py")
    try:
        scratch.rename(stage)
    except OSError:  # another synth staged the same content first
        shutil.rmtree(scratch, ignore_errors=True)
    return stage


# ---------------------------------------------------------------------------------- a stream reader's role
def write_logs(log_group: logs.ILogGroup) -> iam.PolicyStatement:
    """A function's own log group, and nothing else of CloudWatch Logs."""
    return iam.PolicyStatement(
        sid="WriteOwnLogs",
        actions=["logs:CreateLogStream", "logs:PutLogEvents"],
        resources=[log_group.log_group_arn],
    )


def keep_failures(failure_bucket: s3.IBucket) -> list[iam.PolicyStatement]:
    """Lambda writes a mapping's failed batches with the function's role: under aws/lambda/ of its own bucket."""
    return [
        iam.PolicyStatement(
            sid="KeepFailedBatches",
            actions=["s3:PutObject"],
            resources=[failure_bucket.arn_for_objects("aws/lambda/*")],
        ),
        iam.PolicyStatement(
            sid="LocateFailureBucket", actions=["s3:ListBucket"], resources=[failure_bucket.bucket_arn]
        ),
    ]


def stream_reads(stream_arn: str) -> list[iam.PolicyStatement]:
    """Read one DynamoDB stream (ListStreams has no resource type)."""
    return [
        iam.PolicyStatement(
            sid="ReadOwnStream",
            actions=["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"],
            resources=[stream_arn],
        ),
        iam.PolicyStatement(sid="ListStreams", actions=["dynamodb:ListStreams"], resources=["*"]),
    ]
