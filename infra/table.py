"""The document table: shape is a pure function of the knobs; plus the runtime policy handed to its users."""

from __future__ import annotations

from aws_cdk import RemovalPolicy, Tags
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra import names
from infra.config import DocTableConfig
from infra.nag import acknowledge


class DocumentTable(Construct):
    """`${table_base}-${env}`: pk/sk strings, on-demand, and the optional gsi1 / TTL / PITR / stream."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DocTableConfig) -> None:
        super().__init__(scope, construct_id)
        self.table = self._build_table(config)
        self.runtime_policy = self._build_runtime_policy(config)

    def _build_table(self, config: DocTableConfig) -> dynamodb.Table:
        # aws_dynamodb.Table, not TableV2: TableV2 synthesizes AWS::DynamoDB::GlobalTable, a distinct intent.
        table = dynamodb.Table(
            self,
            "Table",
            table_name=config.table_name,
            partition_key=dynamodb.Attribute(name=names.PARTITION_KEY, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=names.SORT_KEY, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES if config.has_stream else None,
            time_to_live_attribute=names.TTL_ATTRIBUTE if config.has_ttl else None,
            # Explicit either way, so turning the knob off on a live table really turns PITR off.
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=config.has_pitr
            ),
            deletion_protection=config.deletion_protection,
            removal_policy=RemovalPolicy.RETAIN if config.retain_on_delete else RemovalPolicy.DESTROY,
        )
        if config.has_gsi:
            # Rides the create: adding an index to a live table is an online backfill (README, knobs table).
            table.add_global_secondary_index(
                index_name=names.GSI_NAME,
                partition_key=dynamodb.Attribute(
                    name=names.GSI_PARTITION_KEY, type=dynamodb.AttributeType.STRING
                ),
                sort_key=dynamodb.Attribute(name=names.GSI_SORT_KEY, type=dynamodb.AttributeType.STRING),
                projection_type=dynamodb.ProjectionType.ALL,
            )
        Tags.of(table).add("Name", config.table_name)
        if not config.has_pitr:
            acknowledge(
                table,
                "AwsSolutions::AwsSolutions-DDB3",
                "PITR is the `pitr` knob; this environment chose pitr=off.",
            )
        return table

    def _build_runtime_policy(self, config: DocTableConfig) -> iam.ManagedPolicy:
        """The data-plane actions an application needs, on this table (and its one index), nothing else."""
        statements = [
            iam.PolicyStatement(
                sid="TableItems", actions=list(names.RUNTIME_ACTIONS), resources=[self.table.table_arn]
            )
        ]
        if config.has_gsi:
            # Only Query reads an index; scoped to gsi1 by name rather than index/*.
            statements.append(
                iam.PolicyStatement(
                    sid="IndexQuery",
                    actions=["dynamodb:Query"],
                    resources=[f"{self.table.table_arn}/index/{names.GSI_NAME}"],
                )
            )
        return iam.ManagedPolicy(
            self,
            "RuntimePolicy",
            description=f"Least-privilege data-plane access to the doctable table {config.table_name}",
            statements=statements,
        )
