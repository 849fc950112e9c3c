"""The console script's exit codes (0 ok, 1 a check failed, 2 usage or bad input, 3 refused by a safety gate,
4 AWS or credentials), its JSON errors, and a help and a description for every command and subcommand."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError, InvalidRegionError, NoCredentialsError

from doctable.api import typed_errors
from doctable.cli import build_parser, main
from doctable.core.aws import user_errors
from doctable.core.errors import (
    EXIT_AWS,
    EXIT_FAILED,
    EXIT_REFUSED,
    EXIT_USAGE,
    AwsError,
    RefusedError,
    UserError,
    exit_code_of,
)
from local.errors import LocalError


@pytest.fixture
def settings_raises(monkeypatch: pytest.MonkeyPatch) -> Callable[[BaseException | int], None]:
    """GIVEN `doctable settings` made to raise the given error (or return the given code)."""

    def install(outcome: BaseException | int) -> None:
        def command(target: Any, **kwargs: Any) -> int:
            if isinstance(outcome, int):
                return outcome
            raise outcome

        # doctable.api's function (its errors typed as the API's are), and a renderer whose exit code it returned
        monkeypatch.setattr("doctable.api.settings", typed_errors(command))
        monkeypatch.setattr("doctable.cli.operate.render_settings", lambda result, args: result)

    return install


def access_denied() -> ClientError:
    return ClientError(
        {"Error": {"Code": "AccessDeniedException", "Message": "User: x is not authorized"}}, "DescribeStacks"
    )


def translated(exc: BaseException) -> UserError:
    """The UserError doctable.core.aws.user_errors raises for a botocore failure."""
    with pytest.raises(UserError) as raised, user_errors("doing it"):
        raise exc
    return raised.value


def aws_translated_errors() -> Iterator[UserError]:
    yield translated(NoCredentialsError())
    yield translated(access_denied())
    yield translated(ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow"}}, "Query"))


# ---------------------------------------------------------------------------------------------- mapping
@pytest.mark.parametrize(
    ("error", "code"),
    [
        (UserError("bad knob"), EXIT_USAGE),
        (RefusedError("not ours: refusing"), EXIT_REFUSED),
        (AwsError("access denied"), EXIT_AWS),
        (LocalError("the local AWS is not running"), EXIT_USAGE),
        *[(error, EXIT_AWS) for error in aws_translated_errors()],
        # a region that is missing or malformed is the user's input, not AWS's answer
        (translated(InvalidRegionError(region_name="eu west 1")), EXIT_USAGE),
    ],
    ids=["user", "refused", "aws", "local", "no-credentials", "access-denied", "throttled", "bad-region"],
)
def test_each_error_has_its_exit_code(error: BaseException, code: int) -> None:
    assert exit_code_of(error) == code


@pytest.mark.parametrize(
    ("outcome", "code"),
    [
        (0, 0),
        (EXIT_FAILED, EXIT_FAILED),
        (UserError("bad input"), EXIT_USAGE),
        (RefusedError("refused"), EXIT_REFUSED),
        (access_denied(), EXIT_AWS),  # through the API's typed_errors: AWS's refusal becomes a one-line error
    ],
    ids=["ok", "check-failed", "bad-input", "refused", "access-denied"],
)
def test_main_exits_with_the_code_and_one_line(
    settings_raises: Callable[[BaseException | int], None],
    capsys: pytest.CaptureFixture[str],
    outcome: BaseException | int,
    code: int,
) -> None:
    # GIVEN a command that ends so  WHEN the console script runs it
    settings_raises(outcome)
    assert main(["settings"]) == code
    # THEN an error is one line on stderr (and nothing else), never a traceback
    err = capsys.readouterr().err.strip().splitlines()
    if isinstance(outcome, BaseException):
        assert len(err) == 1 and err[0].startswith("doctable: ") and "Traceback" not in err[0]
    else:
        assert err == []


def test_access_denied_says_so_in_one_line(
    settings_raises: Callable[[BaseException | int], None], capsys: pytest.CaptureFixture[str]
) -> None:
    settings_raises(access_denied())
    assert main(["settings"]) == EXIT_AWS
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "access denied to DescribeStacks" in line and "not authorized" in line


@pytest.mark.parametrize(
    ("outcome", "code"),
    [
        (UserError("bad input"), EXIT_USAGE),
        (RefusedError("refused"), EXIT_REFUSED),
        (access_denied(), EXIT_AWS),
    ],
    ids=["bad-input", "refused", "aws"],
)
def test_with_json_the_error_is_one_json_document_with_its_exit_code(
    settings_raises: Callable[[BaseException | int], None],
    capsys: pytest.CaptureFixture[str],
    outcome: BaseException,
    code: int,
) -> None:
    settings_raises(outcome)
    assert main(["settings", "--json"]) == code
    captured = capsys.readouterr()
    # THEN stdout is exactly one JSON document carrying the same line and the exit code
    document = json.loads(captured.out)
    assert document["kind"] == "doctable-error" and document["command"] == "settings"
    assert document["exit"] == code
    assert captured.err.strip() == f"doctable: {document['error']}"


def test_missing_credentials_exit_4(
    ops_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN no credentials anywhere
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    # WHEN a command needs AWS THEN exit 4, one line naming the problem (also as JSON with --json)
    assert main(["logs", "--json"]) == EXIT_AWS
    captured = capsys.readouterr()
    assert "no usable AWS credentials" in captured.err and len(captured.err.strip().splitlines()) == 1
    assert json.loads(captured.out)["exit"] == EXIT_AWS
    assert json.loads(captured.out)["code"] == "aws.no_credentials"


# ---------------------------------------------------------------------------------------------- usage
def test_a_usage_error_exits_2_and_with_json_is_a_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    # WHEN argparse refuses the arguments (a required option missing) with --json asked for
    with pytest.raises(SystemExit) as exited:
        main(["invoke", "--json", "--pk", "a"])
    # THEN exit 2, argparse's usage on stderr, and the error as one JSON document on stdout
    assert exited.value.code == EXIT_USAGE
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert document == {
        "kind": "doctable-error",
        "command": "invoke",
        "error": "one of the arguments --event --file is required",
        "exit": EXIT_USAGE,
        "code": "usage",
    }
    assert "usage: doctable invoke" in captured.err


def test_a_usage_error_without_json_prints_nothing_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["frobnicate"])
    assert exited.value.code == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == "" and "invalid choice: 'frobnicate'" in captured.err


def test_json_after_a_double_dash_belongs_to_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    # `doctable local run -- cmd --json`: --json is the command's, so a usage error is not doctable's JSON
    with pytest.raises(SystemExit):
        main(["local", "nope", "--", "--json"])
    assert capsys.readouterr().out == ""


def test_interrupted_exits_130(
    settings_raises: Callable[[BaseException | int], None], capsys: pytest.CaptureFixture[str]
) -> None:
    settings_raises(KeyboardInterrupt())
    assert main(["settings"]) == 130
    assert capsys.readouterr().err.strip() == "doctable: interrupted"


# ---------------------------------------------------------------------------------------------- help
def test_the_top_help_lists_the_exit_codes() -> None:
    text = build_parser().format_help()
    assert "exit codes:" in text
    for code, word in (
        (0, "ok"),
        (1, "a check failed"),
        (2, "usage or bad input"),
        (3, "safety gate"),
        (4, "AWS"),
    ):
        assert any(line.split(None, 1)[:1] == [str(code)] and word in line for line in text.splitlines()), (
            code
        )


def _subcommands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, Any, str]]:
    """(command path, its parser, its help in the parent's listing) for every command and subcommand."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, child in action.choices.items():
                yield " ".join((*path, name)), child, helps.get(name) or ""
                yield from _subcommands(child, (*path, name))


def test_every_command_and_subcommand_has_a_help_and_a_description() -> None:
    commands = list(_subcommands(build_parser()))
    names = {name for name, _, _ in commands}
    assert {"logs", "invoke", "local run", "local up", "ledger", "preflight", "teardown"} <= names
    missing = [
        name
        for name, parser, help_ in commands
        if not help_.strip() or not (parser.description or "").strip()
    ]
    assert missing == []


def test_local_up_port_has_a_help_naming_the_default() -> None:
    (up,) = [parser for name, parser, _ in _subcommands(build_parser()) if name == "local up"]
    (port,) = [action for action in up._actions if "--port" in action.option_strings]
    assert port.help and "4599" in port.help
