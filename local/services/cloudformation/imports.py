"""CloudFormation resource import (moto 5.2.5 has none): a change set of ``ChangeSetType=IMPORT`` with
``ResourcesToImport`` brings existing resources under an existing stack, as ``cdk import --resource-mapping`` and
CDK's Table -> TableV2 migration do.

- CreateChangeSet validates as AWS does: each resource to import is in the template with its type and a
  ``DeletionPolicy``, its identifier is the one the template's property gives, the resource exists and no stack
  of the region has it already; nothing else of the template may change (no other resource added, modified or
  removed, the Outputs unchanged);
- DescribeChangeSet lists each resource with ``Action: Import``;
- ExecuteChangeSet adopts each existing physical resource as the logical resource (nothing is created or
  changed) and the stack ends ``IMPORT_COMPLETE``, with ``IMPORT_IN_PROGRESS``/``IMPORT_COMPLETE`` events.

Importable types: ``AWS::DynamoDB::Table`` and ``AWS::DynamoDB::GlobalTable`` (by ``TableName``).
cloudformation.py dispatches to these functions; they patch nothing themselves.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from local.patching import Target, install

log = logging.getLogger("doctable.local.cloudformation")

_MODELS = "moto.cloudformation.models"
MOTO_TARGETS = (
    Target(_MODELS, "ChangeSet"),
    Target(_MODELS, "Change", ("action", "logical_resource_id", "resource_type")),
    Target(_MODELS, "generate_changeset_id", ("changeset_name", "region_name", "account_id")),
    Target(_MODELS, "utcnow"),
    Target("moto.dynamodb.models", "dynamodb_backends"),
)

# The identifier properties of each importable type (GetTemplateSummary's ResourceIdentifierSummaries).
IDENTIFIERS: dict[str, tuple[str, ...]] = {
    "AWS::DynamoDB::Table": ("TableName",),
    "AWS::DynamoDB::GlobalTable": ("TableName",),
}
# AWS's messages (local/README.md lists those not confirmed against AWS).
NEEDS_DELETION_POLICY = "The following resources to import [{names}] must have DeletionPolicy attribute specified in the template."
CANNOT_MODIFY = "As part of the import operation, you cannot modify or add [{names}]"
CANNOT_REMOVE = "As part of the import operation, you cannot remove [{names}]"
NOT_IN_TEMPLATE = "Resources [{names}] to import are not in the template"
WRONG_TYPE = "Resource {logical} to import is of type {given} but the template declares {declared}"
NOT_IMPORTABLE = "ResourceType {type} is not supported for import"
WRONG_IDENTIFIER = "The identifier {identifier} of resource {logical} does not match the value of its property in the template"
ALREADY_IN_STACK = "Resource {logical} is already in the stack"
NOT_FOUND = "Resource of type '{type}' with identifier '{identifier}' was not found."
IN_OTHER_STACK = "Resource of type '{type}' with identifier '{identifier}' already exists in stack {stack}."


class ImportRefused(Exception):
    """CloudFormation's refusal of the import change set (a ValidationError)."""


def _table_exists(account_id: str, region: str, name: str) -> bool:
    from moto.dynamodb.models import dynamodb_backends

    return name in dynamodb_backends[account_id][region].tables


EXISTS = {
    "AWS::DynamoDB::Table": _table_exists,
    "AWS::DynamoDB::GlobalTable": _table_exists,
}


def _names(items: list[str]) -> str:
    return ", ".join(items)


def parse_template(body: str) -> dict[str, Any]:
    from moto.cloudformation.models import Stack

    parsed: dict[str, Any] = Stack.parse_template(body)
    return parsed


def managing_stack(backend: Any, type_: str, identifier: str) -> str | None:
    """The name of the stack of ``backend`` that has the resource ``identifier`` of ``type_``, None if none."""
    for stack in backend.stacks.values():
        rmap = stack.resource_map
        for logical, body in (stack.template_dict or {}).get("Resources", {}).items():
            if body.get("Type") != type_:
                continue
            resource = rmap._parsed_resources.get(logical)
            if resource is not None and getattr(resource, "physical_resource_id", None) == identifier:
                return str(stack.name)
    return None


def _normal(body: Any) -> Any:
    """A template resource as it reads: moto stores one written without Properties with an empty ``Properties``."""
    if not isinstance(body, dict):
        return body
    return {**body, "Properties": body.get("Properties") or {}}


def validate(
    backend: Any, stack: Any, template: dict[str, Any], resources_to_import: list[dict[str, Any]]
) -> None:
    """Refuse (ImportRefused) what AWS refuses of an import of ``resources_to_import`` into ``stack``."""
    resources = template.get("Resources") or {}
    current = stack.template_dict or {}
    current_resources = current.get("Resources") or {}
    importing = [str(r.get("LogicalResourceId")) for r in resources_to_import]
    missing = [name for name in importing if name not in resources]
    if missing:
        raise ImportRefused(NOT_IN_TEMPLATE.format(names=_names(missing)))
    no_policy = [name for name in importing if not resources[name].get("DeletionPolicy")]
    if no_policy:
        raise ImportRefused(NEEDS_DELETION_POLICY.format(names=_names(no_policy)))
    for request in resources_to_import:
        logical, type_ = str(request["LogicalResourceId"]), str(request.get("ResourceType"))
        declared = resources[logical].get("Type")
        if declared != type_:
            raise ImportRefused(WRONG_TYPE.format(logical=logical, given=type_, declared=declared))
        if type_ not in IDENTIFIERS:
            raise ImportRefused(NOT_IMPORTABLE.format(type=type_))
        if logical in current_resources:
            raise ImportRefused(ALREADY_IN_STACK.format(logical=logical))
        identifier = request.get("ResourceIdentifier") or {}
        properties = resources[logical].get("Properties") or {}
        for key in IDENTIFIERS[type_]:
            if key not in identifier or properties.get(key) != identifier[key]:
                raise ImportRefused(
                    WRONG_IDENTIFIER.format(identifier=json.dumps(identifier), logical=logical)
                )
        shown = ",".join(str(identifier[k]) for k in IDENTIFIERS[type_])
        if not EXISTS[type_](stack.account_id, stack.region_name, shown):
            raise ImportRefused(NOT_FOUND.format(type=type_, identifier=shown))
        owner = managing_stack(backend, type_, shown) or managing_stack(backend, _sibling_type(type_), shown)
        if owner is not None:
            raise ImportRefused(IN_OTHER_STACK.format(type=type_, identifier=shown, stack=owner))
    changed = [
        name
        for name, body in resources.items()
        if name not in importing and _normal(current_resources.get(name)) != _normal(body)
    ]
    if (template.get("Outputs") or {}) != (current.get("Outputs") or {}):
        changed.append("Outputs")
    if changed:
        raise ImportRefused(CANNOT_MODIFY.format(names=_names(changed)))
    removed = [name for name in current_resources if name not in resources]
    if removed:
        raise ImportRefused(CANNOT_REMOVE.format(names=_names(removed)))


def _sibling_type(type_: str) -> str:
    """The other type a DynamoDB table may be in a stack as (a table is one resource, whichever type)."""
    return {"AWS::DynamoDB::Table": "AWS::DynamoDB::GlobalTable"}.get(type_, "AWS::DynamoDB::Table")


def create_change_set(
    backend: Any,
    *,
    stack_name: str,
    change_set_name: str,
    template_body: str,
    parameters: dict[str, Any],
    resources_to_import: list[dict[str, Any]],
    description: str | None,
    role_arn: str | None,
) -> tuple[str, str]:
    """An IMPORT change set of the existing stack ``stack_name``: (its id, the stack's id). ImportRefused when
    AWS would refuse it; moto's ValidationError when the stack does not exist."""
    from moto.cloudformation import models as cm

    stack = backend.get_stack(stack_name)  # ValidationError: Stack with id ... does not exist
    template = parse_template(template_body)
    validate(backend, stack, template, resources_to_import)
    change_set_id = cm.generate_changeset_id(change_set_name, backend.region_name, backend.account_id)
    change_set: Any = cm.ChangeSet.__new__(cm.ChangeSet)
    change_set.change_set_type = "IMPORT"
    change_set.change_set_id = change_set_id
    change_set.change_set_name = change_set_name
    change_set.stack = stack
    change_set.stack_id = stack.stack_id
    change_set.stack_name = stack.name
    change_set.notification_arns = []
    change_set.description = description
    change_set.tags = {}
    change_set.role_arn = role_arn
    change_set.template = template_body
    change_set.template_dict = template
    change_set.parameters = parameters or dict(stack.parameters)
    change_set.creation_time = cm.utcnow()
    change_set.resources_to_import = [dict(r) for r in resources_to_import]
    change_set.changes = []
    for request in resources_to_import:
        change: Any = cm.Change("Import", str(request["LogicalResourceId"]), str(request["ResourceType"]))
        type_ = str(request["ResourceType"])
        change.physical_resource_id = ",".join(
            str(request["ResourceIdentifier"][k]) for k in IDENTIFIERS[type_]
        )
        change.replacement = "False"
        change_set.changes.append(change)
    change_set.status = "CREATE_COMPLETE"
    change_set.execution_status = "AVAILABLE"
    change_set.status_reason = None
    backend.change_sets[change_set_id] = change_set
    return change_set_id, str(stack.stack_id)


def adopt(type_: str, account_id: str, region: str, identifier: str) -> Any:
    """The CloudFormation model of the existing resource ``identifier`` of ``type_``."""
    from moto.dynamodb.models import dynamodb_backends

    table: Any = dynamodb_backends[account_id][region].tables[identifier]
    if type_ == "AWS::DynamoDB::Table":
        return table  # moto's table is its own CloudFormation model
    from local.services.cloudformation import global_table as cfn_global_table

    install(cfn_global_table.PATCHES)  # the model registered (moto's model maps cleared); once
    if not getattr(table, "doctable_table_id", None):
        import uuid

        table.doctable_table_id = str(uuid.uuid4())
    # moto's abstract methods are not enforced (CloudFormationModel is no ABC): its defaults hold.
    return cfn_global_table.GlobalTable(account_id, region, identifier)  # type: ignore[abstract]


def execute(backend: Any, change_set: Any) -> None:
    """Run the IMPORT change set: each resource adopted, the template the change set's, ``IMPORT_COMPLETE``."""
    from local.services.cloudformation import updates as cfn_update

    stack = backend.stacks[change_set.stack_id]
    stack._add_stack_event("IMPORT_IN_PROGRESS", resource_status_reason="User Initiated")
    stack.status = "IMPORT_IN_PROGRESS"
    rmap = stack.resource_map
    template = change_set.template_dict
    rmap._template = template
    rmap._resource_json_map = template["Resources"]
    for request in change_set.resources_to_import:
        logical, type_ = str(request["LogicalResourceId"]), str(request["ResourceType"])
        identifier = ",".join(str(request["ResourceIdentifier"][k]) for k in IDENTIFIERS[type_])
        resource = adopt(type_, stack.account_id, stack.region_name, identifier)
        resource.cf_resource_type = type_  # what moto's parsing sets on the resources it creates
        resource.logical_resource_id = logical
        rmap._parsed_resources[logical] = resource
        cfn_update.resource_event(rmap, logical, "IMPORT_IN_PROGRESS", "Resource import started.")
        cfn_update.resource_event(rmap, logical, "IMPORT_COMPLETE", "Resource import completed.")
        log.info("stack %s imported %s (%s %s)", stack.name, logical, type_, identifier)
    stack.template = change_set.template
    stack._parse_template()
    stack.output_map = stack._create_output_map()
    change_set.execution_status = "EXECUTE_COMPLETE"
    stack._add_stack_event("IMPORT_COMPLETE")
    stack.status = "IMPORT_COMPLETE"
    stack.status_reason = None
