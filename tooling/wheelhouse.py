"""A subscriber's ``requirements`` file, installed into its function's asset from a cached wheelhouse built for
the function's platform: wheels only (``--only-binary=:all:``: nothing is compiled, no Docker), for Lambda's
python3.13 on the function's architecture, or for this machine's Python when ``deploy_target=local`` (the local
AWS runs functions on it).

pip runs as a subprocess of this interpreter, in two steps: ``pip download`` fills the wheelhouse from the index
pip is configured with (``PIP_INDEX_URL``, ``PIP_EXTRA_INDEX_URL``, ``PIP_FIND_LINKS``, ``PIP_NO_INDEX``, pip's
configuration files: the tests point it at a directory of wheels), then ``pip install --isolated --no-index``
installs from that wheelhouse alone. Both are kept under ``build/wheelhouse/<key>/`` (``wheels/`` and the
installed ``site/``), the key a digest of the resolved wheels' hashes and the platform (Python version included):
what a requirement's text resolves to changes with the index, so the text alone never picks an entry. A later synth
asks the index again and installs nothing when it resolves to the same wheels; a file whose every line is pinned
with ``--hash`` (pip's hash-checking mode: pip runs with ``--require-hashes``) is resolved by its pins, so a later
synth finds its entry by them (``pinned/``), checks the entry's wheels against them and asks no index. The
installed tree carries no bytecode and no scripts: its bytes depend on the wheels alone. ``PIP_EXTRA_INDEX_URL``
(an index pip searches beside the main one, where a package of the same name wins by its version: dependency
confusion) is refused unless the subscriber's ``extra_index_urls`` names each of its indexes. Standard library
only.
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
from contract.requirements import (
    HASH_LENGTHS,
    HASH_RE,
    HASHES_ALLOWED,
    WheelhouseError,
    extra_index_refusal,
    requires_hashes,
)

# Lambda's python3.13 runs on Amazon Linux 2023 (glibc 2.34): manylinux wheels for glibc 2.17 to 2.34 run there.
LAMBDA_GLIBC_MINOR = 34
OLDEST_GLIBC_MINOR = 17  # manylinux2014
PIP_ARCHITECTURES = {"arm64": "aarch64", "x86_64": "x86_64"}  # Lambda's architecture name -> the wheel tags'
PINNED = (
    "pinned"  # the entries of hash-pinned requirements by their pins: <cache>/pinned/<key> names the entry
)
CACHE = "wheelhouse"  # under the project's build directory, beside the staged assets
PIP_TIMEOUT = 900
_NO_VERSION_RE = re.compile(
    r"Could not find a version that satisfies the requirement (?P<req>[^\s(]+)"
    r"(?: \(from (?P<parent>[^)]*)\))? \(from versions: (?P<versions>[^)]*)\)"
)
_HASH_MISMATCH_RE = re.compile(
    r"DO NOT MATCH THE HASHES.*?\n\s+(?P<req>\S+) from .*?Got\s+(?P<got>[0-9a-f]+)", re.DOTALL
)
_UNPINNED_RE = re.compile(
    r"must have their versions pinned with ==\. These do not:\n\s+(?P<req>\S+)"
    r"(?: from \S+)?(?: \(from (?P<parent>[^)]*?)->[^)]*\))?"
)
_UNREACHABLE = ("NewConnectionError", "Failed to establish a new connection", "Name or service not known")


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


def cache_key(requirements: tuple[str, ...], platform: Platform) -> str:
    """Hash-pinned requirements' key, by their pins (each line's hashes included): it names their entry."""
    digest = hashlib.sha256(platform.key.encode() + b"\0" + "\n".join(requirements).encode())
    return digest.hexdigest()[:16]


def wheels_key(wheels: Path, platform: Platform) -> str:
    """An entry's key: the digest of the platform and of the resolved wheels, each by name and hash."""
    digest = hashlib.sha256(platform.key.encode())
    for wheel in sorted(wheels.glob("*.whl")):
        digest.update(b"\0" + wheel.name.encode() + b"\0" + hashlib.sha256(wheel.read_bytes()).digest())
    return digest.hexdigest()[:16]


def installed(
    requirements: tuple[str, ...], platform: Platform, cache: Path, *, extra_indexes: tuple[str, ...] = ()
) -> Path:
    """The requirements installed for ``platform`` (a directory to copy into the asset's root), from the entry of
    ``cache`` their resolved wheels name when a synth installed them before; else installed there first."""
    refusal = extra_index_refusal(os.environ, extra_indexes)
    if refusal:
        raise WheelhouseError(refusal)
    hashed = requires_hashes(requirements)
    pin = cache / PINNED / cache_key(requirements, platform)
    if hashed and (site := _pinned_site(pin, requirements, platform)) is not None:
        return site
    cache.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".wheelhouse-", dir=cache))
    try:
        listed = scratch / "requirements.txt"
        listed.write_text("".join(f"{line}\n" for line in requirements))
        wheels, site = scratch / "wheels", scratch / "site"
        only = ("--only-binary=:all:", *platform.pip_args, *(("--require-hashes",) if hashed else ()))
        _pip(["download", "--dest", str(wheels), *only, "-r", str(listed)], platform)
        entry = cache / wheels_key(wheels, platform)
        if not (entry / "site").is_dir():
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
            try:
                scratch.rename(entry)
            except OSError:  # another synth installed the same wheels first
                if not (entry / "site").is_dir():
                    raise
        if hashed:
            pin.parent.mkdir(exist_ok=True)
            written = pin.with_name(f".{pin.name}-{os.getpid()}")
            written.write_text(entry.name)
            written.replace(pin)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return entry / "site"


def _pinned_site(pin: Path, requirements: tuple[str, ...], platform: Platform) -> Path | None:
    """The installed site of the entry ``pin`` names, when its wheels are still the ones named and each matches a
    pin of ``requirements``; None otherwise (pip resolves them again)."""
    try:
        key = pin.read_text().strip()
    except OSError:
        return None
    entry = pin.parent.parent / key
    if not re.fullmatch(r"[0-9a-f]{16}", key) or not (entry / "site").is_dir():
        return None
    declared = {value for line in requirements for value in HASH_RE.findall(line)}
    wheels = sorted((entry / "wheels").glob("*.whl"))
    for wheel in wheels:
        data = wheel.read_bytes()
        if not any(f"{name}:{hashlib.new(name, data).hexdigest()}" in declared for name in HASH_LENGTHS):
            return None
    return entry / "site" if wheels and wheels_key(entry / "wheels", platform) == key else None


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
    mismatch = _HASH_MISMATCH_RE.search(stderr)
    if mismatch:
        return (
            f"package {mismatch['req']}: its wheel for {platform.label} has sha256 {mismatch['got']}, which no "
            "--hash of the requirements file names; allowed: the hashes of the wheels pip installs for the "
            "platform (pip-compile --generate-hashes writes them)"
        )
    unpinned = _UNPINNED_RE.search(stderr)
    if unpinned:
        parent = f" (required by {unpinned['parent']})" if unpinned["parent"] else ""
        return (
            f"package {unpinned['req']}{parent} is not pinned with == and --hash in the requirements file; "
            f"{HASHES_ALLOWED}"
        )
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
