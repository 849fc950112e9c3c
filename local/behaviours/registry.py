"""A behaviour of the local AWS as the registry keeps it (local/behaviours/__init__.py says what it is for)."""

from __future__ import annotations

import re
from dataclasses import dataclass

DDB_API = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/"
DDB_GUIDE = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
CFN_GUIDE = "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/"
CFN_TEMPLATES = "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
S3_GUIDE = "https://docs.aws.amazon.com/AmazonS3/latest/userguide/"
LAMBDA_GUIDE = "https://docs.aws.amazon.com/lambda/latest/dg/"
IAM_GUIDE = "https://docs.aws.amazon.com/IAM/latest/UserGuide/"
CW_API = "https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/"


@dataclass(frozen=True)
class Behaviour:
    id: str
    service: str
    rule: str  # AWS's behaviour, one line
    source: str  # the AWS page (and section) or schema that says so
    test: str  # the test that proves the local AWS does it: tests/<path>.py::<test function>
    # the moto internals it replaces, "<module>:<attribute path>" as local/ declares them (MOTO_TARGETS)
    targets: tuple[str, ...] = ()
    differs: tuple[str, ...] = ()  # difference keys from plain moto it explains (glob patterns)
    errors: tuple[tuple[str, str], ...] = ()  # ("<service>:<Operation>", error code) it answers
    replaces: tuple[tuple[str, str], ...] = ()  # (resource type, property) whose change replaces the resource
    actions: tuple[str, ...] = ()  # IAM actions it evaluates
    condition_keys: tuple[tuple[str, str], ...] = ()  # (action, condition key) it evaluates
    unchecked: str = ""  # why no independent reference can check it

    def explains(self, difference: str) -> bool:
        """Whether one of ``differs`` matches ``difference`` (``*`` matches any text; nothing else is special)."""
        return any(matches(pattern, difference) for pattern in self.differs)

    @property
    def references(self) -> tuple[str, ...]:
        """The independent references that check this behaviour."""
        found = []
        if self.differs:
            found.append("moto")
        if self.errors:
            found.append("botocore")
        if self.replaces:
            found.append("schema")
        if self.actions or self.condition_keys:
            found.append("sar")
        return tuple(found)


def matches(pattern: str, difference: str) -> bool:
    """A ``differs`` pattern against a difference key: ``*`` matches any text, every other character itself."""
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), difference) is not None
