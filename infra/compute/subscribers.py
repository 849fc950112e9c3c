"""A team's own stream consumers (contract/subscribers.py): each subscriber its own function running doctable's
wrapper (functions/subscriber_runtime/) around the team's handler, its own role holding only its grants and its
source's read actions, its own log group, its own tagged event-source mapping with its filters, its own failure
bucket (Lambda writes failed batches under ``aws/lambda/<mapping uuid>/``, unknown at synth, so a prefix of a
shared bucket could not keep one subscriber's role out of another's), and its alarms. On a global table, the
home stack holds the subscribers that run in the home region, each replica region's stack those that run there,
each on its own region's replica stream (contract/subscribers.py ``regions``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import CfnElement, Duration, RemovalPolicy, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis_
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from contract import names
from contract.knobs import PROJECT_ROOT, ConfigError, DocTableConfig
from contract.shape import subscriber_mapping_shape, subscriber_options
from contract.subscribers import SubscriberSpec, fan_out_consumer_name, fans_out
from infra.compute.function import ARCHITECTURES, RUNTIME, keep_failures, stream_reads, write_logs
from infra.data import encryption, kinesis
from infra.data.buckets import private_bucket
from infra.synth.nag import acknowledge
from tooling import wheelhouse
from tooling.asset import stage_subscriber

ITERATOR_AGE_MS = 10 * 60 * 1000
RUNTIME_PACKAGE = PROJECT_ROOT / "functions" / names.SUBSCRIBER_RUNTIME_PACKAGE


def _nag_arn(resource: Any) -> str:
    """An ARN of a resource of this stack as cdk-nag spells it in a finding: ``<LogicalId.Arn>``."""
    child = resource.node.default_child
    assert isinstance(child, CfnElement)
    stack = Stack.of(child)
    return f"<{stack.resolve(stack.get_logical_id(child))}.Arn>"


def _nag_replica_arn(scope: Construct, table: dynamodb.ITable) -> str:
    """A replica table's ARN (a table this stack names, not one it makes) as cdk-nag spells it in a finding."""
    stack = Stack.of(scope)
    account = "<AWS::AccountId>" if Token.is_unresolved(stack.account) else stack.account
    region = "<AWS::Region>" if Token.is_unresolved(stack.region) else stack.region
    return f"arn:<AWS::Partition>:dynamodb:{region}:{account}:table/{table.table_name}"


def subscriber_id(name: str) -> str:
    """A subscriber's construct id (contract.names.subscriber_id: its outputs' too)."""
    return names.subscriber_id(name)


class Subscriber(Construct):
    """One subscriber: bucket, log group, role, function, mapping and alarms."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DocTableConfig,
        spec: SubscriberSpec,
        table: dynamodb.ITable,
        blob_bucket: s3.IBucket | None,
        change_stream: kinesis_.IStream | None,
        topic: sns.ITopic | None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.spec = spec
        tuned = subscriber_options(config, spec)
        removal = RemovalPolicy.RETAIN if config.retain_on_delete else RemovalPolicy.DESTROY
        self.failure_bucket = self._bucket(config, removal)
        self.log_group = logs.LogGroup(
            self, "LogGroup", retention=logs.RetentionDays.ONE_MONTH, removal_policy=removal
        )
        self.fan_out: kinesis_.CfnStreamConsumer | None = None
        if spec.reads_kinesis and fans_out(config.subscribers, config.reads_kinesis):
            assert change_stream is not None
            self.fan_out = kinesis_.CfnStreamConsumer(
                self,
                "FanOut",
                consumer_name=fan_out_consumer_name(Stack.of(self).stack_name, spec.name),
                stream_arn=change_stream.stream_arn,
            )
        self.source_arn = (
            self.fan_out.attr_consumer_arn
            if self.fan_out is not None
            else self._source_arn(spec, table, change_stream)
        )
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"doctable subscriber {spec.name} of {config.table_name}",
        )
        policy = iam.Policy(
            self,
            "RolePolicy",
            statements=self._statements(config, spec, table, blob_bucket, change_stream),
            roles=[role],
        )
        self._acknowledge(policy, config, spec, table, blob_bucket)
        self.function = self._function(config, tuned, spec, role, table)
        self.mapping = self._mapping(config, spec)
        self.mapping.node.add_dependency(policy)
        self.alarms = self._alarms(topic)

    # ------------------------------------------------------------------------------------------- parts
    def _bucket(self, config: DocTableConfig, removal: RemovalPolicy) -> s3.Bucket:
        """Its own failure bucket: ``<table>-<account>-<region>-<name>-failures`` (bucket_names=exact: the
        operator's policy names it; contract/subscribers.py checks it fits), else a name CloudFormation makes."""
        stack = Stack.of(self)
        exact = names.bucket_name(
            config.table_name, stack.account, stack.region, names.subscriber_failure_suffix(self.spec.name)
        )
        return private_bucket(
            self,
            "FailureBucket",
            removal=removal,
            bucket_name=exact if config.exact_bucket_names else None,
            audit_reason="A subscriber's failed batches: object-level audit is CloudTrail data events' job.",
        )

    @staticmethod
    def _source_arn(
        spec: SubscriberSpec, table: dynamodb.ITable, change_stream: kinesis_.IStream | None
    ) -> str:
        if spec.reads_kinesis:
            assert change_stream is not None
            return change_stream.stream_arn
        assert table.table_stream_arn is not None
        return table.table_stream_arn

    def _statements(
        self,
        config: DocTableConfig,
        spec: SubscriberSpec,
        table: dynamodb.ITable,
        blob_bucket: s3.IBucket | None,
        change_stream: kinesis_.IStream | None,
    ) -> list[iam.PolicyStatement]:
        """Its logs, its source, its failure bucket, and its grants: one statement per resource."""
        statements = [write_logs(self.log_group), *keep_failures(self.failure_bucket)]
        if spec.reads_kinesis:
            assert change_stream is not None
            statements += kinesis.read_statements(change_stream, change_stream.encryption_key)
            if self.fan_out is not None:
                statements.append(kinesis.fan_out_statement(self.fan_out.attr_consumer_arn))
        else:
            statements += stream_reads(self.source_arn)
        for number, grant in enumerate(spec.grants):
            statements.append(
                iam.PolicyStatement(
                    sid=f"Grant{number}",
                    actions=list(grant.actions),
                    resources=self._grant_resources(config, grant.resource, table, blob_bucket),
                )
            )
        if table.encryption_key is not None:
            statements.append(
                encryption.key_statement(
                    "UseTableKey", table.encryption_key, write=False, services=("dynamodb",)
                )
            )
        return statements

    @staticmethod
    def _grant_resources(
        config: DocTableConfig, resource: str, table: dynamodb.ITable, blob_bucket: s3.IBucket | None
    ) -> list[str]:
        if resource == "table":
            return [table.table_arn, f"{table.table_arn}/index/*"]
        if resource == "blobs":
            assert blob_bucket is not None, "a blobs grant needs the blob bucket (checked with the settings)"
            return [blob_bucket.arn_for_objects(f"{config.blob_root}*")]
        return [resource]

    def _acknowledge(
        self,
        policy: iam.Policy,
        config: DocTableConfig,
        spec: SubscriberSpec,
        table: dynamodb.ITable,
        blob_bucket: s3.IBucket | None,
    ) -> None:
        """cdk-nag's wildcard findings on the role's policy, each with why it is the narrowest grant."""
        findings = [
            (
                f"{_nag_arn(self.failure_bucket)}/aws/lambda/*",
                "Lambda names failed-batch objects itself, under aws/lambda/<mapping>/ of the subscriber's own "
                "bucket.",
            )
        ]
        if not spec.reads_kinesis:
            findings.append(
                (
                    "*",
                    "dynamodb:ListStreams has no resource type; the stream actions are on the table's stream.",
                )
            )
        if any(g.resource == "table" for g in spec.grants):
            table_arn = (
                _nag_arn(table) if table.node.default_child is not None else _nag_replica_arn(self, table)
            )  # a replica region's subscriber: that region's replica, named (infra/replica_stack.py)
            findings.append(
                (
                    f"{table_arn}/index/*",
                    "table:read and table:write reach the table's indexes (a Query on an index).",
                )
            )
        if blob_bucket is not None and any(g.resource == "blobs" for g in spec.grants):
            bucket = (
                f"arn:<AWS::Partition>:s3:::{config.blob_bucket}"
                if config.blob_bucket
                else _nag_arn(blob_bucket)
            )
            findings.append(
                (
                    f"{bucket}/{config.blob_root}*",
                    "blobs:read and blobs:write reach any blob under the blob root.",
                )
            )
        for finding, reason in findings:
            acknowledge(policy, f"AwsSolutions::AwsSolutions-IAM5[Resource::{finding}]", reason)

    def _function(
        self,
        config: DocTableConfig,
        tuned: DocTableConfig,
        spec: SubscriberSpec,
        role: iam.Role,
        table: dynamodb.ITable,
    ) -> lambda_.Function:
        source = Path(spec.path)
        try:
            code_dir, handler = stage_subscriber(
                RUNTIME_PACKAGE, source.name, spec.function, source.parent, PROJECT_ROOT / "build",
                requirements=spec.requirements_path,
                platform=wheelhouse.platform_for(tuned.architecture, local=config.is_local),
                extra_indexes=spec.extra_index_urls,
            )  # fmt: skip
        except ValueError as exc:  # no wheel, an extra index not allowed...: one line, as a knob's
            raise ConfigError([f"subscriber {spec.name!r}: {exc}"]) from None
        layer_arn = ssm.StringParameter.value_for_string_parameter(
            self, names.powertools_layer_parameter(tuned.architecture)
        )
        function = lambda_.Function(
            self,
            "Function",
            description=f"doctable subscriber {spec.name} of {config.table_name}",
            runtime=RUNTIME,
            architecture=ARCHITECTURES[tuned.architecture],
            handler=names.SUBSCRIBER_HANDLER,
            code=lambda_.Code.from_asset(str(code_dir), exclude=["**/*.md"]),
            layers=[lambda_.LayerVersion.from_layer_version_arn(self, "PowertoolsLayer", layer_arn)],
            role=role,
            memory_size=tuned.memory,
            timeout=Duration.seconds(tuned.timeout),
            log_group=self.log_group,
            environment={
                **dict(spec.environment),
                names.ENV_SUBSCRIBER_NAME: spec.name,
                names.ENV_SUBSCRIBER_HANDLER: handler,
                names.ENV_SUBSCRIBER_PER_RECORD: names.ENV_SUBSCRIBER_TRUE
                if spec.per_record
                else names.ENV_SUBSCRIBER_FALSE,
                names.ENV_SUBSCRIBER_TABLE_NAME: table.table_name,
                names.ENV_SUBSCRIBER_ENVIRONMENT: config.env,
            },
        )
        acknowledge(
            function,
            "AwsSolutions::AwsSolutions-L1",
            "Python 3.13, as the built-in consumer: the newest runtime the project's tests run on.",
        )
        return function

    def _mapping(self, config: DocTableConfig, spec: SubscriberSpec) -> lambda_.CfnEventSourceMapping:
        shape = subscriber_mapping_shape(config, spec)
        patterns = list(shape.filter_patterns)
        return lambda_.CfnEventSourceMapping(
            self,
            "Mapping",
            function_name=self.function.function_name,
            event_source_arn=self.source_arn,
            starting_position=shape.starting_position,
            batch_size=shape.batch_size,
            maximum_batching_window_in_seconds=shape.batching_window,
            enabled=True,
            bisect_batch_on_function_error=True,
            function_response_types=["ReportBatchItemFailures"],
            maximum_retry_attempts=shape.max_retries,
            maximum_record_age_in_seconds=shape.max_record_age,
            parallelization_factor=shape.parallelization_factor,
            filter_criteria=lambda_.CfnEventSourceMapping.FilterCriteriaProperty(
                filters=[lambda_.CfnEventSourceMapping.FilterProperty(pattern=p) for p in patterns]
            )
            if patterns
            else None,
            destination_config=lambda_.CfnEventSourceMapping.DestinationConfigProperty(
                on_failure=lambda_.CfnEventSourceMapping.OnFailureProperty(
                    destination=self.failure_bucket.bucket_arn
                )
            ),
        )

    def _alarms(self, topic: sns.ITopic | None) -> list[cloudwatch.Alarm]:
        alarms = [
            cloudwatch.Alarm(
                self,
                "IteratorAge",
                metric=self.function.metric("IteratorAge", statistic="Maximum", period=Duration.minutes(1)),
                threshold=ITERATOR_AGE_MS,
                evaluation_periods=3,
                alarm_description=f"Subscriber {self.spec.name} is falling behind: oldest record older than 10 minutes.",
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            ),
            cloudwatch.Alarm(
                self,
                "Errors",
                metric=self.function.metric_errors(statistic="Sum", period=Duration.minutes(5)),
                threshold=1,
                evaluation_periods=3,
                datapoints_to_alarm=2,
                alarm_description=f"Subscriber {self.spec.name} crashed or timed out in 2 of the last 3 periods.",
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            ),
        ]
        if topic is not None:
            for alarm in alarms:
                alarm.add_alarm_action(cw_actions.SnsAction(topic))
        return alarms


def outputs(subscriber: Subscriber) -> dict[str, tuple[Any, str]]:
    """The stack outputs of one subscriber, keyed by output id: what verify, logs, invoke and replay read."""
    sid = subscriber.spec.name
    return {
        names.subscriber_output(sid, names.OUT_SUBSCRIBER_FUNCTION): (
            subscriber.function.function_name,
            "function",
        ),
        names.subscriber_output(sid, names.OUT_SUBSCRIBER_LOG_GROUP): (
            subscriber.log_group.log_group_name,
            "log group",
        ),
        names.subscriber_output(sid, names.OUT_SUBSCRIBER_MAPPING): (subscriber.mapping.ref, "mapping UUID"),
        names.subscriber_output(sid, names.OUT_SUBSCRIBER_FAILURE_BUCKET): (
            subscriber.failure_bucket.bucket_name,
            "failure bucket",
        ),
    }
