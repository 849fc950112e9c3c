"""The document table: shape is a pure function of the knobs; plus the runtime policy handed to its users."""

from __future__ import annotations

from aws_cdk import Annotations, RemovalPolicy, Tags
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from contract import names
from contract.knobs import TABLE_HANDOVER_CONTEXT, TABLE_STREAM_CONTEXT, DocTableConfig
from contract.shape import TableShape, table_shape
from infra.data import encryption, kinesis, spec
from infra.data.global_table import global_table
from infra.data.handover import IMPORT, RETAIN, table_handover
from infra.synth.nag import acknowledge


class DocumentTable(Construct):
    """`${table_base}-${env}`: pk/sk strings, on-demand, and the optional gsi1 / TTL / PITR / stream."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DocTableConfig) -> None:
        super().__init__(scope, construct_id)
        self.shape = table_shape(config)
        self.encryption_key = encryption.table_key(self, config)
        self._encryption = encryption.table_encryption(config)
        self._resource_policy = encryption.table_resource_policy(self, config)
        # Created before the table, which names it in its KinesisStreamSpecification.
        self.change_stream = kinesis.change_stream(self, config, self.encryption_key)
        self.table: dynamodb.ITable
        # Converting a live single-region table to a global table, one step per deploy (infra/data/handover.py).
        self.handover = table_handover(
            self.node.try_get_context(TABLE_HANDOVER_CONTEXT),
            self.node.try_get_context(TABLE_STREAM_CONTEXT),
            config,
        )
        if self.handover is not None and self.handover.step == RETAIN:
            self.table = self._build_table(
                self.shape, retain=True, env=config.env, pitr_by_default=config.pitr_by_default
            )
        elif self.handover is not None:
            if self.handover.step == IMPORT:
                imported = global_table(
                    self, "Table", shape=self.shape, config=config, resource_policy=self._resource_policy,
                    replica_regions=(), retain=True,
                )  # fmt: skip
                self._acknowledge_pitr(imported, self.shape, config.env, config.pitr_by_default)
            self.table = dynamodb.Table.from_table_attributes(
                self, "RetainedTable", table_name=self.shape.name, table_stream_arn=self.handover.stream_arn
            )
        elif config.is_global:
            self.table = global_table(
                self, "Table", shape=self.shape, config=config, resource_policy=self._resource_policy
            )
            self._acknowledge_pitr(self.table, self.shape, config.env, config.pitr_by_default)
        else:
            self.table = self._build_table(
                self.shape,
                retain=config.retain_on_delete,
                env=config.env,
                pitr_by_default=config.pitr_by_default,
            )
        for warning in config.warnings():
            Annotations.of(self).add_warning_v2("doctable:protection-off", warning)
        self.runtime_policy = self._build_runtime_policy(config.table_name)

    def _build_table(
        self, shape: TableShape, *, retain: bool, env: str, pitr_by_default: bool
    ) -> dynamodb.Table:
        # aws_dynamodb.Table, not TableV2: TableV2 synthesizes AWS::DynamoDB::GlobalTable, the table with
        # replicas only (infra/data/global_table.py).
        table = dynamodb.Table(
            self,
            "Table",
            table_name=shape.name,
            partition_key=spec.attribute(shape.partition_key),
            sort_key=spec.attribute(shape.sort_key),
            billing_mode=dynamodb.BillingMode(shape.billing_mode),
            stream=dynamodb.StreamViewType(shape.stream_view_type) if shape.stream_view_type else None,
            kinesis_stream=self.change_stream,
            # Epoch milliseconds in each Kinesis record's dynamodb.ApproximateCreationDateTime (the consumer's unit).
            kinesis_precision_timestamp=dynamodb.ApproximateCreationDateTimePrecision.MILLISECOND
            if self.change_stream is not None
            else None,
            time_to_live_attribute=shape.ttl_attribute,
            point_in_time_recovery_specification=spec.pitr(shape),
            deletion_protection=shape.deletion_protection,
            table_class=dynamodb.TableClass(shape.table_class),
            max_read_request_units=(shape.on_demand_throughput or {}).get("MaxReadRequestUnits"),
            max_write_request_units=(shape.on_demand_throughput or {}).get("MaxWriteRequestUnits"),
            warm_throughput=spec.warm_throughput(shape.warm_throughput),
            contributor_insights_specification=spec.contributor_insights(shape),
            encryption=self._encryption,
            encryption_key=self.encryption_key,
            resource_policy=self._resource_policy,
            removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
        )
        for index in spec.indexes(shape):
            if index.is_global:
                table.add_global_secondary_index(**index.props)
            else:
                table.add_local_secondary_index(**index.props)
        Tags.of(table).add("Name", shape.name)
        self._acknowledge_pitr(table, shape, env, pitr_by_default)
        return table

    @staticmethod
    def _acknowledge_pitr(table: Construct, shape: TableShape, env: str, pitr_by_default: bool) -> None:
        if not shape.pitr:
            acknowledge(
                table,
                "AwsSolutions::AwsSolutions-DDB3",
                f"PITR is the `pitr` knob: env={env} set pitr=off explicitly (synth warns)"
                if pitr_by_default
                else f"PITR is the `pitr` knob, off by default outside the environments it protects (env={env})",
            )

    def _build_runtime_policy(self, table_name: str) -> iam.ManagedPolicy:
        """The data-plane actions an application needs, on this table and Query on each index, nothing else."""
        statements = [
            iam.PolicyStatement(
                sid="TableItems", actions=list(names.RUNTIME_ACTIONS), resources=[self.table.table_arn]
            )
        ]
        for number, index in enumerate(self.shape.indexes):
            # Only Query reads an index; one statement per declared index, scoped to it by name (not index/*).
            statements.append(
                iam.PolicyStatement(
                    sid=names.index_query_sid(number, index.name),
                    actions=["dynamodb:Query"],
                    resources=[f"{self.table.table_arn}/index/{index.name}"],
                )
            )
        if self.encryption_key is not None:
            # Items are read and written under the table's customer managed key, through DynamoDB only.
            statements.append(
                encryption.key_statement("TableKey", self.encryption_key, write=True, services=("dynamodb",))
            )
        return iam.ManagedPolicy(
            self,
            "RuntimePolicy",
            description=f"Least-privilege data-plane access to the doctable table {table_name}",
            statements=statements,
        )
