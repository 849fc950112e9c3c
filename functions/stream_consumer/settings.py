"""Typed settings read from the environment, validated once at cold start (the rules: docs/consumer.md)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from .constants import (
    ENV_BLOB_BUCKET,
    ENV_BLOB_CLEANUP,
    ENV_BLOB_KEY_REUSE,
    ENV_BLOB_PREFIX_CLEANUP,
    ENV_BLOB_ROOT,
    ENV_ENVIRONMENT,
    ENV_FLAG_OFF,
    ENV_FLAG_ON,
    ENV_TABLE_NAME,
)

# The same rules as the stack's knobs (tests/unit/test_consumer_contract.py checks that they agree): S3's bucket
# naming rules, and a root of safe key characters, so that no configured root can be ambiguous.
_BUCKET_NAME = re.compile(r"^(?!xn--)(?!sthree-)(?!.*\.\.)(?!.*-s3alias$)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_TABLE_NAME = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")
_BLOB_ROOT = re.compile(r"^([A-Za-z0-9!_.*'()-]+/)*$")


class SettingsError(ValueError):
    """An environment variable is missing or has a value outside its contract."""

    def __init__(self, variable: str, value: str | None, allowed: str) -> None:
        shown = "<unset>" if value is None else repr(value)
        super().__init__(f"invalid environment variable {variable}={shown}: {allowed}")
        self.variable = variable
        self.value = value


@dataclass(frozen=True)
class Settings:
    blob_bucket: str
    blob_root: str = ""
    prefix_cleanup: bool = False
    table_name: str = ""
    environment: str | None = None
    guard_key_reuse: bool = True  # BLOB_KEY_REUSE=guarded: observe, read the live items, delete conditionally
    blob_cleanup: bool = True  # BLOB_CLEANUP=off: log what is received, delete nothing (BLOB_BUCKET optional)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        cleanup = _switch(env.get(ENV_BLOB_CLEANUP), ENV_BLOB_CLEANUP, default=ENV_FLAG_ON)
        bucket = env.get(ENV_BLOB_BUCKET)
        return cls(
            blob_bucket=_bucket(bucket) if cleanup or bucket else "",
            blob_root=_root(env.get(ENV_BLOB_ROOT)),
            prefix_cleanup=_switch(env.get(ENV_BLOB_PREFIX_CLEANUP), ENV_BLOB_PREFIX_CLEANUP),
            table_name=_table(env.get(ENV_TABLE_NAME)),
            environment=(env.get(ENV_ENVIRONMENT) or "").strip() or None,
            guard_key_reuse=_key_reuse(env.get(ENV_BLOB_KEY_REUSE)),
            blob_cleanup=cleanup,
        )


def _table(value: str | None) -> str:
    if not value or not _TABLE_NAME.fullmatch(value):
        raise SettingsError(
            ENV_TABLE_NAME,
            value,
            "required; the DynamoDB table whose stream this function consumes (a table name, 3-255 of "
            "letters, digits, '_', '-', '.')",
        )
    return value


def _bucket(value: str | None) -> str:
    if not value or not _BUCKET_NAME.fullmatch(value):
        raise SettingsError(
            ENV_BLOB_BUCKET,
            value,
            "required; an S3 bucket name (3-63 characters: lowercase letters, digits, '.', '-'), "
            "not an ARN or URL",
        )
    return value


def _root(value: str | None) -> str:
    if not value:
        return ""
    if not _BLOB_ROOT.fullmatch(value) or ".." in value.split("/"):
        raise SettingsError(
            ENV_BLOB_ROOT,
            value,
            "must be empty or a key prefix ending in '/', made of non-empty segments of letters, digits and "
            "! _ . * ' ( ) - without '..' segments (e.g. 'blobs/')",
        )
    return value


def _switch(value: str | None, variable: str, default: str = ENV_FLAG_OFF) -> bool:
    normalized = (value or default).strip().lower()
    if normalized not in (ENV_FLAG_ON, ENV_FLAG_OFF):
        raise SettingsError(
            variable,
            value,
            f"allowed values are '{ENV_FLAG_ON}' or '{ENV_FLAG_OFF}' (default '{default}')",
        )
    return normalized == ENV_FLAG_ON


def _key_reuse(value: str | None) -> bool:
    normalized = (value or "guarded").strip().lower()
    if normalized not in ("guarded", "never"):
        raise SettingsError(
            ENV_BLOB_KEY_REUSE, value, "allowed values are 'guarded' or 'never' (default 'guarded')"
        )
    return normalized == "guarded"
