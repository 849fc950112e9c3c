"""cdk-nag acknowledgements: every one carries a reason specific to this project."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct


def acknowledge(construct: IConstruct, rule_id: str, reason: str) -> None:
    Validations.of(construct).acknowledge(Acknowledgment(id=rule_id, reason=reason))
