"""``python -m bench`` (``make bench``): every figure of the consumer beside the baseline's, as ONE table.

Sections: throughput under a model of S3's and DynamoDB's latency at batch sizes 10, 100 and 1,000 (and the
consumer's own CPU per record with an in-memory store), the full-shard replay (ten seconds of one shard at 1,000
writes a second through the consumer with the shipped knobs' concurrency, beside ``doctable plan``), the client's
cost per put against a hand-written one, cold start in fresh processes against the json and SDK floors,
end-to-end latency on the local AWS with the plan model's delivery prediction beside the poller's measured one
(skipped with a reason when it cannot run), artifact sizes (bench/README.md). The figures are written to
``bench/results.json`` with the previous run's kept beside them (its "previous" key), and the picture to
``bench/results.svg``. Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, machine_info
from bench.figures import (
    client_figures,
    cold_figures,
    fullshard_figures,
    throughput_figures,
)
from bench.figures import figure as _figure
from bench.table import render, render_fullshard, render_plan_check

RESULTS = BENCH_DIR / "results.json"
SECTIONS = (
    "throughput",
    "fullshard",
    "client",
    "coldstart",
    "subscriber",
    "e2e",
    "size",
    "localaws",
    "plugin",
)
SCHEMA = 1

SVG = BENCH_DIR / "results.svg"
TARGET_E2E_P50_S = 1.0
# Code only: the handler's sources and their bytecode (a vendored library would be megabytes).
TARGET_ZIP_BYTES = 100_000


def _progress(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------- figures


def _skipped(fid: str, label: str, reason: str) -> dict[str, Any]:
    return _figure(fid, label, "", None, note=f"skipped: {reason}")


def build_figures(sections: dict[str, Any]) -> list[dict[str, Any]]:
    figures: list[dict[str, Any]] = []

    tp = sections.get("throughput")
    if tp and tp.get("by_batch_size"):
        figures.extend(throughput_figures(tp))
    elif tp is not None:
        figures.append(_skipped("throughput_rps", "Throughput", tp.get("skipped", "not run")))

    fs = sections.get("fullshard")
    if fs and fs.get("measured"):
        figures.extend(fullshard_figures(fs))
    elif fs is not None:
        figures.append(_skipped("fullshard_rps", "Full-shard replay", fs.get("skipped", "not run")))

    cp = sections.get("client")
    if cp and cp.get("client"):
        figures.extend(client_figures(cp))
    elif cp is not None:
        figures.append(_skipped("client_put_seconds", "Client's cost per put", cp.get("skipped", "not run")))

    cold = sections.get("coldstart")
    if cold and not cold.get("skipped"):
        figures.extend(cold_figures(cold))
    elif cold is not None:
        figures.append(_skipped("cold_start_remove_ms", "Cold start", cold.get("skipped", "not run")))

    plugin = sections.get("plugin")
    if plugin and not plugin.get("skipped"):
        from bench.plugin import plugin_figures

        figures.extend(plugin_figures(plugin))
    elif plugin is not None:
        figures.append(
            _skipped("plugin_nudge_seconds", "A test with one nudge", plugin.get("skipped", "not run"))
        )

    local = sections.get("localaws")
    if local and not local.get("skipped"):
        from bench.localaws import localaws_figures

        figures.extend(localaws_figures(local))
    elif local is not None:
        figures.append(
            _skipped("localaws_putitem_rps", "Local AWS requests", local.get("skipped", "not run"))
        )

    sub = sections.get("subscriber")
    if sub and not sub.get("skipped"):
        from bench.subscriber import subscriber_figures

        figures.extend(subscriber_figures(sub))
    elif sub is not None:
        figures.append(
            _skipped("subscriber_cold_start_ms", "Subscriber wrapper", sub.get("skipped", "not run"))
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
                            f"End-to-end on the LOCAL AWS, {text}: {stat} ms (put_item call start -> proof line)",
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
                f"Function zip (the staged asset: sources + bytecode under the runtime's Python), bytes "
                f"({fn['files']} files)",
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


def _e2e_note(e2e: dict[str, Any], phase: str, base: dict[str, Any]) -> str:
    parts = [
        "the local AWS polls the stream shard as Lambda does (4 times a second while caught up: up to 250 ms, "
        "125 ms on average, of the figure)"
        if e2e.get("poll_cadence") == "aws"
        else "the local AWS wakes its poller on each write; AWS polls a stream shard 4 times a second "
        "(up to 250 ms more, 125 ms on average)"
    ]
    after = e2e["project"].get(f"{phase}_after_put_item_returned")
    if after and after.get("n"):
        parts.append(f"from put_item's return instead: p50 {after['p50'] * 1000:.1f} ms (can be < 0)")
    if phase == "burst":
        p = e2e["project"]
        parts.append(
            f"{p['burst_invocations']} invocations, drained {p['burst_drain_seconds']:.1f}s after the 1st write"
        )
    if base.get("skipped"):
        parts.append("baseline skipped: " + base["skipped"])
    return "; ".join(parts)


# ------------------------------------------------------------------------------------------------- main


def _load_previous(path: Path) -> tuple[dict[str, Any] | None, dict[str, dict[str, Any]], str]:
    """The previous run (its own "previous" dropped: one run is kept beside the new one), its figures by id."""
    try:
        data = json.loads(path.read_text())
        data.pop("previous", None)
        return data, {f["id"]: f for f in data.get("figures", [])}, str(data.get("timestamp", "?"))[:16]
    except (OSError, ValueError, TypeError, AttributeError):
        return None, {}, "none"


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    tmp.replace(path)


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected batch sizes like 10,100,1000") from None
    if not sizes or any(not 1 <= n <= 10_000 for n in sizes):
        raise argparse.ArgumentTypeError(f"{text!r}: batch sizes are 1..10000")
    return sizes


def _variants(text: str) -> tuple[str, ...]:
    from bench.throughput import VARIANTS

    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [v for v in chosen if v not in VARIANTS]
    if not chosen or unknown:
        raise argparse.ArgumentTypeError(f"{text!r}: expected some of {','.join(VARIANTS)}")
    return chosen


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--batch-sizes", type=_sizes, default=(10, 100, 1000), help="throughput batch sizes")
    parser.add_argument("--repeats", type=int, default=3, help="project runs per batch size (median kept)")
    parser.add_argument("--s3-ms", type=float, default=150.0, help="modelled S3 request latency (150)")
    parser.add_argument(
        "--dynamodb-ms", type=float, default=5.0, help="modelled DynamoDB request latency (5)"
    )
    parser.add_argument("--cold-runs", type=int, default=15, help="cold starts per handler and event")
    parser.add_argument("--singles", type=int, default=50, help="end-to-end single writes")
    parser.add_argument("--burst", type=int, default=1000, help="end-to-end burst size")
    parser.add_argument(
        "--fullshard-writes", type=int, default=1000, help="full-shard replay: writes per second (1000)"
    )
    parser.add_argument(
        "--fullshard-seconds", type=float, default=10.0, help="full-shard replay: seconds of the shard (10)"
    )
    parser.add_argument("--client-puts", type=int, default=20, help="client section: puts per writer (20)")
    parser.add_argument(
        "--subscriber-rounds", type=int, default=200, help="subscriber section: batches per CPU process (200)"
    )
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections to run (of {','.join(SECTIONS)})",
    )
    parser.add_argument(
        "--variants",
        type=_variants,
        default=None,
        help="comma-separated project variants of the throughput section (default: all of "
        "project,project_never,project_manifest); the baseline always runs",
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write the JSON results")
    parser.add_argument("--svg", type=Path, default=SVG, help="where to write the picture")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke run); not for comparing")
    args = parser.parse_args(argv)
    if args.quick:
        args.batch_sizes, args.repeats, args.s3_ms = (10, 30), 1, 20.0
        args.cold_runs, args.singles, args.burst = 3, 3, 20
        args.fullshard_writes, args.fullshard_seconds, args.client_puts = 200, 1.0, 3
        args.subscriber_rounds = 20
    unknown = sorted({s.strip() for s in args.only.split(",") if s.strip()} - set(SECTIONS))
    if unknown:
        parser.error(f"--only: unknown section(s) {','.join(unknown)}; allowed: {','.join(SECTIONS)}")
    return args


def plan_check(e2e: dict[str, Any] | None) -> dict[str, Any] | None:
    """The plan model's delivery of the local burst beside what the local poller delivered."""
    if not e2e or e2e.get("skipped") or "project" not in e2e:
        return None
    from doctable.plan.cost import predict_delivery

    measured = e2e["project"]
    records, seconds = e2e["burst"], measured["burst_write_seconds"]
    batch_size = e2e.get("batch_size", 10)
    predicted = predict_delivery(records, seconds, batch_size)
    return {
        "records": records,
        "write_seconds": seconds,
        "batch_size": batch_size,
        "predicted": predicted,
        "measured": {
            "invocations": measured["burst_invocations"],
            "records_per_invocation": records / measured["burst_invocations"],
        },
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    wanted = {s.strip() for s in args.only.split(",") if s.strip()}
    previous_run, previous, previous_when = _load_previous(args.output)
    started = time.perf_counter()
    info = machine_info()
    sections: dict[str, Any] = {}
    # Powertools warns on stderr when the baseline's batch published no metric (an INSERT-only batch).
    warnings.filterwarnings("ignore", message="No application metrics to publish")

    sizes = ",".join(f"{n:,}" for n in args.batch_sizes)
    jobs = [
        ("size", "artifact sizes", lambda: __import__("bench.size", fromlist=["run"]).run()),
        (
            "throughput",
            f"throughput under the S3 latency model ({args.s3_ms:g} ms): batches of {sizes}, project and baseline",
            lambda: __import__("bench.throughput", fromlist=["run"]).run(
                args.batch_sizes,
                args.repeats,
                args.s3_ms,
                args.dynamodb_ms,
                **({"variants": args.variants} if args.variants else {}),
            ),
        ),
        (
            "fullshard",
            f"full-shard replay: {args.fullshard_seconds:g} s of one shard at {args.fullshard_writes:,} writes/s "
            "through the consumer with the shipped knobs' concurrency",
            lambda: __import__("bench.fullshard", fromlist=["run"]).run(
                args.fullshard_writes, args.fullshard_seconds, args.s3_ms, args.dynamodb_ms
            ),
        ),
        (
            "client",
            f"the client's cost per put: {args.client_puts} puts each, DocClient.put and hand-written",
            lambda: __import__("bench.client_put", fromlist=["run"]).run(
                args.client_puts, args.s3_ms, args.dynamodb_ms
            ),
        ),
        (
            "coldstart",
            f"cold start: {args.cold_runs} runs x 4 handlers x 2 events",
            lambda: __import__("bench.coldstart", fromlist=["run"]).run(args.cold_runs),
        ),
        (
            "subscriber",
            f"subscriber wrapper: {args.cold_runs} cold starts x 4 handlers, CPU per record over "
            f"{args.subscriber_rounds} batches of 100, wrapper and handler alone",
            lambda: __import__("bench.subscriber", fromlist=["run"]).run(
                args.cold_runs, rounds=args.subscriber_rounds, repeats=args.repeats
            ),
        ),
        (
            "localaws",
            "the local AWS's DynamoDB requests per second with its request checks and without, same run",
            lambda: __import__("bench.localaws", fromlist=["run"]).run(
                seconds=0.5 if args.quick else 3.0, rounds=1 if args.quick else 3
            ),
        ),
        (
            "plugin",
            "the pytest plugin: a test with one nudge after the session's deploy, beside the put alone",
            lambda: __import__("bench.plugin", fromlist=["run"]).run(rounds=2 if args.quick else 5),
        ),
        (
            "e2e",
            f"end-to-end on the local AWS: {args.singles} singles + {args.burst:,} burst",
            lambda: __import__("bench.e2e", fromlist=["run"]).run(args.singles, args.burst),
        ),
    ]
    for key, text, job in jobs:
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

    check = plan_check(sections.get("e2e"))
    if check:
        sections["plan_check"] = check
    try:
        figures = build_figures(sections)
    except Exception as exc:  # the measurements are written all the same
        figures = []
        sections["figures_error"] = f"{type(exc).__name__}: {exc}"
        _progress(f"building the figures failed: {sections['figures_error']}")
    data = {
        "schema": SCHEMA,
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_seconds": time.perf_counter() - started,
        "python": sys.version.split()[0],
        "machine": info,
        "config": {
            "batch_sizes": list(args.batch_sizes),
            "repeats": args.repeats,
            "s3_ms": args.s3_ms,
            "dynamodb_ms": args.dynamodb_ms,
            "cold_runs": args.cold_runs,
            "singles": args.singles,
            "burst": args.burst,
            "fullshard_writes": args.fullshard_writes,
            "fullshard_seconds": args.fullshard_seconds,
            "client_puts": args.client_puts,
            "subscriber_rounds": args.subscriber_rounds,
            "sections": sorted(wanted),
            "variants": list(args.variants) if args.variants else None,
            "quick": args.quick,
        },
        "figures": figures,
        "sections": sections,
        "previous": previous_run,
    }
    print(render(figures, previous, previous_when))
    tp = sections.get("throughput") or {}
    if tp.get("model"):
        print("\nlatency model (each request: fixed + per key; real sleeps, project and baseline alike):")
        for op, st in tp["model"]["service_times"].items():
            print(f"  {op:<14} {st['fixed_ms']:g} ms + {st['per_key_ms']:.4g} ms/key   [{st['source']}]")
        for name, source in tp["model"]["sources"].items():
            print(f"  {name}: {source}")
    fs = sections.get("fullshard") or {}
    if fs.get("measured"):
        print("\n" + render_fullshard(fs))
    if check:
        print("\n" + render_plan_check(check))
    print(
        f"\n{len(figures)} figures in {data['duration_seconds']:.0f}s on {info.get('cpu_count')} cores "
        f"(load at start {info.get('load_avg_at_start')}), Python {data['python']}; "
        f"ratios are project/baseline from the same run."
    )
    _write(args.output, data)
    print(f"results written to {os.path.relpath(args.output)}")
    if wanted & {"throughput", "coldstart", "fullshard", "client"}:
        from bench import svg

        caption = (
            f"doctable make bench, {data['timestamp']}, {info.get('cpu_count')} cores, load at start "
            f"{info.get('load_avg_at_start')}; S3 modelled at {args.s3_ms:g} ms/request"
        )
        args.svg.write_text(svg.render(sections, caption))
        print(f"picture written to {os.path.relpath(args.svg)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
