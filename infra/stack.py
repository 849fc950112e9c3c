"""One deployable unit per environment: composes the table and the consumer, applies provenance tags."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_cdk import (
    Annotations,
    App,
    Aspects,
    CfnOutput,
    DefaultStackSynthesizer,
    Environment,
    Stack,
    Tags,
    Validations,
)
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from cdk_nag import AwsSolutionsChecks
from constructs import Construct

from contract import names
from contract.iam import execution as iam_execution
from contract.knobs import ConfigError, DocTableConfig
from contract.settings import preview as preview_rules
from contract.subscribers import SubscriberSpec
from infra.compute.consumer import StreamConsumer
from infra.compute.subscribers import Subscriber, subscriber_id
from infra.compute.subscribers import outputs as subscriber_outputs
from infra.data.table import DocumentTable
from infra.monitoring.alarms import ConsumerAlarms
from infra.monitoring.dashboard import Overview, consumer_reader, subscriber_reader
from infra.replica_stack import REPLICA_STREAMS_CONTEXT, replica_stacks, replica_streams
from infra.synth.checkov import CheckovSkips

if TYPE_CHECKING:
    from contract.settings.resolve import Resolved


class DocTableStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: DocTableConfig, **kwargs: Any) -> None:
        super().__init__(
            scope,
            construct_id,
            description=f"doctable {config.table_name}: document table ({config.env}) with its stream consumer",
            **kwargs,
        )
        self.config = config
        doc_table = DocumentTable(self, names.ID_TABLE, config=config)
        self._table_outputs(config, doc_table)
        self.consumer: StreamConsumer | None = None
        self.alarms: ConsumerAlarms | None = None
        if config.has_mapping:
            self.consumer = self._consumer(config, doc_table)
        if self.alarms is None and any(spec.runs_in(config.replicas) for spec in config.subscribers):
            # No built-in consumer: the stack's topic alone, which its subscribers' alarms notify.
            self.alarms = ConsumerAlarms(self, names.ID_ALARMS, config=config, function=None)
            self._output(names.OUT_ALARM_TOPIC_ARN, self.alarms.topic.topic_arn, "Subscribe operators here")
        self.subscribers = [
            self._subscriber(config, doc_table, spec)
            for spec in config.subscribers
            if spec.runs_in(config.replicas)  # the home region's; a replica region's in its stack
        ]
        self.overview = self._overview(config, doc_table)
        self._output(
            names.OUT_KNOBS,
            config.deployed_record(),
            "The resolved knobs of this deployment: what preflight, verify and ledger compare against",
        )
        for key, value in config.tags().items():
            Tags.of(self).add(key, value)

    def _table_outputs(self, config: DocTableConfig, doc_table: DocumentTable) -> None:
        """The table's outputs: its name, ARN and runtime policy, then its key, stream, handover step, replica
        regions and Kinesis data stream when it has them."""
        table = doc_table.table
        self._output(names.OUT_TABLE_NAME, table.table_name, "The document table's name")
        self._output(names.OUT_TABLE_ARN, table.table_arn, "The document table's ARN")
        self._output(
            names.OUT_RUNTIME_POLICY_ARN,
            doc_table.runtime_policy.managed_policy_arn,
            "Attach to the roles of the table's users: the data-plane actions on this table and its indexes, and "
            "the blob root's objects",
        )
        if doc_table.encryption_key is not None:
            self._output(
                names.OUT_KMS_KEY_ARN,
                doc_table.encryption_key.key_arn,
                "The customer managed key of the table, its stream and the stack's buckets",
            )
        if config.has_stream:
            assert table.table_stream_arn is not None
            self._output(names.OUT_STREAM_ARN, table.table_stream_arn, "The NEW_AND_OLD_IMAGES stream's ARN")
        if doc_table.handover is not None and doc_table.handover.detached:
            self._output(
                names.OUT_TABLE_HANDOVER,
                doc_table.handover.step,
                "The step of the table's conversion to a global table (retained, out of the stack, imported)",
            )
        if config.is_global:
            self._output(
                names.OUT_REPLICA_REGIONS,
                ",".join(config.replicas),
                "The global table's replica regions besides this stack's",
            )
        if doc_table.change_stream is not None:
            self._output(
                names.OUT_KINESIS_STREAM_ARN,
                doc_table.change_stream.stream_arn,
                "The Kinesis data stream the table's changes are written to",
            )

    def _consumer(self, config: DocTableConfig, doc_table: DocumentTable) -> StreamConsumer:
        """The stream consumer and its outputs; the built-in one's as well, with its alarms."""
        consumer = StreamConsumer(
            self,
            names.ID_CONSUMER,
            config=config,
            table=doc_table.table,
            change_stream=doc_table.change_stream,
        )
        self._output(names.OUT_MAPPING_UUID, consumer.mapping.ref, "The event-source mapping's UUID")
        self._output(
            names.OUT_FAILURE_BUCKET,
            consumer.failure_bucket.bucket_name,
            "Where batches that exhausted their retries are kept for replay",
        )
        if consumer.function is not None:
            self._builtin_consumer(config, doc_table, consumer)
        return consumer

    def _builtin_consumer(
        self, config: DocTableConfig, doc_table: DocumentTable, consumer: StreamConsumer
    ) -> None:
        """The built-in consumer's grant on the runtime policy, its outputs and its alarms."""
        function = consumer.function
        assert function is not None and consumer.log_group is not None and consumer.blob_bucket is not None
        consumer.grant_application_blobs(config, doc_table.runtime_policy)
        self._output(names.OUT_CONSUMER_FUNCTION_NAME, function.function_name, "Consumer")
        self._output(names.OUT_CONSUMER_FUNCTION_ARN, function.function_arn, "Consumer ARN")
        self._output(
            names.OUT_CONSUMER_LOG_GROUP,
            consumer.log_group.log_group_name,
            "Where stream_records_received lines land",
        )
        self._output(names.OUT_BLOB_BUCKET, consumer.blob_bucket.bucket_name, "The blob bucket")
        alarms = ConsumerAlarms(
            self,
            names.ID_ALARMS,
            config=config,
            function=function,
            failure_bucket=consumer.failure_bucket,
            mapping_uuid=consumer.mapping.ref,
        )
        self._output(names.OUT_ALARM_TOPIC_ARN, alarms.topic.topic_arn, "Subscribe operators here")
        self.alarms = alarms

    def _subscriber(
        self, config: DocTableConfig, doc_table: DocumentTable, spec: SubscriberSpec
    ) -> Subscriber:
        """A team's subscriber beside the consumer (infra/compute/subscribers.py), and its outputs."""
        blob_bucket = self.consumer.blob_bucket if self.consumer is not None else None
        if blob_bucket is None and config.blob_bucket:
            blob_bucket = s3.Bucket.from_bucket_name(
                self, f"SubscriberBlobBucket{subscriber_id(spec.name)}", config.blob_bucket
            )
        subscriber = Subscriber(
            self,
            f"Subscriber{subscriber_id(spec.name)}",
            config=config,
            spec=spec,
            table=doc_table.table,
            blob_bucket=blob_bucket,
            change_stream=doc_table.change_stream,
            topic=self.alarms.topic if self.alarms is not None else None,
        )
        for key, (value, what) in subscriber_outputs(subscriber).items():
            self._output(key, value, f"Subscriber {spec.name}'s {what}")
        return subscriber

    def _overview(self, config: DocTableConfig, doc_table: DocumentTable) -> Overview:
        """The environment's dashboard (infra/monitoring/dashboard.py): the table, the consumer, each subscriber, the alarms."""
        readers = [consumer_reader(config, self.consumer)] if self.consumer is not None else []
        readers += [subscriber_reader(config, subscriber) for subscriber in self.subscribers]
        alarms = [
            *(self.alarms.alarms if self.alarms is not None else ()),
            *(a for s in self.subscribers for a in s.alarms),
        ]
        stream = doc_table.change_stream
        overview = Overview(
            self,
            names.ID_DASHBOARD,
            config=config,
            readers=readers,
            alarm_arns=[alarm.alarm_arn for alarm in alarms],
            kinesis_stream_name=stream.stream_name if stream is not None else None,
        )
        self._output(
            names.OUT_DASHBOARD_NAME,
            overview.dashboard.ref,  # Ref: the dashboard's name
            "The environment's CloudWatch dashboard",
        )
        return overview

    def _output(self, key: str, value: str, description: str) -> None:
        CfnOutput(self, key, value=value, description=description)


@dataclass(frozen=True)
class Bootstrap:
    """The CDK bootstrap an environment deploys through (its ``qualifier`` binding, `doctable bootstrap`): the
    synthesizer names its roles and asset bucket, and every role the stacks create carries ``boundary``."""

    qualifier: str
    boundary: str  # the permissions boundary's managed policy name (contract/iam/execution.py)


def bootstrap_of(resolved: Resolved) -> Bootstrap | None:
    """The bootstrap of a run's environment: its ``qualifier`` binding, with the boundary of its stacks (a
    preview's: the one every preview of its template shares); None for the CDK's default bootstrap."""
    if not resolved.qualifier:
        return None
    config = resolved.config
    if resolved.preview is not None:
        config = preview_rules.pattern_config(config, resolved.preview_prefix)
    return Bootstrap(resolved.qualifier, iam_execution.stack_policy_name(config.stack_name, "boundary"))


def _synthesizer(config: DocTableConfig, bootstrap: Bootstrap | None) -> DefaultStackSynthesizer | None:
    if bootstrap is not None:
        return DefaultStackSynthesizer(
            qualifier=bootstrap.qualifier, generate_bootstrap_version_rule=not config.is_local
        )
    # The local AWS cannot evaluate the bootstrap-version rule on direct updates; AWS keeps the default.
    return DefaultStackSynthesizer(generate_bootstrap_version_rule=False) if config.is_local else None


def _bounded(stack: Stack, bootstrap: Bootstrap | None) -> None:
    if bootstrap is not None:
        boundary = iam.ManagedPolicy.from_managed_policy_name(
            stack, "PermissionsBoundary", bootstrap.boundary
        )
        iam.PermissionsBoundary.of(stack).apply(boundary)


def _check_subscriber_regions(config: DocTableConfig, home: str | None) -> None:
    """A subscriber's list of regions names the home region (the one name that is no replica's) by its name:
    ConfigError, one line each, for a name that is neither (the settings know the replicas, not the home region)."""
    problems = []
    for spec in config.subscribers:
        outside = (
            [r for r in spec.regions if r not in config.replicas] if isinstance(spec.regions, tuple) else []
        )
        if spec.replica_regions(config.replicas) and not config.builtin_consumer:
            problems.append(
                f"subscriber {spec.name!r}: regions = {spec.regions!r} runs it in a replica region, whose stack is "
                'the built-in consumer\'s; allowed: the built-in consumer (consumer = "builtin"), or regions = '
                '"home"'
            )
        elif home and outside and outside != [home]:
            problems.append(
                f"subscriber {spec.name!r}: regions = {list(spec.regions)!r} names {outside[0]}, not one of the "
                f'table\'s regions; allowed: "home", "all" or a list of {", ".join((home, *config.replicas))}'
            )
    if problems:
        raise ConfigError(problems)


def create_stack(
    app: App,
    config: DocTableConfig,
    *,
    account: str | None = None,
    region: str | None = None,
    bootstrap: Bootstrap | None = None,
) -> DocTableStack:
    """The app's stack for `config`, with cdk-nag's AwsSolutions pack validating it at synth. ``account``
    and ``region`` bind it to where its environment runs (the CDK CLI then refuses other credentials); without
    them it goes where the CLI's credentials point. With replicas, also the consumer stack of each replica region
    the ``replica_streams`` context names (infra/replica_stack.py); ConfigError when a global table has no
    region or ``replica_streams`` is wrong."""
    account = account or os.environ.get("CDK_DEFAULT_ACCOUNT")
    region = region or os.environ.get("CDK_DEFAULT_REGION")
    if config.is_global and not region:
        raise ConfigError(
            [
                f"replicas={','.join(config.replicas)!r} set but the stack has no region — a global table's "
                'stack is bound to its home region: set region = "<region>" in the environment\'s table of '
                "doctable.toml, or CDK_DEFAULT_REGION"
            ]
        )
    if region in config.replicas:
        raise ConfigError(
            [
                f"replicas={region!r} is the stack's own region (CDK_DEFAULT_REGION or the environment's region); "
                "allowed: regions besides the environment's own"
            ]
        )
    _check_subscriber_regions(config, region)
    streams = replica_streams(app.node.try_get_context(REPLICA_STREAMS_CONTEXT), config)
    synthesizer = _synthesizer(config, bootstrap)
    stack = DocTableStack(
        app,
        config.stack_name,
        config=config,
        stack_name=config.stack_name,
        synthesizer=synthesizer,
        env=Environment(account=account, region=region),
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    Aspects.of(stack).add(CheckovSkips())
    _bounded(stack, bootstrap)
    if config.is_global and config.builtin_consumer:
        assert region is not None  # a global table's stack has its region (refused above otherwise)
        for replica in replica_stacks(
            app,
            config,
            streams,
            account=account,
            home_region=region,
            synthesizer=_synthesizer(config, bootstrap),
        ):
            Aspects.of(replica).add(CheckovSkips())
            _bounded(replica, bootstrap)
        missing = [r for r in config.replicas if r not in streams]
        if missing:
            Annotations.of(stack).add_warning_v2(
                "doctable:replica-consumers",
                f"the consumers of the replicas in {', '.join(missing)} are deployed by `doctable deploy`, which "
                f"looks up each replica's stream ARN and passes it in the {REPLICA_STREAMS_CONTEXT} context",
            )
    return stack
