"""What DynamoDB and DynamoDB Streams refuse before they read a request, as AWS refuses it.

AWS's JSON services check a request against their service model before the operation runs: the operation named
by ``X-Amz-Target`` (``UnknownOperationException``), the body (JSON, an object: ``SerializationException``), each
member's type (``SerializationException``: a string where a number belongs, a blob that is not base64) and the
model's constraints (``ValidationException``, every failure in one message: "2 validation errors detected: Value
'x' at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 3; ...").
moto parses the body with botocore's parser and trusts it: a malformed body is an HTTP 500, a constraint is never
checked. This module owns that first step for both services (``DynamoHandler._dispatch`` and
``DynamoDBStreamsHandler._dispatch``): it reads the same botocore model moto's parser reads, so what moto accepts
afterwards has AWS's shape. ``EXTRA`` holds the constraints AWS documents that botocore's model leaves out.
"""

from __future__ import annotations

import decimal
import json
import re
from functools import cache
from typing import Any

from local.patching import Patches, Target

PATCHES = Patches()
_DDB = "moto.dynamodb.responses"
_STREAMS = "moto.dynamodbstreams.responses"
MOTO_TARGETS = (
    Target(_DDB, "DynamoHandler._dispatch", ("self", "request")),
    Target(_STREAMS, "DynamoDBStreamsHandler._dispatch", ("self", "request")),
    Target("moto.core.responses", "BaseResponse._dispatch", ("self", "request")),
)

CONTENT_TYPE = "application/x-amz-json-1.0"
VALIDATION = "com.amazon.coral.validate#ValidationException"
SERIALIZATION = "com.amazon.coral.service#SerializationException"
UNKNOWN_OPERATION = "com.amazon.coral.service#UnknownOperationException"
TARGETS = {"dynamodb": "DynamoDB_20120810", "dynamodbstreams": "DynamoDBStreams_20120810"}
# Constraints AWS states in the API reference that botocore's model does not carry (or has widened since): (service,
# operation, member path) -> the model metadata it has there. GetRecords: "The upper limit is 1000"
# (API_streams_GetRecords.html); CreateTable's TableName (API_CreateTable.html: 3 to 255 characters of
# [a-zA-Z0-9_.-]; the model now gives TableName the shape of a table ARN, which the other operations accept).
TABLE_NAME = {"min": 3, "max": 255, "pattern": "[a-zA-Z0-9_.-]+"}
EXTRA: dict[tuple[str, str, str], dict[str, Any]] = {
    ("dynamodbstreams", "GetRecords", "limit"): {"min": 1, "max": 1000},
    # DescribeStream and ListStreams: "The upper limit is 100" (API_streams_DescribeStream, API_streams_ListStreams)
    ("dynamodbstreams", "DescribeStream", "limit"): {"min": 1, "max": 100},
    ("dynamodbstreams", "ListStreams", "limit"): {"min": 1, "max": 100},
    ("dynamodb", "CreateTable", "tableName"): TABLE_NAME,
    # CreateTable without AttributeDefinitions: refused as a missing member (the outside suite, verified on AWS,
    # expects the refusal to name attributeDefinitions; the model has made the member optional)
    ("dynamodb", "CreateTable", "attributeDefinitions"): {"required": True},
}
DEPTH_MAX = (
    64  # structure levels checked; deeper ones (an item's 32 levels are within) are left to the operation
)
# The JSON values each model type takes (a number's JSON value is an int or a float; a timestamp also a string).
_PYTHON_TYPES: dict[str, type | tuple[type, ...]] = {
    "structure": dict, "map": dict, "list": list, "string": str, "boolean": bool, "blob": str,
    "integer": int, "long": int, "double": (int, float), "float": (int, float), "timestamp": (int, float, str),
}  # fmt: skip
# A DynamoDB number (API_AttributeValue.html, "Number"): up to 38 significant digits, a magnitude from 1E-130 to
# 9.9999999999999999999999999999999999999E+125, written without spaces, NaN or Infinity; AWS's words for each refusal.
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
NOT_NUMERIC = "The parameter cannot be converted to a numeric value: {value}"
OVERFLOW = "Number overflow. Attempting to store a number with magnitude larger than supported range"
UNDERFLOW = "Number underflow. Attempting to store a number with magnitude smaller than supported range"
TOO_PRECISE = "Attempting to store more than 38 significant digits in a Number"
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


class Refusal(Exception):
    """A request refused before the operation: its error type and message (an empty message is sent as none)."""

    def __init__(self, error_type: str, message: str = ""):
        super().__init__(message)
        self.error_type = error_type
        self.message = message


@cache
def _model(service: str) -> Any:
    import botocore.session

    return botocore.session.get_session().get_service_model(service)


def _answer(refusal: Refusal) -> tuple[int, dict[str, str], str]:
    body: dict[str, str] = {"__type": refusal.error_type}
    if refusal.message:
        body["message"] = refusal.message
    return 400, {"Content-Type": CONTENT_TYPE, "status": "400"}, json.dumps(body)


def refusal_of(service: str, target: str | None, body: bytes) -> Refusal | None:
    """Why AWS refuses this request before its operation runs, or None when it goes on to the operation."""
    prefix, _, operation = (target or "").partition(".")
    model = _model(service)
    if prefix != TARGETS[service] or operation not in model.operation_names:
        return Refusal(UNKNOWN_OPERATION)
    try:
        text = body.decode("utf-8") if body else "{}"
        params = json.loads(text) if text.strip() else {}
    except (UnicodeDecodeError, ValueError, RecursionError):
        return Refusal(SERIALIZATION)
    if not isinstance(params, dict):
        return Refusal(SERIALIZATION, "Start of structure or map not found")
    errors: list[str] = []
    try:
        _check(model.operation_model(operation).input_shape, params, "", errors, (service, operation), 0)
    except Refusal as refusal:
        return refusal
    if errors:
        count = f"{len(errors)} validation error{'s' if len(errors) > 1 else ''} detected"
        return Refusal(VALIDATION, f"{count}: " + "; ".join(errors))
    if service == "dynamodb":
        from local.services.dynamodb.api import capacity

        problem = capacity.written_refusal(params, _actions(params))
        if problem is not None:
            return Refusal(VALIDATION, problem)
        for part in (params, *_actions(params)):
            problem = expression_refusal(part)
            if problem is not None:
                return Refusal(VALIDATION, problem)
    return None


UPDATE_SIZE_MAX = 4096  # bytes of an expression (the developer guide's limits page), as expressions.py's
UPDATE_TOO_LONG = (
    "Invalid UpdateExpression: Expression size has exceeded the maximum allowed size; expression size: {size}"
)


def _actions(params: dict[str, Any]) -> list[dict[str, Any]]:
    """A transaction's actions (each Put, Update, Delete, ConditionCheck or Get), whose expressions, names and
    values are checked as a single request's are: a problem there refuses the whole transaction."""
    found = []
    for entry in params.get("TransactItems") or []:
        for action in entry.values() if isinstance(entry, dict) else ():
            if isinstance(action, dict):
                found.append(action)
    return found


# A request's expressions and the legacy parameters they replaced (API reference, "Legacy conditional parameters"):
# the two kinds are never mixed, and every name and value an expression defines is used by one of them.
EXPRESSIONS = ("KeyConditionExpression", "ConditionExpression", "FilterExpression", "UpdateExpression",
               "ProjectionExpression")  # fmt: skip
# KeyConditions goes with any expression but KeyConditionExpression (the outside suite, verified on AWS, queries
# with KeyConditions and a ProjectionExpression or FilterExpression).
LEGACY = (
    "AttributesToGet",
    "QueryFilter",
    "ScanFilter",
    "Expected",
    "AttributeUpdates",
    "ConditionalOperator",
)
MIXED = (
    "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: "
    "{{{legacy}}} Expression parameters: {{{expressions}}}"
)
WITHOUT_EXPRESSION = "{member} can only be specified when using expressions"
EMPTY_MAP = "{member} must not be empty"
UNUSED = "Value provided in {member} unused in expressions: keys: {{{keys}}}"
_REFERENCE = {"ExpressionAttributeNames": re.compile(r"#[A-Za-z0-9_]+"),
              "ExpressionAttributeValues": re.compile(r":[A-Za-z0-9_]+")}  # fmt: skip


def expression_refusal(params: dict[str, Any]) -> str | None:
    """Why DynamoDB refuses how a request's expressions, legacy parameters and their names and values go
    together, or None."""
    expressions = [name for name in EXPRESSIONS if params.get(name) is not None]
    legacy = [name for name in LEGACY if params.get(name) is not None]
    update = params.get("UpdateExpression")
    if isinstance(update, str) and len(update.encode("utf-8")) > UPDATE_SIZE_MAX:
        return UPDATE_TOO_LONG.format(size=len(update.encode("utf-8")))
    if params.get("KeyConditions") is not None and params.get("KeyConditionExpression") is not None:
        return MIXED.format(legacy="KeyConditions", expressions="KeyConditionExpression")
    if expressions and legacy:
        return MIXED.format(legacy=", ".join(legacy), expressions=", ".join(expressions))
    texts = " ".join(str(params[name]) for name in expressions if isinstance(params[name], str))
    for member, pattern in _REFERENCE.items():
        defined = params.get(member)
        if defined is None or not isinstance(defined, dict):
            continue
        if not expressions:
            return WITHOUT_EXPRESSION.format(member=member)
        if not defined:
            return EMPTY_MAP.format(member=member)
        used = set(pattern.findall(texts))
        unused = [key for key in defined if key not in used]
        if unused:
            return _syntax_error(params) or UNUSED.format(member=member, keys=", ".join(unused))
    return None


def _syntax_error(params: dict[str, Any]) -> str | None:
    """A condition or filter expression's syntax error, which DynamoDB names before an unused name or value."""
    from local.services.dynamodb.api import expressions

    names, values = params.get("ExpressionAttributeNames"), params.get("ExpressionAttributeValues")
    for member in ("ConditionExpression", "FilterExpression"):
        text = params.get(member)
        if not isinstance(text, str):
            continue
        try:
            expressions.parse(
                text, names if isinstance(names, dict) else {}, values if isinstance(values, dict) else {}
            )
        except expressions.ExpressionError as exc:
            if str(exc).startswith("Syntax error"):
                return f"Invalid {member}: {exc}"
        except Exception:  # noqa: BLE001 - any other problem is the operation's to name, after this check
            continue
    return None


def _extra_required(where: tuple[str, str], path: str, name: str) -> bool:
    return bool(EXTRA.get((*where, _member_path(path, name)), {}).get("required"))


def _member_path(path: str, name: str) -> str:
    member = name[:1].lower() + name[1:]
    return f"{path}.{member}" if path else member


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_shown(v)}" for k, v in value.items()) + "}"
    return str(value)


def _constraints(shape: Any, value: Any, key: tuple[str, str, str]) -> list[str]:
    """The constraints of ``shape`` (and ``EXTRA``) that ``value`` fails, in AWS's words. A DynamoDB operation's
    TableName that is not an ARN is held to a table name's rules (3 to 255 of [a-zA-Z0-9_.-]: the model now gives the
    member the shape of an ARN, which the operations also accept)."""
    meta = {**shape.metadata, **EXTRA.get(key, {})}
    if (
        key[0] == "dynamodb"
        and key[2] == "tableName"
        and isinstance(value, str)
        and not value.startswith("arn:")
    ):
        meta.update(TABLE_NAME)
    low, high = meta.get("min"), meta.get("max")
    failed: list[str] = []
    if shape.type_name in ("string", "list", "map", "blob"):
        size = len(value)
        if low is not None and size < low:
            failed.append(f"Member must have length greater than or equal to {low}")
        if high is not None and size > high:
            failed.append(f"Member must have length less than or equal to {high}")
    elif shape.type_name in ("integer", "long", "double", "float"):
        if high is not None and value > high:
            failed.append(f"Member must have value less than or equal to {high}")
        if low is not None and value < low:
            failed.append(f"Member must have value greater than or equal to {low}")
    if shape.type_name == "string":
        enum = meta.get("enum")
        if enum and value not in enum:
            failed.append(f"Member must satisfy enum value set: [{', '.join(enum)}]")
        pattern = meta.get("pattern")
        if pattern and not re.fullmatch(pattern, value):
            failed.append(f"Member must satisfy regular expression pattern: {pattern}")
    return failed


def _type_error(shape: Any, value: Any) -> Refusal:
    if isinstance(value, dict):
        return Refusal(SERIALIZATION, "Start of structure or map found where not expected.")
    if isinstance(value, list):
        return Refusal(SERIALIZATION, "Start of list found where not expected")
    kind = (
        "STRING_VALUE"
        if isinstance(value, str)
        else "NUMBER_VALUE"
        if not isinstance(value, bool)
        else "BOOLEAN_VALUE"
    )
    target = {"string": "String", "integer": "Integer", "long": "Long", "boolean": "Boolean", "blob": "Blob"}
    return Refusal(
        SERIALIZATION, f"{kind} can not be converted to {target.get(shape.type_name, shape.type_name)}"
    )


# An AttributeValue carries exactly one of its types (an unknown member is no type: {"dog": "cat"} is empty).
ATTRIBUTE_VALUE_EMPTY = (
    "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes"
)
ATTRIBUTE_VALUE_TYPES = "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes"


def _check(shape: Any, value: Any, path: str, errors: list[str], where: tuple[str, str], depth: int) -> None:
    """Check ``value`` against ``shape``: a type mismatch raises, each constraint failed is added to ``errors``."""
    if value is None or depth > DEPTH_MAX:
        return  # JSON null is an absent member, as AWS reads it
    kind = shape.type_name
    expected = _PYTHON_TYPES.get(kind)
    if expected is not None and (
        not isinstance(value, expected) or (kind != "boolean" and isinstance(value, bool))
    ):
        raise _type_error(shape, value)
    if kind == "blob" and (len(value) % 4 or not _BASE64.fullmatch(value)):
        raise Refusal(SERIALIZATION, "Base64 encoded length is expected a multiple of 4 bytes but found: "
                      f"{len(value)}" if len(value) % 4 else "Invalid Base64 character")  # fmt: skip
    if shape.name == "NumberAttributeValue":
        _check_number(value)
    if (
        shape.name == "AttributeValue"
        and sum(1 for k, v in value.items() if k in shape.members and v is not None) != 1
    ):
        known = [k for k, v in value.items() if k in shape.members and v is not None]
        raise Refusal(VALIDATION, ATTRIBUTE_VALUE_TYPES if known else ATTRIBUTE_VALUE_EMPTY)
    failures = _constraints(shape, value, (*where, path))
    if failures:
        shown = f"'{_shown(value)}'"
        errors += [
            f"Value {shown} at '{path}' failed to satisfy constraint: {failure}" for failure in failures
        ]
    if kind == "structure":
        required = [*shape.required_members, *(n for n in shape.members if _extra_required(where, path, n))]
        for name in dict.fromkeys(required):
            if value.get(name) is None:
                errors.append(
                    f"Value null at '{_member_path(path, name)}' failed to satisfy constraint: Member must not be null"
                )
        for name, member_value in value.items():
            member = shape.members.get(name)
            if member is not None:
                _check(member, member_value, _member_path(path, name), errors, where, depth + 1)
    elif kind == "list":
        for index, item in enumerate(value, start=1):
            _check(shape.member, item, f"{path}.{index}.member", errors, where, depth + 1)
    elif kind == "map":
        _check_map(shape, value, path, errors, where, depth)


def number_refusal(text: str) -> str | None:
    """Why DynamoDB refuses ``text`` as a number, or None."""
    if not _NUMBER.fullmatch(text):
        return NOT_NUMERIC.format(value=text)
    number = decimal.Decimal(text)
    if number.is_zero():
        return None
    digits = number.as_tuple().digits
    significant = len("".join(map(str, digits)).strip("0"))
    if significant > 38:
        return TOO_PRECISE
    if number.adjusted() > 125:
        return OVERFLOW
    if number.adjusted() < -130:
        return UNDERFLOW
    return None


def _check_number(text: str) -> None:
    problem = number_refusal(text)
    if problem is not None:
        raise Refusal(VALIDATION, problem)


def _check_map(
    shape: Any, value: dict[str, Any], path: str, errors: list[str], where: tuple[str, str], depth: int
) -> None:
    key_failures: list[str] = []
    value_failures: list[str] = []
    for key, item in value.items():
        key_failures += [f for f in _constraints(shape.key, key, (*where, "")) if f not in key_failures]
        if shape.value.type_name in ("string", "list", "integer", "long") and item is not None:
            if not isinstance(item, {"string": str, "list": list}.get(shape.value.type_name, int)):
                raise _type_error(shape.value, item)
            value_failures += [
                f for f in _constraints(shape.value, item, (*where, "")) if f not in value_failures
            ]
        if shape.value.type_name in ("structure", "list", "map") and item is None:
            errors.append(
                f"Value null at '{path}.{key}.member' failed to satisfy constraint: Member must not be null"
            )
        elif shape.value.type_name in ("structure", "list", "map"):
            nested: list[str] = []
            _check(shape.value, item, f"{path}.{key}.member", nested, where, depth + 1)
            errors += nested
    if key_failures:
        errors.append(f"Map keys at '{path}' failed to satisfy constraint: Map keys must satisfy constraint: "
                      f"[{', '.join(key_failures)}]")  # fmt: skip
    if value_failures:
        errors.append(f"Value '{_shown(value)}' at '{path}' failed to satisfy constraint: Map value must satisfy "
                      f"constraint: [{', '.join(value_failures)}]")  # fmt: skip


# A compressed request (Content-Encoding gzip, or deflate as one stream) is inflated before it is read, up to the
# 16 MB DynamoDB takes; DynamoDB answers a body it cannot inflate, an oversized one or another encoding with HTTP 500
# (the outside suite, verified on AWS, expects exactly that).
INFLATED_MAX = 16 * 1024 * 1024
TOO_LARGE = "com.amazon.coral.service#RequestEntityTooLargeException"
INTERNAL = "com.amazon.coral.service#InternalFailure"


class Uninflatable(Exception):
    """A compressed body DynamoDB does not read."""


def inflate(encoding: str, body: bytes) -> bytes:
    """``body`` decoded from ``encoding`` (gzip members one after another, or one deflate stream), at most
    INFLATED_MAX bytes; Uninflatable otherwise."""
    import zlib

    kind = encoding.strip().lower()
    if kind not in ("gzip", "deflate"):
        raise Uninflatable(f"unsupported Content-Encoding {encoding!r}")
    out, rest = bytearray(), body
    while True:
        inflater = zlib.decompressobj(wbits=31 if kind == "gzip" else 15)
        try:
            out += inflater.decompress(rest, INFLATED_MAX + 1 - len(out))
        except zlib.error as error:
            raise Uninflatable(str(error)) from None
        if len(out) > INFLATED_MAX or inflater.unconsumed_tail:
            raise Uninflatable("the inflated request is larger than 16 MB")
        if not inflater.eof:
            raise Uninflatable("the compressed body ends early")
        rest = inflater.unused_data
        if not rest or kind == "deflate":
            if rest:
                raise Uninflatable("data after the deflate stream")
            return bytes(out)


def _inflated(request: Any) -> tuple[int, dict[str, str], str] | None:
    """The request's body inflated in place (moto reads it as sent uncompressed), or DynamoDB's HTTP 500."""
    import io

    try:
        raw = request.get_data() if hasattr(request, "get_data") else bytes(request.data or b"")
        body = inflate(request.headers.get("Content-Encoding", ""), raw)
    except Uninflatable:
        return 500, {"Content-Type": CONTENT_TYPE, "status": "500"}, json.dumps({"__type": INTERNAL})
    request.environ.pop("HTTP_CONTENT_ENCODING", None)
    request.environ["CONTENT_LENGTH"] = str(len(body))
    request._cached_data = body
    request.stream = io.BytesIO(body)
    return None


def _refused(service: str, request: Any) -> tuple[int, dict[str, str], str] | None:
    if len(request.get_data() if hasattr(request, "get_data") else request.data or b"") > INFLATED_MAX:
        # A request body past 16 MB, as sent (Content-Length or chunked): HTTP 413 before anything reads it.
        return 413, {"Content-Type": CONTENT_TYPE, "status": "413"}, json.dumps({"__type": TOO_LARGE})
    if request.headers.get("Content-Encoding"):
        failed = _inflated(request)
        if failed is not None:
            return failed
    refusal = refusal_of(service, request.headers.get("X-Amz-Target"), request.data)
    if refusal is None and service == "dynamodb":
        _canonical_numbers(request)
    return _answer(refusal) if refusal is not None else None


def _canonical_numbers(request: Any) -> None:
    """Every number of a checked request in the canonical form DynamoDB stores (numbers.py), written back into the
    body moto reads; a body without a number to change is left as it is."""
    import io

    from local.services.dynamodb.api import numbers

    data = request.data if not hasattr(request, "get_data") else request.get_data()
    if b'"N' not in data:
        return
    body, changed = numbers.normalized(json.loads(data))
    if changed and hasattr(request, "environ"):
        raw = json.dumps(body).encode()
        request.environ["CONTENT_LENGTH"] = str(len(raw))
        request._cached_data = raw
        request.stream = io.BytesIO(raw)
        # werkzeug caches Request.data on first read (refusal_of read it): moto must read the canonical body
        request.__dict__.pop("data", None)


def _inherited(function: Any) -> Any:
    """What a handler's ``_dispatch`` was: its own, or (moto's handlers have none of their own) BaseResponse's."""
    from moto.core.responses import BaseResponse

    return PATCHES.original(function) or BaseResponse._dispatch


@PATCHES.replace(Target(_DDB, "DynamoHandler._dispatch"))
def dynamodb_dispatch(self: Any, request: Any, full_url: Any = None, headers: Any = None) -> Any:
    return _refused("dynamodb", request) or _inherited(dynamodb_dispatch)(self, request, full_url, headers)


@PATCHES.replace(Target(_STREAMS, "DynamoDBStreamsHandler._dispatch"))
def streams_dispatch(self: Any, request: Any, full_url: Any = None, headers: Any = None) -> Any:
    return _refused("dynamodbstreams", request) or _inherited(streams_dispatch)(
        self, request, full_url, headers
    )
