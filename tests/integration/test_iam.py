"""IAM enforced by the local AWS: least privilege proven by behaviour, with AWS's refusals.

A stack of its own (a blob root, a GSI, a stream) so that narrowing its consumer's role does not disturb the
other tests. Principals are made through the IAM API as an administrator would: a user holding only the
runtime policy, and the consumer's role assumed directly (its trust policy widened to the account for the test).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from doctable.client import DocClient
from tests.support import localaws as lt

pytestmark = [pytest.mark.integration, pytest.mark.iam, pytest.mark.timeout(600)]

KNOBS = {"env": "dev", "table_base": "itiam", "gsi": "gsi1", "stream": "new-and-old", "blob_root": "blobs/"}
ACCOUNT_ROOT = f"arn:aws:iam::{lt.ACCOUNT}:root"


def _client(aws: lt.LocalAWS, service: str, credentials: dict[str, str]) -> Any:
    return aws.client(service, **credentials)


def _error(call: Callable[[], Any]) -> dict[str, str]:
    with pytest.raises(ClientError) as caught:
        call()
    return dict(caught.value.response["Error"])


@pytest.fixture(scope="module", autouse=True)
def enforced(local_aws: lt.LocalAWS) -> None:
    lt.require_enforced(local_aws)


@pytest.fixture(scope="module")
def stack(deploy: Callable[..., lt.Deployed]) -> lt.Deployed:
    return deploy(KNOBS)


@pytest.fixture(scope="module")
def runtime_user(local_aws: lt.LocalAWS, stack: lt.Deployed) -> Iterator[dict[str, Any]]:
    iam = local_aws.client("iam")
    iam.create_user(UserName="runtime-only")
    iam.attach_user_policy(UserName="runtime-only", PolicyArn=stack.outputs["RuntimePolicyArn"])
    key = iam.create_access_key(UserName="runtime-only")["AccessKey"]
    yield {
        "arn": iam.get_user(UserName="runtime-only")["User"]["Arn"],
        "credentials": {
            "aws_access_key_id": key["AccessKeyId"],
            "aws_secret_access_key": key["SecretAccessKey"],
        },
    }
    iam.delete_access_key(UserName="runtime-only", AccessKeyId=key["AccessKeyId"])
    iam.detach_user_policy(UserName="runtime-only", PolicyArn=stack.outputs["RuntimePolicyArn"])
    iam.delete_user(UserName="runtime-only")


@pytest.fixture(scope="module")
def consumer_role(local_aws: lt.LocalAWS, stack: lt.Deployed) -> dict[str, str]:
    function = local_aws.client("lambda").get_function_configuration(
        FunctionName=stack.outputs["ConsumerFunctionName"]
    )
    name = function["Role"].rsplit("/", 1)[1]
    iam = local_aws.client("iam")
    policy_name = next(  # the policy with the consumer's grants (CDK adds a default one for X-Ray)
        policy
        for policy in iam.list_role_policies(RoleName=name)["PolicyNames"]
        if any(
            s.get("Sid") == "DeleteBlobs"
            for s in iam.get_role_policy(RoleName=name, PolicyName=policy)["PolicyDocument"]["Statement"]
        )
    )
    return {"arn": function["Role"], "name": name, "policy": policy_name}


def test_runtime_policy_allows_the_seven_actions_and_the_index_query(
    local_aws: lt.LocalAWS, stack: lt.Deployed, runtime_user: dict[str, Any]
) -> None:
    # GIVEN a principal holding only the runtime policy
    ddb = _client(local_aws, "dynamodb", runtime_user["credentials"])
    table = stack.outputs["TableName"]
    key = {"pk": {"S": "iam"}, "sk": {"S": "1"}}
    # WHEN it uses the seven data-plane actions and queries gsi1 THEN each is allowed
    ddb.put_item(TableName=table, Item={**key, "gsi1pk": {"S": "g"}, "gsi1sk": {"S": "s"}})
    ddb.get_item(TableName=table, Key=key)
    ddb.update_item(
        TableName=table, Key=key, UpdateExpression="SET v = :v", ExpressionAttributeValues={":v": {"N": "1"}}
    )
    ddb.query(
        TableName=table, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "iam"}}
    )
    ddb.query(
        TableName=table,
        IndexName="gsi1",
        KeyConditionExpression="gsi1pk = :p",
        ExpressionAttributeValues={":p": {"S": "g"}},
    )
    ddb.batch_write_item(
        RequestItems={table: [{"PutRequest": {"Item": {"pk": {"S": "iam"}, "sk": {"S": "2"}}}}]}
    )
    got = ddb.batch_get_item(RequestItems={table: {"Keys": [key]}})
    assert len(got["Responses"][table]) == 1
    ddb.delete_item(TableName=table, Key=key)


def test_runtime_policy_lets_the_client_write_and_read_blobs_under_the_blob_root_only(
    local_aws: lt.LocalAWS, stack: lt.Deployed, runtime_user: dict[str, Any]
) -> None:
    # GIVEN an application holding only the runtime policy, using doctable.client
    s3 = _client(local_aws, "s3", runtime_user["credentials"])
    bucket = stack.outputs["BlobBucketName"]
    docs = DocClient(
        stack.outputs["TableName"],
        bucket,
        blob_root=KNOBS["blob_root"],
        dynamodb=_client(local_aws, "dynamodb", runtime_user["credentials"]),
        s3=s3,
        bucket_owner=lt.ACCOUNT,
    )
    # WHEN it puts a document with a blob, reads it back and deletes it THEN each step is allowed
    docs.put("iam-client", "v1", {"n": 1}, blobs={"body": b"hello"})
    assert docs.get("iam-client", "v1").blobs["body"].read() == b"hello"
    docs.delete("iam-client", "v1")
    # AND an object outside the blob root is refused
    error = _error(lambda: s3.put_object(Bucket=bucket, Key="elsewhere/x", Body=b"x"))
    assert error["Code"] == "AccessDenied"


def test_runtime_policy_denies_scan_admin_actions_and_other_tables(
    local_aws: lt.LocalAWS, stack: lt.Deployed, runtime_user: dict[str, Any]
) -> None:
    # GIVEN a principal holding only the runtime policy, and another table
    ddb = _client(local_aws, "dynamodb", runtime_user["credentials"])
    table, arn = stack.outputs["TableName"], stack.outputs["TableArn"]
    local_aws.client("dynamodb").create_table(
        TableName="itiam-other",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    # WHEN it scans THEN AWS's AccessDeniedException names the principal, the action and the table
    error = _error(lambda: ddb.scan(TableName=table))
    assert error["Code"] == "AccessDeniedException"
    assert error["Message"] == (
        f"User: {runtime_user['arn']} is not authorized to perform: dynamodb:Scan on resource: {arn} "
        "because no identity-based policy allows the dynamodb:Scan action"
    )
    # AND DeleteTable, UpdateTable and any action on another table are denied too
    denied = [
        lambda: ddb.delete_table(TableName=table),
        lambda: ddb.update_table(TableName=table, DeletionProtectionEnabled=True),
        lambda: ddb.get_item(TableName="itiam-other", Key={"pk": {"S": "a"}}),
        lambda: ddb.put_item(TableName="itiam-other", Item={"pk": {"S": "a"}}),
        lambda: ddb.query(
            TableName=table,
            IndexName="nope",
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": "x"}},
        ),  # fmt: skip
    ]
    for call in denied:
        assert _error(call)["Code"] == "AccessDeniedException"
    assert local_aws.client("dynamodb").describe_table(TableName=table)["Table"]["TableStatus"] == "ACTIVE"


def _assume(local_aws: lt.LocalAWS, role: dict[str, str]) -> dict[str, str]:
    iam = local_aws.client("iam")
    trust = json.loads(json.dumps(iam.get_role(RoleName=role["name"])["Role"]["AssumeRolePolicyDocument"]))
    trust["Statement"].append(
        {"Effect": "Allow", "Principal": {"AWS": ACCOUNT_ROOT}, "Action": "sts:AssumeRole"}
    )
    iam.update_assume_role_policy(RoleName=role["name"], PolicyDocument=json.dumps(trust))
    credentials = local_aws.client("sts").assume_role(RoleArn=role["arn"], RoleSessionName="iam-test")[
        "Credentials"
    ]
    return {
        "aws_access_key_id": credentials["AccessKeyId"],
        "aws_secret_access_key": credentials["SecretAccessKey"],
        "aws_session_token": credentials["SessionToken"],
    }


def test_consumer_role_deletes_under_its_blob_root_only(
    local_aws: lt.LocalAWS, stack: lt.Deployed, consumer_role: dict[str, str]
) -> None:
    # GIVEN blobs inside and outside the blob root, and a session of the consumer's role
    bucket = stack.outputs["BlobBucketName"]
    admin = local_aws.client("s3")
    for key in ("blobs/doc/1/a.bin", "blobs/doc/1/b.bin", "elsewhere/a.bin"):
        admin.put_object(Bucket=bucket, Key=key, Body=b"x")
    s3 = _client(local_aws, "s3", _assume(local_aws, consumer_role))
    # WHEN it deletes inside the root THEN that is allowed
    s3.delete_object(Bucket=bucket, Key="blobs/doc/1/a.bin")
    # WHEN it deletes outside THEN S3 refuses, naming the action
    error = _error(lambda: s3.delete_object(Bucket=bucket, Key="elsewhere/a.bin"))
    assert error["Code"] == "AccessDenied"
    assert "is not authorized to perform: s3:DeleteObject" in error["Message"]
    # AND a DeleteObjects of both is answered key by key
    result = s3.delete_objects(
        Bucket=bucket, Delete={"Objects": [{"Key": "blobs/doc/1/b.bin"}, {"Key": "elsewhere/a.bin"}]}
    )
    assert [e["Key"] for e in result.get("Errors", [])] == ["elsewhere/a.bin"]
    assert result["Errors"][0]["Code"] == "AccessDenied"
    # (this test's objects: the consumer may still be deleting the blob of another test's document)
    listed = [o["Key"] for o in admin.list_objects_v2(Bucket=bucket).get("Contents", [])]
    remaining = [key for key in listed if key.startswith(("blobs/doc/1/", "elsewhere/"))]
    assert remaining == ["elsewhere/a.bin"]


def _without_grant(local_aws: lt.LocalAWS, role: dict[str, str], sid: str, action: str | None = None) -> str:
    """Put the role's policy back without ``action`` in statement ``sid`` (the whole statement when None, or
    when it was its only action); return the original document to restore."""
    iam = local_aws.client("iam")
    document = iam.get_role_policy(RoleName=role["name"], PolicyName=role["policy"])["PolicyDocument"]
    statements = []
    for statement in document["Statement"]:
        if statement.get("Sid") == sid:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert action is None or action in actions
            kept = [a for a in actions if a != action] if action else []
            if kept:
                statements.append(dict(statement, Action=kept))
            continue
        statements.append(statement)
    assert statements != document["Statement"]
    narrowed = dict(document, Statement=statements)
    iam.put_role_policy(RoleName=role["name"], PolicyName=role["policy"], PolicyDocument=json.dumps(narrowed))
    return json.dumps(document)


def test_consumer_without_its_delete_grant_fails_naming_the_action(
    local_aws: lt.LocalAWS, stack: lt.Deployed, consumer_role: dict[str, str]
) -> None:
    # GIVEN the consumer's role without s3:DeleteObject, and an item owning a blob
    out = stack.outputs
    original = _without_grant(local_aws, consumer_role, "DeleteBlobs", "s3:DeleteObject")
    s3, ddb = local_aws.client("s3"), local_aws.client("dynamodb")
    key = "blobs/denied/1/a.bin"
    s3.put_object(Bucket=out["BlobBucketName"], Key=key, Body=b"x")
    item = {"pk": {"S": "denied"}, "sk": {"S": "1"}, "blobs": {"L": [{"S": key}]}}
    ddb.put_item(TableName=out["TableName"], Item=item)
    since = lt.now_ms()
    try:
        # WHEN the item is deleted
        ddb.delete_item(TableName=out["TableName"], Key={"pk": item["pk"], "sk": item["sk"]})
        # THEN the consumer logs AWS's refusal, naming the missing action, and the blob stays
        logs = local_aws.client("logs")
        refusal = "is not authorized to perform: s3:DeleteObject"

        def refused() -> bool:
            pages = logs.get_paginator("filter_log_events").paginate(
                logGroupName=out["ConsumerLogGroupName"], startTime=since
            )
            return any(refusal in e["message"] for page in pages for e in page["events"])

        lt.wait_for(refused, timeout=60, what="the consumer's AccessDenied on s3:DeleteObject")
        assert s3.list_objects_v2(Bucket=out["BlobBucketName"], Prefix=key).get("KeyCount") == 1

        # AND once its retries are spent, the mapping keeps the batch in the failure bucket (as the role)
        # (the bucket may first receive another batch that failed while the grant was missing: an earlier
        # test's delete still on the stream; the condition is this item's batch being kept)
        def kept_denied() -> bool:
            listed = s3.list_objects_v2(Bucket=out["FailureBucketName"], Prefix="aws/lambda/").get(
                "Contents", []
            )
            return any(
                "denied"
                in s3.get_object(Bucket=out["FailureBucketName"], Key=o["Key"])["Body"].read().decode()
                for o in listed
            )

        lt.wait_for(
            kept_denied, timeout=120, interval=0.5, what="this item's failed batch in the failure bucket"
        )
    finally:
        local_aws.client("iam").put_role_policy(
            RoleName=consumer_role["name"], PolicyName=consumer_role["policy"], PolicyDocument=original
        )


def test_mapping_acts_as_the_function_role(
    local_aws: lt.LocalAWS, stack: lt.Deployed, consumer_role: dict[str, str]
) -> None:
    # GIVEN another table's stream, which the consumer's role may not read
    ddb, lam = local_aws.client("dynamodb"), local_aws.client("lambda")
    other = ddb.create_table(
        TableName="itiam-streamed",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )["TableDescription"]["LatestStreamArn"]
    # WHEN a mapping of it to the consumer is created THEN Lambda refuses with AWS's message
    error = _error(
        lambda: lam.create_event_source_mapping(
            EventSourceArn=other,
            FunctionName=stack.outputs["ConsumerFunctionName"],
            StartingPosition="LATEST",
        )
    )
    assert error["Code"] == "InvalidParameterValueException"
    assert error["Message"] == (
        f"Cannot access stream {other}. Please ensure the role can perform the GetRecords, GetShardIterator, "
        "DescribeStream, and ListStreams Actions on your stream in IAM."
    )
    # WHEN the role loses its own stream grant THEN the mapping's reads are denied and say so
    uuid = stack.outputs["EventSourceMappingUuid"]
    original = _without_grant(local_aws, consumer_role, "ReadOwnStream")
    try:
        ddb.put_item(TableName=stack.outputs["TableName"], Item={"pk": {"S": "unread"}, "sk": {"S": "1"}})
        reason = lt.wait_for(
            lambda: (
                (r := lam.get_event_source_mapping(UUID=uuid)["StateTransitionReason"]).startswith("PROBLEM")
                and r
            ),
            timeout=30,
            what="the mapping's denied read in its StateTransitionReason",
        )
        assert f"Cannot access stream {stack.outputs['StreamArn']}" in reason
    finally:
        local_aws.client("iam").put_role_policy(
            RoleName=consumer_role["name"], PolicyName=consumer_role["policy"], PolicyDocument=original
        )
    # THEN with the grant back the reads resume
    lt.wait_for(
        lambda: lam.get_event_source_mapping(UUID=uuid)["StateTransitionReason"] == "USER_INITIATED",
        timeout=30,
        what="the mapping to read again",
    )
    assert (
        lt.wait_for(lambda: local_aws.faults.mappings()[uuid]["pending"] == 0 or None, timeout=30) is not None
    )


def test_unknown_keys_are_refused(local_aws: lt.LocalAWS) -> None:
    # WHEN a key the local AWS never issued is used THEN each service refuses it as AWS does
    stranger = {"aws_access_key_id": "AKIAUNKNOWNKEY000000", "aws_secret_access_key": "x" * 40}
    assert _error(lambda: _client(local_aws, "dynamodb", stranger).list_tables())["Code"] == (
        "UnrecognizedClientException"
    )
    assert (
        _error(lambda: _client(local_aws, "sts", stranger).get_caller_identity())["Code"]
        == "InvalidClientTokenId"
    )
    assert _error(lambda: _client(local_aws, "s3", stranger).list_buckets())["Code"] == "InvalidAccessKeyId"
