"""The calls CloudFormation's resource handlers make, and the resource ARN each is authorized on (the Service
Authorization Reference's resource for the action): the first call of each operation (CALLS: a table's
``dynamodb:CreateTable``), the read the handler waits on, and a call per property that needs one of its own
(FOLLOW_UPS: a table's ``dynamodb:TagResource`` for Tags, ``UpdateContinuousBackups`` for point-in-time recovery,
``UpdateTimeToLive`` for TTL; a role's ``iam:PutRolePolicy`` per inline policy and ``iam:AttachRolePolicy`` per
managed one; a bucket's ``s3:PutEncryptionConfiguration``, ...), as each type's registry schema lists them among
its handler's permissions. A type not listed is held to its schema handler's first permission (cfn-lint ships the
schemas). acting_role.py authorizes them as the stack's role. Pure: no moto import.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from local import state

Arn = Callable[[str, dict[str, Any], str], list[str]]  # (physical name, properties, region) -> resource ARNs


def _arn(service: str, resource: str) -> Arn:
    """An ARN of ``service`` whose resource part is ``resource`` with {name} and {region} filled in."""

    def build(name: str, props: dict[str, Any], region: str) -> list[str]:
        if name.startswith("arn:"):  # a physical id that is the ARN already (a managed policy's)
            return [name]
        regional = "" if service in ("iam", "s3") else region
        account = "" if service == "s3" else state.ACCOUNT_ID
        filled = resource.format(name=name, path=props.get("Path") or "/")
        return [f"arn:aws:{service}:{regional}:{account}:{filled}"]

    return build


def _each(service: str, resource: str, prop: str) -> Arn:
    """An ARN per name in the list (or the one name) property ``prop`` holds (a policy's roles, a topic's)."""

    def build(name: str, props: dict[str, Any], region: str) -> list[str]:
        values = props.get(prop) or []
        values = values if isinstance(values, list) else [values]
        arns = []
        for value in [v for v in values if isinstance(v, str)]:  # a reference left unresolved names nothing
            text = value
            arns += [text] if text.startswith("arn:") else _arn(service, resource)(text, {}, region)
        return arns or ["*"]

    return build


def _anything(name: str, props: dict[str, Any], region: str) -> list[str]:
    return ["*"]


# type -> {operation: (action, ARNs)}; an operation a type does not list is not a call of its own on AWS.
_ROLE = _arn("iam", "role{path}{name}")
_FUNCTION = _arn("lambda", "function:{name}")
_FUNCTION_OF = _each("lambda", "function:{name}", "FunctionName")
_MAPPING = _arn("lambda", "event-source-mapping:{name}")


def _dashboard(name: str, props: dict[str, Any], region: str) -> list[str]:
    """A dashboard's ARN: global to the account (no region), named by its DashboardName."""
    return [f"arn:aws:cloudwatch::{state.ACCOUNT_ID}:dashboard/{props.get('DashboardName') or name}"]


CALLS: dict[str, dict[str, tuple[str, Arn]]] = {
    "AWS::DynamoDB::Table": {
        "create": ("dynamodb:CreateTable", _arn("dynamodb", "table/{name}")),
        "update": ("dynamodb:UpdateTable", _arn("dynamodb", "table/{name}")),
        "delete": ("dynamodb:DeleteTable", _arn("dynamodb", "table/{name}")),
    },
    "AWS::DynamoDB::GlobalTable": {
        "create": ("dynamodb:CreateTable", _arn("dynamodb", "table/{name}")),
        "update": ("dynamodb:UpdateTable", _arn("dynamodb", "table/{name}")),
        "delete": ("dynamodb:DeleteTable", _arn("dynamodb", "table/{name}")),
    },
    "AWS::Lambda::Function": {
        "create": ("lambda:CreateFunction", _FUNCTION),
        "update": ("lambda:UpdateFunctionConfiguration", _FUNCTION),
        "delete": ("lambda:DeleteFunction", _FUNCTION),
    },
    "AWS::Lambda::EventSourceMapping": {
        # CreateEventSourceMapping names no resource (the Service Authorization Reference); the others the
        # mapping's ARN, its UUID the physical id
        "create": ("lambda:CreateEventSourceMapping", _anything),
        "update": ("lambda:UpdateEventSourceMapping", _MAPPING),
        "delete": ("lambda:DeleteEventSourceMapping", _MAPPING),
    },
    "AWS::Lambda::Alias": {
        "create": ("lambda:CreateAlias", _FUNCTION_OF),
        "update": ("lambda:UpdateAlias", _FUNCTION_OF),
        "delete": ("lambda:DeleteAlias", _FUNCTION_OF),
    },
    "AWS::Lambda::Version": {"create": ("lambda:PublishVersion", _FUNCTION_OF)},
    "AWS::Lambda::Permission": {
        "create": ("lambda:AddPermission", _FUNCTION_OF),
        "delete": ("lambda:RemovePermission", _FUNCTION_OF),
    },
    "AWS::IAM::Role": {
        "create": ("iam:CreateRole", _ROLE),
        "update": ("iam:UpdateAssumeRolePolicy", _ROLE),
        "delete": ("iam:DeleteRole", _ROLE),
    },
    "AWS::IAM::Policy": {
        "create": ("iam:PutRolePolicy", _each("iam", "role/{name}", "Roles")),
        "update": ("iam:PutRolePolicy", _each("iam", "role/{name}", "Roles")),
        "delete": ("iam:DeleteRolePolicy", _each("iam", "role/{name}", "Roles")),
    },
    "AWS::IAM::ManagedPolicy": {
        "create": ("iam:CreatePolicy", _arn("iam", "policy{path}{name}")),
        "update": ("iam:CreatePolicyVersion", _arn("iam", "policy{path}{name}")),
        "delete": ("iam:DeletePolicy", _arn("iam", "policy{path}{name}")),
    },
    "AWS::S3::Bucket": {
        "create": ("s3:CreateBucket", _arn("s3", "{name}")),
        "delete": ("s3:DeleteBucket", _arn("s3", "{name}")),
    },
    "AWS::S3::BucketPolicy": {
        "create": ("s3:PutBucketPolicy", _each("s3", "{name}", "Bucket")),
        "update": ("s3:PutBucketPolicy", _each("s3", "{name}", "Bucket")),
        "delete": ("s3:DeleteBucketPolicy", _each("s3", "{name}", "Bucket")),
    },
    "AWS::Logs::LogGroup": {
        "create": ("logs:CreateLogGroup", _arn("logs", "log-group:{name}:*")),
        "delete": ("logs:DeleteLogGroup", _arn("logs", "log-group:{name}:*")),
    },
    "AWS::CloudWatch::Alarm": {
        "create": ("cloudwatch:PutMetricAlarm", _arn("cloudwatch", "alarm:{name}")),
        "update": ("cloudwatch:PutMetricAlarm", _arn("cloudwatch", "alarm:{name}")),
        "delete": ("cloudwatch:DeleteAlarms", _arn("cloudwatch", "alarm:{name}")),
    },
    "AWS::CloudWatch::Dashboard": {
        "create": ("cloudwatch:PutDashboard", _dashboard),
        "update": ("cloudwatch:PutDashboard", _dashboard),
        "delete": ("cloudwatch:DeleteDashboards", _dashboard),
    },
    "AWS::SNS::Topic": {
        "create": ("sns:CreateTopic", _arn("sns", "{name}")),
        "delete": ("sns:DeleteTopic", _arn("sns", "{name}")),
    },
    "AWS::SNS::TopicPolicy": {
        "create": ("sns:SetTopicAttributes", _each("sns", "{name}", "Topics")),
        "update": ("sns:SetTopicAttributes", _each("sns", "{name}", "Topics")),
    },
    "AWS::KMS::Key": {"create": ("kms:CreateKey", _anything)},
    "AWS::Kinesis::Stream": {
        "create": ("kinesis:CreateStream", _arn("kinesis", "stream/{name}")),
        "delete": ("kinesis:DeleteStream", _arn("kinesis", "stream/{name}")),
    },
    "AWS::SSM::Parameter": {
        "create": ("ssm:PutParameter", _arn("ssm", "parameter/{name}")),
        "update": ("ssm:PutParameter", _arn("ssm", "parameter/{name}")),
        "delete": ("ssm:DeleteParameter", _arn("ssm", "parameter/{name}")),
    },
}
# Services as a handler's error names them ("Service: DynamoDb").
SERVICE_NAMES = {
    "dynamodb": "DynamoDb",
    "lambda": "Lambda",
    "iam": "Iam",
    "s3": "S3",
    "logs": "CloudWatchLogs",
}


def _key(prop: str) -> Arn:
    """The KMS key a property names (an ARN, an id or an alias), as the key's ARN."""

    def build(name: str, props: dict[str, Any], region: str) -> list[str]:
        value = props.get(prop)
        value = value.get("KMSMasterKeyId") if isinstance(value, dict) else value
        if not isinstance(value, str) or not value:
            return []
        if value.startswith("arn:"):
            return [value]
        return [
            f"arn:aws:kms:{region}:{state.ACCOUNT_ID}:{'' if value.startswith('alias/') else 'key/'}{value}"
        ]

    return build


def _stream(prop: str) -> Arn:
    def build(name: str, props: dict[str, Any], region: str) -> list[str]:
        value = props.get(prop)
        arn = value.get("StreamArn") if isinstance(value, dict) else None
        return [arn] if isinstance(arn, str) else ["*"]

    return build


_TABLE = _arn("dynamodb", "table/{name}")
_BUCKET = _arn("s3", "{name}")
_LOG_GROUP = _arn("logs", "log-group:{name}:*")
_TABLE_PROPERTIES = [
    ("Tags", "dynamodb:TagResource", _TABLE),
    ("PointInTimeRecoverySpecification", "dynamodb:UpdateContinuousBackups", _TABLE),
    ("TimeToLiveSpecification", "dynamodb:UpdateTimeToLive", _TABLE),
    ("ContributorInsightsSpecification", "dynamodb:UpdateContributorInsights", _TABLE),
    ("ResourcePolicy", "dynamodb:PutResourcePolicy", _TABLE),
    ("KinesisStreamSpecification", "dynamodb:EnableKinesisStreamingDestination", _TABLE),
    ("KinesisStreamSpecification", "kinesis:PutRecords", _stream("KinesisStreamSpecification")),
    ("SSESpecification", "kms:DescribeKey", _key("SSESpecification")),
    ("SSESpecification", "kms:CreateGrant", _key("SSESpecification")),
]
_BUCKET_PROPERTIES = [
    ("BucketEncryption", "s3:PutEncryptionConfiguration", _BUCKET),
    ("PublicAccessBlockConfiguration", "s3:PutBucketPublicAccessBlock", _BUCKET),
    ("VersioningConfiguration", "s3:PutBucketVersioning", _BUCKET),
    ("LifecycleConfiguration", "s3:PutLifecycleConfiguration", _BUCKET),
    ("OwnershipControls", "s3:PutBucketOwnershipControls", _BUCKET),
    ("NotificationConfiguration", "s3:PutBucketNotification", _BUCKET),
    ("LoggingConfiguration", "s3:PutBucketLogging", _BUCKET),
    ("CorsConfiguration", "s3:PutBucketCORS", _BUCKET),
    ("Tags", "s3:PutBucketTagging", _BUCKET),
]
_ROLE_PROPERTIES = [
    ("Policies", "iam:PutRolePolicy", _ROLE),
    ("ManagedPolicyArns", "iam:AttachRolePolicy", _ROLE),
    ("Tags", "iam:TagRole", _ROLE),
]
_FUNCTION_PROPERTIES = [
    ("Tags", "lambda:TagResource", _FUNCTION),
    ("ReservedConcurrentExecutions", "lambda:PutFunctionConcurrency", _FUNCTION),
    ("Layers", "lambda:GetLayerVersion", _each("lambda", "layer:{name}", "Layers")),
]
_LOG_GROUP_PROPERTIES = [
    ("RetentionInDays", "logs:PutRetentionPolicy", _LOG_GROUP),
    ("Tags", "logs:TagResource", _LOG_GROUP),
]
Reads = list[tuple[str, Arn]]
ByProperty = list[tuple[str, str, Arn]]
# type -> {operation: (the reads the handler waits on, (property, action, ARNs) per property that needs a call)}
FOLLOW_UPS: dict[str, dict[str, tuple[Reads, ByProperty]]] = {
    "AWS::DynamoDB::Table": {
        "create": ([("dynamodb:DescribeTable", _TABLE)], _TABLE_PROPERTIES),
        "update": ([("dynamodb:DescribeTable", _TABLE)], _TABLE_PROPERTIES),
        "delete": ([("dynamodb:DescribeTable", _TABLE)], []),
    },
    "AWS::Lambda::Function": {
        "create": ([("lambda:GetFunction", _FUNCTION)], _FUNCTION_PROPERTIES),
        "update": (
            [("lambda:GetFunction", _FUNCTION)],
            _FUNCTION_PROPERTIES[:2],
        ),  # a layer is read on create
    },
    "AWS::Lambda::EventSourceMapping": {
        "create": (
            [("lambda:GetEventSourceMapping", _MAPPING)],
            [("Tags", "lambda:TagResource", _MAPPING)],
        ),
    },
    "AWS::IAM::Role": {
        "create": ([("iam:GetRole", _ROLE)], _ROLE_PROPERTIES),
        "delete": (
            [("iam:ListAttachedRolePolicies", _ROLE), ("iam:ListRolePolicies", _ROLE)],
            [
                ("Policies", "iam:DeleteRolePolicy", _ROLE),
                ("ManagedPolicyArns", "iam:DetachRolePolicy", _ROLE),
            ],
        ),
    },
    "AWS::S3::Bucket": {"create": ([], _BUCKET_PROPERTIES), "update": ([], _BUCKET_PROPERTIES)},
    "AWS::Logs::LogGroup": {"create": ([], _LOG_GROUP_PROPERTIES), "update": ([], _LOG_GROUP_PROPERTIES)},
}


@functools.cache
def _schemas_dir() -> Path | None:
    """cfn-lint's registry schemas, found without importing cfn-lint (its import alone cost a server ~1.8 s of CPU)."""
    spec = importlib.util.find_spec("cfnlint")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) / "data" / "schemas" if locations else None


@functools.cache
def _schema_index() -> dict[str, str]:
    """Resource type -> the file name (digest) of its registry schema, from cfn-lint's us-east-1 provider index."""
    root = _schemas_dir()
    if root is None:
        return {}
    return dict(json.loads((root / "providers" / "us-east-1.json").read_text()))


@functools.cache
def _schema_calls(type_name: str) -> dict[str, str]:
    """{operation: first permission of its handler} of one resource type, read from its registry schema when first
    asked (every schema read at once cost a server ~2 s of CPU for the few types a stack names)."""
    root, digest = _schemas_dir(), _schema_index().get(type_name)
    if root is None or digest is None:
        return {}
    try:
        schema = json.loads((root / "resources" / f"{digest}.json").read_text())
    except (OSError, ValueError):
        return {}
    handlers = schema.get("handlers") or {}
    return {op: str(h["permissions"][0]) for op, h in handlers.items() if h.get("permissions")}


def calls(
    resource_type: str, operation: str, name: str, props: dict[str, Any], region: str
) -> list[tuple[str, str]]:
    """The (action, resource ARN) pairs CloudFormation's handler needs for ``operation`` of one resource."""
    listed = CALLS.get(resource_type)
    if listed is None:
        if resource_type.startswith(("Custom::", "AWS::CloudFormation::", "AWS::CDK::")):
            return []  # CloudFormation's own (a custom resource invokes its provider as the service)
        first = _schema_calls(resource_type).get(operation)
        return [(first, "*")] if first else []
    if operation not in listed:
        return []
    action, arns = listed[operation]
    found = [(action, arn) for arn in arns(name, props, region)]
    if resource_type == "AWS::Lambda::Function" and operation in ("create", "update") and props.get("Role"):
        found.append(("iam:PassRole", str(props["Role"])))
    # a role's boundary is set by CreateRole itself (iam:PermissionsBoundary, acting_role's context): the
    # schema's create handler lists no iam:PutRolePermissionsBoundary
    return found + follow_ups(resource_type, operation, name, props, region)


def follow_ups(
    resource_type: str, operation: str, name: str, props: dict[str, Any], region: str
) -> list[tuple[str, str]]:
    """The calls a handler makes after its first: the read it waits on, then one per property that needs a call
    of its own (a table's tags, PITR, TTL; a role's inline and managed policies; a bucket's encryption, ...)."""
    listed = FOLLOW_UPS.get(resource_type, {}).get(operation)
    if listed is None:
        return []
    reads, by_property = listed
    found: list[tuple[str, str]] = []
    for action, arns in reads:
        found += [(action, arn) for arn in arns(name, props, region)]
    for prop, action, arns in by_property:
        if _set(props.get(prop)):
            found += [(action, arn) for arn in arns(name, props, region)]
    return found


def _set(value: Any) -> bool:
    """Whether a property asks for something: present, not empty, and not a specification that turns it off."""
    if isinstance(value, dict):
        switches = [v for k, v in value.items() if k.endswith("Enabled") or k == "Status"]
        return bool(value) and not any(v in (False, "false", "Suspended", "Disabled") for v in switches)
    return value not in (None, "", [], {})
