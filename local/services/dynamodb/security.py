"""DynamoDB encryption at rest and resource-based policies as AWS keeps them, through the API and CloudFormation.

moto 5.2.5 stores ``SSESpecification`` as given: a template's (``SSEEnabled``/``SSEType``/``KMSMasterKeyId``)
never shows in DescribeTable, a key id or alias is reported as the key's ARN field, UpdateTable drops it and a
CloudFormation update never changes it. Here every form is kept as the API's (``Enabled``, ``SSEType`` KMS, the
key's ARN), so DescribeTable reports ``SSEDescription`` (Status ENABLED, SSEType KMS, KMSMasterKeyArn) for an
AWS managed key (``alias/aws/dynamodb``, created on first use with KeyManager AWS) or a customer managed one,
and nothing for the AWS owned key, as AWS does; an unknown key is refused with AWS's ValidationException.
A table's ``ResourcePolicy`` in a template is put, replaced and removed with the stack; a deleted table's
policy goes with it; DeleteResourcePolicy of a table without one is PolicyNotFoundException, as on AWS.

UpdateTable and DeleteTable are owned by options.py and tables.py, which call this module's steps (``keep_sse``,
``forget_policy``) in their order.
"""

from __future__ import annotations

import json
from typing import Any

from local.patching import Patches, Target, replace, truthy

SSE_KMS = "KMS"
DYNAMODB_ALIAS = "alias/aws/dynamodb"
POLICY_NOT_FOUND = "Resource-based policy not found for the provided ResourceArn: {arn}"

_TABLE = "moto.dynamodb.models.table"
_MODELS = "moto.dynamodb.models"
PATCHES = Patches()


# ---------------------------------------------------------------------------------------------- encryption
def normalized_sse(spec: dict[str, Any] | None, account_id: str, region: str) -> dict[str, Any] | None:
    """The API form of an SSESpecification (API or template form); None for the AWS owned key."""
    if not spec:
        return None
    enabled = spec.get("Enabled", spec.get("SSEEnabled"))
    if not truthy(enabled):
        return None
    key = spec.get("KMSMasterKeyId") or _aws_managed_key(account_id, region)
    return {"Enabled": True, "SSEType": SSE_KMS, "KMSMasterKeyId": _key_arn(str(key), account_id, region)}


def _kms(account_id: str, region: str) -> Any:
    from moto.kms.models import kms_backends

    return kms_backends[account_id][region]


def _key_arn(key: str, account_id: str, region: str) -> str:
    """The ARN of a key named by id, ARN, alias or alias ARN; AWS's ValidationException when it does not exist."""
    from moto.dynamodb.exceptions import MockValidationException
    from moto.kms.exceptions import NotFoundException
    from moto.kms.exceptions import ValidationException as KmsValidation

    backend = _kms(account_id, region)
    try:
        alias = backend.get_alias_name(key)
        if alias.startswith("alias/") and backend.get_key_id_from_alias(alias) is None:
            raise NotFoundException(key)  # moto's describe_key fails on an alias that names no key
        return str(backend.describe_key(key).arn)
    except (NotFoundException, KmsValidation, KeyError):  # moto: KeyError for an unknown key id
        raise MockValidationException(f"KMS key {key} does not exist or is not accessible") from None


def _aws_managed_key(account_id: str, region: str) -> str:
    """``alias/aws/dynamodb``: created on first use, as AWS creates an AWS managed key, with KeyManager AWS."""
    kms = _kms(account_id, region)
    if not kms.alias_exists(DYNAMODB_ALIAS):
        key = kms.create_key(
            policy="",
            key_usage="ENCRYPT_DECRYPT",
            key_spec="SYMMETRIC_DEFAULT",
            description="Default key that protects my DynamoDB data when no other key is defined",
            tags=None,
        )
        key.key_manager = "AWS"
        kms.create_alias(key.id, DYNAMODB_ALIAS)
    return str(kms.describe_key(DYNAMODB_ALIAS).arn)


def _get_sse(self: Any) -> dict[str, Any] | None:
    """The table's SSESpecification, in the API's form."""
    return self.__dict__.get("_doctable_sse")


def _set_sse(self: Any, spec: dict[str, Any] | None) -> None:
    """Store an SSESpecification (API or template form) in the API's form."""
    self.__dict__["_doctable_sse"] = normalized_sse(spec, self.account_id, self.region_name)


@PATCHES.on_install
def _keep_sse_as_the_api() -> None:
    """Table.sse_specification: the API's form of an SSESpecification, whatever form it was given in."""
    from moto.dynamodb.models.table import Table

    # A property, so moto's constructor, a template and UpdateTable all store the API's form. moto's Table sets
    # it as an instance attribute: the class has none for a Target to name.
    replace(Table, "sse_specification", property(_get_sse, _set_sse))


@PATCHES.replace(Target(_TABLE, "Table._get_default_encryption_key", ("self", "account_id", "region")))
def _get_default_encryption_key(self: Any, account_id: str, region: str) -> str:
    """A table encrypted without a key names the AWS managed key (``alias/aws/dynamodb``), made on first use."""
    return _aws_managed_key(account_id, region)


def keep_sse(handler: Any) -> None:
    """UpdateTable's step (options.py owns the handler): it keeps an SSESpecification (moto dropped it), in the
    API's form."""
    spec = handler.body.get("SSESpecification")
    if spec is not None:
        table = handler.dynamodb_backend.get_table(handler.body["TableName"])
        table.sse_specification = spec


def apply_template(table: Any, properties: dict[str, Any]) -> None:
    """A template's SSESpecification and ResourcePolicy on a created or updated table (absent: removed)."""
    from moto.dynamodb.models import dynamodb_backends

    table.sse_specification = properties.get("SSESpecification")
    backend = dynamodb_backends[table.account_id][table.region_name]
    document = (properties.get("ResourcePolicy") or {}).get("PolicyDocument")
    if document:
        text = document if isinstance(document, str) else json.dumps(document)
        backend.put_resource_policy(table.table_arn, text, None)
    else:
        backend.resource_policies.pop(table.table_arn, None)


# ------------------------------------------------------------------------------------------------ policies
def forget_policy(backend: Any, deleted: Any) -> None:
    """DeleteTable's step (tables.py owns it), once the table is deleted: its resource policy goes with it."""
    backend.resource_policies.pop(getattr(deleted, "table_arn", ""), None)


@PATCHES.replace(
    Target(
        _MODELS, "DynamoDBBackend.delete_resource_policy", ("self", "resource_arn", "expected_revision_id")
    )
)
def delete_resource_policy(self: Any, resource_arn: str, expected_revision_id: str | None) -> None:
    """DeleteResourcePolicy of a table without one is PolicyNotFoundException, as on AWS."""
    from moto.dynamodb.exceptions import PolicyNotFoundException

    table_name = resource_arn.split("/")[-1]
    if table_name in self.tables and resource_arn not in self.resource_policies:
        raise PolicyNotFoundException(POLICY_NOT_FOUND.format(arn=resource_arn))
    PATCHES.original(delete_resource_policy)(self, resource_arn, expected_revision_id)


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target("moto.dynamodb.responses", "DynamoHandler.dynamodb_backend"),
    Target(_MODELS, "DynamoDBBackend.put_resource_policy", ("self", "resource_arn", "policy_doc")),
    Target("moto.dynamodb.exceptions", "PolicyNotFoundException"),
    Target("moto.kms.models", "KmsBackend.describe_key", ("self", "key_id")),
    Target("moto.kms.models", "KmsBackend.get_alias_name", ("alias_name",)),
    Target("moto.kms.models", "KmsBackend.get_key_id_from_alias", ("self", "alias_name")),
    Target("moto.kms.exceptions", "NotFoundException"),
    Target("moto.kms.exceptions", "ValidationException"),
)
