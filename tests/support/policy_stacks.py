"""The stacks the policy tests (tests/integration/test_policies*.py) run against, and what the administrator
changes on them for a command to act on: drift behind the stack for reconcile, batches kept on the failure
destination for replay.

A :class:`Shape` is what a module deploys: its knobs for the environment whose stack the commands run against,
and those of a second environment whose stack exists only while the teardown scenario runs (deployed by the
administrator, torn down by the principal). One module per shape proves the statements that shape's knobs add
(a customer managed key, Kinesis, replicas) by the same runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tests.support import localaws as lt


@dataclass(frozen=True)
class Shape:
    """The stacks a policy module deploys: ``knobs`` for ``env``, ``other`` for ``other_env``."""

    knobs: dict[str, str]
    other: dict[str, str]
    env: str = "dev"
    other_env: str = "stg"

    @property
    def base(self) -> str:
        return self.knobs["table_base"]

    @property
    def kinesis(self) -> bool:
        return self.knobs.get("kinesis", "off") != "off"

    @property
    def replicas(self) -> list[str]:
        return [r for r in self.knobs.get("replicas", "").split(",") if r]


@dataclass(frozen=True)
class Stack:
    """The stack the commands run against: its name and outputs (home region)."""

    name: str
    outputs: dict[str, str]


# The plain shape: the stream, the built-in consumer, an index, TTL and PITR; its second environment has the
# stream and the consumer, so the teardown it sweeps has buckets, a role, a log group and a mapping to empty and
# probe.
PLAIN = Shape(
    knobs={
        "table_base": "itpol",
        "gsi": "gsi1",
        "ttl": "on",
        "pitr": "on",
        "stream": "new-and-old",
        "blob_root": "blobs/",
    },
    other={"table_base": "itpol", "stream": "new-and-old"},
)
# The keyed shape adds what adds statements: a customer managed key and the table streaming to Kinesis (the
# consumer still reads the DynamoDB stream); its second environment's table is protected, so the teardown it
# sweeps lifts the protection. Its stack names share no 14-character prefix with the plain shape's,
# so their generated bucket names differ (contract/iam/target.py GENERATED_BUCKET_STACK_CHARS).
KEYED_KNOBS = {"encryption": "customer-managed", "kinesis": "on"}
KEYED = Shape(
    knobs={**PLAIN.knobs, "table_base": "itkms", **KEYED_KNOBS},
    other={"table_base": "itkms", "stream": "new-and-old", "deletion_protection": "on", **KEYED_KNOBS},
)

# The global shape: the table replicated to a second region, whose consumer stack reads the replica's stream;
# its second environment is protected, each replica too.
REPLICA_REGION = "us-west-2"
GLOBAL = Shape(
    knobs={
        "table_base": "itglo",
        "stream": "new-and-old",
        "pitr": "on",
        "blob_root": "blobs/",
        "replicas": REPLICA_REGION,
    },
    other={
        "table_base": "itglo",
        "stream": "new-and-old",
        "deletion_protection": "on",
        "replicas": REPLICA_REGION,
    },
)


# ---------------------------------------------------------------------------------------------- changes
@dataclass
class Context:
    aws: lt.LocalAWS
    stack: Stack
    admin_env: dict[str, str]
    shape: Shape
    # what a scenario's last run observed, for the success test's own assertions
    seen: dict[str, Any] = field(default_factory=dict)


# Each runs one command as the principal (its environment variables) and returns what it said.


def regional(aws: lt.LocalAWS, service: str, region: str) -> Any:
    """A client of ``service`` in ``region`` as the administrator."""
    return aws.client(service, region=region)


def _kinesis_destination(aws: lt.LocalAWS, table: str) -> dict[str, Any]:
    found = aws.client("dynamodb").describe_kinesis_streaming_destination(TableName=table)
    destinations: list[dict[str, Any]] = found["KinesisDataStreamDestinations"]
    return destinations[0] if destinations else {}


def drift(ctx: Context) -> None:
    """Change behind the stack what reconcile restores: PITR, a table tag, the mapping's batch size (declared + 1),
    a mapping tag; with Kinesis, the table's streaming to it (disabled)."""
    aws, outputs = ctx.aws, ctx.stack.outputs
    ddb, lam = aws.client("dynamodb"), aws.client("lambda")
    table, uuid = outputs["TableName"], outputs["EventSourceMappingUuid"]
    ddb.update_continuous_backups(
        TableName=table, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
    )
    ddb.untag_resource(ResourceArn=outputs["TableArn"], TagKeys=["Environment"])
    declared = lam.get_event_source_mapping(UUID=uuid)["BatchSize"]
    mapping = lam.update_event_source_mapping(UUID=uuid, BatchSize=declared + 1)
    lam.untag_resource(Resource=mapping["EventSourceMappingArn"], TagKeys=["Environment"])
    for region in ctx.shape.replicas:  # each replica's PITR, restored there
        regional(aws, "dynamodb", region).update_continuous_backups(
            TableName=table, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
        )
    if ctx.shape.kinesis:
        stream = _kinesis_destination(aws, table)["StreamArn"]
        ddb.disable_kinesis_streaming_destination(TableName=table, StreamArn=stream)
        lt.wait_for(
            lambda: _kinesis_destination(aws, table).get("DestinationStatus") == "DISABLED",
            timeout=60,
            what="the Kinesis destination disabled",
        )


def drifted(ctx: Context) -> list[str]:
    """What of :func:`drift` is drifted now."""
    aws, outputs, env = ctx.aws, ctx.stack.outputs, ctx.shape.env
    ddb, lam = aws.client("dynamodb"), aws.client("lambda")
    table, uuid = outputs["TableName"], outputs["EventSourceMappingUuid"]
    left = []
    backups = ddb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
    if backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] != "ENABLED":
        left.append("pitr")
    tags = ddb.list_tags_of_resource(ResourceArn=outputs["TableArn"])["Tags"]
    if {t["Key"]: t["Value"] for t in tags}.get("Environment") != env:
        left.append("table tag")
    mapping = lam.get_event_source_mapping(UUID=uuid)
    declared = json.loads(lt.stack_outputs(aws, ctx.stack.name)["Knobs"])["batch_size"]  # as last deployed
    if mapping["BatchSize"] != int(declared):
        left.append("batch size")
    if lam.list_tags(Resource=mapping["EventSourceMappingArn"])["Tags"].get("Environment") != env:
        left.append("mapping tag")
    for region in ctx.shape.replicas:
        replica = regional(aws, "dynamodb", region).describe_continuous_backups(TableName=table)
        if replica["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"][
            "PointInTimeRecoveryStatus"
        ] != ("ENABLED"):
            left.append(f"pitr ({region})")
    if ctx.shape.kinesis and _kinesis_destination(aws, table).get("DestinationStatus") not in (
        "ACTIVE",
        "ENABLING",
    ):
        left.append("kinesis destination")
    return left


def _keep(ctx: Context, key: str, body: dict[str, Any]) -> None:
    ctx.aws.client("s3").put_object(
        Bucket=ctx.stack.outputs["FailureBucketName"],
        Key=f"aws/lambda/{ctx.shape.base}/{key}.json",
        Body=json.dumps(body).encode(),
    )


def kept_batch(ctx: Context, key: str) -> None:
    """A batch kept on the failure bucket with its payload (one REMOVE that listed a blob)."""
    outputs, blob_root = ctx.stack.outputs, ctx.shape.knobs["blob_root"]
    record = {
        "eventID": "replayed-1",
        "eventName": "REMOVE",
        "eventSource": "aws:dynamodb",
        "eventSourceARN": outputs["StreamArn"],
        "awsRegion": lt.REGION,
        "dynamodb": {
            "Keys": {"pk": {"S": "replayed"}, "sk": {"S": key}},
            "OldImage": {
                "pk": {"S": "replayed"},
                "sk": {"S": key},
                "blobs": {"L": [{"S": f"{blob_root}replayed/{key}.bin"}]},
            },
            "SequenceNumber": "1",
            "ApproximateCreationDateTime": 1_700_000_000,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }
    payload = json.dumps({"Records": [record]})
    _keep(ctx, key, {"requestContext": {"condition": "RetryAttemptsExhausted"}, "payload": payload})


def kept_batch_info(ctx: Context, key: str) -> None:
    """A batch kept without its payload (Lambda keeps only DDBStreamBatchInfo then): the stream range of one
    INSERT written now, which replay re-reads from the stream."""
    outputs = ctx.stack.outputs
    ddb, streams = ctx.aws.client("dynamodb"), ctx.aws.client("dynamodbstreams")
    ddb.put_item(TableName=outputs["TableName"], Item={"pk": {"S": "replayed"}, "sk": {"S": key}})
    shard = streams.describe_stream(StreamArn=outputs["StreamArn"])["StreamDescription"]["Shards"][-1]
    iterator = streams.get_shard_iterator(
        StreamArn=outputs["StreamArn"], ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    records = streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]
    sequence = records[-1]["dynamodb"]["SequenceNumber"]
    info = {
        "streamArn": outputs["StreamArn"],
        "shardId": shard["ShardId"],
        "startSequenceNumber": sequence,
        "endSequenceNumber": sequence,
        "batchSize": 1,
    }
    _keep(ctx, key, {"requestContext": {"condition": "RetryAttemptsExhausted"}, "DDBStreamBatchInfo": info})
