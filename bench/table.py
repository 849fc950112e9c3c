"""The bench's table as printed (one row per figure, the previous run's value beside it), and the text blocks
that put a measurement beside ``doctable plan``'s prediction."""

from __future__ import annotations

from typing import Any


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "bool":
        return "yes" if value else "NO"
    if unit in ("B",):
        return f"{value:,.0f}"
    if unit == "s":
        return f"{value:.3g}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def cell(figure: dict[str, Any], who: str) -> str:
    """A figure's value for ``who`` (project, baseline or floor) as the table shows it, with its p10-p90 spread."""
    text = _fmt(figure.get(who), figure["unit"])
    spread = figure.get("spread", {}).get(who)
    if spread and figure.get(who) is not None:
        unit = figure["unit"]
        text += f" [{_fmt(spread['p10'], unit)}-{_fmt(spread['p90'], unit)}]"
    return text


def _floor_ratio(figure: dict[str, Any]) -> str:
    project, floor = figure.get("project"), figure.get("floor")
    if project is None or not floor or figure["unit"] in ("bool", "req"):
        return "-"
    return f"{project / floor:.3g}x"


def render(figures: list[dict[str, Any]], previous: dict[str, dict[str, Any]], previous_when: str) -> str:
    headers = [
        "Figure",
        "Project",
        "Baseline",
        "Floor",
        "Proj/Base",
        "Proj/Floor",
        "Target",
        "Met",
        f"Prev project ({previous_when})",
    ]
    rows: list[list[str]] = []
    notes: list[str] = []
    for figure in figures:
        if figure["project"] is None:
            rows.append([figure["label"], figure["note"], "", "", "", "", "", "-", ""])
            continue
        prev = previous.get(figure["id"])
        prev_text = "-"
        if prev and prev.get("project") is not None:
            prev_text = _fmt(prev["project"], figure["unit"])
            if prev.get("ratio") is not None:
                prev_text += f" ({prev['ratio']:.3g}x)"
        met = {True: "yes", False: "NO", None: ""}[figure["met"]]
        rows.append(
            [
                figure["label"],
                cell(figure, "project"),
                cell(figure, "baseline"),
                cell(figure, "floor"),
                "-" if figure["ratio"] is None else f"{figure['ratio']:.3g}x",
                _floor_ratio(figure),
                figure["target"],
                met,
                prev_text,
            ]
        )
        if figure["note"]:
            notes.append(f"  {figure['id']}: {figure['note']}")
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "+".join("-" * (w + 2) for w in widths)
    out = [
        " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)),
        line,
    ]
    for row in rows:
        out.append(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    if notes:
        out.append("notes:")
        out.extend(notes)
    return "\n".join(out)


def render_plan_check(check: dict[str, Any]) -> str:
    p, m = check["predicted"], check["measured"]
    return "\n".join(
        [
            f"plan model vs the local AWS's poller: a burst of {check['records']:,} writes in "
            f"{check['write_seconds']:.1f} s, batch_size={check['batch_size']}",
            f"  invocations              predicted {p['invocations']:>8,.0f}   measured {m['invocations']:>8,.0f}",
            f"  records per invocation   predicted {p['records_per_invocation']:>8.2f}   "
            f"measured {m['records_per_invocation']:>8.2f}",
            "  (both poll the shard 4 times a second while caught up and at once while records are pending, as "
            "Lambda does: the local AWS runs with DOCTABLE_LOCAL_POLL_CADENCE=aws)",
        ]
    )


def render_fullshard(fs: dict[str, Any]) -> str:
    """The replay's measured figures beside ``doctable plan``'s prediction of the same workload."""
    w, shape, m, plan = fs["workload"], fs["shape"], fs["measured"], fs.get("plan", {})
    lines = [
        f"full-shard replay vs doctable plan: {w['records']:,} records ({w['writes_per_second']:,} writes/s for "
        f"{w['seconds']:g} s), batch_size={shape['batch_size']}, parallelization_factor="
        f"{shape['parallelization_factor']}, memory={shape['memory']} (knob defaults)",
    ]
    if plan.get("skipped"):
        lines.append(f"  plan not run: {plan['skipped']}")
        plan = {}
    rows = (
        (
            "records/s a shard sustains",
            m["records_per_second"],
            plan.get("shard_capacity_records_per_second"),
            ",.0f",
        ),
        ("seconds per batch", m["batch_seconds_median"], plan.get("seconds_per_batch"), ".3f"),
        ("records per invocation", m["records"] / m["batches"], plan.get("records_per_invocation"), ".1f"),
        ("concurrent consumers", float(len(m["environments"])), plan.get("concurrent_consumers"), ".0f"),
    )
    for name, measured, predicted, spec in rows:
        shown = "-" if predicted is None else format(predicted, spec)
        lines.append(f"  {name:<28} measured {format(measured, spec):>8}   plan {shown:>8}")
    if plan:
        lines.append(
            f"  ({plan['command']}; the plan assumes S3 at {plan['s3_latency_s'] * 1000:g} ms a request and its "
            "own CPU per key)"
        )
    lines.append(
        f"  guarantee: {'held' if m['guarantee_held'] else 'BROKEN'} ({m['live_blobs_deleted']} live blobs deleted, "
        f"{m['reuploads_kept']}/{m['reuploads']} re-uploads kept, {m['blobs_left_that_should_be_gone']} dropped "
        "blobs left)"
    )
    return "\n".join(lines)
