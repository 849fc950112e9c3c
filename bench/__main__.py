"""``python -m bench`` (``make bench``): every figure of the consumer beside the baseline's, as ONE table.

Sections: throughput (one 10,000-record batch, in-process moto S3), cold start (fresh processes, >= 20 runs),
end-to-end latency on the local AWS (skipped with a reason when it cannot run), artifact sizes. The figures
are written to ``bench/results.json`` (timestamp, machine, Python); the figures of the results.json found at
start are printed in the "previous" column. Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, machine_info

RESULTS = BENCH_DIR / "results.json"
SCHEMA = 1

TARGET_THROUGHPUT_RATIO = 10.0
TARGET_COLD_RATIO = 0.6
TARGET_E2E_P50_S = 1.0
TARGET_ZIP_BYTES = 50_000


def _progress(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------- figures


def _figure(
    fid: str,
    label: str,
    unit: str,
    project: float | None,
    baseline: float | None = None,
    floor: float | None = None,
    ratio: float | None = None,
    target: str = "",
    met: bool | None = None,
    note: str = "",
    spread: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": fid,
        "label": label,
        "unit": unit,
        "project": project,
        "baseline": baseline,
        "floor": floor,
        "ratio": ratio,
        "target": target,
        "met": met,
        "note": note,
        "spread": spread or {},
    }


def _skipped(fid: str, label: str, reason: str) -> dict[str, Any]:
    return _figure(fid, label, "", None, note=f"skipped: {reason}")


def build_figures(sections: dict[str, Any]) -> list[dict[str, Any]]:
    figures: list[dict[str, Any]] = []

    tp = sections.get("throughput")
    if tp and "project" in tp:
        p, b = tp["project"], tp["baseline"]
        ratio = tp["ratio_project_over_baseline"]
        figures.append(
            _figure(
                "throughput_rps",
                f"Throughput, 1 batch of {p['records']:,} records (records/s)",
                "rec/s",
                p["records_per_second"],
                b["records_per_second"],
                ratio=ratio,
                target=f">= {TARGET_THROUGHPUT_RATIO:g}x baseline",
                met=ratio >= TARGET_THROUGHPUT_RATIO,
                note=f"project: median of {p.get('repeats', 1)} runs {[round(x, 2) for x in p.get('all_seconds', [])]} s, "
                f"{_share(p)} of it inside S3 calls (moto); baseline: 1 run of {b['seconds']:.1f} s, {_share(b)} in S3",
            )
        )
        if p.get("records_per_cpu_second") and b.get("records_per_cpu_second"):
            figures.append(
                _figure(
                    "throughput_rps_cpu",
                    "Throughput per CPU-second (records/CPU-s, consumer + in-process moto)",
                    "rec/s",
                    p["records_per_cpu_second"],
                    b["records_per_cpu_second"],
                    ratio=p["records_per_cpu_second"] / b["records_per_cpu_second"],
                    target="(less noisy than wall)",
                )
            )
        deleted = p["blobs_deleted"]
        floor = math.ceil(deleted / 1000) / (deleted / 1000) if deleted else None
        per = p["s3_requests_per_1000_blobs"]
        figures.append(
            _figure(
                "s3_requests_per_1000_blobs",
                f"S3 requests per 1,000 blobs deleted ({deleted:,} blobs)",
                "req",
                per,
                b["s3_requests_per_1000_blobs"],
                floor=floor,
                ratio=(per / b["s3_requests_per_1000_blobs"])
                if per and b["s3_requests_per_1000_blobs"]
                else None,
                target="at the floor (DeleteObjects: 1,000 keys)",
                met=per is not None and floor is not None and per <= floor + 1e-9,
            )
        )
        figures.append(
            _figure(
                "throughput_correct",
                "Blobs gone afterwards, survivors intact, no failures",
                "bool",
                1.0 if p["correct"] else 0.0,
                1.0 if b["correct"] else 0.0,
                target="both correct",
                met=bool(p["correct"] and b["correct"]),
                note=f"project left {p['blobs_left_that_should_be_gone']}, "
                f"baseline left {b['blobs_left_that_should_be_gone']}",
            )
        )
    elif tp is not None:
        figures.append(_skipped("throughput_rps", "Throughput", tp.get("skipped", "not run")))

    cold = sections.get("coldstart")
    if cold:
        for kind, text in (("insert", "1 INSERT, no S3 call"), ("remove", "1 REMOVE, 3 blobs")):
            section = cold.get(kind)
            if not section:
                continue
            for metric, fid, what in (
                ("wall_s", f"cold_start_{kind}_ms", "wall ms to response"),
                ("cpu_s", f"cold_start_{kind}_cpu_ms", "CPU ms (user+sys)"),
            ):
                if metric not in section["project"]:
                    continue
                stats = {name: section[name][metric] for name in ("project", "baseline", "floor")}
                ratio = section[f"ratio_project_over_baseline_{metric}"]
                checked = metric == "wall_s"
                figures.append(
                    _figure(
                        fid,
                        f"Cold start, {text}: {what}, median [p10-p90], n={stats['project']['n']}",
                        "ms",
                        stats["project"]["median"] * 1000,
                        stats["baseline"]["median"] * 1000,
                        floor=stats["floor"]["median"] * 1000,
                        ratio=ratio,
                        target=f"<= {TARGET_COLD_RATIO:g}x baseline" if checked else "(less noisy than wall)",
                        met=ratio <= TARGET_COLD_RATIO if checked else None,
                        note=f"project/floor {section[f'ratio_project_over_floor_{metric}']:.1f}x"
                        + (
                            f"; PROBLEMS: {section['problems']}"
                            if section.get("problems") and checked
                            else ""
                        ),
                        spread={
                            name: {k: v * 1000 for k, v in st.items() if k != "n"}
                            for name, st in stats.items()
                        },
                    )
                )

    e2e = sections.get("e2e")
    if e2e is not None:
        if e2e.get("skipped"):
            figures.append(
                _skipped("e2e_single_p50_ms", "End-to-end latency on the local AWS", e2e["skipped"])
            )
        else:
            base = e2e.get("baseline", {})
            for phase, text in (
                ("single", f"{e2e['singles']} single writes"),
                ("burst", f"{e2e['burst']:,}-write burst"),
            ):
                p = e2e["project"][phase]
                b = base.get(phase) if not base.get("skipped") else None
                for stat in ("p50", "p95", "max"):
                    check = stat == "p50"
                    figures.append(
                        _figure(
                            f"e2e_{phase}_{stat}_ms",
                            f"End-to-end, {text}: {stat} ms (put_item -> proof line)",
                            "ms",
                            p[stat] * 1000,
                            b[stat] * 1000 if b else None,
                            ratio=(p[stat] / b[stat]) if b and b[stat] > 0 and p[stat] > 0 else None,
                            target=f"< {TARGET_E2E_P50_S * 1000:g} ms" if check else "",
                            met=(p[stat] < TARGET_E2E_P50_S) if check else None,
                            note=_e2e_note(e2e, phase, base) if check else "",
                        )
                    )

    size = sections.get("size")
    if size:
        fn, bl, pt = size["project_function_zip"], size["baseline_function_zip"], size["powertools_layer_zip"]
        figures.append(
            _figure(
                "function_zip_bytes",
                f"Function zip (functions/, CDK asset excludes), bytes ({fn['files']} files)",
                "B",
                fn["zip_bytes"],
                bl["zip_bytes"],
                ratio=fn["zip_bytes"] / bl["zip_bytes"],
                target=f"< {TARGET_ZIP_BYTES:,} B",
                met=fn["zip_bytes"] < TARGET_ZIP_BYTES,
            )
        )
        figures.append(
            _figure(
                "powertools_layer_zip_bytes",
                "Powertools layer (zip of installed aws_lambda_powertools), bytes",
                "B",
                pt["zip_bytes"],
                pt["zip_bytes"],
                ratio=1.0,
                note="same layer for both",
            )
        )
    return figures


def _share(result: dict[str, Any]) -> str:
    inside, total = result.get("seconds_in_s3_calls"), result.get("seconds")
    return f"{inside / total:.0%}" if inside is not None and total else "?"


def _e2e_note(e2e: dict[str, Any], phase: str, base: dict[str, Any]) -> str:
    parts = []
    from_call = e2e["project"].get(f"{phase}_from_put_item_call")
    if from_call and from_call.get("n"):
        parts.append(f"from the put_item call (round trip included): p50 {from_call['p50'] * 1000:.1f} ms")
    if phase == "burst":
        p = e2e["project"]
        parts.append(
            f"{p['burst_invocations']} invocations, drained {p['burst_drain_seconds']:.1f}s after the 1st write"
        )
    if base.get("skipped"):
        parts.append("baseline skipped: " + base["skipped"])
    return "; ".join(parts)


# ------------------------------------------------------------------------------------------------ table


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "bool":
        return "yes" if value else "NO"
    if unit in ("B",):
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _cell(figure: dict[str, Any], who: str) -> str:
    text = _fmt(figure.get(who), figure["unit"])
    spread = figure.get("spread", {}).get(who)
    if spread and figure.get(who) is not None:
        text += f" [{_fmt(spread['p10'], 'ms')}-{_fmt(spread['p90'], 'ms')}]"
    return text


def render(figures: list[dict[str, Any]], previous: dict[str, dict[str, Any]], previous_when: str) -> str:
    headers = [
        "Figure",
        "Project",
        "Baseline",
        "Floor",
        "Proj/Base",
        "Target",
        "Met",
        f"Prev project ({previous_when})",
    ]
    rows: list[list[str]] = []
    notes: list[str] = []
    for figure in figures:
        if figure["project"] is None:
            rows.append([figure["label"], figure["note"], "", "", "", "", "-", ""])
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
                _cell(figure, "project"),
                _cell(figure, "baseline"),
                _cell(figure, "floor"),
                "-" if figure["ratio"] is None else f"{figure['ratio']:.3g}x",
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


# ------------------------------------------------------------------------------------------------- main


def _load_previous(path: Path) -> tuple[dict[str, dict[str, Any]], str]:
    try:
        data = json.loads(path.read_text())
        return {f["id"]: f for f in data.get("figures", [])}, str(data.get("timestamp", "?"))[:16]
    except (OSError, ValueError, TypeError, AttributeError):
        return {}, "none"


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    tmp.replace(path)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--records", type=int, default=10_000, help="records in the throughput batch")
    parser.add_argument("--cold-runs", type=int, default=20, help="cold starts per handler and event")
    parser.add_argument("--singles", type=int, default=50, help="end-to-end single writes")
    parser.add_argument("--burst", type=int, default=1000, help="end-to-end burst size")
    parser.add_argument(
        "--only", default="throughput,coldstart,e2e,size", help="comma-separated sections to run"
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write the JSON results")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke run); not for comparing")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.cold_runs, args.singles, args.burst = 200, 3, 3, 20
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    wanted = {s.strip() for s in args.only.split(",") if s.strip()}
    previous, previous_when = _load_previous(args.output)
    started = time.perf_counter()
    info = machine_info()
    sections: dict[str, Any] = {}
    # Powertools warns on stderr when the baseline's batch published no metric (an INSERT-only batch).
    warnings.filterwarnings("ignore", message="No application metrics to publish")

    plan = [
        ("size", "artifact sizes", lambda: __import__("bench.size", fromlist=["run"]).run()),
        (
            "throughput",
            f"throughput: {args.records:,} records through project and baseline (moto S3)",
            lambda: __import__("bench.throughput", fromlist=["run"]).run(args.records),
        ),
        (
            "coldstart",
            f"cold start: {args.cold_runs} runs x 3 handlers x 2 events",
            lambda: __import__("bench.coldstart", fromlist=["run"]).run(args.cold_runs),
        ),
        (
            "e2e",
            f"end-to-end on the local AWS: {args.singles} singles + {args.burst:,} burst",
            lambda: __import__("bench.e2e", fromlist=["run"]).run(args.singles, args.burst),
        ),
    ]
    for key, text, job in plan:
        if key not in wanted:
            continue
        _progress(f"{text} ...")
        t0 = time.perf_counter()
        try:
            sections[key] = job()
        except Exception as exc:  # one broken section must not lose the others
            sections[key] = {"skipped": f"{type(exc).__name__}: {exc}"[:400]}
        sections[key]["section_seconds"] = time.perf_counter() - t0
        extra = f" ({sections[key]['skipped']})" if sections[key].get("skipped") else ""
        _progress(f"  done in {sections[key]['section_seconds']:.1f}s{extra}")

    figures = build_figures(sections)
    data = {
        "schema": SCHEMA,
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_seconds": time.perf_counter() - started,
        "python": sys.version.split()[0],
        "machine": info,
        "config": {
            "records": args.records,
            "cold_runs": args.cold_runs,
            "singles": args.singles,
            "burst": args.burst,
            "sections": sorted(wanted),
            "quick": args.quick,
        },
        "figures": figures,
        "sections": sections,
    }
    print(render(figures, previous, previous_when))
    print(
        f"\n{len(figures)} figures in {data['duration_seconds']:.0f}s on {info.get('cpu_count')} cores "
        f"(load at start {info.get('load_avg_at_start')}), Python {data['python']}; "
        f"ratios are project/baseline from the same run."
    )
    _write(args.output, data)
    print(f"results written to {os.path.relpath(args.output)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
