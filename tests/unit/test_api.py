"""doctable.api is a published interface: its functions and the fields of their result types are pinned here, so
a change to them is deliberate (update docs/api.md and this table together)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pytest

from contract import names
from doctable import api
from doctable.core.aws import Aws
from tests.support import ops as ot

pytestmark = pytest.mark.unit

# Each result type of doctable.api and its fields, in order.
PINNED: dict[str, tuple[str, ...]] = {
    "Target": ("env", "config", "overrides", "profile", "region", "quiet"),
    "BootstrapResult": (
        "env",
        "preview",
        "account",
        "region",
        "qualifier",
        "toolkit_stack",
        "policies",
        "command",
        "dry_run",
        "exit",
        "cdk_exit",
        "notes",
    ),
    "IndexRow": ("name", "kind", "keys"),
    "InvokeLogLine": ("message", "proof", "fields"),
    "InvokeResult": (
        "stack",
        "function",
        "event",
        "dry_run",
        "executed_version",
        "status_code",
        "function_error",
        "response",
        "batch_item_failures",
        "log",
        "exit",
    ),
    "KnobRow": ("knob", "value", "source"),
    "LedgerResult": ("table", "status", "last_verified", "markdown", "json_file", "entry"),
    "LogLine": ("timestamp", "message", "stream", "event_id"),
    "LogsResult": (
        "stack",
        "log_group",
        "since",
        "start",
        "lines",
        "proof_lines",
        "dashboard_url",
        "follow",
        "followed",
    ),
    "OverrideRow": ("knob", "value", "source", "file_value"),
    "Plan": (
        "workload",
        "knobs",
        "shards",
        "concurrent_consumers",
        "records_per_second_per_shard",
        "invocations_per_second",
        "records_per_invocation",
        "seconds_per_batch",
        "shard_capacity_records_per_second",
        "iterator_age_risk",
        "s3_delete_keys_per_second",
        "s3_head_per_second",
        "s3_prefix_use",
        "monthly_usd",
        "notes",
        "replicas",
        "limits",
        "stream_readers",
        "subscribers",
        "findings",
    ),
    "PolicyAction": ("name", "arn", "action"),
    "PolicyResult": ("role", "env", "account", "region", "policy", "policies", "notes", "document"),
    "ReplayResult": ("bucket", "function", "subscriber", "at", "objects", "kept"),
    "ReplayedObject": (
        "key",
        "records",
        "succeeded",
        "still_failing",
        "rebased",
        "error",
        "source",
        "result",
    ),
    "SettingsResult": (
        "env",
        "stack",
        "file",
        "account",
        "region",
        "knobs",
        "indexes",
        "index_source",
        "gsi",
        "overrides",
        "document",
    ),
    "WatchResult": ("function", "subscriber", "source", "updates", "interrupted"),
    "WatchUpdate": ("files", "staged_and_sent_seconds", "update_seconds"),
    # the lifecycle commands, verify and previews (doctable/lifecycle/results.py, doctable/verify/record.py,
    # doctable/operate/preview.py)
    "VerifyResult": (
        "run_id",
        "read_only",
        "table",
        "stack",
        "stack_id",
        "region",
        "account",
        "endpoint",
        "started_at",
        "finished_at",
        "passed",
        "counts",
        "knobs",
        "rows",
        "skipped",
        "dashboard_url",
        "rolled_back",
        "saved_to",
        "ledger_written",
        "only_region",
    ),
    "VerifyRow": ("id", "check", "expected", "observed", "result", "seconds", "error"),
    "SkippedCheck": ("id", "check", "reason"),
    "PreflightFinding": (
        "level",
        "code",
        "subject",
        "live",
        "declared",
        "effect",
        "destructive",
        "before",
        "after",
    ),
    "PreflightResult": (
        "table",
        "stack",
        "region",
        "at",
        "go",
        "strict",
        "knobs_source",
        "pending",
        "overrides",
        "destructive",
        "findings",
        "drift",
    ),
    "DeployResult": (
        "env",
        "stack",
        "region",
        "account",
        "at",
        "settings",
        "overrides",
        "findings",
        "destructive",
        "allowed_destructive",
        "refused",
        "deployed",
        "verified",
        "conversion",
        "index_steps",
        "replica_streams",
        "replica_stacks_deleted",
        "verify",
        "exit",
        "messages",
    ),
    "ConversionStep": ("step", "command", "exit"),
    "IndexStep": ("update", "action", "index", "exit", "seconds", "progress", "stopped"),
    "LockHolder": ("id", "who", "host", "pid", "checkout", "command", "env", "stack", "since", "until"),
    "UnlockResult": ("env", "stack", "lock", "broken"),
    "DriftRow": ("subject", "live", "declared", "action", "fields"),
    "ReconcileResult": ("stack", "table", "at", "applied", "calls", "drift", "restored", "remaining"),
    "TeardownResult": (
        "stack",
        "at",
        "removed",
        "retained",
        "still_present",
        "emptied",
        "notes",
        "ledger_written",
    ),
    "PreviewInfo": (
        "name",
        "stack",
        "template",
        "status",
        "created",
        "age_seconds",
        "expires_at",
        "expired",
        "region",
        "replica_regions",
    ),
    "NotAPreview": ("stack", "code", "why"),
    "PreviewList": ("account", "region", "prefix", "now", "previews", "skipped", "regions"),
    "PreviewTeardown": (
        "account",
        "region",
        "prefix",
        "now",
        "previews",
        "skipped",
        "regions",
        "action",
        "results",
        "exit",
    ),
    "PreviewOutcome": (
        "name",
        "stack",
        "status",
        "reason",
        "code",
        "error",
        "removed",
        "retained",
        "still_present",
        "emptied",
        "notes",
    ),
    "Workload": (
        "writes_per_second",
        "item_kb",
        "delete_ratio",
        "blobs_per_item",
        "manifest_share",
        "index_share",
        "stored_items",
    ),
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


# ------------------------------------------------------ the day-to-day commands (doctable/operate/) and the plan
OPERATE_SETTINGS = """
[environments.stg]
account = "123456789012"
region = "eu-west-1"
qualifier = "dtstg"
stream = "new-and-old"

[environments.dev]
tier = "dev"
"""


@pytest.fixture
def operate_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """GIVEN a settings file whose stg is bound to an account, a region and a qualifier; dev to none."""
    path = tmp_path / "doctable.toml"
    path.write_text(OPERATE_SETTINGS)
    monkeypatch.setenv("DOCTABLE_CONFIG", str(path))
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(tmp_path / "state"))
    return path


def test_api_settings_names_each_knobs_source(ops_env: None, operate_settings: Path) -> None:
    result = api.settings(api.Target(env="stg", overrides={"memory": "1024"}))
    assert isinstance(result, api.SettingsResult)
    assert (result.env, result.file, result.account, result.region) == (
        "stg",
        str(operate_settings),
        "123456789012",
        "eu-west-1",
    )
    memory = next(row for row in result.knobs if row.knob == "memory")
    assert memory.value == "1024" and [o.knob for o in result.overrides] == ["memory"]
    assert result.to_json()["kind"] == "doctable-settings" and result.to_json()["qualifier"] == "dtstg"


def test_api_ledger_writes_the_live_state(moto_env: Aws, operate_settings: Path, tmp_path: Path) -> None:
    ot.deploy(moto_env.client, ot.config_of())
    result = api.ledger(api.Target(env="dev", quiet=True), ledger_dir=str(tmp_path / "ledger"))
    assert isinstance(result, api.LedgerResult)
    assert result.status == "unverified" and result.last_verified is None
    assert Path(result.markdown).is_file() and json.loads(Path(result.json_file).read_text()) == json.loads(
        json.dumps(result.to_json(), default=str)
    )


def test_api_logs_reads_the_lines_and_follow_stops_when_asked(moto_env: Aws, operate_settings: Path) -> None:
    group = "/aws/lambda/doctable-items-dev-consumer"
    ot.deploy(moto_env.client, ot.config_of(), extra_outputs={names.OUT_CONSUMER_LOG_GROUP: group})
    client = moto_env.client("logs")
    client.create_log_group(logGroupName=group)
    client.create_log_stream(logGroupName=group, logStreamName="s")
    proof = json.dumps({"level": "INFO", "message": names.PROOF_LOG_MESSAGE, "record_count": 2})
    now = int(time.time() * 1000)
    client.put_log_events(
        logGroupName=group,
        logStreamName="s",
        logEvents=[
            {"timestamp": now - 2000, "message": "START"},
            {"timestamp": now - 1000, "message": proof},
        ],
    )
    result = api.logs(api.Target(env="dev", quiet=True), since="5m")
    assert isinstance(result, api.LogsResult) and result.log_group == group
    assert [line.message for line in result.lines] == ["START", proof] and result.proof_lines == 1
    assert result.lines[1].proof is not None and result.lines[1].proof["record_count"] == 2
    # AND followed, each line goes to on_line until stop() says so
    seen: list[api.LogLine] = []
    followed = api.logs(
        api.Target(env="dev", quiet=True), follow=True, on_line=seen.append, stop=lambda: True
    )
    assert followed.follow and followed.followed == 2 and followed.lines == () and len(seen) == 2


@pytest.fixture
def consumer_stack(moto_env: Aws, operate_settings: Path) -> dict[str, str]:
    """GIVEN a deployed stack (in moto) with a stream, a consumer function and its mapping."""
    return ot.deploy_with_mapping(moto_env.client, ot.config_of(stream="new-and-old"))


def test_api_invoke_builds_the_record_and_reports_the_answer(
    consumer_stack: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from doctable.operate import invoke as iv

    target = api.Target(quiet=True)
    dry = api.invoke(target, event="remove", pk="doc#1", sk="v1", blobs=["blobs/doc#1/v1/a"], dry_run=True)
    assert isinstance(dry, api.InvokeResult) and dry.dry_run and dry.function is None
    assert dry.event["Records"][0]["eventSourceARN"] == consumer_stack[names.OUT_STREAM_ARN]

    def answered(client: Any, function: str, event: dict[str, Any]) -> Any:
        reply = {"batchItemFailures": [{"itemIdentifier": "7"}]}
        proof = json.dumps({"message": names.PROOF_LOG_MESSAGE, "record_count": 1})
        return iv.Invocation(function=function, status_code=200, response=reply, log=[proof, "failed"])

    monkeypatch.setattr(iv, "invoke_consumer", answered)
    result = api.invoke(target, event="modify", pk="doc#1", sk="v1")
    assert result.function == consumer_stack[names.OUT_CONSUMER_FUNCTION_ARN]
    assert (result.ok, result.exit, result.batch_item_failures, result.proof_lines) == (False, 1, ("7",), 1)
    with pytest.raises(api.UserError, match="give one of --event"):
        api.invoke(target)


def test_api_watch_sends_the_code_until_stop_says_so(
    consumer_stack: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from doctable.operate import watch as w

    sent: list[str] = []
    refusal = w.refusal
    monkeypatch.setattr(w, "refusal", lambda config, environ: None)  # as on the local AWS
    monkeypatch.setattr(w, "push", lambda aws, function, code: sent.append(function) or 0.5)
    result = api.watch(api.Target(quiet=True), stop=lambda: True)
    assert isinstance(result, api.WatchResult) and not result.interrupted
    assert result.function == consumer_stack[names.OUT_CONSUMER_FUNCTION_NAME] == sent[0]
    (update,) = result.updates
    assert update.update_seconds == 0.5 and update.files > 0
    assert result.to_json()["updates"] == [update.as_dict()]
    # AND off the local AWS: refused, the gate's error
    monkeypatch.setattr(w, "refusal", refusal)
    with pytest.raises(api.RefusedError):
        api.watch(api.Target(quiet=True), once=True)


def test_api_replay_lists_the_kept_batches(moto_env: Aws, operate_settings: Path) -> None:
    bucket = "doctable-items-dev-failures"
    s3 = moto_env.client("s3")
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    s3.put_object(Bucket=bucket, Key="aws/lambda/one", Body=json.dumps({"payload": {"Records": [{}, {}]}}))
    outputs = {names.OUT_FAILURE_BUCKET: bucket, names.OUT_CONSUMER_FUNCTION_NAME: "consumer"}
    ot.deploy(moto_env.client, ot.config_of(), extra_outputs=outputs)
    result = api.replay(api.Target(env="dev", quiet=True), dry_run=True)
    assert isinstance(result, api.ReplayResult) and (result.bucket, result.function) == (bucket, "consumer")
    (kept,) = result.objects
    assert (kept.key, kept.records, kept.result, kept.kept) == (
        "aws/lambda/one",
        2,
        "WOULD REPLAY (payload)",
        True,
    )
    assert result.kept == 1 and not result.ok and result.to_json()["objects"] == [kept.as_dict()]


def test_api_policy_of_an_environment_bound_in_the_settings(ops_env: None, operate_settings: Path) -> None:
    result = api.policy(api.Target(env="stg"), "operator")
    assert isinstance(result, api.PolicyResult)
    assert (result.role, result.account, result.region) == ("operator", "123456789012", "eu-west-1")
    assert result.policy is not None and result.policies == (result.policy,)
    assert result.to_json()["policy"] == result.policy
    with pytest.raises(api.UserError, match="--repo OWNER/NAME"):
        api.policy(api.Target(env="stg"), "ci-trust")


def test_api_bootstrap_dry_run_plans_the_policies_and_the_command(
    ops_env: None, operate_settings: Path
) -> None:
    result = api.bootstrap(api.Target(env="stg"), dry_run=True)
    assert isinstance(result, api.BootstrapResult) and result.ok and result.dry_run
    assert result.qualifier == "dtstg" and result.toolkit_stack == "CDKToolkit-dtstg"
    assert {p.action for p in result.policies} == {"planned"}
    assert result.command[result.command.index("--qualifier") + 1] == "dtstg"


def test_api_plan_models_the_workload(ops_env: None, operate_settings: Path) -> None:
    result = api.plan(api.Target(env="dev", region="eu-west-1"), writes_per_second=100, delete_ratio=0.5)
    assert isinstance(result, api.Plan) and result.workload == api.Workload(100, delete_ratio=0.5)
    assert result.shards >= 1 and result.monthly_total > 0 and "us-east-1" in result.notes[0]
    assert result.to_json()["monthly_total_usd"] == result.monthly_total
    with pytest.raises(api.UserError, match="out of range") as raised:
        api.plan(api.Target(env="dev"), writes_per_second=100, delete_ratio=1.5)
    assert raised.value.code == "usage"
    with pytest.raises(api.UserError, match="declares no subscriber 'nope'"):
        api.plan(api.Target(env="dev"), writes_per_second=100, subscriber_ms={"nope": 5.0})


# ---- the lifecycle commands, verify and previews
def quiet(env: str = "dev") -> api.Target:
    return api.Target(env=env, quiet=True)


def test_api_verify_returns_its_rows_typed_and_its_record_as_json(
    moto_env: Aws, operate_settings: Path
) -> None:
    from doctable.verify.expect import WRITING_CHECKS

    ot.deploy(moto_env.client, ot.config_of())
    result = api.verify(quiet(), read_only=True, timeout=2)
    assert isinstance(result, api.VerifyResult) and result.passed and result.ok
    assert all(isinstance(row, api.VerifyRow) and row.ok for row in result.rows)
    assert [s.id for s in result.skipped] == list(WRITING_CHECKS) and result.saved_to is None
    document = result.to_json()
    assert document["kind"] == "doctable-verify" and document["rows"] == [
        row.as_dict() for row in result.rows
    ]
    with pytest.raises(api.UserError, match="--read-only with --ledger"):
        api.verify(quiet(), read_only=True, ledger=True)


def test_api_preflight_and_reconcile_of_a_deployed_stack(moto_env: Aws, operate_settings: Path) -> None:
    ot.deploy(moto_env.client, ot.config_of())
    found = api.preflight(quiet())
    assert isinstance(found, api.PreflightResult) and found.go and found.stack == "doctable-items-dev"
    assert all(isinstance(f, api.PreflightFinding) for f in found.findings + found.drift)
    assert found.to_json()["kind"] == "doctable-preflight" and found.to_json()["findings"][0]["code"]
    drift = api.reconcile(quiet())
    assert isinstance(drift, api.ReconcileResult) and not drift.applied and drift.remaining is None
    assert drift.to_json()["kind"] == "doctable-reconcile" and drift.left == drift.drift


def test_api_deploy_stops_and_refuses_before_any_cdk_deploy(moto_env: Aws, operate_settings: Path) -> None:
    from contract.findings import Finding, Level

    ot.deploy(moto_env.client, ot.config_of())
    busy = Finding(Level.STOP, "stack.busy", "stack", "UPDATE_IN_PROGRESS", "a settled stack", "wait for it")
    shown: list[api.DeployResult] = []
    # a STOP among the findings: exit 1, nothing deployed, the findings handed to on_findings before the gate
    stopped = api.deploy(quiet(), extra_findings=[busy], on_findings=shown.append)
    assert (stopped.exit, stopped.deployed, stopped.verify) == (1, False, None)
    assert stopped.messages == ("STOP stack.busy: wait for it",) and [r.stack for r in shown] == [
        stopped.stack
    ]
    assert stopped.to_json()["findings"][-1]["code"] == "stack.busy"
    # a destructive change not confirmed at the terminal's question: exit 3, its code refused
    removed = Finding(Level.CHANGE, "index.removed", "gsi1", "present", "none", "deletes it", True)
    asked: list[str] = []
    refused = api.deploy(quiet(), extra_findings=[removed], ask=lambda q: asked.append(q) or "no")
    assert (refused.exit, refused.refused, refused.deployed) == (3, ("index.removed",), False)
    assert asked and refused.to_json()["refused"] == ["index.removed"]


def test_api_teardown_needs_a_yes_then_removes_the_stack(moto_env: Aws, operate_settings: Path) -> None:
    ot.deploy(moto_env.client, ot.config_of())
    with pytest.raises(api.RefusedError, match="--yes"):
        api.teardown(quiet(), timeout=30)
    result = api.teardown(quiet(), timeout=30, ask=lambda _: "doctable-items-dev")
    assert isinstance(result, api.TeardownResult) and result.clean and result.removed
    assert result.to_json()["kind"] == "doctable-teardown" and result.to_json()["clean"] is True


def test_api_previews_list_and_gc_with_none_deployed(moto_env: Aws, operate_settings: Path) -> None:
    listed = api.preview_list(api.Target(quiet=True))
    assert isinstance(listed, api.PreviewList) and listed.previews == () and listed.prefix
    gc = api.preview_gc(api.Target(quiet=True), yes=True)
    assert isinstance(gc, api.PreviewTeardown) and (gc.results, gc.exit) == ((), 0)
    assert gc.to_json()["kind"] == "doctable-preview-gc" and gc.to_json()["results"] == []
