"""app.py on the project's Node.js prints no toolchain warning, and its synth worker (infra/synth/worker.py) writes
the same cloud assembly as app.py in a process of its own, refusing what it must not serve."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.synth import worker as synth_worker
from tests.support.localaws import synth_worker as start_worker
from tooling import toolchain

ROOT = Path(__file__).resolve().parents[2]
# What jsii and the CDK print when the Node.js line is past its end of life, not yet tested, or an API is
# deprecated; none may come back.
WARNINGS = ("end-of-life", "not supported", "untested", "deprecated", "!!!!")
# Two shapes that set the same knobs to different values, in the order a worker would meet them: the second must
# not inherit the first's context.
SHAPES = (
    {"env": "dev", "table_base": "wk", "stream": "new-and-old", "ttl": "on", "gsi": "gsi1"},
    {"env": "dev", "table_base": "wk", "stream": "none", "ttl": "off", "pitr": "on"},
)


def app_env(tmp_path: Path, context: dict[str, str], outdir: Path) -> dict[str, str]:
    """The environment the CDK CLI gives app.py, on a PATH without the project's Node.js: app.py finds it."""
    inherited = {
        k: v for k, v in os.environ.items() if not k.startswith(("DOCTABLE_", "CDK_", "AWS_", "JSII_"))
    }
    settings = tmp_path / "doctable.toml"
    settings.write_text("[defaults]\n")
    return {
        **inherited,
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "DOCTABLE_CONFIG": str(settings),
        "CDK_CONTEXT_JSON": json.dumps(context),
        "CDK_OUTDIR": str(outdir),
    }


def run_app(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def assembly(outdir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(outdir)): p.read_bytes() for p in sorted(outdir.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with start_worker(tmp_path_factory.mktemp("worker")) as path:
        yield path


def test_the_cli_itself_on_the_pinned_node_prints_no_toolchain_warning(tmp_path: Path) -> None:
    tools = toolchain.find()
    env = tools.environment(
        {k: v for k, v in app_env(tmp_path, {}, tmp_path / "o").items() if not k.startswith("CDK_")}
    )
    result = subprocess.run(
        tools.cdk("synth", "--quiet", "--no-notices", "-c", "stream=new-and-old", "-o", str(tmp_path / "cli.out")),
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    printed = (result.stdout + result.stderr).lower()
    assert [w for w in WARNINGS if w in printed] == [], printed[-2000:]


def test_the_worker_writes_the_assembly_app_py_writes_alone_shape_after_shape(
    worker: str, tmp_path: Path
) -> None:
    for number, shape in enumerate(SHAPES):
        # GIVEN the same context and settings, once synthesized by app.py alone and once handed to the worker
        alone = tmp_path / f"alone-{number}"
        handed = tmp_path / f"worker-{number}"
        first = run_app(app_env(tmp_path, shape, alone))
        second = run_app({**app_env(tmp_path, shape, handed), synth_worker.WORKER_VARIABLE: worker})
        assert (first.returncode, second.returncode) == (0, 0), first.stderr[-1500:] + second.stderr[-1500:]
        # (app.py run as the CLI runs it, with the machine's PATH and no JSII_NODE: on the project's Node.js, it
        # printed no end-of-life, untested or deprecated warning)
        printed = (first.stdout + first.stderr).lower()
        assert [w for w in WARNINGS if w in printed] == [], printed[-2000:]
        # THEN every file of the two cloud assemblies is the same, byte for byte
        written, served = assembly(alone), assembly(handed)
        assert sorted(written) == sorted(served)
        assert [name for name in written if written[name] != served[name]] == []


def test_a_bad_setting_handed_to_the_worker_fails_as_it_fails_alone(worker: str, tmp_path: Path) -> None:
    bad = {"env": "dev", "gsi": "gsi2"}
    alone = run_app(app_env(tmp_path, bad, tmp_path / "a"))
    handed = run_app({**app_env(tmp_path, bad, tmp_path / "b"), synth_worker.WORKER_VARIABLE: worker})
    assert alone.returncode == handed.returncode == 1
    assert "gsi='gsi2' is not allowed; allowed values: none|gsi1" in handed.stderr
    assert alone.stderr == handed.stderr


def test_the_worker_refuses_another_project_and_changed_sources() -> None:
    def never(context: object, outdir: object) -> None:
        raise AssertionError("a refused request must not synthesize")

    request = {"project": "/elsewhere", "cwd": "/", "environ": {}}
    assert "refused" in synth_worker._answer(request, "digest", never)
    request["project"] = str(synth_worker.PROJECT)
    assert "refused" in synth_worker._answer(request, "not the sources' digest", never)


def test_no_worker_at_the_named_socket_means_the_app_synthesizes_itself(tmp_path: Path) -> None:
    environ = {synth_worker.WORKER_VARIABLE: str(tmp_path / "nobody.sock")}
    assert synth_worker.delegate(environ) is None
