"""The stream consumer: blob bucket, failure bucket, least-privilege role, function, and the tagged mapping."""

from __future__ import annotations

from aws_cdk import CfnElement, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis_
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from contract import names
from contract.knobs import DocTableConfig
from contract.shape import consumer_shape
from infra.compute.function import (
    RUNTIME,
    consumer_function,
    consumer_mapping,
    keep_failures,
    stream_reads,
    write_logs,
)
from infra.data import encryption, kinesis
from infra.data.buckets import private_bucket
from infra.synth.nag import acknowledge

__all__ = ["RUNTIME", "StreamConsumer"]


class StreamConsumer(Construct):
    """Wires the table's stream (its DynamoDB stream, or the Kinesis data stream with consumer_source=kinesis) to
    the built-in consumer (or a borrowed function) with AWS's retry semantics."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DocTableConfig,
        table: dynamodb.ITable,
        change_stream: kinesis_.IStream | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.source_arn = self._source_arn(config, table, change_stream)
        self._change_stream = change_stream if config.reads_kinesis else None
        removal = RemovalPolicy.RETAIN if config.retain_on_delete else RemovalPolicy.DESTROY
        # The buckets follow the table's encryption (infra/data/encryption.py), under its customer managed key if any.
        self._bucket_encryption = encryption.bucket_encryption(config)
        self._key = table.encryption_key
        self.failure_bucket = self._build_bucket(
            "FailureBucket", removal, self._bucket_name(config, names.FAILURE_BUCKET_SUFFIX)
        )
        self.blob_bucket: s3.IBucket | None = None
        self.function: lambda_.Function | None = None
        self.log_group: logs.LogGroup | None = None
        policy: iam.Policy | None = None
        if config.builtin_consumer:
            policy = self._build_builtin(config, table, removal)
            assert self.function is not None
            target_function_name = self.function.function_name
        else:
            assert config.borrowed_consumer_arn is not None
            target_function_name = config.borrowed_consumer_arn
        self.mapping = consumer_mapping(
            self,
            config,
            function=self.function,
            function_name=target_function_name,
            source_arn=self.source_arn,
            failure_destination=self.failure_bucket.bucket_arn,
        )
        if policy is not None:
            # Without this edge CloudFormation may create the mapping before the role can read the stream.
            self.mapping.node.add_dependency(policy)

    @staticmethod
    def _source_arn(
        config: DocTableConfig, table: dynamodb.ITable, change_stream: kinesis_.IStream | None
    ) -> str:
        """The ARN the mapping reads: the Kinesis data stream's (consumer_source=kinesis), else the table's
        stream's."""
        if config.reads_kinesis:
            assert change_stream is not None
            return change_stream.stream_arn
        assert table.table_stream_arn is not None
        return table.table_stream_arn

    def _build_builtin(
        self, config: DocTableConfig, table: dynamodb.ITable, removal: RemovalPolicy
    ) -> iam.Policy:
        """The built-in consumer: its blob bucket (or the borrowed one), log group, role and function. Returns
        the role's policy, which the mapping waits on."""
        self.blob_bucket = (
            s3.Bucket.from_bucket_name(self, "BorrowedBlobBucket", config.blob_bucket)
            if config.blob_bucket
            else self._build_bucket(
                "BlobBucket", removal, self._bucket_name(config, names.BLOB_BUCKET_SUFFIX)
            )
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
        shape = consumer_shape(config)
        assert shape is not None
        self.function = consumer_function(
            self,
            config,
            role=role,
            log_group=self.log_group,
            environment=shape.with_names(self.blob_bucket.bucket_name, table.table_name),
            description=f"doctable stream consumer of {config.table_name}: blob cleanup + record-level proof",
        )
        return policy

    # ---------------------------------------------------------------------------------------------- buckets
    def _bucket_name(self, config: DocTableConfig, suffix: str) -> str | None:
        """The bucket's exact name (bucket_names=exact), else None: CloudFormation generates one. An
        environment-agnostic stack's account and region are the AWS::AccountId and AWS::Region pseudo parameters."""
        if not config.exact_bucket_names:
            return None
        stack = Stack.of(self)
        return names.bucket_name(config.table_name, stack.account, stack.region, suffix)

    def _build_bucket(self, construct_id: str, removal: RemovalPolicy, bucket_name: str | None) -> s3.Bucket:
        return private_bucket(
            self,
            construct_id,
            removal=removal,
            bucket_name=bucket_name,
            encryption=self._bucket_encryption,
            key=self._key,
            audit_reason="Object-level audit is CloudTrail data events' job; a third bucket for server access "
            "logs per environment would cost more than the blobs it audits.",
        )

    # ------------------------------------------------------------------------------------------------ role
    def _build_policy(self, config: DocTableConfig, role: iam.Role, table: dynamodb.ITable) -> iam.Policy:
        """One statement per resource; the two `*` statements are for actions that have no resource type."""
        policy = iam.Policy(self, "RolePolicy", statements=self._role_statements(config, table), roles=[role])
        self._acknowledge_role_findings(config, policy)
        return policy

    def _role_statements(self, config: DocTableConfig, table: dynamodb.ITable) -> list[iam.PolicyStatement]:
        assert self.blob_bucket is not None and self.log_group is not None
        blob_objects = self.blob_bucket.arn_for_objects(f"{config.blob_root}*")
        statements = [
            write_logs(self.log_group),
            *self._source_statements(),
            # GetObject: the HEAD that observes a dropped blob's ETag and LastModified, which a conditional delete
            # with an ETag needs besides DeleteObject. With blob_key_reuse=never nothing is observed.
            iam.PolicyStatement(
                sid="DeleteBlobs",
                actions=["s3:DeleteObject", "s3:GetObject"]
                if config.guards_key_reuse
                else ["s3:DeleteObject"],
                resources=[blob_objects],
            ),
            *keep_failures(self.failure_bucket),
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
        return statements

    def _source_statements(self) -> list[iam.PolicyStatement]:
        """Read the stream the mapping reads, and nothing else."""
        if self._change_stream is not None:
            # The Kinesis data stream alone; no DynamoDB stream action (with stream=none there is none to read).
            return kinesis.read_statements(self._change_stream, self._change_stream.encryption_key)
        return stream_reads(self.source_arn)

    def _acknowledge_role_findings(self, config: DocTableConfig, policy: iam.Policy) -> None:
        """cdk-nag's wildcard findings on the role's policy, each with why it is the narrowest grant."""
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
                f"Resource::{self._blob_bucket_nag_arn(config)}/{config.blob_root}*",
                "DeleteObject (and with blob_key_reuse=guarded GetObject, for the HEAD a conditional delete "
                "needs) must reach any blob key a record lists under the blob root; the handler refuses keys "
                "outside the record's own <pk>/<sk>/ prefix.",
            ),
            (
                f"Resource::{self._nag_arn(self.failure_bucket)}/aws/lambda/*",
                "Lambda names failed-batch objects itself, always under "
                "aws/lambda/<mapping>/ in the failure bucket.",
            ),
        ):
            acknowledge(policy, f"AwsSolutions::AwsSolutions-IAM5[{finding}]", reason)

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
        blob_arn = self._blob_bucket_nag_arn(config)
        acknowledge(
            policy,
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{blob_arn}/{config.blob_root}*]",
            "An application writes each blob under a fresh key in its record's <pk>/<sk>/ prefix below the blob "
            "root: the keys are made at write time, so the grant is the blob root's objects, nothing else.",
        )

    # ------------------------------------------------------------------------------------------ cdk-nag ARNs
    def _blob_bucket_nag_arn(self, config: DocTableConfig) -> str:
        """The blob bucket's ARN as cdk-nag spells it in a finding: a borrowed bucket's by its name, this
        stack's by its logical id."""
        assert self.blob_bucket is not None
        if config.blob_bucket:
            return f"arn:<AWS::Partition>:s3:::{config.blob_bucket}"
        return self._nag_arn(self.blob_bucket)

    @staticmethod
    def _nag_arn(bucket: s3.IBucket) -> str:
        """An ARN of a bucket of this stack as cdk-nag spells it in a finding: ``<LogicalId.Arn>``."""
        child = bucket.node.default_child
        assert isinstance(child, CfnElement)
        stack = Stack.of(child)
        return f"<{stack.resolve(stack.get_logical_id(child))}.Arn>"
