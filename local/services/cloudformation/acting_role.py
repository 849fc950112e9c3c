"""CloudFormation acts as the stack's role: each resource it creates, updates or deletes is authorized as a
session of the role the operation was given (``RoleARN``; the CDK passes the bootstrap's execution role), by the
local IAM evaluator, before the resource exists (AWS CloudFormation User Guide, "CloudFormation service role").

Each resource type names the call its handler makes first, with the resource ARN that call is authorized on
(the Service Authorization Reference's resource for the action): a table's ``dynamodb:CreateTable`` on the table,
a function's ``lambda:CreateFunction`` on the function and ``iam:PassRole`` on its execution role (condition key
``iam:PassedToService`` lambda.amazonaws.com), a bucket's ``s3:CreateBucket``, ... A type this module does not
list is authorized on the first permission of its handler in the CloudFormation registry schema (cfn-lint ships
the schemas) on ``*``. A refusal fails the resource as AWS reports it::

    Resource handler returned message: "User: arn:aws:sts::<account>:assumed-role/<role>/AWSCloudFormation is
    not authorized to perform: <action> on resource: <arn> because no identity-based policy allows the <action>
    action (Service: <service>, Status Code: 400, Request ID: <id>)" (HandlerErrorCode: AccessDenied)

and the operation rolls back (stacks.py, updates.py). An operation without a role is not checked here: the
caller's own call (CreateStack, ExecuteChangeSet) was authorized by the middleware.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from local import state
from local.auth import policy, principals
from local.patching import Patches, Target
from local.services.cloudformation.handler_calls import SERVICE_NAMES, calls

log = logging.getLogger("doctable.local.cloudformation")
_PARSING = "moto.cloudformation.parsing"
PATCHES = Patches()
SESSION = "AWSCloudFormation"
PHYSICAL_IDS = "doctable_physical_ids"  # a stack being deleted: its resources as they were when it began
DELETING_ROLE = "doctable_deleting_role"  # the role of a stack being deleted, kept on its resource map  # the session name CloudFormation assumes a service role with


class AccessDenied(Exception):
    """A call CloudFormation made as the stack's role was refused: the resource fails, as on AWS."""

    code = "AccessDenied"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def _context(
    resource_type: str, action: str, props: dict[str, Any], region: str
) -> dict[str, list[str]] | None:
    """The condition keys of the handler's call: the service a role is passed to; the boundary a role is
    created with, or the one the roles an inline policy is put on have."""
    if action == "iam:PassRole":
        return {"iam:PassedToService": ["lambda.amazonaws.com"]}
    if resource_type in ("AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable") and action.startswith("kms:"):
        # DynamoDB asks KMS for the table's grant on the caller's behalf (kms:ViaService)
        return {"kms:ViaService": [f"dynamodb.{region}.amazonaws.com"]}
    if resource_type == "AWS::Lambda::EventSourceMapping" and isinstance(props.get("FunctionName"), str):
        # the function a mapping invokes (lambda:FunctionArn), named by its ARN or its name
        name = str(props["FunctionName"])
        arn = (
            name if name.startswith("arn:") else f"arn:aws:lambda:{region}:{state.ACCOUNT_ID}:function:{name}"
        )
        return {"lambda:FunctionArn": [arn]}
    if resource_type == "AWS::IAM::Role" and props.get("PermissionsBoundary"):
        return {"iam:PermissionsBoundary": [str(props["PermissionsBoundary"])]}
    if resource_type == "AWS::IAM::Policy":
        roles = [r for r in props.get("Roles") or [] if isinstance(r, str)]
        held = [b for b in (principals.boundary_arn("role", r.rsplit("/", 1)[-1]) for r in roles) if b]
        return {"iam:PermissionsBoundary": held} if held else None
    return None


def role_of(resources_map: Any) -> str | None:
    """The role the stack's operation acts as: its RoleARN (a change set's, carried onto the stack)."""
    from moto.cloudformation import models as cm

    backend = cm.cloudformation_backends[resources_map._account_id][resources_map._region_name]
    stack = backend.stacks.get(resources_map.stack_id)
    if stack is None:  # being deleted: moto took it out of its stacks first (stacks.py noted its role)
        return getattr(resources_map, DELETING_ROLE, None) or None
    return getattr(stack, "role_arn", None) or None


def check(resources_map: Any, resource_type: str, operation: str, name: str, props: dict[str, Any]) -> None:
    """AccessDenied unless the stack's role may make the handler's calls (nothing to check without a role)."""
    role = role_of(resources_map)
    if not role:
        caller = principals.CALLER.get()
        if caller is not None:
            check_as_caller(caller, resource_type, operation, name, props, resources_map._region_name)
        return
    region = resources_map._region_name
    for action, arn in calls(resource_type, operation, name, props, region):
        base = _context(resource_type, action, props, region)
        contexts = [base]
        if resource_type == "AWS::IAM::Role" and action in ("iam:AttachRolePolicy", "iam:DetachRolePolicy"):
            # one call per managed policy, each with its iam:PolicyARN
            policies = [p for p in props.get("ManagedPolicyArns") or [] if isinstance(p, str)]
            contexts = [{**(base or {}), "iam:PolicyARN": [p]} for p in policies] or [base]
        decision = next(
            (d for d in (principals.role_may(role, SESSION, action, arn, context=c) for c in contexts)
             if not d.allowed),
            None,
        )  # fmt: skip
        if decision is None:
            continue
        session = f"arn:aws:sts::{state.ACCOUNT_ID}:assumed-role/{role.split('/')[-1]}/{SESSION}"
        service = action.split(":")[0]
        message = policy.denial_message(session, action, arn, decision.reason)
        log.info("CloudFormation as %s: %s", role, message)
        raise AccessDenied(
            f"{message} (Service: {SERVICE_NAMES.get(service, service.capitalize())}, Status Code: 400, "
            f"Request ID: {uuid.uuid4()})"
        )


def check_as_caller(
    caller: Any, resource_type: str, operation: str, name: str, props: dict[str, Any], region: str
) -> None:
    """A stack operation given no role acts as its caller (the CloudFormation User Guide's service role page:
    "CloudFormation uses a temporary session that it generates from your user credentials"): each handler call is
    the caller's own, evaluated with its policies (a boundary included)."""
    for action, arn in calls(resource_type, operation, name, props, region):
        context = _context(resource_type, action, props, region)
        request = caller.request(action, arn, context)
        decision = policy.evaluate(request, caller.policies, None, caller.boundary)
        if decision.allowed:
            continue
        service = action.split(":")[0]
        message = policy.denial_message(caller.arn, action, arn, decision.reason)
        log.info("CloudFormation as the caller %s: %s", caller.arn, message)
        raise AccessDenied(
            f"{message} (Service: {SERVICE_NAMES.get(service, service.capitalize())}, Status Code: 400, "
            f"Request ID: {uuid.uuid4()})"
        )


@PATCHES.replace(
    Target(
        _PARSING,
        "parse_and_create_resource",
        ("logical_id", "resource_json", "resources_map", "account_id", "region_name"),
    )
)
def parse_and_create_resource(
    logical_id: str, resource_json: dict[str, Any], resources_map: Any, account_id: str, region_name: str
) -> Any:
    """moto's resource creation, authorized first as the stack's role (with the name the resource gets)."""
    from moto.cloudformation import parsing as cp

    condition = resource_json.get("Condition")
    if condition and not resources_map.lazy_condition_map[condition]:
        return None  # a false Condition: no resource
    resource_type = resource_json["Type"]
    parsed = cp.parse_resource_and_generate_name(logical_id, resource_json, resources_map)
    if not parsed:
        return None
    resource_class, resolved, physical_name = parsed
    check(resources_map, resource_type, "create", str(physical_name), resolved.get("Properties") or {})
    resource = resource_class.create_from_cloudformation_json(
        physical_name, resolved, account_id, region_name,
        LogicalId=logical_id, StackId=resources_map.stack_id, ResourceType=resource_type,
    )  # fmt: skip
    resource.cf_resource_type = resource_type
    resource.logical_resource_id = logical_id
    return resource


def _properties(resources_map: Any, resource_json: dict[str, Any]) -> dict[str, Any]:
    """The resource's properties, each ``Ref`` to a resource the stack holds read as its physical id (never by
    moto's resolver, which creates a referenced resource that is missing: during a deletion, one already gone);
    anything else left as written (a name left unresolved authorizes nothing but ``*``)."""
    props = resource_json.get("Properties")
    # during a stack's deletion, a resource deleted already is read by the physical id it had (stacks.py noted them)
    known = {**getattr(resources_map, PHYSICAL_IDS, {}), **resources_map._parsed_resources}
    return _refs_read(props, known) if isinstance(props, dict) else {}


def _refs_read(value: Any, parsed: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        if set(value) == {"Ref"} and isinstance(value["Ref"], str):
            found = parsed.get(value["Ref"])
            physical = getattr(found, "physical_resource_id", None)
            return str(physical) if physical else value
        target = value.get("Fn::GetAtt") if set(value) == {"Fn::GetAtt"} else None
        if isinstance(target, list) and len(target) == 2 and target[1] == "Arn":  # a role's ARN, passed
            arn = getattr(parsed.get(str(target[0])), "arn", None)
            return str(arn) if isinstance(arn, str) else value
        return {k: _refs_read(v, parsed) for k, v in value.items()}
    if isinstance(value, list):
        return [_refs_read(v, parsed) for v in value]
    return value


@PATCHES.replace(
    Target(_PARSING, "ResourceMap._delete_resource", ("self", "parsed_resource", "resource_json"))
)
def delete_resource(self: Any, parsed_resource: Any, resource_json: dict[str, Any]) -> None:
    """moto's resource deletion, authorized first as the stack's role."""
    name = str(getattr(parsed_resource, "physical_resource_id", "") or "")
    check(self, resource_json.get("Type", ""), "delete", name, _properties(self, resource_json))
    PATCHES.original(delete_resource)(self, parsed_resource, resource_json)


@PATCHES.replace(Target(_PARSING, "ResourceMap.delete", ("self",)))
def delete_resources(self: Any) -> None:
    """A stack's resources deleted as CloudFormation deletes them: in reverse dependency order (a policy before the
    role it is on, a bucket policy before its bucket), each one once; the first that fails stops the deletion
    (moto tried them in any order, retrying refusals as if they were dependency violations, so a role went before
    its policies and their deletion could not be authorized as it is on AWS). Retained resources are kept."""
    from local.services.cloudformation.updates import _dependency_order

    json_map = self._resource_json_map
    names = [n for n, body in json_map.items() if body.get("DeletionPolicy") != "Retain"]
    remaining = list(reversed(_dependency_order(names, json_map)))
    failure: Exception | None = None
    while remaining:  # a service's own conflict is tried again after the others, as moto did; a refusal never
        progressed, left = False, list[str]()
        for name in remaining:
            parsed = self._parsed_resources.get(name)
            if parsed is None or isinstance(parsed, str):
                progressed = True
                continue
            try:
                self._delete_resource(parsed, json_map[name])
            except AccessDenied:
                raise
            except Exception as exc:  # noqa: BLE001 - kept, tried again, raised if nothing moves
                failure, left = exc, [*left, name]
                continue
            self._parsed_resources.pop(name, None)
            progressed = True
        if not progressed and failure is not None:
            raise failure
        remaining = left


@PATCHES.replace(Target("moto.cloudformation.responses", "CloudFormationResponse.delete_stack", ("self",)))
def delete_stack_response(self: Any) -> Any:
    """DeleteStack's own RoleARN is the role the deletion acts as from then on (without one, the role the stack
    was last given: the API reference's RoleARN of DeleteStack); the caller's iam:PassRole of it is the
    middleware's."""
    role = self._get_param("RoleARN")
    if role:
        name = self._get_param("StackName")
        for stack in self.cloudformation_backend.stacks.values():
            if name in (stack.name, stack.stack_id):
                stack.role_arn = role
    return PATCHES.original(delete_stack_response)(self)


def check_update(resources_map: Any, logical_id: str, resource_json: dict[str, Any]) -> None:
    """The update of a kept resource, authorized as the stack's role (on its physical name)."""
    existing = resources_map._parsed_resources.get(logical_id)
    name = str(getattr(existing, "physical_resource_id", "") or "")
    check(
        resources_map,
        resource_json.get("Type", ""),
        "update",
        name,
        _properties(resources_map, resource_json),
    )


MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_PARSING, "parse_resource_and_generate_name", ("logical_id", "resource_json", "resources_map")),
    Target("moto.cloudformation.models", "cloudformation_backends"),
)
