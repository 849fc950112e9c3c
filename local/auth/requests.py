"""A request as IAM sees it: the caller's key, and each (action, resource ARN, condition keys) it needs.

JSON-protocol services (DynamoDB, DynamoDB Streams, Kinesis, CloudWatch Logs, SSM) name their operation in
X-Amz-Target; query-protocol ones (CloudFormation, STS, IAM) in ``Action``; REST ones (Lambda, S3) are matched
against botocore's own service model (method, path template, required query parameters). Resources are taken from
the request as AWS takes them: table, index and stream ARNs; Kinesis stream and consumer ARNs; KMS key ARNs (an
alias resolved to its key); bucket and object
ARNs; function, mapping and layer ARNs (a call on one mapping with ``lambda:FunctionArn``, lambda_access.py); log
group and stream ARNs; parameter ARNs; stack ARNs.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote

from local import state
from local.auth import signing


@dataclass
class Check:
    action: str
    resource: str
    context: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Parsed:
    service: str  # the signing name: dynamodb, s3, lambda, logs, ssm, cloudformation, sts, iam, ...
    protocol: str  # json, query, rest-json, rest-xml
    operation: str
    access_key: str | None
    session_token: str | None
    checks: list[Check]
    bucket: str | None = None
    delete_keys: list[str] | None = None  # S3 DeleteObjects: each key is authorized on its own


def credential(environ: dict[str, Any]) -> tuple[str | None, str | None, str | None, str | None]:
    """(access key, region, signing service, session token) of a SigV4 request; Nones when unsigned."""
    auth = environ.get("HTTP_AUTHORIZATION", "")
    query = parse_qs(environ.get("QUERY_STRING", ""))
    scope = ""
    if "Credential=" in auth:
        scope = signing.parameters(auth).get("Credential", "")
    elif "X-Amz-Credential" in query:
        scope = query["X-Amz-Credential"][0]
    token = environ.get("HTTP_X_AMZ_SECURITY_TOKEN") or (query.get("X-Amz-Security-Token") or [None])[0]
    parts = scope.split("/")
    if len(parts) < 4:
        return None, None, None, token
    return parts[0], parts[2], parts[3], token


def parse(environ: dict[str, Any], body: bytes | None) -> Parsed | None:
    """The checks a request needs; None for a request that is not an AWS API call (no SigV4 credential)."""
    key, region, service, token = credential(environ)
    if key is None or service is None:
        return None
    region = region or state.REGION
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        prefix, _, operation = target.partition(".")
        data = _json(body)
        checks = _json_checks(service, prefix, operation, data, region)
        return Parsed(service, "json", operation, key, token, checks)
    if service in ("s3", "lambda"):
        return _rest(environ, body, service, region, key, token)
    params = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
    if body and "x-www-form-urlencoded" in environ.get("CONTENT_TYPE", ""):
        params.update({k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()})
    operation = params.get("Action", "")
    return Parsed(service, "query", operation, key, token, _query_checks(service, operation, params, region))


def _json(body: bytes | None) -> dict[str, Any]:
    try:
        data = json.loads(body or b"{}")
    except (ValueError, RecursionError):  # not JSON, or nested past Python's stack: the service refuses it
        return {}
    return data if isinstance(data, dict) else {}


def _arn(service: str, region: str, resource: str) -> str:
    return f"arn:aws:{service}:{region}:{state.ACCOUNT_ID}:{resource}"


# ---- JSON protocol ----
_TRANSACT = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


def _table(name: str, region: str) -> str:
    return name if name.startswith("arn:") else _arn("dynamodb", region, f"table/{name}")


def _json_checks(service: str, prefix: str, op: str, data: dict[str, Any], region: str) -> list[Check]:
    action = f"{service}:{op}"
    if prefix.startswith("DynamoDBStreams"):
        if "StreamArn" in data:
            return [Check(action, str(data["StreamArn"]))]
        if "ShardIterator" in data:  # the local iterator starts with its stream's ARN
            return [Check(action, str(data["ShardIterator"]).split("|", 1)[0])]
        return [Check(action, "*")]
    if service == "dynamodb":
        return _dynamodb_checks(op, data, region)
    if service == "kinesis":
        return [Check(action, _kinesis_resource(data, region))]
    if service == "kms" and op == "ReEncrypt":  # IAM authorizes each side of a re-encryption on its own key
        return [
            Check("kms:ReEncryptFrom", kms_resource({"KeyId": data.get("SourceKeyId")}, region)),
            Check("kms:ReEncryptTo", kms_resource({"KeyId": data.get("DestinationKeyId")}, region)),
        ]
    if service == "kms":
        return [Check(action, kms_resource(data, region))]
    if service == "logs":
        group = data.get("logGroupName") or data.get("logGroupIdentifier")
        if group and str(group).startswith("arn:"):
            group = str(group).split(":log-group:", 1)[1].removesuffix(":*")
        if group and data.get("logStreamName"):
            stream = data["logStreamName"]
            return [Check(action, _arn("logs", region, f"log-group:{group}:log-stream:{stream}"))]
        if group:
            return [Check(action, _arn("logs", region, f"log-group:{group}:*"))]
        return [Check(action, str(data.get("resourceArn") or "*"))]
    if service == "ssm":
        names = data.get("Names") or ([data["Name"]] if "Name" in data else [])
        if not names and "Path" in data:
            names = [data["Path"]]
        if not names and data.get("ResourceType") == "Parameter" and "ResourceId" in data:
            names = [data["ResourceId"]]
        return [Check(action, _arn("ssm", region, "parameter/" + str(n).lstrip("/"))) for n in names] or [
            Check(action, "*")
        ]
    return [Check(action, "*")]


# PartiQL: IAM authorizes a statement by its verb on the table it names (ExecuteStatement is no IAM action).
_PARTIQL = {
    "SELECT": "PartiQLSelect",
    "INSERT": "PartiQLInsert",
    "UPDATE": "PartiQLUpdate",
    "DELETE": "PartiQLDelete",
}
_PARTIQL_TABLE = re.compile(r'\b(?:FROM|INTO|UPDATE)\s+"?([A-Za-z0-9_.-]+?)"?(?:\.|\s|$)', re.IGNORECASE)


def _partiql_checks(statements: list[Any], region: str) -> list[Check]:
    checks = []
    for statement in statements:
        text = str((statement or {}).get("Statement") or "")
        verb = text.split(None, 1)[0].upper() if text.strip() else ""
        table = _PARTIQL_TABLE.search(text)
        resource = _table(table.group(1), region) if table else "*"
        checks.append(Check(f"dynamodb:{_PARTIQL.get(verb, 'PartiQL' + verb.title())}", resource))
    return checks


def _dynamodb_checks(op: str, data: dict[str, Any], region: str) -> list[Check]:
    action = f"dynamodb:{op}"
    if op == "ExecuteStatement":
        return _partiql_checks([data], region)
    if op in ("BatchExecuteStatement", "ExecuteTransaction"):
        return _partiql_checks(data.get("Statements") or data.get("TransactStatements") or [], region)
    if op in ("BatchGetItem", "BatchWriteItem"):
        return [Check(action, _table(t, region)) for t in data.get("RequestItems") or {}] or [
            Check(action, "*")
        ]
    if op in ("TransactWriteItems", "TransactGetItems"):
        checks = []
        for item in data.get("TransactItems") or []:
            for kind, spec in item.items():
                name = "GetItem" if kind == "Get" else _TRANSACT.get(kind, kind)
                checks.append(Check(f"dynamodb:{name}", _table(str(spec.get("TableName", "")), region)))
        return checks or [Check(action, "*")]
    if "TableName" in data:
        resource = _table(str(data["TableName"]), region)
        if data.get("IndexName"):
            resource += f"/index/{data['IndexName']}"
        return [Check(action, resource), *kinesis_destination_checks(op, data)]
    if "ResourceArn" in data:
        return [Check(action, str(data["ResourceArn"]))]
    return [Check(action, "*")]


def kinesis_destination_checks(op: str, data: dict[str, Any]) -> list[Check]:
    """What enabling a table's Kinesis streaming destination also needs of the caller, as DynamoDB's guide lists
    it: kinesis:DescribeStream and kinesis:PutRecords on the stream, and kinesis:ListStreams (which Kinesis
    authorizes on no resource). Describing the destinations needs reads of the streams they name, which the
    request does not carry (auth/table_access.py destination_checks)."""
    stream = str(data.get("StreamArn") or "")
    if op != "EnableKinesisStreamingDestination" or not stream:
        return []
    return [
        Check("kinesis:DescribeStream", stream),
        Check("kinesis:PutRecords", stream),
        Check("kinesis:ListStreams", "*"),
    ]


def _kinesis_resource(data: dict[str, Any], region: str) -> str:
    """A Kinesis call's resource: the stream (by ARN or name, or the one a shard iterator reads), its consumer,
    or the ARN a tag or policy operation names; ``*`` for an account-wide call (ListStreams)."""
    for key in ("ConsumerARN", "StreamARN", "ResourceARN"):
        if data.get(key):
            return str(data[key])
    name = data.get("StreamName")
    if not name and data.get("ShardIterator"):
        try:  # moto's iterator is base64 of "<stream name>:<shard id>:<sequence number>"
            name = base64.b64decode(str(data["ShardIterator"])).decode("utf-8").split(":", 1)[0]
        except (ValueError, UnicodeDecodeError):
            name = None
    return _arn("kinesis", region, f"stream/{name}") if name else "*"


def kms_resource(data: dict[str, Any], region: str) -> str:
    """A KMS call's resource, as KMS authorizes it: the key its ``KeyId`` names (a key id, a key ARN, or an alias
    name or ARN, which names the key it points to); ``*`` for a call on no key (CreateKey, ListKeys,
    ListAliases) or an alias that points to none (KMS then answers NotFoundException)."""
    key_id = str(data.get("KeyId") or data.get("TargetKeyId") or "")
    if not key_id:
        return "*"
    if key_id.startswith("arn:") and ":key/" in key_id:
        return key_id
    if key_id.startswith("alias/") or ":alias/" in key_id:
        key_region = key_id.split(":")[3] if key_id.startswith("arn:") else region
        from moto.kms.models import kms_backends

        backend = kms_backends[state.ACCOUNT_ID][key_region]
        found = backend.get_key_id_from_alias(backend.get_alias_name(key_id))
        return _arn("kms", key_region, f"key/{found}") if found else "*"
    return _arn("kms", region, f"key/{key_id}")


# ---- query protocol ----
def _query_checks(service: str, op: str, params: dict[str, str], region: str) -> list[Check]:
    action = f"{service}:{op}"
    if service == "cloudformation":
        name = params.get("StackName")
        resource = "*"
        if name:
            resource = name if name.startswith("arn:") else _arn("cloudformation", region, f"stack/{name}/*")
        checks = [Check(action, resource)]
        if params.get("RoleARN"):
            passed = {"iam:PassedToService": ["cloudformation.amazonaws.com"]}
            checks.append(Check("iam:PassRole", params["RoleARN"], passed))
        return checks
    if service == "sts":
        return [Check(action, params.get("RoleArn", "*"))]
    if service == "iam":
        account = f"arn:aws:iam::{state.ACCOUNT_ID}"
        for param, kind in (("RoleName", "role"), ("UserName", "user"), ("GroupName", "group")):
            if params.get(param):
                check = Check(action, f"{account}:{kind}/{params[param]}")
                if op in BOUNDARY_SETTING and params.get("PermissionsBoundary"):
                    check.context["iam:PermissionsBoundary"] = [params["PermissionsBoundary"]]
                return [check]
        if params.get("PolicyArn"):
            return [Check(action, params["PolicyArn"])]
        if params.get("PolicyName") and op == "CreatePolicy":
            return [Check(action, f"{account}:policy{params.get('Path', '/')}{params['PolicyName']}")]
    return [Check(action, "*")]


# The IAM calls whose iam:PermissionsBoundary is the boundary they set (the request's PermissionsBoundary), and
# those whose is the boundary the role or user already has (the middleware reads it): Service Authorization
# Reference, IAM's condition keys.
BOUNDARY_SETTING = frozenset(
    {"CreateRole", "CreateUser", "PutRolePermissionsBoundary", "PutUserPermissionsBoundary"}
)
BOUNDARY_HELD = frozenset(
    {
        "AttachRolePolicy", "AttachUserPolicy", "DetachRolePolicy", "DetachUserPolicy", "PutRolePolicy",
        "PutUserPolicy", "DeleteRolePolicy", "DeleteUserPolicy", "DeleteRolePermissionsBoundary",
        "DeleteUserPermissionsBoundary",
    }
)  # fmt: skip


# ---- REST protocols (Lambda, S3), matched against botocore's model ----
@functools.lru_cache(maxsize=4)
def _routes(service: str) -> list[tuple[str, list[str], dict[str, str | None], tuple[str, ...], str]]:
    """(method, path template, required query parameters, required headers, operation) per operation."""
    import botocore.session

    model = botocore.session.get_session().get_service_model(service)
    routes = []
    for name in model.operation_names:
        operation_model = model.operation_model(name)
        http = operation_model.http
        path, _, query = http["requestUri"].partition("?")
        required: dict[str, str | None] = {}
        for part in query.split("&"):
            if part and not part.startswith("x-id="):
                k, _, v = part.partition("=")
                required[k] = v or None
        headers: list[str] = []
        shape = operation_model.input_shape
        for member in shape.required_members if shape is not None else []:
            serialization = shape.members[member].serialization
            if serialization.get("location") == "querystring":
                required.setdefault(serialization["name"], None)
            elif serialization.get("location") == "header":
                headers.append("HTTP_" + serialization["name"].upper().replace("-", "_"))
        routes.append(
            (http["method"], [s for s in path.strip("/").split("/") if s], required, tuple(headers), name)
        )
    return routes


def _match(template: list[str], segments: list[str]) -> dict[str, str] | None:
    found: dict[str, str] = {}
    for i, part in enumerate(template):
        if part.startswith("{") and part.endswith("+}"):
            rest = segments[i:]
            if not rest:
                return None
            found[part[1:-2]] = "/".join(rest)
            return found
        if i >= len(segments):
            return None
        if part.startswith("{"):
            found[part[1:-1]] = segments[i]
        elif part != segments[i]:
            return None
    return found if len(segments) == len(template) else None


def operation(
    service: str, method: str, path: str, query: dict[str, list[str]], environ: dict[str, Any] | None = None
) -> tuple[str, dict[str, str]]:
    """The REST operation a request is, with its path parameters ("" when none matches)."""
    segments = [s for s in path.split("/") if s] if service != "s3" else _s3_segments(path)
    best: tuple[tuple[int, int], str, dict[str, str]] | None = None
    for route_method, template, required, headers, name in _routes(service):
        if route_method != method:
            continue
        if any(k not in query or (v is not None and query[k][0] != v) for k, v in required.items()):
            continue
        if any(h not in (environ or {}) for h in headers):
            continue
        found = _match(template, segments)
        if found is None:
            continue
        score = (len(required) + len(headers), sum(1 for t in template if not t.startswith("{")))
        if best is None or score > best[0]:
            best = (score, name, found)
    return (best[1], best[2]) if best else ("", {})


def _s3_segments(path: str) -> list[str]:
    bucket, _, key = path.lstrip("/").partition("/")
    return [s for s in (bucket, key) if s]


_S3_ACTIONS = {
    "HeadObject": "GetObject",
    "HeadBucket": "ListBucket",
    "ListObjects": "ListBucket",
    "ListObjectsV2": "ListBucket",
    "ListObjectVersions": "ListBucketVersions",
    "ListBuckets": "ListAllMyBuckets",
    "DeleteObjects": "DeleteObject",
    "CopyObject": "PutObject",
    "CreateMultipartUpload": "PutObject",
    "UploadPart": "PutObject",
    "UploadPartCopy": "PutObject",
    "CompleteMultipartUpload": "PutObject",
    "ListMultipartUploads": "ListBucketMultipartUploads",
    "ListParts": "ListMultipartUploadParts",
    "PutPublicAccessBlock": "PutBucketPublicAccessBlock",
    "GetPublicAccessBlock": "GetBucketPublicAccessBlock",
    "DeletePublicAccessBlock": "PutBucketPublicAccessBlock",
    "PutBucketEncryption": "PutEncryptionConfiguration",
    "GetBucketEncryption": "GetEncryptionConfiguration",
    "DeleteBucketEncryption": "PutEncryptionConfiguration",
    "PutBucketLifecycleConfiguration": "PutLifecycleConfiguration",
    "GetBucketLifecycleConfiguration": "GetLifecycleConfiguration",
    "DeleteBucketLifecycle": "PutLifecycleConfiguration",
    "PutBucketNotificationConfiguration": "PutBucketNotification",
    "GetBucketNotificationConfiguration": "GetBucketNotification",
    "PutBucketCors": "PutBucketCORS",
    "GetBucketCors": "GetBucketCORS",
    "DeleteBucketCors": "PutBucketCORS",
    "DeleteBucketTagging": "PutBucketTagging",
    "DeleteBucketOwnershipControls": "PutBucketOwnershipControls",
    "PutBucketReplication": "PutReplicationConfiguration",
    "GetBucketReplication": "GetReplicationConfiguration",
    "DeleteBucketReplication": "PutReplicationConfiguration",
}
_S3_VERSIONED = {
    "GetObject": "GetObjectVersion",
    "HeadObject": "GetObjectVersion",
    "DeleteObject": "DeleteObjectVersion",
}


def _bucket_host(environ: dict[str, Any]) -> str | None:
    host = (environ.get("HTTP_HOST") or "").rsplit(":", 1)[0]
    return host.removesuffix(".localhost") if host.endswith(".localhost") else None


def anonymous(environ: dict[str, Any], body: bytes | None) -> Parsed:
    """An unsigned request, read as S3 (the one service that takes them): its checks, with no key."""
    return _rest(environ, body, "s3", state.REGION, None, None)


def _rest(
    environ: dict[str, Any], body: bytes | None, service: str, region: str, key: str | None, token: str | None
) -> Parsed:
    method = environ.get("REQUEST_METHOD", "GET")
    path = environ.get("PATH_INFO", "/")
    query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
    if service == "lambda":
        op, params = operation("lambda", method, path, query, environ)
        return Parsed("lambda", "rest-json", op, key, token, [_lambda_check(op, params, region)])
    host_bucket = _bucket_host(environ)
    if host_bucket:
        path = f"/{host_bucket}{path}"
    op, params = operation("s3", method, path, query, environ)
    bucket = params.get("Bucket")
    object_key = params.get("Key")
    if "versionId" in query and op in _S3_VERSIONED:
        action = "s3:" + _S3_VERSIONED[op]
    else:
        action = "s3:" + _S3_ACTIONS.get(op, op or "*")
    bucket_arn = f"arn:aws:s3:::{bucket}" if bucket else "*"
    resource = f"{bucket_arn}/{unquote(object_key)}" if bucket and object_key else bucket_arn
    context: dict[str, list[str]] = {}
    for param, condition_key in (("prefix", "s3:prefix"), ("delimiter", "s3:delimiter")):
        if param in query:
            context[condition_key] = [query[param][0]]
    checks = [Check(action, resource, context)]
    source = environ.get("HTTP_X_AMZ_COPY_SOURCE")
    if source and op in ("CopyObject", "UploadPartCopy"):
        checks.append(Check("s3:GetObject", "arn:aws:s3:::" + unquote(source.lstrip("/")).split("?", 1)[0]))
    parsed = Parsed("s3", "rest-xml", op, key, token, checks, bucket=bucket)
    if op == "DeleteObjects":
        from local.faults.middleware import _keys_of

        parsed.delete_keys = _keys_of(body or b"")
        parsed.checks = [Check(action, f"{bucket_arn}/{k}") for k in parsed.delete_keys]
    return parsed


def _lambda_check(op: str, params: dict[str, str], region: str) -> Check:
    action = "lambda:" + {"Invoke": "InvokeFunction", "InvokeWithResponseStream": "InvokeFunction"}.get(
        op, op or "*"
    )
    if "FunctionName" in params:
        name = unquote(params["FunctionName"])
        if name.startswith("arn:"):
            name = name.split(":")[6]
        elif ":" in name:
            name = name.split(":")[0]
        return Check(action, _arn("lambda", region, f"function:{name}"))
    if "UUID" in params:
        from local.auth.lambda_access import mapping_context

        resource = _arn("lambda", region, f"event-source-mapping:{params['UUID']}")
        return Check(action, resource, mapping_context(op, params["UUID"], region))
    if "LayerName" in params:
        layer = unquote(params["LayerName"])
        base = layer if layer.startswith("arn:") else _arn("lambda", region, f"layer:{layer}")
        return Check(action, f"{base}:{params['VersionNumber']}" if "VersionNumber" in params else base)
    if "Resource" in params or "ARN" in params:
        return Check(action, unquote(params.get("Resource") or params["ARN"]))
    return Check(action, "*")
