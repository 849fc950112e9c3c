"""infra/synth/cache.py: what the key covers, what a hit copies, what a store keeps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from infra.synth import cache as sc

BASE_ENV = {
    "CDK_CONTEXT_JSON": json.dumps({"env": "dev"}),
    "CDK_DEFAULT_ACCOUNT": "123456789012",
    "CDK_DEFAULT_REGION": "us-east-1",
    "CDK_OUTDIR": "/tmp/out-a",
    "CDK_ERROR_FILE": "/tmp/out-a/error.txt",
    "CDK_PERF_COUNTERS_FILE": "/tmp/out-a/performance-counters.json",
    "DOCTABLE_SYNTH_CACHE": "/tmp/cache",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for name in ("contract/knobs", "infra", "functions/stream_consumer"):
        (root / name).mkdir(parents=True)
    (root / "app.py").write_text("print('app')\n")
    (root / "cdk.json").write_text("{}\n")
    (root / "contract" / "knobs" / "__init__.py").write_text("KNOBS = 1\n")
    (root / "infra" / "stack.py").write_text("STACK = 1\n")
    (root / "functions" / "stream_consumer" / "handler.py").write_text("def handler(): ...\n")
    (root / "doctable.toml").write_text("[defaults]\n")
    return root


def resource_policy(sid: str) -> dict[str, object]:
    statement = {
        "Sid": sid,
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
        "Action": "dynamodb:GetItem",
        "Resource": "*",
    }
    return {"Version": "2012-10-17", "Statement": [statement]}


def other_settings(project: Path) -> Path:
    path = project / "other.toml"
    path.write_text("[defaults]\nttl = 'on'\n")
    return path


def key(project: Path, **changes: str | None) -> str:
    environ = {k: v for k, v in {**BASE_ENV, **changes}.items() if v is not None}
    return sc.synth_key(project, environ, project)


def test_the_key_changes_with_every_input_a_synth_reads(project: Path) -> None:
    # GIVEN one synth's key
    first = key(project)
    assert key(project) == first  # the same inputs, the same key
    # THEN each input the app reads makes another key
    changed = {
        "context": key(project, CDK_CONTEXT_JSON=json.dumps({"env": "dev", "gsi": "gsi1"})),
        "knob variable": key(project, DOCTABLE_TTL="on"),
        "environment": key(project, DOCTABLE_ENV="stg"),
        "account": key(project, CDK_DEFAULT_ACCOUNT="210987654321"),
        "region": key(project, AWS_REGION="eu-west-1"),
        "settings file": key(project, DOCTABLE_CONFIG=str(other_settings(project))),
    }
    assert first not in changed.values() and len(set(changed.values())) == len(changed), changed
    for path, text in [
        ("contract/knobs/__init__.py", "KNOBS = 2\n"),
        ("infra/stack.py", "STACK = 2\n"),
        ("functions/stream_consumer/handler.py", "def handler(): return 1\n"),
        ("app.py", "print('other')\n"),
        ("cdk.json", '{"context": {}}\n'),
        ("doctable.toml", "[defaults]\nttl = 'on'\n"),
    ]:
        before = key(project)
        (project / path).write_text(text)
        assert key(project) != before, path
    (project / "infra" / "new.py").write_text("")  # a new source file
    assert key(project) != before


def test_the_key_holds_the_settings_bytes_not_their_path_and_the_resource_policy_it_names(
    project: Path,
) -> None:
    # GIVEN the same settings in two places (each test worker's local AWS writes its own copy)
    copy = project / "elsewhere" / "doctable.toml"
    copy.parent.mkdir()
    copy.write_text((project / "doctable.toml").read_text())
    assert key(project, DOCTABLE_CONFIG=str(copy)) == key(project)
    # AND a resource policy document the knobs name: its bytes are part of the key
    policy = project / "policy.json"
    policy.write_text(json.dumps(resource_policy("a")))
    context = json.dumps({"env": "dev", "resource_policy": str(policy)})
    before = key(project, CDK_CONTEXT_JSON=context)
    policy.write_text(json.dumps(resource_policy("b")))
    assert key(project, CDK_CONTEXT_JSON=context) != before
    # AND settings that do not resolve are not looked up (the synth says what is wrong)
    bad = {**BASE_ENV, "CDK_CONTEXT_JSON": json.dumps({"env": "dev", "gsi": "nope"})}
    assert sc.from_environ(project, bad) is None


def test_the_key_holds_each_subscribers_handler_and_requirements_files(project: Path) -> None:
    # GIVEN settings declaring a subscriber with its handler file and its requirements file
    (project / "subscribers").mkdir()
    handler = project / "subscribers" / "search.py"
    handler.write_text("def handler(event, context):\n    return None\n")
    requirements = project / "subscribers" / "requirements.txt"
    requirements.write_text("tinypkg==1.0\n")
    (project / "doctable.toml").write_text(
        "[defaults]\nstream = 'new-and-old'\n[defaults.subscribers.search]\n"
        "handler = 'subscribers/search.py:handler'\nrequirements = 'subscribers/requirements.txt'\n"
    )
    before = key(project)
    # WHEN the handler file changes  THEN the key does (its asset changes), and again with its requirements
    handler.write_text("def handler(event, context):\n    return {}\n")
    after_handler = key(project)
    requirements.write_text("tinypkg==1.1\n")
    assert len({before, after_handler, key(project)}) == 3


def test_the_key_ignores_what_names_only_where_files_go(project: Path) -> None:
    first = key(project)
    same = [
        key(project, CDK_OUTDIR="/tmp/out-b"),
        key(project, CDK_ERROR_FILE="/tmp/out-b/error.txt"),
        key(project, CDK_PERF_COUNTERS_FILE="/tmp/out-b/p.json"),
        key(project, DOCTABLE_STATE_DIR="/tmp/state"),
        key(project, DOCTABLE_CDK_OUTPUT="/tmp/cdk.out"),
        key(project, DOCTABLE_LOCAL_DIR="/tmp/local"),
        key(project, DOCTABLE_SYNTH_CACHE="/tmp/elsewhere"),
        key(project, HOME="/root", PATH="/usr/bin"),
    ]
    assert same == [first] * len(same)
    # bytecode beside the sources is not a source
    pycache = project / "infra" / "__pycache__"
    pycache.mkdir()
    (pycache / "stack.cpython-313.pyc").write_bytes(b"\0")
    assert key(project) == first


def test_no_cache_without_its_variable_an_output_directory_or_with_an_overflowed_context(
    project: Path,
) -> None:
    assert sc.from_environ(project, {**BASE_ENV, "DOCTABLE_SYNTH_CACHE": ""}) is None
    assert sc.from_environ(project, {k: v for k, v in BASE_ENV.items() if k != "CDK_OUTDIR"}) is None
    overflowed = {**BASE_ENV, sc.CONTEXT_OVERFLOW_VARIABLE: "/tmp/context.json"}
    assert sc.from_environ(project, overflowed) is None
    found = sc.from_environ(project, BASE_ENV)
    assert found is not None and found.root == Path("/tmp/cache") and found.outdir == Path("/tmp/out-a")


def write_assembly(outdir: Path) -> None:
    (outdir / "asset.abc" / "stream_consumer").mkdir(parents=True)
    (outdir / "asset.abc" / "stream_consumer" / "handler.py").write_text("x = 1\n")
    (outdir / "asset.old").mkdir()  # a previous synth's asset that no manifest names now
    (outdir / "manifest.json").write_text('{"version": "1"}')
    (outdir / "tree.json").write_text("{}")
    (outdir / "cdk.out").write_text('{"version": "1"}')
    (outdir / "s.template.json").write_text("{}")
    (outdir / "s.assets.json").write_text('{"files": {"abc": {"source": {"path": "asset.abc"}}}}')
    (outdir / "synth.lock").write_text("")  # the CLI's
    (outdir / "outputs.json").write_text("{}")  # a deploy's outputs file
    (outdir / "performance-counters.json").write_text("{}")


def test_a_store_keeps_the_assembly_and_a_restore_copies_it_out(tmp_path: Path) -> None:
    # GIVEN an assembly a synth wrote, stored
    outdir, root = tmp_path / "out", tmp_path / "cache"
    outdir.mkdir()
    write_assembly(outdir)
    sc.SynthCache(root, "k1", outdir).store()
    stored = sorted(str(p.relative_to(root / "k1")) for p in (root / "k1").rglob("*"))
    assert stored == [
        "asset.abc",
        "asset.abc/stream_consumer",
        "asset.abc/stream_consumer/handler.py",
        "cdk.out",
        "manifest.json",
        "s.assets.json",
        "s.template.json",
        "tree.json",
    ]
    # WHEN another output directory is filled from it
    other = tmp_path / "other"
    assert sc.SynthCache(root, "k1", other).restore()
    assert (other / "asset.abc" / "stream_consumer" / "handler.py").read_text() == "x = 1\n"
    assert (other / "s.template.json").read_text() == "{}"
    # THEN an unknown key restores nothing
    assert not sc.SynthCache(root, "k2", tmp_path / "third").restore()
    assert not (tmp_path / "third").exists()


def test_a_second_store_of_the_same_key_keeps_the_first_and_old_entries_are_pruned(tmp_path: Path) -> None:
    outdir, root = tmp_path / "out", tmp_path / "cache"
    outdir.mkdir()
    write_assembly(outdir)
    sc.SynthCache(root, "k1", outdir).store()
    sc.SynthCache(root, "k1", outdir).store()  # a concurrent synth of the same inputs
    assert sorted(p.name for p in root.iterdir()) == ["k1"]  # no scratch directory left behind
    for n, name in enumerate(["k2", "k3"]):
        sc.SynthCache(root, name, outdir).store()
        os.utime(root / name, (2_000_000_000 + n, 2_000_000_000 + n))
    sc.prune(root, keep=2)
    assert sorted(p.name for p in root.iterdir()) == ["k2", "k3"]
