"""What applications install, doctable-client (clients/build_wheel.py, `make client-wheel`), holds the `doctable`
import namespace alone: doctable/__init__.py and doctable/client/, none of the repository's other top-level
packages (contract, infra, local, functions) nor doctable's other modules; it carries the main project's version
and requires boto3 alone; pip installs it offline and the client imports from there, the repository out of reach."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
DIST_INFO = f"doctable_client-{VERSION}.dist-info"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """GIVEN the wheel built offline by the script `make client-wheel` runs, into a folder of its own."""
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "clients" / "build_wheel.py"), str(out)],
        capture_output=True, text=True, timeout=60, cwd=out,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (built,) = out.glob("*.whl")
    assert proc.stdout.strip() == str(built)
    return built


def _files(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_the_wheel_holds_the_doctable_namespace_alone(wheel: Path) -> None:
    # WHEN its file list and its top_level.txt are read
    files = _files(wheel)
    top_level = {name.split("/")[0] for name in files} - {DIST_INFO}

    # THEN every file is under doctable/ or the dist-info folder, and both name doctable alone
    assert top_level == {"doctable"}
    assert set(files[f"{DIST_INFO}/top_level.txt"].decode().split()) == {"doctable"}
    # AND doctable/ holds exactly doctable/__init__.py and the client's modules, as in the repository
    client = {p.relative_to(ROOT).as_posix() for p in (ROOT / "doctable" / "client").rglob("*.py")}
    modules = {name for name in files if name.startswith("doctable/")}
    assert modules == {"doctable/__init__.py", *client}
    assert {"doctable/__init__.py", "doctable/client/client.py"} <= modules
    assert {name.split("/")[1] for name in modules if name.count("/") > 1} == {"client"}
    for name in ("contract/", "infra/", "local/", "functions/", "stream_consumer/", "doctable/cli.py"):
        assert not any(f.startswith(name) for f in files), name
    assert all(files[name] == (ROOT / name).read_bytes() for name in modules)


def test_the_wheel_names_doctable_client_its_version_and_boto3_alone(wheel: Path) -> None:
    # WHEN its METADATA is read
    meta = Parser().parsestr(_files(wheel)[f"{DIST_INFO}/METADATA"].decode())

    # THEN it is doctable-client at the main project's version, requiring boto3 and nothing else
    assert wheel.name == f"doctable_client-{VERSION}-py3-none-any.whl"
    assert meta["Name"] == "doctable-client"
    assert meta["Version"] == VERSION
    (requirement,) = meta.get_all("Requires-Dist") or []
    assert requirement.startswith("boto3")


def test_the_wheel_record_lists_every_file_with_its_hash(wheel: Path) -> None:
    # WHEN RECORD is read beside the files
    files = _files(wheel)
    rows = [line.split(",") for line in files[f"{DIST_INFO}/RECORD"].decode().splitlines()]

    # THEN it lists each file once, itself without a hash, the others with their sha256 and size
    assert sorted(path for path, _, _ in rows) == sorted(files)
    for path, digest, size in rows:
        if path == f"{DIST_INFO}/RECORD":
            assert (digest, size) == ("", "")
            continue
        expected = base64.urlsafe_b64encode(hashlib.sha256(files[path]).digest()).rstrip(b"=").decode()
        assert (digest, size) == (f"sha256={expected}", str(len(files[path])))


def test_pip_installs_it_and_the_client_imports_from_there_alone(wheel: Path, tmp_path: Path) -> None:
    # WHEN pip installs the wheel offline into a folder of its own
    target = tmp_path / "site"
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--no-build-isolation",
         "--disable-pip-version-check", "--quiet", "--target", str(target), str(wheel)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stderr

    # THEN the folder holds doctable and its dist-info alone
    assert {p.name for p in target.iterdir()} == {"doctable", DIST_INFO}

    # AND an isolated interpreter (-I -S: no environment, no site, so not the editable install of the repository),
    # whose path is the folder then the venv's site-packages for boto3, imports the client from the folder and
    # finds none of doctable's other modules
    program = (
        "import importlib.util, sys; sys.path[:0] = sys.argv[1:]; from doctable.client import DocClient; "
        "import doctable.client as c; print(c.__file__); print(importlib.util.find_spec('doctable.cli'))"
    )
    paths = dict.fromkeys([str(target), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", program, *paths],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    client_file, cli_spec = proc.stdout.splitlines()
    assert Path(client_file) == target / "doctable" / "client" / "__init__.py"
    assert cli_spec == "None"
