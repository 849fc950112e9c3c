"""doctable.testing as a team meets it: a project folder built from nothing (its doctable.toml, its subscriber's
handler and a test file using the plugin: examples/subscribers/, copied) and ``pytest -p doctable.testing`` run in
it as a process of its own. The plugin reuses the running local AWS (this worker's, as `doctable local up` leaves
one), deploys env dev once from the folder's settings file and nudges (a put reaching the consumer and the
subscriber, a delete the subscriber's filter leaves out, a poison record kept on the subscriber's failure bucket).
The private mode (`--doctable-local private`: a local AWS of the session's own, started and stopped with it) is not
run here: starting and bootstrapping a server is time the suite's budget does not hold.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from local import api
from tests.support import localaws as lt

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "subscribers"
PROJECT_FILES = ("doctable.toml", "search.py", "test_search.py")
TESTS = (
    "test_an_insert_is_projected",
    "test_a_delete_reaches_the_consumer_alone",
    "test_a_title_that_is_not_text_is_kept_on_the_failure_bucket",
)


def test_a_new_project_passes_its_own_tests_with_the_plugin(
    tmp_path: Path, local_aws: lt.LocalAWS, bootstrapped: Any
) -> None:
    # GIVEN a folder holding only a settings file, a subscriber's handler and a test file
    project = tmp_path / "team"
    project.mkdir()
    for name in PROJECT_FILES:
        shutil.copy(EXAMPLE / name, project / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_", "DOCTABLE_", "PYTEST_"))}
    # the running local AWS this worker's tests use (as `doctable local up` leaves one), bootstrapped already
    env["DOCTABLE_LOCAL_DIR"] = str(local_aws.directory)
    basetemp = tmp_path / "basetemp"
    # WHEN its tests run with the plugin, reusing that local AWS
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "doctable.testing", "--doctable-local", "reuse", "-v",
         "-p", "no:cacheprovider", "--rootdir", str(project), "--basetemp", str(basetemp)],
        cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=540,
    )  # fmt: skip
    # THEN each of its tests passed, against the settings file in the folder (the rootdir's doctable.toml)
    said = run.stdout + run.stderr
    assert run.returncode == 0, said[-4000:]
    assert re.findall(r"::(\w+) PASSED", said) == list(TESTS), said[-4000:]
    assert re.search(r"\b3 passed\b", said), said[-2000:]
    # AND the local AWS it reused is still running (a reused one is never stopped by the session)
    assert api.running(local_aws.directory) is not None
