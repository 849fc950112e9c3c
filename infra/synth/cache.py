"""An opt-in cache of the app's cloud assemblies, keyed by everything a synth reads.

With ``DOCTABLE_SYNTH_CACHE=<dir>`` set, app.py looks the synth up before it imports the CDK: on a hit it copies
the stored assembly into the CLI's output directory (``CDK_OUTDIR``) and exits, so the CLI deploys, diffs or
prints exactly what a synth of the same inputs wrote; on a miss it synthesizes and stores the result. A synth
costs about 10 s of CPU (the Python app and the jsii Node.js process); the integration tests deploy the same
shape more than once, and a second `make test` of unchanged sources synthesizes nothing.

The key is a digest of:
- every file of the app: app.py, cdk.json and the contract/, infra/ and functions/ trees (the consumer's asset);
- the installed versions of the libraries a synth runs or stages (the CDK, constructs, cdk-nag, jsii, Powertools,
  botocore, typing_extensions) and of Python;
- the environment the app reads: every ``DOCTABLE_`` variable but the local AWS's and the ones that name only
  where the operations commands keep their files, every ``CDK_`` variable but the paths into the output
  directory (the CLI passes the context, the account and the region in them), ``AWS_REGION``,
  ``AWS_DEFAULT_REGION`` and ``AWS_PROFILE``;
- the bytes of the settings file the app would read (``DOCTABLE_CONFIG``, else doctable.toml in the working
  directory) and of the resource policy document its knobs name, and the project's name (the Project tag: by
  default the repository's, read from git's files, not from the settings file).

A context too large for the environment (the CLI then writes it to a file) or settings that do not resolve are
not looked up: that synth runs (and says what is wrong). A failed synth stores nothing. The standard library
and the knobs only: it runs before the CDK is imported.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from contract.knobs import ConfigError, user_context
from contract.settings.resolve import resolve_settings

CACHE_VARIABLE = "DOCTABLE_SYNTH_CACHE"
PROJECT = Path(__file__).resolve().parents[2]  # where app.py is
# Set by the CDK CLI when the context does not fit in CDK_CONTEXT_JSON: the context is then in a file.
CONTEXT_OVERFLOW_VARIABLE = "CONTEXT_OVERFLOW_LOCATION_ENV"
SOURCE_TREES = ("contract", "tooling", "infra", "functions")
SOURCE_FILES = ("app.py", "cdk.json")
SKIPPED_PARTS = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache"})
LIBRARIES = (
    "aws-cdk-lib",
    "constructs",
    "cdk-nag",
    "jsii",
    "aws-lambda-powertools",
    "botocore",
    "typing_extensions",
)
# Variables that never shape a template: where the local AWS and the operations commands keep their files, and
# the files in the output directory where the CLI collects an app's error and performance counters.
UNREAD_VARIABLES = frozenset(
    {
        CACHE_VARIABLE,
        "DOCTABLE_SYNTH_WORKER",
        "JSII_NODE",
        "DOCTABLE_CDK_OUTPUT",
        "DOCTABLE_STATE_DIR",
        "DOCTABLE_LEDGER_DIR",
        "CDK_OUTDIR",
        "CDK_ERROR_FILE",
        "CDK_PERF_COUNTERS_FILE",
    }
)
LOCAL_PREFIX = "DOCTABLE_LOCAL_"
READ_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE")
CONFIG_VARIABLE = "DOCTABLE_CONFIG"
# What a synth writes at the top of the output directory (beside the asset directories).
ASSEMBLY_FILES = frozenset({"manifest.json", "tree.json", "cdk.out", "validation-report.json"})
ASSEMBLY_SUFFIXES = (".template.json", ".assets.json", ".metadata.json")
SETTINGS_FILE = "doctable.toml"
MAX_ENTRIES = 300  # about 200 kB each; a Powertools-bundled consumer's about 10 MB


@dataclass(frozen=True)
class SynthCache:
    """One synth's place in the cache: ``root/<key>``, and the CLI's output directory it fills or is filled from."""

    root: Path
    key: str
    outdir: Path

    @property
    def entry(self) -> Path:
        return self.root / self.key

    def restore(self) -> bool:
        """Copy the stored assembly into the output directory; False when there is none."""
        if not (self.entry / "manifest.json").is_file():
            return False
        self.outdir.mkdir(parents=True, exist_ok=True)
        shutil.copytree(self.entry, self.outdir, dirs_exist_ok=True)
        return True

    def store(self) -> None:
        """Keep the assembly the synth just wrote (its manifest, templates, asset manifests and staged assets)."""
        self.root.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".synth-", dir=self.root))
        try:
            for path in assembly_files(self.outdir):
                target = scratch / path.relative_to(self.outdir)
                if path.is_dir():
                    shutil.copytree(path, target, symlinks=True)
                else:
                    shutil.copy2(path, target)
            scratch.rename(self.entry)
        except OSError:  # another synth of the same inputs stored it first
            shutil.rmtree(scratch, ignore_errors=True)
        prune(self.root)


def prune(root: Path, keep: int = MAX_ENTRIES) -> None:
    """Only the ``keep`` most recently stored assemblies stay (every source change makes new keys)."""
    entries = sorted(
        (p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for stale in entries[keep:]:
        shutil.rmtree(stale, ignore_errors=True)


def assembly_files(outdir: Path) -> list[Path]:
    """What a synth writes into ``outdir``: the top-level manifests and templates, and the asset directories the
    asset manifests name (not the CLI's locks, nor files other tools left there)."""
    files = [p for p in outdir.iterdir() if p.is_file() and _written_by_synth(p.name)]
    named = "".join(p.read_text(errors="replace") for p in files if p.name.endswith(".assets.json"))
    assets = [p for p in outdir.iterdir() if p.name.startswith("asset.") and f'"{p.name}"' in named]
    return sorted(files + assets)


def _written_by_synth(name: str) -> bool:
    return name in ASSEMBLY_FILES or name.endswith(ASSEMBLY_SUFFIXES)


def digest_sources(project: Path) -> hashlib._Hash:
    digest = hashlib.sha256()
    paths = [project / name for name in SOURCE_FILES]
    for tree in SOURCE_TREES:
        paths += [p for p in (project / tree).rglob("*") if p.is_file() and not SKIPPED_PARTS & set(p.parts)]
    for path in sorted(p for p in paths if p.is_file() and p.suffix != ".pyc"):
        digest.update(str(path.relative_to(project)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest


def library_versions() -> list[str]:
    found = [f"python={sys.version}"]
    for name in LIBRARIES:
        try:
            found.append(f"{name}={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name}=absent")
    return found


def read_variables(environ: Mapping[str, str]) -> list[str]:
    """The environment a synth reads, as ``NAME=value`` lines."""

    def read(name: str) -> bool:
        if name in UNREAD_VARIABLES or name == CONFIG_VARIABLE or name.startswith(LOCAL_PREFIX):
            return False  # the settings file is keyed by its bytes (settings_bytes)
        return name.startswith(("DOCTABLE_", "CDK_")) or name in READ_VARIABLES

    return [f"{name}={environ[name]}" for name in sorted(environ) if read(name)]


def _read(path: Path, cwd: Path) -> bytes:
    path = path if path.is_absolute() else cwd / path
    return path.read_bytes() if path.is_file() else b"(absent)"


def settings_bytes(environ: Mapping[str, str], cwd: Path) -> bytes:
    """The settings file's bytes (not its path: no template holds it), and those of the files its knobs name
    (the table's resource policy document, each subscriber's handler file and requirements file: their assets)."""
    path = Path(environ[CONFIG_VARIABLE]) if environ.get(CONFIG_VARIABLE) else Path(SETTINGS_FILE)
    context = json.loads(environ.get("CDK_CONTEXT_JSON") or "{}")
    config = resolve_settings(context=user_context(context), environ=environ, cwd=cwd).config
    files = [config.resource_policy_path]
    for spec in config.subscribers:
        files += [spec.path, spec.requirements_path]
    named = b"".join(_read(Path(p), cwd) + b"\0" for p in files if p)
    return _read(path, cwd) + b"\0" + named + config.project.encode()


def synth_key(project: Path, environ: Mapping[str, str], cwd: Path) -> str:
    digest = digest_sources(project)
    for line in [*library_versions(), *read_variables(environ)]:
        digest.update(line.encode() + b"\0")
    digest.update(settings_bytes(environ, cwd))
    return digest.hexdigest()[:32]


def from_environ(project: Path | None = None, environ: Mapping[str, str] | None = None) -> SynthCache | None:
    """The cache entry of this synth of ``project`` (the app's directory, this package's parent), or None: no
    cache asked for, no output directory, or an overflowed context."""
    project = PROJECT if project is None else project
    environ = os.environ if environ is None else environ
    root, outdir = environ.get(CACHE_VARIABLE), environ.get("CDK_OUTDIR")
    if not root or not outdir or environ.get(CONTEXT_OVERFLOW_VARIABLE):
        return None
    try:
        key = synth_key(project, environ, Path.cwd())
    except (ConfigError, ValueError, OSError):  # the synth itself says what is wrong with the settings
        return None
    return SynthCache(Path(root), key, Path(outdir))
