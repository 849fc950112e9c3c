"""The house rules as tests: no import cycle, knob values spelled only in contract/, no module past 500 lines
but the listed ones."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest

from contract import knobs

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("contract", "tooling", "infra", "doctable", "local", "stream_consumer", "bench", "tests")
PRODUCT_DIRS = ("contract", "tooling", "infra", "doctable", "local", "functions", "bench")
MODULE_LINES_MAX = 500
# The only product modules allowed past MODULE_LINES_MAX, each with the reason it stays whole.
LONG_MODULES = {
    "local/runtime/runner.py": (
        "a Lambda execution environment's life (spec, worker process, pool, log sink): each part is only "
        "meaningful to the others"
    ),
    "local/pollers/streams.py": (
        "an event-source mapping's poller, one loop holding AWS's delivery semantics (batching, retries, "
        "bisection, record age, partial failures, on-failure destinations, filters, metrics)"
    ),
}


def _strongly_connected(graph: grimp.ImportGraph) -> list[set[str]]:
    """Tarjan's algorithm over the module graph: every component of more than one module is a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                components.append(component)

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return components


def test_the_import_graph_has_no_cycle() -> None:
    # GIVEN every module of the repository, imports at any depth (deferred ones included)
    graph = grimp.build_graph(*PACKAGES)
    # THEN no set of modules imports itself round a loop
    assert _strongly_connected(graph) == []


def _product_modules() -> Iterator[Path]:
    yield ROOT / "app.py"
    for directory in PRODUCT_DIRS:
        yield from sorted((ROOT / directory).rglob("*.py"))


# A knob's values as the knobs module spells them; the generic words (none/on/off/aws/local/standard) are left out,
# since they mean other things elsewhere (an environment-variable flag, a command group, botocore's retry mode).
KNOB_VALUES = (
    {*knobs.GSI_VALUES, *knobs.STREAM_VALUES, *knobs.STARTING_POSITIONS, *knobs.POWERTOOLS_MODES}
    | {*knobs.CONSUMER_MODES, *knobs.ENV_VALUES, *knobs.STREAM_VIEW_TYPES.values()}
    | set(knobs.STARTING_POSITION_CFN.values())
    | {*knobs.TABLE_CLASS_CFN, *knobs.TABLE_CLASS_CFN.values(), *knobs.CONTRIBUTOR_INSIGHTS_CFN}
    | set(knobs.CONTRIBUTOR_INSIGHTS_CFN.values())
) - {knobs.NONE, knobs.ON, knobs.OFF, knobs.DEPLOY_AWS, knobs.DEPLOY_LOCAL, knobs.TABLE_CLASSES[0]}
# The local AWS implements AWS's API, whose values (LATEST, NEW_AND_OLD_IMAGES) are not knob values there.
KNOB_FREE = ("app.py", "infra", "doctable", "functions")


@pytest.mark.parametrize("part", KNOB_FREE)
def test_no_knob_value_literal_outside_contract(part: str) -> None:
    # GIVEN the product's code outside contract/
    paths = [ROOT / part] if part.endswith(".py") else sorted((ROOT / part).rglob("*.py"))
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in KNOB_VALUES:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    # THEN no string constant spells a knob value: decisions read DocTableConfig or contract.shape
    assert found == []


def test_only_the_listed_modules_pass_500_lines() -> None:
    # GIVEN every product module's line count
    lines = {path.relative_to(ROOT).as_posix(): path.read_text().count("\n") for path in _product_modules()}
    # THEN a module past the limit is listed, with its reason
    unlisted = [
        f"{name}: {n} lines" for name, n in lines.items() if n > MODULE_LINES_MAX and name not in LONG_MODULES
    ]
    assert unlisted == []
    assert all(isinstance(reason, str) and reason.strip() for reason in LONG_MODULES.values())
    # AND a listed module is still past it (else its entry is stale)
    stale = [
        f"{name}: {lines.get(name, 0)} lines"
        for name in LONG_MODULES
        if lines.get(name, 0) <= MODULE_LINES_MAX
    ]
    assert stale == []


def test_the_entry_imports_only_the_knobs_the_tooling_and_the_constructs() -> None:
    tree = ast.parse((ROOT / "app.py").read_text())
    imported = {
        (node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    } | {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert imported <= {"__future__", "contextlib", "os", "sys", "aws_cdk", "contract", "tooling", "infra"}, (
        imported
    )


# ---- the local AWS's house (tests/unit/test_architecture.py measures what the fidelity issue set) ----
LOCAL_FLOORS_MAX = 7  # the longest chain of module-level imports between modules of local/
LOCAL_NESTED_MAX = (
    25  # functions defined inside functions under local/ (a decorator's, a server's handler class)
)
FOLDER_MODULES_MAX = (
    15  # modules side by side in one folder of contract/, tooling/, infra/, doctable/, local/
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_level_imports(package: str) -> dict[str, set[str]]:
    """Each module of ``package`` and the modules of ``package`` it imports at module level (a deferred import
    inside a function is not a floor: it is not loaded with the module)."""
    modules = {_module_name(p): p for p in (ROOT / package).rglob("*.py")}

    def owner(target: str) -> str:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join([*parts, *([base] if base else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            found |= {owner(t) for t in targets if owner(t) and owner(t) != name}
        graph[name] = found
    return graph


def longest_chain(graph: dict[str, set[str]]) -> list[str]:
    """The longest chain of imports in an acyclic graph (its length is the number of floors)."""
    memo: dict[str, list[str]] = {}

    def chain(module: str) -> list[str]:
        if module not in memo:
            memo[module] = [module, *max((chain(d) for d in graph[module]), key=len, default=[])]
        return memo[module]

    return max((chain(m) for m in graph), key=len)


def test_the_local_aws_stands_on_at_most_seven_floors() -> None:
    chain = longest_chain(module_level_imports("local"))
    assert len(chain) <= LOCAL_FLOORS_MAX, " -> ".join(chain)


def test_the_local_aws_keeps_its_behaviour_in_module_level_functions() -> None:
    # GIVEN every function defined inside another function under local/ (methods of module-level classes are not)
    nested: list[str] = []

    def visit(node: ast.AST, path: Path, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            is_function = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if is_function and inside:
                nested.append(f"{path.relative_to(ROOT)}:{child.lineno} {child.name}")
            visit(child, path, inside or is_function)

    for path in sorted((ROOT / "local").rglob("*.py")):
        visit(ast.parse(path.read_text()), path, False)
    # THEN they are few: a decorator's inner function, the methods of a handler class a server needs
    assert len(nested) <= LOCAL_NESTED_MAX, nested


@pytest.mark.parametrize("part", ["contract", "tooling", "infra", "doctable", "local"])
def test_no_folder_holds_more_than_fifteen_modules(part: str) -> None:
    crowded = {
        str(folder.relative_to(ROOT)): count
        for folder in [ROOT / part, *(p for p in (ROOT / part).rglob("*") if p.is_dir())]
        if (count := len([p for p in folder.glob("*.py") if p.name != "__init__.py"])) > FOLDER_MODULES_MAX
    }
    assert crowded == {}


# doctable/'s floors: 12 before it was put in packages, 8 now: core's leaves (errors, answers, live, render), the
# client and the deployment record, context, the capabilities, registry and drift (verify's areas beside them),
# preflight and verify's checks, the commands, cli.
DOCTABLE_FLOORS_MAX = 8


def test_the_operations_stand_on_at_most_eight_floors() -> None:
    chain = longest_chain(module_level_imports("doctable"))
    assert len(chain) <= DOCTABLE_FLOORS_MAX, " -> ".join(chain)


def test_each_moto_target_is_named_once_per_module_and_no_module_keeps_an_apply_guard() -> None:
    from local import services

    for path in (ROOT / "local").rglob("*.py"):
        tree = ast.parse(path.read_text())
        assert "_applied" not in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}, path
    for module in services.modules(services.PATCHING + services.READING):
        named = [f"{t.module}:{t.path}" for t in module.MOTO_TARGETS]
        assert len(named) == len(set(named)), (
            module.__name__,
            sorted({n for n in named if named.count(n) > 1}),
        )


def test_every_module_is_named_where_the_house_is_described() -> None:
    # GIVEN docs/architecture.md and local/README.md, which say what each module holds
    text = (ROOT / "docs" / "architecture.md").read_text() + (ROOT / "local" / "README.md").read_text()
    # THEN every module of the four parts is named there (by its file or its package), so a newcomer finds each
    missing = [
        str(path.relative_to(ROOT))
        for part in ("contract", "tooling", "doctable", "infra", "local")
        for path in sorted((ROOT / part).rglob("*.py"))
        if path.name != "__init__.py"
        and "__pycache__" not in path.parts
        and not any(form in text for form in (f"{path.stem}.py", f"`{path.stem}`", f"{path.stem}/"))
    ]
    assert missing == []


def test_each_moto_target_is_replaced_by_exactly_one_module_of_local() -> None:
    # GIVEN every module of the service registry (local/services/__init__.py), imported, and what each replaces
    from local import services

    registered = (*services.INSTALLED, *services.READ)
    owners: dict[str, list[str]] = {}
    for module in registered:
        for target in module.PATCHES.targets if hasattr(module, "PATCHES") else ():
            owners.setdefault(f"{target.module}:{target.path}", []).append(module.__name__)
    assert len(owners) >= 90
    # THEN each moto internal has one owner: other behaviours of its operation are steps the owner calls, never a
    # second replacement wrapping the first in the order of installation (local/README.md)
    assert {target: names for target, names in owners.items() if len(names) > 1} == {}
    # AND every module of local/ that keeps replacements is in the registry, so none escapes the check
    keeping = {
        _module_name(path)
        for path in (ROOT / "local").rglob("*.py")
        if "PATCHES = Patches()" in path.read_text()
    }
    assert sorted(keeping - {module.__name__ for module in registered}) == []
