"""The bench's picture, as hand-written SVG: throughput against batch size under the S3 latency model (project
and baseline), the cold-start distributions of the four handlers (each run a dot, the median a bar), the
full-shard replay's records handled against time (beside the rate written and doctable plan's), and the client's
wall time per put beside a hand-written put's."""

from __future__ import annotations

import math
from html import escape
from typing import Any

from bench.throughput import RATIO_KEYS

WIDTH, HEIGHT = 960, 800
COLORS = {
    "project": "#1b6ac9",
    "project_never": "#0ca678",
    "project_manifest": "#862e9c",
    "project_snapstart": "#0b7285",
    "baseline": "#d9480f",
    "floor": "#5c940d",
    "sdk_floor": "#7048e8",
}
NAMES = {
    "project": "project",
    "project_never": "project, never",
    "project_manifest": "project, manifests",
    "project_snapstart": "project, snapstart*",
    "baseline": "baseline",
    "floor": "json floor",
    "sdk_floor": "SDK floor",
}


def _text(x: float, y: float, text: str, size: int = 12, anchor: str = "start", **attrs: str) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in attrs.items())
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"'
        f' font-family="sans-serif"{extra}>{escape(text)}</text>'
    )


def _log_ticks(low: float, high: float) -> list[float]:
    return [10.0**e for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)]


def _throughput_panel(tp: dict[str, Any], x0: float, y0: float, w: float, h: float) -> list[str]:
    out = [
        _text(
            x0 + w / 2, y0 - 12, "Throughput under the S3 latency model (records/s per shard)", 13, "middle"
        )
    ]
    by = tp.get("by_batch_size", {})
    sizes = sorted(int(s) for s in by)
    if not sizes:
        return [*out, _text(x0 + 10, y0 + 20, "throughput not measured")]
    candidates = ("project", "project_never", "project_manifest", "baseline")
    lines = [who for who in candidates if all(who in by[str(s)] for s in sizes)]
    values = [by[str(s)][who]["records_per_second"] for s in sizes for who in lines]
    ylo, yhi = _log_ticks(min(values), max(values))[0], _log_ticks(min(values), max(values))[-1]
    xlo, xhi = min(sizes) / 2, max(sizes) * 2

    def px(v: float) -> float:
        return x0 + (math.log10(v) - math.log10(xlo)) / (math.log10(xhi) - math.log10(xlo)) * w

    def py(v: float) -> float:
        return y0 + h - (math.log10(v) - math.log10(ylo)) / (math.log10(yhi) - math.log10(ylo)) * h

    out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#999"/>')
    for tick in _log_ticks(ylo, yhi):
        out.append(f'<line x1="{x0}" x2="{x0 + w}" y1="{py(tick):.1f}" y2="{py(tick):.1f}" stroke="#eee"/>')
        out.append(_text(x0 - 6, py(tick) + 4, f"{tick:,.0f}", 11, "end"))
    for size in sizes:
        out.append(_text(px(size), y0 + h + 16, f"{size:,}", 11, "middle"))
    out.append(_text(x0 + w / 2, y0 + h + 34, "batch size (records per invocation)", 12, "middle"))
    for who in lines:
        points = [(px(s), py(by[str(s)][who]["records_per_second"])) for s in sizes]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{COLORS[who]}" stroke-width="2"/>')
        for (x, y), size in zip(points, sizes, strict=True):
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{COLORS[who]}"/>')
            if who != "baseline":
                ratio = by[str(size)][RATIO_KEYS[who]]
                out.append(_text(x, y - 8, f"{ratio:.1f}x", 11, "middle", fill=COLORS[who]))
    legend = {
        "project": "project (default: keys may be reused)",
        "project_never": "project, blob_key_reuse=never",
        "project_manifest": "project, default, blobs with their ETags (manifests)",
        "baseline": "baseline (docs-style)",
    }
    for n, who in enumerate(lines):
        out.append(_text(x0 + 8, y0 + 16 * (n + 1), legend[who], 12, fill=COLORS[who]))
    return out


def _cold_panel(cold: dict[str, Any], x0: float, y0: float, w: float, h: float) -> list[str]:
    out = [
        _text(
            x0 + w / 2, y0 - 12, "Cold start, wall ms to the response (dots: runs; bar: median)", 13, "middle"
        )
    ]
    rows = [
        (kind, name)
        for kind in ("remove", "insert")
        if kind in cold
        for name in ("project", "project_never", "project_snapstart", "baseline", "sdk_floor", "floor")
        if name in cold[kind]
    ]
    if not rows:
        return [*out, _text(x0 + 10, y0 + 20, "cold start not measured")]
    samples = [v for kind, name in rows for v in cold[kind][name].get("wall_ms_samples", [])]
    hi = max(samples) * 1.05 if samples else 1.0
    label_w = 150
    step = h / len(rows)

    def px(v: float) -> float:
        return x0 + label_w + v / hi * (w - label_w)

    out.append(
        f'<rect x="{x0 + label_w}" y="{y0}" width="{w - label_w}" height="{h}" fill="none" stroke="#999"/>'
    )
    tick = 10 ** math.floor(math.log10(hi)) if hi > 0 else 1
    tick = tick / 2 if hi / tick < 4 else tick
    value = 0.0
    while value <= hi:
        out.append(f'<line x1="{px(value):.1f}" x2="{px(value):.1f}" y1="{y0}" y2="{y0 + h}" stroke="#eee"/>')
        out.append(_text(px(value), y0 + h + 16, f"{value:,.0f}", 11, "middle"))
        value += tick
    out.append(
        _text(
            x0 + label_w + (w - label_w) / 2,
            y0 + h + 34,
            "ms (* from the restore: a fork after the init)",
            12,
            "middle",
        )
    )
    for i, (kind, name) in enumerate(rows):
        y = y0 + step * (i + 0.5)
        out.append(
            _text(x0 + label_w - 6, y + 4, f"{kind.upper()} {NAMES[name]}", 11, "end", fill=COLORS[name])
        )
        for v in cold[kind][name].get("wall_ms_samples", []):
            out.append(
                f'<circle cx="{px(v):.1f}" cy="{y:.1f}" r="2.5" fill="{COLORS[name]}" fill-opacity="0.5"/>'
            )
        median = cold[kind][name]["wall_s"]["median"] * 1000
        out.append(
            f'<line x1="{px(median):.1f}" x2="{px(median):.1f}" y1="{y - step * 0.35:.1f}" '
            f'y2="{y + step * 0.35:.1f}" stroke="{COLORS[name]}" stroke-width="2.5"/>'
        )
    return out


def _fullshard_panel(fs: dict[str, Any], x0: float, y0: float, w: float, h: float) -> list[str]:
    out = [_text(x0 + w / 2, y0 - 12, "Full-shard replay: records handled against time", 13, "middle")]
    m = fs.get("measured")
    if not m:
        return [*out, _text(x0 + 10, y0 + 20, "full-shard replay not measured")]
    written = float(fs["workload"]["writes_per_second"])
    records = float(m["records"])
    predicted = (fs.get("plan") or {}).get("shard_capacity_records_per_second")
    xhi = max(m["seconds"], records / written) * 1.05
    yhi = records * 1.05

    def px(t: float) -> float:
        return x0 + t / xhi * w

    def py(n: float) -> float:
        return y0 + h - n / yhi * h

    out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#999"/>')
    step = 10 ** math.floor(math.log10(yhi)) if yhi > 0 else 1
    step = step / 2 if yhi / step < 4 else step
    n = 0.0
    while n <= yhi:
        out.append(f'<line x1="{x0}" x2="{x0 + w}" y1="{py(n):.1f}" y2="{py(n):.1f}" stroke="#eee"/>')
        out.append(_text(x0 - 6, py(n) + 4, f"{n:,.0f}", 11, "end"))
        n += step
    t = 0
    while t <= xhi:
        out.append(_text(px(t), y0 + h + 16, f"{t:g}", 11, "middle"))
        t += 1 if xhi <= 12 else 5
    out.append(_text(x0 + w / 2, y0 + h + 34, "seconds since the replay's start", 12, "middle"))
    lines = [("written", written, "#868e96", f"written: {written:,.0f} records/s")]
    if predicted:
        lines.append(("plan", predicted, "#f08c00", f"doctable plan: {predicted:,.0f} records/s"))
    for _, rate, color, _label in lines:
        end = min(xhi, records / rate)
        out.append(
            f'<line x1="{px(0):.1f}" y1="{py(0):.1f}" x2="{px(end):.1f}" y2="{py(rate * end):.1f}" '
            f'stroke="{color}" stroke-width="1.5" stroke-dasharray="6,4"/>'
        )
    points = [(0.0, 0.0), *((float(t), float(n)) for t, n in m.get("progress", []))]
    path = " ".join(f"{px(t):.1f},{py(n):.1f}" for t, n in points)
    out.append(
        f'<polyline points="{path}" fill="none" stroke="{COLORS["project_manifest"]}" stroke-width="2"/>'
    )
    legend = [
        (
            COLORS["project_manifest"],
            f"measured: {m['records_per_second']:,.0f} records/s ({m['ratio_to_written']:.2f}x written), "
            f"guarantee {'held' if m['guarantee_held'] else 'BROKEN'}",
        ),
        *((color, label) for _, _, color, label in lines),
    ]
    for i, (color, label) in enumerate(reversed(legend)):  # bottom right: under the lines
        out.append(_text(x0 + w - 8, y0 + h - 8 - 16 * i, label, 12, "end", fill=color))
    return out


def _client_panel(cp: dict[str, Any], x0: float, y0: float, w: float, h: float) -> list[str]:
    out = [
        _text(x0 + w / 2, y0 - 12, "One put of a document with two blobs: wall ms (p10-p90)", 13, "middle")
    ]
    if not cp.get("client"):
        return [*out, _text(x0 + 10, y0 + 20, "client put not measured")]
    rows = (
        ("client", "DocClient.put", COLORS["project"]),
        ("handwritten", "hand-written boto3", COLORS["baseline"]),
    )
    hi = max(cp[who]["seconds_p90"] for who, _, _ in rows) * 1000 * 1.15
    label_w = 130

    def px(v: float) -> float:
        return x0 + label_w + v / hi * (w - label_w)

    out.append(
        f'<rect x="{x0 + label_w}" y="{y0}" width="{w - label_w}" height="{h}" fill="none" stroke="#999"/>'
    )
    tick = 10 ** math.floor(math.log10(hi)) if hi > 0 else 1
    tick = tick / 2 if hi / tick < 4 else tick
    value = 0.0
    while value <= hi:
        out.append(f'<line x1="{px(value):.1f}" x2="{px(value):.1f}" y1="{y0}" y2="{y0 + h}" stroke="#eee"/>')
        out.append(_text(px(value), y0 + h + 16, f"{value:,.0f}", 11, "middle"))
        value += tick
    out.append(_text(x0 + label_w + (w - label_w) / 2, y0 + h + 34, "ms per put", 12, "middle"))
    step = h / len(rows)
    for i, (who, label, color) in enumerate(rows):
        s = cp[who]
        y = y0 + step * (i + 0.5)
        median, p10, p90 = (s[k] * 1000 for k in ("seconds_median", "seconds_p10", "seconds_p90"))
        out.append(_text(x0 + label_w - 6, y + 4, label, 11, "end", fill=color))
        out.append(
            f'<rect x="{px(0):.1f}" y="{y - step * 0.2:.1f}" width="{px(median) - px(0):.1f}" '
            f'height="{step * 0.4:.1f}" fill="{color}" fill-opacity="0.7"/>'
        )
        out.append(
            f'<line x1="{px(p10):.1f}" x2="{px(p90):.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="#222" stroke-width="1.5"/>'
        )
        out.append(
            _text(px(median) + 6, y - step * 0.22, f"{median:.0f} ms, {s['requests_per_put']:g} requests", 11)
        )
    return out


def render(sections: dict[str, Any], caption: str) -> str:
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
    ]
    tp, cold = sections.get("throughput") or {}, sections.get("coldstart") or {}
    parts += _throughput_panel(tp, 70, 40, 330, 300)
    parts += _cold_panel(cold, 450, 40, 490, 300)
    parts += _fullshard_panel(sections.get("fullshard") or {}, 70, 430, 440, 300)
    parts += _client_panel(sections.get("client") or {}, 560, 430, 380, 300)
    parts.append(_text(WIDTH / 2, HEIGHT - 12, caption, 11, "middle", fill="#555"))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
