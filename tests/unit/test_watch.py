"""`doctable watch`: what it refuses, what it sends (the asset as synth stages it), and that a change under the
source sends the code again."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import pytest

from contract.knobs import resolve_config
from doctable.operate import watch as w

LOCAL = {"DOCTABLE_DEPLOY_TARGET": "local", "AWS_ENDPOINT_URL": "https://localhost:4599"}


@pytest.mark.parametrize(
    ("knobs", "environ", "reason"),
    [
        ({"stream": "new-and-old", "deploy_target": "local"}, LOCAL, None),
        ({"stream": "new-and-old"}, {}, "local AWS only"),
        ({"stream": "new-and-old", "deploy_target": "local"}, {}, "local AWS only"),
        ({"stream": "new-and-old", "deploy_target": "local", "snapstart": "on"}, LOCAL, "snapstart=on"),
        (
            {"stream": "new-and-old", "deploy_target": "local", "powertools": "bundled"},
            LOCAL,
            "powertools=bundled",
        ),
        ({"deploy_target": "local"}, LOCAL, "consumer=none"),
    ],
)
def test_what_watch_refuses(knobs: dict[str, str], environ: dict[str, str], reason: str | None) -> None:
    found = w.refusal(resolve_config(context=knobs, environ={}), environ)
    assert (found is None) if reason is None else (found is not None and reason in found), found


def test_it_sends_the_staged_package_then_again_on_a_change(tmp_path: Path) -> None:
    source = tmp_path / "stream_consumer"
    shutil.copytree(w.SOURCE, source, ignore=shutil.ignore_patterns("__pycache__"))
    sent: list[bytes] = []
    polls = {"n": 0}

    def stop() -> bool:
        polls["n"] += 1
        if len(sent) == 1 and polls["n"] == 2:  # the user edits the handler while watching
            handler = source / "handler.py"
            handler.write_text(handler.read_text() + "\nWATCH_MARKER = 1\n")
        return len(sent) >= 2

    updates = w.watch_source(
        source,
        lambda code: sent.append(code) or 0.0,
        lambda _: None,
        build=tmp_path / "b",
        once=False,
        stop=stop,
    )
    assert len(updates) == len(sent) == 2
    first, second = (zipfile.ZipFile(io.BytesIO(code)) for code in sent)
    assert "stream_consumer/handler.py" in first.namelist()
    assert b"WATCH_MARKER" not in first.read("stream_consumer/handler.py")
    assert b"WATCH_MARKER" in second.read("stream_consumer/handler.py")


def test_once_sends_once(tmp_path: Path) -> None:
    sent: list[bytes] = []
    w.watch_source(w.SOURCE, lambda code: sent.append(code) or 0.0, lambda _: None, build=tmp_path, once=True)
    assert len(sent) == 1
