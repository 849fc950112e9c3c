"""Encryption at rest, one choice for the table and the stack's buckets, and the KMS grants that follow it.

`encryption=aws-owned`: DynamoDB's AWS owned key and S3-managed keys (no KMS calls, no KMS permissions).
`aws-managed`: the AWS managed keys `aws/dynamodb` and `aws/s3` (visible in CloudTrail; their key policies admit
any principal of the account through the service, so no grant is needed). `customer-managed`: one key of the
stack's own (rotation on, removal policy of the table) or the key ARN given with `kms_key`; every principal the
stack grants data access gets KMS actions on that key alone, through the service that uses it.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from contract import policy_doc
from contract.knobs import DocTableConfig

# Reading an item or a stream record decrypts under the table key; DescribeKey lets the service check the key.
READ_ACTIONS = ("kms:Decrypt", "kms:DescribeKey")
# Writing an item (DynamoDB) or an object (S3 with SSE-KMS) needs a data key.
WRITE_ACTIONS = ("kms:GenerateDataKey",)
# A deleted key is unrecoverable after this window; the longest AWS allows, to give an operator time to cancel.
PENDING_WINDOW = Duration.days(30)


def table_key(scope: Construct, config: DocTableConfig) -> kms.IKey | None:
    """The customer managed key of the table (and the stack's buckets), None with an AWS owned/managed key."""
    if not config.customer_managed_key:
        return None
    if config.borrowed_kms_key_arn:
        return kms.Key.from_key_arn(scope, "BorrowedKey", config.borrowed_kms_key_arn)
    return kms.Key(
        scope,
        "Key",
        description=f"doctable {config.table_name}: the table's, its stream's and its buckets' data at rest",
        enable_key_rotation=True,
        pending_window=PENDING_WINDOW,
        # Retained where the table is: a table retained without its key could never be read again.
        removal_policy=RemovalPolicy.RETAIN if config.retain_on_delete else RemovalPolicy.DESTROY,
    )


def table_encryption(config: DocTableConfig) -> dynamodb.TableEncryption:
    if config.customer_managed_key:
        return dynamodb.TableEncryption.CUSTOMER_MANAGED
    if config.aws_managed_key:
        return dynamodb.TableEncryption.AWS_MANAGED
    return dynamodb.TableEncryption.DEFAULT


def bucket_encryption(config: DocTableConfig) -> s3.BucketEncryption:
    if config.customer_managed_key:
        return s3.BucketEncryption.KMS
    if config.aws_managed_key:
        return s3.BucketEncryption.KMS_MANAGED
    return s3.BucketEncryption.S3_MANAGED


def key_statement(sid: str, key: kms.IKey, *, write: bool, services: tuple[str, ...]) -> iam.PolicyStatement:
    """KMS actions on ``key`` only, and only when DynamoDB or S3 (``services``) use it on the caller's behalf."""
    region = Stack.of(key).region
    return iam.PolicyStatement(
        sid=sid,
        actions=[*READ_ACTIONS, *(WRITE_ACTIONS if write else ())],
        resources=[key.key_arn],
        conditions={"StringEquals": {"kms:ViaService": [f"{s}.{region}.amazonaws.com" for s in services]}},
    )


def table_resource_policy(scope: Construct, config: DocTableConfig) -> iam.PolicyDocument | None:
    """The `resource_policy` document, its placeholders naming this stack's account and table."""
    if config.resource_policy_path is None:
        return None
    stack = Stack.of(scope)
    # Built from the table's name: CloudFormation refuses a resource policy that references its own table.
    table_arn = stack.format_arn(service="dynamodb", resource="table", resource_name=config.table_name)
    document = policy_doc.resolve_placeholders(
        policy_doc.load_policy_document(config.resource_policy_path),
        account=stack.account,
        table_arn=table_arn,
    )
    return iam.PolicyDocument.from_json(document)
