"""CloudWatch Logs: a template's log group adopts one the Lambda runner created first, and keeps RetentionInDays."""

from __future__ import annotations

from typing import Any

from local.patching import Patches, Target, tags_dict

_MODELS = "moto.logs.models"
PATCHES = Patches()


@PATCHES.replace(Target(_MODELS, "LogGroup.create_from_cloudformation_json"), wrap=classmethod)
def create_from_cloudformation_json(
    cls: Any,
    resource_name: str,
    cloudformation_json: dict[str, Any],
    account_id: str,
    region_name: str,
    **kw: Any,
) -> Any:
    """A template's log group adopts one of its name that exists already, and keeps RetentionInDays."""
    from moto.logs import models as lgm

    properties = cloudformation_json["Properties"]
    name = properties.get("LogGroupName", resource_name)
    backend = lgm.logs_backends[account_id][region_name]
    if name in backend.groups:
        # The local Lambda runner may have created it before the template did: adopt it.
        group = backend.groups[name]
        backend.tag_resource(group.arn, tags_dict(properties.get("Tags")))
    else:
        original = PATCHES.original(create_from_cloudformation_json)
        group = original(cls, name, cloudformation_json, account_id, region_name, **kw)
    if properties.get("RetentionInDays"):
        _retain(backend, name, properties["RetentionInDays"])
    return group


@PATCHES.replace(Target(_MODELS, "LogGroup.update_from_cloudformation_json"), wrap=classmethod)
def update_from_cloudformation_json(
    cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
    account_id: str, region_name: str,
) -> Any:  # fmt: skip
    """An updated template's log group changes its retention and tags in place; a new name replaces it."""
    from moto.logs import models as lgm

    properties = cloudformation_json["Properties"]
    backend = lgm.logs_backends[account_id][region_name]
    if properties.get("LogGroupName") and properties["LogGroupName"] != original_resource.name:
        new = cls.create_from_cloudformation_json(
            new_resource_name, cloudformation_json, account_id, region_name
        )
        original_resource.delete(account_id, region_name)
        return new
    if properties.get("RetentionInDays"):
        _retain(backend, original_resource.name, properties["RetentionInDays"])
    else:
        original_resource.retention_in_days = None
    tags = tags_dict(properties.get("Tags"))
    backend.tag_resource(original_resource.arn, tags)
    return original_resource


@PATCHES.replace(Target(_MODELS, "LogGroup.get_cfn_attribute", ("self", "attribute_name")))
def get_cfn_attribute(self: Any, attribute_name: str) -> Any:
    """Fn::GetAtt Arn of a log group ends in ":*", as on AWS."""
    # AWS's Fn::GetAtt Arn of a log group ends in ":*" (the ARN IAM grants on; moto's lacked it).
    value = PATCHES.original(get_cfn_attribute)(self, attribute_name)
    return f"{value}:*" if attribute_name == "Arn" else value


def _retain(backend: Any, name: str, days: Any) -> None:
    # moto annotates the retention as str; its own API passes the JSON number, as here.
    backend.put_retention_policy(name, int(days))


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_MODELS, "LogsBackend.put_retention_policy", ("self", "log_group_name", "retention_in_days")),
    Target(_MODELS, "LogsBackend.tag_resource", ("self", "arn", "tags")),
    Target(_MODELS, "logs_backends"),
)
