"""The scenarios the conformance tier runs against both servers, step by step, each step named.

A step's outcome is compared in a normal form (``outcome``): success with the shape of the answer (every member
path, lists flattened) and its enumerated values (``ACTIVE``, ``NEW_AND_OLD_IMAGES``, booleans, numbers), or the
error code. Names, ARNs, ids and times differ between any two servers and are not compared. A step whose normal
forms differ is a difference that a registered behaviour of the local AWS must explain (local/fidelity.py).

The scenarios do what the project's stacks and proofs rely on: a table created, written, read, its TTL, PITR,
stream, tags, deletion protection and a GSI added to it; the stream read; S3's conditional writes and deletes; a
KMS key and alias; a Kinesis stream; a CloudFormation stack created, updated and deleted. Lambda delivery is not
compared: plain moto runs functions in Docker, which this machine does not have.
"""

from __future__ import annotations

import datetime
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError
from botocore.parsers import ResponseParserError

from local import api
from tests.conformance.servers import Server

# A string value that names a state or an option (ACTIVE, NEW_AND_OLD_IMAGES, PAY_PER_REQUEST, ENABLED, ...) is
# compared; any other string (a name, an ARN, an id, a time) is not.
ENUM = re.compile(r"^[A-Z][A-Z0-9_]+$")
SETTLE_DEADLINE = 60.0  # seconds a stack or an index may take to settle on a busy machine


@dataclass(frozen=True)
class Outcome:
    error: str | None  # the error code, or None for success
    shape: frozenset[str] = frozenset()  # member paths of a success
    values: frozenset[tuple[str, str]] = frozenset()  # (path, value) of its enumerated scalars

    def describe(self) -> str:
        if self.error:
            return f"error {self.error}"
        return f"ok ({len(self.shape)} members)"


def outcome_of(answer: dict[str, Any] | None, error: str | None) -> Outcome:
    if error:
        return Outcome(error)
    shape: set[str] = set()
    values: set[tuple[str, str]] = set()

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{path}.{key}" if path else str(key))
            return
        if isinstance(value, list):
            for inner in value:
                walk(inner, f"{path}[]")
            return
        shape.add(path)
        if isinstance(value, bool) or (isinstance(value, str) and ENUM.match(value)):
            values.add((path, str(value)))

    walk({k: v for k, v in (answer or {}).items() if k != "ResponseMetadata"}, "")
    return Outcome(None, frozenset(shape), frozenset(values))


@dataclass
class Run:
    """One server's run of the scenarios: each step's outcome by name, and what later steps need."""

    server: Server
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    clients: dict[str, Any] = field(default_factory=dict)

    def client(self, service: str) -> Any:
        """The run's client of ``service`` (``s3-anonymous``: an S3 client that signs nothing; ``dynamodb-forged``:
        the deployer's key signed with a wrong secret)."""
        if service not in self.clients:
            anonymous = service.endswith("-anonymous")
            name = service.removesuffix("-anonymous").removesuffix("-forged")
            secret = "not-the-deployers-secret" if service.endswith("-forged") else api.SECRET_ACCESS_KEY
            self.clients[service] = self.server.client(name, signed=not anonymous, secret=secret)
        return self.clients[service]

    def call(self, step: str, service: str, operation: str, **params: Any) -> dict[str, Any] | None:
        assert step not in self.outcomes, f"step {step} is named twice"
        method = getattr(self.client(service), _snake(operation))
        try:
            answer = method(**params)
        except ClientError as exc:
            self.outcomes[step] = outcome_of(None, str(exc.response.get("Error", {}).get("Code")))
            return None
        except (
            ResponseParserError
        ):  # an answer no SDK can read (plain moto answers some errors in another protocol)
            self.outcomes[step] = outcome_of(None, "unparsable")
            return None
        if "Body" in answer and hasattr(answer["Body"], "read"):
            answer = dict(answer, Body=answer["Body"].read().decode("utf-8", "replace"))
        self.answers[step] = answer
        self.outcomes[step] = outcome_of(answer, None)
        return answer

    def until(self, what: str, probe: Callable[[], bool]) -> None:
        """Poll ``probe`` until it holds (a stack settles, an index becomes active); fail after the deadline."""
        deadline = time.monotonic() + SETTLE_DEADLINE
        while not probe():
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.server.name}: {what} did not happen in {SETTLE_DEADLINE:.0f} s")
            time.sleep(0.2)


def _snake(operation: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", operation).lower()


TABLE = "conformance-items"
G2 = {"AttributeName": "g2", "AttributeType": "S"}
KEYS = {
    "AttributeDefinitions": [
        {"AttributeName": "pk", "AttributeType": "S"},
        {"AttributeName": "sk", "AttributeType": "S"},
        {"AttributeName": "g1", "AttributeType": "S"},
    ],
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
}


def _gsi(name: str, key: str) -> dict[str, Any]:
    return {
        "IndexName": name,
        "KeySchema": [{"AttributeName": key, "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "ALL"},
    }


def dynamodb_table(run: Run) -> None:
    """A table as the stacks make it, written and read, its TTL, PITR, tags, deletion protection and indexes."""
    run.call(
        "dynamodb.create-table",
        "dynamodb",
        "CreateTable",
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        GlobalSecondaryIndexes=[_gsi("g1-index", "g1")],
        **KEYS,
    )
    run.until("the table is ACTIVE", lambda: _table_status(run) == "ACTIVE")
    run.call("dynamodb.describe-table", "dynamodb", "DescribeTable", TableName=TABLE)
    item = {"pk": {"S": "a"}, "sk": {"S": "1"}, "g1": {"S": "x"}, "blobs": {"L": [{"S": "k1"}]}}
    run.call("dynamodb.put-item", "dynamodb", "PutItem", TableName=TABLE, Item=item)
    run.call(
        "dynamodb.put-item-condition-fails",
        "dynamodb",
        "PutItem",
        TableName=TABLE,
        Item=item,
        ConditionExpression="attribute_not_exists(pk)",
    )
    run.call(
        "dynamodb.update-item",
        "dynamodb",
        "UpdateItem",
        TableName=TABLE,
        Key={"pk": {"S": "a"}, "sk": {"S": "1"}},
        UpdateExpression="SET g2 = :v",
        ExpressionAttributeValues={":v": {"S": "y"}},
        ReturnValues="ALL_NEW",
    )
    run.call(
        "dynamodb.query-index",
        "dynamodb",
        "Query",
        TableName=TABLE,
        IndexName="g1-index",
        KeyConditionExpression="g1 = :g",
        ExpressionAttributeValues={":g": {"S": "x"}},
    )
    # a projection of two overlapping paths (refused on AWS)
    key = {"pk": {"S": "a"}, "sk": {"S": "1"}}
    run.call(
        "dynamodb.get-item-projection",
        "dynamodb",
        "GetItem",
        TableName=TABLE,
        Key=key,
        ProjectionExpression="blobs, blobs[0]",
    )
    # the deployer's key signed with another secret: a forged request (refused on AWS)
    run.call("dynamodb.get-item-forged", "dynamodb-forged", "GetItem", TableName=TABLE, Key=key)
    run.call(
        "dynamodb.query-missing-index",
        "dynamodb",
        "Query",
        TableName=TABLE,
        IndexName="nope-index",
        KeyConditionExpression="g1 = :g",
        ExpressionAttributeValues={":g": {"S": "x"}},
    )
    run.call(
        "dynamodb.delete-item",
        "dynamodb",
        "DeleteItem",
        TableName=TABLE,
        Key={"pk": {"S": "a"}, "sk": {"S": "1"}},
        ReturnValues="ALL_OLD",
    )
    ttl = {"Enabled": True, "AttributeName": "expires_at"}
    run.call(
        "dynamodb.ttl-enable", "dynamodb", "UpdateTimeToLive", TableName=TABLE, TimeToLiveSpecification=ttl
    )
    run.call("dynamodb.ttl-describe", "dynamodb", "DescribeTimeToLive", TableName=TABLE)
    off = dict(ttl, Enabled=False)
    run.call(
        "dynamodb.ttl-disable-at-once",
        "dynamodb",
        "UpdateTimeToLive",
        TableName=TABLE,
        TimeToLiveSpecification=off,
    )
    pitr = {"PointInTimeRecoveryEnabled": True}
    run.call(
        "dynamodb.pitr-enable",
        "dynamodb",
        "UpdateContinuousBackups",
        TableName=TABLE,
        PointInTimeRecoverySpecification=pitr,
    )
    run.call("dynamodb.pitr-describe", "dynamodb", "DescribeContinuousBackups", TableName=TABLE)
    arn = _table_arn(run)
    run.call(
        "dynamodb.tag", "dynamodb", "TagResource", ResourceArn=arn, Tags=[{"Key": "App", "Value": "doctable"}]
    )
    run.call("dynamodb.list-tags", "dynamodb", "ListTagsOfResource", ResourceArn=arn)
    run.call(
        "dynamodb.add-index",
        "dynamodb",
        "UpdateTable",
        TableName=TABLE,
        AttributeDefinitions=[*KEYS["AttributeDefinitions"], G2],
        GlobalSecondaryIndexUpdates=[{"Create": _gsi("g2-index", "g2")}],
    )
    run.call(
        "dynamodb.add-second-index-at-once",
        "dynamodb",
        "UpdateTable",
        TableName=TABLE,
        AttributeDefinitions=[*KEYS["AttributeDefinitions"], G2],
        GlobalSecondaryIndexUpdates=[{"Create": _gsi("g3-index", "g2")}],
    )
    run.call(
        "dynamodb.add-index-twice",
        "dynamodb",
        "UpdateTable",
        TableName=TABLE,
        GlobalSecondaryIndexUpdates=[{"Create": _gsi("g1-index", "g1")}],
        AttributeDefinitions=KEYS["AttributeDefinitions"],
    )
    run.until("the new index is ACTIVE", lambda: _index_status(run, "g2-index") == "ACTIVE")
    run.call("dynamodb.describe-table-two-indexes", "dynamodb", "DescribeTable", TableName=TABLE)
    run.call("dynamodb.protect", "dynamodb", "UpdateTable", TableName=TABLE, DeletionProtectionEnabled=True)
    run.call("dynamodb.delete-protected", "dynamodb", "DeleteTable", TableName=TABLE)
    run.call(
        "dynamodb.unprotect", "dynamodb", "UpdateTable", TableName=TABLE, DeletionProtectionEnabled=False
    )


def dynamodb_stream(run: Run) -> None:
    """The table's stream: described, an iterator from its oldest record, the records of the writes above."""
    stream = run.client("dynamodb").describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    run.call("streams.list", "dynamodbstreams", "ListStreams", TableName=TABLE)
    described = run.call("streams.describe", "dynamodbstreams", "DescribeStream", StreamArn=stream)
    shard = (described or {})["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = run.call(
        "streams.iterator",
        "dynamodbstreams",
        "GetShardIterator",
        StreamArn=stream,
        ShardId=shard,
        ShardIteratorType="TRIM_HORIZON",
    )
    run.call(
        "streams.records", "dynamodbstreams", "GetRecords", ShardIterator=(iterator or {})["ShardIterator"]
    )
    run.call("dynamodb.delete-table", "dynamodb", "DeleteTable", TableName=TABLE)


BUCKET = "conformance-blobs"


def s3_conditional(run: Run) -> None:
    """S3 as the consumer and the client use it: conditional writes (If-None-Match) and deletes (If-Match)."""
    run.call("s3.create-bucket", "s3", "CreateBucket", Bucket=BUCKET)
    put = run.call("s3.put", "s3", "PutObject", Bucket=BUCKET, Key="blob/1", Body=b"one")
    # an unsigned write into the private bucket: the anonymous principal, refused on AWS
    run.call("s3.put-anonymous", "s3-anonymous", "PutObject", Bucket=BUCKET, Key="blob/anon", Body=b"x")
    # a checksum that is not the body's: S3 refuses to store it
    run.call(
        "s3.put-bad-checksum",
        "s3",
        "PutObject",
        Bucket=BUCKET,
        Key="blob/bad",
        Body=b"x",
        ChecksumCRC32="AAAAAA==",
    )
    etag = (put or {})["ETag"]
    run.call(
        "s3.put-if-none-match-exists",
        "s3",
        "PutObject",
        Bucket=BUCKET,
        Key="blob/1",
        Body=b"two",
        IfNoneMatch="*",
    )
    run.call(
        "s3.put-if-none-match-new",
        "s3",
        "PutObject",
        Bucket=BUCKET,
        Key="blob/2",
        Body=b"two",
        IfNoneMatch="*",
    )
    # If-None-Match takes only `*`: S3 answers an ETag there 501 NotImplemented (moto wrote the object, which the
    # next step deletes on both, so the listing after is the same)
    run.call(
        "s3.put-if-none-match-etag",
        "s3",
        "PutObject",
        Bucket=BUCKET,
        Key="blob/3",
        Body=b"three",
        IfNoneMatch=etag,
    )
    run.call("s3.delete-3", "s3", "DeleteObject", Bucket=BUCKET, Key="blob/3")
    run.call(
        "s3.put-if-match-wrong",
        "s3",
        "PutObject",
        Bucket=BUCKET,
        Key="blob/1",
        Body=b"four",
        IfMatch='"0000"',
    )
    run.call(
        "s3.put-if-match-missing", "s3", "PutObject", Bucket=BUCKET, Key="blob/none", Body=b"x", IfMatch=etag
    )
    run.call("s3.head", "s3", "HeadObject", Bucket=BUCKET, Key="blob/1")
    run.call("s3.get", "s3", "GetObject", Bucket=BUCKET, Key="blob/1")
    run.call("s3.get-missing", "s3", "GetObject", Bucket=BUCKET, Key="blob/none")
    run.call("s3.delete-if-match-wrong", "s3", "DeleteObject", Bucket=BUCKET, Key="blob/1", IfMatch='"0000"')
    run.call("s3.delete-if-match-missing", "s3", "DeleteObject", Bucket=BUCKET, Key="blob/none", IfMatch=etag)
    run.call("s3.delete-if-match", "s3", "DeleteObject", Bucket=BUCKET, Key="blob/1", IfMatch=etag)
    run.call("s3.delete-missing", "s3", "DeleteObject", Bucket=BUCKET, Key="blob/none")
    run.call("s3.list", "s3", "ListObjectsV2", Bucket=BUCKET)
    run.call(
        "s3.versioning",
        "s3",
        "PutBucketVersioning",
        Bucket=BUCKET,
        VersioningConfiguration={"Status": "Enabled"},
    )
    run.call("s3.get-versioning", "s3", "GetBucketVersioning", Bucket=BUCKET)
    run.call(
        "s3.public-access-block",
        "s3",
        "PutPublicAccessBlock",
        Bucket=BUCKET,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    run.call("s3.get-public-access-block", "s3", "GetPublicAccessBlock", Bucket=BUCKET)


def kms_and_kinesis(run: Run) -> None:
    """A customer managed key and its alias, and a Kinesis data stream, as the stacks make them."""
    key = run.call(
        "kms.create-key",
        "kms",
        "CreateKey",
        Description="conformance",
        Tags=[{"TagKey": "App", "TagValue": "doctable"}],
    )
    key_id = (key or {})["KeyMetadata"]["KeyId"]
    run.call("kms.describe-key", "kms", "DescribeKey", KeyId=key_id)
    run.call("kms.create-alias", "kms", "CreateAlias", AliasName="alias/conformance", TargetKeyId=key_id)
    run.call("kms.describe-by-alias", "kms", "DescribeKey", KeyId="alias/conformance")
    run.call("kms.rotation", "kms", "EnableKeyRotation", KeyId=key_id)
    run.call("kms.rotation-status", "kms", "GetKeyRotationStatus", KeyId=key_id)
    run.call("kinesis.create", "kinesis", "CreateStream", StreamName="conformance-changes", ShardCount=1)
    run.call("kinesis.summary", "kinesis", "DescribeStreamSummary", StreamName="conformance-changes")


STACK = "conformance-stack"


def _template(read_capacity: int, key: str) -> str:
    return json.dumps(
        {
            "Resources": {
                "Items": {
                    "Type": "AWS::DynamoDB::Table",
                    "Properties": {
                        "TableName": "conformance-stack-items",
                        "BillingMode": "PROVISIONED",
                        "ProvisionedThroughput": {
                            "ReadCapacityUnits": read_capacity,
                            "WriteCapacityUnits": 1,
                        },
                        "AttributeDefinitions": [{"AttributeName": key, "AttributeType": "S"}],
                        "KeySchema": [{"AttributeName": key, "KeyType": "HASH"}],
                    },
                }
            },
            "Outputs": {"TableName": {"Value": {"Ref": "Items"}}},
        }
    )


def cloudformation_stack(run: Run) -> None:
    """A stack with a table: created, updated in place, refused a replacement of a named table, deleted."""
    run.call("cfn.create", "cloudformation", "CreateStack", StackName=STACK, TemplateBody=_template(1, "pk"))
    run.until("the stack is created", lambda: _stack_status(run).endswith("_COMPLETE"))
    run.call("cfn.describe-created", "cloudformation", "DescribeStacks", StackName=STACK)
    run.call(
        "cfn.update-in-place",
        "cloudformation",
        "UpdateStack",
        StackName=STACK,
        TemplateBody=_template(2, "pk"),
    )
    run.until("the update settles", lambda: _stack_status(run).endswith("_COMPLETE"))
    run.call("cfn.describe-updated", "cloudformation", "DescribeStacks", StackName=STACK)
    run.call("cfn.table-after-update", "dynamodb", "DescribeTable", TableName="conformance-stack-items")
    run.call(
        "cfn.update-replace-named",
        "cloudformation",
        "UpdateStack",
        StackName=STACK,
        TemplateBody=_template(2, "id"),
    )
    run.until("the replacement settles", lambda: _stack_status(run).endswith("_COMPLETE"))
    run.call("cfn.describe-after-replace", "cloudformation", "DescribeStacks", StackName=STACK)
    run.call("cfn.resources", "cloudformation", "ListStackResources", StackName=STACK)
    run.call("cfn.delete", "cloudformation", "DeleteStack", StackName=STACK)
    run.until("the stack is deleted", lambda: _stack_status(run) in ("DELETE_COMPLETE", "GONE"))


IMPORTED = "conformance-imported"
IMPORT_STACK = "conformance-import"


def _import_template(with_table: bool) -> str:
    """A stack with a topic; with ``with_table``, also the existing table, retained (import needs a policy)."""
    resources: dict[str, Any] = {"Topic": {"Type": "AWS::SNS::Topic"}}
    if with_table:
        resources["Table"] = {
            "Type": "AWS::DynamoDB::Table",
            "DeletionPolicy": "Retain",
            "Properties": {
                "TableName": IMPORTED,
                "BillingMode": "PAY_PER_REQUEST",
                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            },
        }
    return json.dumps({"Resources": resources})


def cloudformation_import(run: Run) -> None:
    """A table made through the API, then brought under a stack by an IMPORT change set (cdk import, the
    Table -> TableV2 migration)."""
    run.call(
        "import.create-table",
        "dynamodb",
        "CreateTable",
        TableName=IMPORTED,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    run.call(
        "import.create-stack",
        "cloudformation",
        "CreateStack",
        StackName=IMPORT_STACK,
        TemplateBody=_import_template(False),
    )
    run.until("the stack is created", lambda: _stack_status(run, IMPORT_STACK).endswith("_COMPLETE"))
    run.call(
        "import.create-change-set",
        "cloudformation",
        "CreateChangeSet",
        StackName=IMPORT_STACK,
        ChangeSetName="adopt",
        ChangeSetType="IMPORT",
        TemplateBody=_import_template(True),
        ResourcesToImport=[
            {
                "ResourceType": "AWS::DynamoDB::Table",
                "LogicalResourceId": "Table",
                "ResourceIdentifier": {"TableName": IMPORTED},
            }
        ],
    )
    run.call(
        "import.describe-change-set",
        "cloudformation",
        "DescribeChangeSet",
        StackName=IMPORT_STACK,
        ChangeSetName="adopt",
    )
    run.call(
        "import.execute", "cloudformation", "ExecuteChangeSet", StackName=IMPORT_STACK, ChangeSetName="adopt"
    )
    run.until(
        "the import settles", lambda: _stack_status(run, IMPORT_STACK).endswith(("_COMPLETE", "_FAILED"))
    )
    run.call("import.describe-stack", "cloudformation", "DescribeStacks", StackName=IMPORT_STACK)
    run.call("import.resources", "cloudformation", "ListStackResources", StackName=IMPORT_STACK)


SCENARIOS: tuple[Callable[[Run], None], ...] = (
    dynamodb_table,
    dynamodb_stream,
    s3_conditional,
    kms_and_kinesis,
    cloudformation_stack,
    cloudformation_import,
)


def differences(moto: Run, local: Run) -> list[str]:
    """Every difference between the two runs, as keys a registered behaviour names (local/behaviours.py):
    ``<step>|error|<moto>-><local>`` (``ok`` for a success), ``<step>|+member|<path>`` (only the local AWS
    answers it), ``<step>|-member|<path>`` (only moto does), ``<step>|value|<path>=<local value>`` and
    ``<step>|-value|<path>=<moto value>``; a step only one of them ran is ``<step>|missing|<server>``."""
    found: list[str] = []
    for step in dict.fromkeys([*moto.outcomes, *local.outcomes]):
        if step not in local.outcomes or step not in moto.outcomes:
            found.append(f"{step}|missing|{'local' if step not in local.outcomes else 'moto'}")
            continue
        before, after = moto.outcomes[step], local.outcomes[step]
        if before == after:
            continue
        if before.error or after.error:
            found.append(f"{step}|error|{before.error or 'ok'}->{after.error or 'ok'}")
            continue
        found += [f"{step}|+member|{path}" for path in sorted(after.shape - before.shape)]
        found += [f"{step}|-member|{path}" for path in sorted(before.shape - after.shape)]
        found += [f"{step}|value|{p}={v}" for p, v in sorted(after.values - before.values)]
        found += [f"{step}|-value|{p}={v}" for p, v in sorted(before.values - after.values)]
    return found


def run_all(server: Server) -> Run:
    run = Run(server)
    for scenario in SCENARIOS:
        scenario(run)
    return run


# ---- probes (not steps: their answers are not compared) ----
def _table_status(run: Run) -> str:
    return str(run.client("dynamodb").describe_table(TableName=TABLE)["Table"]["TableStatus"])


def _table_arn(run: Run) -> str:
    return str(run.client("dynamodb").describe_table(TableName=TABLE)["Table"]["TableArn"])


def _index_status(run: Run, name: str) -> str:
    table = run.client("dynamodb").describe_table(TableName=TABLE)["Table"]
    for index in table.get("GlobalSecondaryIndexes", []):
        if index["IndexName"] == name:
            return str(index.get("IndexStatus"))
    return "GONE"


def _stack_status(run: Run, name: str = STACK) -> str:
    try:
        stacks = run.client("cloudformation").describe_stacks(StackName=name)["Stacks"]
    except ClientError:
        return "GONE"
    return str(stacks[0]["StackStatus"]) if stacks else "GONE"


def stamp() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()
