"""The stream consumer: blob bucket, failure bucket, least-privilege role, function, and the tagged mapping."""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

from aws_cdk import CfnElement, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis_
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from contract import names
from contract.asset import TASK_ROOT, compile_tree, compiles_bytecode, stage_package, write_sdk_models
from contract.knobs import PROJECT_ROOT, DocTableConfig
from contract.shape import consumer_shape, mapping_shape
from infra import encryption, kinesis
from infra.nag import acknowledge

FUNCTIONS_DIR = PROJECT_ROOT / "functions"
# Keyed by Lambda's architecture name, which is the `architecture` knob's value.
ARCHITECTURES = {a.name: a for a in (lambda_.Architecture.ARM_64, lambda_.Architecture.X86_64)}
RUNTIME = lambda_.Runtime.PYTHON_3_13  # names.LAMBDA_RUNTIME (a test checks they agree)


class StreamConsumer(Construct):
    """Wires the table's stream (its DynamoDB stream, or the Kinesis data stream with consumer_source=kinesis) to
    the built-in consumer (or a borrowed function) with AWS's retry semantics."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DocTableConfig,
        table: dynamodb.Table,
        change_stream: kinesis_.IStream | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        if config.reads_kinesis:
            assert change_stream is not None
            self.source_arn = change_stream.stream_arn
        else:
            assert table.table_stream_arn is not None
            self.source_arn = table.table_stream_arn
        self._change_stream = change_stream if config.reads_kinesis else None
        removal = RemovalPolicy.RETAIN if config.retain_on_delete else RemovalPolicy.DESTROY
        # The buckets follow the table's encryption (infra/encryption.py), under its customer managed key if any.
        self._bucket_encryption = encryption.bucket_encryption(config)
        self._key = table.encryption_key
        self.failure_bucket = self._build_bucket("FailureBucket", removal)
        self.blob_bucket: s3.IBucket | None = None
        self.function: lambda_.Function | None = None
        self.log_group: logs.LogGroup | None = None
        policy: iam.Policy | None = None
        if config.builtin_consumer:
            self.blob_bucket = (
                s3.Bucket.from_bucket_name(self, "BorrowedBlobBucket", config.blob_bucket)
                if config.blob_bucket
                else self._build_bucket("BlobBucket", removal)
            )
            self.log_group = logs.LogGroup(
                self, "LogGroup", retention=logs.RetentionDays.ONE_MONTH, removal_policy=removal
            )
            role = iam.Role(
                self,
                "Role",
                assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                description=f"doctable stream consumer of {config.table_name}",
            )
            policy = self._build_policy(config, role, table)
            self.function = self._build_function(config, role, table)
            target_function_name = self.function.function_name
        else:
            assert config.borrowed_consumer_arn is not None
            target_function_name = config.borrowed_consumer_arn
        self.mapping = self._build_mapping(config, table, target_function_name, policy)

    # ---------------------------------------------------------------------------------------------- buckets
    def _build_bucket(self, construct_id: str, removal: RemovalPolicy) -> s3.Bucket:
        bucket = s3.Bucket(
            self,
            construct_id,
            encryption=self._bucket_encryption,
            encryption_key=self._key,
            # One data key per bucket instead of a KMS request per object (a no-op with S3-managed keys).
            bucket_key_enabled=self._bucket_encryption != s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            removal_policy=removal,
        )
        acknowledge(
            bucket,
            "AwsSolutions::AwsSolutions-S1",
            "Object-level audit is CloudTrail data events' job; a third bucket for server access "
            "logs per environment would cost more than the blobs it audits.",
        )
        return bucket

    # ------------------------------------------------------------------------------------------------ role
    def _build_policy(self, config: DocTableConfig, role: iam.Role, table: dynamodb.Table) -> iam.Policy:
        """One statement per resource; the two `*` statements are for actions that have no resource type."""
        assert self.blob_bucket is not None and self.log_group is not None
        blob_objects = self.blob_bucket.arn_for_objects(f"{config.blob_root}*")
        if self._change_stream is not None:
            # The Kinesis data stream alone; no DynamoDB stream action (with stream=none there is none to read).
            source = kinesis.read_statements(self._change_stream, self._change_stream.encryption_key)
        else:
            source = [
                iam.PolicyStatement(
                    sid="ReadOwnStream",
                    actions=["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"],
                    resources=[self.source_arn],
                ),
                iam.PolicyStatement(sid="ListStreams", actions=["dynamodb:ListStreams"], resources=["*"]),
            ]
        statements = [
            iam.PolicyStatement(
                sid="WriteOwnLogs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn],
            ),
            *source,
            # GetObject: the HEAD that observes a dropped blob's ETag and LastModified, which a conditional delete
            # with an ETag needs besides DeleteObject. With blob_key_reuse=never nothing is observed.
            iam.PolicyStatement(
                sid="DeleteBlobs",
                actions=["s3:DeleteObject", "s3:GetObject"]
                if config.guards_key_reuse
                else ["s3:DeleteObject"],
                resources=[blob_objects],
            ),
            iam.PolicyStatement(
                sid="KeepFailedBatches",
                actions=["s3:PutObject"],
                resources=[self.failure_bucket.arn_for_objects("aws/lambda/*")],
            ),
            iam.PolicyStatement(
                sid="LocateFailureBucket",
                actions=["s3:ListBucket"],
                resources=[self.failure_bucket.bucket_arn],
            ),
        ]
        if config.guards_key_reuse:
            # The records' current items, read (consistently) before a blob is deleted: a key an item lists is kept.
            statements.append(
                iam.PolicyStatement(
                    sid="ReadLiveItems", actions=["dynamodb:BatchGetItem"], resources=[table.table_arn]
                )
            )
        if self._key is not None:
            # Stream records and items are read under the table's key; the on-failure destination writes objects
            # under it (S3 SSE-KMS). The key alone, and only through DynamoDB or S3.
            statements.append(
                encryption.key_statement("UseTableKey", self._key, write=True, services=("dynamodb", "s3"))
            )
        if config.blob_prefix_cleanup:
            statements.append(
                iam.PolicyStatement(
                    sid="ListRecordPrefixes",
                    actions=["s3:ListBucket"],
                    resources=[self.blob_bucket.bucket_arn],
                    conditions={"StringLike": {"s3:prefix": [f"{config.blob_root}*"]}},
                )
            )
        policy = iam.Policy(self, "RolePolicy", statements=statements, roles=[role])
        stack = Stack.of(self)
        blob_arn = (
            f"arn:<AWS::Partition>:s3:::{config.blob_bucket}"
            if config.blob_bucket
            else f"<{stack.resolve(stack.get_logical_id(self._cfn(self.blob_bucket)))}.Arn>"
        )
        failure_arn = f"<{stack.resolve(stack.get_logical_id(self._cfn(self.failure_bucket)))}.Arn>"
        findings = (
            [
                (
                    "Resource::*",
                    "dynamodb:ListStreams has no resource type; every other stream action is on the "
                    "table's own stream ARN.",
                )
            ]
            if self._change_stream is None
            else []
        )
        for finding, reason in (
            *findings,
            (
                f"Resource::{blob_arn}/{config.blob_root}*",
                "DeleteObject (and with blob_key_reuse=guarded GetObject, for the HEAD a conditional delete "
                "needs) must reach any blob key a record lists under the blob root; the handler refuses keys "
                "outside the record's own <pk>/<sk>/ prefix.",
            ),
            (
                f"Resource::{failure_arn}/aws/lambda/*",
                "Lambda names failed-batch objects itself, always under "
                "aws/lambda/<mapping>/ in the failure bucket.",
            ),
        ):
            acknowledge(policy, f"AwsSolutions::AwsSolutions-IAM5[{finding}]", reason)
        return policy

    def grant_application_blobs(self, config: DocTableConfig, policy: iam.ManagedPolicy) -> None:
        """The application's side of the data contract on the runtime policy: upload, read and remove blobs
        under the blob root (doctable.client puts each blob under a fresh key in its record's prefix, reads it
        back, and removes its own uploads when the item write fails)."""
        assert self.blob_bucket is not None
        policy.add_statements(
            iam.PolicyStatement(
                sid="ApplicationBlobs",
                actions=["s3:PutObject", "s3:GetObject", "s3:DeleteObject"],
                resources=[self.blob_bucket.arn_for_objects(f"{config.blob_root}*")],
            )
        )
        stack = Stack.of(self)
        blob_arn = (
            f"arn:<AWS::Partition>:s3:::{config.blob_bucket}"
            if config.blob_bucket
            else f"<{stack.resolve(stack.get_logical_id(self._cfn(self.blob_bucket)))}.Arn>"
        )
        acknowledge(
            policy,
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{blob_arn}/{config.blob_root}*]",
            "An application writes each blob under a fresh key in its record's <pk>/<sk>/ prefix below the blob "
            "root: the keys are made at write time, so the grant is the blob root's objects, nothing else.",
        )

    @staticmethod
    def _cfn(bucket: s3.IBucket) -> CfnElement:
        child = bucket.node.default_child
        assert isinstance(child, CfnElement)
        return child

    # -------------------------------------------------------------------------------------------- function
    def _build_function(
        self, config: DocTableConfig, role: iam.Role, table: dynamodb.Table
    ) -> lambda_.Function:
        assert self.blob_bucket is not None and self.log_group is not None
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
                self, names.powertools_layer_parameter(config.architecture)
            )
            layers.append(lambda_.LayerVersion.from_layer_version_arn(self, "PowertoolsLayer", layer_arn))
        shape = consumer_shape(config)
        assert shape is not None
        function = lambda_.Function(
            self,
            "Function",
            description=f"doctable stream consumer of {config.table_name}: blob cleanup + record-level proof",
            runtime=RUNTIME,
            architecture=ARCHITECTURES[shape.architecture],
            handler="stream_consumer.handler.lambda_handler",
            code=code,
            layers=layers,
            role=role,
            memory_size=shape.memory,
            timeout=Duration.seconds(shape.timeout),
            tracing=lambda_.Tracing(shape.tracing.upper()),
            log_group=self.log_group,
            environment=shape.with_names(self.blob_bucket.bucket_name, table.table_name),
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

    # --------------------------------------------------------------------------------------------- mapping
    def _build_mapping(
        self,
        config: DocTableConfig,
        table: dynamodb.Table,
        function_name: str,
        policy: iam.Policy | None,
    ) -> lambda_.CfnEventSourceMapping:
        shape = mapping_shape(config)
        assert shape is not None
        patterns = shape.filter_patterns  # nested under `data` for a mapping on the Kinesis stream
        target = function_name
        if self.function is not None:
            # Lambda allows one mapping per stream and function ARN (qualifier included), and CloudFormation
            # creates a replacing mapping before it deletes the old one: a mapping replaced on the same stream
            # (a new starting position) would meet a 409. Its function is therefore an alias named after the
            # settings that force a replacement; a new alias comes with the new mapping, and the old mapping
            # and alias are deleted in the cleanup phase.
            # With SnapStart the alias targets the published version (SnapStart never applies to $LATEST).
            alias = lambda_.Alias(
                self,
                "Alias",
                alias_name="from-" + shape.starting_position.lower().replace("_", "-"),
                version=self.function.current_version if config.snapstart else self.function.latest_version,
            )
            target = alias.function_arn
        mapping = lambda_.CfnEventSourceMapping(
            self,
            "Mapping",
            function_name=target,
            event_source_arn=self.source_arn,
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
                on_failure=lambda_.CfnEventSourceMapping.OnFailureProperty(
                    destination=self.failure_bucket.bucket_arn
                )
            ),
        )
        if policy is not None:
            # Without this edge CloudFormation may create the mapping before the role can read the stream.
            mapping.node.add_dependency(policy)
        return mapping


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
