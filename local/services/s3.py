"""S3: buckets keep their public access block, versioning and ownership; bucket policies hold for HTTPS only.

moto applied every bucket-policy statement ignoring its Condition, so CDK's enforceSSL statement ("Deny s3:*
when aws:SecureTransport is false") denied everything. The local endpoint stands in for AWS's HTTPS one:
aws:SecureTransport is true; statements with other conditions are not applied.
"""

from __future__ import annotations

import json
from typing import Any

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
    # ("Deny s3:* when aws:SecureTransport is false") denied everything. The local endpoint stands in for
    # AWS's HTTPS one: aws:SecureTransport is true; statements with other conditions are not applied.
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
