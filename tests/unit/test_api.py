"""doctable.api is a published interface: its functions and the fields of their result types are pinned here, so
a change to them is deliberate (update docs/api.md and this table together)."""

from __future__ import annotations

import dataclasses

import pytest

from doctable import api

pytestmark = pytest.mark.unit

# Each result type of doctable.api and its fields, in order.
PINNED: dict[str, tuple[str, ...]] = {
    "Target": ("env", "config", "overrides", "profile", "region", "quiet"),
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_each_result_type_keeps_its_fields(name: str) -> None:
    kind = getattr(api, name)
    assert dataclasses.is_dataclass(kind) and kind.__dataclass_params__.frozen, name  # type: ignore[attr-defined]
    assert tuple(f.name for f in dataclasses.fields(kind)) == PINNED[name]


def test_every_dataclass_the_api_exports_is_pinned() -> None:
    exported = {name for name in api.__all__ if dataclasses.is_dataclass(getattr(api, name))}
    assert exported == set(PINNED)


def test_every_function_of_the_api_is_documented() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    functions = [name for name in api.__all__ if callable(getattr(api, name)) and name[0].islower()]
    assert [name for name in functions if f"`api.{name}(" not in text] == []


def test_the_errors_carry_the_json_code() -> None:
    assert api.UserError("x").code == "usage"
    assert api.AwsError("x", {"code": "aws.AccessDenied"}).code == "aws.AccessDenied"
    assert issubclass(api.RefusedError, api.UserError) and issubclass(api.AwsError, api.UserError)
