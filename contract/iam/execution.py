"""The CloudFormation execution policy and the permissions boundary of one environment (``doctable policy
execution|boundary``; ``doctable bootstrap`` creates both as managed policies and hands them to ``cdk bootstrap``).

The execution policy is what CloudFormation, acting as the bootstrap's execution role, needs to create, update and
delete this environment's stacks: per resource type the stacks hold (for these knobs), the permissions its
registry schema's handlers list (the calls a handler makes: its first, the reads it waits on, one per property),
each on this environment's names (the table, ``<stack>-*`` for what CloudFormation names, the exact bucket names),
in the home region and each replica's. Roles are created, given policies and passed only under this
environment's boundary (``iam:PermissionsBoundary``), to Lambda only (``iam:PassedToService``).

The boundary caps every role the stacks create, and the execution role itself (``cdk bootstrap
--custom-permissions-boundary``): it allows the execution policy's statements and what the functions do at run
time on the same names (the table and its stream, the buckets' objects, their log groups, telemetry, the
subscribers' declared grants), and denies creating or changing a role without this boundary, removing a boundary,
and editing the two policies. Standard library only.
"""

from __future__ import annotations

import json
from typing import Any

from contract import names
from contract.iam.target import Statement, Target

POLICY_VERSION = "2012-10-17"
MANAGED_POLICY_LIMIT = 6144  # a customer managed policy's characters, counted without whitespace
# Services whose actions the boundary keeps exact (the rest it allows as <service>:* on the same resources).
EXACT_IN_BOUNDARY = ("iam", "kms", "ssm", "sts")
LAMBDA_SERVICE = "lambda.amazonaws.com"
# The IAM calls that create or change a role's permissions: allowed only with this environment's boundary.
ROLE_WRITES = (
    "iam:CreateRole",
    "iam:PutRolePolicy",
    "iam:AttachRolePolicy",
    "iam:DeleteRolePolicy",
    "iam:DetachRolePolicy",
    "iam:PutRolePermissionsBoundary",
)
# Of those, the ones that attach a managed policy: only the stacks' own policies (never an AWS managed one such as
# AdministratorAccess), by iam:PolicyARN.
ROLE_ATTACHMENTS = ("iam:AttachRolePolicy", "iam:DetachRolePolicy")
ROLE_READS_AND_TAGS = (
    "iam:GetRole",
    "iam:GetRolePolicy",
    "iam:ListAttachedRolePolicies",
    "iam:ListRolePolicies",
    "iam:TagRole",
    "iam:UntagRole",
    "iam:UpdateAssumeRolePolicy",
    "iam:UpdateRole",
    "iam:UpdateRoleDescription",
    "iam:DeleteRole",
)
TABLE_ACTIONS = (
    "CreateTable", "UpdateTable", "DeleteTable", "DescribeTable", "DescribeContinuousBackups",
    "DescribeContributorInsights", "DescribeKinesisStreamingDestination", "DescribeTimeToLive",
    "EnableKinesisStreamingDestination", "DisableKinesisStreamingDestination",
    "UpdateKinesisStreamingDestination", "GetResourcePolicy", "PutResourcePolicy", "DeleteResourcePolicy",
    "ListTagsOfResource", "TagResource", "UntagResource", "UpdateContinuousBackups", "UpdateContributorInsights",
    "UpdateTimeToLive",
)  # fmt: skip
REPLICA_ACTIONS = ("CreateTableReplica", "DeleteTableReplica", "AssociateTableReplica")
FUNCTION_ACTIONS = (
    "CreateFunction", "DeleteFunction", "GetFunction", "GetFunctionConfiguration", "UpdateFunctionCode",
    "UpdateFunctionConfiguration", "PublishVersion", "TagResource", "UntagResource", "ListTags",
    "PutFunctionConcurrency", "DeleteFunctionConcurrency", "GetFunctionCodeSigningConfig",
    "GetRuntimeManagementConfig", "PutRuntimeManagementConfig", "GetFunctionRecursionConfig",
    "PutFunctionRecursionConfig", "CreateAlias", "UpdateAlias", "DeleteAlias", "GetAlias",
)  # fmt: skip
MAPPING_ACTIONS = (
    "CreateEventSourceMapping", "UpdateEventSourceMapping", "DeleteEventSourceMapping", "GetEventSourceMapping",
)  # fmt: skip
BUCKET_ACTIONS = (
    "CreateBucket", "DeleteBucket", "ListBucket", "GetBucketAcl", "GetBucketPolicy", "PutBucketPolicy",
    "DeleteBucketPolicy", "PutEncryptionConfiguration", "PutBucketPublicAccessBlock", "PutBucketVersioning",
    "PutLifecycleConfiguration", "PutBucketOwnershipControls", "PutBucketTagging", "PutBucketNotification",
    "PutBucketLogging", "PutBucketCORS", "TagResource", "UntagResource",
)  # fmt: skip
LOG_GROUP_ACTIONS = (
    "CreateLogGroup", "DeleteLogGroup", "PutRetentionPolicy", "DeleteRetentionPolicy", "TagResource",
    "UntagResource", "ListTagsForResource",
)  # fmt: skip
MANAGED_POLICY_ACTIONS = (
    "CreatePolicy", "CreatePolicyVersion", "DeletePolicy", "DeletePolicyVersion", "GetPolicy", "ListPolicyVersions",
    "ListEntitiesForPolicy",
)  # fmt: skip
ALARM_ACTIONS = ("PutMetricAlarm", "DeleteAlarms", "DescribeAlarms", "TagResource", "UntagResource",
                 "ListTagsForResource")  # fmt: skip
TOPIC_ACTIONS = ("CreateTopic", "DeleteTopic", "GetTopicAttributes", "SetTopicAttributes", "TagResource",
                 "UntagResource", "ListTagsForResource")  # fmt: skip
STREAM_ACTIONS = (
    "CreateStream", "DeleteStream", "DescribeStream", "DescribeStreamSummary", "AddTagsToStream",
    "RemoveTagsFromStream", "ListTagsForStream", "StartStreamEncryption", "StopStreamEncryption",
    "IncreaseStreamRetentionPeriod", "DecreaseStreamRetentionPeriod", "PutRecords",
)  # fmt: skip
# A stream's capacity changes name no stream (the Service Authorization Reference lists no resource for them).
STREAM_CAPACITY_ACTIONS = ("UpdateShardCount", "UpdateStreamMode")
KEY_ACTIONS = ("DescribeKey", "EnableKeyRotation", "DisableKeyRotation", "PutKeyPolicy", "TagResource",
               "UntagResource", "ListResourceTags", "ScheduleKeyDeletion", "EnableKey", "DisableKey",
               "UpdateKeyDescription")  # fmt: skip
# What a table's SSE under a KMS key asks of the key, through DynamoDB (its schema's create handler).
TABLE_KEY_ACTIONS = ("CreateGrant", "DescribeKey", "Decrypt", "Encrypt", "RevokeGrant", "GenerateDataKey")


def policy_name(t: Target, kind: str) -> str:
    """The managed policy's name: ``<stack>-execution`` or ``<stack>-boundary``; previews share one
    (``doctable-<table_base>-<prefix>previews-…``)."""
    return stack_policy_name(t.stack, kind)


def stack_policy_name(stack: str, kind: str) -> str:
    """The policy ``kind`` of the stack ``stack`` (a pattern ``...-pr-*``: every preview's)."""
    return f"{stack.replace('*', 'previews')}-{kind}"


def policy_arn(t: Target, kind: str) -> str:
    return t.arn("iam", f"policy/{policy_name(t, kind)}", region=False)


def _regions(t: Target) -> tuple[str, ...]:
    return (t.region, *t.config.replicas)


def _in_regions(t: Target, service: str, resource: str) -> tuple[str, ...]:
    return tuple(f"arn:{t.partition}:{service}:{r}:{t.account}:{resource}" for r in _regions(t))


def _table_arns(t: Target) -> tuple[str, ...]:
    table = f"table/{t.config.table_name}"
    return tuple(
        a for r in (table, f"{table}/index/*", f"{table}/stream/*") for a in _in_regions(t, "dynamodb", r)
    )


def _has_functions(t: Target) -> bool:
    return t.config.builtin_consumer or bool(t.config.subscribers)


def _buckets(t: Target) -> tuple[str, ...]:
    """The buckets the stacks create (never a borrowed blob bucket: the stack does not own it)."""
    own = [b for b in t.stack_buckets if b != t.config.blob_bucket]
    return tuple(a for b in own for a in (t.bucket_arn(b), t.bucket_arn(b, "*")))


def _roles(t: Target) -> tuple[str, ...]:
    return (t.arn("iam", f"role/{t.stack}-*", region=False),)


def _boundary_condition(t: Target) -> dict[str, dict[str, list[str]]]:
    return {"StringEquals": {"iam:PermissionsBoundary": [policy_arn(t, "boundary")]}}


def execution_statements(t: Target) -> list[Statement]:
    """The execution policy's statements for ``t``'s stacks (see the module's docstring)."""
    c = t.config
    stack = t.stack
    found = [
        Statement("Table", tuple(f"dynamodb:{a}" for a in TABLE_ACTIONS), _table_arns(t)),
        Statement(
            "RuntimeManagedPolicy",
            tuple(f"iam:{a}" for a in MANAGED_POLICY_ACTIONS),
            (t.arn("iam", f"policy/{stack}-*", region=False),),
        ),
        Statement(
            "Dashboard",
            ("cloudwatch:PutDashboard", "cloudwatch:GetDashboard", "cloudwatch:DeleteDashboards"),
            tuple(t.arn("cloudwatch", f"dashboard/{stack}-{r}", region=False) for r in _regions(t)),
        ),
        Statement(
            "ReadBootstrapVersion",
            ("ssm:GetParameters", "ssm:GetParameter"),
            tuple(
                f"arn:{t.partition}:ssm:{r}:{t.account}:parameter/cdk-bootstrap/{t.qualifier}/version"
                for r in _regions(t)
            ),
        ),  # fmt: skip
    ]
    if c.is_global:
        found.append(
            Statement("TableReplicas", tuple(f"dynamodb:{a}" for a in REPLICA_ACTIONS), _table_arns(t))
        )
    if c.has_mapping or c.subscribers:
        found.append(Statement("StackBuckets", tuple(f"s3:{a}" for a in BUCKET_ACTIONS), _buckets(t)))
        functions = tuple(a for r in (f"function:{stack}-*",) for a in _in_regions(t, "lambda", r))
        invoked = {"ArnLike": {"lambda:FunctionArn": [*functions, *filter(None, [c.borrowed_consumer_arn])]}}
        # CreateEventSourceMapping names no resource (the mapping's UUID comes after): the function it invokes
        # is its only scope (the Service Authorization Reference's lambda:FunctionArn).
        found.append(
            Statement(
                "CreateMappingsAcceptsNoResource", ("lambda:CreateEventSourceMapping",), ("*",), invoked
            )
        )
        found.append(
            Statement(
                "StreamMappings",
                tuple(f"lambda:{a}" for a in MAPPING_ACTIONS if a != "CreateEventSourceMapping"),
                _in_regions(t, "lambda", "event-source-mapping:*"),
                invoked,
            )
        )
        found.append(
            Statement(
                "TagMappingsUuidKnownOnlyAfterCreate",
                ("lambda:TagResource", "lambda:UntagResource", "lambda:ListTags"),
                _in_regions(t, "lambda", "event-source-mapping:*"),
            )
        )
        found += _alarms(t)
    if _has_functions(t):
        found += _functions(t)
    if c.creates_kinesis_stream:
        found.append(
            Statement("KinesisStream", tuple(f"kinesis:{a}" for a in STREAM_ACTIONS), t.kinesis_streams)
        )
        capacity = tuple(f"kinesis:{a}" for a in STREAM_CAPACITY_ACTIONS)
        found.append(Statement("KinesisCapacityAcceptsNoResource", capacity, ("*",)))
    elif c.has_kinesis:
        found.append(
            Statement(
                "KinesisDestination", ("kinesis:DescribeStream", "kinesis:PutRecords"), t.kinesis_streams
            )
        )
    found += _keys(t)
    return found


def _functions(t: Target) -> list[Statement]:
    """The functions, their roles (only under the boundary, passed to Lambda only), log groups and layers."""
    stack = t.stack
    functions = _in_regions(t, "lambda", f"function:{stack}-*")
    # the public parameter naming the pinned Powertools layer (AWS's own: no account in its ARN), and the layer
    layer = [f"arn:{t.partition}:ssm:{r}::parameter{names.POWERTOOLS_SSM_PATH.split('{')[0].rstrip('/')}/*"
             for r in _regions(t)]  # fmt: skip
    layers = tuple(
        f"arn:{t.partition}:lambda:{r}:*:layer:{names.POWERTOOLS_LAYER_PREFIX}*:*" for r in _regions(t)
    )
    return [
        Statement(
            "Functions",
            tuple(f"lambda:{a}" for a in FUNCTION_ACTIONS),
            (*functions, *(f"{f}:*" for f in functions)),
        ),
        Statement("ReadPowertoolsLayer", ("lambda:GetLayerVersion",), layers),
        Statement("ResolvePowertoolsLayerParameter", ("ssm:GetParameters", "ssm:GetParameter"), tuple(layer)),
        Statement(
            "FunctionLogGroups",
            tuple(f"logs:{a}" for a in LOG_GROUP_ACTIONS),
            _in_regions(t, "logs", f"log-group:{stack}-*"),
        ),  # fmt: skip
        Statement("ListLogGroupsAcceptsNoResource", ("logs:DescribeLogGroups",), ("*",)),
        Statement(
            "RolesOnlyWithTheBoundary",
            tuple(a for a in ROLE_WRITES if a not in ROLE_ATTACHMENTS),
            _roles(t),
            _boundary_condition(t),
        ),
        Statement(
            "AttachOnlyTheStacksPoliciesUnderTheBoundary",
            ROLE_ATTACHMENTS,
            _roles(t),
            {
                **_boundary_condition(t),
                "ArnLike": {"iam:PolicyARN": [t.arn("iam", f"policy/{t.stack}-*", region=False)]},
            },
        ),
        Statement("RolesReadAndTag", ROLE_READS_AND_TAGS, _roles(t)),
        Statement(
            "PassRolesToLambdaOnly",
            ("iam:PassRole",),
            _roles(t),
            {"StringEquals": {"iam:PassedToService": [LAMBDA_SERVICE]}},
        ),
    ]


def _alarms(t: Target) -> list[Statement]:
    stack = t.stack
    return [
        Statement(
            "Alarms",
            tuple(f"cloudwatch:{a}" for a in ALARM_ACTIONS),
            _in_regions(t, "cloudwatch", f"alarm:{stack}-*"),
        ),  # fmt: skip
        Statement(
            "AlarmTopics", tuple(f"sns:{a}" for a in TOPIC_ACTIONS), _in_regions(t, "sns", f"{stack}-*")
        ),
    ]


def _keys(t: Target) -> list[Statement]:
    c = t.config
    found = []
    if c.customer_managed_key and not c.borrowed_kms_key_arn:
        # CreateKey names no key (its id is known once made): the key's own actions then name any key.
        found.append(Statement("CreateKeyAcceptsNoResource", ("kms:CreateKey",), ("*",)))
        found.append(Statement("TableKey", tuple(f"kms:{a}" for a in KEY_ACTIONS), t.kms_keys))
    if c.customer_managed_key or c.aws_managed_key:
        via = {"StringEquals": {"kms:ViaService": [f"dynamodb.{r}.amazonaws.com" for r in _regions(t)]}}
        found.append(Statement("TableKeyThroughDynamoDB", tuple(f"kms:{a}" for a in TABLE_KEY_ACTIONS),
                               t.kms_keys, via))  # fmt: skip
    return found


def _runtime(t: Target) -> list[Statement]:
    """What the stacks' functions do as their roles, on the same names (the boundary's share beyond the
    execution policy): the table's items and stream, the buckets' objects, their logs, telemetry, and each
    subscriber's declared grants on their own ARNs."""
    c = t.config
    found = [Statement("RuntimeTable", ("dynamodb:*",), _table_arns(t))]
    if c.has_mapping or c.subscribers:
        buckets = [b for b in t.stack_buckets]
        objects = tuple(a for b in buckets for a in (t.bucket_arn(b), t.bucket_arn(b, "*")))
        found.append(Statement("RuntimeBucketObjects", ("s3:GetObject", "s3:PutObject", "s3:DeleteObject",
                                                         "s3:ListBucket", "s3:GetBucketLocation"), objects))  # fmt: skip
        found.append(Statement("RuntimeLogs", ("logs:CreateLogStream", "logs:PutLogEvents"),
                               _in_regions(t, "logs", f"log-group:{t.stack}-*")))  # fmt: skip
        found.append(
            Statement(
                "RuntimeCallsAcceptNoResource",
                # telemetry, and the stream listing Lambda checks a mapping's role for
                (
                    "xray:PutTraceSegments",
                    "xray:PutTelemetryRecords",
                    "cloudwatch:PutMetricData",
                    "dynamodb:ListStreams",
                ),
                ("*",),
            )
        )
    if c.has_kinesis or c.reads_kinesis:
        reads = ("DescribeStream", "DescribeStreamSummary", "ListShards", "GetShardIterator", "GetRecords")
        found.append(Statement("RuntimeKinesis", tuple(f"kinesis:{a}" for a in reads), t.kinesis_streams))
    if c.customer_managed_key or c.aws_managed_key:
        found.append(
            Statement("RuntimeKeys", ("kms:Decrypt", "kms:GenerateDataKey", "kms:Encrypt"), t.kms_keys)
        )
    for spec in c.subscribers:
        for n, grant in enumerate(g for g in spec.grants if g.resource.startswith("arn:")):
            sid = (
                "Subscriber"
                + "".join(p.capitalize() for p in spec.name.replace("_", "-").split("-"))
                + str(n)
            )
            found.append(Statement(sid, grant.actions, (grant.resource,)))
    return found


def boundary_document(t: Target) -> dict[str, Any]:
    """The permissions boundary: each service of the execution policy and of the functions' run time on the same
    resources (``<service>:*`` on them: a ceiling, not a grant; IAM, KMS and SSM keep their exact actions and
    conditions), and the denials that keep every role under it."""
    allows: dict[tuple[str, ...], list[Any]] = {}
    for statement in [*execution_statements(t), *_runtime(t)]:
        services = sorted({a.split(":")[0] for a in statement.actions})
        exact = any(s in EXACT_IN_BOUNDARY for s in services) or statement.resources == ("*",)
        actions = statement.actions if exact else tuple(f"{s}:*" for s in services)
        key = (*statement.resources, repr(statement.condition), *(actions if exact else ()))
        have = allows.setdefault(key, [statement.sid, set(), statement.resources, statement.condition])
        have[1].update(actions)
    documents = []
    for sid, actions, resources, condition in allows.values():
        document: dict[str, Any] = {
            "Sid": sid,
            "Effect": "Allow",
            "Action": sorted(actions),
            "Resource": list(resources),
        }
        if condition:
            document["Condition"] = condition
        documents.append(document)
    own = [policy_arn(t, "boundary"), *execution_arns(t)]
    denies = [
        {
            "Sid": "DenyRoleWritesWithoutThisBoundary",
            "Effect": "Deny",
            "Action": list(ROLE_WRITES),
            "Resource": "*",
            "Condition": {"StringNotEquals": {"iam:PermissionsBoundary": [policy_arn(t, "boundary")]}},
        },
        {
            "Sid": "DenyBoundaryRemoval",
            "Effect": "Deny",
            "Action": ["iam:DeleteRolePermissionsBoundary"],
            "Resource": "*",
        },  # fmt: skip
        {
            "Sid": "DenyEditingThesePolicies",
            "Effect": "Deny",
            "Action": [
                "iam:CreatePolicyVersion",
                "iam:DeletePolicy",
                "iam:DeletePolicyVersion",
                "iam:SetDefaultPolicyVersion",
            ],  # fmt: skip
            "Resource": own,
        },
    ]
    return {"Version": POLICY_VERSION, "Statement": [*documents, *denies]}


def execution_documents(t: Target) -> list[dict[str, Any]]:
    """The execution policy as managed policies of at most MANAGED_POLICY_LIMIT characters each (``cdk bootstrap
    --cloudformation-execution-policies`` takes them all): statements packed in order."""
    documents: list[dict[str, Any]] = []
    current: list[dict[str, Any]] = []
    for statement in execution_statements(t):
        candidate = [*current, statement.document()]
        if current and _size({"Version": POLICY_VERSION, "Statement": candidate}) > MANAGED_POLICY_LIMIT:
            documents.append({"Version": POLICY_VERSION, "Statement": current})
            candidate = [statement.document()]
        current = candidate
    documents.append({"Version": POLICY_VERSION, "Statement": current})
    return documents


def execution_names(t: Target) -> list[str]:
    """The execution policies' names: ``<stack>-execution``, then ``-execution-2``, ... when it takes more."""
    count = len(execution_documents(t))
    return [policy_name(t, "execution" if n == 1 else f"execution-{n}") for n in range(1, count + 1)]


def execution_arns(t: Target) -> list[str]:
    return [t.arn("iam", f"policy/{name}", region=False) for name in execution_names(t)]


def _size(document: dict[str, Any]) -> int:
    return len(json.dumps(document, separators=(",", ":")))
