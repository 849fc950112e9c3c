"""Smoke test of the bench code (``python -m bench``) at tiny sizes: it runs, counts right, reports right.

The throughput section imports the consumer afresh, so it runs in a subprocess: the other unit tests keep
the module objects they imported. The latency model is shrunk to 1 ms a request: the counts are what is checked.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bench")


@pytest.fixture(scope="module")
def quick_results(bench_dir: Path) -> dict:
    output = bench_dir / "results.json"
    output.write_text(json.dumps({"timestamp": "2024-05-01T12:00:00", "figures": [], "previous": {"old": 1}}))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "--batch-sizes",
            "30",
            "--repeats",
            "1",
            "--s3-ms",
            "1",
            "--dynamodb-ms",
            "1",
            "--svg",
            str(bench_dir / "results.svg"),
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
    assert "Throughput, batch of 30, S3 latency model" in proc.stdout  # the table went to stdout
    assert "[s3_latency]" in proc.stdout and "100-200 ms" in proc.stdout  # the model's sources are printed
    return json.loads(output.read_text())


def test_throughput_deletes_every_listed_blob_with_the_fewest_requests(quick_results: dict) -> None:
    # GIVEN 30 records, 12 of them REMOVEs listing 3 blobs each
    run = quick_results["sections"]["throughput"]["by_batch_size"]["30"]
    project, baseline = run["project"], run["baseline"]
    # THEN both consumers deleted all 36 and kept the others
    for result in (project, baseline):
        assert result["correct"] and result["blobs_deleted"] == 36 and result["survivors_intact"]
    # AND the project used one HEAD per key (the object identity its conditional delete needs), one
    # DeleteObjects and one BatchGetItem (the live items), the baseline one DeleteObject per key
    assert project["s3_requests"] == {"HeadObject": 36, "DeleteObjects": 1}
    assert project["requests"]["BatchGetItem"] == 1
    assert baseline["s3_requests"] == {"DeleteObject": 36}
    # AND every request was charged its modelled service time (1 ms; DeleteObjects also 1/3,500 s per key)
    assert project["modelled_service_seconds"] == pytest.approx(0.038 + 36 / 3500)
    assert baseline["modelled_service_seconds"] == pytest.approx(0.036 + 36 / 3500)
    # AND with blob_key_reuse=never the same consumer deleted them all with one DeleteObjects and nothing else
    never = run["project_never"]
    assert never["correct"] and never["blobs_deleted"] == 36
    assert never["requests"] == {"DeleteObjects": 1}
    # AND the in-memory CPU figures cover the project, the baseline and the json floor
    assert set(quick_results["sections"]["throughput"]["cpu_in_memory"]) >= {"project", "baseline", "floor"}


def test_results_json_carries_figures_and_machine(quick_results: dict) -> None:
    ids = {figure["id"] for figure in quick_results["figures"]}
    assert {
        "throughput_rps_b30",
        "s3_requests_per_1000_blobs",
        "function_zip_bytes",
        "cpu_us_per_record",
    } <= ids
    assert quick_results["python"] and quick_results["machine"]["cpu_count"] and quick_results["timestamp"]
    zip_figure = next(f for f in quick_results["figures"] if f["id"] == "function_zip_bytes")
    assert 0 < zip_figure["project"] < 100_000


def test_the_previous_run_is_kept_beside_the_new_one_and_the_picture_is_written(
    quick_results: dict, bench_dir: Path
) -> None:
    # the run found at start is kept (without its own previous run: one generation)
    assert quick_results["previous"] == {"timestamp": "2024-05-01T12:00:00", "figures": []}
    svg = ET.parse(bench_dir / "results.svg").getroot()
    assert svg.tag.endswith("svg") and len(list(svg.iter())) > 10


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


def test_cold_start_child_resumes_the_snapstart_init_in_a_forked_copy(tmp_path: Path) -> None:
    from bench import coldstart

    # GIVEN the project's consumer as snapstart=on deploys it, and an INSERT
    event, _ = coldstart._event("insert")
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(event))
    root = coldstart._task_root(tmp_path, "project")
    env = {**coldstart._child_env(None), **coldstart.VARIANT_ENV[coldstart.SNAPSTART]}
    # WHEN its init runs, then a forked copy handles the batch
    result = coldstart._run_child(coldstart.PROJECT_MODULE, root, event_path, env, snapshot=True)
    # THEN the copy answered, its time runs from the fork (no import in it), and the init had built the S3 client
    assert result["response"] == {"batchItemFailures": []}
    assert result["import_s"] == 0.0 and result["wall_s"] == result["since_restore_s"] > 0
    plain = coldstart._run_child(coldstart.PROJECT_MODULE, root, event_path, coldstart._child_env(None))
    assert result["modules_loaded"] > plain["modules_loaded"]  # botocore, loaded by the init's client


def _cold_section(problems: list[str]) -> dict:
    def stats(ms: float) -> dict:
        s = ms / 1000
        return {"n": 15, "median": s, "p10": s, "p90": s, "min": s, "max": s}

    def handler(ms: float) -> dict:
        return {"wall_s": stats(ms), "cpu_s": stats(ms), "modules_loaded": 100}

    section = {
        name: handler(ms)
        for name, ms in (("project", 100), ("baseline", 200), ("sdk_floor", 100), ("floor", 10))
    }
    section["project_snapstart"] = handler(5)
    section.update({f"ratio_project_over_baseline_{m}": 0.5 for m in ("wall_s", "cpu_s")})
    return section | {"problems": problems}


@pytest.mark.parametrize(
    ("problems", "met"),
    [
        ([], {"cold_start_remove_ms": True, "cold_start_remove_snapstart_ms": True}),
        (["project: 3 blob(s) not deleted"], {"cold_start_remove_ms": False, "cold_start_remove_snapstart_ms": True}),
        (["project_snapstart: response {}"], {"cold_start_remove_ms": True, "cold_start_remove_snapstart_ms": False}),
    ],
)  # fmt: skip
def test_a_cold_start_that_answered_wrongly_meets_no_goal(problems: list[str], met: dict) -> None:
    from bench.figures import cold_figures

    # GIVEN a REMOVE run whose timings meet both goals, with or without a handler's wrong answer
    figures = {f["id"]: f["met"] for f in cold_figures({"remove": _cold_section(problems)})}
    # THEN only the figures of handlers that answered right are met
    assert {fid: figures[fid] for fid in met} == met


def test_the_model_server_answers_the_consumers_operations_over_http() -> None:
    import boto3
    from botocore.exceptions import ClientError

    from bench.latency_model import ModelledAws, ModelServer, zero_model

    # GIVEN the model's bucket (three objects) and table served over HTTP
    store = ModelledAws("bkt", "tbl", zero_model())
    store.put(["r/a", "r/b", "r/c", "other/d"])
    server = ModelServer(store).start()
    try:
        session = boto3.session.Session(
            aws_access_key_id="t", aws_secret_access_key="t", region_name="us-east-1"
        )
        s3 = session.client("s3", endpoint_url=server.endpoint)
        ddb = session.client("dynamodb", endpoint_url=server.endpoint)
        # WHEN a client sends each operation the consumers send
        head = s3.head_object(Bucket="bkt", Key="r/a")
        listed = [o["Key"] for o in s3.list_objects_v2(Bucket="bkt", Prefix="r/")["Contents"]]
        deleted = s3.delete_objects(
            Bucket="bkt",
            Delete={"Objects": [{"Key": "r/a", "ETag": head["ETag"]}, {"Key": "r/b", "ETag": '"0"'}]},
        )
        s3.delete_object(Bucket="bkt", Key="r/c")
        items = ddb.batch_get_item(RequestItems={"tbl": {"Keys": [{"pk": {"S": "p"}, "sk": {"S": "s"}}]}})
        with pytest.raises(ClientError) as missing:
            s3.head_object(Bucket="bkt", Key="r/a")
        with pytest.raises(ClientError) as unknown:
            s3.get_object(Bucket="bkt", Key="other/d")
    finally:
        server.stop()
    # THEN each is answered as S3 and DynamoDB answer it, from the same store the bench checks
    assert head["ETag"].startswith('"') and head["LastModified"].year >= 2024
    assert listed == ["r/a", "r/b", "r/c"]
    assert [e["Code"] for e in deleted.get("Errors", [])] == ["PreconditionFailed"]
    assert store.present(["r/a", "r/b", "r/c", "other/d"]) == {"r/b", "other/d"}
    assert items["Responses"] == {"tbl": []}
    assert missing.value.response["Error"]["Code"] == "404"
    # AND an operation the model does not answer is refused, not faked
    assert unknown.value.response["ResponseMetadata"]["HTTPStatusCode"] == 501
    assert dict(store.requests) == {
        "HeadObject": 2, "ListObjectsV2": 1, "DeleteObjects": 1, "DeleteObject": 1, "BatchGetItem": 1, "": 1,
    }  # fmt: skip


def test_cold_start_remove_runs_every_handler_against_the_model_server() -> None:
    from bench import coldstart

    # GIVEN the cold-start section at one recorded run, REMOVE only
    section = coldstart.run(runs=1, kinds=("remove",))["remove"]
    # THEN every handler (the project staged as deployed, its two variants, baseline and floors) answered with
    # no failed record and deleted the three blobs from the model's bucket
    assert section["problems"] == []
    for name in (*coldstart.HANDLERS, coldstart.NEVER, coldstart.SNAPSTART):
        assert section[name]["wall_s"]["n"] == 1, name
    assert section["ratio_project_over_sdk_floor_wall_s"] > 0


def test_the_plugins_figure_reads_each_tests_call_phase_and_meets_its_target_only_below_it(
    tmp_path: Path,
) -> None:
    from bench.plugin import TARGET_SECONDS, _durations, plugin_figures

    # GIVEN a JUnit report of the plugin's run: two puts, two nudges, one nudge that failed
    report = tmp_path / "report.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="test_bench" name="test_put[0]" time="0.02"/>'
        '<testcase classname="test_bench" name="test_put[1]" time="0.04"/>'
        '<testcase classname="test_bench" name="test_nudge[0]" time="0.5"/>'
        '<testcase classname="test_bench" name="test_nudge[1]" time="0.7"/>'
        '<testcase classname="test_bench" name="test_nudge[2]" time="9.0"><failure message="x"/></testcase>'
        "</testsuite></testsuites>"
    )
    # THEN the failed one is in no figure, and the figure compares the nudge with the put alone
    assert _durations(report) == {"put": [0.02, 0.04], "nudge": [0.5, 0.7]}
    (figure,) = plugin_figures({"rounds": 2, "nudge_median": 0.6, "put_median": 0.03})
    assert (figure["id"], figure["met"], round(figure["ratio"], 1)) == ("plugin_nudge_seconds", True, 20.0)
    (slow,) = plugin_figures({"rounds": 2, "nudge_median": TARGET_SECONDS + 0.1, "put_median": 0.03})
    assert slow["met"] is False
