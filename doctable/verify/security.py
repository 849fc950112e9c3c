"""verify's rows for encryption at rest and the table's resource policy: what each expects from the knobs, and the
check of the live value (DescribeTable's SSEDescription, KMS's key rotation, GetResourcePolicy)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from contract import names, policy_doc
from doctable.capabilities.table_security import AWS_OWNED_TEXT, declared_policy, live_encryption, live_policy
from doctable.verify.record import CheckFailed

if TYPE_CHECKING:
    from contract.shape import EncryptionShape
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment

AWS_MANAGED_TEXT = "KMS, AWS managed key (KeyManager AWS)"
NO_POLICY = "none"


def expected_encryption(shape: EncryptionShape) -> str:
    if shape.sse_type is None:
        return AWS_OWNED_TEXT
    if not shape.customer_managed:
        return AWS_MANAGED_TEXT
    key = shape.borrowed_key_arn or f"the stack's {names.OUT_KMS_KEY_ARN}"
    rotation = "" if shape.borrowed_key_arn else ", rotation on"
    return f"KMS, customer managed key = {key}{rotation}"


def expected_policy(shape: EncryptionShape) -> str:
    return f"= {shape.resource_policy_path}" if shape.resource_policy_path else NO_POLICY


def security_rows(shape: EncryptionShape) -> list[tuple[str, str, str]]:
    """(row id, check, expected), in the order verify runs them."""
    return [
        ("encryption", "encryption at rest as declared", expected_encryption(shape)),
        ("resource-policy", "table resource policy as declared", expected_policy(shape)),
    ]


def security_checks(
    aws: Aws,
    shape: EncryptionShape | None,
    describe: Callable[[], dict[str, Any]],
    deployment: Deployment,
) -> dict[str, Callable[[], str]]:
    """Row id -> its check: returns the observed value, raises ``CheckFailed(observed)`` when it differs."""
    if shape is None:
        return {}
    outputs = deployment.out

    def encryption() -> str:
        observed, key, manager = live_encryption(aws, describe())
        if shape.sse_type is None:
            ok = key is None
        elif not shape.customer_managed:
            ok = manager == "AWS"
        else:
            ok = manager != "AWS" and key == (shape.borrowed_key_arn or outputs(names.OUT_KMS_KEY_ARN))
            if ok and not shape.borrowed_key_arn and key:
                rotating = aws.client("kms").get_key_rotation_status(KeyId=key).get("KeyRotationEnabled")
                observed += ", rotation on" if rotating else ", rotation OFF"
                ok = bool(rotating)
        if not ok:
            raise CheckFailed(observed)
        return observed

    def resource_policy() -> str:
        table_arn = str(describe()["TableArn"])
        text = live_policy(aws.client("dynamodb"), table_arn)
        if shape.resource_policy_path is None:
            if text is not None:
                raise CheckFailed(f"a policy of {len(policy_doc.canonical(text))} statement(s)")
            return NO_POLICY
        if text is None:
            raise CheckFailed(NO_POLICY)
        declared = declared_policy(shape.resource_policy_path, table_arn)
        live = policy_doc.canonical(text)
        if live != policy_doc.canonical(declared):
            raise CheckFailed(f"a different policy ({', '.join(s['Sid'] or '?' for s in live)})")
        return f"= {shape.resource_policy_path} ({len(live)} statements)"

    return {"encryption": encryption, "resource-policy": resource_policy}
