"""The behaviours of the local AWS outside DynamoDB: S3, Lambda, CloudFormation, CloudWatch (IAM and
authentication: access.py)."""

from __future__ import annotations

from local.behaviours.registry import (
    CFN_GUIDE,
    CFN_TEMPLATES,
    CW_API,
    LAMBDA_GUIDE,
    S3_GUIDE,
    Behaviour,
)

_CFN = "moto.cloudformation.models"

BEHAVIOURS: tuple[Behaviour, ...] = (
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
            "moto.s3.models:S3Backend.put_object",
        ),
        errors=(("s3:DeleteObject", "PreconditionFailed"), ("s3:DeleteObject", "NoSuchKey")),
    ),
    Behaviour(
        id="s3.conditional-writes",
        service="s3",
        rule="PutObject with If-None-Match: * writes only when no object has the key, with If-Match only over the "
        "object of that ETag (412 PreconditionFailed otherwise, 404 NoSuchKey for If-Match on a missing key); the "
        "condition and the write are one step, so of two racing writers one loses (412, or 409 "
        "ConditionalRequestConflict); If-None-Match takes only * (501 NotImplemented).",
        # and the PutObject API reference's If-None-Match and If-Match
        source=S3_GUIDE + "conditional-writes.html",
        test="tests/unit/test_lock.py::test_racing_writers_one_wins_and_the_other_is_refused",
        targets=("moto.s3.responses:S3Response.put_object",),
        differs=("s3.put-if-none-match-etag|error|ok->NotImplemented",),
        errors=(("s3:PutObject", "PreconditionFailed"), ("s3:PutObject", "NotImplemented")),
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
        targets=(
            "moto.s3.models:FakeBucket.create_from_cloudformation_json",
            "moto.s3.models:FakeBucket.update_from_cloudformation_json",
        ),
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
        targets=(
            "moto.awslambda.models:EventSourceMapping.__init__",
            "moto.awslambda.models:EventSourceMapping.get_configuration",
            "moto.awslambda.models:EventSourceMapping.update_from_cloudformation_json",
            "moto.awslambda.models:LambdaBackend.delete_event_source_mapping",
        ),
        unchecked="plain moto delivers through Docker, which the machine lacks: the side-by-side scenarios exclude "
        "Lambda delivery",
    ),
    Behaviour(
        id="lambda.starting-position-required",
        service="lambda",
        rule="A mapping on a DynamoDB or Kinesis stream needs StartingPosition (InvalidParameterValueException).",
        source=LAMBDA_GUIDE + "API_CreateEventSourceMapping.html",
        test="tests/unit/test_local_kinesis_mapping.py::test_creating_a_mapping_needs_the_kinesis_reads_and_a_starting_position",
        targets=("moto.awslambda.models:LambdaBackend.create_event_source_mapping",),
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
        targets=("moto.awslambda.models:LambdaBackend.update_event_source_mapping",),
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
        targets=(
            "moto.awslambda.models:LambdaBackend.delete_function",
            "moto.awslambda.models:LambdaStorage.publish_version",
            "moto.awslambda.models:LambdaVersion.create_from_cloudformation_json",
            "moto.awslambda.models:LambdaVersion.update_from_cloudformation_json",
            "moto.awslambda.models:LambdaVersion.has_cfn_attr",
        ),
        errors=(("lambda:DeleteFunction", "ResourceConflictException"),),
        replaces=(("AWS::Lambda::Version", "CodeSha256"), ("AWS::Lambda::Alias", "Name")),
    ),
    Behaviour(
        id="lambda.runs-without-docker",
        service="lambda",
        rule="Invoke runs the function's deployed code with the configuration its template or API call gave it "
        "(layers, including the public Powertools layer, logging, SnapStart...) and answers as Lambda (a function "
        "error in X-Amz-Function-Error; InvocationType Event is 202).",
        source="https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html",
        test="tests/integration/test_local_aws.py::test_errors_timeouts_and_crashes_are_function_errors",
        targets=(
            "moto.awslambda.models:LambdaFunction.invoke",
            "moto.awslambda.models:LambdaFunction.__init__",
            "moto.awslambda.models:LambdaFunction.get_configuration",
            "moto.awslambda.models:LambdaFunction.update_configuration",
            "moto.awslambda.models:LambdaFunction.create_from_cloudformation_json",
            "moto.awslambda.models:LambdaFunction.update_from_cloudformation_json",
            "moto.awslambda.models:LambdaBackend.layers_versions_by_arn",
        ),
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
        rule="An update creates replacements first and deletes old resources in the cleanup phase (keeping those "
        "whose DeletionPolicy, or for a replacement UpdateReplacePolicy, is Retain); a failed step rolls the stack "
        "back to its previous resources (UPDATE_ROLLBACK_FAILED when the rollback fails).",
        source=CFN_GUIDE + "using-cfn-updating-stacks-update-behaviors.html",
        test="tests/integration/test_cfn_updates.py::"
        "test_a_failed_update_deletes_what_it_created_and_restores_what_it_changed",
        targets=(
            "moto.cloudformation.parsing:ResourceMap.update",
            "moto.cloudformation.parsing:parse_and_update_resource",
            "moto.cloudformation.models:CloudFormationBackend._resolve_update_parameters",
            "moto.cloudformation.models:CloudFormationBackend.delete_stack",
            "moto.cloudformation.models:Stack.update",
            "moto.cloudformation.models:Stack.create_resources",
            "moto.cloudformation.models:Stack.stack_resources",
        ),
        replaces=(("AWS::Logs::LogGroup", "LogGroupName"), ("AWS::SNS::Topic", "TopicName")),
    ),
    Behaviour(
        id="cloudformation.list-parameters",
        service="cloudformation",
        rule="DescribeStacks answers a CommaDelimitedList or List<...> parameter's value comma-joined, as it was "
        "given (the CDK bootstrap's CloudFormationExecutionPolicies read back as ARNs), and a NoEcho one masked.",
        source="https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_Parameter.html",
        test="tests/unit/test_bootstrap_findings.py::test_an_administrator_execution_role_warns_and_stops_a_preview",
        targets=("moto.cloudformation.models:Stack.parameter_list",),
        unchecked="botocore's model types ParameterValue as a string, which moto's text of a Python list also "
        "is: no reference tells the two apart",
    ),
    Behaviour(
        id="cloudformation.acting-role",
        service="cloudformation",
        rule="A stack operation given a role (RoleARN; a change set's, an update's, else the stack's) creates, "
        "updates and deletes each resource as a session of that role (AWSCloudFormation): a call the role may not "
        "make (a table's dynamodb:CreateTable, a function's lambda:CreateFunction and iam:PassRole of its role, "
        "...; then the read the handler waits on and a call per property that needs one: a table's "
        "dynamodb:TagResource for Tags, UpdateContinuousBackups for PITR, a role's iam:PutRolePolicy, ...; a type "
        "not listed: its registry handler's first permission) fails the resource with 'Resource "
        'handler returned message: "User: <session> is not authorized to perform: ..." (HandlerErrorCode: '
        "AccessDenied)' and the stack rolls back (a deletion ends DELETE_FAILED). DeleteStack's own RoleARN becomes "
        "the role; an operation given no role at all acts as its caller ('User: <caller> is not authorized ...').",
        source=CFN_GUIDE + "using-iam-servicerole.html",
        test="tests/unit/test_local_cfn_acting_role.py::test_a_resource_its_role_may_not_create_fails_and_rolls_back",
        targets=(
            "moto.cloudformation.parsing:parse_and_create_resource",
            "moto.cloudformation.parsing:ResourceMap._delete_resource",
            "moto.cloudformation.responses:CloudFormationResponse.delete_stack",
            "moto.cloudformation.parsing:ResourceMap.delete",
        ),
        unchecked="no independent reference evaluates a service role; each call it authorizes is held to its "
        "type's registry schema handler permissions (cfn-lint's copy; tests/conformance/test_references.py)",
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
        targets=(
            "moto.cloudformation.models:CloudFormationBackend.describe_change_set",
            "moto.cloudformation.models:CloudFormationBackend.delete_change_set",
            "moto.cloudformation.models:CloudFormationBackend.execute_change_set",
            "moto.cloudformation.models:CloudFormationBackend.list_change_sets",
            "moto.cloudformation.responses:CloudFormationResponse.describe_change_set",
            "moto.cloudformation.responses:CloudFormationResponse.delete_change_set",
            "moto.cloudformation.responses:CloudFormationResponse.execute_change_set",
            "moto.cloudformation.responses:CloudFormationResponse.list_change_sets",
        ),
        errors=(("cloudformation:DescribeChangeSet", "ChangeSetNotFound"),),
    ),
    Behaviour(
        id="cloudformation.resource-import",
        service="cloudformation",
        rule="An IMPORT change set adopts existing resources that have a DeletionPolicy and match the template.",
        source=CFN_GUIDE + "resource-import.html",
        test="tests/unit/test_local_cfn_import.py::test_an_import_without_a_deletion_policy_is_refused",
        targets=("moto.cloudformation.responses:CloudFormationResponse.create_change_set",),
        differs=(
            "import.describe-change-set|+member|Changes[].ResourceChange.*",
            "import.execute|error|unparsable->ok",
            "import.describe-stack|value|Stacks[].StackStatus=IMPORT_COMPLETE",
            "import.describe-stack|-value|Stacks[].StackStatus=CREATE_COMPLETE",
        ),
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
        "replaced when its Name changes; resharding leaves a parent's records in the parent.",
        source=CFN_TEMPLATES + "aws-resource-kinesis-stream.html",
        test="tests/unit/test_local_kinesis_destination.py::"
        "test_template_stream_and_table_destination_created_updated_and_deleted",
        targets=(
            "moto.kinesis.models:Stream.put_record",
            "moto.kinesis.models:Stream.get_shard_for_key",
            "moto.kinesis.models:Stream.split_shard",
            "moto.kinesis.models:Stream.merge_shards",
            "moto.kinesis.models:Stream.to_json",
            "moto.kinesis.models:Stream.to_json_summary",
            "moto.kinesis.models:Stream.create_from_cloudformation_json",
            "moto.kinesis.models:Stream.update_from_cloudformation_json",
        ),
        replaces=(("AWS::Kinesis::Stream", "Name"),),
    ),
    Behaviour(
        id="kinesis.fan-out-consumers",
        service="kinesis",
        rule="An enhanced fan-out consumer's ARN ends with its creation time (:<epoch seconds>); deregistering by "
        "stream and name removes that consumer; AWS::Kinesis::StreamConsumer registers one (Ref and ConsumerARN its "
        "ARN, replaced on any change); a Lambda mapping reads through one with SubscribeToShard on it.",
        source="https://docs.aws.amazon.com/kinesis/latest/APIReference/API_RegisterStreamConsumer.html",
        test="tests/unit/test_local_kinesis_fan_out.py::"
        "test_a_consumers_arn_is_as_aws_gives_it_and_deregistering_by_name_removes_that_one",
        targets=(
            "moto.kinesis.models:Consumer.__init__",
            "moto.kinesis.models:KinesisBackend.deregister_stream_consumer",
        ),
        replaces=(
            ("AWS::Kinesis::StreamConsumer", "ConsumerName"),
            ("AWS::Kinesis::StreamConsumer", "StreamARN"),
            ("AWS::Kinesis::StreamConsumer", "Tags"),
        ),
    ),
    Behaviour(
        id="cloudformation.table-in-place-updates",
        service="cloudformation",
        rule="A template's table is updated in place (indexes, stream, TTL, PITR, throughput, options, tags) unless "
        "its name, key schema, LSIs or import source change, which replace it.",
        source=CFN_TEMPLATES + "aws-resource-dynamodb-table.html",
        test="tests/unit/test_local_indexes.py::test_stack_update_changes_gsi_throughput_in_place",
        targets=(
            "moto.dynamodb.models.table:Table.create_from_cloudformation_json",
            "moto.dynamodb.models.table:Table.update_from_cloudformation_json",
        ),
        replaces=(
            ("AWS::DynamoDB::Table", "TableName"),
            ("AWS::DynamoDB::Table", "KeySchema"),
            ("AWS::DynamoDB::Table", "ImportSourceSpecification"),
        ),
    ),
    Behaviour(
        id="cloudformation.iam-roles",
        service="iam",
        rule="A template's role attaches its ManagedPolicyArns (AWS managed policies included), updates its policies "
        "in place, and is replaced when its RoleName or Path changes; a managed policy updates to a new version.",
        source=CFN_TEMPLATES + "aws-resource-iam-role.html",
        test="tests/unit/test_local_templates.py::test_a_templates_role_attaches_its_managed_policies_and_updates_them",
        targets=(
            "moto.iam.models:IAMBackend.attach_role_policy",
            "moto.iam.models:Role.create_from_cloudformation_json",
            "moto.iam.models:Role.update_from_cloudformation_json",
            "moto.iam.models:Role.delete_from_cloudformation_json",
            "moto.iam.models:ManagedPolicy.update_from_cloudformation_json",
        ),
        replaces=(("AWS::IAM::Role", "RoleName"), ("AWS::IAM::Role", "Path")),
    ),
    Behaviour(
        id="cloudformation.kms-key",
        service="kms",
        rule="A template's key keeps its tags (Key/Value), its key policy (read back as JSON text) and rotation, "
        "and updates them in place.",
        source=CFN_TEMPLATES + "aws-resource-kms-key.html",
        test="tests/unit/test_local_dynamodb_security.py::test_a_templates_kms_key_keeps_its_tags_policy_and_rotation",
        targets=(
            "moto.kms.models:Key.create_from_cloudformation_json",
            "moto.kms.models:Key.update_from_cloudformation_json",
        ),
        unchecked="the schema lists no create-only property of a key and the side-by-side scenarios deploy no key "
        "template (plain moto fails a template's Key/Value tags outright)",
    ),
    Behaviour(
        id="cloudformation.log-group",
        service="logs",
        rule="A template's log group keeps RetentionInDays, adopts a group the function created first, answers "
        "GetAtt Arn ending in :*, and is replaced when its LogGroupName changes.",
        source=CFN_TEMPLATES + "aws-resource-logs-loggroup.html",
        test="tests/unit/test_local_templates.py::test_a_templates_log_group_keeps_its_retention_and_its_arn_form",
        targets=(
            "moto.logs.models:LogGroup.create_from_cloudformation_json",
            "moto.logs.models:LogGroup.update_from_cloudformation_json",
            "moto.logs.models:LogGroup.get_cfn_attribute",
        ),
        replaces=(("AWS::Logs::LogGroup", "LogGroupName"),),
    ),
    # ---- CloudWatch ----
    Behaviour(
        id="cloudwatch.dashboards-global",
        service="cloudwatch",
        rule="Dashboards are global to the account: one put in any region is got, listed, tagged and deleted from "
        "every region; DeleteDashboards deletes those of its names that exist.",
        source=CW_API + "API_PutDashboard.html",
        test="tests/unit/test_local_dashboard.py::test_a_dashboard_is_global_to_the_account",
        targets=(
            "moto.cloudwatch.models:CloudWatchBackend.put_dashboard",
            "moto.cloudwatch.models:CloudWatchBackend.get_dashboard",
            "moto.cloudwatch.models:CloudWatchBackend.list_dashboards",
            "moto.cloudwatch.models:CloudWatchBackend.delete_dashboards",
            "moto.cloudwatch.models:CloudWatchBackend.list_tags_for_resource",
        ),
        unchecked="the side-by-side scenarios make no dashboard and the references model no region: PutDashboard's "
        'documentation in botocore\'s model says it ("All dashboards in your account are global")',
    ),
    Behaviour(
        id="cloudwatch.dashboard-body-validated",
        service="cloudwatch",
        rule="PutDashboard refuses a body that is not a JSON object with a widgets array of objects, or a metric "
        "row that is not an array (InvalidParameterInput listing each error's dataPath, also in "
        "DashboardValidationMessages), and a name outside 1-255 of A-Z, a-z, 0-9, - and _; its Tags apply to a new "
        "dashboard only.",
        source=CW_API + "API_PutDashboard.html",
        test="tests/unit/test_local_dashboard.py::test_put_dashboard_refuses_a_body_cloudwatch_refuses",
        targets=("moto.cloudwatch.responses:CloudWatchResponse.put_dashboard",),
        errors=(("cloudwatch:PutDashboard", "InvalidParameterInput"),),
    ),
    Behaviour(
        id="cloudformation.dashboard",
        service="cloudwatch",
        rule="AWS::CloudWatch::Dashboard's body is checked as PutDashboard checks it (the stack fails with "
        "CloudWatch's message), an update puts the new body and tags in place, and a new DashboardName replaces it.",
        source=CFN_TEMPLATES + "aws-resource-cloudwatch-dashboard.html",
        test="tests/unit/test_local_dashboard.py::test_a_templates_dashboard_is_created_updated_replaced_and_deleted",
        targets=(
            "moto.cloudwatch.models:Dashboard.create_from_cloudformation_json",
            "moto.cloudwatch.models:Dashboard.update_from_cloudformation_json",
        ),
        replaces=(("AWS::CloudWatch::Dashboard", "DashboardName"),),
    ),
)
