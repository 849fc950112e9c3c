"""The capabilities preflight and reconcile loop over: their order, the codes they emit, the calls they own. No AWS."""

from __future__ import annotations

import ast
import inspect
import sys
from types import ModuleType

import pytest

from contract.findings import CODES
from doctable.capabilities.drift import DRIFTING, REGISTRY, REPAIR_ORDER
from doctable.capabilities.protocol import Capability

pytestmark = pytest.mark.unit

# The codes preflight itself emits: the stack's state, the table's summary lines, drift, the settings overrides.
PREFLIGHT_CODES = {
    "stack.busy",
    "stack.rollback_failed",
    "stack.failed_create",
    "table.unchanged",
    "table.no_template_change",
    "drift.detected",
    "settings.override",
    "preview.prod_account",  # doctable preview deploy's own warning (doctable/operate/preview.py)
    "plan.subscriber_lags",  # doctable plan's own warnings (doctable/plan/readers.py)
    "plan.subscriber_batch_timeout",
}
# Modules whose findings a capability returns as its own (none today: the mapping's options are in its module).
DELEGATES: dict[str, tuple[ModuleType, ...]] = {}


def test_the_registry_order_is_stable() -> None:
    # THEN preflight reports the capabilities in this order, and reconcile their drift in this one
    assert [c.name for c in REGISTRY] == [
        "ownership",
        "table shape",
        "table options",
        "table security",
        "replicas",
        "mapping",
        "kinesis",
        "consumer",
        "stream readers",
        "subscriber mappings",
        "borrowed",
    ]
    assert [c.name for c in DRIFTING] == [
        "table shape",
        "table options",
        "ownership",
        "table security",
        "kinesis",
        "mapping",
    ]


def test_the_capabilities_comparing_the_live_table_come_first() -> None:
    # THEN preflight's findings follow the registry: the live table's (with their drift) before the others'
    flags = [c.compares_live for c in REGISTRY]
    assert flags == sorted(flags, reverse=True) and any(flags) and not all(flags)


def test_every_code_a_capability_declares_is_a_contract_code_with_one_owner() -> None:
    declared = [code for c in REGISTRY for code in c.codes]
    assert set(declared) <= set(CODES)
    assert len(declared) == len(set(declared)), "a code declared by two capabilities"
    # AND every contract code is emitted by a capability or by preflight itself
    assert set(declared) | PREFLIGHT_CODES == set(CODES)


def _code_literals(module: ModuleType) -> set[str]:
    tree = ast.parse(inspect.getsource(module))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in CODES}


@pytest.mark.parametrize("capability", REGISTRY, ids=lambda c: c.name)
def test_a_capability_emits_only_the_codes_it_declares(capability: Capability) -> None:
    # GIVEN the module a capability lives in (and those it returns findings of)
    module = sys.modules[type(capability).__module__]
    spelled = set().union(*(_code_literals(m) for m in (module, *DELEGATES.get(capability.name, ()))))
    # THEN each code spelled there is one the module's capabilities declare
    neighbours = {code for c in REGISTRY if type(c).__module__ == module.__name__ for code in c.codes}
    assert spelled <= neighbours


def test_every_repair_call_has_one_owner_among_the_registered_capabilities() -> None:
    assert set(DRIFTING) <= set(REGISTRY)
    owned = [call for c in DRIFTING for call in c.calls]
    assert len(owned) == len(set(owned)), "a call owned by two capabilities"
    assert set(owned) == set(REPAIR_ORDER)
