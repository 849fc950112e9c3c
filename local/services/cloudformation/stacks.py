"""CloudFormation: change sets per stack id, updates and rollbacks as AWS runs them (local/services/cloudformation/updates.py).

- change sets belong to a stack id (a deleted stack's never answer for a new one, ListChangeSets lists the
  stack's own); deleting a missing one succeeds, as on AWS;
- executing a change set refreshes the stack's template, parameters and Outputs (moto returned none);
- UsePreviousValue for a parameter that was never passed keeps its default (SSM-typed parameters are
  resolved again, as on AWS) instead of ``KeyError: 'BootstrapVersion'``;
- a modified resource whose type has no update support keeps its resource instead of becoming ``None``;
- a failing deployment is rolled back and ends in ``*_ROLLBACK_COMPLETE`` (``UPDATE_ROLLBACK_FAILED`` when
  the rollback fails) / ``DELETE_FAILED`` with the reason, as on AWS, instead of a 500 the CLI cannot explain;
- ListStackResources lists the resources the stack has (moto created missing ones lazily while listing);
- an IMPORT change set (``ResourcesToImport``) adopts existing resources (local/services/cloudformation/imports.py).
"""

from __future__ import annotations

import logging
from typing import Any

from moto.cloudformation.exceptions import CloudFormationError, ValidationError

from local import incidents
from local.patching import Patches, Target, install, replace, truthy
from local.services.cloudformation import acting_role
from local.services.cloudformation import imports as cfn_import
from local.services.cloudformation import updates as cfn_update

log = logging.getLogger("doctable.local.cloudformation")

_PARSING = "moto.cloudformation.parsing"
_MODELS = "moto.cloudformation.models"
_RESPONSES = "moto.cloudformation.responses"
PATCHES = Patches()


class ChangeSetNotFound(CloudFormationError):
    """AWS's answer for a change set that is not there."""

    code = "ChangeSetNotFoundException"


@PATCHES.replace(
    Target(
        _PARSING,
        "parse_and_update_resource",
        ("logical_id", "resource_json", "resources_map", "account_id", "region_name"),
    )
)
def parse_and_update_resource(
    logical_id: str, resource_json: dict[str, Any], resources_map: Any, account_id: str, region_name: str
) -> Any:
    """A modified resource whose type cannot be updated keeps its resource (moto put None in its place); the
    update is authorized as the stack's role first (acting_role.py)."""
    acting_role.check_update(resources_map, logical_id, resource_json)
    existing = resources_map._parsed_resources.get(logical_id)
    new = PATCHES.original(parse_and_update_resource)(
        logical_id, resource_json, resources_map, account_id, region_name
    )
    if new is None and existing is not None:
        log.info("no update support for %s (%s): kept as it was", logical_id, resource_json.get("Type"))
        return existing
    return new


@PATCHES.replace(
    Target(
        _MODELS, "CloudFormationBackend._resolve_update_parameters", ("self", "instance", "incoming_params")
    )
)
def _resolve_update_parameters(
    self: Any, instance: Any, incoming_params: list[dict[str, Any]]
) -> dict[str, Any]:
    """UsePreviousValue for a parameter that was never passed: keep its default (and re-resolve SSM types)."""
    parameters = {p["ParameterKey"]: p["ParameterValue"] for p in incoming_params if "ParameterValue" in p}
    for p in incoming_params:
        if truthy(p.get("UsePreviousValue", False)) and p["ParameterKey"] in instance.parameters:
            parameters[p["ParameterKey"]] = instance.parameters[p["ParameterKey"]]
    return parameters


def _stack_id_of(self: Any, stack_name: str | None) -> str | None:
    """The id of the stack ``stack_name`` names now (a live stack by name, or any stack by id)."""
    if not stack_name:
        return None
    if stack_name in self.stacks or stack_name in self.deleted_stacks:
        return str(stack_name)
    for stack in self.stacks.values():
        if stack.name == stack_name:
            return str(stack.stack_id)
    return ""  # no such stack: matches no change set


def _find_change_set(self: Any, change_set_name: str, stack_name: str | None) -> Any:
    """The change set by id, or by name among the stack's own; None when there is none."""
    # Change sets belong to a stack id: a deleted stack's change sets never answer for a new stack.
    if change_set_name in self.change_sets:
        return self.change_sets[change_set_name]
    stack_id = _stack_id_of(self, stack_name)
    for change_set in reversed(list(self.change_sets.values())):
        if change_set.change_set_name != change_set_name:
            continue
        if stack_id is not None and change_set.stack_id != stack_id:
            continue
        return change_set
    return None


@PATCHES.replace(Target(_MODELS, "CloudFormationBackend.describe_change_set", ("self", "change_set_name")))
def describe_change_set(self: Any, change_set_name: str, stack_name: str | None = None) -> Any:
    """DescribeChangeSet finds the change set of the stack's id (ChangeSetNotFoundException when none)."""
    change_set = _find_change_set(self, change_set_name, stack_name)
    if change_set is None:
        raise _change_set_not_found(change_set_name)
    return change_set


@PATCHES.replace(Target(_MODELS, "CloudFormationBackend.delete_change_set", ("self", "change_set_name")))
def delete_change_set(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
    """DeleteChangeSet of the stack's own change set; a missing one succeeds, as on AWS."""
    change_set = _find_change_set(self, change_set_name, stack_name)
    if change_set is None:
        return  # AWS answers a delete of a change set that is not there with success
    self.change_sets.pop(change_set.change_set_id, None)
    stack = self.stacks.get(change_set.stack_id)
    if stack is not None and stack.status == "REVIEW_IN_PROGRESS" and change_set.change_set_type == "CREATE":
        # AWS deletes a stack that only ever had this (unexecuted) change set.
        others = [c for c in self.change_sets.values() if c.stack_id == stack.stack_id]
        if not others:
            self.stacks.pop(stack.stack_id, None)


@PATCHES.replace(
    Target(_MODELS, "CloudFormationBackend.execute_change_set", ("self", "change_set_name", "stack_name"))
)
def execute_change_set(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
    """ExecuteChangeSet refreshes the stack's template, parameters and Outputs; a failure is rolled back."""
    from moto.cloudformation import models as cm

    change_set = _find_change_set(self, change_set_name, stack_name)
    if change_set is None:
        raise _change_set_not_found(change_set_name)
    stack = self.stacks[change_set.stack_id]
    # The change set's role acts for this operation and, as on AWS, for the stack's later ones.
    stack.role_arn = getattr(change_set, "role_arn", None) or getattr(stack, "role_arn", None)
    if change_set.change_set_type == "IMPORT":
        cfn_import.execute(self, change_set)
        return
    creating = change_set.change_set_type == "CREATE"
    verb = "CREATE" if creating else "UPDATE"
    stack._add_stack_event(f"{verb}_IN_PROGRESS", resource_status_reason="User Initiated")
    stack.status = f"{verb}_IN_PROGRESS"
    previous = (stack.template, dict(stack.parameters))
    try:
        change_set.apply()
    except Exception as exc:  # rolled back by the update engine: report it as AWS does
        change_set.execution_status = "EXECUTE_FAILED"
        _rolled_back(stack, exc, creating)
        if not creating:
            stack.template, stack.parameters = previous
            stack._parse_template()
        return
    stack.template = change_set.template
    stack._parse_template()
    stack.description = stack.template_dict.get("Description")
    if change_set.parameters or creating:
        stack.parameters = dict(change_set.parameters)
    if change_set.tags:
        stack.tags = dict(change_set.tags)
    for export in stack.exports:
        self.exports.pop(export.name, None)
    stack.output_map = stack._create_output_map()
    for export in stack.exports:
        self.exports[export.name] = export
    change_set.execution_status = "EXECUTE_COMPLETE"
    stack._add_stack_event(f"{verb}_COMPLETE")
    stack.status = f"{verb}_COMPLETE"
    stack.status_reason = None
    if creating:
        stack.creation_time = cm.utcnow()


@PATCHES.replace(Target(_MODELS, "CloudFormationBackend.list_change_sets", ("self",)))
def list_change_sets(self: Any, stack_name: str | None = None) -> list[Any]:
    """ListChangeSets lists the stack's own change sets (those of its id)."""
    stack_id = _stack_id_of(self, stack_name)
    return [c for c in self.change_sets.values() if stack_id is None or c.stack_id == stack_id]


@PATCHES.replace(Target(_MODELS, "CloudFormationBackend.delete_stack", ("self", "name_or_stack_id")))
def delete_stack(self: Any, name_or_stack_id: str) -> None:
    """DeleteStack: a failure leaves the stack in DELETE_FAILED with the reason; a stack's change sets go with
    it."""
    original_delete_stack = PATCHES.original(delete_stack)
    stack = None
    for candidate in self.stacks.values():
        if name_or_stack_id in (candidate.name, candidate.stack_id):
            stack = candidate
            break
    if stack is None:
        return original_delete_stack(self, name_or_stack_id)
    # moto takes the stack out of its stacks before deleting its resources: their deletion acts as its role
    setattr(stack.resource_map, acting_role.DELETING_ROLE, getattr(stack, "role_arn", None))
    setattr(stack.resource_map, acting_role.PHYSICAL_IDS, dict(stack.resource_map._parsed_resources))
    try:
        original_delete_stack(self, name_or_stack_id)
    except Exception as exc:
        log.exception("deleting stack %s failed", stack.name)
        reason = cfn_update.reason_of(exc)
        self.stacks[stack.stack_id] = stack
        self.deleted_stacks.pop(stack.stack_id, None)
        stack._add_stack_event("DELETE_FAILED", resource_status_reason=reason)
        stack.status = "DELETE_FAILED"
        stack.status_reason = reason
        return None
    for change_set in list(self.change_sets.values()):  # a stack's change sets go with it
        if change_set.stack_id == stack.stack_id:
            self.change_sets.pop(change_set.change_set_id, None)
    return None


@PATCHES.replace(Target(_MODELS, "Stack.update"))
def stack_update(
    self: Any, template: str, role_arn: str | None = None, parameters: Any = None, tags: Any = None
) -> None:
    """UpdateStack: a failed update is rolled back and ends in UPDATE_ROLLBACK_COMPLETE with the reason. The role
    it is given acts for this update (acting_role.py); without one, the stack's role does (moto set it after
    the update, and cleared it when none was given)."""
    previous = (self.template, dict(self.parameters))
    role_arn = role_arn or getattr(self, "role_arn", None)
    self.role_arn = role_arn
    try:
        PATCHES.original(stack_update)(self, template, role_arn, parameters=parameters, tags=tags)
    except Exception as exc:
        self.template, self.parameters = previous
        self._parse_template()
        _rolled_back(self, exc, creating=False)
        return
    self.status_reason = None
    self.description = self.template_dict.get("Description")


@PATCHES.replace(Target(_MODELS, "Stack.create_resources", ("self",)))
def create_resources(self: Any) -> None:
    """CreateStack: each resource's CREATE events; a failure deletes what it made and ends in
    ROLLBACK_COMPLETE with the reason."""
    try:
        PATCHES.original(create_resources)(self)
    except Exception as exc:  # a failed CreateStack: what it made goes; ROLLBACK_COMPLETE with the reason
        _roll_back_create(self.resource_map)
        _rolled_back(self, exc, creating=True)
        return
    rmap = self.resource_map
    for name in [n for n in rmap._parsed_resources if n in rmap._resource_json_map]:
        cfn_update.resource_event(rmap, name, "CREATE_IN_PROGRESS")
        cfn_update.resource_event(rmap, name, "CREATE_COMPLETE")


@PATCHES.replace(Target(_MODELS, "Stack.stack_resources"), wrap=property)
def stack_resources(self: Any) -> list[Any]:
    """ListStackResources lists what the stack has, never creating what it lacks (moto's lazy map created a
    resource a failed create never made, and answered with that service's error)."""
    parsed = self.resource_map._parsed_resources
    return [
        resource
        for name, resource in parsed.items()
        if name in self.resource_map._resource_json_map and hasattr(resource, "physical_resource_id")
    ]


@PATCHES.replace(Target(_MODELS, "Stack.parameter_list"), wrap=property)
def parameter_list(self: Any) -> list[dict[str, Any]]:
    """DescribeStacks' Parameters: a list parameter's value comma-joined, as CloudFormation answers it (moto
    answered its Python list's text, "['a', 'b']"); a NoEcho one masked."""
    rmap = self.resource_map
    return [
        {
            "ParameterKey": key,
            "ParameterValue": "****" if key in rmap.no_echo_parameter_keys
            else ",".join(map(str, value)) if isinstance(value, list) else value,
        }
        for key, value in rmap.resolved_parameters.items()
    ]  # fmt: skip


# Responses: pass StackName through; UsePreviousValue resolves to the previous *input* value.
@PATCHES.replace(Target(_RESPONSES, "CloudFormationResponse.describe_change_set", ("self",)))
def describe_change_set_response(self: Any) -> Any:
    """DescribeChangeSet passes StackName through."""
    from moto.cloudformation import responses as cr

    change_set = self.cloudformation_backend.describe_change_set(
        self._get_param("ChangeSetName"), stack_name=self._get_param("StackName")
    )
    return cr.ActionResult(change_set)


@PATCHES.replace(Target(_RESPONSES, "CloudFormationResponse.delete_change_set", ("self",)))
def delete_change_set_response(self: Any) -> Any:
    """DeleteChangeSet passes StackName through."""
    from moto.cloudformation import responses as cr

    self.cloudformation_backend.delete_change_set(
        self._get_param("ChangeSetName"), stack_name=self._get_param("StackName")
    )
    return cr.EmptyResult()


@PATCHES.replace(Target(_RESPONSES, "CloudFormationResponse.execute_change_set", ("self",)))
def execute_change_set_response(self: Any) -> Any:
    """ExecuteChangeSet passes StackName through."""
    from moto.cloudformation import responses as cr

    self.cloudformation_backend.execute_change_set(
        change_set_name=self._get_param("ChangeSetName"), stack_name=self._get_param("StackName")
    )
    return cr.EmptyResult()


@PATCHES.replace(Target(_RESPONSES, "CloudFormationResponse.list_change_sets", ("self",)))
def list_change_sets_response(self: Any) -> Any:
    """ListChangeSets passes StackName through: the stack's own change sets."""
    from moto.cloudformation import responses as cr

    change_sets = self.cloudformation_backend.list_change_sets(stack_name=self._get_param("StackName"))
    return cr.ActionResult({"Summaries": change_sets})


@PATCHES.replace(Target(_RESPONSES, "CloudFormationResponse.create_change_set", ("self",)))
def create_change_set_response(self: Any) -> Any:
    """CreateChangeSet: UsePreviousValue is the previous input value, a REVIEW_IN_PROGRESS stack is reused,
    an IMPORT change set adopts existing resources."""
    from moto.cloudformation import responses as cr

    stack_name = self._get_param("StackName")
    change_set_name = self._get_param("ChangeSetName")
    stack_body = self._get_param("TemplateBody")
    template_url = self._get_param("TemplateURL")
    change_set_type = self._get_param("ChangeSetType", "CREATE")
    if change_set_type == "IMPORT":
        return _import_change_set(self)
    stack = None
    if change_set_type == "UPDATE":
        stack = self.cloudformation_backend.get_stack(stack_name)
        self.validate_template_and_stack_body()
        if self._get_bool_param("UsePreviousTemplate", False):
            stack_body = stack.template
    elif change_set_type == "CREATE":
        # A stack left in REVIEW_IN_PROGRESS by an earlier, never-executed change set is reused (AWS does).
        for existing in list(self.cloudformation_backend.stacks.values()):
            if existing.name == stack_name and existing.status != "REVIEW_IN_PROGRESS":
                raise ValidationError(stack_name, message=f"Stack [{stack_name}] already exists")
            if existing.name == stack_name:
                self.cloudformation_backend.stacks.pop(existing.stack_id)
    parameters: dict[str, Any] = {}
    for param in self._get_param("Parameters", []):
        key = param["ParameterKey"]
        if truthy(param.get("UsePreviousValue", False)):
            if stack is not None and key in stack.parameters:
                parameters[key] = stack.parameters[key]
        elif "ParameterValue" in param:
            parameters[key] = param["ParameterValue"]
    if template_url:
        stack_body = self._get_stack_from_s3_url(template_url)
    tags = {item["Key"]: item["Value"] for item in self._get_param("Tags", [])}
    change_set_id, stack_id = self.cloudformation_backend.create_change_set(
        stack_name=stack_name,
        change_set_name=change_set_name,
        template=stack_body,
        parameters=parameters,
        description=self._get_param("Description"),
        notification_arns=self._get_param("NotificationARNs", []),
        tags=tags,
        role_arn=self._get_param("RoleARN"),
        change_set_type=change_set_type,
    )
    return cr.ActionResult({"Id": change_set_id, "StackId": stack_id})


@PATCHES.on_install
def _install_update_engine() -> None:
    """Stack updates and rollbacks as AWS runs them (local/services/cloudformation/updates.py) come with this module."""
    install(cfn_update.PATCHES)


@PATCHES.on_install
def _stack_status_reason() -> None:
    """Reasons are reported like AWS does, in DescribeStacks (a stack without one: None)."""
    from moto.cloudformation import models as cm

    # moto's Stack has no status_reason of its own (no Target can name it): a class default, journaled.
    replace(cm.Stack, "status_reason", None)


def _import_change_set(response: Any) -> Any:
    """CreateChangeSet with ChangeSetType=IMPORT into an existing stack (local/services/cloudformation/imports.py)."""
    from moto.cloudformation import responses as cr

    backend = response.cloudformation_backend
    stack_name = response._get_param("StackName")
    body = response._get_param("TemplateBody")
    if response._get_param("TemplateURL"):
        body = response._get_stack_from_s3_url(response._get_param("TemplateURL"))
    stack = backend.get_stack(stack_name)
    parameters: dict[str, Any] = {}
    for param in response._get_param("Parameters", []):
        key = param["ParameterKey"]
        if truthy(param.get("UsePreviousValue", False)):
            if key in stack.parameters:
                parameters[key] = stack.parameters[key]
        elif "ParameterValue" in param:
            parameters[key] = param["ParameterValue"]
    try:
        change_set_id, stack_id = cfn_import.create_change_set(
            backend,
            stack_name=stack_name,
            change_set_name=response._get_param("ChangeSetName"),
            template_body=body,
            parameters=parameters,
            resources_to_import=response._get_param("ResourcesToImport", []),
            description=response._get_param("Description"),
            role_arn=response._get_param("RoleARN"),
        )
    except cfn_import.ImportRefused as exc:
        raise ValidationError(stack_name, message=str(exc)) from None
    return cr.ActionResult({"Id": change_set_id, "StackId": stack_id})


def _change_set_not_found(name: str) -> Exception:
    """ChangeSetNotFoundException naming the change set."""
    return ChangeSetNotFound(f"ChangeSet [{name}] does not exist")


def _rolled_back(stack: Any, exc: Exception, creating: bool) -> None:
    """The stack's status and events after a failed operation was rolled back (or failed to roll back)."""
    reason = exc.reason if isinstance(exc, cfn_update.UpdateFailed) else cfn_update.reason_of(exc)
    rollback_error = exc.rollback_error if isinstance(exc, cfn_update.UpdateFailed) else None
    log.warning("%s of stack %s failed: %s", "create" if creating else "update", stack.name, reason)
    prefix = "" if creating else "UPDATE_"
    stack._add_stack_event("CREATE_FAILED" if creating else "UPDATE_FAILED", resource_status_reason=reason)
    stack._add_stack_event(f"{prefix}ROLLBACK_IN_PROGRESS", resource_status_reason=reason)
    if rollback_error is not None:
        stack._add_stack_event(f"{prefix}ROLLBACK_FAILED", resource_status_reason=rollback_error)
        stack.status = f"{prefix}ROLLBACK_FAILED"
        stack.status_reason = rollback_error
        return
    stack._add_stack_event(f"{prefix}ROLLBACK_COMPLETE", resource_status_reason=reason)
    stack.status = f"{prefix}ROLLBACK_COMPLETE"
    stack.status_reason = reason


def _roll_back_create(resource_map: Any) -> None:
    """Delete what a failed create made, newest first, keeping ``Retain`` resources."""
    parsed = resource_map._parsed_resources
    for name in reversed([n for n in parsed if n in resource_map._resource_json_map]):
        resource, body = parsed[name], resource_map._resource_json_map[name]
        if not hasattr(resource, "physical_resource_id") or body.get("DeletionPolicy") == "Retain":
            continue
        try:
            resource_map._delete_resource(resource, body)
            parsed.pop(name, None)
        except Exception as exc:  # the rest of the rollback goes on; the failure is an incident a test sees
            incidents.record(f"cloudformation.rollback_create.{name}", exc)


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_MODELS, "CloudFormationBackend.create_change_set"),
    Target(_MODELS, "Stack._create_output_map", ("self",)),
    Target(_MODELS, "Stack._parse_template", ("self",)),
    Target(_MODELS, "Stack._add_stack_event"),
    Target(_MODELS, "utcnow"),
    Target(_RESPONSES, "ActionResult"),
    Target(_RESPONSES, "EmptyResult"),
    Target("moto.cloudformation.exceptions", "ValidationError"),
    Target("moto.cloudformation.exceptions", "CloudFormationError"),
)
