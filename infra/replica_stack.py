"""A replica region's stack of a global table: the built-in consumer reading that region's replica stream, with
blob cleanup off (``BLOB_CLEANUP=off``), and each subscriber that runs in that region (``regions = "all"`` or a
list naming it, contract/subscribers.py): its own function, role, log group, failure bucket, mapping on that
region's replica stream and alarms, in that region (infra/compute/subscribers.py). Its alarms (the consumer's
iterator age and errors, each subscriber's) notify that region's own topic (``AlarmTopicArn``).

Blobs live in one bucket in the home region, and only the home region's consumer deletes: its stream carries
every change, local and replicated, so a replicated REMOVE and a local one are treated alike. A replica region's
consumer proves delivery in its region (``stream_records_received``) and makes no S3 or DynamoDB request.

The replica's stream ARN cannot be had from CloudFormation in another region (aws-cdk issues #16179 and #31335):
it is given in the ``replica_streams`` context, region -> stream ARN, and a region it does not name gets no
stack.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aws_cdk import CfnOutput, CfnResource, Environment, RemovalPolicy, Stack, Tags
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from contract import names
from contract.knobs import REGION_RE, REPLICA_STREAMS_CONTEXT, ConfigError, DocTableConfig
from contract.shape import consumer_shape
from infra.compute.function import consumer_function, consumer_mapping, write_logs
from infra.compute.subscribers import Subscriber, subscriber_id
from infra.compute.subscribers import outputs as subscriber_outputs
from infra.monitoring.alarms import ConsumerAlarms
from infra.monitoring.dashboard import Overview, replica_consumer_reader, subscriber_reader
from infra.synth.checkov import add_skip
from infra.synth.nag import acknowledge

if TYPE_CHECKING:
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_sns as sns

    from contract.subscribers import SubscriberSpec

__all__ = ["REPLICA_STREAMS_CONTEXT", "ReplicaConsumerStack", "replica_stacks", "replica_streams"]
STREAM_READ_ACTIONS = ("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator")


def replica_streams(value: Any, config: DocTableConfig) -> dict[str, str]:
    """The ``replica_streams`` context (a JSON object, as text or parsed) for the replica regions it names;
    ConfigError naming every problem."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ConfigError([f"{REPLICA_STREAMS_CONTEXT}: not JSON ({exc})"]) from None
    if not isinstance(value, dict):
        raise ConfigError([f"{REPLICA_STREAMS_CONTEXT}: expected a JSON object of region -> stream ARN"])
    problems = []
    streams: dict[str, str] = {}
    for region, arn in value.items():
        expected = f":dynamodb:{region}:"
        prefix = f"table/{config.table_name}/stream/"
        if region not in config.replicas:
            problems.append(
                f"{REPLICA_STREAMS_CONTEXT}={region!r} is not a replica region; allowed: "
                f"{', '.join(config.replicas) or 'none (replicas is none)'}"
            )
        elif not (isinstance(arn, str) and REGION_RE.match(region) and expected in arn and prefix in arn):
            problems.append(
                f"{REPLICA_STREAMS_CONTEXT}={region!r} names {arn!r}; allowed: the stream ARN of the replica in "
                f"{region}, arn:aws:dynamodb:{region}:<account>:{prefix}<label>"
            )
        else:
            streams[region] = arn
    if problems:
        raise ConfigError(problems)
    return streams


class ReplicaConsumerStack(Stack):
    """``doctable-<table_base>-<env>-<region>``: the consumer of the replica in ``region``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DocTableConfig,
        region: str,
        stream_arn: str,
        home_region: str,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            description=f"doctable {config.table_name}: the consumer of its replica in {region} (cleanup off)",
            **kwargs,
        )
        removal = RemovalPolicy.RETAIN if config.retain_on_delete else RemovalPolicy.DESTROY
        consumer = Construct(self, names.ID_CONSUMER)
        log_group = logs.LogGroup(
            consumer, "LogGroup", retention=logs.RetentionDays.ONE_MONTH, removal_policy=removal
        )
        role = iam.Role(
            consumer,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"doctable stream consumer of {config.table_name}'s replica in {region}",
        )
        policy = self._role_policy(consumer, role, log_group, stream_arn)
        function = self._function(consumer, config, role, log_group, region)
        # No failure destination: this consumer deletes nothing, so a batch that exhausts its retries holds no
        # cleanup to replay; the home region's mapping keeps its own failed batches.
        mapping = consumer_mapping(
            consumer,
            config,
            function=function,
            function_name=function.function_name,
            source_arn=stream_arn,
            failure_destination=None,
        )
        # Without this edge CloudFormation may create the mapping before the role can read the stream.
        mapping.node.add_dependency(policy)
        self._outputs(function, log_group, mapping, stream_arn)
        # This region's topic: an alarm notifies a topic of its own region, not the home stack's.
        alarms = ConsumerAlarms(
            self, names.ID_ALARMS, config=config, function=function, mapping_uuid=mapping.ref
        )
        CfnOutput(
            self,
            names.OUT_ALARM_TOPIC_ARN,
            value=alarms.topic.topic_arn,
            description=f"Subscribe operators here: the alarms of {region}",
        )
        self.subscribers = [
            self._subscriber(config, spec, region, stream_arn, alarms.topic)
            for spec in config.subscribers
            if spec.runs_in(config.replicas, region)
        ]
        overview = Overview(
            self,
            names.ID_DASHBOARD,
            config=config,
            readers=[
                replica_consumer_reader(config, function.function_name, mapping),
                *(subscriber_reader(config, s) for s in self.subscribers),
            ],
            alarm_arns=[
                alarm.alarm_arn
                for alarm in (*alarms.alarms, *(a for s in self.subscribers for a in s.alarms))
            ],
            home_region=home_region,
        )
        CfnOutput(
            self,
            names.OUT_DASHBOARD_NAME,
            value=overview.dashboard.ref,
            description=f"The CloudWatch dashboard of {region}: the replica, its consumer and subscribers",
        )
        for key, value in config.tags().items():
            Tags.of(self).add(key, value)

    def _subscriber(
        self, config: DocTableConfig, spec: SubscriberSpec, region: str, stream_arn: str, topic: sns.ITopic
    ) -> Subscriber:
        """A subscriber running in this region: on this region's replica (its stream, and its table for the
        ``table`` grants), its outputs named as the home stack's."""
        sid = subscriber_id(spec.name)
        if any(g.resource == "blobs" for g in spec.grants) and not config.blob_bucket:
            raise ConfigError(
                [
                    f"subscriber {spec.name!r} in {region}: a blobs grant in a replica region needs the bucket's "
                    'name (the blobs live in the home region\'s bucket); allowed: blob_bucket = "<name>", or the '
                    'grant in the home region alone (regions = "home")'
                ]
            )
        table = dynamodb.Table.from_table_attributes(
            self, f"Replica{sid}", table_name=config.table_name, table_stream_arn=stream_arn
        )
        blob_bucket = (
            s3.Bucket.from_bucket_name(self, f"SubscriberBlobBucket{sid}", config.blob_bucket)
            if config.blob_bucket
            else None
        )
        subscriber = Subscriber(
            self,
            f"Subscriber{sid}",
            config=config,
            spec=spec,
            table=table,
            blob_bucket=blob_bucket,
            change_stream=None,
            topic=topic,
        )
        for key, (value, what) in subscriber_outputs(subscriber).items():
            CfnOutput(self, key, value=value, description=f"Subscriber {spec.name}'s {what} in {region}")
        return subscriber

    @staticmethod
    def _role_policy(
        consumer: Construct, role: iam.Role, log_group: logs.LogGroup, stream_arn: str
    ) -> iam.Policy:
        """The role's policy: its own log group, and the replica's stream alone."""
        policy = iam.Policy(
            consumer,
            "RolePolicy",
            roles=[role],
            statements=[
                write_logs(log_group),
                iam.PolicyStatement(
                    sid="ReadReplicaStream", actions=list(STREAM_READ_ACTIONS), resources=[stream_arn]
                ),
                iam.PolicyStatement(sid="ListStreams", actions=["dynamodb:ListStreams"], resources=["*"]),
            ],
        )
        acknowledge(
            policy,
            "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            "dynamodb:ListStreams has no resource type; every other stream action is on this replica's own "
            "stream ARN, passed by doctable deploy.",
        )
        return policy

    @staticmethod
    def _function(
        consumer: Construct, config: DocTableConfig, role: iam.Role, log_group: logs.LogGroup, region: str
    ) -> lambda_.Function:
        """The built-in consumer with blob cleanup off."""
        shape = consumer_shape(config)
        assert shape is not None
        function = consumer_function(
            consumer,
            config,
            role=role,
            log_group=log_group,
            environment={
                names.ENV_TABLE_NAME: config.table_name,
                **shape.environment,
                names.ENV_BLOB_CLEANUP: names.ENV_FLAG_OFF,
            },
            description=f"doctable stream consumer of {config.table_name} in {region}: record-level proof, "
            "blob cleanup off (the home region's consumer deletes)",
        )
        cfn_function = function.node.default_child
        assert isinstance(cfn_function, CfnResource)
        add_skip(
            cfn_function,
            "CKV_AWS_116",
            "The consumer is invoked synchronously by its replica stream's event-source mapping, where a function "
            "DLQ never applies; it deletes nothing, so a batch that exhausts its retries holds no cleanup to "
            "replay (the home region's consumer keeps its own failed batches).",
        )
        return function

    def _outputs(
        self,
        function: lambda_.Function,
        log_group: logs.LogGroup,
        mapping: lambda_.CfnEventSourceMapping,
        stream_arn: str,
    ) -> None:
        CfnOutput(
            self, names.OUT_CONSUMER_FUNCTION_NAME, value=function.function_name, description="Consumer"
        )
        CfnOutput(
            self, names.OUT_CONSUMER_LOG_GROUP, value=log_group.log_group_name, description="Proof lines"
        )
        CfnOutput(
            self, names.OUT_MAPPING_UUID, value=mapping.ref, description="The event-source mapping's UUID"
        )
        CfnOutput(self, names.OUT_STREAM_ARN, value=stream_arn, description="The replica's stream")


def replica_stacks(
    scope: Construct,
    config: DocTableConfig,
    streams: Mapping[str, str],
    *,
    account: str | None,
    home_region: str,
    **kwargs: Any,
) -> list[ReplicaConsumerStack]:
    """One stack per replica region ``streams`` names, in the order of ``config.replicas``."""
    return [
        ReplicaConsumerStack(
            scope,
            config.replica_stack_name(region),
            config=config,
            region=region,
            stream_arn=streams[region],
            home_region=home_region,
            stack_name=config.replica_stack_name(region),
            env=Environment(account=account, region=region),
            **kwargs,
        )
        for region in config.replicas
        if region in streams
    ]
