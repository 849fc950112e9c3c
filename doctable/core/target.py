"""What every command acts on, and as whom: the environment (``env``), its settings file (``config``), this run's
knob overrides (``overrides``, as ``-c KNOB=VALUE`` gives them), the credentials (``profile``, ``region``) and
whether progress lines are wanted (``quiet``). The API's first parameter (doctable.api), built by the CLI from its
common arguments (doctable/cli/arguments.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from doctable.core.errors import UserError


@dataclass(frozen=True)
class Target:
    env: str | None = None  # the environment (None: DOCTABLE_ENV, else the file's default)
    config: str | None = None  # the settings file (None: $DOCTABLE_CONFIG, else doctable.toml here or above)
    overrides: Mapping[str, str] = field(
        default_factory=dict
    )  # knob -> value for this run, as `cdk -c` takes it
    profile: str | None = None  # the AWS profile (None: AWS_PROFILE, else the SDK's default chain)
    region: str | None = (
        None  # the AWS region (None: the environment's in the settings file, else AWS_REGION)
    )
    quiet: bool = False  # no progress or note lines on stderr

    def context_pairs(self) -> list[str]:
        """The overrides as ``KNOB=VALUE`` pairs, in order (what the CDK CLI's ``-c`` takes)."""
        return [f"{key}={value}" for key, value in self.overrides.items()]

    def with_overrides(self, more: Mapping[str, str]) -> Target:
        """This target with more overrides (a later one wins)."""
        return Target(
            self.env, self.config, {**self.overrides, **more}, self.profile, self.region, self.quiet
        )


def override_pair(pair: str) -> tuple[str, str]:
    """``KNOB=VALUE`` as (knob, value); one line naming the form otherwise."""
    key, sep, value = pair.partition("=")
    if not sep or not key.strip():
        raise UserError(f"-c {pair!r}: expected KNOB=VALUE, e.g. -c gsi=byStatus")
    return key.strip(), value.strip()
