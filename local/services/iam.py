"""IAM: roles attach ManagedPolicyArns (AWS managed policies loaded on demand) and update their policies in place.

CloudFormation detaches a role's managed policies before deleting it, and a managed policy updates in place
(a new default version, its role attachments) instead of being replaced.
"""

from __future__ import annotations

import json
from typing import Any

from local.patching import Patches, Target, replace

_MODELS = "moto.iam.models"
PATCHES = Patches()


@PATCHES.replace(Target(_MODELS, "IAMBackend.attach_role_policy", ("self", "policy_arn", "role_name")))
def attach_role_policy(self: Any, policy_arn: str, role_name: str) -> None:
    """Attaching an AWS managed policy loads it first (moto knows none unless told to load them all)."""
    ensure_aws_managed_policy(self, policy_arn)
    PATCHES.original(attach_role_policy)(self, policy_arn, role_name)


@PATCHES.replace(Target(_MODELS, "Role.create_from_cloudformation_json"), wrap=classmethod)
def create_role(
    cls: Any,
    resource_name: str,
    cloudformation_json: dict[str, Any],
    account_id: str,
    region_name: str,
    **kw: Any,
) -> Any:
    """A template's role attaches its ManagedPolicyArns."""
    from moto.iam import models as im
    from moto.utilities.utils import get_partition

    role = PATCHES.original(create_role)(
        cls, resource_name, cloudformation_json, account_id, region_name, **kw
    )
    backend = im.iam_backends[account_id][get_partition(region_name)]
    for arn in cloudformation_json["Properties"].get("ManagedPolicyArns", []) or []:
        backend.attach_role_policy(arn, role.name)
    _declared(role, cloudformation_json["Properties"])
    return role


def _declared(role: Any, properties: dict[str, Any]) -> None:
    """What the role's own properties put on it (its Policies, its ManagedPolicyArns): all an update of the role
    may take off again. An AWS::IAM::Policy or ManagedPolicy resource's attachment is that resource's."""
    role.doctable_declared = (
        {p["PolicyName"] for p in properties.get("Policies", []) or []},
        set(properties.get("ManagedPolicyArns", []) or []),
    )


@PATCHES.replace(Target(_MODELS, "Role.update_from_cloudformation_json"), wrap=classmethod)
def update_role(
    cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
    account_id: str, region_name: str,
) -> Any:  # fmt: skip
    """An updated template's role changes its description, session duration, trust policy, inline and managed
    policies in place; a new RoleName replaces it."""
    from moto.iam import models as im
    from moto.utilities.utils import get_partition

    properties = cloudformation_json["Properties"]
    backend = im.iam_backends[account_id][get_partition(region_name)]
    role = original_resource
    if properties.get("RoleName") and properties["RoleName"] != role.name:
        new = cls.create_from_cloudformation_json(
            new_resource_name, cloudformation_json, account_id, region_name
        )
        cls.delete_from_cloudformation_json(role.name, cloudformation_json, account_id, region_name)
        return new
    role.description = properties.get("Description", "")
    role.max_session_duration = properties.get("MaxSessionDuration", 3600)
    document = properties.get("AssumeRolePolicyDocument")
    if document is not None:
        role.assume_role_policy_document = document if isinstance(document, str) else json.dumps(document)
    wanted = {p["PolicyName"]: p["PolicyDocument"] for p in properties.get("Policies", []) or []}
    # only what the role's own properties had put on it comes off (the other resources' attachments stay, as
    # on AWS: moto's update had removed an AWS::IAM::Policy's inline policy from the role it names)
    declared_names, declared_arns = getattr(role, "doctable_declared", (set(wanted), set()))
    for name in list(role.policies):
        if name in declared_names and name not in wanted:
            role.delete_policy(name)
    for name, doc in wanted.items():
        role.put_policy(name, doc if isinstance(doc, str) else json.dumps(doc))
    attached = set(role.managed_policies)
    wanted_arns = set(properties.get("ManagedPolicyArns", []) or [])
    for arn in (attached & declared_arns) - wanted_arns:
        backend.detach_role_policy(arn, role.name)
    for arn in wanted_arns - attached:
        backend.attach_role_policy(arn, role.name)
    _declared(role, properties)
    return role


@PATCHES.replace(Target(_MODELS, "Role.delete_from_cloudformation_json"), wrap=classmethod)
def delete_role(
    cls: Any, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
) -> None:
    """A template's role is deleted with its managed policies detached and its inline ones deleted first."""
    from moto.iam import models as im
    from moto.utilities.utils import get_partition

    # CloudFormation detaches the role's managed policies and deletes its inline ones (those put outside the
    # template too) before deleting it (moto refused: DeleteConflict).
    backend = im.iam_backends[account_id][get_partition(region_name)]
    for role in list(backend.roles.values()):
        if role.name == resource_name:
            for arn in list(role.managed_policies):
                backend.detach_role_policy(arn, role.name)
            for name in list(role.policies):
                role.delete_policy(name)
    PATCHES.original(delete_role)(cls, resource_name, cloudformation_json, account_id, region_name)


@PATCHES.replace(Target(_MODELS, "ManagedPolicy.update_from_cloudformation_json"), wrap=classmethod)
def update_managed_policy(
    cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
    account_id: str, region_name: str,
) -> Any:  # fmt: skip
    """An updated template's managed policy gets a new default version and its role attachments in place; a
    new ManagedPolicyName replaces it."""
    from moto.iam import models as im
    from moto.utilities.utils import get_partition

    properties = cloudformation_json.get("Properties", {})
    backend = im.iam_backends[account_id][get_partition(region_name)]
    policy = original_resource
    name = properties.get("ManagedPolicyName")
    if name and name != policy.name:
        new = cls.create_from_cloudformation_json(
            new_resource_name, cloudformation_json, account_id, region_name
        )
        return new
    document = json.dumps(properties.get("PolicyDocument"))
    if document != next((v.document for v in policy.versions if v.is_default), None):
        if len(policy.versions) >= 5:
            for version in list(policy.versions):
                if not version.is_default:
                    backend.delete_policy_version(policy.arn, version.version_id)
                    break
        backend.create_policy_version(policy.arn, document, True)
    attached_roles = {r.name for r in backend.roles.values() if policy.arn in r.managed_policies}
    wanted_roles = set(properties.get("Roles", []) or [])
    for role_name in attached_roles - wanted_roles:
        backend.detach_role_policy(policy.arn, role_name)
    for role_name in wanted_roles - attached_roles:
        backend.attach_role_policy(policy.arn, role_name)
    return policy


def delete_managed_policy(self: Any, account_id: str, region_name: str) -> None:
    """A template's managed policy is deleted with its roles detached and its other versions deleted first."""
    from moto.iam import models as im
    from moto.utilities.utils import get_partition

    backend = im.iam_backends[account_id][get_partition(region_name)]
    for role in list(backend.roles.values()):
        if self.arn in role.managed_policies:
            backend.detach_role_policy(self.arn, role.name)
    for version in list(self.versions):
        if not version.is_default:
            backend.delete_policy_version(self.arn, version.version_id)
    backend.delete_policy(self.arn)


@PATCHES.on_install
def _add_managed_policy_delete() -> None:
    """A stack's managed policy is deleted with the stack: ManagedPolicy gets the ``delete`` moto's
    CloudFormation calls (moto's has neither it nor delete_from_cloudformation_json: the policy stayed)."""
    from moto.iam import models as im

    # moto 5.2.5's ManagedPolicy has no ``delete`` attribute: a Target could not name it, so it is added here.
    replace(im.ManagedPolicy, "delete", delete_managed_policy)


def ensure_aws_managed_policy(backend: Any, policy_arn: str) -> None:
    """Load one AWS managed policy on demand (moto loads none unless MOTO_IAM_LOAD_MANAGED_POLICIES)."""
    if policy_arn in backend.managed_policies or ":iam::aws:policy/" not in policy_arn:
        return
    from moto.iam import models as im
    from moto.iam.aws_managed_policies import aws_managed_policies_data

    data = _aws_policies(aws_managed_policies_data)
    name = policy_arn.rsplit("/", 1)[1]
    if name in data:
        policy = im.AWSManagedPolicy.from_data(name, backend.account_id, backend.region_name, data[name])
        backend.managed_policies[policy.arn] = policy


_AWS_POLICIES: dict[str, Any] | None = None


def _aws_policies(raw: str) -> dict[str, Any]:
    global _AWS_POLICIES
    if _AWS_POLICIES is None:
        _AWS_POLICIES = json.loads(raw)
    return _AWS_POLICIES


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_MODELS, "IAMBackend.detach_role_policy", ("self", "policy_arn", "role_name")),
    Target(
        _MODELS,
        "IAMBackend.create_policy_version",
        ("self", "policy_arn", "policy_document", "set_as_default"),
    ),
    Target(_MODELS, "IAMBackend.delete_policy_version", ("self", "policy_arn", "version_id")),
    Target(_MODELS, "ManagedPolicy.create_from_cloudformation_json"),
    Target(_MODELS, "AWSManagedPolicy.from_data"),
    Target(_MODELS, "iam_backends"),
    Target("moto.iam.aws_managed_policies", "aws_managed_policies_data"),
)
