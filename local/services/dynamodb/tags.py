"""A DynamoDB table's tags as DynamoDB checks and keeps them (TagResource, UntagResource, ListTagsOfResource, and
CreateTable's Tags).

The ResourceArn is an ARN ("One or more parameter values were invalid: ARNs must start with 'arn:': <arn>"), a
table's (an index's is "... only table or stream is accepted"), of a table that exists ("Requested resource not
found: ResourceArn: <arn> not found"). A tag key is 1 to 128 characters, a value up to 256, both of letters,
digits, spaces and ``+ - = . _ : / @`` only ("The Tag Key provided is invalid, Key: <key>", "The Tag Value provided
is invalid, Value: <value>", ``null`` when missing); a key never begins with ``aws:``; a request names a key once
and at least one tag or key; a table holds at most 50 tags ("Number of Tags exceed the current limit for the
provided ResourceArn"); tagging a key the table has replaces its value; ListTagsOfResource answers them all at
once. A refused request changes nothing. moto accepted any of these, appended a second tag of a key already
there, tagged nothing silently for an ARN it did not know, and listed ten tags a page. Sources: the developer guide's "Tagging restrictions" (Tagging.html) and a public catalogue of live
DynamoDB probes (ack-api-quirks, 2026-10-09: the messages; local/README.md names it).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from local.patching import Patches, Target
from local.services.dynamodb import not_found, validation

PATCHES = Patches()
_RESPONSES = "moto.dynamodb.responses"
_EXCEPTIONS = "moto.dynamodb.exceptions"
TAGS_MAX = 50
KEY_MAX, VALUE_MAX = 128, 256
NOT_ARN = "One or more parameter values were invalid: ARNs must start with 'arn:': {arn}"
NOT_TABLE = (
    "One or more parameter values were invalid: Invalid resource arn provided, only table or stream is accepted. "
    "Provided resource arn: {arn}"
)
BAD_ARN = "Invalid TableArn: Invalid ResourceArn provided as input {arn}"
NOT_FOUND = "Requested resource not found: ResourceArn: {arn} not found"
BAD_KEY = "The Tag Key provided is invalid, Key: {key}"
BAD_VALUE = "The Tag Value provided is invalid, Value: {value}"
AWS_PREFIX = "Tag Key cannot be prefixed with aws:, Key: {key}"
DUPLICATE = "Duplicate Tag Keys provided as input: Duplicate Tag Key found {key}"
NO_TAGS = "Atleast one Tag needs to be provided as Input."
NO_KEYS = "Atleast one Tag Key needs to be provided as Input."
TOO_MANY = "Number of Tags exceed the current limit for the provided ResourceArn"
_TABLE_ARN = re.compile(
    r"^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:\d{12}:table/[A-Za-z0-9_.-]{3,255}(?P<rest>/.*)?$"
)
_PUNCTUATION = set("+-=._:/@")


def _allowed(text: str) -> bool:
    return all(c in _PUNCTUATION or unicodedata.category(c)[0] in "LZN" for c in text)


def check_tags(tags: Any) -> dict[str, str]:
    """The tags of a TagResource or CreateTable as {key: value}, or DynamoDB's ValidationException."""
    if not isinstance(tags, list) or not tags:
        raise validation(NO_TAGS)
    found: dict[str, str] = {}
    for tag in tags:
        key = tag.get("Key") if isinstance(tag, dict) else None
        value = tag.get("Value") if isinstance(tag, dict) else None
        if not isinstance(key, str) or not key or len(key) > KEY_MAX or not _allowed(key):
            raise validation(BAD_KEY.format(key="null" if key is None else key))
        if key.startswith("aws:"):
            raise validation(AWS_PREFIX.format(key=key))
        if not isinstance(value, str) or len(value) > VALUE_MAX or not _allowed(value):
            raise validation(BAD_VALUE.format(value="null" if value is None else value))
        if key in found:
            raise validation(DUPLICATE.format(key=key))
        found[key] = value
    return found


def table_of(backend: Any, arn: Any) -> Any:
    """The table a tag request's ResourceArn names, or DynamoDB's refusal of the ARN."""
    text = str(arn)
    if not text.startswith("arn:"):
        raise validation(NOT_ARN.format(arn=text))
    shape = _TABLE_ARN.match(text)
    if shape is None:
        raise validation(BAD_ARN.format(arn=text))
    rest = shape["rest"] or ""
    if rest and not rest.startswith("/stream/"):
        raise validation(NOT_TABLE.format(arn=text))
    for table in backend.tables.values():
        if table.table_arn == text:
            return table
    raise not_found(NOT_FOUND.format(arn=text))


@PATCHES.replace(Target(_RESPONSES, "DynamoHandler.tag_resource", ("self",)))
def tag_resource(self: Any) -> Any:
    """TagResource: the ARN and every tag checked, then the tags merged (a key's value replaced), at most 50."""
    table = table_of(self.dynamodb_backend, self.body.get("ResourceArn"))
    merged = {t["Key"]: t["Value"] for t in table.tags}
    merged.update(check_tags(self.body.get("Tags")))
    if len(merged) > TAGS_MAX:
        raise validation(TOO_MANY)
    table.tags = [{"Key": k, "Value": v} for k, v in merged.items()]
    return ""  # DynamoDB answers TagResource and UntagResource with an empty body (moto: "{}")


@PATCHES.replace(Target(_RESPONSES, "DynamoHandler.untag_resource", ("self",)))
def untag_resource(self: Any) -> Any:
    """UntagResource: the ARN and the keys checked (at least one, at most 50), then those tags removed."""
    keys = self.body.get("TagKeys")
    table = table_of(self.dynamodb_backend, self.body.get("ResourceArn"))
    if not isinstance(keys, list) or not keys:
        raise validation(NO_KEYS)
    if len(keys) > TAGS_MAX:
        raise validation(TOO_MANY)
    for key in keys:
        if not isinstance(key, str) or not key or len(key) > KEY_MAX:
            raise validation(BAD_KEY.format(key="null" if key is None else key))
    table.tags = [tag for tag in table.tags if tag["Key"] not in keys]
    return ""


@PATCHES.replace(Target(_RESPONSES, "DynamoHandler.list_tags_of_resource", ("self",)))
def list_tags_of_resource(self: Any) -> Any:
    """ListTagsOfResource: the ARN checked as TagResource checks it, then every tag in one answer (a table holds
    at most 50; moto answered ten at a time)."""
    from moto.core.responses import ActionResult

    table = table_of(self.dynamodb_backend, self.body.get("ResourceArn"))
    return ActionResult({"Tags": list(table.tags)})


def create_table_refusal(body: dict[str, Any]) -> str | None:
    """Why DynamoDB refuses a CreateTable's Tags (checked as TagResource's, at most 50), or None."""
    from moto.dynamodb.exceptions import DynamodbException

    if not body.get("Tags"):
        return None
    try:
        if len(check_tags(body["Tags"])) > TAGS_MAX:
            return TOO_MANY
    except DynamodbException as refused:  # the ValidationException of a tag
        return str(refused.message)
    return None


MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_EXCEPTIONS, "DynamodbException"),
    Target(_EXCEPTIONS, "MockValidationException"),
    Target(_EXCEPTIONS, "ResourceNotFoundException"),
    Target("moto.core.responses", "ActionResult"),
)
