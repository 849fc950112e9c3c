"""CloudFormation updates on the local AWS at the API level: rollback, change sets, events, and AWS's constraints.

Small templates through boto3 (no CDK): a mapping replaced on the same stream and function meets Lambda's 409
and the update rolls back to the previous resources and configuration; change sets belong to a stack id;
ListStackResources answers in CloudFormation's shape after a failed create; GSI and TTL limits as on AWS.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.support import localaws as lt

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

HANDLER = "def handler(event, context):\n    return {}\n"


def _template(table: str, *, position: str = "TRIM_HORIZON", batch: int = 10, gsi: bool = False,
              pitr: bool = False, extra: dict[str, Any] | None = None) -> str:  # fmt: skip
    table_props: dict[str, Any] = {
        "TableName": table,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "g", "AttributeType": "S"},
        ],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": pitr},
    }
    if gsi:
        table_props["GlobalSecondaryIndexes"] = [
            {
                "IndexName": "byg",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
    resources: dict[str, Any] = {
        "Table": {"Type": "AWS::DynamoDB::Table", "Properties": table_props},
        "Role": {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "AssumeRolePolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "lambda.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                        }
                    ],
                },
                "Policies": [
                    {
                        "PolicyName": "stream",
                        "PolicyDocument": {
                            "Version": "2012-10-17",
                            "Statement": [
                                {
                                    "Effect": "Allow",
                                    "Action": [
                                        "dynamodb:DescribeStream",
                                        "dynamodb:GetRecords",
                                        "dynamodb:GetShardIterator",
                                        "dynamodb:ListStreams",
                                    ],
                                    "Resource": "*",
                                }
                            ],
                        },
                    }
                ],
            },
        },
        "Function": {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Runtime": "python3.13",
                "Handler": "index.handler",
                "Role": {"Fn::GetAtt": ["Role", "Arn"]},
                "Code": {"ZipFile": HANDLER},
            },
        },
        "Mapping": {
            "Type": "AWS::Lambda::EventSourceMapping",
            "Properties": {
                "EventSourceArn": {"Fn::GetAtt": ["Table", "StreamArn"]},
                "FunctionName": {"Ref": "Function"},
                "StartingPosition": position,
                "BatchSize": batch,
            },
        },
        **(extra or {}),
    }
    return json.dumps({"Resources": resources, "Outputs": {"Uuid": {"Value": {"Ref": "Mapping"}}}})


def _status(cfn: Any, name: str) -> dict[str, Any]:
    return cfn.describe_stacks(StackName=name)["Stacks"][0]  # type: ignore[no-any-return]


def _settled(cfn: Any, name: str) -> dict[str, Any]:
    return lt.wait_for(
        lambda: (s := _status(cfn, name))["StackStatus"].endswith(("_COMPLETE", "_FAILED")) and s,
        what=f"{name} to settle",
    )


@pytest.fixture()
def names() -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]
    return f"cfn-{suffix}", f"cfn-table-{suffix}"


def test_a_replaced_mapping_on_the_same_function_meets_the_409_and_the_update_rolls_back(
    local_aws: lt.LocalAWS, names: tuple[str, str]
) -> None:
    # GIVEN a stack whose mapping targets the function itself (no alias), no GSI, PITR off
    cfn, lam, ddb = (local_aws.client(s) for s in ("cloudformation", "lambda", "dynamodb"))
    stack, table = names
    cfn.create_stack(StackName=stack, TemplateBody=_template(table))
    assert _settled(cfn, stack)["StackStatus"] == "CREATE_COMPLETE"
    before = lam.list_event_source_mappings(FunctionName=_function(cfn, stack))["EventSourceMappings"]
    # WHEN one update adds a GSI, turns PITR on and changes the mapping's starting position (a replacement)
    cfn.update_stack(StackName=stack, TemplateBody=_template(table, position="LATEST", gsi=True, pitr=True))
    final = _settled(cfn, stack)
    # THEN the replacement met Lambda's 409 (the old mapping still existed) and everything is as before
    assert final["StackStatus"] == "UPDATE_ROLLBACK_COMPLETE"
    failed = [e for e in cfn.describe_stack_events(StackName=stack)["StackEvents"]
              if e["ResourceStatus"] == "UPDATE_FAILED" and e["LogicalResourceId"] == "Mapping"]  # fmt: skip
    assert (
        failed
        and "provided mapping already exists. Please update or delete the existing mapping with UUID "
        + (before[0]["UUID"])
        in failed[0]["ResourceStatusReason"]
    )
    assert "The event source arn (" in failed[0]["ResourceStatusReason"]
    after = lam.list_event_source_mappings(FunctionName=_function(cfn, stack))["EventSourceMappings"]
    assert [(m["UUID"], m["StartingPosition"]) for m in after] == [(before[0]["UUID"], "TRIM_HORIZON")]
    described = ddb.describe_table(TableName=table)["Table"]
    assert described.get("GlobalSecondaryIndexes", []) == []
    backups = ddb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
    assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "DISABLED"
    body = cfn.get_template(StackName=stack)["TemplateBody"]
    assert (json.loads(body) if isinstance(body, str) else body) == json.loads(_template(table))
    # AND the stack stays updatable: an in-place change goes through
    cfn.update_stack(StackName=stack, TemplateBody=_template(table, batch=5))
    assert _settled(cfn, stack)["StackStatus"] == "UPDATE_COMPLETE"
    updated = lam.get_event_source_mapping(UUID=before[0]["UUID"])
    assert updated["BatchSize"] == 5
    cfn.delete_stack(StackName=stack)


def test_a_failed_update_deletes_what_it_created_and_restores_what_it_changed(
    local_aws: lt.LocalAWS, names: tuple[str, str]
) -> None:
    # GIVEN a stack, and a bucket that already exists under the name the update will ask for
    cfn, ddb, s3 = (local_aws.client(s) for s in ("cloudformation", "dynamodb", "s3"))
    stack, table = names
    taken = f"{table}-taken"
    s3.create_bucket(Bucket=taken)
    cfn.create_stack(StackName=stack, TemplateBody=_template(table))
    assert _settled(cfn, stack)["StackStatus"] == "CREATE_COMPLETE"
    # WHEN an update turns PITR on, adds a queue-free resource and a bucket whose name is taken (after the table)
    extra = {
        "Made": {"Type": "AWS::S3::Bucket", "Properties": {}},
        "Clash": {
            "Type": "AWS::S3::Bucket",
            "Properties": {"BucketName": taken, "Tags": [{"Key": "t", "Value": {"Ref": "Table"}}]},
            "DependsOn": ["Made"],
        },
    }
    buckets_before = {b["Name"] for b in s3.list_buckets()["Buckets"]}
    cfn.update_stack(StackName=stack, TemplateBody=_template(table, pitr=True, extra=extra))
    # THEN it rolls back: PITR is off again, the bucket it made is gone, the stack lists its old resources
    assert _settled(cfn, stack)["StackStatus"] == "UPDATE_ROLLBACK_COMPLETE"
    backups = ddb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
    assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "DISABLED"
    assert {b["Name"] for b in s3.list_buckets()["Buckets"]} == buckets_before
    listed = cfn.list_stack_resources(StackName=stack)["StackResourceSummaries"]
    assert sorted(r["LogicalResourceId"] for r in listed) == ["Function", "Mapping", "Role", "Table"]
    cfn.delete_stack(StackName=stack)
    s3.delete_bucket(Bucket=taken)


def test_change_sets_belong_to_a_stack_id(local_aws: lt.LocalAWS, names: tuple[str, str]) -> None:
    cfn = local_aws.client("cloudformation")
    stack, table = names
    # GIVEN a stack created through a change set, then deleted
    cfn.create_change_set(StackName=stack, ChangeSetName="cs", TemplateBody=_template(table),
                          ChangeSetType="CREATE")  # fmt: skip
    cfn.execute_change_set(StackName=stack, ChangeSetName="cs")
    assert _settled(cfn, stack)["StackStatus"] == "CREATE_COMPLETE"
    cfn.delete_stack(StackName=stack)
    # WHEN a stack of the same name is created again
    cfn.create_stack(StackName=stack, TemplateBody=_template(table))
    assert _settled(cfn, stack)["StackStatus"] == "CREATE_COMPLETE"
    # THEN the deleted stack's change set does not answer for it, and deleting it (missing) succeeds
    with pytest.raises(cfn.exceptions.ChangeSetNotFoundException):
        cfn.describe_change_set(StackName=stack, ChangeSetName="cs")
    cfn.delete_change_set(StackName=stack, ChangeSetName="cs")
    assert cfn.list_change_sets(StackName=stack)["Summaries"] == []
    # AND ListChangeSets lists only the stack's own
    cfn.create_change_set(StackName=stack, ChangeSetName="mine", TemplateBody=_template(table, batch=3),
                          ChangeSetType="UPDATE")  # fmt: skip
    other, other_table = f"{stack}-other", f"{table}-other"
    cfn.create_change_set(StackName=other, ChangeSetName="theirs", TemplateBody=_template(other_table),
                          ChangeSetType="CREATE")  # fmt: skip
    assert [c["ChangeSetName"] for c in cfn.list_change_sets(StackName=stack)["Summaries"]] == ["mine"]
    # AND each resource has its own events (the CLI's progress counts them)
    events = cfn.describe_stack_events(StackName=stack)["StackEvents"]
    done = {e["LogicalResourceId"] for e in events if e["ResourceStatus"] == "CREATE_COMPLETE"}
    assert {"Table", "Role", "Function", "Mapping"} <= done
    cfn.delete_change_set(StackName=other, ChangeSetName="theirs")
    cfn.delete_stack(StackName=stack)


def test_a_failed_create_lists_its_resources_in_cloudformations_shape(
    local_aws: lt.LocalAWS, names: tuple[str, str]
) -> None:
    # GIVEN a table that exists outside any stack
    cfn, ddb = local_aws.client("cloudformation"), local_aws.client("dynamodb")
    stack, table = names
    ddb.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])  # fmt: skip
    # WHEN a stack declaring the same table is created
    cfn.create_change_set(StackName=stack, ChangeSetName="cs", TemplateBody=_template(table),
                          ChangeSetType="CREATE")  # fmt: skip
    cfn.execute_change_set(StackName=stack, ChangeSetName="cs")
    # THEN it ends ROLLBACK_COMPLETE, ListStackResources answers (botocore parses it), the table stays
    assert _settled(cfn, stack)["StackStatus"] == "ROLLBACK_COMPLETE"
    listed = cfn.list_stack_resources(StackName=stack)["StackResourceSummaries"]
    assert all(r["LogicalResourceId"] != "Table" for r in listed)
    assert ddb.describe_table(TableName=table)["Table"]["TableStatus"] == "ACTIVE"
    cfn.delete_stack(StackName=stack)
    ddb.delete_table(TableName=table)


def test_a_gsi_backfills_and_one_change_per_update(local_aws: lt.LocalAWS, names: tuple[str, str]) -> None:
    ddb = local_aws.client("dynamodb")
    _, table = names
    # GIVEN a table holding an item
    ddb.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])  # fmt: skip
    ddb.put_item(TableName=table, Item={"pk": {"S": "old"}, "g": {"S": "x"}})
    index = {
        "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "ALL"},
    }
    # WHEN two GSIs are asked for in one UpdateTable
    with pytest.raises(ddb.exceptions.LimitExceededException, match="Only 1 online index"):
        ddb.update_table(TableName=table, AttributeDefinitions=[{"AttributeName": "g", "AttributeType": "S"}],
                         GlobalSecondaryIndexUpdates=[{"Create": {"IndexName": n, **index}} for n in ("idx-a", "idx-b")])  # fmt: skip
    # AND then one, its backfill held open by the local AWS's clock control until the test has looked
    assert local_aws.faults.hold_backfill(table) == [lt.REGION]
    ddb.update_table(TableName=table, AttributeDefinitions=[{"AttributeName": "g", "AttributeType": "S"}],
                     GlobalSecondaryIndexUpdates=[{"Create": {"IndexName": "idx-a", **index}}])  # fmt: skip
    ddb.put_item(TableName=table, Item={"pk": {"S": "new"}, "g": {"S": "x"}})

    def query() -> list[str]:
        found = ddb.query(TableName=table, IndexName="idx-a", KeyConditionExpression="g = :g",
                          ExpressionAttributeValues={":g": {"S": "x"}})["Items"]  # fmt: skip
        return sorted(i["pk"]["S"] for i in found)

    def status() -> str:
        return ddb.describe_table(TableName=table)["Table"]["GlobalSecondaryIndexes"][0]["IndexStatus"]

    # THEN while it is CREATING a query on it is refused as DynamoDB refuses it; once ACTIVE it sees both items
    assert status() == "CREATING"
    with pytest.raises(ClientError) as refused:
        query()
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "backfilling global secondary index: idx-a" in str(refused.value)
    local_aws.faults.hold_backfill(table, held=False)
    lt.wait_for(lambda: status() == "ACTIVE", what="the index to be ACTIVE")
    assert query() == ["new", "old"]
    ddb.delete_table(TableName=table)


def _function(cfn: Any, stack: str) -> str:
    resources = cfn.list_stack_resources(StackName=stack)["StackResourceSummaries"]
    return next(r["PhysicalResourceId"] for r in resources if r["LogicalResourceId"] == "Function")
