"""doctable.testing's cheap side: registered by its entry point in every pytest run, it imports pytest and the
standard library alone; a reader has processed a record once its mapping's checkpoint is past it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from doctable.testing.environment import _covers, _past
from doctable.testing.session import settings_path

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("boto3", "botocore", "contract", "local", "aws_cdk", "infra")


def test_the_entry_point_names_the_plugin_by_its_module() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"doctable.testing": "doctable.testing"}


def test_importing_the_plugin_imports_nothing_heavy() -> None:
    probe = f"import sys, doctable.testing; print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("progress", "past"),
    [
        ({"checkpoint": "101"}, True),  # the next record it delivers is after ours
        ({"checkpoint": "100"}, False),  # ours is the next: not processed yet
        ({"checkpoint": None}, False),
        # a Kinesis mapping's per-shard form: not read as a position
        ({"checkpoint": "shardId-1:101"}, False),
        (None, False),
    ],
)
def test_a_reader_is_past_a_record_once_its_checkpoint_is_beyond_it(
    progress: dict | None, past: bool
) -> None:
    assert _past(progress, 100) is past


def test_a_proof_line_covers_the_sequence_numbers_of_its_batch() -> None:
    line = {"first_sequence_number": "90", "last_sequence_number": "100"}
    assert [_covers(line, n) for n in (89, 90, 100, 101)] == [False, True, True, False]
    assert _covers({"record_count": 1}, 100) is False


def test_the_settings_file_is_the_option_else_doctable_config_else_the_rootdirs(tmp_path: Path) -> None:
    assert settings_path(None, tmp_path, {}) == tmp_path / "doctable.toml"
    assert settings_path(None, tmp_path, {"DOCTABLE_CONFIG": str(tmp_path / "a.toml")}) == tmp_path / "a.toml"
    assert settings_path(str(tmp_path / "b.toml"), tmp_path, {"DOCTABLE_CONFIG": "x"}) == tmp_path / "b.toml"
