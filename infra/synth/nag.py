"""cdk-nag acknowledgements: every one carries a reason specific to this project (and checkov's equivalent
check, if any, is skipped with the same reason)."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

from infra.synth.checkov import skip_nag_equivalents


def acknowledge(construct: IConstruct, rule_id: str, reason: str) -> None:
    Validations.of(construct).acknowledge(Acknowledgment(id=rule_id, reason=reason))
    skip_nag_equivalents(construct, rule_id, reason)
