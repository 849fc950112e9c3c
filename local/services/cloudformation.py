"""CloudFormation: change sets per stack, stack updates in dependency order, failures reported as AWS does.

- change sets are looked up per stack; deleting a missing one is a clean error, not a 500;
- executing a change set refreshes the stack's template, parameters and Outputs (moto returned none);
- UsePreviousValue for a parameter that was never passed keeps its default (SSM-typed parameters are
  resolved again, as on AWS) instead of ``KeyError: 'BootstrapVersion'``;
- a modified resource whose type has no update support keeps its resource instead of becoming ``None``;
- a failing deployment ends in ``*_ROLLBACK_COMPLETE`` / ``DELETE_FAILED`` with the reason, as on AWS,
  instead of a 500 the CDK CLI cannot explain.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from local.patching import Target, replace, truthy

log = logging.getLogger("doctable.local.cloudformation")

_PARSING = "moto.cloudformation.parsing"
_MODELS = "moto.cloudformation.models"
_RESPONSES = "moto.cloudformation.responses"
MOTO_TARGETS = (
    Target(
        _PARSING,
        "parse_and_update_resource",
        ("logical_id", "resource_json", "resources_map", "account_id", "region_name"),
    ),
    Target(_PARSING, "ResourceMap.update", ("self", "template", "parameters")),
    Target(_PARSING, "ResourceMap.build_resource_diff", ("self", "other_template", "parameters")),
    Target(_PARSING, "ResourceMap._delete_resource", ("self", "parsed_resource", "resource_json")),
    Target(_PARSING, "ResourceMap.load_mapping", ("self",)),
    Target(_PARSING, "ResourceMap.load_parameters", ("self",)),
    Target(_PARSING, "ResourceMap.load_conditions", ("self",)),
    Target(_PARSING, "MAX_UPDATE_ATTEMPTS"),
    Target(_MODELS, "CloudFormationBackend.create_change_set"),
    Target(_MODELS, "CloudFormationBackend.describe_change_set", ("self", "change_set_name")),
    Target(_MODELS, "CloudFormationBackend.delete_change_set", ("self", "change_set_name")),
    Target(_MODELS, "CloudFormationBackend.execute_change_set", ("self", "change_set_name", "stack_name")),
    Target(
        _MODELS, "CloudFormationBackend._resolve_update_parameters", ("self", "instance", "incoming_params")
    ),
    Target(_MODELS, "CloudFormationBackend.delete_stack", ("self", "name_or_stack_id")),
    Target(_MODELS, "Stack._create_output_map", ("self",)),
    Target(_MODELS, "Stack._parse_template", ("self",)),
    Target(_MODELS, "Stack.update"),
    Target(_MODELS, "Stack.create_resources", ("self",)),
    Target(_MODELS, "Stack._add_stack_event"),
    Target(_MODELS, "utcnow"),
    Target(_RESPONSES, "CloudFormationResponse.create_change_set", ("self",)),
    Target(_RESPONSES, "CloudFormationResponse.describe_change_set", ("self",)),
    Target(_RESPONSES, "CloudFormationResponse.delete_change_set", ("self",)),
    Target(_RESPONSES, "CloudFormationResponse.execute_change_set", ("self",)),
    Target(_RESPONSES, "ActionResult"),
    Target(_RESPONSES, "EmptyResult"),
    Target("moto.cloudformation.exceptions", "ValidationError"),
    Target("moto.cloudformation.exceptions", "CloudFormationError"),
)


def apply() -> None:
    from moto.cloudformation import models as cm
    from moto.cloudformation import parsing as cp
    from moto.cloudformation import responses as cr
    from moto.cloudformation.exceptions import ValidationError

    # A modified resource whose type cannot be updated keeps its resource (moto put None in its place).
    def parse_and_update_resource(
        logical_id: str, resource_json: dict[str, Any], resources_map: Any, account_id: str, region_name: str
    ) -> Any:
        original = resources_map._parsed_resources.get(logical_id)
        new = original_parse_update(logical_id, resource_json, resources_map, account_id, region_name)
        if new is None and original is not None:
            log.info("no update support for %s (%s): kept as it was", logical_id, resource_json.get("Type"))
            return original
        return new

    original_parse_update = replace(cp, "parse_and_update_resource", parse_and_update_resource)

    # Stack updates in dependency order: moto created every added resource before updating any modified one,
    # so a new mapping could not read the StreamArn of a table whose stream the same update turns on.
    def resource_map_update(
        self: Any, template: dict[str, Any], parameters: dict[str, Any] | None = None
    ) -> None:
        actions = self.build_resource_diff(template, parameters)
        removes = list(actions["Remove"])
        last_exception: Exception | None = None
        for _ in range(cp.MAX_UPDATE_ATTEMPTS):
            if not removes:
                break
            for logical_name in list(removes):
                resource_json = self._resource_json_map[logical_name]
                try:
                    resource = self._parsed_resources.get(logical_name)
                    if resource is not None and resource_json.get("DeletionPolicy") != "Retain":
                        self._delete_resource(resource, resource_json)
                    self._parsed_resources.pop(logical_name, None)
                except Exception as exc:  # a dependency not gone yet: try again in the next pass
                    last_exception = exc
                else:
                    removes.remove(logical_name)
        if removes and last_exception is not None:
            raise last_exception

        self._template = template
        if parameters:
            self.input_parameters = parameters
        self.load_mapping()
        self.load_parameters()
        self.load_conditions()
        self._resource_json_map = template["Resources"]

        pending = list(actions["Add"]) + list(actions["Modify"])
        for logical_name in _dependency_order(pending, template["Resources"]):
            resource_json = self._resource_json_map[logical_name]
            if logical_name in actions["Add"]:
                _ = self[logical_name]  # creates it (or skips it when its Condition is false)
                continue
            changed = cp.parse_and_update_resource(
                logical_name, resource_json, self, account_id=self._account_id, region_name=self._region_name
            )
            if changed is not None:
                self._parsed_resources[logical_name] = changed

    replace(cp.ResourceMap, "update", resource_map_update)

    Backend = cm.CloudFormationBackend

    # UsePreviousValue for a parameter that was never passed: keep its default (and re-resolve SSM types).
    def _resolve_update_parameters(
        self: Any, instance: Any, incoming_params: list[dict[str, Any]]
    ) -> dict[str, Any]:
        parameters = {
            p["ParameterKey"]: p["ParameterValue"] for p in incoming_params if "ParameterValue" in p
        }
        for p in incoming_params:
            if truthy(p.get("UsePreviousValue", False)) and p["ParameterKey"] in instance.parameters:
                parameters[p["ParameterKey"]] = instance.parameters[p["ParameterKey"]]
        return parameters

    replace(Backend, "_resolve_update_parameters", _resolve_update_parameters)

    def _find_change_set(self: Any, change_set_name: str, stack_name: str | None) -> Any:
        if change_set_name in self.change_sets:
            return self.change_sets[change_set_name]
        for change_set in reversed(list(self.change_sets.values())):
            if change_set.change_set_name != change_set_name:
                continue
            if stack_name and stack_name not in (change_set.stack_name, change_set.stack_id):
                continue
            return change_set
        return None

    def describe_change_set(self: Any, change_set_name: str, stack_name: str | None = None) -> Any:
        change_set = _find_change_set(self, change_set_name, stack_name)
        if change_set is None:
            raise _change_set_not_found(change_set_name)
        return change_set

    replace(Backend, "describe_change_set", describe_change_set)

    def delete_change_set(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
        change_set = _find_change_set(self, change_set_name, stack_name)
        if change_set is None:
            raise _change_set_not_found(change_set_name)
        self.change_sets.pop(change_set.change_set_id, None)
        stack = self.stacks.get(change_set.stack_id)
        if (
            stack is not None
            and stack.status == "REVIEW_IN_PROGRESS"
            and change_set.change_set_type == "CREATE"
        ):
            # AWS deletes a stack that only ever had this (unexecuted) change set.
            others = [c for c in self.change_sets.values() if c.stack_id == stack.stack_id]
            if not others:
                self.stacks.pop(stack.stack_id, None)

    replace(Backend, "delete_change_set", delete_change_set)

    def execute_change_set(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
        change_set = _find_change_set(self, change_set_name, stack_name)
        if change_set is None:
            raise _change_set_not_found(change_set_name)
        stack = self.stacks[change_set.stack_id]
        creating = change_set.change_set_type == "CREATE"
        verb = "CREATE" if creating else "UPDATE"
        stack._add_stack_event(f"{verb}_IN_PROGRESS", resource_status_reason="User Initiated")
        stack.status = f"{verb}_IN_PROGRESS"
        previous = (stack.template, dict(stack.parameters))
        try:
            change_set.apply()
        except Exception as exc:  # roll back the bookkeeping, report the reason as AWS does
            log.exception("executing change set %s on %s failed", change_set.change_set_name, stack.name)
            reason = f"{type(exc).__name__}: {exc}"
            change_set.execution_status = "EXECUTE_FAILED"
            if creating:
                stack._add_stack_event("CREATE_FAILED", resource_status_reason=reason)
                stack._add_stack_event("ROLLBACK_COMPLETE", resource_status_reason=reason)
                stack.status = "ROLLBACK_COMPLETE"
            else:
                stack._add_stack_event("UPDATE_FAILED", resource_status_reason=reason)
                stack._add_stack_event("UPDATE_ROLLBACK_COMPLETE", resource_status_reason=reason)
                stack.status = "UPDATE_ROLLBACK_COMPLETE"
                stack.template, stack.parameters = previous
            stack.status_reason = reason
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
        if creating:
            stack.creation_time = cm.utcnow()

    replace(Backend, "execute_change_set", execute_change_set)

    def delete_stack(self: Any, name_or_stack_id: str) -> None:
        stack = None
        for candidate in self.stacks.values():
            if name_or_stack_id in (candidate.name, candidate.stack_id):
                stack = candidate
                break
        if stack is None:
            return original_delete_stack(self, name_or_stack_id)
        try:
            return original_delete_stack(self, name_or_stack_id)
        except Exception as exc:
            log.exception("deleting stack %s failed", stack.name)
            reason = f"{type(exc).__name__}: {exc}"
            self.stacks[stack.stack_id] = stack
            self.deleted_stacks.pop(stack.stack_id, None)
            stack._add_stack_event("DELETE_FAILED", resource_status_reason=reason)
            stack.status = "DELETE_FAILED"
            stack.status_reason = reason
            return None

    original_delete_stack = replace(Backend, "delete_stack", delete_stack)

    def stack_update(
        self: Any, template: str, role_arn: str | None = None, parameters: Any = None, tags: Any = None
    ) -> None:
        previous = (self.template, dict(self.parameters))
        try:
            original_stack_update(self, template, role_arn, parameters=parameters, tags=tags)
        except Exception as exc:
            log.exception("updating stack %s failed", self.name)
            reason = f"{type(exc).__name__}: {exc}"
            self.template, self.parameters = previous
            self._parse_template()
            self._add_stack_event("UPDATE_FAILED", resource_status_reason=reason)
            self._add_stack_event("UPDATE_ROLLBACK_COMPLETE", resource_status_reason=reason)
            self.status = "UPDATE_ROLLBACK_COMPLETE"
            self.status_reason = reason
            return
        self.description = self.template_dict.get("Description")

    original_stack_update = replace(cm.Stack, "update", stack_update)

    def create_resources(self: Any) -> None:
        try:
            original_create_resources(self)
        except Exception as exc:  # a failed CreateStack: ROLLBACK_COMPLETE with the reason, not a 500
            log.exception("creating stack %s failed", self.name)
            reason = f"{type(exc).__name__}: {exc}"
            self._add_stack_event("CREATE_FAILED", resource_status_reason=reason)
            self._add_stack_event("ROLLBACK_COMPLETE", resource_status_reason=reason)
            self.status = "ROLLBACK_COMPLETE"
            self.status_reason = reason

    original_create_resources = replace(cm.Stack, "create_resources", create_resources)

    # Responses: pass StackName through; UsePreviousValue resolves to the previous *input* value.
    Response = cr.CloudFormationResponse

    def describe_change_set_response(self: Any) -> Any:
        change_set = self.cloudformation_backend.describe_change_set(
            self._get_param("ChangeSetName"), stack_name=self._get_param("StackName")
        )
        return cr.ActionResult(change_set)

    replace(Response, "describe_change_set", describe_change_set_response)

    def delete_change_set_response(self: Any) -> Any:
        self.cloudformation_backend.delete_change_set(
            self._get_param("ChangeSetName"), stack_name=self._get_param("StackName")
        )
        return cr.EmptyResult()

    replace(Response, "delete_change_set", delete_change_set_response)

    def execute_change_set_response(self: Any) -> Any:
        self.cloudformation_backend.execute_change_set(
            change_set_name=self._get_param("ChangeSetName"), stack_name=self._get_param("StackName")
        )
        return cr.EmptyResult()

    replace(Response, "execute_change_set", execute_change_set_response)

    def create_change_set_response(self: Any) -> Any:
        stack_name = self._get_param("StackName")
        change_set_name = self._get_param("ChangeSetName")
        stack_body = self._get_param("TemplateBody")
        template_url = self._get_param("TemplateURL")
        change_set_type = self._get_param("ChangeSetType", "CREATE")
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

    replace(Response, "create_change_set", create_change_set_response)

    # Reasons are reported like AWS does, in DescribeStacks.
    replace(cm.Stack, "status_reason", None)


def _references(node: Any, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref" and isinstance(value, str):
                found.add(value)
            elif key == "Fn::GetAtt":
                target = value[0] if isinstance(value, list) else str(value).split(".", 1)[0]
                found.add(target)
            elif key == "Fn::Sub":
                text = value[0] if isinstance(value, list) else value
                if isinstance(text, str):
                    for name in re.findall(r"\$\{([^}!][^}]*)\}", text):
                        found.add(name.split(".", 1)[0])
                _references(value, found)
            else:
                _references(value, found)
    elif isinstance(node, list):
        for item in node:
            _references(item, found)
    return found


def _dependency_order(names: list[str], resources: dict[str, Any]) -> list[str]:
    """``names`` ordered so that every resource comes after the ones (among ``names``) it refers to."""
    wanted = set(names)
    deps: dict[str, set[str]] = {}
    for name in names:
        body = resources[name]
        refs = _references(body.get("Properties", {}), set())
        depends = body.get("DependsOn", [])
        refs.update([depends] if isinstance(depends, str) else depends)
        deps[name] = (refs & wanted) - {name}
    ordered: list[str] = []
    done: set[str] = set()

    def visit(name: str, path: set[str]) -> None:
        if name in done or name in path:
            return
        path.add(name)
        for dep in sorted(deps[name]):
            visit(dep, path)
        path.discard(name)
        done.add(name)
        ordered.append(name)

    for name in names:
        visit(name, set())
    return ordered


def _change_set_not_found(name: str) -> Exception:
    from moto.cloudformation.exceptions import CloudFormationError

    class ChangeSetNotFound(CloudFormationError):
        code = "ChangeSetNotFoundException"

    return ChangeSetNotFound(f"ChangeSet [{name}] does not exist")
