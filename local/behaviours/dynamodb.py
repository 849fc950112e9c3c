"""The DynamoDB behaviours of the local AWS: tables, their options, indexes and global tables."""

from __future__ import annotations

from local.behaviours.registry import (
    DDB_API,
    DDB_GUIDE,
    Behaviour,
)

_DDB = "moto.dynamodb.models"
_TABLE = "moto.dynamodb.models.table"
_CFN = "moto.cloudformation.models"
_INDEX_DESCRIBED = "dynamodb.*|+member|*GlobalSecondaryIndexes[].IndexArn"

BEHAVIOURS: tuple[Behaviour, ...] = (
    # ---- DynamoDB: tables and their options ----
    Behaviour(
        id="dynamodb.table-class",
        service="dynamodb",
        rule="A table keeps its table class (STANDARD by default) and DescribeTable reports it in TableClassSummary.",
        source=DDB_GUIDE + "HowItWorks.TableClasses.html",
        test="tests/integration/test_table_options.py::test_every_table_option_deployed_changed_on_day_2_and_refused_as_aws_refuses",
        targets=(
            f"{_TABLE}:Table.describe",
            "moto.dynamodb.responses:DynamoHandler.create_table",
            "moto.dynamodb.responses:DynamoHandler.update_table",
        ),
        differs=(
            "*|+member|*TableClassSummary.TableClass",
            "*|value|*TableClassSummary.TableClass=STANDARD",
        ),
    ),
    Behaviour(
        id="dynamodb.on-demand-throughput",
        service="dynamodb",
        rule="An on-demand table reports OnDemandThroughput, -1 for a direction without a maximum.",
        source=DDB_GUIDE + "on-demand-capacity-mode-max-throughput.html",
        test="tests/integration/test_table_options.py::test_every_table_option_deployed_changed_on_day_2_and_refused_as_aws_refuses",
        targets=(f"{_TABLE}:Table.describe",),
        differs=("*|+member|*OnDemandThroughput.Max*RequestUnits",),
    ),
    Behaviour(
        id="dynamodb.index-arn",
        service="dynamodb",
        rule="DescribeTable names each secondary index's ARN (IndexArn) and leaves out an empty index list.",
        source=DDB_API + "API_GlobalSecondaryIndexDescription.html",
        test="tests/unit/test_local_indexes.py::test_indexes_of_create_table_are_active_at_once",
        targets=(f"{_TABLE}:Table.describe",),
        differs=(_INDEX_DESCRIBED,),
    ),
    Behaviour(
        id="dynamodb.ttl-change-interval",
        service="dynamodb",
        rule="A second UpdateTimeToLive on a table within an hour of the last is refused with a ValidationException; "
        "before that, a change naming another attribute than the active one ('TimeToLive is active on a different "
        "AttributeName: current AttributeName is <name>') or asking for what is set ('already enabled/disabled').",
        source=DDB_API + "API_UpdateTimeToLive.html",
        test="tests/unit/test_local_clock.py::test_a_second_ttl_change_is_refused_until_the_interval_has_passed",
        targets=(f"{_DDB}:DynamoDBBackend.update_time_to_live",),
        differs=("dynamodb.ttl-disable-at-once|error|ok->ValidationException",),
        errors=(("dynamodb:UpdateTimeToLive", "ValidationException"),),
    ),
    Behaviour(
        id="dynamodb.ttl-expiry",
        service="dynamodb",
        rule="Items whose TTL attribute (epoch seconds) has passed are deleted by the TTL service, each deletion a "
        "REMOVE stream record whose userIdentity is the service dynamodb.amazonaws.com.",
        source=DDB_GUIDE + "time-to-live-ttl-streams.html",
        test="tests/unit/test_local_kinesis_destination.py::"
        "test_ttl_deletion_carries_the_ttl_service_identity_and_microsecond_precision",
        unchecked="plain moto never expires items, and the deletion happens hours after the write on AWS: only the "
        "guide describes it",
    ),
    Behaviour(
        id="dynamodb.pitr-recovery-period",
        service="dynamodb",
        rule="PITR keeps its recovery period (1 to 35 days, 35 when not given); a period outside is refused.",
        source=DDB_GUIDE + "PointInTimeRecovery_Howitworks.html",
        test="tests/integration/test_table_options.py::test_every_table_option_deployed_changed_on_day_2_and_refused_as_aws_refuses",
        targets=("moto.dynamodb.models:DynamoDBBackend.update_continuous_backups",),
        errors=(("dynamodb:UpdateContinuousBackups", "ValidationException"),),
    ),
    Behaviour(
        id="dynamodb.contributor-insights",
        service="dynamodb",
        rule="Describe/Update/ListContributorInsights switch a table's or index's insights, with its mode and rules.",
        source=DDB_GUIDE + "contributorinsights_HowItWorks.html",
        test="tests/integration/test_table_options.py::test_every_table_option_deployed_changed_on_day_2_and_refused_as_aws_refuses",
        errors=(("dynamodb:UpdateContributorInsights", "ResourceNotFoundException"),),
    ),
    Behaviour(
        id="dynamodb.encryption-at-rest",
        service="dynamodb",
        rule="SSESpecification is kept as the API's: an AWS managed or customer managed key is reported by its ARN "
        "in SSEDescription, the AWS owned key by none, and an unknown key is refused.",
        source=DDB_GUIDE + "EncryptionAtRest.html",
        test="tests/unit/test_local_dynamodb_security.py::test_an_unknown_key_is_refused",
        targets=("moto.dynamodb.models.table:Table._get_default_encryption_key",),
        errors=(
            ("dynamodb:CreateTable", "ValidationException"),
            ("dynamodb:UpdateTable", "ValidationException"),
        ),
    ),
    Behaviour(
        id="dynamodb.resource-policy",
        service="dynamodb",
        rule="A table's resource-based policy is evaluated with the caller's identity policies (an explicit Deny "
        "wins); deleting a policy a table does not have is PolicyNotFoundException.",
        source=DDB_GUIDE + "access-control-resource-based.html",
        test="tests/unit/test_local_dynamodb_security.py::"
        "test_delete_resource_policy_without_one_is_policy_not_found_and_a_deleted_table_drops_it",
        targets=("moto.dynamodb.models:DynamoDBBackend.delete_resource_policy",),
        errors=(("dynamodb:DeleteResourcePolicy", "PolicyNotFoundException"),),
        actions=("dynamodb:GetResourcePolicy", "dynamodb:PutResourcePolicy", "dynamodb:DeleteResourcePolicy"),
    ),
    Behaviour(
        id="dynamodb.kinesis-destination",
        service="dynamodb",
        rule="Kinesis Data Streams for DynamoDB: Enable/Disable/Describe/UpdateKinesisStreamingDestination, every item "
        "change forwarded as one record; enabling needs kinesis:DescribeStream, PutRecords and ListStreams.",
        source=DDB_GUIDE + "kds.html",
        test="tests/unit/test_local_kinesis_destination.py::"
        "test_refusals_missing_table_missing_stream_second_destination_and_wrong_states",
        targets=("moto.dynamodb.models.table:Table.delete_item",),
        errors=(
            ("dynamodb:EnableKinesisStreamingDestination", "ResourceNotFoundException"),
            ("dynamodb:EnableKinesisStreamingDestination", "ValidationException"),
        ),
        actions=("kinesis:DescribeStream", "kinesis:PutRecords", "kinesis:ListStreams"),
    ),
    Behaviour(
        id="dynamodb.write-serialization",
        service="dynamodb",
        rule="Writes to an item are serialized and each change is exactly one stream record, in order, with a "
        "unique increasing sequence number; an UpdateItem that creates an item is one INSERT.",
        source=DDB_GUIDE + "Streams.html",
        test="tests/unit/test_local_kinesis_destination.py::"
        "test_an_upsert_is_one_insert_in_both_the_dynamodb_stream_and_the_kinesis_stream",
        targets=(
            "moto.dynamodb.models.table:StreamShard.add",
            "moto.dynamodb.models:DynamoDBBackend.put_item",
            "moto.dynamodb.models:DynamoDBBackend.delete_item",
            "moto.dynamodb.models:DynamoDBBackend.update_item",
            "moto.dynamodbstreams.models:DynamoDBStreamsBackend.get_shard_iterator",
            "moto.dynamodbstreams.models:DynamoDBStreamsBackend.get_records",
        ),
        unchecked="a race: plain moto answers each single request the same; only concurrent writes show it, which "
        "the scenarios do not compare",
    ),
    Behaviour(
        id="dynamodb.stream-shard-readers",
        service="dynamodb",
        rule="At most two processes read a stream shard at once: a GetRecords by a third reader active on the shard "
        "(an event-source mapping, or an iterator lineage that polls with its NextShardIterator; a look through an "
        "iterator of its own holds no place) is throttled with LimitExceededException; a mapping so throttled backs "
        "off, stays Enabled and delivers once fewer readers are active.",
        source=DDB_GUIDE + "Streams.html#Streams.Processing",
        test="tests/unit/test_local_stream_readers.py::test_two_readers_read_and_a_third_is_throttled_with_awss_error",
        targets=(
            "moto.dynamodbstreams.models:DynamoDBStreamsBackend.get_shard_iterator",
            "moto.dynamodbstreams.models:DynamoDBStreamsBackend.get_records",
        ),
        # botocore's model: GetRecords' LimitExceededException, "More than 2 processes are reading from the same
        # streams shard at the same time"; the DynamoDB Streams Kinesis adapter (awslabs) retries it as throttling.
        errors=(("dynamodbstreams:GetRecords", "LimitExceededException"),),
    ),
    Behaviour(
        id="dynamodb.transactions",
        service="dynamodb",
        rule="TransactWriteItems is all or nothing: a cancelled transaction changes no item and writes no stream "
        "record.",
        source=DDB_GUIDE + "transaction-apis.html",
        test="tests/unit/test_local_kinesis_destination.py::"
        "test_batch_writes_and_committed_transactions_are_forwarded_cancelled_ones_not",
        targets=(
            "moto.dynamodb.models:copy",
            "moto.dynamodb.models:DynamoDBBackend.transact_write_items",
        ),
        errors=(("dynamodb:TransactWriteItems", "TransactionCanceledException"),),
    ),
    # ---- DynamoDB: secondary indexes ----
    Behaviour(
        id="dynamodb.index-backfill",
        service="dynamodb",
        rule="A GSI added to a live table is CREATING with Backfilling true until its backfill ends, then ACTIVE; "
        "Query and Scan on it are refused meanwhile.",
        source=DDB_GUIDE + "GSI.OnlineOps.html",
        test="tests/unit/test_local_indexes.py::test_a_gsi_added_to_a_live_table_backfills_then_answers_for_every_item",
        targets=(
            f"{_DDB}:DynamoDBBackend.update_table",
            "moto.dynamodb.models:DynamoDBBackend.update_table_global_indexes",
            "moto.dynamodb.models:DynamoDBBackend.delete_table",
            "moto.dynamodb.models.table:Table.query",
            "moto.dynamodb.models.table:GlobalSecondaryIndex.describe",
            "moto.dynamodb.responses:DynamoHandler.query",
            "moto.dynamodb.responses:DynamoHandler.scan",
        ),
        differs=(
            "dynamodb.add-index|+member|TableDescription.GlobalSecondaryIndexes[].Backfilling",
            "dynamodb.add-index|value|TableDescription.GlobalSecondaryIndexes[].Backfilling=True",
            "dynamodb.add-index|value|TableDescription.GlobalSecondaryIndexes[].IndexStatus=CREATING",
        ),
        errors=(("dynamodb:Query", "ValidationException"), ("dynamodb:Scan", "ValidationException")),
    ),
    Behaviour(
        id="dynamodb.unknown-index-read",
        service="dynamodb",
        rule='Query or Scan naming an index the table does not have is a ValidationException ("The table does not '
        'have the specified index"), not ResourceNotFoundException.',
        source=DDB_API + "API_Query.html#DDB-Query-request-IndexName",
        test="tests/unit/test_local_indexes.py::test_a_gsi_added_to_a_live_table_backfills_then_answers_for_every_item",
        targets=(f"{_DDB}:DynamoDBBackend.get_schema", f"{_TABLE}:Table.scan"),
        differs=("dynamodb.query-missing-index|error|ResourceNotFoundException->ValidationException",),
        errors=(("dynamodb:Query", "ValidationException"), ("dynamodb:Scan", "ValidationException")),
    ),
    Behaviour(
        id="dynamodb.one-online-index-change",
        service="dynamodb",
        rule="Only one GSI can be created or deleted on a table at a time: another while one builds is "
        "LimitExceededException.",
        source=DDB_API + "API_UpdateTable.html",
        test="tests/unit/test_local_indexes.py::"
        "test_one_online_index_change_at_a_time_but_a_backfilling_index_may_be_deleted",
        differs=("dynamodb.add-second-index-at-once|error|ok->LimitExceededException",),
        errors=(("dynamodb:UpdateTable", "LimitExceededException"),),
    ),
    Behaviour(
        id="dynamodb.index-refusals",
        service="dynamodb",
        rule="DynamoDB's refusals about secondary indexes (counts, attribute definitions, projections, LSI keys, an "
        "index that exists or does not) are ValidationExceptions with its messages.",
        source=DDB_GUIDE + "ServiceQuotas.html#limits-secondary-indexes",
        test="tests/unit/test_local_indexes.py::test_update_table_refusals",
        targets=(
            "moto.dynamodb.models.table:Table.put_item",
            "moto.dynamodb.models.table:GlobalSecondaryIndex.create",
            "moto.dynamodb.responses:DynamoHandler._validate_table_creation",
            "moto.dynamodb.responses:validate_put_has_gsi_keys_set_to_none",
        ),
        differs=("dynamodb.add-index-twice|error|500->ValidationException",),
        errors=(
            ("dynamodb:UpdateTable", "ValidationException"),
            ("dynamodb:CreateTable", "ValidationException"),
        ),
    ),
    Behaviour(
        id="dynamodb.multi-attribute-key-schema",
        service="dynamodb",
        rule="A GSI's partition and sort keys take up to 4 attributes each, every HASH before every RANGE, no "
        "attribute twice; CreateTable and UpdateTable refuse any other key schema with a ValidationException "
        "(before the attribute definitions are compared with the keys) and create nothing.",
        source=DDB_GUIDE + "GSI.html#GSI.MultiAttributeKeys",
        test="tests/unit/test_local_multi_attribute_keys.py::test_create_table_refuses_a_gsi_key_schema_aws_refuses",
        targets=(
            "moto.dynamodb.responses:DynamoHandler._validate_table_creation",
            "moto.dynamodb.models:DynamoDBBackend.update_table",
        ),
        errors=(
            ("dynamodb:CreateTable", "ValidationException"),
            ("dynamodb:UpdateTable", "ValidationException"),
        ),
    ),
    Behaviour(
        id="dynamodb.multi-attribute-key-conditions",
        service="dynamodb",
        rule="A Query of a GSI with a multi-attribute key needs an equality on every partition attribute, and its "
        "sort attributes left to right with an equality on each before the last one named and none skipped ('RANGE "
        "key attributes <a> must have equality conditions specified in the query because a condition is present on "
        "key attribute <b>'), KeyConditions as KeyConditionExpression.",
        source=DDB_GUIDE + "GSI.html#GSI.MultiAttributeKeys",
        test="tests/unit/test_local_multi_attribute_keys.py::test_each_key_condition_refusal_aws_documents_is_its_answer",
        targets=("moto.dynamodb.responses:DynamoHandler.query",),
        errors=(("dynamodb:Query", "ValidationException"),),
    ),
    Behaviour(
        id="dynamodb.multi-attribute-key-reads",
        service="dynamodb",
        rule="A GSI with a multi-attribute key indexes only an item carrying every key attribute, sorts by its sort "
        "attributes in schema order, names the table key and every index key attribute in a page's "
        "LastEvaluatedKey, and DescribeTable lists its KeySchema in the order given.",
        source=DDB_GUIDE + "GSI.DesignPattern.MultiAttributeKeys.html",
        test="tests/unit/test_local_multi_attribute_keys.py::"
        "test_an_item_lacking_a_key_attribute_is_not_indexed_and_a_page_names_every_key_attribute",
        targets=(
            "moto.dynamodb.models.table:Table.query",
            "moto.dynamodb.models.table:GlobalSecondaryIndex.describe",
        ),
        unchecked="moto 5.2.5 answers these reads as AWS does (plain moto passes the Alternator suite's sparse, "
        "pagination and describe tests alike); the local AWS keeps moto's answer, held by its test",
    ),
    Behaviour(
        id="dynamodb.local-index-fetch",
        service="dynamodb",
        rule="A local secondary index fetches from the table the attributes it does not project when a read asks "
        "for them.",
        source=DDB_GUIDE + "LSI.html#LSI.Projections",
        test="tests/unit/test_local_indexes.py::test_a_local_index_fetches_what_it_does_not_project",
        targets=("moto.dynamodb.models.table:LocalSecondaryIndex.project",),
        unchecked="the scenarios use no LSI (the stacks declare none by default); plain moto's answer is a subset",
    ),
    # ---- DynamoDB: deletion and global tables ----
    Behaviour(
        id="dynamodb.global-tables",
        service="dynamodb",
        rule="Global tables version 2019.11.21: replicas added and removed by UpdateTable, writes replicated with "
        "last writer wins, each region's stream recording its own and replicated changes.",
        source=DDB_GUIDE + "V2globaltables_HowItWorks.html",
        test="tests/unit/test_local_replicas.py::test_last_writer_wins_and_the_loser_leaves_no_record_where_it_lost",
        errors=(
            ("dynamodb:UpdateTable", "ValidationException"),
            ("dynamodb:DeleteTable", "ValidationException"),
        ),
    ),
)
