"""Who makes a request: an access key resolved to an IAM user or an assumed-role session, with its policies.

Also the principals the server creates itself: the admin deployer (whose key ``doctable local env`` exports)
and the execution role sessions a function and its event-source mapping act with.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from local import auth, state
from local.auth import policy
from local.patching import Target

# The principal whose CloudFormation call the server is answering (set by the auth middleware around that call):
# a stack operation given no role acts as its caller (local/services/cloudformation/acting_role.py).
CALLER: ContextVar[Principal | None] = ContextVar("doctable_cloudformation_caller", default=None)

MOTO_TARGETS = (
    Target("moto.iam.models", "iam_backends"),
    Target("moto.iam.models", "IAMBackend.create_user"),
    Target("moto.iam.models", "IAMBackend.get_groups_for_user", ("self", "user_name")),
    Target("moto.iam.models", "AccessKey"),
    Target("moto.sts.models", "sts_backends"),
    Target("moto.s3.models", "s3_backends"),
    Target(
        "moto.sts.models",
        "STSBackend.assume_role",
        ("self", "region_name", "role_session_name", "role_arn", "policy", "duration", "external_id"),
    ),
)
ADMIN_USER = "doctable-local-deployer"
ADMIN_POLICY_ARN = "arn:aws:iam::aws:policy/AdministratorAccess"
PARTITION = "aws"


class UnknownKey(Exception):
    """The access key (or its session token) is not one the local AWS issued."""


class ExpiredSession(Exception):
    """The access key is an assumed-role session's whose expiration has passed (by the real clock)."""


@dataclass
class Principal:
    arn: str
    kind: str  # "User" or "AssumedRole"
    name: str  # the user's or the role's name
    role_arn: str | None = None
    policies: list[Any] = field(default_factory=list)  # identity policy documents (JSON strings)
    secret: str = field(default="", repr=False)  # the access key's secret, which signs its requests
    boundary: list[Any] | None = None  # the permissions boundary's document; None: the principal has none

    @property
    def aliases(self) -> tuple[str, ...]:
        return (self.role_arn,) if self.role_arn else ()

    def request(
        self, action: str, resource: str, context: dict[str, list[str]] | None = None
    ) -> policy.Request:
        ctx = {
            "aws:PrincipalArn": [self.role_arn or self.arn],
            "aws:PrincipalAccount": [state.ACCOUNT_ID],
            "aws:PrincipalType": [self.kind],
            "aws:RequestedRegion": [state.REGION],
            # One account: every resource the local AWS holds is in it.
            "aws:ResourceAccount": [state.ACCOUNT_ID],
            "s3:ResourceAccount": [state.ACCOUNT_ID],
        }
        if self.kind == "User":
            ctx["aws:username"] = [self.name]
        ctx.update(context or {})
        return policy.Request(
            principal=self.arn,
            action=action,
            resource=resource,
            context=ctx,
            principal_aliases=self.aliases,
            account=state.ACCOUNT_ID,
        )


def _iam() -> Any:
    from moto.iam.models import iam_backends

    return iam_backends[state.ACCOUNT_ID][PARTITION]


def _sts() -> Any:
    from moto.sts.models import sts_backends

    return sts_backends[state.ACCOUNT_ID][PARTITION]


def _managed_document(managed: Any) -> str:
    for version in managed.versions:
        if version.is_default:
            return str(version.document)
    return str(getattr(managed, "document", "{}"))


def boundary_arn(kind: str, name: str) -> str | None:
    """The permissions boundary policy ARN of the role or user ``name`` (``kind`` role|user), None without."""
    backend = _iam()
    found = backend.users.get(name) if kind == "user" else _role(name)
    return getattr(found, "permissions_boundary_arn", None) or None


def _boundary(arn: str | None) -> list[Any] | None:
    """The boundary's document as a one-policy list; an empty list (allowing nothing) when it is not found."""
    if not arn:
        return None
    managed = _iam().managed_policies.get(arn)
    return [] if managed is None else [_managed_document(managed)]


def _role(role_name: str) -> Any:
    return next((r for r in _iam().roles.values() if r.name == role_name), None)


def _role_policies(role_name: str) -> list[Any]:
    backend = _iam()
    for role in backend.roles.values():
        if role.name == role_name:
            docs: list[Any] = list(role.policies.values())
            docs += [_managed_document(m) for m in role.managed_policies.values()]
            return docs
    return []  # the role is gone: its sessions are allowed nothing


def _user_principal(user: Any) -> Principal:
    backend = _iam()
    docs: list[Any] = list(user.policies.values())
    docs += [_managed_document(m) for m in user.managed_policies.values()]
    for group in backend.get_groups_for_user(user.name):
        docs += list(group.policies.values())
        docs += [_managed_document(m) for m in group.managed_policies.values()]
    boundary = _boundary(getattr(user, "permissions_boundary_arn", None))
    return Principal(arn=user.arn, kind="User", name=user.name, policies=docs, boundary=boundary)


def resolve(access_key_id: str, session_token: str | None) -> Principal:
    """The principal an access key belongs to; UnknownKey when the local AWS never issued it (or revoked it)."""
    for user in _iam().users.values():
        for key in user.access_keys:
            if key.access_key_id == access_key_id:
                if key.status != "Active" or session_token:
                    raise UnknownKey(access_key_id)
                found = _user_principal(user)
                found.secret = str(key.secret_access_key)
                return found
    for session in list(_sts().assumed_roles):
        if session.access_key_id == access_key_id:
            if session_token != session.session_token:
                raise UnknownKey(access_key_id)
            # moto's expiration is naive UTC; a session is refused once it has passed
            if session.expiration < datetime.now(UTC).replace(tzinfo=None):
                raise ExpiredSession(access_key_id)
            found = session_principal(session)
            found.secret = str(session.secret_access_key)
            return found
    raise UnknownKey(access_key_id)


def session_principal(session: Any) -> Principal:
    role_name = session.role_arn.split("/")[-1]
    return Principal(
        arn=f"arn:aws:sts::{state.ACCOUNT_ID}:assumed-role/{role_name}/{session.session_name}",
        kind="AssumedRole",
        name=role_name,
        role_arn=session.role_arn,
        policies=_role_policies(role_name),
        boundary=_boundary(boundary_arn("role", role_name)),
    )


def role_principal(role_arn: str, session_name: str) -> Principal:
    """A session of ``role_arn`` as the Lambda service holds it (for the mapping's reads and writes)."""
    role_name = role_arn.split("/")[-1]
    return Principal(
        arn=f"arn:aws:sts::{state.ACCOUNT_ID}:assumed-role/{role_name}/{session_name}",
        kind="AssumedRole",
        name=role_name,
        role_arn=role_arn,
        policies=_role_policies(role_name),
        boundary=_boundary(boundary_arn("role", role_name)),
    )


def role_session(role_arn: str, session_name: str, duration: int = 43200) -> dict[str, str]:
    """Temporary credentials of ``role_arn`` (what Lambda hands a function), as environment variables."""
    session = _sts().assume_role(
        region_name=state.REGION,
        role_session_name=session_name[:64],
        role_arn=role_arn,
        policy="",
        duration=duration,
        external_id="",
    )
    return {
        "AWS_ACCESS_KEY_ID": session.access_key_id,
        "AWS_SECRET_ACCESS_KEY": session.secret_access_key,
        "AWS_SESSION_TOKEN": session.session_token,
    }


def ensure_admin_deployer(load_managed_policy: Callable[[Any, str], None]) -> None:
    """The IAM user whose key ``doctable local env`` exports, with AdministratorAccess (idempotent)."""
    from moto.iam.models import AccessKey

    backend = _iam()
    if ADMIN_USER not in backend.users:
        backend.create_user(region_name=state.REGION, user_name=ADMIN_USER, path="/", tags=[])
    user = backend.users[ADMIN_USER]
    if ADMIN_POLICY_ARN not in user.managed_policies:
        load_managed_policy(backend, ADMIN_POLICY_ARN)
        backend.attach_user_policy(ADMIN_POLICY_ARN, ADMIN_USER)
    if not any(k.access_key_id == state.ACCESS_KEY_ID for k in user.access_keys):
        key = AccessKey(ADMIN_USER, prefix="AKIA", account_id=state.ACCOUNT_ID)  # type: ignore[abstract]
        key.access_key_id = state.ACCESS_KEY_ID
        key.secret_access_key = state.SECRET_ACCESS_KEY
        user.access_keys.append(key)


def role_may(
    role_arn: str,
    session_name: str,
    action: str,
    resource: str,
    resource_policy: Any = None,
    context: dict[str, list[str]] | None = None,
) -> policy.Decision:
    """Whether a session of ``role_arn`` may act (the service acting as the role); always when IAM is off."""
    if not auth.enforced():
        return policy.Decision(True, "allowed")
    principal = role_principal(role_arn, session_name)
    request = principal.request(action, resource, {"aws:SecureTransport": ["true"], **(context or {})})
    return policy.evaluate(request, principal.policies, resource_policy, principal.boundary)


def bucket_policy(bucket: str | None) -> Any:
    """The bucket's policy document, None when it has none (or the bucket does not exist)."""
    if not bucket:
        return None
    from moto.s3.models import s3_backends

    found = s3_backends[state.ACCOUNT_ID]["aws"].buckets.get(bucket)
    raw = getattr(found, "policy", None)
    if not raw:
        return None
    return raw.decode() if isinstance(raw, bytes) else raw


def bucket_region(bucket: str | None) -> str | None:
    """The region the bucket was created in; None when there is no such bucket."""
    if not bucket:
        return None
    from moto.s3.models import s3_backends

    found = s3_backends[state.ACCOUNT_ID]["aws"].buckets.get(bucket)
    return None if found is None else str(found.region_name)


def public_access_restricted(bucket: str | None) -> bool:
    """The bucket's public access block restricts public bucket policies (RestrictPublicBuckets): anonymous
    requests are refused whatever the policy says."""
    if not bucket:
        return False
    from moto.s3.models import s3_backends

    found = s3_backends[state.ACCOUNT_ID]["aws"].buckets.get(bucket)
    block = getattr(found, "public_access_block", None)
    return str(getattr(block, "restrict_public_buckets", "false")).lower() == "true"
