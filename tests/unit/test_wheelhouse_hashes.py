"""A subscriber's build trusts wheels by their hashes (tooling/wheelhouse.py): hash-pinned requirements install
with --require-hashes, the cache is keyed by the resolved wheels' hashes, and PIP_EXTRA_INDEX_URL is refused unless
the subscriber's extra_index_urls names it. Offline: pip reads a directory of wheels built here."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from contract.knobs import ConfigError, resolve_config
from contract.requirements import WheelhouseError, read_requirements, requires_hashes
from tests.unit.test_wheelhouse import _settings, _stage, _tree, offline_index, tiny_wheel
from tooling.wheelhouse import PINNED

pytestmark = pytest.mark.unit

INDEX_URL = "https://pypi.example.com/simple"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An offline index of tinypkg (VALUE = 42) and needstiny (which requires tinypkg), set for pip."""
    folder = tmp_path / "index"
    tiny_wheel(folder, "tinypkg")
    tiny_wheel(folder, "needstiny", requires=("tinypkg",))
    for name, value in offline_index(folder).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    return folder


def _pinned(index: Path, name: str = "tinypkg", digest: str = "") -> str:
    wheel = index / f"{name}-1.0-py3-none-any.whl"
    return f"{name}==1.0 \\\n    --hash=sha256:{digest or _sha256(wheel)}\n    # via -r requirements.in\n"


def test_hash_pinned_lines_are_read_with_their_hashes(tmp_path: Path) -> None:
    # GIVEN pip-compile --generate-hashes' shape: continued lines, two hashes, a comment between packages
    path = tmp_path / "requirements.txt"
    path.write_text(
        f"attrs==23.1.0 \\\n    --hash=sha256:{'A' * 64} \\\n    --hash sha512:{'b' * 128}\n# x\nidna===3.4 --hash=sha384:{'c' * 96}\n"
    )
    lines = read_requirements(path, "requirements.txt")
    # THEN each package is one line, its hashes normalized, and the file is in hash-checking mode
    assert lines == (
        f"attrs==23.1.0 --hash=sha256:{'a' * 64} --hash=sha512:{'b' * 128}",
        f"idna===3.4 --hash=sha384:{'c' * 96}",
    )
    assert requires_hashes(lines) and not requires_hashes(("attrs==23.1.0",))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"attrs==1 --hash=sha256:{'a' * 64}\nidna==3\n", "line 2: no --hash while line 1 has one"),
        (f"attrs>=1 --hash=sha256:{'a' * 64}\n", "'attrs>=1' is hashed without an exact version"),
        ("attrs==1 --hash=sha256:abc\n", "--hash=sha256:abc is not a digest pip checks"),
        (f"attrs==1 --hash=md5:{'a' * 32}\n", f"--hash=md5:{'a' * 32} is not a digest pip checks"),
    ],
)
def test_a_bad_hash_pin_is_one_line(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text(text)
    with pytest.raises(WheelhouseError) as caught:
        read_requirements(path, "requirements.txt")
    assert expected in str(caught.value) and "\n" not in str(caught.value)
    assert "allowed: " in str(caught.value)


def test_pinned_requirements_install_checked_and_are_served_by_their_pins(
    index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a requirements file pinned with the wheel's hash, staged once
    settings_dir = _settings(tmp_path, _pinned(index))
    first = _stage(settings_dir, tmp_path / "b1", tmp_path / "cache")
    assert (first / "tinypkg" / "__init__.py").read_bytes() == b"VALUE = 42\n"
    # WHEN the index is out of reach and another synth stages it
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "no-index"))
    second = _stage(settings_dir, tmp_path / "b2", tmp_path / "cache")
    # THEN the entry its pins name served it, its wheels checked against them
    assert second.name == first.name and _tree(second) == _tree(first)
    # AND a cached wheel that no longer matches its pin is not served (pip is asked again: here, out of reach)
    (pin,) = (tmp_path / "cache" / PINNED).iterdir()
    (wheel,) = (tmp_path / "cache" / pin.read_text() / "wheels").glob("*.whl")
    wheel.write_bytes(wheel.read_bytes() + b"tampered")
    with pytest.raises(WheelhouseError):
        _stage(settings_dir, tmp_path / "b3", tmp_path / "cache")


def test_a_wheel_that_matches_no_pin_is_refused_in_one_line(index: Path, tmp_path: Path) -> None:
    settings_dir = _settings(tmp_path, _pinned(index, digest="0" * 64))
    with pytest.raises(WheelhouseError) as caught:
        _stage(settings_dir, tmp_path / "build", tmp_path / "cache")
    message = str(caught.value)
    assert message.startswith("package tinypkg==1.0: its wheel for manylinux2014_x86_64")
    assert _sha256(index / "tinypkg-1.0-py3-none-any.whl") in message and "\n" not in message
    assert not list(tmp_path.glob("build/subscriber-*")) and not list((tmp_path / "cache").glob("*/site"))


def test_an_unpinned_dependency_in_hash_checking_mode_is_named(index: Path, tmp_path: Path) -> None:
    settings_dir = _settings(tmp_path, _pinned(index, "needstiny"))
    with pytest.raises(WheelhouseError) as caught:
        _stage(settings_dir, tmp_path / "build", tmp_path / "cache")
    assert str(caught.value).startswith(
        "package tinypkg (required by needstiny==1.0) is not pinned with == and --hash"
    )


def test_the_cache_is_keyed_by_the_resolved_wheels_not_the_requirement_text(
    index: Path, tmp_path: Path
) -> None:
    # GIVEN "tinypkg" staged once
    settings_dir = _settings(tmp_path, "tinypkg\n")
    first = _stage(settings_dir, tmp_path / "b1", tmp_path / "cache")
    # WHEN the index serves another wheel for the same text
    shutil.rmtree(index)
    tiny_wheel(index, "tinypkg", value=43)
    second = _stage(settings_dir, tmp_path / "b2", tmp_path / "cache")
    # THEN the new wheel has its own entry and asset; the old entry never served it
    assert (second / "tinypkg" / "__init__.py").read_bytes() == b"VALUE = 43\n"
    assert second.name != first.name
    assert len(list((tmp_path / "cache").glob("*/site"))) == 2


def test_an_extra_index_is_refused_unless_the_subscriber_names_it(
    index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.unit.test_wheelhouse import RUNTIME
    from tooling.asset import stage_subscriber
    from tooling.wheelhouse import lambda_platform

    settings_dir = _settings(tmp_path, "tinypkg\n")

    def stage(extra_indexes: tuple[str, ...]) -> Path:
        stage, _ = stage_subscriber(
            RUNTIME, "subscribers/search.py", "handler", settings_dir, tmp_path / "build",
            requirements="subscribers/requirements.txt", platform=lambda_platform("x86_64"),
            cache=tmp_path / "cache", extra_indexes=extra_indexes,
        )  # fmt: skip
        return stage

    # GIVEN PIP_EXTRA_INDEX_URL set for the build
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", f"{INDEX_URL}/ https://other.example.com/simple")
    # THEN a subscriber that names neither index is refused, in one line naming both, before pip runs
    with pytest.raises(WheelhouseError) as caught:
        stage(())
    assert str(caught.value).startswith(
        f"PIP_EXTRA_INDEX_URL names {INDEX_URL}/, https://other.example.com/simple,"
    )
    assert not (tmp_path / "cache").exists()
    # AND one naming only one of them is refused for the other
    with pytest.raises(
        WheelhouseError, match=r"^PIP_EXTRA_INDEX_URL names https://other\.example\.com/simple,"
    ):
        stage((INDEX_URL,))
    # AND one naming both builds
    assert (stage((INDEX_URL, "https://other.example.com/simple")) / "tinypkg").is_dir()


@pytest.mark.parametrize(
    "value", ["https://u:pw@pypi.example.com/simple", "http://pypi.example.com/simple", "x"]
)
def test_extra_index_urls_are_https_urls_without_credentials(value: str) -> None:
    ROOT = Path(__file__).resolve().parents[2]
    declared = {"search": {"handler": "examples/subscribers/search.py:handler", "extra_index_urls": [value]}}
    with pytest.raises(ConfigError) as caught:
        resolve_config(context={"stream": "new-and-old"}, environ={}, subscribers=declared, settings_dir=ROOT)
    (problem,) = caught.value.problems
    assert (
        problem.startswith("subscriber 'search': extra_index_urls = [")
        and "allowed: an array of https://" in problem
    )
    # AND a URL that is one is kept on the subscriber
    declared["search"]["extra_index_urls"] = [INDEX_URL]
    (spec,) = resolve_config(
        context={"stream": "new-and-old"}, environ={}, subscribers=declared, settings_dir=ROOT
    ).subscribers
    assert spec.extra_index_urls == (INDEX_URL,)
