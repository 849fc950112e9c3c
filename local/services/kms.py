"""KMS keys from templates as CloudFormation makes them: moto 5.2.5 reads a template's ``Tags`` as KMS's own
``TagKey``/``TagValue`` (a template's ``Key``/``Value`` failed the create), keeps ``KeyPolicy`` as a dict
(GetKeyPolicy answers JSON text), takes ``EnableKeyRotation`` as given (a template's "true" string) and has no
update: here tags are converted, the policy kept as text, rotation a boolean, and an update changes the
description, policy, rotation, enabled state and tags in place (KeySpec, KeyUsage and MultiRegion, which would
replace the key on AWS, are not in templates this project deploys)."""

from __future__ import annotations

import json
from typing import Any

from local.patching import Patches, Target, tags_dict, truthy

_MODELS = "moto.kms.models"
PATCHES = Patches()


@PATCHES.replace(Target(_MODELS, "Key.create_from_cloudformation_json"), wrap=classmethod)
def create_from_cloudformation_json(
    cls: Any, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str,
    **kw: Any,
) -> Any:  # fmt: skip
    """A template's key is created with its Tags as KMS tags, its KeyPolicy as text, rotation a boolean."""
    properties = dict(cloudformation_json.get("Properties") or {})
    tags = properties.pop("Tags", None)
    key = PATCHES.original(create_from_cloudformation_json)(
        cls,
        resource_name,
        {**cloudformation_json, "Properties": properties},
        account_id,
        region_name,
        **kw,
    )
    _apply(key, properties, tags, account_id, region_name)
    return key


@PATCHES.replace(Target(_MODELS, "Key.update_from_cloudformation_json"), wrap=classmethod)
def update_from_cloudformation_json(
    cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
    account_id: str, region_name: str,
) -> Any:  # fmt: skip
    """An updated template's key changes its description, policy, rotation, enabled state and tags."""
    properties = cloudformation_json.get("Properties") or {}
    original_resource.description = properties.get("Description", "")
    _apply(original_resource, properties, properties.get("Tags"), account_id, region_name)
    return original_resource


def _apply(key: Any, properties: dict[str, Any], tags: Any, account_id: str, region: str) -> None:
    from moto.kms.models import kms_backends

    policy = properties.get("KeyPolicy")
    if policy is not None:
        key.policy = policy if isinstance(policy, str) else json.dumps(policy)
    key.key_rotation_status = truthy(properties.get("EnableKeyRotation", False))
    key.enabled = truthy(properties.get("Enabled", True))
    if tags:
        kms_backends[account_id][region].tag_resource(key.id, tags_dict(tags))


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_MODELS, "kms_backends"),
)
