"""CloudFormation stack updates run as AWS runs them, and rolled back as AWS rolls them back.

- resources are created and updated in dependency order; a resource whose resolved properties changed only
  because a value it reads changed (a table's new StreamArn) is updated too;
- a change to a property that requires replacement creates the new resource first and deletes the old one in
  the cleanup phase, after every other step succeeded: old and new exist side by side, as on AWS (so a
  replaced event-source mapping on the same stream and function meets Lambda's 409); a custom-named resource
  that needs replacement (a table with a TableName whose KeySchema or LocalSecondaryIndexes change) fails with
  AWS's message, which names it by that name;
- removed resources are deleted in the cleanup phase, dependents first (``Retain`` ones are kept), and so are the
  old resources of replacements (unless their ``UpdateReplacePolicy`` is ``Retain``);
- a failed step rolls the update back: created resources are deleted, updated ones are updated back to their
  previous properties, replaced ones get their old resource back; ``UpdateFailed`` then tells the stack
  whether the rollback itself failed (``UPDATE_ROLLBACK_FAILED``, as on AWS);
- every step is a stack event of its resource (the CDK CLI's progress counts them).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from local import incidents
from local.patching import Patches, Target

log = logging.getLogger("doctable.local.cloudformation")

_PARSING = "moto.cloudformation.parsing"
PATCHES = Patches()

# Properties whose change makes CloudFormation replace the resource (its "Update requires: Replacement"),
# for the types this project deploys, and the property that names a custom-named resource. Held against each
# type's CloudFormation resource schema (createOnlyProperties) by tests/conformance/test_references.py.
REPLACING: dict[str, tuple[str, ...]] = {
    "AWS::Lambda::EventSourceMapping": (
        "EventSourceArn",
        "StartingPosition",
        "StartingPositionTimestamp",
        "SelfManagedEventSource",
    ),
    "AWS::Lambda::Alias": ("Name", "FunctionName"),
    "AWS::Lambda::Version": (
        "FunctionName",
        "Description",
        "CodeSha256",
        "ProvisionedConcurrencyConfig",
        "RuntimePolicy",
    ),
    "AWS::Lambda::Function": ("FunctionName", "PackageType", "TenancyConfig", "DurableConfig"),
    # LocalSecondaryIndexes: the User Guide's "Update requires: Replacement", which the schema does not list.
    "AWS::DynamoDB::Table": ("TableName", "KeySchema", "LocalSecondaryIndexes", "ImportSourceSpecification"),
    "AWS::DynamoDB::GlobalTable": ("TableName", "KeySchema", "LocalSecondaryIndexes", "GlobalTableSourceArn"),
    "AWS::S3::Bucket": ("BucketName", "BucketNamePrefix", "BucketNamespace"),
    "AWS::S3::BucketPolicy": ("Bucket",),
    "AWS::Logs::LogGroup": ("LogGroupName",),
    "AWS::SNS::Topic": ("TopicName", "FifoTopic"),
    "AWS::CloudWatch::Alarm": ("AlarmName",),
    "AWS::CloudWatch::Dashboard": ("DashboardName",),
    "AWS::IAM::Role": ("RoleName", "Path"),
    "AWS::IAM::ManagedPolicy": ("ManagedPolicyName", "Path", "Description"),
    # AWS::Kinesis::Stream's Name: local/services/kinesis.py replaces a renamed stream itself.
    "AWS::Kinesis::StreamConsumer": ("ConsumerName", "StreamARN", "Tags"),
}
NAME_PROPERTY = {
    "AWS::CloudWatch::Alarm": "AlarmName",
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::DynamoDB::GlobalTable": "TableName",
    "AWS::S3::Bucket": "BucketName",
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::SNS::Topic": "TopicName",
}


class UpdateFailed(Exception):
    """A stack update failed and was rolled back (``rollback_error`` set when the rollback failed too)."""

    def __init__(self, reason: str, rollback_error: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.rollback_error = rollback_error


def reason_of(exc: BaseException) -> str:
    """A resource failure's reason as CloudFormation reports the service's answer."""
    code = getattr(exc, "error_type", None) or getattr(exc, "code", None)
    message = getattr(exc, "message", None) or getattr(exc, "description", None)
    if isinstance(code, str) and isinstance(message, str) and message:
        return f'Resource handler returned message: "{message}" (HandlerErrorCode: {code.split("#")[-1]})'
    return f"{type(exc).__name__}: {exc}"


def resource_event(
    rmap: Any,
    logical: str,
    status: str,
    reason: str | None = None,
    *,
    body: dict[str, Any] | None = None,
    resource: Any = None,
) -> None:
    """Append a stack event for one resource of the stack ``rmap`` belongs to. ``body`` and ``resource``: the
    template entry and the resource when the stack no longer holds them (a removed or replaced one being
    deleted), so its event still names its type and physical id, as AWS's does."""
    from moto.cloudformation import models as cm

    stack = cm.cloudformation_backends[rmap._account_id][rmap._region_name].stacks.get(rmap.stack_id)
    if stack is None:
        return
    body = body if body is not None else rmap._resource_json_map.get(logical, {})
    resource = resource if resource is not None else rmap._parsed_resources.get(logical)
    physical = getattr(resource, "physical_resource_id", "") if resource is not None else ""
    stack.events.append(
        cm.Event(
            stack_id=stack.stack_id,
            stack_name=stack.name,
            logical_resource_id=logical,
            physical_resource_id=str(physical or ""),
            resource_type=body.get("Type", ""),
            resource_status=status,
            resource_status_reason=reason,
            resource_properties=None,
        )
    )


def _load(rmap: Any, template: dict[str, Any], parameters: dict[str, Any] | None) -> None:
    """Make ``template`` (and ``parameters``, when given) the resource map's template (a stack a CREATE change set
    made has none yet: its rollback goes back to no resources)."""
    template = template if "Resources" in template else {**template, "Resources": {}}
    rmap._template = template
    if parameters is not None:
        rmap.input_parameters = parameters
    rmap.load_mapping()
    rmap.load_parameters()
    rmap.load_conditions()
    rmap._resource_json_map = template["Resources"]


def _resolved(rmap: Any, logical: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """A resource's properties with every intrinsic resolved; None when moto cannot resolve them."""
    from moto.cloudformation import parsing as cp

    try:
        parsed = cp.parse_resource_and_generate_name(logical, dict(body), rmap)
    except Exception as exc:  # an attribute moto cannot resolve: compare the raw template instead
        incidents.record(f"cloudformation.resolve.{logical}", exc)
        return None
    return dict(parsed[1].get("Properties", {})) if parsed else None


def _delete(rmap: Any, logical: str, resource: Any, body: dict[str, Any]) -> None:
    """Delete one resource, with its DELETE_IN_PROGRESS and DELETE_COMPLETE events."""
    resource_event(rmap, logical, "DELETE_IN_PROGRESS", body=body, resource=resource)
    rmap._delete_resource(resource, body)
    resource_event(rmap, logical, "DELETE_COMPLETE", body=body, resource=resource)


@dataclass
class _Progress:
    """How far an update got: its steps (what a rollback undoes), the old resources of its replacements (what
    the cleanup phase deletes) and the resources it changed (what their dependents read)."""

    # (create | update | replace, logical id, previous resource)
    steps: list[tuple[str, str, Any]] = field(default_factory=list)
    # old resources of replacements: (logical id, resource, its template entry)
    cleanup: list[tuple[str, Any, dict[str, Any]]] = field(default_factory=list)
    changed: set[str] = field(default_factory=set)


@PATCHES.replace(Target(_PARSING, "ResourceMap.update", ("self", "template", "parameters")))
def update(self: Any, template: dict[str, Any], parameters: dict[str, Any] | None = None) -> None:
    """A stack update as AWS runs it: steps in dependency order, replacements created before their old
    resource goes, a failed step rolled back (``UpdateFailed``), then the cleanup phase."""
    actions = self.build_resource_diff(template, parameters)
    added, modified, removed = set(actions["Add"]), set(actions["Modify"]), list(actions["Remove"])
    old_template, old_json = self._template, dict(self._resource_json_map)
    old_parameters = dict(self.input_parameters or {})
    old_props = {
        name: _resolved(self, name, body)
        for name, body in old_json.items()
        if name in template["Resources"] and self._parsed_resources.get(name) is not None
    }
    _load(self, template, parameters)
    new_json = template["Resources"]
    progress = _Progress()
    current = ""
    try:
        for name in _dependency_order(list(new_json), new_json):
            current = name
            if name in added:
                _create_step(self, name, new_json[name], progress)
            else:
                _update_step(self, name, new_json[name], old_props.get(name), old_json, modified, progress)
    except Exception as exc:
        reason = reason_of(exc)
        log.warning("updating %s failed: %s", current, reason)
        failed_status = "CREATE_FAILED" if current in added else "UPDATE_FAILED"
        resource_event(self, current, failed_status, reason)
        rollback_error = _rollback(self, progress.steps, old_template, old_json, old_parameters, new_json)
        raise UpdateFailed(reason, rollback_error) from exc
    _clean_up(self, progress.cleanup, removed, old_json)


def _create_step(rmap: Any, name: str, body: dict[str, Any], progress: _Progress) -> None:
    """Create an added resource (one of a type moto cannot create, or under a false Condition, is skipped)."""
    from moto.cloudformation import parsing as cp

    if cp.resource_class_from_type(body["Type"]) is None:
        return
    resource_event(rmap, name, "CREATE_IN_PROGRESS")
    progress.steps.append(("create", name, None))
    if rmap[name] is None:  # a false Condition
        progress.steps.pop()
        return
    resource_event(rmap, name, "CREATE_COMPLETE")
    progress.changed.add(name)


def _update_step(
    rmap: Any,
    name: str,
    body: dict[str, Any],
    previous: dict[str, Any] | None,
    old_json: dict[str, Any],
    modified: set[str],
    progress: _Progress,
) -> None:
    """Update a kept resource whose template or resolved properties changed (``previous``: the old ones), in
    place or by replacement (a create-only property changed; the old resource goes in the cleanup phase)."""
    from moto.cloudformation import parsing as cp

    before = rmap._parsed_resources.get(name)
    if before is None:
        return
    reads_changed = bool(_references(body, set()) & progress.changed)
    if name not in modified and not reads_changed:
        return
    props = _resolved(rmap, name, body)
    if props is not None and previous is not None and props == previous:
        return
    forcing = [
        p
        for p in REPLACING.get(body["Type"], ())
        if props is not None and previous is not None and props.get(p) != previous.get(p)
    ]
    if forcing:
        custom_name = (props or {}).get(NAME_PROPERTY.get(body["Type"], ""))
        if custom_name is not None and custom_name == (previous or {}).get(NAME_PROPERTY[body["Type"]]):
            raise _CustomNamedReplacement(str(custom_name))
        resource_event(
            rmap,
            name,
            "UPDATE_IN_PROGRESS",
            "Requested update requires the creation of a new physical resource; hence creating one.",
        )
        progress.steps.append(("replace", name, before))
        rmap._parsed_resources.pop(name, None)
        _ = rmap[name]
        progress.cleanup.append((name, before, old_json[name]))
    else:
        resource_event(rmap, name, "UPDATE_IN_PROGRESS")
        progress.steps.append(("update", name, before))
        new = cp.parse_and_update_resource(
            name, body, rmap, account_id=rmap._account_id, region_name=rmap._region_name
        )
        if new is not None:
            rmap._parsed_resources[name] = new
    resource_event(rmap, name, "UPDATE_COMPLETE")
    progress.changed.add(name)


def _clean_up(
    rmap: Any, cleanup: list[tuple[str, Any, dict[str, Any]]], removed: list[str], old_json: dict[str, Any]
) -> None:
    """Cleanup phase: replaced and removed resources go, dependents first. A failure here is reported as the
    resource's DELETE_FAILED event; the update itself has succeeded (as on AWS)."""
    # A replaced resource whose UpdateReplacePolicy is Retain stays, outside the stack (as a removed one whose
    # DeletionPolicy is Retain does).
    doomed = [entry for entry in reversed(cleanup) if entry[2].get("UpdateReplacePolicy") != "Retain"]
    for name in reversed(_dependency_order(removed, old_json)):
        body = old_json[name]
        resource = rmap._parsed_resources.pop(name, None)
        if resource is None:
            continue
        if body.get("DeletionPolicy") == "Retain":
            continue
        doomed.append((name, resource, body))
    for name, resource, body in doomed:
        try:
            resource_event(rmap, name, "DELETE_IN_PROGRESS", body=body, resource=resource)
            rmap._delete_resource(resource, body)
            resource_event(rmap, name, "DELETE_COMPLETE", body=body, resource=resource)
        except Exception as exc:
            log.warning("cleanup of %s failed: %s", name, exc)
            resource_event(rmap, name, "DELETE_FAILED", reason_of(exc), body=body, resource=resource)


def _rollback(
    self: Any,
    steps: list[tuple[str, str, Any]],
    old_template: dict[str, Any],
    old_json: dict[str, Any],
    old_parameters: dict[str, Any],
    new_json: dict[str, Any],
) -> str | None:
    """Undo ``steps`` in reverse; the first rollback failure's reason, None when all were undone."""
    from moto.cloudformation import parsing as cp

    fresh = {name: self._parsed_resources.get(name) for kind, name, _ in steps if kind == "replace"}
    _load(self, old_template, old_parameters)
    for kind, name, before in steps:
        if kind == "replace":  # the old resource is what the stack has again
            self._parsed_resources[name] = before
    error: str | None = None
    for kind, name, _before in reversed(steps):
        try:
            if kind == "create":
                if not old_json and new_json[name].get("DeletionPolicy") == "Retain":
                    continue  # a failed stack creation keeps what it created with Retain
                resource = self._parsed_resources.pop(name, None)
                if resource is not None:
                    _delete(self, name, resource, new_json[name])
            elif kind == "replace":
                resource = fresh.get(name)
                if resource is not None:
                    _delete(self, name, resource, new_json[name])
            else:
                resource_event(self, name, "UPDATE_IN_PROGRESS")
                restored = cp.parse_and_update_resource(
                    name, old_json[name], self, account_id=self._account_id, region_name=self._region_name
                )
                if restored is not None:
                    self._parsed_resources[name] = restored
                resource_event(self, name, "UPDATE_COMPLETE")
        except Exception as exc:
            reason = reason_of(exc)
            log.warning("rolling back %s failed: %s", name, reason)
            resource_event(self, name, "UPDATE_FAILED", reason)
            error = error or reason
    return error


class _CustomNamedReplacement(Exception):
    """AWS's refusal, naming the resource by its custom (physical) name."""

    def __init__(self, custom_name: str):
        super().__init__(
            "CloudFormation cannot update a stack when a custom-named resource requires replacing. "
            f"Rename {custom_name} and update the stack again."
        )


def _references(node: Any, found: set[str]) -> set[str]:
    import re

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
            elif key == "DependsOn":
                found.update([value] if isinstance(value, str) else value)
            else:
                _references(value, found)
    elif isinstance(node, list):
        for item in node:
            _references(item, found)
    return found


def _dependency_order(names: list[str], resources: dict[str, Any]) -> list[str]:
    """``names`` ordered so that every resource comes after the ones (among ``names``) it refers to."""
    wanted = set(names)
    deps = {name: (_references(resources[name], set()) & wanted) - {name} for name in names}
    ordered: list[str] = []
    done: set[str] = set()
    for name in names:
        _visit(name, set(), deps, done, ordered)
    return ordered


def _visit(name: str, path: set[str], deps: dict[str, set[str]], done: set[str], ordered: list[str]) -> None:
    """Append ``name`` to ``ordered`` after its dependencies (depth first; ``path`` breaks cycles)."""
    if name in done or name in path:
        return
    path.add(name)
    for dep in sorted(deps[name]):
        _visit(dep, path, deps, done, ordered)
    path.discard(name)
    done.add(name)
    ordered.append(name)


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_PARSING, "ResourceMap.build_resource_diff", ("self", "other_template", "parameters")),
    Target(_PARSING, "ResourceMap._delete_resource", ("self", "parsed_resource", "resource_json")),
    Target(_PARSING, "ResourceMap.load_mapping", ("self",)),
    Target(_PARSING, "ResourceMap.load_parameters", ("self",)),
    Target(_PARSING, "ResourceMap.load_conditions", ("self",)),
    Target(_PARSING, "parse_resource_and_generate_name", ("logical_id", "resource_json", "resources_map")),
    Target(_PARSING, "parse_and_update_resource"),
    Target("moto.cloudformation.models", "Event"),
    Target("moto.cloudformation.models", "cloudformation_backends"),
)
