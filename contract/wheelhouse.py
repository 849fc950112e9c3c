"""A subscriber's ``requirements`` file, installed into its function's asset from a cached wheelhouse built for
the function's platform: wheels only (``--only-binary=:all:``: nothing is compiled, no Docker), for Lambda's
python3.13 on the function's architecture, or for this machine's Python when ``deploy_target=local`` (the local
AWS runs functions on it).

pip runs as a subprocess of this interpreter, in two steps: ``pip download`` fills the wheelhouse from the index
pip is configured with (``PIP_INDEX_URL``, ``PIP_EXTRA_INDEX_URL``, ``PIP_FIND_LINKS``, ``PIP_NO_INDEX``, pip's
configuration files: the tests point it at a directory of wheels), then ``pip install --isolated --no-index``
installs from that wheelhouse alone. Both are kept under ``build/wheelhouse/<key>/`` (``wheels/`` and the
installed ``site/``), the key a digest of the requirements, the platform and the Python version, so a later synth
of the same requirements neither downloads nor installs. The installed tree carries no bytecode and no scripts:
its bytes depend on the wheels alone. Standard library only.
"""

from __future__ import annotations

import hashlib
import os
import platform as platform_
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from contract import names

# A plain requirement line: a name, optional extras, optional version specifiers, optional environment markers.
# No options (-e, -r, --index-url...), no URL (name @ url) and no path: the index and the platform are doctable's.
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_SPECIFIER = r"(?:===|==|!=|<=|>=|~=|<|>)\s*[A-Za-z0-9.*+!_-]+"
REQUIREMENT_RE = re.compile(
    rf"^(?P<name>{_NAME})\s*(?:\[\s*{_NAME}(?:\s*,\s*{_NAME})*\s*\])?\s*"
    rf"(?:\(?\s*{_SPECIFIER}(?:\s*,\s*{_SPECIFIER})*\s*\)?)?\s*(?:;\s*[A-Za-z0-9_.<>=!~\"' ()-]+)?$"
)
ALLOWED_LINES = (
    "one package per line: a name with optional [extras], version specifiers and ; markers (no option such as "
    "-e, -r or --index-url, no URL and no path)"
)
# Lambda's python3.13 runs on Amazon Linux 2023 (glibc 2.34): manylinux wheels for glibc 2.17 to 2.34 run there.
LAMBDA_GLIBC_MINOR = 34
OLDEST_GLIBC_MINOR = 17  # manylinux2014
PIP_ARCHITECTURES = {"arm64": "aarch64", "x86_64": "x86_64"}  # Lambda's architecture name -> the wheel tags'
CACHE = "wheelhouse"  # under the project's build directory, beside the staged assets
PIP_TIMEOUT = 900
_NO_VERSION_RE = re.compile(
    r"Could not find a version that satisfies the requirement (?P<req>[^\s(]+)"
    r"(?: \(from (?P<parent>[^)]*)\))? \(from versions: (?P<versions>[^)]*)\)"
)
_UNREACHABLE = ("NewConnectionError", "Failed to establish a new connection", "Name or service not known")


class WheelhouseError(ValueError):
    """Requirements that cannot be installed for the function's platform: one line saying what is allowed."""


@dataclass(frozen=True)
class Platform:
    """Where the function runs, as pip selects wheels for it: its arguments, a label and the cache key's part."""

    label: str
    pip_args: tuple[str, ...]
    key: str


def lambda_platform(architecture: str) -> Platform:
    """Lambda's python3.13 on ``architecture`` (``arm64`` or ``x86_64``): manylinux2014 to manylinux_2_34 wheels
    of CPython 3.13 (and abi3 and pure-Python ones)."""
    arch = PIP_ARCHITECTURES[architecture]
    version = names.LAMBDA_RUNTIME.removeprefix("python")
    tags = [f"manylinux_2_{m}_{arch}" for m in range(LAMBDA_GLIBC_MINOR, OLDEST_GLIBC_MINOR - 1, -1)]
    tags.append(f"manylinux2014_{arch}")
    args = [a for tag in tags for a in ("--platform", tag)]
    abi = "cp" + version.replace(".", "")
    args += ["--python-version", version, "--implementation", "cp", "--abi", abi]
    label = f"manylinux2014_{arch} (up to manylinux_2_{LAMBDA_GLIBC_MINOR}), CPython {version}"
    return Platform(label, tuple(args), f"lambda|{arch}|{version}|2.{LAMBDA_GLIBC_MINOR}")


def host_platform() -> Platform:
    """This machine's Python (the local AWS runs functions on it): pip's own tags for its interpreter."""
    version = ".".join(map(str, sys.version_info[:2]))
    where = sysconfig.get_platform()
    libc = "-".join(platform_.libc_ver())
    label = f"this machine's Python ({where}, {sys.implementation.name} {version})"
    return Platform(label, (), f"host|{sys.implementation.cache_tag}|{where}|{libc}")


def platform_for(architecture: str, *, local: bool) -> Platform:
    return host_platform() if local else lambda_platform(architecture)


def read_requirements(path: Path, shown: str) -> tuple[str, ...]:
    """The requirement lines of ``path`` (``shown`` as the user wrote it), comments and blank lines dropped; a
    missing file or a line that is not a plain requirement is a WheelhouseError of one line."""
    if not path.is_file():
        raise WheelhouseError(
            f"requirements file {shown} not found (looked in {path.parent}); allowed: a requirements file "
            "relative to the settings file's folder"
        )
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise WheelhouseError(
            f"requirements file {shown} cannot be read ({exc.__class__.__name__})"
        ) from None
    lines = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        if not REQUIREMENT_RE.match(line):
            raise WheelhouseError(
                f"requirements file {shown} line {number}: {line!r} is not a plain requirement; allowed: "
                + ALLOWED_LINES
            )
        lines.append(line)
    return tuple(lines)


def cache_key(requirements: tuple[str, ...], platform: Platform) -> str:
    digest = hashlib.sha256(platform.key.encode() + b"\0" + "\n".join(requirements).encode())
    return digest.hexdigest()[:16]


def installed(requirements: tuple[str, ...], platform: Platform, cache: Path) -> Path:
    """The requirements installed for ``platform`` (a directory to copy into the asset's root), from
    ``cache/<key>/`` when a synth made it before; else downloaded and installed there first."""
    entry = cache / cache_key(requirements, platform)
    if (entry / "site").is_dir():
        return entry / "site"
    cache.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".wheelhouse-", dir=cache))
    try:
        listed = scratch / "requirements.txt"
        listed.write_text("".join(f"{line}\n" for line in requirements))
        wheels, site = scratch / "wheels", scratch / "site"
        only = ("--only-binary=:all:", *platform.pip_args)
        _pip(["download", "--dest", str(wheels), *only, "-r", str(listed)], platform)
        _pip(
            ["install", "--isolated", "--no-index", "--find-links", str(wheels), "--target", str(site)]
            + ["--no-compile", "--no-warn-script-location", *only, "-r", str(listed)],
            platform,
        )
        shutil.rmtree(
            site / "bin", ignore_errors=True
        )  # console scripts: their first line names this machine
        for cached in [p for p in site.rglob("__pycache__") if p.is_dir()]:
            shutil.rmtree(cached, ignore_errors=True)
        scratch.rename(entry)
    except OSError:  # another synth installed the same requirements first
        if not (entry / "site").is_dir():
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return entry / "site"


def wheels_digest(site: Path) -> bytes:
    """The digest of the wheels ``site`` was installed from (the stage's name carries it)."""
    digest = hashlib.sha256()
    for wheel in sorted((site.parent / "wheels").glob("*.whl")):
        digest.update(wheel.name.encode() + b"\0" + hashlib.sha256(wheel.read_bytes()).digest())
    return digest.digest()


def _pip(args: list[str], platform: Platform) -> None:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    command = [sys.executable, "-m", "pip", *args]
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=PIP_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        raise WheelhouseError(f"pip {args[0]} gave no answer within {PIP_TIMEOUT} s") from None
    if done.returncode != 0:
        raise WheelhouseError(pip_failure(done.stderr, platform))


def pip_failure(stderr: str, platform: Platform) -> str:
    """pip's refusal as one line: a package without a wheel for the platform, an unreachable index, or pip's
    own last error line."""
    if "No module named pip" in stderr:
        return (
            f"pip is not installed for {sys.executable}; allowed: requirements with pip installed (ensurepip)"
        )
    if any(marker in stderr for marker in _UNREACHABLE):
        return "cannot reach the package index pip is configured with (PIP_INDEX_URL, pip.conf); allowed: a reachable index, or PIP_NO_INDEX=1 with PIP_FIND_LINKS naming a directory of wheels"  # fmt: skip
    found = _NO_VERSION_RE.search(stderr)
    if found:
        parent = f" (required by {found['parent']})" if found["parent"] else ""
        versions = found["versions"].strip()
        if versions != "none":
            return (
                f"package {found['req']}{parent}: no version with a wheel for {platform.label} matches the "
                f"requirement; allowed: one of the versions with one ({versions})"
            )
        return (
            f"package {found['req']}{parent} has no wheel for {platform.label}; allowed: a package with a wheel "
            f"for {platform.label}, or pure Python (a py3-none-any wheel)"
        )
    errors = [line.removeprefix("ERROR: ") for line in stderr.splitlines() if line.startswith("ERROR:")]
    last = errors[-1] if errors else (stderr.strip().splitlines() or ["no output"])[-1]
    return f"pip could not install the requirements: {last}"
