"""The operations commands read the environment's settings (doctable.toml, then -c and DOCTABLE_ overrides) and
the knobs the stack recorded (its Knobs output): settings that differ are pending, a change the next deploy makes,
never taken as what is deployed (moto behind the console script)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contract import names
from contract.settings.resolve import CONFIG_VARIABLE
from doctable.cli import main
from doctable.core.aws import Aws
from doctable.core.context import describe_stack
from doctable.core.deployment import IDENTITY_MISMATCH, use_deployed_knobs
from doctable.core.errors import RefusedError, UserError
from tests.support import ops as ot

ALL_ON = {"gsi": "gsi1", "ttl": "on", "pitr": "on", "stream": "new-and-old", "consumer": "none"}


def settings_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **dev: str) -> Path:
    """GIVEN a settings file whose [environments.dev] holds ``dev``, named by DOCTABLE_CONFIG."""
    path = tmp_path / "doctable.toml"
    body = "".join(f'{name} = "{value}"\n' for name, value in dev.items())
    path.write_text(f"[defaults]\n\n[environments.dev]\n{body}")
    monkeypatch.setenv(CONFIG_VARIABLE, str(path))
    return path


@pytest.fixture
def moto(ops_env: None, moto_env: Aws, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Aws:
    """GIVEN moto, the state and ledger directories under tmp_path, and an empty settings file."""
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DOCTABLE_LEDGER_DIR", str(tmp_path / "ledger"))
    settings_file(tmp_path, monkeypatch)
    return moto_env


def test_ledger_records_the_deployed_knobs(
    moto: Aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an all-on stack, deployed from a file that declares it
    settings_file(tmp_path, monkeypatch, **ALL_ON)
    ot.deploy(moto.client, ot.config_of(**ALL_ON))
    # WHEN the ledger is written
    assert main(["ledger"]) == 0
    # THEN its resolved inputs are the deployed knobs, and nothing is pending
    ledger = json.loads((tmp_path / "ledger" / "items-dev.json").read_text())
    inputs = ledger["resolved_inputs"]
    assert (inputs["gsi"], inputs["ttl"], inputs["stream"], inputs["pitr"]) == (
        "gsi1",
        "on",
        "new-and-old",
        "on",
    )
    assert ledger["knobs_source"] == "deployed" and ledger["pending_knobs"] == []


def test_verify_checks_the_deployed_shape(
    moto: Aws, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings_file(tmp_path, monkeypatch, **ALL_ON)
    ot.deploy(moto.client, ot.config_of(**ALL_ON))
    assert main(["verify", "--json", "--timeout", "2", "-q"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["passed"]
    assert {r["id"]: r["observed"] for r in record["rows"]}["ttl"] == f"ENABLED on {names.TTL_ATTRIBUTE}"


def test_a_setting_that_differs_is_pending_not_the_truth(
    moto: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a stack deployed without the index
    ot.deploy(moto.client, ot.config_of())
    # WHEN verify runs with gsi=gsi1 overridden
    code = main(["verify", "-c", "gsi=gsi1", "--json", "--timeout", "2", "-q"])
    captured = capsys.readouterr()
    # THEN it says the knob is pending, and verifies what is deployed (no gsi1 to query: a SKIP, not a FAIL)
    assert "gsi: deployed none, given gsi1 — pending: deploy to apply" in captured.err
    rows = {r["id"]: r for r in json.loads(captured.out)["rows"]}
    assert code == 0 and rows["gsi-query"]["result"] == "SKIP"


def test_identity_knobs_choose_the_stack_and_are_never_pending(moto: Aws) -> None:
    # GIVEN stg deployed with the index, and settings for stg without it
    ot.deploy(moto.client, ot.config_of(env="stg", gsi="gsi1"))
    deployment = use_deployed_knobs(describe_stack(moto, ot.config_of(env="stg")))
    # THEN the deployed knobs are the truth, the index is pending, and the deploy target is the settings
    assert deployment.config.has_gsi and not deployment.target.has_gsi
    assert [(p.name, p.deployed, p.given) for p in deployment.pending] == [("gsi", "gsi1", "none")]


def test_a_stack_without_a_record_uses_the_settings(moto: Aws) -> None:
    ot.deploy(moto.client, ot.config_of(gsi="gsi1"), record_knobs=False)
    deployment = use_deployed_knobs(describe_stack(moto, ot.config_of()))
    assert deployment.knobs_source == "given" and not deployment.config.has_gsi
    assert deployment.knob_note and names.OUT_KNOBS in deployment.knob_note


def test_a_record_that_does_not_resolve_is_one_line(moto: Aws, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a stack whose Knobs output was edited into nonsense
    config = ot.config_of()
    ot.deploy(moto.client, config, record_knobs=False, extra_outputs={names.OUT_KNOBS: '{"gsi": "gsi9"}'})
    deployment = describe_stack(moto, config)
    with pytest.raises(UserError, match="does not resolve"):
        use_deployed_knobs(deployment)
    assert main(["ledger"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0] and "gsi9" in err[0]


def test_preflight_compares_the_file_with_the_deployed_stack(
    moto: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an all-on stack, and a settings file that no longer declares the index nor the stream
    ot.deploy(moto.client, ot.config_of(**ALL_ON))
    # WHEN preflight runs
    assert main(["preflight", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    codes = {f["code"]: f for f in report["findings"]}
    # THEN a deploy from the file would delete the index and disable the stream: destructive, by code
    assert codes["index.removed"]["destructive"] and codes["index.removed"]["before"] == names.GSI_NAME
    assert codes["stream.disabled"]["destructive"]
    assert {"index.removed", "stream.disabled"} <= set(report["destructive"])


def test_preflight_lists_overrides_and_pending_knobs(moto: Aws, capsys: pytest.CaptureFixture[str]) -> None:
    ot.deploy(moto.client, ot.config_of())
    assert main(["preflight", "--json", "-c", "gsi=gsi1"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["pending"] == [{"knob": "gsi", "deployed": "none", "given": "gsi1"}]
    assert report["overrides"] == [{"knob": "gsi", "source": "-c", "file": "none", "value": "gsi1"}]
    codes = {f["code"]: f for f in report["findings"]}
    assert codes["index.added"]["level"] == "CHANGE" and not codes["index.added"]["destructive"]
    assert "pending: deploy to apply" in captured.err


def test_a_record_naming_another_stack_is_refused_and_that_stack_left_alone(
    moto: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN stg deployed, and dev's stack whose Knobs output claims env=stg (a stack writes its own record)
    stg = ot.config_of(env="stg")
    ot.deploy(moto.client, stg)
    dev = ot.config_of()
    ot.deploy(moto.client, dev, record_knobs=False, extra_outputs={names.OUT_KNOBS: stg.deployed_record()})
    # WHEN the record is read, and dev is torn down with every confirmation given
    with pytest.raises(RefusedError) as refused:
        use_deployed_knobs(describe_stack(moto, dev))
    assert refused.value.fields["code"] == IDENTITY_MISMATCH
    assert main(["teardown", "--yes", "--json"]) == 3
    # THEN it is refused by its stable code, naming both stacks, and neither stack is touched
    document = json.loads(capsys.readouterr().out)
    assert document["code"] == IDENTITY_MISMATCH
    assert dev.stack_name in document["error"] and stg.stack_name in document["error"]
    cfn = moto.client("cloudformation")
    for config in (dev, stg):
        status = cfn.describe_stacks(StackName=config.stack_name)["Stacks"][0]["StackStatus"]
        assert status == "CREATE_COMPLETE"
        assert moto.client("dynamodb").describe_table(TableName=config.table_name)["Table"]
