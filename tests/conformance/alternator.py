"""An outside DynamoDB suite verified on AWS, run against the local AWS and plain moto in the same run.

ScyllaDB's Alternator keeps a DynamoDB API test suite (``test/alternator`` of scylladb/scylladb) whose authors run
it against AWS DynamoDB itself (``--aws``): the tests of Scylla-only features skip there, known DynamoDB quirks are
marked. Nothing of it is copied here (its licence is not ours): a developer brings a checkout with the search
tool's fetch and passes its folder::

    make conformance-external SUITE=/path/to/scylladb      # or the test/alternator folder itself

The suite is copied into a scratch folder beside small stand-ins for the few helpers it imports from its own
repository (``test.conftest``, ``test.pylib``, ``test.cqlpy``) and run twice, with ``--aws`` and the suite's own
"am I on AWS" check answering yes: once with boto3 pointed at the local AWS, once at plain moto. A test that
passes (or xpasses) matches AWS; one that fails (or xfails: its mark says AWS passes it) differs. The table, by
module and by kind, is printed and written into docs/fidelity.md between its markers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tests.conformance.servers import Server, local_aws, plain_moto

ROOT = Path(__file__).resolve().parents[2]
FIDELITY = ROOT / "docs" / "fidelity.md"
BEGIN = "<!-- external-suite:begin -->"
END = "<!-- external-suite:end -->"
FETCH_HINT = (
    "conformance-external: SUITE=DIR is required: fetch github:scylladb/scylladb with the search tool and pass "
    "the checkout (or its test/alternator folder); allowed: a folder holding test/alternator/conftest.py"
)

# Modules left out, and why: they are about Scylla's CQL side (its roles, schema, service levels, audit) and need
# the Cassandra driver and a CQL connection; every other module runs, its Scylla-only tests skipping by the suite's
# own fixtures as they do on AWS.
LEFT_OUT = {
    "test_audit.py": "Scylla's audit log, read through CQL (imports the Cassandra driver)",
    "test_cql_rbac.py": "CQL roles and their permissions on Alternator tables",
    "test_cql_schema.py": "the CQL schema of Alternator tables",
    "test_service_levels.py": "Scylla's service levels, set through CQL",
}

# The stand-ins: what the suite imports from its own repository, written here from what the suite needs of them.
STANDINS = {
    "test/__init__.py": "",
    "test/conftest.py": '''\
"""Stand-in for the suite's test/conftest.py: fixtures module-scoped, the AWS check answering yes."""
import pytest
import test.alternator.util as _util

_util.is_aws = lambda dynamodb: True  # the harness points boto3 at the server under test with --aws


def pytest_sessionstart(session):
    # The suite names tables by the millisecond (util.unique_table_name), unique within one process only: two
    # pytest-xdist workers can name two tables alike in the same millisecond ("Table already exists"). Each worker
    # starts its names from a point of its own, 10^9 ms apart, so none can meet another's.
    import os
    import time

    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    number = int(worker[2:]) if worker[2:].isdigit() else 0
    _util.unique_table_name.last_ms = int(time.time() * 1000) + number * 10**9


def dynamic_scope():
    return "module"


def pytest_configure(config):
    for name in ("skip_env", "skip_bug", "veryslow"):
        config.addinivalue_line("markers", f"{name}: stand-in marker")


def pytest_runtest_setup(item):
    # The suite's typed skips (its skip_reason_plugin): a test so marked skips, as it does in the suite's own runs.
    for name in ("skip_env", "skip_bug"):
        marker = item.get_closest_marker(name)
        if marker is not None:
            pytest.skip(marker.kwargs.get("reason") or (marker.args[0] if marker.args else name))
''',
    "test/pylib/__init__.py": "",
    "test/pylib/skip_types.py": """\
import pytest


def skip_env(reason=""):
    pytest.skip(reason)


def skip_bug(link="", reason=""):
    pytest.skip(reason or link)
""",
    "test/pylib/driver_utils.py": """\
def safe_driver_shutdown(cluster):
    cluster.shutdown()
""",
    "test/pylib/connect_options.py": """\
from functools import cache


@cache
def add_host_option(parser):
    parser.addoption("--host", default="localhost", help="a DB server host to connect to")
""",
    "test/cqlpy/__init__.py": "",
    "test/cqlpy/conftest.py": """\
import pytest


@pytest.fixture(scope="module")
def host(request):
    return request.config.getoption("--host")
""",
    "test/cqlpy/util.py": """\
import contextlib


@contextlib.contextmanager
def config_value_context(cql, key, value):
    yield
""",
    # The Cassandra driver: imported inside fixtures that, with --aws, never connect; a CQL fixture skips first.
    "cassandra/__init__.py": """\
class ConsistencyLevel:
    ONE = LOCAL_QUORUM = LOCAL_SERIAL = QUORUM = ALL = None


class InvalidRequest(Exception):
    pass
""",
    "cassandra/cluster.py": """\
from cassandra import ConsistencyLevel

EXEC_PROFILE_DEFAULT = object()


class NoHostAvailable(Exception):
    pass


class ExecutionProfile:
    def __init__(self, *args, **kwargs):
        pass


class Cluster:
    def __init__(self, *args, **kwargs):
        raise NoHostAvailable("no CQL here: the suite runs against a DynamoDB API only")
""",
    "cassandra/auth.py": "class PlainTextAuthProvider:\n    def __init__(self, *args, **kwargs):\n        pass\n",
    "cassandra/policies.py": "class RoundRobinPolicy:\n    pass\n",
    "cassandra/query.py": "class SimpleStatement:\n    def __init__(self, *args, **kwargs):\n        pass\n",
    "outcomes_plugin.py": '''\
"""Records each test's outcome (passed, failed, skipped, xfailed, xpassed, error) and its failure text."""
import json
import os

_RESULTS = {}


def pytest_runtest_logreport(report):
    node = report.nodeid
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
            if report.skipped and "known bug in AWS DynamoDB" in str(report.wasxfail):
                outcome = "aws-bug"  # the suite's dynamodb_bug fixture: xfailed on AWS itself before it runs
        elif report.when == "setup" and report.failed:
            outcome = "error"
        else:
            outcome = report.outcome
        _RESULTS[node] = {"outcome": outcome, "text": str(report.longrepr)[-3000:] if report.failed else ""}
    elif report.when == "teardown" and report.failed and node in _RESULTS and _RESULTS[node]["outcome"] == "passed":
        _RESULTS[node] = {"outcome": "error", "text": str(report.longrepr)[-3000:]}


def pytest_sessionfinish(session):
    path = os.environ["ALTERNATOR_OUTCOMES"]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(f"{path}.{worker}", "w") as out:
        json.dump(_RESULTS, out)
''',
}

MATCH = ("passed", "xpassed")
DIFFER = ("failed", "xfailed", "error")


@dataclass(frozen=True)
class Outcome:
    outcome: str
    text: str

    @property
    def kind(self) -> str:
        """What kind of difference from AWS a failure is, read from its failure text."""
        text = self.text
        if self.outcome == "xfailed":
            return "marked xfail (AWS passes it)"
        if re.search(
            r"InternalServerError|InternalFailure|\(500\)|status(_code)? ?(==|:) ?500|500 Server Error", text
        ):
            return "internal error"
        if "DID NOT RAISE" in text:
            return "accepted a refused request"
        if re.search(r"Regex pattern did not match|does not match", text):
            return "another message"
        if re.search(r"ClientError|ValidationException|ResourceNotFound|Exception\b", text):
            return "another error"
        return "another value"


def find_suite(folder: Path, scratch: Path | None = None) -> Path | None:
    """The suite's folder in ``folder``: a checkout, its test/alternator folder, or the git directory the search
    tool's fetch brings (no work tree: the suite is read out of its HEAD into ``scratch``)."""
    if scratch is not None and (folder / "HEAD").is_file() and (folder / "objects").is_dir():
        archive = subprocess.run(
            ["git", "--git-dir", str(folder), "archive", "HEAD", "test/alternator"],
            capture_output=True,
            check=False,
        )
        if archive.returncode == 0:
            subprocess.run(["tar", "-x", "-C", str(scratch)], input=archive.stdout, check=True)
            folder = scratch
    for candidate in (folder, folder / "test" / "alternator", folder / "alternator"):
        if (candidate / "conftest.py").is_file() and (candidate / "util.py").is_file():
            return candidate
    return None


def lay_out(suite: Path, scratch: Path) -> list[str]:
    """The suite and the stand-ins in ``scratch``; the modules to run."""
    target = scratch / "test" / "alternator"
    shutil.copytree(suite, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for relative, text in STANDINS.items():
        path = scratch / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    modules = sorted(p.name for p in target.glob("test_*.py") if p.name not in LEFT_OUT)
    return modules


def run_suite(
    scratch: Path, modules: list[str], server: Server, workers: int, log: Path
) -> dict[str, Outcome]:
    outcomes = scratch / f"outcomes-{server.name}.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DOCTABLE_"))}
    env.update(
        AWS_ENDPOINT_URL=server.url,
        AWS_ACCESS_KEY_ID="AKIAIOSFODNN7EXAMPLE" if server.name == "moto" else _local_key()[0],
        AWS_SECRET_ACCESS_KEY="moto" if server.name == "moto" else _local_key()[1],
        AWS_REGION="us-east-1",
        AWS_DEFAULT_REGION="us-east-1",
        ALTERNATOR_OUTCOMES=str(outcomes),
        PYTHONPATH=str(scratch),
        PYTHONDONTWRITEBYTECODE="1",
    )
    if isinstance(server.verify, str):
        env["AWS_CA_BUNDLE"] = server.verify
    command = [
        sys.executable, "-m", "pytest", "--aws", "-p", "outcomes_plugin", "-p", "no:cacheprovider",
        "-q", "--no-header", "-rN", "--timeout=300", "-o", "addopts=", "-c", os.devnull, "--rootdir", str(scratch),
        *([f"-n{workers}"] if workers > 1 else []),
        # a developer's diagnosis, e.g. --runxfail to read why a test marked xfail differs: never the table's
        *os.environ.get("ALTERNATOR_PYTEST_ARGS", "").split(),
        *[f"test/alternator/{m}" for m in modules],
    ]  # fmt: skip
    with log.open("wb") as out:
        subprocess.run(command, cwd=scratch, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    results: dict[str, Outcome] = {}
    for part in scratch.glob(f"{outcomes.name}.*"):
        for node, value in json.loads(part.read_text()).items():
            results[node] = Outcome(value["outcome"], value["text"])
    return results


def _local_key() -> tuple[str, str]:
    from local import api

    return api.ACCESS_KEY_ID, api.SECRET_ACCESS_KEY


def share(results: dict[str, Outcome]) -> tuple[int, int, float]:
    match = sum(1 for o in results.values() if o.outcome in MATCH)
    differ = sum(1 for o in results.values() if o.outcome in DIFFER)
    return match, differ, (100.0 * match / (match + differ) if match + differ else 0.0)


def module_of(node: str) -> str:
    return node.split("::")[0].rsplit("/", 1)[-1]


def render(local: dict[str, Outcome], moto: dict[str, Outcome], modules: list[str], commit: str) -> str:
    lines = [
        f"Measured with `make conformance-external SUITE=...` on scylladb/scylladb `{commit}` (test/alternator, "
        "run with `--aws`, the suite's own AWS check answering yes), the local AWS and plain moto in the same run. "
        "A test that passes (or xpasses) matches AWS; one that fails, errors or xfails differs (the suite marks "
        "xfail what Alternator lacks and AWS passes). A test the suite's `dynamodb_bug` fixture xfails is not "
        "applicable: the fixture xfails it on AWS itself, before it runs, as a known bug of DynamoDB.",
        "",
        "| | passed (incl. xpassed) | differ from AWS (failed, errors, xfailed) | skipped | not applicable "
        "(AWS's known bugs) | share matching AWS |",
        "|---|---|---|---|---|---|",
    ]
    for name, results in (("the local AWS", local), ("plain moto 5.2.5", moto)):
        match, differ, pct = share(results)
        skipped = sum(1 for o in results.values() if o.outcome == "skipped")
        bugs = sum(1 for o in results.values() if o.outcome == "aws-bug")
        lines.append(f"| {name} | {match} | {differ} | {skipped} | {bugs} | {pct:.0f}% |")
    fixed = sorted(
        n for n, o in local.items() if o.outcome in MATCH and n in moto and moto[n].outcome in DIFFER
    )
    added = sorted(
        n for n, o in local.items() if o.outcome in DIFFER and n in moto and moto[n].outcome in MATCH
    )
    lines += [
        "",
        f"The local AWS matches AWS where plain moto does not on {len(fixed)} tests, and differs where plain moto "
        f"matches on {len(added)}"
        + (f": {', '.join('`' + n.split('::')[-1] + '`' for n in added[:20])}." if added else "."),
        "",
        "By module (local AWS / plain moto: tests matching AWS of those run):",
        "",
        "| module | local AWS | plain moto |",
        "|---|---|---|",
    ]
    for module in modules:
        row = []
        for results in (local, moto):
            part = {n: o for n, o in results.items() if module_of(n) == module}
            match, differ, _ = share(part)
            row.append(f"{match}/{match + differ}")
        lines.append(f"| `{module}` | {row[0]} | {row[1]} |")
    kinds = Counter(o.kind for o in local.values() if o.outcome in DIFFER)
    moto_kinds = Counter(o.kind for o in moto.values() if o.outcome in DIFFER)
    lines += [
        "",
        "The differences by kind (read from each failure's text):",
        "",
        "| kind | local AWS | plain moto |",
        "|---|---|---|",
    ]
    for kind in sorted(set(kinds) | set(moto_kinds), key=lambda k: -kinds.get(k, 0)):
        lines.append(f"| {kind} | {kinds.get(kind, 0)} | {moto_kinds.get(kind, 0)} |")
    lines += ["", "Left out of the run (CQL-only or Scylla-only; they skip or error on AWS too):", ""]
    lines += [f"- `{module}`: {why}" for module, why in sorted(LEFT_OUT.items())]
    return "\n".join(lines)


def write_fidelity(table: str) -> None:
    text = FIDELITY.read_text()
    block = f"{BEGIN}\n{table}\n{END}"
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n## An outside suite verified on AWS\n\n" + block + "\n"
    FIDELITY.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.conformance.alternator", description=__doc__)
    parser.add_argument("suite", nargs="?", default=os.environ.get("SUITE", ""))
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers per run (default 2)")
    parser.add_argument(
        "--only", default="", help="comma-separated modules (test_streams.py,...) to run alone"
    )
    parser.add_argument("--server", choices=("both", "local", "moto"), default="both")
    parser.add_argument(
        "--no-write", action="store_true", help="print the table without writing docs/fidelity.md"
    )
    parser.add_argument("--keep", default="", help="a folder to keep the outcomes and logs in")
    args = parser.parse_args(argv)
    folder = Path(args.suite).expanduser() if args.suite else None
    with tempfile.TemporaryDirectory(prefix="alternator-") as tmp:
        scratch = Path(tmp)
        (scratch / "checkout").mkdir()
        suite = find_suite(folder, scratch / "checkout") if folder and folder.is_dir() else None
        if suite is None:
            print(FETCH_HINT if not args.suite else f"conformance-external: {args.suite} holds no test/alternator "
                  "suite; allowed: a scylladb checkout, its git directory or its test/alternator folder",
                  file=sys.stderr)  # fmt: skip
            return 2
        commit = _commit_of(folder if folder and (folder / "HEAD").is_file() else suite)
        modules = lay_out(suite, scratch / "suite")
        if args.only:
            modules = [m for m in modules if m in args.only.split(",")]
        keep = Path(args.keep) if args.keep else scratch
        keep.mkdir(parents=True, exist_ok=True)
        runs: dict[str, dict[str, Outcome]] = {"local": {}, "moto": {}}
        if args.server in ("both", "local"):
            (scratch / "local").mkdir()
            with local_aws(scratch / "local") as server:
                runs["local"] = run_suite(
                    scratch / "suite", modules, server, args.workers, keep / "local.log"
                )
            if (scratch / "local" / "server.log").exists():
                shutil.copy(scratch / "local" / "server.log", keep / "local-server.log")
        if args.server in ("both", "moto"):
            (scratch / "moto").mkdir()
            with plain_moto(scratch / "moto") as server:
                runs["moto"] = run_suite(scratch / "suite", modules, server, args.workers, keep / "moto.log")
        for name, results in runs.items():
            (keep / f"outcomes-{name}.json").write_text(
                json.dumps({n: [o.outcome, o.kind, o.text] for n, o in sorted(results.items())}, indent=1)
            )
    table = render(runs["local"], runs["moto"], modules, commit)
    print(table)
    if not args.no_write and args.server == "both" and not args.only:
        write_fidelity(table)
    return 0


def _commit_of(where: Path) -> str:
    try:
        git_dir = ["--git-dir", str(where)] if (where / "HEAD").is_file() else ["-C", str(where)]
        out = subprocess.run(
            ["git", *git_dir, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        return out.stdout.strip() or "(no git)"
    except OSError:
        return "(no git)"


if __name__ == "__main__":
    sys.exit(main())
