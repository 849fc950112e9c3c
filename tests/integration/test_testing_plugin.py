"""doctable.testing as a team meets it: a project folder built from nothing (its doctable.toml, its subscriber's
handler and a test file using the plugin: examples/subscribers/, copied) and ``pytest -p doctable.testing`` run in
it as a process of its own. The plugin starts a local AWS of the session's own, deploys env dev once from the
folder's settings file, nudges (a put reaching the consumer and the subscriber, a delete the subscriber's filter
leaves out, a poison record kept on the subscriber's failure bucket) and stops the local AWS at the end.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from local import api

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "subscribers"
PROJECT_FILES = ("doctable.toml", "search.py", "test_search.py")
TESTS = (
    "test_an_insert_is_projected",
    "test_a_delete_reaches_the_consumer_alone",
    "test_a_title_that_is_not_text_is_kept_on_the_failure_bucket",
)


def test_a_new_project_passes_its_own_tests_with_the_plugin(tmp_path: Path) -> None:
    if not (ROOT / "node_modules" / "aws-cdk" / "bin" / "cdk").exists():
        pytest.skip("the CDK CLI is not installed: run `npm ci` in the project root")
    # GIVEN a folder holding only a settings file, a subscriber's handler and a test file
    project = tmp_path / "team"
    project.mkdir()
    for name in PROJECT_FILES:
        shutil.copy(EXAMPLE / name, project / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_", "DOCTABLE_", "PYTEST_"))}
    basetemp = tmp_path / "basetemp"
    # WHEN its tests run with the plugin, on a local AWS of their own
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "doctable.testing", "--doctable-local", "private", "-v",
         "-p", "no:cacheprovider", "--rootdir", str(project), "--basetemp", str(basetemp)],
        cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=540,
    )  # fmt: skip
    # THEN each of its tests passed, against the settings file in the folder (the rootdir's doctable.toml)
    said = run.stdout + run.stderr
    assert run.returncode == 0, said[-4000:]
    assert re.findall(r"::(\w+) PASSED", said) == list(TESTS), said[-4000:]
    assert re.search(r"\b3 passed\b", said), said[-2000:]
    # AND the local AWS the session started was stopped with it
    (state,) = basetemp.glob("doctable[0-9]*/local-aws")
    assert api.running(state) is None
