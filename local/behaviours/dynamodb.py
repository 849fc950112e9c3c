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
        rule="A second UpdateTimeToLive on a table within an hour of the last is refused with a ValidationException.",
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
        "(one iterator lineage, or one event-source mapping) is throttled with LimitExceededException; a mapping so "
        "throttled backs off, stays Enabled and delivers once fewer readers are active.",
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
        id="dynamodb.request-validation",
        service="dynamodb",
        rule="A request is checked before its operation runs: an operation the target does not name is "
        "UnknownOperationException, a body that is not a JSON object or a member of the wrong type (a blob not in "
        "base64) SerializationException, and every constraint of the service model it fails (length, value range, "
        "enum, pattern, a required member) is named in one ValidationException, 'N validation errors detected: "
        "Value ... at ... failed to satisfy constraint: ...'; a number that is not one, past 38 significant digits "
        "or outside 1E-130..9.99E+125 in magnitude is a ValidationException in DynamoDB's words, and so are "
        "expressions mixed with legacy parameters, ExpressionAttributeNames or Values given without an expression, "
        "empty, or with a key no expression uses; never an HTTP 500.",
        source=DDB_API + "CommonErrors.html",
        test="tests/unit/test_local_streams_api.py::test_a_request_is_checked_against_the_model_before_the_operation_runs",
        targets=(
            "moto.dynamodb.responses:DynamoHandler._dispatch",
            "moto.dynamodbstreams.responses:DynamoDBStreamsHandler._dispatch",
        ),
        errors=(
            ("dynamodb:CreateTable", "ValidationException"),
            ("dynamodb:Scan", "ValidationException"),
            ("dynamodbstreams:GetRecords", "ValidationException"),
            ("dynamodbstreams:ListStreams", "ValidationException"),
        ),
    ),
    Behaviour(
        id="dynamodb.expressions",
        service="dynamodb",
        rule="A condition or filter expression DynamoDB cannot parse is a ValidationException ('Invalid "
        "ConditionExpression: ...', 'Invalid FilterExpression: ...') and changes nothing; values of different types "
        "compare as false (a string attribute < a number is not true, and not an error).",
        source=DDB_GUIDE + "Expressions.OperatorsAndFunctions.html",
        test="tests/unit/test_local_streams_api.py::"
        "test_an_unreadable_expression_is_refused_and_values_of_different_types_compare_false",
        targets=(
            "moto.dynamodb.comparisons:ConditionExpressionParser.parse",
            "moto.dynamodb.comparisons:OpLessThan.expr",
            "moto.dynamodb.comparisons:OpGreaterThan.expr",
            "moto.dynamodb.comparisons:OpLessThanOrEqual.expr",
            "moto.dynamodb.comparisons:OpGreaterThanOrEqual.expr",
            "moto.dynamodb.comparisons:FuncBetween.expr",
            "moto.dynamodb.comparisons:FuncBeginsWith.expr",
        ),
        errors=(
            ("dynamodb:PutItem", "ValidationException"),
            ("dynamodb:Scan", "ValidationException"),
            ("dynamodb:PutItem", "ConditionalCheckFailedException"),
        ),
    ),
    Behaviour(
        id="dynamodb.legacy-conditions",
        service="dynamodb",
        rule="The legacy conditional parameters are checked as DynamoDB checks them and mean what their operators "
        "mean: each ComparisonOperator's number and types of values, one type per AttributeValueList, a BETWEEN in "
        "order ('One or more parameter values were invalid: ...'); KeyConditions against the key schema (a missed "
        "key, a non-indexable operator, a hash key other than EQ, a value of another type than the key's); no "
        "QueryFilter on a key attribute; a ConditionalOperator only with two or more conditions; an Expected entry "
        "with Value or AttributeValueList, Exists or ComparisonOperator, never both; NE holds for a missing "
        "attribute, NOT_CONTAINS does not; AttributesToGet returns exactly the attributes named.",
        source=DDB_GUIDE + "LegacyConditionalParameters.html",
        test="tests/unit/test_local_legacy_conditions.py::test_a_legacy_condition_is_checked_in_aws_words_before_"
        "anything_is_read",
        targets=(
            "moto.dynamodb.responses:DynamoHandler.query",
            "moto.dynamodb.responses:DynamoHandler.scan",
            "moto.dynamodb.responses:DynamoHandler.put_item",
            "moto.dynamodb.responses:DynamoHandler.update_item",
            "moto.dynamodb.responses:DynamoHandler.delete_item",
        ),
        errors=(
            ("dynamodb:Query", "ValidationException"),
            ("dynamodb:Scan", "ValidationException"),
            ("dynamodb:UpdateItem", "ValidationException"),
            ("dynamodb:UpdateItem", "ConditionalCheckFailedException"),
        ),
    ),
    Behaviour(
        id="dynamodb.key-condition-expression",
        service="dynamodb",
        rule="A KeyConditionExpression is read by the condition parser and refused in its words, then held to a key "
        "condition's form: no OR, NOT, IN, <> nor a function but begins_with ('Invalid operator used in "
        "KeyConditionExpression: OR'), no nested path or operation, one attribute and one condition per key; a "
        "comparison may be written value first (':v = p'); then the key schema's rules, as for KeyConditions.",
        source=DDB_GUIDE + "Query.KeyConditionExpressions.html",
        test="tests/unit/test_local_legacy_conditions.py::test_a_key_condition_expression_is_held_to_a_key_"
        "conditions_form",
        targets=("moto.dynamodb.responses:DynamoHandler.query",),
        errors=(("dynamodb:Query", "ValidationException"),),
    ),
    Behaviour(
        id="dynamodb.start-keys",
        service="dynamodb",
        rule="A Query's or Scan's ExclusiveStartKey names exactly the key attributes read (the table's, and the "
        "index's when an index is read), each of its type ('The provided starting key is invalid', '... The provided "
        "key element does not match the schema'); a Query's lies in the partition it queries ('... outside query "
        "boundaries based on provided conditions'), a parallel Scan's in its segment.",
        source=DDB_API + "API_Query.html",
        test="tests/unit/test_local_legacy_conditions.py::test_a_starting_key_names_the_key_read_in_its_types_and_"
        "lies_where_the_read_does",
        targets=("moto.dynamodb.responses:DynamoHandler.query", "moto.dynamodb.responses:DynamoHandler.scan"),
        errors=(("dynamodb:Query", "ValidationException"), ("dynamodb:Scan", "ValidationException")),
    ),
    Behaviour(
        id="dynamodb.consumed-capacity",
        service="dynamodb",
        rule="ReturnConsumedCapacity reports the units of the items touched: an item's size is its names and "
        "values in bytes (a number one byte per two significant digits plus one); a read is one unit per 4 KB, at "
        "least one, half when eventually consistent (a missing item reads as one); a write one unit per 1 KB of the "
        "larger of the item before and after; a batch the sum of its items' units per table.",
        source=DDB_GUIDE + "read-write-operations.html",
        test="tests/unit/test_local_capacity.py::test_item_operations_report_the_units_of_the_items_they_touch",
        targets=(
            "moto.dynamodb.responses:DynamoHandler.get_item",
            "moto.dynamodb.responses:DynamoHandler.batch_get_item",
            "moto.dynamodb.responses:DynamoHandler.batch_write_item",
        ),
        unchecked="no scenario of the conformance tier asks for consumed capacity (the project's code never "
        "does); the outside suite (make conformance-external) checks the units against AWS",
    ),
    Behaviour(
        id="dynamodb.attribute-updates-put",
        service="dynamodb",
        rule="The legacy AttributeUpdates' PUT stores the value with its own type (a binary, a binary set, a "
        "boolean, a NULL), as PutItem would.",
        source=DDB_API + "API_AttributeValueUpdate.html",
        test="tests/unit/test_local_streams_api.py::test_a_legacy_attribute_update_keeps_the_type_of_its_value",
        targets=("moto.dynamodb.models.dynamo_type:Item.update_with_attribute_updates",),
        unchecked="the scenarios write no legacy AttributeUpdates (the project uses expressions); the outside "
        "suite (make conformance-external) checks it against AWS",
    ),
    Behaviour(
        id="dynamodb.key-checks",
        service="dynamodb",
        rule="A key that lacks one of the table's key attributes or gives one another type than declared is 'The "
        "provided key element does not match the schema'; a key attribute (of the table or an index) that is an empty string or "
        "binary, in a key or an item written, is a ValidationException naming it.",
        source=DDB_API + "API_GetItem.html",
        test="tests/unit/test_local_streams_api.py::test_a_key_is_the_tables_key_typed_as_declared_and_never_empty",
        targets=(
            "moto.dynamodb.models:DynamoDBBackend.get_keys_value",
            "moto.dynamodb.responses:validate_put_has_empty_keys",
        ),
        errors=(
            ("dynamodb:GetItem", "ValidationException"),
            ("dynamodb:PutItem", "ValidationException"),
        ),
    ),
    Behaviour(
        id="dynamodb.remove-only-update",
        service="dynamodb",
        rule="An UpdateItem whose expression only REMOVEs attributes from an item that does not exist makes no item "
        "and writes no stream record.",
        source=DDB_GUIDE + "Expressions.UpdateExpressions.html#Expressions.UpdateExpressions.REMOVE",
        test="tests/unit/test_local_streams_api.py::test_an_update_that_only_removes_makes_no_item_and_no_record",
        targets=("moto.dynamodb.models:DynamoDBBackend.update_item",),
        unchecked="plain moto answers the same UpdateItem with no error (only the item it leaves differs, which the "
        "scenarios do not read); the outside suite (make conformance-external) checks it against AWS",
    ),
    Behaviour(
        id="dynamodb.sparse-index-types",
        service="dynamodb",
        rule="An index holds only the items that have each of its key attributes with the type its attribute "
        "definition gives; a Query or Scan of it never reads another.",
        source=DDB_GUIDE + "bp-indexes-general-sparse-indexes.html",
        test="tests/unit/test_local_streams_api.py::test_an_index_holds_only_items_whose_key_attributes_have_its_types",
        targets=("moto.dynamodb.models.table:Table.has_idx_items",),
        unchecked="the scenarios write no item with an index key of another type (DynamoDB refuses most such "
        "writes); the outside suite (make conformance-external) checks it against AWS",
    ),
    Behaviour(
        id="dynamodb.streams-paging",
        service="dynamodb",
        rule="DescribeStream lists shards in ShardId order from after ExclusiveStartShardId, LastEvaluatedShardId "
        "naming the last one returned while more remain, and ShardFilter CHILD_SHARDS a shard's children only; "
        "ListStreams pages enabled streams by ARN the same way; a malformed stream ARN is ValidationException "
        "'Invalid StreamArn', a stream that is not there ResourceNotFoundException.",
        source=DDB_API + "API_streams_DescribeStream.html",
        test="tests/unit/test_local_streams_api.py::"
        "test_describe_stream_pages_from_after_the_exclusive_start_shard_and_filters_children",
        targets=(
            "moto.dynamodbstreams.responses:DynamoDBStreamsHandler.describe_stream",
            "moto.dynamodbstreams.responses:DynamoDBStreamsHandler.list_streams",
        ),
        errors=(
            ("dynamodbstreams:DescribeStream", "ValidationException"),
            ("dynamodbstreams:DescribeStream", "ResourceNotFoundException"),
            ("dynamodbstreams:ListStreams", "ValidationException"),
        ),
    ),
    Behaviour(
        id="dynamodb.streams-iterators",
        service="dynamodb",
        rule="GetShardIterator needs a SequenceNumber for AT_SEQUENCE_NUMBER and AFTER_SEQUENCE_NUMBER and takes "
        "none for TRIM_HORIZON and LATEST (ValidationException); a shard the stream lacks is "
        "ResourceNotFoundException 'Requested resource not found: Shard does not exist'; GetRecords refuses a "
        "Limit over 1000 and an iterator it never handed out (ValidationException).",
        source=DDB_API + "API_streams_GetShardIterator.html",
        test="tests/unit/test_local_streams_api.py::"
        "test_get_shard_iterator_needs_a_sequence_number_exactly_where_its_type_does",
        targets=(
            "moto.dynamodbstreams.responses:DynamoDBStreamsHandler.get_shard_iterator",
            "moto.dynamodbstreams.responses:DynamoDBStreamsHandler.get_records",
        ),
        errors=(
            ("dynamodbstreams:GetShardIterator", "ValidationException"),
            ("dynamodbstreams:GetShardIterator", "ResourceNotFoundException"),
            ("dynamodbstreams:GetRecords", "ValidationException"),
        ),
    ),
    Behaviour(
        id="dynamodb.stream-enable-once",
        service="dynamodb",
        rule="UpdateTable enabling a stream on a table that has one (another view type included) is "
        "ValidationException 'Table already has an enabled stream: TableName: <name>'; disabling a stream on a "
        "table without one is a ValidationException too; a disabled stream takes no more records and stays "
        "listed, described (DISABLED, its shard closed with an EndingSequenceNumber) and readable for 24 hours, a "
        "closed shard read to its end giving no next iterator; a new stream can then be enabled under a new ARN.",
        source=DDB_API + "API_UpdateTable.html",
        test="tests/unit/test_local_streams_api.py::"
        "test_a_disabled_stream_stays_readable_closed_and_a_new_one_can_be_enabled",
        targets=("moto.dynamodb.models:DynamoDBBackend.update_table_streams",),
        errors=(("dynamodb:UpdateTable", "ValidationException"),),
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
