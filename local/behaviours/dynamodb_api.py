"""The DynamoDB behaviours of the local AWS's request handling: what a request must be before it runs (its shape,
its expressions and legacy parameters, its keys and starting keys), how a projection and the consumed capacity
are answered, and the DynamoDB Streams API."""

from __future__ import annotations

from local.behaviours.registry import (
    DDB_API,
    DDB_GUIDE,
    Behaviour,
)

BEHAVIOURS: tuple[Behaviour, ...] = (
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
        "empty, or with a key no expression uses; never an HTTP 500. A compressed body (gzip members, one deflate "
        "stream) is read inflated; one that does not inflate, inflates past 16 MB or has another encoding is "
        "answered HTTP 500, as DynamoDB answers it. A TableName that is not an ARN is held to a table name's rules "
        "(3 to 255 of [a-zA-Z0-9_.-]) in every operation. An AttributeValue carries exactly one type ('Supplied "
        "AttributeValue is empty, must contain exactly one of the supported datatypes', '... has more than one "
        "datatypes set ...'); a body past 16 MB as sent is HTTP 413.",
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
        "compare as false (a string attribute < a number is not true, and not an error); begins_with, size and "
        "attribute_type read a value operand as well as a path (only attribute_exists/attribute_not_exists need a "
        "path), a request's value of a type the operator cannot read is 'Incorrect operand type' while an item's "
        "is a false condition, a syntax error is named before an unused value, and if_not_exists/list_append are "
        "'not allowed to be used this way' in a condition. An expression holds at most 300 operators and functions "
        "('too many operators; operator count: 301') and 4,096 bytes (projections and update expressions too).",
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
        id="dynamodb.projection",
        service="dynamodb",
        rule="A ProjectionExpression's document paths are read as expression paths (members and [index] steps) and "
        "each keeps only what it names, a list element inside a list of the elements named; a path into what is not "
        "there keeps nothing; more than 32 levels, an index past 2^31-1, overlapping or conflicting paths are "
        "refused ('Invalid ProjectionExpression: Two document paths overlap with each other; ...').",
        source=DDB_GUIDE + "Expressions.ProjectionExpressions.html",
        test="tests/unit/test_local_projection.py::test_paths_dynamodb_cannot_read_together_are_refused_in_its_words",
        targets=(
            "moto.dynamodb.responses:ProjectionExpressionParser.parse",
            "moto.dynamodb.models.dynamo_type:Item.project",
        ),
        errors=(("dynamodb:GetItem", "ValidationException"), ("dynamodb:Scan", "ValidationException")),
        differs=("dynamodb.get-item-projection|error|ok->ValidationException",),
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
        unchecked="no scenario of the conformance tier can compare it: the scenarios compare no numbers (counts and "
        "sizes differ between any two servers); the outside suite (make conformance-external) checks the units "
        "against AWS",
    ),
    Behaviour(
        id="dynamodb.attribute-updates-put",
        service="dynamodb",
        rule="The legacy AttributeUpdates apply as DynamoDB applies them: PUT stores the value with its own type (a "
        "binary, a binary set, a boolean, a NULL); ADD adds a number exactly, unites a set or appends to a list; "
        "DELETE removes the attribute, or a set's members; a value but for DELETE, a DELETE value that is a set and "
        "an ADD value that is a number, set or list are required, and an ADD or DELETE on an attribute of another "
        "type is 'Type mismatch for attribute to update'.",
        source=DDB_API + "API_AttributeValueUpdate.html",
        test="tests/unit/test_local_legacy_conditions.py::test_attribute_updates_and_arithmetic_as_dynamodb_applies_"
        "them",
        targets=("moto.dynamodb.models.dynamo_type:Item.update_with_attribute_updates",),
        errors=(("dynamodb:UpdateItem", "ValidationException"),),
    ),
    Behaviour(
        id="dynamodb.list-append-operands",
        service="dynamodb",
        rule="list_append with an operand that is not there is 'The provided expression refers to an attribute that "
        "does not exist in the item', on either side; two actions of one update on overlapping paths (a and a.b, "
        "a[1] and a[1][1]) or conflicting ones (a.b and a[1]) are 'Invalid UpdateExpression: Two document paths "
        "overlap|conflict with each other; ...', before the item is read; a SET value with a second + or - is "
        "'Invalid UpdateExpression: Syntax error; token: \"+\", near: ...'; an action may read a key attribute "
        "(SET n = pk) but not write it; an action stepping into a value of another kind (SET a.c of a string, "
        "REMOVE b.c of a list, a map's m[0]) is 'The document path provided in the update expression is invalid for "
        "update'; list elements are set and removed by their numbers in the list as it was (SETs past the end "
        "appended in element order, REMOVEs after the SETs).",
        source=DDB_GUIDE + "Expressions.UpdateExpressions.html",
        test="tests/unit/test_local_legacy_conditions.py::test_list_append_of_a_missing_attribute_is_refused_on_"
        "either_side",
        targets=(
            "moto.dynamodb.parsing.validators:UpdateExpressionFunctionEvaluator.process_function",
            "moto.dynamodb.parsing.validators:OverlappingPathsValidator.check_for_overlapping_paths",
            "moto.dynamodb.parsing.validators:UpdateHashRangeKeyValidator._processing_map",
            "moto.dynamodb.parsing.executors:NodeExecutor.get_item_before_end_of_path",
            "moto.dynamodb.parsing.executors:NodeExecutor.get_item_part_in_which_to_perform_action",
            "moto.dynamodb.parsing.executors:UpdateExpressionExecutor.execute",
        ),
        errors=(("dynamodb:UpdateItem", "ValidationException"),),
    ),
    Behaviour(
        id="dynamodb.number-arithmetic",
        service="dynamodb",
        rule="An update's arithmetic (SET a = x + y, x - y, ADD) is exact; a result past 38 significant digits or "
        "a magnitude of 1E+126 is 'Number overflow. Attempting to store a number with magnitude larger than "
        "supported range', below 1E-130 'Number underflow...'. Every number is stored, and read back, in canonical "
        "plain decimal form ('1.0e3' as '1000', '007' as '7', '-0.0' as '0').",
        source=DDB_API + "API_AttributeValue.html",
        test="tests/unit/test_local_legacy_conditions.py::test_attribute_updates_and_arithmetic_as_dynamodb_applies_"
        "them",
        targets=(
            "moto.dynamodb.models.dynamo_type:DynamoType.__add__",
            "moto.dynamodb.models.dynamo_type:DynamoType.__sub__",
        ),
        errors=(("dynamodb:UpdateItem", "ValidationException"),),
    ),
    Behaviour(
        id="dynamodb.key-checks",
        service="dynamodb",
        rule="A key that lacks one of the table's key attributes or gives one another type than declared is 'The "
        "provided key element does not match the schema'; a key attribute (of the table or an index) that is an empty string or "
        "binary, in a key or an item written, is a ValidationException naming it; a partition key past 2,048 bytes or a "
        "sort key past 1,024 (a binary by its bytes) is refused in reads as in writes. A BatchWriteItem is checked whole "
        "before it writes: every request's key, and no two requests (puts or deletes) on one item, numbers compared "
        "by value ('Provided list of item keys contains duplicates').",
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
        rule="An UpdateItem that only removes attributes (an expression of REMOVE clauses, or legacy AttributeUpdates "
        "that are all DELETE) from an item that does not exist makes no item and writes no stream record.",
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
        id="dynamodb.compressed-responses",
        service="dynamodb",
        rule="An answer of DynamoDB or DynamoDB Streams larger than 4,096 bytes is sent gzip- or deflate-encoded "
        "(Content-Encoding, x-amz-crc32 of the bytes sent) when the request's first Accept-Encoding header asks for "
        "one: entries read up to their first ';' without case, only gzip, deflate and * counted, the quality after "
        "the first 'q=' (1 when absent or not a number, at most 1, refused at 0 or below), the best quality "
        "winning, a named coding before one * stands for, then the earlier entry, * standing for gzip first.",
        source=DDB_GUIDE + "Programming.LowLevelAPI.html",
        test="tests/unit/test_local_response_encoding.py::"
        "test_the_coding_is_chosen_as_dynamodb_reads_accept_encoding",
        unchecked="no service model or AWS page states the negotiation (botocore neither asks for nor inflates "
        "such answers); the rule is what the outside suite's test_compressed_response, verified on AWS, observes",
    ),
    Behaviour(
        id="dynamodb.transaction-requests",
        service="dynamodb",
        rule="TransactGetItems takes up to 100 actions and answers each Get as its ProjectionExpression shapes it; "
        "TransactWriteItems with a ClientRequestToken is idempotent for ten minutes (the same request again writes "
        "nothing, another request is IdempotentParameterMismatchException); a key of another type than declared "
        "cancels the transaction with a ValidationError reason for that action and None for the others, while an "
        "action's expression names or values that do not match refuse the whole request (ValidationException).",
        source=DDB_API + "API_TransactWriteItems.html",
        test="tests/unit/test_local_transactions.py::test_a_client_request_token_makes_a_transaction_idempotent",
        targets=(
            "moto.dynamodb.responses:DynamoHandler.transact_get_items",
            "moto.dynamodb.responses:DynamoHandler.transact_write_items",
        ),
        errors=(
            ("dynamodb:TransactWriteItems", "IdempotentParameterMismatchException"),
            ("dynamodb:TransactWriteItems", "TransactionCanceledException"),
            ("dynamodb:TransactGetItems", "ValidationException"),
        ),
    ),
    Behaviour(
        id="dynamodb.item-size",
        service="dynamodb",
        rule="An item may reach 400 KB (409,600 bytes) counted as DynamoDB counts it (a binary's bytes, a number's "
        "two digits a byte plus one, a list's or map's three bytes plus one per element); past it, 'Item size has "
        "exceeded the maximum allowed size'; an item nests at most 32 levels ('Nesting Levels have exceeded "
        "supported limits: ...'). AttributeUpdates that PUT or DELETE an empty set are refused ('An number set  may "
        "not be empty').",
        source=DDB_GUIDE + "CapacityUnitCalculations.html",
        test="tests/unit/test_local_transactions.py::test_an_item_is_counted_in_awss_sizes_up_to_400_kib",
        targets=(
            "moto.dynamodb.models.dynamo_type:LimitedSizeDict.__setitem__",
            "moto.dynamodb.models.dynamo_type:DynamoType.size",
        ),
        errors=(("dynamodb:PutItem", "ValidationException"), ("dynamodb:UpdateItem", "ValidationException")),
    ),
    Behaviour(
        id="dynamodb.tags",
        service="dynamodb",
        rule="A tag request names a table's ARN ('ARNs must start with 'arn:'', an index's 'only table or stream is "
        "accepted', a missing table's ResourceNotFoundException); tag keys of 1-128 and values of 0-256 letters, "
        "digits, spaces and + - = . _ : / @ ('The Tag Key provided is invalid, Key: ...'), no aws: prefix, no key "
        "twice, at most 50 tags a table, a key tagged again replaced; every tag listed at once; a refused request "
        "or CreateTable changes nothing.",
        source=DDB_GUIDE + "Tagging.html",
        test="tests/unit/test_local_tags.py::test_a_tag_dynamodb_refuses_is_refused_in_its_words",
        targets=(
            "moto.dynamodb.responses:DynamoHandler.tag_resource",
            "moto.dynamodb.responses:DynamoHandler.untag_resource",
            "moto.dynamodb.responses:DynamoHandler.list_tags_of_resource",
        ),
        errors=(
            ("dynamodb:TagResource", "ValidationException"),
            ("dynamodb:TagResource", "ResourceNotFoundException"),
            ("dynamodb:ListTagsOfResource", "ValidationException"),
        ),
    ),
    Behaviour(
        id="dynamodb.table-descriptions",
        service="dynamodb",
        rule="Every table description carries its TableId (a UUID) and, on demand, LastUpdateToPayPerRequestDateTime; "
        "DeleteTable answers the table DELETING without its key schema, attribute definitions, creation time or "
        "indexes; an UpdateTable that changes nothing is 'At least one of ProvisionedThroughput, ... is required'.",
        source=DDB_API + "API_DeleteTable.html",
        test="tests/unit/test_local_table_rules.py::"
        "test_descriptions_carry_the_table_id_and_delete_table_describes_a_table_going",
        targets=("moto.dynamodb.responses:DynamoHandler.delete_table",),
        differs=(
            "*|+member|*TableId",
            "*|+member|*.BillingModeSummary.LastUpdateToPayPerRequestDateTime",
            "dynamodb.delete-table|-member|*",
            "dynamodb.delete-table|-value|*",
            "dynamodb.delete-table|value|TableDescription.TableStatus=DELETING",
        ),
        errors=(("dynamodb:UpdateTable", "ValidationException"),),
    ),
)
