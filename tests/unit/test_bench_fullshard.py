"""Smoke test of the bench's full-shard replay and client-put sections at tiny sizes: they run through
``python -m bench``, count right and report the guarantee; the shard they replay has the workload's shape.

The sections run in a subprocess (the replay's environments are processes of their own, and the client section
installs the latency model on botocore): the other unit tests keep their botocore state. The latency model is
shrunk to 1 ms a request: the counts are what is checked, never a time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError

from bench.fullshard import LIVE_SLOT, REUPLOAD_SLOT, SPECIAL_EVERY, MappingShape, Workload, _split, shard
from bench.latency_model import ModelledAws, ModelServer, zero_model
from bench.report import markdown
from contract.knobs import KNOB_DEFAULTS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("bench-fullshard")
    proc = subprocess.run(
        [
            sys.executable, "-m", "bench",
            "--only", "fullshard,client",
            "--fullshard-writes", "100", "--fullshard-seconds", "2", "--client-puts", "2",
            "--s3-ms", "1", "--dynamodb-ms", "1",
            "--output", str(out / "results.json"), "--svg", str(out / "results.svg"),
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "full-shard replay vs doctable plan" in proc.stdout  # the plan's prediction printed beside it
    svg = ET.parse(out / "results.svg").getroot()
    assert svg.tag.endswith("svg")
    return json.loads((out / "results.json").read_text())


def test_the_replay_handles_every_record_with_the_shipped_concurrency_and_the_guarantee_holds(
    results: dict,
) -> None:
    section = results["sections"]["fullshard"]
    m = section["measured"]
    # GIVEN 200 records (2 s at 100 writes/s), 60 REMOVEs listing 3 blobs each, and the knobs' defaults
    assert section["shape"]["parallelization_factor"] == int(KNOB_DEFAULTS["parallelization_factor"])
    assert section["shape"]["batch_size"] == int(KNOB_DEFAULTS["batch_size"])
    # THEN every record went through one of the environments, in batches no larger than batch_size
    assert m["records"] == 200 and len(m["environments"]) == section["shape"]["parallelization_factor"]
    assert sum(env["records"] for env in m["environments"]) == 200
    assert m["batches"] >= 200 / section["shape"]["batch_size"]
    # AND a manifest batch costs one item read and one conditional delete: no HEAD
    assert m["requests"] == {"BatchGetItem": m["batches"], "DeleteObjects": m["batches"]}
    # AND the guarantee held: dropped blobs deleted, live ones and re-uploads (another ETag) kept
    assert m["guarantee_held"] and m["batch_item_failures"] == 0
    assert m["reuploads"] == m["reuploads_kept"] == 6 and m["items_written_back"] == 6
    assert m["live_blobs_deleted"] == 0 and m["blobs_left_that_should_be_gone"] == 0
    assert m["blobs_listed_for_deletion"] == 60 * 3 - 6 - 6 * 3
    # AND doctable plan was asked about the same workload and knobs
    assert section["plan"]["concurrent_consumers"] == section["shape"]["parallelization_factor"]
    assert section["plan"]["shard_capacity_records_per_second"] > 0


def test_the_client_put_costs_the_requests_of_a_hand_written_put(results: dict) -> None:
    section = results["sections"]["client"]
    for who in ("client", "handwritten"):
        # two uploads and one item write per put, and every item lists its stored objects by their ETags
        assert section[who]["requests"] == {"PutObject": 2, "PutItem": 1}, who
        assert section[who]["correct"] and section[who]["same_requests_every_put"], who


def test_the_figures_have_stable_ids(results: dict) -> None:
    figures = {figure["id"]: figure for figure in results["figures"]}
    assert {
        "fullshard_rps",
        "fullshard_ratio_to_written",
        "fullshard_plan_rps",
        "fullshard_guarantee_held",
        "client_put_requests",
        "client_put_seconds",
        "handwritten_put_requests",
        "handwritten_put_seconds",
    } <= set(figures)
    assert figures["fullshard_guarantee_held"]["met"] is True
    assert figures["client_put_requests"]["project"] == figures["handwritten_put_requests"]["project"] == 3
    written = figures["fullshard_rps"]["project"] / figures["fullshard_ratio_to_written"]["project"]
    assert written == pytest.approx(100)
    # AND bench/README.md's table is made from them, one row per figure id
    table = markdown(results).splitlines()
    assert sum(line.startswith("| `") for line in table) == len(figures)
    assert any(
        line.startswith("| `fullshard_guarantee_held` |") and "| held | yes |" in line for line in table
    )


def test_the_shard_has_the_workloads_shape() -> None:
    # GIVEN one second of a shard at 1,000 writes/s
    part = shard(Workload(writes_per_second=1000, seconds=1))
    records = part["records"]
    names = [r["eventName"] for r in records]
    # THEN 30% are REMOVEs (the others INSERTs and MODIFYs), each listing 3 manifest entries, items about 1 KB
    assert len(records) == 1000 and names.count("REMOVE") == 300
    assert names.count("INSERT") + names.count("MODIFY") == 700
    remove = next(r for r in records if r["eventName"] == "REMOVE")["dynamodb"]["OldImage"]
    assert [set(e["M"]) for e in remove["blobs"]["L"]] == [{"key", "etag", "size"}] * 3
    assert 900 <= len(json.dumps(remove)) <= 1100
    # AND one REMOVE in ten has a re-upload, another one in ten its item written back
    assert len(part["reuploaded"]) == len(part["live_items"]) == 300 // SPECIAL_EVERY
    assert REUPLOAD_SLOT != LIVE_SLOT
    # AND cut by environment, nothing is lost and an item's records and keys stay in one environment
    envs = _split(part, 4)
    assert sum(len(env["records"]) for env in envs) == 1000
    assert sorted(k for env in envs for k in env["objects"]) == sorted(part["objects"])
    for env in envs:
        prefixes = {f"blobs/{r['dynamodb']['Keys']['pk']['S']}/v#1/" for r in env["records"]}
        assert all(key.rsplit("/", 1)[0] + "/" in prefixes for key in env["objects"])


def test_the_replay_reads_the_shipped_knobs_and_the_plans_cpu_model() -> None:
    shape = MappingShape.shipped()
    assert (shape.batch_size, shape.parallelization_factor, shape.memory) == tuple(
        int(KNOB_DEFAULTS[name]) for name in ("batch_size", "parallelization_factor", "memory")
    )
    assert shape.cpu_share == pytest.approx(shape.memory / 1769)


def test_the_model_answers_the_clients_writes_as_s3_and_dynamodb_do() -> None:
    # GIVEN the model's bucket and table, served over HTTP (the in-process path answers the same operations)
    store = ModelledAws("bkt", "tbl", zero_model())
    server = ModelServer(store).start()
    try:
        session = boto3.session.Session(
            aws_access_key_id="t", aws_secret_access_key="t", region_name="us-east-1"
        )
        s3 = session.client("s3", endpoint_url=server.endpoint)
        ddb = session.client("dynamodb", endpoint_url=server.endpoint)
        # WHEN an object is uploaded (aws-chunked, as botocore sends it), then again with If-None-Match: *
        reply = s3.put_object(Bucket="bkt", Key="r/a", Body=b"hello", IfNoneMatch="*")
        with pytest.raises(ClientError) as exists:
            s3.put_object(Bucket="bkt", Key="r/a", Body=b"other", IfNoneMatch="*")
        # AND an item is created, then created again
        create = {
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": "pk"},
        }
        ddb.put_item(TableName="tbl", Item={"pk": {"S": "p"}, "sk": {"S": "s"}}, **create)
        with pytest.raises(ClientError) as created:
            ddb.put_item(TableName="tbl", Item={"pk": {"S": "p"}, "sk": {"S": "s"}}, **create)
    finally:
        server.stop()
    # THEN the ETag is the content's MD5 (a single-part upload's), the second upload and create are refused
    assert reply["ETag"] == '"5d41402abc4b2a76b9719d911017c592"' == store.etag("r/a")
    assert exists.value.response["Error"]["Code"] == "PreconditionFailed"
    assert created.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert store.items == {("p", "s"): {"pk": {"S": "p"}, "sk": {"S": "s"}}}
    assert dict(store.requests) == {"PutObject": 2, "PutItem": 2}
