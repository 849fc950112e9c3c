"""Your own indexes on the local AWS, through `doctable deploy` and the real CDK CLI: from no index to three GSIs
in one deploy (three updates, each index ACTIVE and queried by verify); `npx cdk deploy` with two index changes
refused with CloudFormation's message; a removal, a projection change and an addition stopped by the gate, then
applied with --allow-destructive in the right number of updates; a run interrupted part-way continued by the
next; an LSI added to a live table stopped by the gate as a table replacement.

The tests run in file order and share one stack (table_base ``idx``, env stg, no stream: the indexes are the
subject).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from local import api
from tests.support import localaws as lt
from tests.support.cli import ENTRY, Result, run_doctable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

STACK = "doctable-idx-stg"
TABLE = "idx-stg"
HEAD = '[defaults]\ntable_base = "idx"\n\n[environments.stg]\n'


def index_toml(**declared: dict[str, Any]) -> str:
    lines = []
    for name, fields in declared.items():
        lines.append(f"\n[environments.stg.indexes.{name}]")
        for key, value in fields.items():
            shown = (
                "[" + ", ".join(f'"{v}"' for v in value) + "]" if isinstance(value, list) else f'"{value}"'
            )
            lines.append(f"{key} = {shown}")
    return "\n".join(lines) + "\n"


A = {"partition": "owner:S", "sort": "createdAt:N"}
B = {"partition": "digest:B", "projection": "keys-only"}
C = {"partition": "board:S", "sort": "score:N", "projection": "include", "include": ["summary"]}
D = {"partition": "tenant:S"}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("idx-settings") / "doctable.toml"
    path.write_text(HEAD)
    return path


@pytest.fixture(scope="module")
def env(local_aws: lt.LocalAWS, settings: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    state = tmp_path_factory.mktemp("idx-state")
    return {
        **local_aws.env,
        "DOCTABLE_CONFIG": str(settings),
        "DOCTABLE_STATE_DIR": str(state / "state"),
        "DOCTABLE_LEDGER_DIR": str(state / "ledger"),
    }


@pytest.fixture(scope="module")
def doctable(bootstrapped: api.CdkRun, env: dict[str, str]) -> Callable[..., Result]:
    def run(*args: str) -> Result:
        return run_doctable(list(args), env=env, timeout=1100)

    return run


def live_gsis(aws: lt.LocalAWS) -> dict[str, dict[str, Any]]:
    table = aws.client("dynamodb").describe_table(TableName=TABLE)["Table"]
    return {g["IndexName"]: g for g in table.get("GlobalSecondaryIndexes", [])}


def stack_status(aws: lt.LocalAWS) -> str:
    return str(aws.client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0]["StackStatus"])


def steps(report: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(s["action"], s["index"], s["exit"]) for s in report.get("index_steps", [])]


def test_no_index_to_three_in_one_deploy(
    doctable: Callable[..., Result], settings: Path, local_aws: lt.LocalAWS
) -> None:
    # GIVEN the stack deployed with no index
    first = doctable("deploy", "--env", "stg", "--json", "--no-verify")
    assert first.code == 0, first.out + first.err
    assert live_gsis(local_aws) == {}
    # WHEN the file declares three GSIs and one doctable deploy runs
    settings.write_text(HEAD + index_toml(byOwner=A, byDigest=B, byBoard=C))
    result = doctable("deploy", "--env", "stg", "--json", "--verify-timeout", "60")
    report = result.json()
    # THEN preflight said it takes three updates, and the deploy made them one index at a time
    assert "index.multi_step" in [f["code"] for f in report["findings"]]
    assert steps(report) == [("create", "byOwner", 0), ("create", "byDigest", 0), ("create", "byBoard", 0)]
    assert result.code == 0 and report["verified"] is True, result.out + result.err
    # AND every index is ACTIVE and verify queried each
    assert {n: g["IndexStatus"] for n, g in live_gsis(local_aws).items()} == dict.fromkeys(
        ("byOwner", "byDigest", "byBoard"), "ACTIVE"
    )
    rows = {r["id"]: r for r in report["verify"]["rows"]}
    assert rows["gsi-query"]["result"] == "PASS"
    assert all(name in rows["gsi-query"]["observed"] for name in ("byOwner", "byDigest", "byBoard"))


def test_cdk_deploy_with_two_index_changes_fails_as_cloudformation_does(
    settings: Path, env: dict[str, str], local_aws: lt.LocalAWS, tmp_path: Path
) -> None:
    # GIVEN the file removes one index and adds another
    settings.write_text(HEAD + index_toml(byDigest=B, byBoard=C, byTenant=D))
    # WHEN npx cdk deploy applies it in one update
    log = tmp_path / "cdk.log"
    with pytest.raises(api.LocalError):
        api.run_cdk(
            [
                "deploy",
                "--require-approval",
                "never",
                "-c",
                "env=stg",
                "--output",
                str(tmp_path / "out"),
                "--ci",
            ],
            project_dir=lt.ROOT,
            port=local_aws.info.port,
            log=log,
            env=env,
            directory=local_aws.directory,
        )
    # THEN CloudFormation refuses it with its message, and the table keeps its indexes
    assert "Cannot perform more than one GSI creation or deletion in a single update" in log.read_text()
    assert lt.wait_for(lambda: not stack_status(local_aws).endswith("_IN_PROGRESS"), timeout=120)
    assert sorted(live_gsis(local_aws)) == ["byBoard", "byDigest", "byOwner"]


def test_destructive_index_changes_wait_for_the_gate_then_apply_in_order(
    doctable: Callable[..., Result], settings: Path, local_aws: lt.LocalAWS
) -> None:
    # GIVEN byOwner removed, byDigest's projection changed and byTenant added
    settings.write_text(HEAD + index_toml(byDigest={**B, "projection": "all"}, byBoard=C, byTenant=D))
    # WHEN deployed without --allow-destructive: refused, nothing changed
    refused = doctable("deploy", "--env", "stg", "--json", "--no-verify")
    assert refused.code == 3, refused.out + refused.err
    assert sorted(refused.json()["refused"]) == ["index.removed", "index.replaced"]
    assert sorted(live_gsis(local_aws)) == ["byBoard", "byDigest", "byOwner"]
    # WHEN allowed: four updates (add, delete + create of the replaced one, delete), and verify passes
    result = doctable("deploy", "--env", "stg", "--json", "--allow-destructive", "--verify-timeout", "60")
    assert result.code == 0, result.out + result.err
    assert steps(result.json()) == [
        ("create", "byTenant", 0),
        ("delete", "byDigest", 0),
        ("create", "byDigest", 0),
        ("delete", "byOwner", 0),
    ]
    gsis = live_gsis(local_aws)
    assert sorted(gsis) == ["byBoard", "byDigest", "byTenant"]
    assert gsis["byDigest"]["Projection"]["ProjectionType"] == "ALL"


def test_an_interrupted_multi_index_deploy_continues_at_the_next(
    doctable: Callable[..., Result], settings: Path, env: dict[str, str], local_aws: lt.LocalAWS
) -> None:
    # GIVEN two more indexes declared, and a deploy stopped once the first one's update is under way
    more = {"byOwner": A, "byOther": {"partition": "other:S"}}
    settings.write_text(HEAD + index_toml(byDigest={**B, "projection": "all"}, byBoard=C, byTenant=D, **more))
    process = subprocess.Popen(
        [sys.executable, "-c", ENTRY, "deploy", "--env", "stg", "--no-verify", "-q"],
        cwd=lt.ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        lt.wait_for(
            lambda: "byOwner" in live_gsis(local_aws), timeout=300, interval=0.5, what="byOwner created"
        )
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    lt.wait_for(lambda: not stack_status(local_aws).endswith("_IN_PROGRESS"), timeout=300, interval=0.5)
    assert "byOther" not in live_gsis(local_aws)
    # AND the killed deploy's lock is left (its lease would expire it): broken by its id, as its refusal says
    refused = doctable("deploy", "--env", "stg", "--json", "--no-verify")
    assert refused.code == 3 and refused.json()["code"] == "env.locked", refused.out + refused.err
    assert doctable("unlock", "--env", "stg", refused.json()["holder_id"]).code == 0
    # WHEN deployed again: it continues from the live table, and ends with every declared index
    result = doctable("deploy", "--env", "stg", "--json", "--no-verify")
    assert result.code == 0, result.out + result.err
    done = steps(result.json())
    assert ("create", "byOther", 0) in done and len(done) <= 2
    assert sorted(live_gsis(local_aws)) == ["byBoard", "byDigest", "byOther", "byOwner", "byTenant"]


def test_an_lsi_added_to_a_live_table_is_stopped_as_a_table_replacement(
    doctable: Callable[..., Result], settings: Path
) -> None:
    text = settings.read_text() + index_toml(byVersion={"kind": "local", "sort": "version:N"})
    settings.write_text(text)
    refused = doctable("deploy", "--env", "stg", "--json", "--no-verify")
    assert refused.code == 3, refused.out + refused.err
    assert refused.json()["refused"] == ["table.replaced"]
