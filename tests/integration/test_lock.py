"""The environment's lock on the local AWS, through `doctable deploy` and the real CDK CLI from two checkouts (two
settings folders for one environment, each with its own cloud assembly directory, as on two machines):

- while checkout A deploys three new indexes (three updates), checkout B's deploy is refused at once in one line
  naming A's holder (exit 3, env.locked), and B's deploy with --wait runs once A is done, on top of A's indexes:
  nothing either declared is lost;
- a holder killed mid-deploy leaves its lock; the next deploy is refused until AWS's clock (the local AWS's Date,
  moved by its clock control) passes the lease, then takes the lock over and finishes what the dead one began;
- `doctable unlock` refuses another id in one line and breaks the holder's.

The tests run in file order and share one stack (table_base ``lck``, env stg, no stream).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from contract.iam.lock import lock_bucket, lock_key
from doctable.lifecycle.lock import LEASE_SECONDS
from local import api
from tests.support import localaws as lt
from tests.support.cli import ENTRY, Result, run_doctable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]

STACK = "doctable-lck-stg"
TABLE = "lck-stg"
BUCKET = lock_bucket(lt.ACCOUNT, lt.REGION)  # the CDK's default bootstrap (the tests' `cdk bootstrap`)
KEY = lock_key(STACK)
HEAD = '[defaults]\ntable_base = "lck"\n\n[environments.stg]\n'


def indexes(*names: str) -> str:
    return "".join(f'\n[environments.stg.indexes.{n}]\npartition = "{n}Key:S"\n' for n in names)


@dataclass
class Checkout:
    """One checkout of the project: its settings folder, its own cloud assembly and state."""

    folder: Path
    env: dict[str, str]

    def declare(self, text: str) -> None:
        (self.folder / "doctable.toml").write_text(HEAD + text)

    def run(self, *args: str) -> Result:
        return run_doctable(list(args), env=self.env, timeout=1200)

    def start(self, *args: str) -> subprocess.Popen[str]:
        """``doctable ARGS`` in the background (its output in ``out.txt`` and ``err.txt`` of the folder)."""
        out = (self.folder / "out.txt").open("w")
        err = (self.folder / "err.txt").open("w")
        return subprocess.Popen(
            [sys.executable, "-c", ENTRY, *args],
            cwd=lt.ROOT,
            env={**os.environ, **self.env},
            stdout=out,
            stderr=err,
            text=True,
            start_new_session=True,
        )

    def said(self) -> tuple[str, str]:
        return (self.folder / "out.txt").read_text(), (self.folder / "err.txt").read_text()


@pytest.fixture(scope="module")
def checkouts(
    local_aws: lt.LocalAWS, bootstrapped: api.CdkRun, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Checkout]:
    found = {}
    for name in ("a", "b"):
        folder = tmp_path_factory.mktemp(f"checkout-{name}")
        env = {
            **local_aws.env,
            "DOCTABLE_CONFIG": str(folder / "doctable.toml"),
            "DOCTABLE_CDK_OUTPUT": str(folder / "cdk.out"),
            "DOCTABLE_STATE_DIR": str(folder / "state"),
            "DOCTABLE_LEDGER_DIR": str(folder / "ledger"),
        }
        found[name] = Checkout(folder, env)
        found[name].declare("")
    return found


def own_lines(err: str) -> str:
    """doctable's own lines of a run's stderr (not the CDK CLI's it streams)."""
    return "\n".join(line for line in err.splitlines() if line.startswith(("doctable:", "doctable ")))


def live_gsis(aws: lt.LocalAWS) -> list[str]:
    table = aws.client("dynamodb").describe_table(TableName=TABLE)["Table"]
    return sorted(g["IndexName"] for g in table.get("GlobalSecondaryIndexes", []))


def held_lock(aws: lt.LocalAWS) -> dict[str, Any] | None:
    s3 = aws.client("s3")
    try:
        return dict(json.loads(s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read()))
    except s3.exceptions.NoSuchKey:
        return None


def wait_locked(aws: lt.LocalAWS, process: subprocess.Popen[str]) -> dict[str, Any]:
    def locked() -> bool:
        assert process.poll() is None, "the first deploy ended before it was seen holding the lock"
        return held_lock(aws) is not None

    lt.wait_for(locked, timeout=300, interval=0.2, what="the first deploy holding the lock")
    found = held_lock(aws)
    assert found is not None
    return found


def test_racing_deploys_from_two_checkouts_one_runs_the_other_is_refused_or_waits(
    checkouts: dict[str, Checkout], local_aws: lt.LocalAWS, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = checkouts["a"], checkouts["b"]
    # GIVEN the environment deployed (no index), and no lock left behind by it
    first = a.run("deploy", "--env", "stg", "--no-verify", "-q")
    assert first.code == 0, first.out + first.err
    assert held_lock(local_aws) is None
    # WHEN checkout A deploys three new indexes (three updates) and, while it holds the lock, checkout B deploys
    # A's three (pulled) and one of its own: at once, then with --wait
    a.declare(indexes("byA1", "byA2", "byA3"))
    b.declare(indexes("byA1", "byA2", "byA3", "byB"))
    racer = a.start("deploy", "--env", "stg", "--no-verify", "--json")
    try:
        holder = wait_locked(local_aws, racer)
        refused = b.run("deploy", "--env", "stg", "--no-verify")
        waiting = b.start("deploy", "--env", "stg", "--no-verify", "--json", "--wait", "15m")
        try:
            assert racer.wait(timeout=1200) == 0, a.said()
            assert waiting.wait(timeout=1200) == 0, b.said()
        finally:
            waiting.kill()
    finally:
        racer.kill()
    a_out, a_err = a.said()
    b_out, b_err = b.said()
    with capsys.disabled():  # what each racer printed (doctable's own lines, not the CDK's), for the record
        print("\n--- racer A (deploy, three index steps):\n" + own_lines(a_err))
        print("--- racer B at once:\n" + refused.err)
        print("--- racer B with --wait 15m:\n" + own_lines(b_err))
    # THEN B at once was refused in one line naming A's holder, exit 3, nothing changed
    lines = [line for line in refused.err.splitlines() if line.strip()]
    assert refused.code == 3 and len(lines) == 1, refused.err
    assert "environment stg is locked" in lines[0] and holder["id"] in lines[0] and holder["who"] in lines[0]
    assert str(a.folder) in lines[0]  # where: A's checkout
    # AND A made its three updates, and B, having waited, made its one on top of them
    a_steps = [(s["action"], s["index"], s["exit"]) for s in json.loads(a_out)["index_steps"]]
    assert a_steps == [("create", "byA1", 0), ("create", "byA2", 0), ("create", "byA3", 0)]
    b_report = json.loads(b_out)
    assert [(s["index"], s["exit"]) for s in b_report.get("index_steps", [])] in ([("byB", 0)], [])
    assert "waiting up to 900s" in b_err
    # AND nothing either declared is lost, and no lock is left
    assert live_gsis(local_aws) == ["byA1", "byA2", "byA3", "byB"]
    assert held_lock(local_aws) is None


def test_a_killed_holders_lock_expires_by_its_lease_and_unlock_breaks_only_its_id(
    checkouts: dict[str, Checkout], local_aws: lt.LocalAWS, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = checkouts["a"], checkouts["b"]
    # GIVEN a deploy killed while it holds the lock (two more indexes declared)
    a.declare(indexes("byA1", "byA2", "byA3", "byB", "byC1", "byC2"))
    b.declare(indexes("byA1", "byA2", "byA3", "byB", "byC1", "byC2"))
    dead = a.start("deploy", "--env", "stg", "--no-verify")
    try:
        holder = wait_locked(local_aws, dead)
    finally:
        os.killpg(dead.pid, signal.SIGKILL)
        dead.wait()
    lt.wait_for(
        lambda: (
            not local_aws.client("cloudformation")
            .describe_stacks(StackName=STACK)["Stacks"][0]["StackStatus"]
            .endswith("_IN_PROGRESS")
        ),
        timeout=300,
        interval=0.5,
    )
    # WHEN another deploy comes before the lease has passed THEN it is refused, naming the dead holder
    refused = b.run("deploy", "--env", "stg", "--no-verify")
    assert refused.code == 3 and holder["id"] in refused.err, refused.err
    # AND unlock of another id is refused in one line, the lock kept
    wrong = b.run("unlock", "--env", "stg", "not-the-id")
    assert wrong.code == 2 and len(wrong.err.strip().splitlines()) == 1 and holder["id"] in wrong.err
    assert (held_lock(local_aws) or {}).get("id") == holder["id"]
    # WHEN AWS's clock passes the lease THEN the next deploy takes the lock over and finishes the indexes
    try:
        local_aws.faults.advance_clock(LEASE_SECONDS + 5)
        taken = b.run("deploy", "--env", "stg", "--no-verify")
    finally:
        local_aws.faults.reset_clock()
    with capsys.disabled():
        print("\n--- after the holder was killed, at once:\n" + refused.err)
        print("--- unlock of another id:\n" + wrong.err)
        print("--- once the lease passed:\n" + own_lines(taken.err))
    assert taken.code == 0, taken.out + taken.err
    assert "took over the expired lock" in taken.err and holder["id"] in taken.err
    assert live_gsis(local_aws) == ["byA1", "byA2", "byA3", "byB", "byC1", "byC2"]
    assert held_lock(local_aws) is None


def test_unlock_breaks_the_holders_lock(checkouts: dict[str, Checkout], local_aws: lt.LocalAWS) -> None:
    # GIVEN a lock left by a command that died (written as one would be)
    s3 = local_aws.client("s3")
    body = {"id": "dead-1", "who": "arn:aws:iam::123456789012:user/gone", "host": "h", "pid": 1,
            "checkout": "/x", "command": "doctable deploy --env stg", "env": "stg", "stack": STACK,
            "since": "2030-01-01T00:00:00Z", "until": "2030-01-01T00:03:00Z"}  # fmt: skip
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=json.dumps(body).encode(), IfNoneMatch="*")
    # WHEN unlocked by its id THEN it is gone and says whose it was
    result = checkouts["b"].run("unlock", "--env", "stg", "dead-1", "--json")
    assert result.code == 0, result.err
    assert result.json()["broken"]["who"] == body["who"]
    assert held_lock(local_aws) is None
