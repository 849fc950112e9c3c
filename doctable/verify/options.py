"""verify's rows for the table's options (class, on-demand maximum, warm throughput, PITR period, contributor
insights): what each expects from the knobs' shape, and the check of its live value."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from doctable.capabilities.table_options import LiveOptions, caps_text, insights_text, period_text, warm_text
from doctable.verify.record import CheckFailed, Skip

if TYPE_CHECKING:
    from contract.shape import TableShape


def option_rows(shape: TableShape) -> list[tuple[str, str, str]]:
    """(row id, check, expected), in the order verify runs them."""
    return [
        ("table-class", "table class as declared", shape.table_class),
        ("max-throughput", "on-demand maximum as declared", caps_text(shape.on_demand_throughput)),
        ("warm-throughput", "warm throughput at least as declared", warm_text(shape.warm_throughput)),
        ("pitr-period", "PITR recovery period as declared", period_text(shape.recovery_period_days)),
        (
            "contributor-insights",
            "contributor insights as declared",
            insights_text(shape.contributor_insights_mode),
        ),
    ]


def option_checks(
    ddb: Any, shape: TableShape, describe: Callable[[], dict[str, Any]]
) -> dict[str, Callable[[], str]]:
    """Row id -> its check: returns the observed value, raises ``CheckFailed(observed)`` when it differs and
    ``Skip(reason)`` when another row already reports the cause."""
    live: list[LiveOptions] = []

    def options() -> LiveOptions:
        if not live:
            live.append(LiveOptions.read(ddb, describe()))
        return live[0]

    def table_class() -> str:
        return _expect(options().table_class, shape.table_class)

    def max_throughput() -> str:
        return _expect(caps_text(options().on_demand), caps_text(shape.on_demand_throughput))

    def warm_throughput() -> str:
        observed = warm_text(options().warm)
        short = options().warm_short_of(shape)
        if short:
            raise CheckFailed(f"{observed} (below the declared {warm_text(short)})")
        return observed

    def pitr_period() -> str:
        if shape.pitr and options().pitr_days is None:
            raise Skip("PITR is off on the live table (the pitr row fails)")
        return _expect(period_text(options().pitr_days), period_text(shape.recovery_period_days))

    def contributor_insights() -> str:
        return _expect(insights_text(options().insights_mode), insights_text(shape.contributor_insights_mode))

    return {
        "table-class": table_class,
        "max-throughput": max_throughput,
        "warm-throughput": warm_throughput,
        "pitr-period": pitr_period,
        "contributor-insights": contributor_insights,
    }


def _expect(observed: str, expected: str) -> str:
    if observed != expected:
        raise CheckFailed(observed)
    return observed
