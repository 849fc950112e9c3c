"""The bench's figures of the throughput and cold-start sections: one row each for the table and results.json,
with the goals they are checked against."""

from __future__ import annotations

from typing import Any

# project/baseline under the latency model, per batch size (none at 100: reported only)
TARGET_THROUGHPUT_RATIO = {10: 10.0, 1000: 50.0}
# The same, the items listing manifest entries (guarded, no HEAD: one item read and one delete per batch)
TARGET_MANIFEST_RATIO = {10: 10.0, 1000: 100.0}
TARGET_REMOVE_OVER_SDK_FLOOR = 1.1
TARGET_INSERT_OVER_JSON_FLOOR = 3.0
# snapstart=on, resumed from the init's snapshot, against the baseline's cold start
TARGET_SNAPSTART_OVER_BASELINE = 0.6


def figure(
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


def _requests(counts: dict[str, int]) -> str:
    return " + ".join(f"{n:,} {op}" for op, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "none"


def throughput_figures(tp: dict[str, Any]) -> list[dict[str, Any]]:
    figures: list[dict[str, Any]] = []
    service = tp["model"]["service_times"]
    model = ", ".join(
        f"{op} {s['fixed_ms']:g} ms" + (f" + {s['per_key_ms']:.3g} ms/key" if s["per_key_ms"] else "")
        for op, s in service.items()
    )
    runs = tp["by_batch_size"]
    # (run key, its ratio's key, figure id, label, what the note adds, goals): the default, blob_key_reuse=never,
    # then the default with manifest entries
    variants = (
        ("project", "ratio_project_over_baseline", "throughput_rps", "S3 latency model", "",
         TARGET_THROUGHPUT_RATIO),
        ("project_never", "ratio_never_over_baseline", "throughput_never_rps", "blob_key_reuse=never",
         ": no HEAD, no live-item read", TARGET_THROUGHPUT_RATIO),
        ("project_manifest", "ratio_manifest_over_baseline", "throughput_manifest_rps",
         "blob manifests (ETags recorded), guarded", "", TARGET_MANIFEST_RATIO),
    )  # fmt: skip
    for who, ratio_key, fid, label, more, targets in variants:
        for size_text, run in runs.items():
            if who not in run:
                continue
            size = int(size_text)
            p, b, ratio = run[who], run["baseline"], run[ratio_key]
            target = targets.get(size)
            if who == "project_manifest":
                more = (
                    f": no HEAD; {p['reuploads_kept']} re-upload(s) under a dropped key kept"
                    f"; baseline {_requests(b['requests'])} in {b['seconds']:.2f} s"
                )
            figures.append(
                figure(
                    f"{fid}_b{size}",
                    f"Throughput, batch of {size:,}, {label} (records/s per shard)",
                    "rec/s",
                    p["records_per_second"],
                    b["records_per_second"],
                    ratio=ratio,
                    target=f">= {target:g}x baseline" if target else "(reported)",
                    met=(ratio >= target and p["correct"] and b["correct"]) if target else None,
                    note=f"project {_requests(p['requests'])} in {p['seconds']:.2f} s (median of {p['repeats']}: "
                    f"{', '.join(f'{x:.2f}' for x in p['all_seconds'])})"
                    + (more or f"; baseline {_requests(b['requests'])} in {b['seconds']:.2f} s"),
                )
            )
    figures[0]["note"] += f"; model: {model}; real sleeps in both consumers"
    largest = runs[str(max(int(k) for k in runs))]
    if "project" not in largest:  # a run of other variants only
        return figures + _correct_and_cpu(tp, runs)
    p, b = largest["project"], largest["baseline"]
    deleted = p["blobs_deleted"]
    figures.append(
        figure(
            "s3_requests_per_1000_blobs",
            f"S3 requests per 1,000 blobs deleted ({deleted:,} blobs; HEAD + DeleteObjects vs DeleteObject)",
            "req",
            p["s3_requests_per_1000_blobs"],
            b["s3_requests_per_1000_blobs"],
            ratio=(p["s3_requests_per_1000_blobs"] / b["s3_requests_per_1000_blobs"])
            if p["s3_requests_per_1000_blobs"] and b["s3_requests_per_1000_blobs"]
            else None,
            target="(reported: one HEAD per key is the key-reuse check)",
            note=f"plus {p['requests'].get('BatchGetItem', 0)} DynamoDB BatchGetItem",
        )
    )
    return figures + _correct_and_cpu(tp, runs)


def _correct_and_cpu(tp: dict[str, Any], runs: dict[str, Any]) -> list[dict[str, Any]]:
    figures: list[dict[str, Any]] = []
    projects = ("project", "project_never", "project_manifest")
    correct = all(r[w]["correct"] for r in runs.values() for w in (*projects, "baseline") if w in r)
    figures.append(
        figure(
            "throughput_correct",
            "Blobs gone afterwards, survivors intact, no failures (every batch)",
            "bool",
            1.0 if all(r[w]["correct"] for r in runs.values() for w in projects if w in r) else 0.0,
            1.0 if all(r["baseline"]["correct"] for r in runs.values()) else 0.0,
            target="both correct",
            met=correct,
        )
    )
    cpu = tp.get("cpu_in_memory")
    if cpu:
        b, f = cpu["baseline"]["cpu_us_per_record"], cpu["floor"]["cpu_us_per_record"]
        notes = {
            "project_never": "no HEAD per key and no live-item read",
            "project_manifest": "no HEAD per key: one item read, one delete",
        }
        for who, fid, label in (
            ("project", "cpu_us_per_record", "in-memory store"),
            ("project_never", "cpu_never_us_per_record", "blob_key_reuse=never"),
            ("project_manifest", "cpu_manifest_us_per_record", "blob manifests"),
        ):
            if who not in cpu:
                continue
            p = cpu[who]["cpu_us_per_record"]
            figures.append(
                figure(
                    fid,
                    f"Consumer's own CPU per record, {label}, batch of {cpu['records']:,} (us)",
                    "us",
                    p,
                    b,
                    floor=f,
                    ratio=p / b if b else None,
                    target="(reported; floor: json handler)",
                    note=f"project/json floor {p / f:,.0f}x; on Lambda at 256 MB (0.14 vCPU) about 7x these"
                    if who == "project"
                    else notes[who],
                )
            )
    return figures


def cold_figures(cold: dict[str, Any]) -> list[dict[str, Any]]:
    figures: list[dict[str, Any]] = []
    goals = {
        "remove": ("sdk_floor", "SDK floor", TARGET_REMOVE_OVER_SDK_FLOOR, "1 REMOVE, 3 blobs"),
        "insert": ("floor", "json floor", TARGET_INSERT_OVER_JSON_FLOOR, "1 INSERT, no S3 call"),
    }
    for kind, (floor_name, floor_label, goal, text) in goals.items():
        section = cold.get(kind)
        if not section:
            continue
        # A handler that answered wrongly (a failed record, a blob left) meets no goal, however fast it was.
        wrong = {problem.split(":", 1)[0] for problem in section.get("problems", [])}
        for metric, fid, what in (
            ("wall_s", f"cold_start_{kind}_ms", "wall ms to response"),
            ("cpu_s", f"cold_start_{kind}_cpu_ms", "CPU ms (user+sys)"),
        ):
            names = ("project", "baseline", floor_name)
            stats = {name: section[name][metric] for name in names}
            p, f = stats["project"]["median"], stats[floor_name]["median"]
            checked = metric == "wall_s"
            other = "floor" if floor_name == "sdk_floor" else "sdk_floor"
            figures.append(
                figure(
                    fid,
                    f"Cold start, {text}: {what}, median [p10-p90], n={stats['project']['n']}",
                    "ms",
                    p * 1000,
                    stats["baseline"]["median"] * 1000,
                    floor=f * 1000,
                    ratio=section[f"ratio_project_over_baseline_{metric}"],
                    target=f"<= {goal:g}x {floor_label}" if checked else f"(vs {floor_label})",
                    met=(p / f <= goal and not wrong & {"project", floor_name}) if checked else None,
                    note=f"floor = {floor_label}; {NAMES_COLD[other]} {section[other][metric]['median'] * 1000:.0f} ms; "
                    f"modules: project {section['project']['modules_loaded']}, "
                    f"{floor_label} {section[floor_name]['modules_loaded']}"
                    + (f"; PROBLEMS: {section['problems']}" if section.get("problems") and checked else ""),
                    spread={
                        name: {k: v * 1000 for k, v in st.items() if k != "n"} for name, st in stats.items()
                    }
                    | {"floor": {k: v * 1000 for k, v in stats[floor_name].items() if k != "n"}},
                )
            )
        never = section.get("project_never")
        if never:
            n, f = never["wall_s"], section[floor_name]["wall_s"]
            figures.append(
                figure(
                    f"cold_start_{kind}_never_ms",
                    f"Cold start, {text}, blob_key_reuse=never: wall ms to response, median [p10-p90], n={n['n']}",
                    "ms",
                    n["median"] * 1000,
                    section["baseline"]["wall_s"]["median"] * 1000,
                    floor=f["median"] * 1000,
                    ratio=n["median"] / section["baseline"]["wall_s"]["median"],
                    target=f"(reported; vs {floor_label})",
                    note="one DeleteObjects, as the SDK floor sends: no HEAD, no DynamoDB client, no item read",
                    spread={"project": {k: v * 1000 for k, v in n.items() if k != "n"}},
                )
            )
        snap = section.get("project_snapstart")
        if snap:
            n, b = snap["wall_s"], section["baseline"]["wall_s"]["median"]
            ratio = n["median"] / b
            figures.append(
                figure(
                    f"cold_start_{kind}_snapstart_ms",
                    f"Cold start, {text}, snapstart=on (resumed from the init's snapshot): wall ms from restore to "
                    f"response, median [p10-p90], n={n['n']}",
                    "ms",
                    n["median"] * 1000,
                    b * 1000,
                    floor=section[floor_name]["wall_s"]["median"] * 1000,
                    ratio=ratio,
                    target=f"<= {TARGET_SNAPSTART_OVER_BASELINE:g}x baseline",
                    met=ratio <= TARGET_SNAPSTART_OVER_BASELINE and SNAPSTART_NAME not in wrong,
                    note="model: the init (clients built) runs, then the process forks and the copy handles the "
                    "batch; Lambda's own restore (Restore Duration) is platform time, not in this figure",
                    spread={"project": {k: v * 1000 for k, v in n.items() if k != "n"}},
                )
            )
    return figures


NAMES_COLD = {"floor": "json floor", "sdk_floor": "SDK floor"}
SNAPSTART_NAME = "project_snapstart"  # bench.coldstart.SNAPSTART (not imported: it pulls in the staging code)


def fullshard_figures(fs: dict[str, Any]) -> list[dict[str, Any]]:
    """The full-shard replay: records per second sustained against the rate written, beside ``doctable plan``."""
    w, shape, m, plan = fs["workload"], fs["shape"], fs["measured"], fs.get("plan", {})
    written = float(w["writes_per_second"])
    held = bool(m["guarantee_held"])
    predicted = plan.get("shard_capacity_records_per_second")
    what = (
        f"{w['seconds']:g} s of one shard at {written:,.0f} writes/s ({w['remove_share']:.0%} REMOVE x "
        f"{w['blobs_per_remove']} manifest blobs, {w['item_bytes'] / 1024:g} KB items), "
        f"{shape['parallelization_factor']} environments x batch {shape['batch_size']} at {shape['memory']} MB"
    )
    plan_text = (
        f"doctable plan predicts {predicted:,.0f} rec/s, {plan['seconds_per_batch']:.3f} s a batch"
        if predicted
        else f"doctable plan: {plan.get('skipped', 'not run')}"
    )
    requests = _requests(m["requests"])
    figures = [
        figure(
            "fullshard_rps",
            f"Full-shard replay, {what}: records/s sustained",
            "rec/s",
            m["records_per_second"],
            target=f">= {written:,.0f} rec/s (the rate written)",
            met=m["records_per_second"] >= written and held,
            note=f"{m['records']:,} records in {m['seconds']:.2f} s; {plan_text}; {requests} in all; "
            f"CPU share {shape['cpu_share']:.3f} vCPU ({shape['memory']} / {shape['full_vcpu_mb']:g} MB)",
        ),
        figure(
            "fullshard_ratio_to_written",
            "Full-shard replay: records/s sustained over records/s written",
            "x",
            m["ratio_to_written"],
            target=">= 1",
            met=m["ratio_to_written"] >= 1 and held,
        ),
        figure(
            "fullshard_batch_seconds",
            "Full-shard replay: seconds per batch (median; waits + CPU at the function's vCPU share)",
            "s",
            m["batch_seconds_median"],
            target="(reported)",
            note=f"answered after {m['batch_answer_seconds_median']:.3f} s (CPU at this machine's full speed: "
            f"{m['batch_cpu_seconds_median'] * 1000:.1f} ms), then the rest of the CPU time at the share; "
            f"{m['cpu_us_per_record']:.0f} us CPU per record",
        ),
    ]
    if predicted:
        figures.append(
            figure(
                "fullshard_plan_rps",
                "doctable plan's prediction for the same workload and knobs: records/s a shard's consumers handle",
                "rec/s",
                predicted,
                target="(reported)",
                note=f"{plan['command']}; {plan['iterator_age_risk']}",
            )
        )
        figures.append(
            figure(
                "fullshard_measured_over_plan",
                "Full-shard replay: records/s measured over doctable plan's prediction",
                "x",
                m["records_per_second"] / predicted,
                target="(reported)",
                note=f"plan {plan['seconds_per_batch']:.3f} s a batch, measured {m['batch_seconds_median']:.3f} s",
            )
        )
    figures.append(
        figure(
            "fullshard_guarantee_held",
            "Full-shard replay: no live blob deleted, re-uploads under a dropped key (another ETag) kept, "
            "every dropped blob deleted, no failed record",
            "bool",
            1.0 if held else 0.0,
            target="held",
            met=held,
            note=f"{m['blobs_listed_for_deletion'] - m['blobs_left_that_should_be_gone']:,} of "
            f"{m['blobs_listed_for_deletion']:,} dropped blobs deleted; {m['live_blobs_deleted']} of "
            f"{m['live_blobs']:,} live blobs deleted ({m['items_written_back']} items written back); "
            f"{m['reuploads_kept']} of {m['reuploads']} re-uploads kept; {m['batch_item_failures']} failed records",
        )
    )
    return figures


def client_figures(cp: dict[str, Any]) -> list[dict[str, Any]]:
    """The client's put beside a hand-written upload + PutItem: requests and wall time per put."""
    c, h = cp["client"], cp["handwritten"]
    doc = f"a document with {cp['blobs_per_put']} blobs of {cp['blob_bytes'] / 1024:g} KB"
    correct = "" if c["correct"] and h["correct"] else "; WRONG: an item or object did not match"

    def spread(s: dict[str, Any]) -> dict[str, float]:
        return {"p10": s["seconds_p10"], "p90": s["seconds_p90"]}

    return [
        figure(
            "client_put_requests",
            f"DocClient.put, {doc}: requests per put (vs hand-written)",
            "req",
            c["requests_per_put"],
            h["requests_per_put"],
            ratio=c["requests_per_put"] / h["requests_per_put"],
            target="(reported)",
            note=f"client {_requests(c['requests'])}; hand-written {_requests(h['requests'])}{correct}",
        ),
        figure(
            "client_put_seconds",
            f"DocClient.put, {doc}: wall seconds per put, median [p10-p90], n={c['puts']} (vs hand-written)",
            "s",
            c["seconds_median"],
            h["seconds_median"],
            ratio=c["seconds_median"] / h["seconds_median"],
            target="(reported)",
            note=f"uploads in parallel (upload_concurrency={cp['upload_concurrency']}); CPU "
            f"{c['cpu_seconds_median'] * 1000:.1f} ms per put, hand-written {h['cpu_seconds_median'] * 1000:.1f} ms",
            spread={"project": spread(c), "baseline": spread(h)},
        ),
        figure(
            "handwritten_put_requests",
            f"Hand-written put (boto3: put_object per blob, then put_item), {doc}: requests per put",
            "req",
            h["requests_per_put"],
            target="(reported)",
        ),
        figure(
            "handwritten_put_seconds",
            f"Hand-written put, {doc}: wall seconds per put, median [p10-p90], n={h['puts']}",
            "s",
            h["seconds_median"],
            target="(reported)",
            note="one upload after the other, as boto3's examples write it",
            spread={"project": spread(h)},
        ),
    ]
