"""The operations commands through the console script: knobs, errors a user can act on, the ledger."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from contract import names
from doctable.cli import main
from doctable.core import ledger as lg
from doctable.core.aws import Aws, retry_config
from doctable.core.context import describe_stack, parse_context, resolve_knobs
from doctable.core.errors import UserError
from doctable.core.target import Target, override_pair
from doctable.verify import record as v
from tests.support import ops as ot
from tests.support.cli import run_doctable
from tests.support.ops import REGION


@pytest.fixture
def env(ops_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """GIVEN ``ops_env`` with the state and ledger directories under tmp_path."""
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DOCTABLE_LEDGER_DIR", str(tmp_path / "ledger"))
    return tmp_path


@pytest.fixture
def moto(env: Path, moto_env: Aws) -> Aws:
    return moto_env


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert err and "Traceback" not in "\n".join(err)
    return err[-1]


# ---------------------------------------------------------------------------------------------- knobs
def Args(context: list[str], env_name: str | None = None) -> Target:  # noqa: N802 - the CLI's -c and --env
    return Target(env=env_name, overrides=dict(override_pair(pair) for pair in context))


def test_knobs_resolve_like_the_cdk_app(monkeypatch: pytest.MonkeyPatch, env: Path) -> None:
    # GIVEN DOCTABLE_GSI=gsi1 in the environment
    monkeypatch.setenv("DOCTABLE_GSI", "gsi1")
    # THEN the env var applies, -c beats it, and --env is the env knob
    assert resolve_knobs(Args([])).has_gsi
    assert not resolve_knobs(Args(["gsi=none"])).has_gsi
    assert resolve_knobs(Args([], "stg")).table_name == "items-stg"


def test_knob_mistakes_are_user_errors(env: Path) -> None:
    with pytest.raises(UserError, match="KNOB=VALUE"):
        override_pair("gsi")
    with pytest.raises(UserError, match="contradicts"):
        parse_context({"env": "dev"}, "prod")
    with pytest.raises(UserError, match=r"gsi='bogus'.*env='Qa'"):
        resolve_knobs(Args(["gsi=bogus", "env=Qa"]))
    with pytest.raises(
        UserError, match=r"environment 'qa' is not declared in .*; declared: dev\|stg\|uat\|prod"
    ):
        resolve_knobs(Args(["env=qa"]))


# -------------------------------------------------------------------------------------- actionable errors
def test_missing_credentials_is_one_line(
    monkeypatch: pytest.MonkeyPatch, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(env / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(env / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert main(["verify", "--env", "dev"]) == 4  # AWS or credentials
    assert "no usable AWS credentials" in one_line_error(capsys)


def test_missing_region_is_one_line(
    monkeypatch: pytest.MonkeyPatch, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(env / "none"))
    assert main(["ledger"]) == 2
    assert "no AWS region" in one_line_error(capsys)


def test_missing_region_as_a_module_is_one_line(tmp_path: Path) -> None:
    # GIVEN no region and no credentials anywhere, and the console script run in a process of its own
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_CONFIG_FILE=str(tmp_path / "none"), AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))
    # WHEN the ledger is asked for
    result = run_doctable(["ledger"], env=env, timeout=60, module=True)
    # THEN one line names the problem (exit 2), without a traceback
    assert result.code == 2
    assert result.err.splitlines() == [result.err.strip()] and result.err.startswith(
        "doctable: no AWS region"
    )


def test_unreachable_endpoint_is_one_line(
    monkeypatch: pytest.MonkeyPatch, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://localhost:9")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    assert main(["preflight"]) == 4  # AWS or credentials
    assert "doctable local up" in one_line_error(capsys)


def test_stack_not_deployed(moto: Aws, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--env", "stg"]) == 2
    line = one_line_error(capsys)
    assert "stack doctable-items-stg is not deployed" in line and "doctable deploy --env stg" in line


def test_region_mismatch(moto: Aws, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a stack whose outputs name ARNs in another region than the client's
    template = {
        "Resources": {"H": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {
            names.OUT_TABLE_ARN: {"Value": "arn:aws:dynamodb:us-west-2:123456789012:table/items-dev"}
        },
    }
    moto.client("cloudformation").create_stack(
        StackName="doctable-items-dev", TemplateBody=json.dumps(template)
    )
    assert main(["verify"]) == 2
    line = one_line_error(capsys)
    assert "region mismatch" in line and "AWS_REGION=us-west-2" in line


def test_not_deployed_hints_the_region_the_ledger_knows(
    moto: Aws, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (env / "ledger").mkdir()
    (env / "ledger" / "items-dev.json").write_text(json.dumps({"realized": {"region": "ap-south-1"}}))
    assert main(["verify"]) == 2
    assert "region mismatch? set AWS_REGION=ap-south-1" in one_line_error(capsys)


def _throttle_hook(failures: int) -> tuple[Any, list[int]]:
    calls: list[int] = []

    def before_send(request: Any, **_: Any) -> AWSResponse | None:
        calls.append(1)
        if failures < 0 or len(calls) <= failures:
            body = json.dumps({"__type": "ThrottlingException", "message": "Rate exceeded"}).encode()
            return AWSResponse(request.url, 400, {"x-amzn-ErrorType": "ThrottlingException"}, _Raw(body))
        return None

    return before_send, calls


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.body


def test_throttled_calls_are_retried_with_backoff(moto: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN DynamoDB throttling the first two attempts
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "4")
    monkeypatch.setenv("AWS_RETRY_MODE", "standard")
    monkeypatch.setattr("botocore.retries.standard.random.random", lambda: 0.0)  # no real sleeping
    aws = Aws.connect()
    client = aws.client("dynamodb")
    hook, calls = _throttle_hook(2)
    client.meta.events.register_first("before-send.dynamodb.ListTables", hook)
    # THEN the call succeeds on the third attempt
    assert client.list_tables()["TableNames"] == []
    assert len(calls) == 3


def test_throttling_that_outlasts_the_retries_is_one_line(
    moto: Aws, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("AWS_RETRY_MODE", "standard")
    monkeypatch.setattr("botocore.retries.standard.random.random", lambda: 0.0)
    hook, calls = _throttle_hook(-1)
    original = Aws.client

    def throttled_client(self: Aws, service: str) -> Any:
        client = original(self, service)
        if service == "dynamodb":  # no stack: the ledger looks for a retained table, and is throttled
            client.meta.events.register_first("before-send.dynamodb.DescribeTable", hook, unique_id="t")
        return client

    monkeypatch.setattr(Aws, "client", throttled_client)
    assert main(["ledger"]) == 4  # AWS or credentials
    line = one_line_error(capsys)
    assert "throttling" in line and "AWS_MAX_ATTEMPTS" in line
    assert len(calls) == 2


def test_retry_config_defaults_to_adaptive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_RETRY_MODE", raising=False)
    monkeypatch.delenv("AWS_MAX_ATTEMPTS", raising=False)
    assert retry_config().retries == {"mode": "adaptive", "total_max_attempts": 8}


# ------------------------------------------------------------------------------------- verify + ledger
def test_verify_then_ledger_leave_an_auditable_record(
    moto: Aws, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a deployed flat environment
    ot.deploy(moto.client, ot.config_of())
    # WHEN verify runs (JSON), then the ledger is written
    assert main(["verify", "--json", "--timeout", "2", "-q"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["passed"] and record["table"] == "items-dev"
    assert (env / "state" / "verify-items-dev.json").exists()
    assert main(["ledger"]) == 0
    # THEN the ledger has the knobs, the realized ids, status live and the verify rows with their time
    ledger = json.loads((env / "ledger" / "items-dev.json").read_text())
    assert ledger["status"] == "live"
    assert ledger["resolved_inputs"]["gsi"] == "none"
    assert ledger["realized"]["table_arn"].endswith(":table/items-dev")
    assert ledger["last_verified"]["at"] == record["finished_at"]
    assert [r["id"] for r in ledger["last_verified"]["rows"]][:2] == ["stack", "shape"]
    markdown = (env / "ledger" / "items-dev.md").read_text()
    assert "status:        live" in markdown and "| item round-trip |" in markdown


def test_verify_failure_exits_1_and_the_ledger_says_degraded(
    moto: Aws, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ot.deploy(moto.client, ot.config_of(pitr="on"))
    moto.client("dynamodb").update_continuous_backups(
        TableName="items-dev", PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
    )
    assert main(["verify", "-c", "pitr=on", "--timeout", "2", "-q", "--ledger"]) == 1
    out = capsys.readouterr().out
    assert "verify FAILED" in out and "failing: pitr" in out
    assert json.loads((env / "ledger" / "items-dev.json").read_text())["status"] == "degraded"


def test_ledger_status_follows_the_stack(moto: Aws) -> None:
    config = ot.config_of()
    absent = describe_stack(moto, config)
    assert lg.status_of(absent, None, had_history=False) == "not-created"
    assert lg.status_of(absent, None, had_history=True) == "gone"
    ot.deploy(moto.client, config)
    deployment = describe_stack(moto, config)
    assert lg.status_of(deployment, None, False) == "unverified"
    rolled_back = dataclasses.replace(deployment, stack_status="UPDATE_ROLLBACK_COMPLETE")
    assert lg.status_of(rolled_back, None, False) == "unverified"
    assert lg.status_of(rolled_back, {"passed": True}, False) == "live"
    failed_create = dataclasses.replace(deployment, stack_status="ROLLBACK_COMPLETE")
    assert lg.status_of(failed_create, {"passed": True}, False) == "failed"
    # a verify of an earlier incarnation of the stack does not count for this one
    stale = {"region": REGION, "account": deployment.account, "stack_id": "arn:old", "passed": True}
    assert lg.verify_applies(deployment, stale) is None
    current = {**stale, "stack_id": deployment.stack_id}
    assert lg.verify_applies(deployment, current) is current
    entry = lg.build_ledger(deployment, {**current, "rows": [], "finished_at": "t"}, None, resolved_by="me")
    assert entry["status"] == "live" and entry["resolved_inputs"]["resolved_by"] == "me"


def test_teardown_with_ledger_records_gone(moto: Aws, env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ot.deploy(moto.client, ot.config_of())
    assert main(["teardown", "--yes", "-q", "--ledger", "--json"]) == 0
    outcome = json.loads(capsys.readouterr().out)
    assert outcome["clean"] and "AWS::DynamoDB::Table items-dev" in outcome["removed"]
    ledger = json.loads((env / "ledger" / "items-dev.json").read_text())
    assert ledger["status"] == "gone" and ledger["realized"]["table_arn"] is None


def test_preflight_exit_codes(moto: Aws, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preflight"]) == 0
    assert "go: nothing blocks the deploy" in capsys.readouterr().out
    moto.client("dynamodb").create_table(
        TableName="items-dev",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    assert main(["preflight", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["go"] is False and report["findings"][0]["level"] == "STOP"


def test_verify_rows_render_as_a_table() -> None:
    rows = [v.Row("a", "check a", "x", "y", v.PASS), v.Row("b", "check b", "x", "z", v.FAIL)]
    text = v.render_rows(rows)
    assert text.splitlines()[0].split() == ["check", "expected", "observed", "result"]
    assert "check b" in text and "FAIL" in text


def test_an_unparseable_reply_is_one_line(
    moto: Aws, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an endpoint answering ListStackResources with another service's error shape
    from botocore.parsers import ResponseParserError

    ot.deploy(moto.client, ot.config_of())

    def garbled(*args: Any, **kwargs: Any) -> Any:
        raise ResponseParserError("Unable to parse response (syntax error), invalid XML received:\nb'{}'")

    monkeypatch.setattr("doctable.capabilities.protocol.stack_physical_ids", garbled)
    # WHEN preflight runs THEN one line, exit 2, never a traceback
    assert main(["preflight"]) == 4  # AWS or credentials
    line = one_line_error(capsys)
    assert "cannot parse" in line and "Unable to parse response" in line


def test_untrusted_certificate_names_the_missing_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.exceptions import SSLError

    from doctable.core.aws import user_error_for

    failure = SSLError(endpoint_url="https://127.0.0.1:4566", error="certificate verify failed")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://127.0.0.1:4566")
    monkeypatch.delenv("AWS_CA_BUNDLE", raising=False)
    message = str(user_error_for(failure, "checking who you are"))
    assert message.startswith("cannot verify AWS's TLS certificate while checking who you are")
    assert "AWS_CA_BUNDLE is not" in message and "doctable local env" in message and "\n" not in message
    monkeypatch.setenv("AWS_CA_BUNDLE", "/tmp/ca.pem")
    assert "AWS_CA_BUNDLE is not" not in str(user_error_for(failure))


def test_with_json_an_error_is_a_json_document_on_stdout_too(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a bad knob WHEN a command runs with --json
    assert main(["verify", "--json", "-c", "gsi=bogus"]) == 2
    captured = capsys.readouterr()
    # THEN stderr has the one line, and stdout one JSON document with the same error and the exit code
    document = json.loads(captured.out)
    assert (document["kind"], document["command"], document["exit"]) == ("doctable-error", "verify", 2)
    assert "gsi='bogus' is not allowed" in document["error"] and document["error"] in captured.err


def test_local_env_unset_takes_back_every_exported_variable(capsys: pytest.CaptureFixture[str]) -> None:
    from local.state import client_env

    assert main(["local", "env", "--unset"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("unset ") and set(line.split()[1:]) == set(client_env(0))
