"""The built-in consumer's code, staged for its asset: the package's sources and, when the interpreter running
synth is the Lambda runtime's Python, their bytecode. The stack's asset (infra/compute/consumer.py) and `doctable watch`'s
code updates on the local AWS are staged by the same function, so both ship the same files.

Lambda's ``/var/task`` is read-only, so a package without ``__pycache__`` is compiled again at every cold start
(about 20 ms of an INSERT's). The bytecode is unchecked-hash ``.pyc`` (valid whatever the files' timestamps in
the zip) with the paths Lambda runs them from, so it is byte-for-byte the same on every synth and the asset's
hash changes only with the sources (and with the botocore models below). Under another Python the sources alone
are staged: the runtime would ignore bytecode of another version. Standard library only: the bench stages its
cold-start task roots with it too. (It reads botocore's data files, found without importing botocore.)

The package also carries botocore's models of the operations it calls (``names.CONSUMER_SDK_OPERATIONS``), cut
from the botocore installed here: the shapes those operations reach, without their documentation. The consumer puts them
on its botocore session's data path, so a cold start reads 27 kB of models where the whole S3 and DynamoDB models
are 1.9 MB of JSON. Everything else botocore loads (endpoint rules, partitions, retry rules) is the
runtime's own.
"""

from __future__ import annotations

import compileall
import functools
import gzip
import hashlib
import importlib.util
import json
import py_compile
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from contract import names
from contract import requirements as requirement_rules
from tooling import wheelhouse

TASK_ROOT = "/var/task"  # where Lambda unpacks a function's code
UNCHECKED_HASH = py_compile.PycInvalidationMode.UNCHECKED_HASH
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.md", ".mypy_cache")


def runtime_version() -> tuple[int, int]:
    """(3, 13) for names.LAMBDA_RUNTIME = "python3.13"."""
    major, minor = names.LAMBDA_RUNTIME.removeprefix("python").split(".")
    return int(major), int(minor)


def compiles_bytecode() -> bool:
    return sys.version_info[:2] == runtime_version()


def compile_tree(root: Path, ddir: str = TASK_ROOT) -> None:
    """Unchecked-hash bytecode beside every source under ``root``, recorded as run from ``ddir``."""
    ok = compileall.compile_dir(
        str(root),
        ddir=ddir,
        quiet=1,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    if not ok:
        raise RuntimeError(f"compiling the consumer's sources under {root} failed")


def stage_package(package: Path, build: Path) -> Path:
    """A directory holding ``package`` (and its bytecode, under the runtime's Python): the asset's root.

    Staged once per content under ``build`` (the sources' and the interpreter's digest in the name), moved into
    place whole, so concurrent synths never see a half-written stage."""
    models = sdk_models()
    digest = hashlib.sha256(f"{sys.version_info[:2]}|{compiles_bytecode()}".encode())
    for path in sorted(p for p in package.rglob("*") if p.is_file() and not SKIPPED(str(p.parent), [p.name])):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    for name, data in sorted(models.items()):
        digest.update(name.encode() + b"\0" + data)
    stage = build / f"consumer-{digest.hexdigest()[:16]}"
    if stage.is_dir():
        return stage
    build.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".consumer-", dir=build))
    shutil.copytree(package, scratch / package.name, ignore=SKIPPED)
    write_sdk_models(scratch / package.name, models)
    if compiles_bytecode():
        compile_tree(scratch)
    try:
        scratch.rename(stage)
    except OSError:  # another synth staged the same content first
        shutil.rmtree(scratch, ignore_errors=True)
    return stage


def botocore_data_dir() -> Path:
    """The ``data`` directory of the installed botocore (found without importing it)."""
    spec = importlib.util.find_spec("botocore")
    if spec is None or spec.origin is None:
        raise RuntimeError(
            "botocore is not installed: staging the consumer needs its models (pip install boto3)"
        )
    return Path(spec.origin).parent / "data"


def _model_path(version_dir: Path) -> Path | None:
    for name in ("service-2.json", "service-2.json.gz"):
        if (version_dir / name).is_file():
            return version_dir / name
    return None


def latest_model(service: str, data: Path | None = None) -> tuple[str, dict[str, Any]]:
    """(API version, model) of ``service``'s newest API version, as botocore's loader picks it."""
    service_dir = (data or botocore_data_dir()) / service
    versions = (
        sorted(d.name for d in service_dir.iterdir() if d.is_dir() and _model_path(d))
        if service_dir.is_dir()
        else []
    )
    if not versions:
        raise RuntimeError(f"botocore has no model of the service {service!r} under {service_dir}")
    path = _model_path(service_dir / versions[-1])
    assert path is not None
    raw = path.read_bytes()
    return versions[-1], json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def trim_model(model: dict[str, Any], operations: tuple[str, ...]) -> dict[str, Any]:
    """``model`` with only ``operations`` and the shapes they reach (inputs, outputs, errors, transitively), in
    the model's own order (member order is serialization order), their documentation strings dropped."""
    missing = [op for op in operations if op not in model["operations"]]
    if missing:
        raise RuntimeError(
            f"botocore's {model['metadata'].get('serviceId')} model has no operation {missing}"
        )
    kept_operations = {name: body for name, body in model["operations"].items() if name in operations}
    reached: set[str] = set()
    todo = _shape_refs(kept_operations)
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(_shape_refs(model["shapes"][name]))
    # The rest of the model is kept whole: botocore requires some of its documentation (clientContextParams').
    trimmed = {key: value for key, value in model.items() if key not in ("operations", "shapes")}
    trimmed["operations"] = _undocumented(kept_operations)
    trimmed["shapes"] = _undocumented(
        {name: body for name, body in model["shapes"].items() if name in reached}
    )
    return trimmed


def _shape_refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [
            ref
            for key, value in node.items()
            for ref in ([value] if key == "shape" and isinstance(value, str) else _shape_refs(value))
        ]
    if isinstance(node, list):
        return [ref for value in node for ref in _shape_refs(value)]
    return []


def _undocumented(node: Any) -> Any:
    # Only string values: a structure member may itself be named "documentation" (its value is a dict).
    if isinstance(node, dict):
        return {
            key: _undocumented(value)
            for key, value in node.items()
            if not (key in ("documentation", "documentationUrl") and isinstance(value, str))
        }
    if isinstance(node, list):
        return [_undocumented(value) for value in node]
    return node


@functools.cache  # one parse of the installed models (2 MB of JSON) per process, however many synths it runs
def sdk_models(data: Path | None = None) -> dict[str, bytes]:
    """The consumer's botocore models: path under the package -> JSON bytes (the same bytes for the same
    botocore). Callers must not change the dict."""
    out: dict[str, bytes] = {}
    for service, operations in names.CONSUMER_SDK_OPERATIONS.items():
        version, model = latest_model(service, data)
        text = json.dumps(trim_model(model, operations), separators=(",", ":"), ensure_ascii=False)
        out[f"{names.SDK_MODELS_DIR}/{service}/{version}/service-2.json"] = text.encode()
    return out


def write_sdk_models(package_dir: Path, models: dict[str, bytes] | None = None) -> None:
    for name, data in (sdk_models() if models is None else models).items():
        target = package_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def stage_subscriber(
    runtime_package: Path,
    handler_file: str,
    function: str,
    settings_dir: Path,
    build: Path,
    *,
    requirements: str = "",
    platform: wheelhouse.Platform | None = None,
    cache: Path | None = None,
    extra_indexes: tuple[str, ...] = (),
) -> tuple[Path, str]:
    """A subscriber's code, staged for its function's asset: the wrapper's package (``runtime_package``, with its
    bytecode as the consumer's), the team's handler file (``handler_file``, relative to ``settings_dir``, the
    settings file's folder) copied as ``subscriber_code/<module>.py`` and, with ``requirements`` (a file relative
    to ``settings_dir``, or absolute), its packages installed for ``platform`` from the wheelhouse cached under
    ``cache`` (``build/wheelhouse``: tooling/wheelhouse.py; ``extra_indexes``: the PIP_EXTRA_INDEX_URL indexes
    the subscriber's settings allow). Returns the directory and the handler to configure
    (``subscriber_code.<module>:<function>``, the wrapper's ``DOCTABLE_SUBSCRIBER_HANDLER``).

    The same sources (and wheels) give the same directory, byte for byte (its name carries their digest); a
    missing file, a file name that is not a Python module's, a file that is not valid Python or requirements
    without a wheel for the platform are a ValueError of one line."""
    module, code = _handler_code(settings_dir, handler_file, function)
    site = None
    if requirements:
        lines = requirement_rules.read_requirements(settings_dir / requirements, requirements)
        target = platform or wheelhouse.lambda_platform("arm64")
        site = wheelhouse.installed(
            lines, target, cache or build / wheelhouse.CACHE, extra_indexes=extra_indexes
        )
    digest = hashlib.sha256(f"{sys.version_info[:2]}|{compiles_bytecode()}|{module}".encode())
    for path in sorted(
        p for p in runtime_package.rglob("*") if p.is_file() and not SKIPPED(str(p.parent), [p.name])
    ):
        digest.update(str(path.relative_to(runtime_package)).encode() + b"\0" + path.read_bytes())
    digest.update(b"\0handler\0" + code)
    if site is not None:
        digest.update(b"\0wheels\0" + wheelhouse.wheels_digest(site))
    handler = f"{names.SUBSCRIBER_CODE_PACKAGE}.{module}:{function}"
    stage = build / f"subscriber-{digest.hexdigest()[:16]}"
    if stage.is_dir():
        return stage, handler
    build.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".subscriber-", dir=build))
    if site is not None:
        _copy_requirements(site, scratch)
    shutil.copytree(runtime_package, scratch / names.SUBSCRIBER_RUNTIME_PACKAGE, ignore=SKIPPED)
    code_dir = scratch / names.SUBSCRIBER_CODE_PACKAGE
    code_dir.mkdir()
    (code_dir / "__init__.py").write_bytes(b"")
    (code_dir / f"{module}.py").write_bytes(code)
    if compiles_bytecode():
        # The requirements' bytecode where it compiles (a broken file fails its own import alone).
        if site is not None:
            compileall.compile_dir(str(scratch), ddir=TASK_ROOT, quiet=2, invalidation_mode=UNCHECKED_HASH)
        for package in (names.SUBSCRIBER_RUNTIME_PACKAGE, names.SUBSCRIBER_CODE_PACKAGE):
            compile_tree(scratch / package, f"{TASK_ROOT}/{package}")
    try:
        scratch.rename(stage)
    except OSError:  # another synth staged the same content first
        shutil.rmtree(scratch, ignore_errors=True)
    return stage, handler


def _handler_code(settings_dir: Path, handler_file: str, function: str) -> tuple[str, bytes]:
    """The handler file's module name and bytes, checked (a ValueError of one line)."""
    source = settings_dir / handler_file
    module = Path(handler_file).stem
    if not module.isidentifier() or Path(handler_file).suffix != ".py":
        raise ValueError(
            f"subscriber handler file {handler_file!r}: its name must be a Python module's "
            "(letters, digits and '_', not starting with a digit) ending in .py"
        )
    if not function.isidentifier():
        raise ValueError(f"subscriber handler function {function!r} is not a Python identifier")
    if not source.is_file():
        raise ValueError(f"subscriber handler file {handler_file!r} not found under {settings_dir}")
    code = source.read_bytes()
    try:
        compile(code, handler_file, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ValueError(
            f"subscriber handler file {handler_file!r} is not valid Python: {exc.msg} (line {exc.lineno})"
        ) from None
    except ValueError as exc:  # source code with a null byte
        raise ValueError(f"subscriber handler file {handler_file!r} is not valid Python: {exc}") from None
    return module, code


def _copy_requirements(site: Path, root: Path) -> None:
    """The installed requirements at the asset's root (Lambda's ``/var/task`` is first on the import path)."""
    ours = {names.SUBSCRIBER_RUNTIME_PACKAGE, names.SUBSCRIBER_CODE_PACKAGE}
    taken = ours & {p.name for p in site.iterdir()}
    if taken:
        raise requirement_rules.WheelhouseError(
            f"the requirements install a top-level {', '.join(sorted(taken))}, which doctable's wrapper uses; "
            "allowed: packages with other top-level names"
        )
    shutil.copytree(site, root, dirs_exist_ok=True)
