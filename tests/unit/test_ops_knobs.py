"""The operations commands take the knobs the stack recorded (its Knobs output) when none are given; knobs given
that differ are reported as pending, never taken as the truth (moto behind the console script)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from contract import names
from doctable.aws import Aws
from doctable.cli import main
from doctable.errors import UserError
from doctable.ops.context import describe_stack, given_knobs, use_deployed_knobs
from tests.support import ops as ot

ALL_ON = {"gsi": "gsi1", "ttl": "on", "pitr": "on", "stream": "new-and-old", "consumer": "none"}


@pytest.fixture
def moto(ops_env: None, moto_env: Aws, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Aws:
    """GIVEN moto, and the state and ledger directories under tmp_path."""
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DOCTABLE_LEDGER_DIR", str(tmp_path / "ledger"))
    return moto_env


def args(*context: str, env_name: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(context=list(context), env_name=env_name)


def test_given_means_context_or_a_knob_variable_never_cdk_json() -> None:
    # GIVEN nothing, then -c, --env and a knob variable (an empty variable is unset, as for the app)
    assert given_knobs(args(), environ={}) == set()
    assert given_knobs(args("gsi=gsi1"), environ={"TTL": "on", "PITR": ""}) == {"gsi", "ttl"}
    assert given_knobs(args(env_name="stg"), environ={"UNRELATED": "x"}) == {"env"}


def test_ledger_without_knobs_records_the_deployed_ones(moto: Aws, tmp_path: Path) -> None:
    # GIVEN an all-on stack
    ot.deploy(moto.client, ot.config_of(**ALL_ON))
    # WHEN the ledger is written with no knob given
    assert main(["ledger"]) == 0
    # THEN its resolved inputs are the deployed knobs, not cdk.json's defaults
    ledger = json.loads((tmp_path / "ledger" / "items-dev.json").read_text())
    inputs = ledger["resolved_inputs"]
    assert (inputs["gsi"], inputs["ttl"], inputs["stream"], inputs["pitr"]) == (
        "gsi1",
        "on",
        "new-and-old",
        "on",
    )
    assert ledger["knobs_source"] == "deployed" and ledger["pending_knobs"] == []


def test_verify_without_knobs_checks_the_deployed_shape(
    moto: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    ot.deploy(moto.client, ot.config_of(**ALL_ON))
    assert main(["verify", "--json", "--timeout", "2", "-q"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["passed"]
    assert {r["id"]: r["observed"] for r in record["rows"]}["ttl"] == f"ENABLED on {names.TTL_ATTRIBUTE}"


def test_a_knob_given_that_differs_is_pending_not_the_truth(
    moto: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a stack deployed without the index
    ot.deploy(moto.client, ot.config_of())
    # WHEN verify is given gsi=gsi1
    code = main(["verify", "-c", "gsi=gsi1", "--json", "--timeout", "2", "-q"])
    captured = capsys.readouterr()
    # THEN it says the knob is pending, and verifies what is deployed (no gsi1 to query: a SKIP, not a FAIL)
    assert "gsi: deployed none, given gsi1 — pending: deploy to apply" in captured.err
    rows = {r["id"]: r for r in json.loads(captured.out)["rows"]}
    assert code == 0 and rows["gsi-query"]["result"] == "SKIP"


def test_identity_knobs_choose_the_stack_and_are_never_pending(moto: Aws) -> None:
    ot.deploy(moto.client, ot.config_of(env="stg", gsi="gsi1"))
    config = ot.config_of(env="stg")
    deployment = use_deployed_knobs(describe_stack(moto, config), {"env"})
    assert deployment.pending == [] and deployment.config.has_gsi
    assert (
        deployment.target is deployment.config
    )  # no shape knob given: a deploy is compared with the deployed


def test_a_stack_without_a_record_uses_the_knobs_given(moto: Aws) -> None:
    ot.deploy(moto.client, ot.config_of(gsi="gsi1"), record_knobs=False)
    deployment = use_deployed_knobs(describe_stack(moto, ot.config_of()), set())
    assert deployment.knobs_source == "given" and not deployment.config.has_gsi
    assert deployment.knob_note and names.OUT_KNOBS in deployment.knob_note


def test_a_record_that_does_not_resolve_is_one_line(moto: Aws, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a stack whose Knobs output was edited into nonsense
    config = ot.config_of()
    ot.deploy(moto.client, config, record_knobs=False, extra_outputs={names.OUT_KNOBS: '{"gsi": "gsi9"}'})
    deployment = describe_stack(moto, config)
    with pytest.raises(UserError, match="does not resolve"):
        use_deployed_knobs(deployment, set())
    assert main(["ledger"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0] and "gsi9" in err[0]


def test_preflight_without_knobs_warns_what_a_knobless_deploy_would_do(
    moto: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an all-on stack
    ot.deploy(moto.client, ot.config_of(**ALL_ON))
    # WHEN preflight runs with no knob
    assert main(["preflight", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    findings = {f["subject"]: f for f in report["findings"]}
    # THEN the deploy compared with the deployed knobs changes nothing, and a warning says a knob-less deploy would
    assert findings["table"]["level"] == "OK"
    assert findings["knobs"]["level"] == "WARN" and "gsi gsi1→none" in findings["knobs"]["effect"]
    assert report["knobs_source"] == "deployed" and report["drift"] == []


def test_preflight_with_knobs_predicts_their_deploy_and_lists_them_pending(
    moto: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    ot.deploy(moto.client, ot.config_of())
    assert main(["preflight", "--json", "-c", "gsi=gsi1"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["pending"] == [{"knob": "gsi", "deployed": "none", "given": "gsi1"}]
    assert {f["subject"]: f["level"] for f in report["findings"]}["gsi1"] == "CHANGE"
    assert "pending: deploy to apply" in captured.err
