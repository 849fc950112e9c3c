"""`doctable local run -- CMD`: one command with the local AWS's environment, the shell left as it was, the
command's exit code; `doctable local env --unset` takes back what `doctable local env` exports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from doctable.cli import main
from local import cli as local_cli
from local import state
from local.errors import LocalError
from tests.support.cli import ENTRY, ROOT

PORT = 45999


@pytest.fixture
def running(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> state.ServerInfo:
    """GIVEN a local AWS recorded as running on PORT (its state in tmp_path)."""
    monkeypatch.setenv("DOCTABLE_LOCAL_DIR", str(tmp_path))
    info = state.ServerInfo(pid=os.getpid(), port=PORT, url=state.endpoint_url(PORT), started_at=time.time(),
                            moto_version="5.2.5")  # fmt: skip
    monkeypatch.setattr(local_cli, "running", lambda: info)
    return info


def child(code: str) -> list[str]:
    return ["--", sys.executable, "-c", code]


# ---------------------------------------------------------------------------------------------- the environment
def test_the_command_gets_what_local_env_exports_and_nothing_that_picks_other_credentials() -> None:
    # GIVEN a shell with a profile, a session token, a per-service endpoint and unrelated variables
    shell = {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "AWS_PROFILE": "prod-admin",
        "AWS_SESSION_TOKEN": "token",
        "AWS_ENDPOINT_URL_S3": "https://s3.example",
        "AWS_ACCESS_KEY_ID": "AKIAREAL",
        "AWS_MAX_ATTEMPTS": "3",
    }
    before = dict(shell)
    # WHEN the environment of `doctable local run` is made from it
    env = state.run_env(PORT, shell)
    # THEN it is `doctable local env`'s variables over the shell's, without what would choose other credentials
    assert {k: env[k] for k in state.client_env(PORT)} == state.client_env(PORT)
    assert env["AWS_ENDPOINT_URL"] == f"https://localhost:{PORT}" and env["AWS_ACCESS_KEY_ID"] != "AKIAREAL"
    for gone in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
        assert gone not in env
    assert (env["PATH"], env["HOME"], env["AWS_MAX_ATTEMPTS"]) == ("/usr/bin", "/home/me", "3")
    assert shell == before  # the shell's own mapping is untouched


def test_the_words_after_the_double_dash_are_the_command() -> None:
    assert local_cli.command_of(["--", "aws", "s3", "ls", "--json"]) == ["aws", "s3", "ls", "--json"]
    assert local_cli.command_of(["aws", "--version"]) == ["aws", "--version"]
    with pytest.raises(LocalError, match="nothing to run"):
        local_cli.command_of(["--"])


# ---------------------------------------------------------------------------------------------- running
def test_run_gives_the_command_the_environment_and_leaves_ours_alone(
    running: state.ServerInfo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # GIVEN a shell pointed at another profile
    monkeypatch.setenv("AWS_PROFILE", "prod-admin")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    out = tmp_path / "env.json"
    code = f"import json, os; open({str(out)!r}, 'w').write(json.dumps(dict(os.environ)))"
    # WHEN a command runs through `doctable local run`
    assert main(["local", "run", *child(code)]) == 0
    # THEN it saw the local AWS's variables and no profile; this process's environment did not change
    seen = json.loads(out.read_text())
    assert seen["AWS_ENDPOINT_URL"] == f"https://localhost:{PORT}"
    assert seen["AWS_CA_BUNDLE"] == str(state.ca_bundle(tmp_path))
    assert seen["DOCTABLE_DEPLOY_TARGET"] == "local" and "AWS_PROFILE" not in seen
    assert os.environ["AWS_PROFILE"] == "prod-admin" and "AWS_ENDPOINT_URL" not in os.environ


@pytest.mark.parametrize(
    ("code", "expected"), [("import sys; sys.exit(0)", 0), ("import sys; sys.exit(7)", 7)]
)
def test_the_exit_code_is_the_commands(running: state.ServerInfo, code: str, expected: int) -> None:
    assert main(["local", "run", *child(code)]) == expected


def test_a_command_ended_by_a_signal_exits_128_plus_the_signal(running: state.ServerInfo) -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    assert main(["local", "run", *child(code)]) == 128 + signal.SIGTERM


def test_a_command_not_found_exits_127_in_one_line(
    running: state.ServerInfo, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["local", "run", "--", "doctable-no-such-command"]) == 127
    assert capsys.readouterr().err.strip() == "doctable: doctable-no-such-command: command not found"


def test_run_without_the_local_aws_is_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(local_cli, "running", lambda: None)
    assert main(["local", "run", "--", "true"]) == 2
    assert "not running; start it with `doctable local up`" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- env --unset
def test_env_then_env_unset_leaves_a_shell_as_it_was(tmp_path: Path) -> None:
    # GIVEN a shell that evaluates `doctable local env`, then `doctable local env --unset`
    doctable = f"{sys.executable} -c {json.dumps(ENTRY)}"
    script = (
        f'eval "$({doctable} local env --port {PORT})" && echo "endpoint=$AWS_ENDPOINT_URL" && '
        f'eval "$({doctable} local env --unset)" && env'
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_", "DOCTABLE_"))}
    base["DOCTABLE_LOCAL_DIR"] = str(tmp_path)
    proc = subprocess.run(
        ["bash", "-c", script], cwd=ROOT, env=base, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    # THEN the variables were set, then every one of them taken back
    lines = proc.stdout.splitlines()
    assert lines[0] == f"endpoint=https://localhost:{PORT}"
    left = {line.split("=", 1)[0] for line in lines[1:] if "=" in line}
    assert not left & set(state.client_env(PORT))


def test_the_default_port_is_not_localstacks() -> None:
    assert state.DEFAULT_PORT == 4599
    assert state.client_env(state.DEFAULT_PORT)["AWS_ENDPOINT_URL"] == "https://localhost:4599"
