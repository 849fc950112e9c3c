"""S3: buckets keep their public access block, versioning and ownership; bucket policies hold for HTTPS only;
conditional deletes are evaluated; a conditional write's check and write are one step.

moto applied every bucket-policy statement ignoring its Condition, so CDK's enforceSSL statement ("Deny s3:*
when aws:SecureTransport is false") denied everything. moto's check treats every request as TLS; statements with
other conditions are not applied. With IAM enforced, local/auth evaluates the whole policy first, with
aws:SecureTransport as the request arrived (HTTPS or the tests' plain-HTTP listener).
"""

from __future__ import annotations

import json
import threading
from typing import Any
from xml.parsers.expat import ExpatError

import xmltodict

from local.patching import Patches, Target, truthy

_MODELS = "moto.s3.models"
_RESPONSES = "moto.s3.responses"
PATCHES = Patches()
# One lock for object writes and conditional deletes: on S3 a conditional delete and a concurrent upload of the same
# key are ordered, so the condition is evaluated against the object the delete removes.
_OBJECT_WRITES = threading.RLock()
_PRECONDITION_MESSAGE = "At least one of the pre-conditions you specified did not hold"
_NOT_IMPLEMENTED_MESSAGE = "A header you provided implies functionality that is not implemented"


@PATCHES.replace(Target(_MODELS, "FakeBucket.create_from_cloudformation_json"), wrap=classmethod)
def create_from_cloudformation_json(
    cls: Any,
    resource_name: str,
    cloudformation_json: dict[str, Any],
    account_id: str,
    region_name: str,
    **kw: Any,
) -> Any:
    """A template's bucket keeps its public access block, versioning and ownership controls."""
    from moto.s3 import models as sm
    from moto.utilities.utils import get_partition

    properties = cloudformation_json.get("Properties", {})
    name = properties.get("BucketName", resource_name)
    original = PATCHES.original(create_from_cloudformation_json)
    bucket = original(cls, name, cloudformation_json, account_id, region_name, **kw)
    _apply_bucket_extras(sm.s3_backends[account_id][get_partition(region_name)], bucket.name, properties)
    return bucket


@PATCHES.replace(Target(_MODELS, "FakeBucket.update_from_cloudformation_json"), wrap=classmethod)
def update_from_cloudformation_json(
    cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
    account_id: str, region_name: str,
) -> Any:  # fmt: skip
    """An updated template's bucket keeps them too (its name when only its tags change)."""
    from moto.s3 import models as sm
    from moto.utilities.utils import get_partition

    properties = cloudformation_json.get("Properties", {})
    properties.setdefault("BucketName", original_resource.name) if "Tags" in properties else None
    bucket = PATCHES.original(update_from_cloudformation_json)(
        cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name
    )
    _apply_bucket_extras(sm.s3_backends[account_id][get_partition(region_name)], bucket.name, properties)
    return bucket


@PATCHES.replace(Target(_MODELS, "FakeBucket.get_permission", ("self", "action", "resource")))
def get_permission(self: Any, action: str, resource: str) -> Any:
    """Bucket policies: moto applies every statement ignoring its Condition, so CDK's enforceSSL statement ("Deny
    s3:* when aws:SecureTransport is false") denied everything. Here every request counts as TLS (local/auth
    evaluates the transport it really arrived on); statements with other conditions are not applied."""
    from moto.iam.access_control import IAMPolicy, PermissionResult

    if self.policy is None:
        return PermissionResult.NEUTRAL
    try:
        document = json.loads(self.policy.decode() if isinstance(self.policy, bytes) else self.policy)
    except ValueError:
        return PermissionResult.NEUTRAL
    statements = document.get("Statement", [])
    if isinstance(statements, dict):
        statements = [statements]
    kept = []
    for statement in statements:
        condition = statement.get("Condition")
        if condition:
            if not _secure_transport_condition_holds(condition):
                continue
            statement = {k: v for k, v in statement.items() if k != "Condition"}
        kept.append(statement)
    if not kept:
        return PermissionResult.NEUTRAL
    return IAMPolicy(json.dumps(dict(document, Statement=kept))).is_action_permitted(action, resource)


def _secure_transport_condition_holds(condition: dict[str, Any]) -> bool:
    """True if every condition is a Bool on aws:SecureTransport that holds for a secure request."""
    for operator, tests in condition.items():
        if operator not in ("Bool", "BoolIfExists") or not isinstance(tests, dict):
            return False
        for key, value in tests.items():
            if key.lower() != "aws:securetransport":
                return False
            values = value if isinstance(value, list) else [value]
            if "true" not in [str(v).lower() for v in values]:
                return False
    return True


def _apply_bucket_extras(backend: Any, name: str, properties: dict[str, Any]) -> None:
    block = properties.get("PublicAccessBlockConfiguration")
    if block:
        backend.put_public_access_block(name, {k: str(truthy(v)).lower() for k, v in block.items()})
    versioning = properties.get("VersioningConfiguration")
    if versioning and versioning.get("Status"):
        backend.put_bucket_versioning(name, versioning["Status"])
    rules = (properties.get("OwnershipControls") or {}).get("Rules") or []
    if rules and rules[0].get("ObjectOwnership"):
        backend.put_bucket_ownership_controls(name, rules[0]["ObjectOwnership"])


@PATCHES.replace(Target(_MODELS, "S3Backend.put_object", ("self", "bucket_name", "key_name")))
def put_object(self: Any, *args: Any, **kwargs: Any) -> Any:
    """An upload under the lock conditional deletes take."""
    with _OBJECT_WRITES:
        return PATCHES.original(put_object)(self, *args, **kwargs)


@PATCHES.replace(Target(_RESPONSES, "S3Response.put_object", ("self",)))
def put_object_response(self: Any) -> Any:
    """PutObject's conditional writes as S3 evaluates them (the S3 User Guide, "How to prevent object overwrites
    with conditional writes"; the PutObject API reference): ``If-None-Match`` takes ``*`` only (another value is
    501 NotImplemented; moto ignored it and wrote), and the condition and the write are one step (moto checked
    ``If-None-Match: *`` and ``If-Match`` and wrote after, so two writers racing on one key both passed): the
    loser of a race is 412 PreconditionFailed, never a second writer."""
    none_match = self.headers.get("If-None-Match")
    if none_match is not None and none_match.strip() != "*":
        return not_implemented("If-None-Match")
    with _OBJECT_WRITES:
        return PATCHES.original(put_object_response)(self)


def not_implemented(header: str) -> tuple[int, dict[str, str], str]:
    """S3's 501 NotImplemented for a header whose value it does not implement, as its error document."""
    body = xmltodict.unparse(
        {"Error": {"Code": "NotImplemented", "Message": _NOT_IMPLEMENTED_MESSAGE, "Header": header}}
    )
    return 501, {"Content-Type": "application/xml"}, body


@PATCHES.replace(Target(_RESPONSES, "S3Response.delete_object", ("self",)))
def delete_object(self: Any) -> Any:
    """DeleteObject's ``If-Match`` (evaluated by moto) under the uploads' lock; ``*`` matches any existing object
    (moto compared it as an ETag), a missing one is NoSuchKey."""
    from moto.s3.exceptions import MissingKey

    with _OBJECT_WRITES:
        if (self.headers.get("If-Match") or "").strip() != "*":
            return PATCHES.original(delete_object)(self)
        key_name, version_id = self.parse_key_name(), self._get_param("versionId")
        if self.backend.get_object(self.bucket_name, key_name, version_id=version_id) is None:
            raise MissingKey(key_name)
        _, meta = self.backend.delete_object(self.bucket_name, key_name, version_id=version_id)
        return 204, {f"x-amz-{k}": v for k, v in meta.items()}, ""


@PATCHES.replace(Target(_RESPONSES, "S3Response._bucket_response_delete_keys", ("self", "bucket_name")))
def _bucket_response_delete_keys(self: Any, bucket_name: str, authenticated: bool = True) -> Any:
    """DeleteObjects evaluates each object's ``ETag`` as S3 does since 2025-09: per key, a missing object is
    NoSuchKey and another ETag is PreconditionFailed (the other keys are still deleted); ``*`` matches any
    existing object."""
    from moto.core.responses import ActionResult

    original = PATCHES.original(_bucket_response_delete_keys)
    try:
        body = xmltodict.parse(self.body, strip_whitespace=False)
        objects = body["Delete"].get("Object") or []
    except (ExpatError, KeyError, TypeError, AttributeError):  # malformed bodies get moto's own answer
        return original(self, bucket_name, authenticated)
    objects = objects if isinstance(objects, list) else [objects]
    conditioned = any(isinstance(o, dict) and o.get("ETag") is not None for o in objects)
    if not authenticated or not conditioned:
        return original(self, bucket_name, authenticated)
    with _OBJECT_WRITES:
        errors: list[dict[str, str]] = []
        kept: list[dict[str, Any]] = []
        for obj in objects:
            problem = _etag_mismatch(self.backend, bucket_name, obj)
            if problem is None:
                kept.append(obj)
            else:
                errors.append({"Key": obj["Key"], "Code": problem[0], "Message": problem[1]})
        if not kept:
            self.data["Action"] = "DeleteObjects"
            return self.serialized(ActionResult({"Deleted": [], "Errors": errors}))
        self.body = xmltodict.unparse({"Delete": dict(body["Delete"], Object=kept)}).encode()
        self.serialized = _WithConditionErrors(self.serialized, errors)
        try:
            return original(self, bucket_name, authenticated)
        finally:
            del self.serialized


class _WithConditionErrors:
    """The response's serializer, adding the keys a condition kept to DeleteObjects' Errors."""

    def __init__(self, serialize: Any, errors: list[dict[str, str]]) -> None:
        self.serialize = serialize
        self.errors = errors

    def __call__(self, result: Any) -> Any:
        from moto.core.responses import ActionResult

        merged = dict(result.result)
        merged["Errors"] = [*merged.get("Errors", []), *self.errors]
        return self.serialize(ActionResult(merged))


def conditional_delete_refusal(current_etag: str | None, expected: str | None) -> tuple[str, str] | None:
    """S3's verdict on deleting one object under an ETag condition: (code, message) of the per-key error, or None
    when the object is deleted (no condition, ``*`` on an existing object, or the ETag matches). A missing object
    under a condition is NoSuchKey (404: "the object key no longer exists"), another ETag PreconditionFailed
    (412). Source: the S3 User Guide, "How to perform conditional deletes". The tests' S3 model
    (tests/support/s3_model.py) answers with this same function."""
    if expected is None:
        return None
    if current_etag is None:
        return ("NoSuchKey", "The specified key does not exist.")
    if expected.strip() != "*" and expected.replace('"', "") != current_etag.replace('"', ""):
        return ("PreconditionFailed", _PRECONDITION_MESSAGE)
    return None


def _etag_mismatch(backend: Any, bucket_name: str, obj: dict[str, Any]) -> tuple[str, str] | None:
    """(code, message) when ``obj``'s ETag condition does not hold, else None (no condition, or it holds)."""
    if obj.get("ETag") is None:
        return None
    current = backend.get_object(bucket_name, obj["Key"], version_id=obj.get("VersionId"))
    return conditional_delete_refusal(None if current is None else str(current.etag), obj.get("ETag"))


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_MODELS, "S3Backend.put_public_access_block", ("self", "bucket_name", "pub_block_config")),
    Target(_MODELS, "S3Backend.put_bucket_versioning", ("self", "bucket_name", "status")),
    Target(_MODELS, "S3Backend.put_bucket_ownership_controls", ("self", "bucket_name", "ownership")),
    Target(_MODELS, "S3Backend.get_object", ("self", "bucket_name", "key_name")),
    Target(_MODELS, "S3Backend.delete_object", ("self", "bucket_name", "key_name")),
    Target(_MODELS, "s3_backends"),
    Target("moto.iam.access_control", "IAMPolicy.is_action_permitted"),
    Target("moto.iam.access_control", "PermissionResult"),
    Target("moto.utilities.utils", "get_partition"),
    Target("moto.s3.exceptions", "MissingKey"),
    Target("moto.core.responses", "ActionResult"),
)
