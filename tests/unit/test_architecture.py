"""The house rules as tests: no import cycle, knob values spelled only in contract/, modules of one idea."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest

from contract import knobs

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("contract", "infra", "doctable", "local", "stream_consumer", "bench", "tests")
PRODUCT_DIRS = ("contract", "infra", "doctable", "local", "functions", "bench")
MODULE_LINES_MAX = 500


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


def test_modules_hold_one_idea() -> None:
    # GIVEN every product module  THEN it stays under the size of one idea, or its docstring says why it is one
    long = []
    for path in _product_modules():
        text = path.read_text()
        lines = text.count("\n")
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if lines > MODULE_LINES_MAX and "one idea" not in docstring.lower():
            long.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert long == []


def test_the_entry_imports_only_the_knobs_and_the_constructs() -> None:
    tree = ast.parse((ROOT / "app.py").read_text())
    imported = {
        (node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    } | {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert imported <= {"__future__", "contextlib", "os", "sys", "aws_cdk", "contract", "infra"}, imported
