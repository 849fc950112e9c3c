"""Smoke test of the bench code (``python -m bench``) at tiny sizes: it runs, counts right, reports right.

The throughput section imports the consumer afresh, so it runs in a subprocess: the other unit tests keep
the module objects they imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick_results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    output = tmp_path_factory.mktemp("bench") / "results.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "--records",
            "30",
            "--only",
            "throughput,size",
            "--output",
            str(output),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Throughput, 1 batch of 30 records" in proc.stdout  # the table went to stdout
    return json.loads(output.read_text())


def test_throughput_deletes_every_listed_blob_with_the_fewest_requests(quick_results: dict) -> None:
    # GIVEN 30 records, 12 of them REMOVEs listing 3 blobs each
    project, baseline = (
        quick_results["sections"]["throughput"]["project"],
        quick_results["sections"]["throughput"]["baseline"],
    )
    # THEN both consumers deleted all 36 and kept the others
    for result in (project, baseline):
        assert result["correct"] and result["blobs_deleted"] == 36 and result["survivors_intact"]
    # AND the project used one HEAD per key (the object identity its conditional delete needs) and one
    # DeleteObjects, the baseline one DeleteObject per key
    assert project["s3_requests"] == {"HeadObject": 36, "DeleteObjects": 1}
    assert baseline["s3_requests"] == {"DeleteObject": 36}


def test_results_json_carries_figures_and_machine(quick_results: dict) -> None:
    ids = {figure["id"] for figure in quick_results["figures"]}
    assert {"throughput_rps", "s3_requests_per_1000_blobs", "function_zip_bytes"} <= ids
    assert quick_results["python"] and quick_results["machine"]["cpu_count"] and quick_results["timestamp"]
    zip_figure = next(f for f in quick_results["figures"] if f["id"] == "function_zip_bytes")
    assert 0 < zip_figure["project"] < 50_000


def test_previous_results_are_shown_and_skips_are_reported() -> None:
    from bench.__main__ import build_figures, render

    figures = build_figures(
        {
            "size": {
                "project_function_zip": {"zip_bytes": 1000, "files": 2},
                "baseline_function_zip": {"zip_bytes": 500, "files": 1},
                "powertools_layer_zip": {"zip_bytes": 9000, "files": 9},
            },
            "e2e": {"skipped": "local AWS did not start"},
        }
    )
    table = render(figures, {"function_zip_bytes": {"project": 1200, "ratio": 2.4}}, "2024-05-01T12:00")
    assert "skipped: local AWS did not start" in table
    assert "1,200 (2.4x)" in table  # the previous run's figure beside this one


def test_cold_start_child_reports_a_response_for_the_floor(tmp_path: Path) -> None:
    from bench import coldstart

    event, _ = coldstart._event("insert")
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(event))
    root = coldstart._task_root(tmp_path, "floor")
    result = coldstart._run_child(
        coldstart.HANDLERS["floor"][1], root, event_path, coldstart._child_env(None)
    )
    assert result["response"] == {"batchItemFailures": []}
    assert 0 < result["init_and_invoke_s"] <= result["wall_s"]
    assert coldstart.summarize([3.0, 1.0, 2.0])["median"] == 2.0
