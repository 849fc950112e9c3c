"""A subscriber's requirements (tooling/wheelhouse.py), installed into its staged asset (tooling/asset.py) from a
wheelhouse cached per requirements, platform and Python: offline, pip reads a directory of wheels built here with
the standard library (PIP_NO_INDEX, PIP_FIND_LINKS; no pip configuration file)."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from contract.knobs import resolve_config
from contract.requirements import WheelhouseError, read_requirements
from tooling.asset import stage_subscriber
from tooling.wheelhouse import host_platform, lambda_platform, pip_failure

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "functions" / "subscriber_runtime"
TEAM_MODULE = "import tinypkg\n\n\ndef handler(event, context):\n    return {'value': tinypkg.VALUE}\n"


def tiny_wheel(
    directory: Path, name: str, tag: str = "py3-none-any", *, requires: tuple[str, ...] = (), value: int = 42
) -> Path:
    """A wheel of one package ``name`` (``VALUE = 42`` or ``value``) tagged ``tag``: METADATA, WHEEL and RECORD in
    a zip, as clients/build_wheel.py writes one."""
    dist_info = f"{name}-1.0.dist-info"
    files = {f"{name}/__init__.py": f"VALUE = {value}\n".encode()}
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    files[f"{dist_info}/METADATA"] = metadata.encode()
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n".encode()
    )

    def digest(data: bytes) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

    record = "".join(f"{path},sha256={digest(data)},{len(data)}\n" for path, data in files.items())
    files[f"{dist_info}/RECORD"] = f"{record}{dist_info}/RECORD,,\n".encode()
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / f"{name}-1.0-{tag}.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(zipfile.ZipInfo(path, (1980, 1, 1, 0, 0, 0)), data)
    return wheel


def offline_index(wheels: Path) -> Mapping[str, str]:
    """pip's variables for an index that is ``wheels`` alone (no network, no configuration file)."""
    return {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}


@dataclass(frozen=True)
class Staged:
    """tinypkg staged once for Lambda x86_64 (the module's tests share its pip runs)."""

    root: Path  # a temporary folder: the index, the settings folder, the caches, the build folders
    index: Path
    settings_dir: Path
    stage: Path


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Staged]:
    root = tmp_path_factory.mktemp("wheelhouse")
    index = root / "index"
    tiny_wheel(index, "tinypkg")
    tiny_wheel(index, "winonly", "cp313-cp313-win_amd64")
    tiny_wheel(index, "needswin", requires=("winonly",))
    tiny_wheel(index, "armonly", "cp313-cp313-manylinux_2_28_aarch64")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in offline_index(index).items():
            patch.setenv(name, value)
        settings_dir = _settings(root, "# the search projection's\ntinypkg==1.0  # pinned\n")
        yield Staged(root, index, settings_dir, _stage(settings_dir, root / "b1", root / "cache1"))


def _settings(tmp_path: Path, requirements: str, folder: str = "project") -> Path:
    settings_dir = tmp_path / folder
    (settings_dir / "subscribers").mkdir(parents=True)
    (settings_dir / "subscribers" / "search.py").write_text(TEAM_MODULE)
    (settings_dir / "subscribers" / "requirements.txt").write_text(requirements)
    return settings_dir


def _stage(settings_dir: Path, build: Path, cache: Path, architecture: str = "x86_64") -> Path:
    stage, _ = stage_subscriber(
        RUNTIME, "subscribers/search.py", "handler", settings_dir, build,
        requirements="subscribers/requirements.txt", platform=lambda_platform(architecture), cache=cache,
    )  # fmt: skip
    return stage


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_requirements_are_in_the_staged_asset_and_the_handler_imports_them(staged: Staged) -> None:
    # GIVEN a subscriber whose handler imports tinypkg, which its requirements file lists, staged for Lambda x86_64
    # THEN the package sits at the asset's root, without scripts
    tree = _tree(staged.stage)
    assert tree["tinypkg/__init__.py"] == b"VALUE = 42\n"
    assert "tinypkg-1.0.dist-info/METADATA" in tree
    assert not any(name.startswith("bin/") for name in tree)
    # AND the staged directory alone (as /var/task, no site-packages) imports it through the team's handler
    script = "from subscriber_code.search import handler; print(handler({'Records': []}, None))"
    run = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(staged.stage)!r}); {script}"],
        capture_output=True, text=True, timeout=60, check=False, cwd=staged.root,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "{'value': 42}"


def test_staging_is_deterministic_and_a_second_synth_installs_nothing(staged: Staged, tmp_path: Path) -> None:
    # GIVEN the same requirements staged with a fresh cache into another build folder
    second = _stage(staged.settings_dir, tmp_path / "b2", tmp_path / "cache2")
    # THEN both are the same bytes under the same name (the same asset hash)
    assert second.name == staged.stage.name and _tree(second) == _tree(staged.stage)
    # WHEN another synth stages it again with the first cache: the index resolves the same wheels
    (entry,) = [p for p in (staged.root / "cache1").iterdir() if (p / "site").is_dir()]
    installed_at = (entry / "site").stat().st_mtime_ns
    third = _stage(staged.settings_dir, tmp_path / "b3", staged.root / "cache1")
    # THEN the entry those wheels name served it: nothing was installed again
    assert third.name == staged.stage.name and _tree(third) == _tree(staged.stage)
    assert (entry / "site").stat().st_mtime_ns == installed_at


def test_a_wheel_is_chosen_by_the_subscribers_architecture(staged: Staged, tmp_path: Path) -> None:
    # GIVEN a package with a wheel for Linux arm64 (manylinux_2_28, which Lambda's python3.13 runs) alone
    settings_dir = _settings(tmp_path, "armonly\n")
    # THEN it installs for an arm64 function
    stage = _stage(settings_dir, tmp_path / "build", tmp_path / "cache", "arm64")
    assert "armonly/__init__.py" in _tree(stage)
    # AND an x86_64 function refuses it in one line naming the package and what is allowed
    with pytest.raises(WheelhouseError) as caught:
        _stage(settings_dir, tmp_path / "build", tmp_path / "cache", "x86_64")
    assert str(caught.value) == (
        "package armonly has no wheel for manylinux2014_x86_64 (up to manylinux_2_34), CPython 3.13; allowed: "
        "a package with a wheel for manylinux2014_x86_64 (up to manylinux_2_34), CPython 3.13, or pure Python "
        "(a py3-none-any wheel)"
    )


def test_a_dependency_without_a_wheel_is_named_with_what_requires_it(staged: Staged, tmp_path: Path) -> None:
    settings_dir = _settings(tmp_path, "needswin\n")
    with pytest.raises(WheelhouseError) as caught:
        _stage(settings_dir, tmp_path / "build", tmp_path / "cache")
    assert str(caught.value).startswith(
        "package winonly (required by needswin) has no wheel for manylinux2014_x86_64"
    )
    assert "\n" not in str(caught.value)
    assert not list(tmp_path.glob("build/subscriber-*")) and not list(tmp_path.glob("cache/*"))


def test_the_local_target_installs_for_this_machines_python(staged: Staged) -> None:
    # GIVEN deploy_target=local: the local AWS runs functions on this machine's Python
    stage, _ = stage_subscriber(
        RUNTIME, "subscribers/search.py", "handler", staged.settings_dir, staged.root / "b1",
        requirements="subscribers/requirements.txt", platform=host_platform(), cache=staged.root / "cache1",
    )  # fmt: skip
    # THEN its wheelhouse is another entry than Lambda's (keyed by the platform); the same wheel, the same asset
    assert "tinypkg/__init__.py" in _tree(stage) and stage == staged.stage
    assert len(list((staged.root / "cache1").iterdir())) == 2


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("-e .", "an editable install"),
        ("--index-url https://example.com/simple", "an index"),
        ("-r other.txt", "another file"),
        ("tinypkg @ https://example.com/tinypkg-1.0-py3-none-any.whl", "a URL"),
        ("./wheels/tinypkg-1.0-py3-none-any.whl", "a path"),
        ("https://example.com/tinypkg.tar.gz", "a bare URL"),
        ("tinypkg==1.0 --config-settings=x=y", "a per-requirement option other than --hash"),
    ],
)
def test_a_line_that_is_not_a_plain_requirement_is_one_line(tmp_path: Path, line: str, what: str) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text(f"tinypkg\n{line}\n")
    with pytest.raises(WheelhouseError) as caught:
        read_requirements(path, "requirements.txt")
    assert str(caught.value) == (
        f"requirements file requirements.txt line 2: {line!r} is not a plain requirement; allowed: one package "
        "per line: a name with optional [extras], version specifiers and ; markers, optionally pinned with --hash "
        "options (no option such as -e, -r or --index-url, no URL and no path)"
    ), what


def test_plain_requirements_are_read_without_comments(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text(
        "# comment\n\nrequests[socks,security] >=2.31, <3  # why\nattrs\n"
        'typing-extensions==4.12.2; python_version < "3.14"\nzope.interface~=6.0\n'
    )
    assert read_requirements(path, "requirements.txt") == (
        "requests[socks,security] >=2.31, <3",
        "attrs",
        'typing-extensions==4.12.2; python_version < "3.14"',
        "zope.interface~=6.0",
    )


def test_the_declaration_checks_the_file_and_keeps_its_path(tmp_path: Path) -> None:
    settings_dir = _settings(tmp_path, "tinypkg\n")
    handler = "subscribers/search.py:handler"

    def resolve(requirements: object) -> object:
        return resolve_config(
            context={"stream": "new-and-old"}, environ={}, settings_dir=settings_dir,
            subscribers={"search": {"handler": handler, "requirements": requirements}},
        )  # fmt: skip

    (spec,) = resolve("subscribers/requirements.txt").subscribers  # type: ignore[attr-defined]
    assert spec.requirements == "subscribers/requirements.txt"
    assert spec.requirements_path == str(settings_dir / "subscribers" / "requirements.txt")
    with pytest.raises(
        ValueError, match=r"subscriber 'search': requirements = '/etc/req.txt' is not allowed"
    ):
        resolve("/etc/req.txt")
    (settings_dir / "subscribers" / "requirements.txt").write_text("-e .\n")
    with pytest.raises(
        ValueError, match=r"subscriber 'search': requirements file subscribers/requirements.txt "
    ):
        resolve("subscribers/requirements.txt")


def test_pips_other_refusals_are_one_line() -> None:
    platform = lambda_platform("arm64")
    unreachable = "WARNING: Retrying ... NewConnectionError(...)\nERROR: Could not find a version that satisfies the requirement x (from versions: none)\n"  # fmt: skip
    assert pip_failure(unreachable, platform).startswith(
        "cannot reach the package index pip is configured with"
    )
    pinned = "ERROR: Could not find a version that satisfies the requirement tinypkg==9 (from versions: 1.0, 1.1)\n"
    assert pip_failure(pinned, platform) == (
        "package tinypkg==9: no version with a wheel for manylinux2014_aarch64 (up to manylinux_2_34), CPython "
        "3.13 matches the requirement; allowed: one of the versions with one (1.0, 1.1)"
    )
    assert pip_failure("ERROR: something else\n", platform) == (
        "pip could not install the requirements: something else"
    )
