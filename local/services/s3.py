"""S3: buckets keep their public access block, versioning and ownership; bucket policies hold for HTTPS only;
conditional deletes are evaluated.

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

from local.patching import Target, replace, truthy

_MODELS = "moto.s3.models"
MOTO_TARGETS = (
    Target(_MODELS, "FakeBucket.create_from_cloudformation_json"),
    Target(_MODELS, "FakeBucket.update_from_cloudformation_json"),
    Target(_MODELS, "FakeBucket.get_permission", ("self", "action", "resource")),
    Target(_MODELS, "S3Backend.put_public_access_block", ("self", "bucket_name", "pub_block_config")),
    Target(_MODELS, "S3Backend.put_bucket_versioning", ("self", "bucket_name", "status")),
    Target(_MODELS, "S3Backend.put_bucket_ownership_controls", ("self", "bucket_name", "ownership")),
    Target(_MODELS, "s3_backends"),
    Target("moto.iam.access_control", "IAMPolicy.is_action_permitted"),
    Target("moto.iam.access_control", "PermissionResult"),
    Target("moto.utilities.utils", "get_partition"),
    Target("moto.s3.responses", "S3Response._bucket_response_delete_keys", ("self", "bucket_name")),
    Target("moto.s3.responses", "S3Response.delete_object", ("self",)),
    Target(_MODELS, "S3Backend.put_object", ("self", "bucket_name", "key_name")),
    Target(_MODELS, "S3Backend.get_object", ("self", "bucket_name", "key_name")),
    Target(_MODELS, "S3Backend.delete_object", ("self", "bucket_name", "key_name")),
    Target("moto.s3.exceptions", "MissingKey"),
)


def apply() -> None:
    from moto.s3 import models as sm
    from moto.utilities.utils import get_partition

    Bucket = sm.FakeBucket

    def create(
        cls: Any,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kw: Any,
    ) -> Any:
        properties = cloudformation_json.get("Properties", {})
        name = properties.get("BucketName", resource_name)
        bucket = original_create(cls, name, cloudformation_json, account_id, region_name, **kw)
        _apply_bucket_extras(sm.s3_backends[account_id][get_partition(region_name)], bucket.name, properties)
        return bucket

    original_create = replace(Bucket, "create_from_cloudformation_json", classmethod(create))

    def update(
        cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
        account_id: str, region_name: str,
    ) -> Any:  # fmt: skip
        properties = cloudformation_json.get("Properties", {})
        properties.setdefault("BucketName", original_resource.name) if "Tags" in properties else None
        bucket = original_update(
            cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name
        )
        _apply_bucket_extras(sm.s3_backends[account_id][get_partition(region_name)], bucket.name, properties)
        return bucket

    original_update = replace(Bucket, "update_from_cloudformation_json", classmethod(update))

    # Bucket policies: moto applies every statement ignoring its Condition, so CDK's enforceSSL statement
    # ("Deny s3:* when aws:SecureTransport is false") denied everything. Here every request counts as TLS
    # (local/auth evaluates the transport it really arrived on); statements with other conditions are not applied.
    def get_permission(self: Any, action: str, resource: str) -> Any:
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

    replace(Bucket, "get_permission", get_permission)
    _conditional_deletes()


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


# One lock for object writes and conditional deletes: on S3 a conditional delete and a concurrent upload of the same
# key are ordered, so the condition is evaluated against the object the delete removes.
_OBJECT_WRITES = threading.RLock()
_PRECONDITION_MESSAGE = "At least one of the pre-conditions you specified did not hold"


def _conditional_deletes() -> None:
    """DeleteObjects evaluates each object's ``ETag`` as S3 does since 2025-09: per key, a missing object is
    NoSuchKey and another ETag is PreconditionFailed (the other keys are still deleted); ``*`` matches any
    existing object. DeleteObject's ``If-Match`` (evaluated by moto) runs under the same lock as uploads."""
    from moto.core.responses import ActionResult
    from moto.s3 import models as sm
    from moto.s3.exceptions import MissingKey
    from moto.s3.responses import S3Response

    def put_object(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _OBJECT_WRITES:
            return original_put(self, *args, **kwargs)

    original_put = replace(sm.S3Backend, "put_object", put_object)

    def delete_object(self: Any) -> Any:
        with _OBJECT_WRITES:
            if (self.headers.get("If-Match") or "").strip() != "*":
                return original_delete(self)
            # moto compares "*" as an ETag; on S3 it matches any existing object (a missing one is NoSuchKey)
            key_name, version_id = self.parse_key_name(), self._get_param("versionId")
            if self.backend.get_object(self.bucket_name, key_name, version_id=version_id) is None:
                raise MissingKey(key_name)
            _, meta = self.backend.delete_object(self.bucket_name, key_name, version_id=version_id)
            return 204, {f"x-amz-{k}": v for k, v in meta.items()}, ""

    original_delete = replace(S3Response, "delete_object", delete_object)

    def delete_keys(self: Any, bucket_name: str, authenticated: bool = True) -> Any:
        try:
            body = xmltodict.parse(self.body, strip_whitespace=False)
            objects = body["Delete"].get("Object") or []
        except (ExpatError, KeyError, TypeError, AttributeError):  # malformed bodies get moto's own answer
            return original_delete_keys(self, bucket_name, authenticated)
        objects = objects if isinstance(objects, list) else [objects]
        conditioned = any(isinstance(o, dict) and o.get("ETag") is not None for o in objects)
        if not authenticated or not conditioned:
            return original_delete_keys(self, bucket_name, authenticated)
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
            serialize = self.serialized

            def with_condition_errors(result: Any) -> Any:
                merged = dict(result.result)
                merged["Errors"] = [*merged.get("Errors", []), *errors]
                return serialize(ActionResult(merged))

            self.serialized = with_condition_errors
            try:
                return original_delete_keys(self, bucket_name, authenticated)
            finally:
                del self.serialized

    original_delete_keys = replace(S3Response, "_bucket_response_delete_keys", delete_keys)


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
