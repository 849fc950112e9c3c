"""The environment's knobs: which environment a run is for, its tier (the rules its data lives by), where it is
deployed, and its provenance tags; the rule that resolves the tier and the knobs whose ``auto`` is the tier's."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from contract.knobs.consumer import BUCKET_NAMES_EXACT
from contract.knobs.declare import AUTO, OFF, ON, Knob, Problems, enum, text
from contract.knobs.naming import TABLE_BASE_RE, name_rules

PLAN_SOURCE = "doctable"
PLAN_VERSION = "2026-11-29"
MANAGED_BY = "ephemera"

# The environments the shipped settings file declares (and the ones a run without a settings file may choose):
# each is its own tier. A settings file may declare any others (ENV_NAME_RE), each with its tier.
ENV_VALUES = ("dev", "stg", "uat", "prod")
ENV_NAME_RE = re.compile(r"^[a-z][a-z0-9-]*$")
ENV_NAME_ALLOWED = "lower-case letters, digits and -, starting with a letter"
# A tier carries the rules an environment's data lives by; an environment's tier is set in the settings file only.
TIERS = ("dev", "stg", "uat", "prod")
PROD_TIER = "prod"
RETAINING_TIERS = ("uat", "prod")  # data survives a stack deletion
PROTECTED_TIERS = (PROD_TIER,)  # deletion protection: teardown needs a deliberate unlock step
PITR_TIERS = (PROD_TIER,)  # PITR is on unless set off explicitly
DEPLOY_AWS, DEPLOY_LOCAL = "aws", "local"
DEPLOY_TARGETS = (DEPLOY_AWS, DEPLOY_LOCAL)
# AWS tag rules: letters, digits, spaces and + - = . _ : / @ ; value <= 256 chars.
TAG_VALUE_RE = re.compile(r"^[\w\s+\-=.:/@]*$", re.UNICODE)
TAG_VALUE_MAX = 256


def _tag_value(problems: list[str], name: str, value: str) -> str:
    if len(value) > TAG_VALUE_MAX or not TAG_VALUE_RE.match(value) or value.lower().startswith("aws:"):
        problems.append(
            f"{name}={value!r} is not a valid AWS tag value; allowed: at most {TAG_VALUE_MAX} letters, digits, "
            "spaces and + - = . _ : / @, not starting with 'aws:'"
        )
    return value


def _check_env(problems: Problems, name: str, value: str) -> str:
    if not ENV_NAME_RE.match(value):
        problems.append(f"env={value!r} is not an environment name; allowed: {ENV_NAME_ALLOWED}")
    return value


ENV = Knob(
    "dev",
    text(f"an environment the settings file declares ({ENV_NAME_ALLOWED})", _check_env),
    "the environment: its names and the Environment tag (its tier says how its data is kept)",
    "each environment is its own stack",
    per_run=True,
)
TIER = Knob(
    AUTO,
    enum((AUTO, *TIERS)),
    "the environment's tier: deletion protection and PITR by default, RETAIN on delete and what the gate "
    "guards; set in [environments.<env>] only, never per run",
    "a change to or from prod goes through the gate; lowering prod's protections is destructive",
    per_env="auto is the environment's own name for dev, stg, uat and prod; any other environment says its tier",
    file_only=True,
)
COST_CENTER = Knob(
    "",
    text("an AWS tag value", _tag_value),
    "the CostCenter tag (dropped when empty)",
    "tags update in place",
)
OWNER = Knob(
    "", text("an AWS tag value", _tag_value), "the Owner tag (dropped when empty)", "tags update in place"
)
DEPLOY_TARGET = Knob(
    "aws",
    enum(DEPLOY_TARGETS),
    "local drops the bootstrap-version rule the local AWS cannot evaluate (doctable local env sets it)",
    "none",
    per_run=True,
)


def environment_rules(problems: Problems, raw: Mapping[str, str], values: dict[str, Any]) -> None:
    """The environment's tier, the knobs whose ``auto`` is the tier's, and the names the environment completes."""
    env = values["env"]
    if values["tier"] == AUTO:
        if env in ENV_VALUES:
            values["tier"] = env
        elif ENV_NAME_RE.match(env):
            problems.append(
                f"env={env!r} has no tier; allowed: tier = {'|'.join(repr(t) for t in TIERS)} in "
                f"[environments.{env}] (the tier carries the rules: deletion protection, PITR, RETAIN)"
            )
            values["tier"] = TIERS[0]
    if TABLE_BASE_RE.match(values["table_base"]) and ENV_NAME_RE.match(env):
        exact = values["bucket_names"] == BUCKET_NAMES_EXACT
        name_rules(problems, values["table_base"], env, values["replicas"], exact_buckets=exact)
    tier = values["tier"]
    if values["pitr"] == AUTO:
        values["pitr"] = ON if tier in PITR_TIERS else OFF
    protection = values["deletion_protection"]
    values["deletion_protection"] = tier in PROTECTED_TIERS if protection == AUTO else protection == ON
    if values["pitr_days"] is not None and values["pitr"] != ON:
        why = "pitr=off" if raw["pitr"] == OFF else f"pitr=auto is off in tier {tier} (env={env})"
        problems.append(
            f"pitr_days={values['pitr_days']} set but PITR is off ({why}) — a recovery period needs PITR: "
            "set pitr=on, or unset pitr_days (pitr_days=off)"
        )
