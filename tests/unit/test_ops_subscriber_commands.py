"""The day-to-day commands per subscriber: `watch --subscriber` (its handler file staged with the wrapper, sent to
its function), `replay --subscriber` (its failure bucket through its function, its records unchanged), the ledger
(the subscribers as deployed) and teardown (their failure buckets emptied or kept, named as theirs); moto."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from contract import names
from contract.settings.resolve import resolve_settings
from doctable.cli import main
from doctable.core import ledger as lg
from doctable.core.aws import Aws
from doctable.core.context import describe_stack
from doctable.core.deployment import Deployment, use_deployed_knobs
from doctable.core.errors import UserError
from doctable.core.render import Progress
from doctable.lifecycle import teardown as t
from doctable.operate import replay as r
from doctable.operate import watch as w
from tests.support import ops as ot
from tests.support.ops import REGION

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "subscribers" / "search.py"
SETTINGS = """\
[defaults]
stream = "new-and-old"

[defaults.subscribers.search]
handler = "subscribers/search.py:handler"
filters = ['{"eventName": ["INSERT", "MODIFY"]}']
max_retries = 1

[environments.dev]
tier = "dev"

[environments.uat]
tier = "uat"
"""
FUNCTION, LOG_GROUP, MAPPING = (
    "items-dev-search",
    "/aws/lambda/items-dev-search",
    "5f1a9c2e-0b7d-4e43-9a61-3c8d2f7e4b10",
)
ID_FAILURES = "SubscriberSearchFailureBucket0A1B2C3D"
QUIET = Progress(quiet=True, sleep=lambda s: None)
LOCAL = {"AWS_ENDPOINT_URL": "https://localhost:4599"}


def out(what: str) -> str:
    return names.subscriber_output("search", what)


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """GIVEN a settings file declaring the search subscriber (the example's handler), named by DOCTABLE_CONFIG,
    and the state and ledger directories under tmp_path."""
    (tmp_path / "subscribers").mkdir()
    (tmp_path / "subscribers" / "search.py").write_text(EXAMPLE.read_text())
    return ot.use_settings(monkeypatch, tmp_path, SETTINGS)


def deployed(aws: Aws, settings: Path, env: str = "dev") -> Deployment:
    """GIVEN the stack deployed (moto) from ``settings``: its record names the subscriber, its outputs its
    function, log group and mapping, and its failure bucket is a resource of the stack, as infra builds it."""
    config = resolve_settings(context={"env": env}, environ={}, config_path=settings).config
    literal = {out(names.OUT_SUBSCRIBER_FUNCTION): FUNCTION, out(names.OUT_SUBSCRIBER_LOG_GROUP): LOG_GROUP,
               out(names.OUT_SUBSCRIBER_MAPPING): MAPPING}  # fmt: skip
    ot.deploy(aws.client, config, with_bucket=True, extra_outputs=literal)
    body = ot.template(config, with_bucket=True, extra_outputs=literal)
    policy = "Retain" if config.retain_on_delete else "Delete"
    body["Resources"][ID_FAILURES] = {"Type": "AWS::S3::Bucket", "DeletionPolicy": policy}
    body["Outputs"][out(names.OUT_SUBSCRIBER_FAILURE_BUCKET)] = {"Value": {"Ref": ID_FAILURES}}
    aws.client("cloudformation").update_stack(StackName=config.stack_name, TemplateBody=json.dumps(body))
    return use_deployed_knobs(describe_stack(aws, config))


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


# ---------------------------------------------------------------------------------------------- watch
def test_the_subscribers_code_is_its_handler_file_staged_with_the_wrapper(tmp_path: Path) -> None:
    # WHEN the example's handler is staged as watch sends it
    code = zipfile.ZipFile(io.BytesIO(w.subscriber_zip(EXAMPLE, "handler", tmp_path)))
    # THEN the zip holds doctable's wrapper and the team's file as the function's handler setting imports it
    listed = code.namelist()
    assert f"{names.SUBSCRIBER_RUNTIME_PACKAGE}/handler.py" in listed
    assert code.read(f"{names.SUBSCRIBER_CODE_PACKAGE}/search.py") == EXAMPLE.read_bytes()


def test_a_change_of_the_handler_file_is_sent_again_and_a_broken_one_is_not(tmp_path: Path) -> None:
    # GIVEN a handler file being watched
    handler = tmp_path / "search.py"
    handler.write_text(EXAMPLE.read_text())
    sent: list[bytes] = []
    said: list[str] = []
    edits = iter(
        [
            "def handler(event, context:\n",  # a save with a syntax error: not sent
            EXAMPLE.read_text() + "\nFIXED = 1\n",  # fixed: sent
        ]
    )

    def stop() -> bool:
        if len(sent) >= 2:
            return True
        if said and said[-1].startswith(("updated", "not sent")):
            handler.write_text(next(edits))
            said.append("edited")
        return False

    def send(code: bytes) -> float:
        sent.append(code)
        return 0.0

    # WHEN watch runs until two updates are sent
    updates = w.send_on_change(
        lambda: w.file_fingerprint(handler),
        lambda: w.subscriber_zip(handler, "handler", tmp_path / "build"),
        send,
        said.append,
        what="subscriber search's code",
        once=False,
        stop=stop,
    )
    # THEN the first and the fixed file were sent, the broken one only said so
    assert len(updates) == len(sent) == 2
    assert [s.split(":")[0] for s in said if not s.startswith("updated") and s != "edited"] == ["not sent"]
    last = zipfile.ZipFile(io.BytesIO(sent[1])).read(f"{names.SUBSCRIBER_CODE_PACKAGE}/search.py")
    assert last.endswith(b"FIXED = 1\n")


def test_once_with_a_broken_handler_file_is_one_line(tmp_path: Path) -> None:
    handler = tmp_path / "search.py"
    handler.write_text("def handler(:\n")
    with pytest.raises(UserError, match="is not valid Python"):
        w.send_on_change(
            lambda: w.file_fingerprint(handler),
            lambda: w.subscriber_zip(handler, "handler", tmp_path),
            lambda code: 0.0,
            lambda _: None,
            what="subscriber search's code",
            once=True,
        )


@pytest.mark.parametrize(
    ("knobs", "environ", "refused"),
    [
        ({"deploy_target": "local"}, LOCAL, False),
        ({"deploy_target": "local", "snapstart": "on", "powertools": "bundled"}, LOCAL, False),
        ({"deploy_target": "local"}, {}, True),
        ({}, LOCAL, True),
    ],
)
def test_a_subscriber_is_watched_on_the_local_aws_only(
    knobs: dict[str, str], environ: dict[str, str], refused: bool
) -> None:
    # (its function runs $LATEST with the Powertools layer, whatever the consumer's snapstart and powertools)
    found = w.subscriber_refusal(ot.config_of(stream="new-and-old", **knobs), environ)
    assert (found == w.LOCAL_ONLY) if refused else found is None


def test_watch_finds_the_handler_file_the_settings_declare(moto_env: Aws, settings: Path) -> None:
    deployment = deployed(moto_env, settings)
    function, spec = w.subscriber_source(deployment, "search")
    assert (function, spec.path) == (FUNCTION, str(settings.parent / "subscribers" / "search.py"))


def test_watch_refuses_a_handler_the_stack_does_not_run(moto_env: Aws, settings: Path) -> None:
    # GIVEN the deployed subscriber, then its handler renamed in the settings (not deployed yet)
    deployment = deployed(moto_env, settings)
    (settings.parent / "subscribers" / "find.py").write_text(EXAMPLE.read_text())
    settings.write_text(SETTINGS.replace("subscribers/search.py", "subscribers/find.py"))
    deployment.intended = resolve_settings(context={"env": "dev"}, environ={}, config_path=settings).config
    # WHEN watched  THEN refused: the function's handler setting names the deployed module
    with pytest.raises(
        UserError, match="subscriber 'search': the settings declare handler subscribers/find.py"
    ):
        w.subscriber_source(deployment, "search")
    # AND a subscriber the settings no longer declare has no handler file to watch
    settings.write_text(
        SETTINGS.split("[defaults.subscribers.search]")[0] + '[environments.dev]\ntier = "dev"\n'
    )
    deployment.intended = resolve_settings(context={"env": "dev"}, environ={}, config_path=settings).config
    with pytest.raises(UserError, match="the settings file does not declare it"):
        w.subscriber_source(deployment, "search")


def test_watch_and_replay_of_an_unknown_subscriber_are_one_line_naming_the_declared(
    moto_env: Aws, settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed(moto_env, settings)
    for command in ("watch", "replay"):
        assert main([command, "--env", "dev", "--subscriber", "serch"]) == 2
        assert one_line(capsys).endswith(
            "has no subscriber 'serch' (did you mean 'search'?); declared: search (subscribers are declared in "
            "the settings file and deployed)"
        )


def test_watch_of_a_subscriber_off_the_local_aws_is_refused(
    moto_env: Aws, settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed(moto_env, settings)
    assert main(["watch", "--env", "dev", "--subscriber", "search", "--once"]) == 3
    assert one_line(capsys) == f"doctable: doctable watch: {w.LOCAL_ONLY}"


def test_watch_takes_a_subscriber_or_a_source_not_both(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as usage:
        main(["watch", "--subscriber", "search", "--source", "functions/stream_consumer"])
    assert usage.value.code == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .splitlines()[-1]
        .endswith("argument --source: not allowed with argument --subscriber")
    )


# ---------------------------------------------------------------------------------------------- replay
class FakeFunction:
    """A Lambda client whose function fails the records whose sequence number is in ``poison``."""

    def __init__(self, poison: frozenset[str] = frozenset()) -> None:
        self.poison = poison
        self.events: list[dict[str, Any]] = []

    def invoke(self, FunctionName: str, InvocationType: str, Payload: bytes) -> dict[str, Any]:  # noqa: N803
        event = json.loads(Payload)
        self.events.append({"function": FunctionName, **event})
        numbers = [r.get("kinesis", {}).get("sequenceNumber") or r["dynamodb"]["SequenceNumber"]
                   for r in event["Records"]]  # fmt: skip
        failed = [{"itemIdentifier": n} for n in numbers if n in self.poison]
        return {"Payload": io.BytesIO(json.dumps({"batchItemFailures": failed}).encode())}


def _kept(records: list[dict[str, Any]]) -> bytes:
    """An invocation record as Lambda keeps it on an S3 failure destination (with the payload)."""
    return json.dumps(
        {
            "requestContext": {"condition": "RetryAttemptsExhausted"},
            "payload": json.dumps({"Records": records}),
        }
    ).encode()


def _remove(seq: str, pk: str, blobs: list[str]) -> dict[str, Any]:
    keys = {"pk": {"S": pk}, "sk": {"S": "v1"}}
    old = {**keys, names.BLOBS_ATTRIBUTE: {"L": [{"S": b} for b in blobs]}}
    return {"eventName": "REMOVE", "eventSource": "aws:dynamodb",
            "dynamodb": {"Keys": keys, "OldImage": old, "SequenceNumber": seq}}  # fmt: skip


def test_replay_of_a_subscriber_reads_its_bucket_and_invokes_its_function(
    moto_env: Aws, settings: Path
) -> None:
    deployment = deployed(moto_env, settings)
    bucket, function = r.replay_target(deployment, "search")
    assert (bucket, function) == (deployment.outputs[out(names.OUT_SUBSCRIBER_FAILURE_BUCKET)], FUNCTION)
    # and without --subscriber it is still the consumer's (this stack has none: one line)
    with pytest.raises(UserError, match="has no consumer and failure bucket"):
        r.replay_target(deployment, None)


def test_a_subscribers_records_go_back_unchanged(moto_env: Aws, settings: Path) -> None:
    # GIVEN a kept REMOVE of an item that has since been written again, listing one of the removed blobs
    deployment = deployed(moto_env, settings)
    bucket, function = r.replay_target(deployment, "search")
    s3, ddb = moto_env.client("s3"), moto_env.client("dynamodb")
    ddb.put_item(TableName="items-dev", Item={"pk": {"S": "a"}, "sk": {"S": "v1"},
                                              names.BLOBS_ATTRIBUTE: {"L": [{"S": "a/v1/keep"}]}})  # fmt: skip
    record = _remove("7", "a", ["a/v1/keep", "a/v1/gone"])
    s3.put_object(Bucket=bucket, Key="aws/lambda/m/s/one", Body=_kept([record]))
    fake = FakeFunction()
    # WHEN replayed as a subscriber's (no rebase: that is the cleanup consumer's rule)
    (outcome,) = r.run_replay(s3=s3, lambda_client=fake, ddb=ddb, bucket=bucket, function=function,
                              table="items-dev", rebase=False)  # fmt: skip
    # THEN its function got the record as the stream held it, and the object is gone
    assert (outcome.result, outcome.rebased) == ("REPLAYED, removed", 0)
    (event,) = fake.events
    assert event["function"] == FUNCTION and event["Records"] == [record]
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 0


def test_a_kinesis_subscribers_still_failing_record_is_kept_by_its_sequence_number(
    moto_env: Aws, settings: Path
) -> None:
    # GIVEN a kept batch of two Kinesis records, the second of which still fails
    deployment = deployed(moto_env, settings)
    bucket, function = r.replay_target(deployment, "search")
    s3 = moto_env.client("s3")
    records = [
        {"eventSource": "aws:kinesis", "kinesis": {"sequenceNumber": n, "data": "e30="}} for n in ("41", "42")
    ]
    s3.put_object(Bucket=bucket, Key="aws/lambda/m/s/k", Body=_kept(records))
    # WHEN replayed
    (outcome,) = r.run_replay(s3=s3, lambda_client=FakeFunction(frozenset({"42"})), ddb=moto_env.client("dynamodb"),
                              bucket=bucket, function=function, table="items-dev", rebase=False)  # fmt: skip
    # THEN the object keeps that record alone
    assert (outcome.succeeded, outcome.still_failing) == (1, ["42"])
    body = json.loads(s3.get_object(Bucket=bucket, Key="aws/lambda/m/s/k")["Body"].read())
    assert json.loads(body["payload"])["Records"] == [records[1]]


# ---------------------------------------------------------------------------------------------- ledger
def test_the_ledger_records_each_subscriber_as_deployed(moto_env: Aws, settings: Path) -> None:
    deployment = deployed(moto_env, settings)
    entry = lg.build_ledger(deployment, None, None, resolved_by="test")
    (search,) = entry["subscribers"]
    assert search == {
        "name": "search",
        "handler": "subscribers/search.py:handler",
        "source": "dynamodb",
        "filters": ['{"eventName":["INSERT","MODIFY"]}'],
        "per_record": False,
        "options": {"max_retries": "1"},
        "grants": [],
        "function": FUNCTION,
        "mapping_uuid": MAPPING,
        "failure_bucket": deployment.outputs[out(names.OUT_SUBSCRIBER_FAILURE_BUCKET)],
        "log_group": LOG_GROUP,
    }
    assert entry["resolved_inputs"]["subscribers"] == ["search"]
    markdown = lg.render_markdown(entry)
    assert "subscribers:" in markdown and f"    function:             {FUNCTION}" in markdown


def test_a_verify_record_read_back_from_disk_is_not_stale(
    moto_env: Aws, settings: Path, tmp_path: Path
) -> None:
    # GIVEN verify's record of this deployment, kept on disk (JSON: its tuples read back as lists)
    deployment = deployed(moto_env, settings)
    record: dict[str, Any] = {"region": REGION, "account": deployment.account, "stack_id": deployment.stack_id, "passed": True,
              "knobs": deployment.config.as_knobs(), "rows": [], "finished_at": "t", "table": "items-dev"}  # fmt: skip
    lg.save_record(tmp_path, record)
    loaded = lg.load_record(tmp_path, "items-dev")
    # THEN the ledger does not call the knobs different from now
    entry = lg.build_ledger(deployment, loaded, None, resolved_by="test")
    assert entry["last_verified"]["knobs_differ_from_now"] is False


# ---------------------------------------------------------------------------------------------- teardown
def test_teardown_empties_and_removes_a_subscribers_failure_bucket_naming_it(
    moto_env: Aws, settings: Path
) -> None:
    # GIVEN dev, the subscriber's failure bucket holding a kept batch
    deployment = deployed(moto_env, settings)
    bucket = deployment.outputs[out(names.OUT_SUBSCRIBER_FAILURE_BUCKET)]
    moto_env.client("s3").put_object(Bucket=bucket, Key="aws/lambda/m/s/one", Body=_kept([]))
    # WHEN torn down
    _, outcome = t.run_teardown(moto_env, deployment, assume_yes=True, lift=False, timeout=30, progress=QUIET)
    # THEN the bucket was emptied and removed as the subscriber's, its mapping probed gone by its UUID
    assert outcome.clean
    assert f"{bucket} of subscriber search (1 objects)" in outcome.emptied
    assert f"AWS::S3::Bucket {bucket} of subscriber search" in outcome.removed
    assert f"AWS::Lambda::EventSourceMapping {MAPPING} of subscriber search" in outcome.removed


def test_teardown_keeps_a_retained_subscribers_failure_bucket_and_the_ledger_says_so(
    moto_env: Aws, settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN uat (its data kept on delete), the subscriber's failure bucket holding a kept batch
    deployment = deployed(moto_env, settings, env="uat")
    bucket = deployment.outputs[out(names.OUT_SUBSCRIBER_FAILURE_BUCKET)]
    moto_env.client("s3").put_object(Bucket=bucket, Key="aws/lambda/m/s/one", Body=_kept([]))
    # WHEN torn down, with the ledger
    assert main(["teardown", "--env", "uat", "--yes", "-q", "--ledger", "--json"]) == 0
    # THEN the bucket and its object stay, said as the subscriber's, and the ledger keeps its name
    outcome = json.loads(capsys.readouterr().out)
    assert f"AWS::S3::Bucket {bucket} of subscriber search (RETAIN, 1 objects kept)" in outcome["retained"]
    ledger = json.loads((settings.parent / "ledger" / "items-uat.json").read_text())
    assert ledger["retained"]["subscriber_search_failure_bucket"] == bucket
    assert (ledger["status"], ledger["subscribers"]) == ("gone", [])
