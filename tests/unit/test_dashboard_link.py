"""The environment's dashboard link (contract/names.py dashboard_url from the stack's DashboardName output) in
`doctable verify` and `doctable logs`: in text, and as ``dashboard_url`` in --json (null for a stack deployed
before it had a dashboard)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract import names
from doctable.cli import main
from doctable.core.aws import Aws
from tests.support import ops as ot

GROUP = "/aws/lambda/doctable-items-dev-consumer"
DASHBOARD = "doctable-items-dev-eu-west-1"
URL = (
    "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1"
    "#dashboards/dashboard/doctable-items-dev-eu-west-1"
)


@pytest.mark.parametrize(
    ("region", "url"),
    [
        ("eu-west-1", URL),
        (
            "cn-north-1",
            "https://console.amazonaws.cn/cloudwatch/home?region=cn-north-1#dashboards/dashboard/"
            + DASHBOARD,
        ),
        (
            "us-gov-west-1",
            "https://console.amazonaws-us-gov.com/cloudwatch/home?region=us-gov-west-1#dashboards/dashboard/"
            + DASHBOARD,
        ),
    ],
)
def test_the_console_link_is_the_partitions_console_in_the_stacks_region(region: str, url: str) -> None:
    assert names.dashboard_url(region, DASHBOARD) == url


def test_no_dashboard_name_no_link() -> None:
    assert names.dashboard_url("eu-west-1", None) is None
    assert names.dashboard_url("eu-west-1", "") is None


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(tmp_path / "state"))
    return tmp_path


def _stack(aws: Aws, dashboard: bool) -> None:
    outputs = {names.OUT_CONSUMER_LOG_GROUP: GROUP}
    if dashboard:
        outputs[names.OUT_DASHBOARD_NAME] = DASHBOARD
    ot.deploy(aws.client, ot.config_of(), extra_outputs=outputs)
    aws.client("logs").create_log_group(logGroupName=GROUP)


@pytest.mark.parametrize(
    ("dashboard", "url"), [(True, URL), (False, None)], ids=["dashboard", "deployed-before"]
)
def test_logs_json_has_the_dashboard_url_or_null(
    moto_env: Aws, state: Path, capsys: pytest.CaptureFixture[str], dashboard: bool, url: str | None
) -> None:
    _stack(moto_env, dashboard)
    assert main(["logs", "--json", "-q"]) == 0
    assert json.loads(capsys.readouterr().out)["dashboard_url"] == url


@pytest.mark.parametrize(
    ("dashboard", "url"), [(True, URL), (False, None)], ids=["dashboard", "deployed-before"]
)
def test_logs_text_says_the_dashboards_link_when_the_stack_has_one(
    moto_env: Aws, state: Path, capsys: pytest.CaptureFixture[str], dashboard: bool, url: str | None
) -> None:
    _stack(moto_env, dashboard)
    assert main(["logs"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "dashboard:" in line] == (
        [f"doctable logs: dashboard: {url}"] if url else []
    )


def _verify(capsys: pytest.CaptureFixture[str], *extra: str) -> Any:
    code = main(["verify", "--timeout", "5", "-q", *extra])
    out = capsys.readouterr().out
    assert code == 0, out
    return out


@pytest.mark.parametrize(
    ("dashboard", "url"), [(True, URL), (False, None)], ids=["dashboard", "deployed-before"]
)
def test_verify_json_has_the_dashboard_url_or_null(
    moto_env: Aws, state: Path, capsys: pytest.CaptureFixture[str], dashboard: bool, url: str | None
) -> None:
    _stack(moto_env, dashboard)
    record = json.loads(_verify(capsys, "--json"))
    assert record["kind"] == "doctable-verify" and record["dashboard_url"] == url


@pytest.mark.parametrize(
    ("dashboard", "url"), [(True, URL), (False, None)], ids=["dashboard", "deployed-before"]
)
def test_verify_text_prints_the_dashboards_link_after_its_verdict(
    moto_env: Aws, state: Path, capsys: pytest.CaptureFixture[str], dashboard: bool, url: str | None
) -> None:
    _stack(moto_env, dashboard)
    lines = _verify(capsys).splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("verify PASSED"))
    links = [line for line in lines if line.startswith("dashboard:")]
    assert links == ([f"dashboard: {url}"] if url else [])
    if url:
        assert lines[verdict + 1] == f"dashboard: {url}"
