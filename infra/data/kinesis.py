"""Kinesis Data Streams for DynamoDB: the data stream the table writes its changes to (``kinesis`` knob), the
grants of a consumer reading it, and the mapping's filter patterns rewritten for Kinesis records.

`kinesis=on`: an on-demand stream of the stack's own, retained for KINESIS_RETENTION_HOURS, encrypted under the
stack's customer managed key (`encryption=customer-managed`) or else the AWS managed `alias/aws/kinesis`, kept
or deleted with the table. `kinesis=<stream ARN>`: a stream of yours, referenced and never modified.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_kms as kms
from constructs import Construct

from contract import names
from contract.knobs import KINESIS_RETENTION_HOURS, DocTableConfig
from infra.synth.nag import acknowledge

# What a Lambda event-source mapping needs to read one stream with shared throughput, on the stream's ARN alone.
# Not kinesis:ListStreams (no resource type; a mapping given the stream's ARN never calls it), nor
# kinesis:SubscribeToShard, whose resource is an enhanced fan-out consumer, which this mapping does not register.
READ_ACTIONS = (
    "kinesis:DescribeStream",
    "kinesis:DescribeStreamSummary",
    "kinesis:GetRecords",
    "kinesis:GetShardIterator",
    "kinesis:ListShards",
)

# What a mapping reading through an enhanced fan-out consumer adds, on the consumer's ARN: Lambda subscribes each
# shard to it (SubscribeToShard, whose resource type is the consumer) and describes it.
FAN_OUT_ACTIONS = ("kinesis:DescribeStreamConsumer", "kinesis:SubscribeToShard")


def change_stream(scope: Construct, config: DocTableConfig, key: kms.IKey | None) -> kinesis.IStream | None:
    """The stream the table's changes go to; None with kinesis=off."""
    if not config.has_kinesis:
        return None
    borrowed = config.borrowed_kinesis_arn
    if borrowed is not None:
        return kinesis.Stream.from_stream_arn(scope, "BorrowedChangeStream", borrowed)
    stream = kinesis.Stream(
        scope,
        names.ID_KINESIS_STREAM,
        stream_mode=kinesis.StreamMode.ON_DEMAND,
        retention_period=Duration.hours(KINESIS_RETENTION_HOURS),
        encryption=kinesis.StreamEncryption.KMS if key is not None else kinesis.StreamEncryption.MANAGED,
        encryption_key=key,
        # Kept where the table is: the changes of a retained table stay readable until the retention ends.
        removal_policy=RemovalPolicy.RETAIN if config.retain_on_delete else RemovalPolicy.DESTROY,
    )
    if key is not None:
        acknowledge(
            stream,
            "AwsSolutions::AwsSolutions-KDS3",
            "encryption=customer-managed: the table's changes stay under the table's own key, the one the "
            "operator rotates, guards and retains with the table, its streams and its buckets; aws/kinesis "
            "would take them out of that choice.",
        )
    return stream


def read_statements(stream: kinesis.IStream, key: kms.IKey | None) -> list[iam.PolicyStatement]:
    """Read this one stream, and decrypt its records under its customer managed key through Kinesis only."""
    statements = [
        iam.PolicyStatement(sid="ReadChangeStream", actions=list(READ_ACTIONS), resources=[stream.stream_arn])
    ]
    if key is not None:
        statements.append(
            iam.PolicyStatement(
                sid="DecryptChangeStream",
                actions=["kms:Decrypt"],
                resources=[key.key_arn],
                conditions={
                    "StringEquals": {"kms:ViaService": f"kinesis.{Stack.of(stream).region}.amazonaws.com"}
                },
            )
        )
    return statements


def fan_out_statement(consumer_arn: str) -> iam.PolicyStatement:
    """Read through this one enhanced fan-out consumer (its stream's READ_ACTIONS are granted beside it)."""
    return iam.PolicyStatement(
        sid="ReadThroughFanOut", actions=list(FAN_OUT_ACTIONS), resources=[consumer_arn]
    )
