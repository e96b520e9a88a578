"""Small inline-SVG chart builders for the self-contained HTML report (no JS, no network)."""

from __future__ import annotations

import math
from html import escape

PASS, FAIL, UNKNOWN = "#2e7d32", "#c62828", "#8d8d8d"
BROKER_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
FAULT_FILL = "#f4a261"
FONT = 'font-family="system-ui,Segoe UI,Helvetica,Arial,sans-serif"'


def _e(s) -> str:
    return escape("" if s is None else str(s), quote=True)


def fmt(v, digits: int = 3) -> str:
    """Numbers for display: ints as is, floats to ``digits`` decimals, None as an en dash."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "–"
        return f"{v:.{digits}f}"
    return str(v)


def broker_colour(b: int) -> str:
    return BROKER_COLOURS[b % len(BROKER_COLOURS)] if b is not None and b >= 0 else FAIL


def nice_ticks(hi: float, n: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``hi``."""
    if not hi or hi <= 0:
        return [0.0, 1.0]
    raw = hi / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(math.ceil(hi / step)) + 1)]


def stacked_bar(counts: list[tuple[str, int, str]], width: int = 600, height: int = 28) -> str:
    """A single horizontal bar split by (label, count, colour)."""
    total = sum(c for _, c, _ in counts) or 1
    x, parts = 0.0, []
    for label, c, colour in counts:
        w = width * c / total
        if w > 0:
            parts.append(f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="{height}" fill="{colour}">'
                         f'<title>{_e(label)}: {c}</title></rect>')
            if w > 40:
                parts.append(f'<text x="{x + w / 2:.1f}" y="{height / 2 + 5}" text-anchor="middle" fill="#fff" '
                             f'font-size="13" {FONT}>{_e(label)} {c}</text>')
        x += w
    return (f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">'
            + "".join(parts) + "</svg>")


def interval_chart(rows: list[tuple[str, float | None, float | None, float | None]], width: int = 700,
                   title: str = "") -> str:
    """Wilson intervals: one row per (label, point, low, high) on a 0..1 axis."""
    lw, rh, top = 260, 26, 26
    pw = width - lw - 20
    h = top + rh * len(rows) + 24
    out = [f'<svg width="{width}" height="{h}" viewBox="0 0 {width} {h}" role="img" {FONT} font-size="12">']
    if title:
        out.append(f'<text x="0" y="14" font-weight="600">{_e(title)}</text>')
    for t in [0, 0.25, 0.5, 0.75, 1.0]:
        x = lw + pw * t
        out.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{h - 20}" stroke="#ddd"/>'
                   f'<text x="{x:.1f}" y="{h - 6}" text-anchor="middle" fill="#555">{t:.2f}</text>')
    for i, (label, p, lo, hi) in enumerate(rows):
        y = top + rh * i + rh / 2
        out.append(f'<text x="{lw - 8}" y="{y + 4:.1f}" text-anchor="end">{_e(label)}</text>')
        if lo is None or hi is None:
            out.append(f'<text x="{lw + 4}" y="{y + 4:.1f}" fill="#777">no data</text>')
            continue
        x1, x2 = lw + pw * lo, lw + pw * hi
        out.append(f'<line x1="{x1:.1f}" y1="{y:.1f}" x2="{x2:.1f}" y2="{y:.1f}" stroke="#444" stroke-width="2"/>'
                   f'<line x1="{x1:.1f}" y1="{y - 6:.1f}" x2="{x1:.1f}" y2="{y + 6:.1f}" stroke="#444"/>'
                   f'<line x1="{x2:.1f}" y1="{y - 6:.1f}" x2="{x2:.1f}" y2="{y + 6:.1f}" stroke="#444"/>')
        if p is not None:
            out.append(f'<circle cx="{lw + pw * p:.1f}" cy="{y:.1f}" r="5" fill="{FAIL if p > 0 else PASS}">'
                       f'<title>{_e(label)}: {p:.3f} [{lo:.3f}, {hi:.3f}]</title></circle>')
    out.append("</svg>")
    return "".join(out)


def range_chart(rows: list[tuple], width: int = 700, unit: str = "s", title: str = "") -> str:
    """Distributions as p50 / p95 / max markers per row (label, p50, p95, max[, note if no data])."""
    lw, rh, top = 260, 26, 40
    pw = width - lw - 30
    hi = max([r[3] for r in rows if r[3] is not None] or [1.0])
    ticks = nice_ticks(hi)
    scale = pw / (ticks[-1] or 1)
    h = top + rh * len(rows) + 24
    out = [f'<svg width="{width}" height="{h}" viewBox="0 0 {width} {h}" role="img" {FONT} font-size="12">']
    if title:
        out.append(f'<text x="0" y="14" font-weight="600">{_e(title)}</text>')
    out.append(f'<rect x="{lw}" y="20" width="18" height="8" fill="#90caf9"/><text x="{lw + 22}" y="28">p50–p95</text>'
               f'<rect x="{lw + 90}" y="20" width="3" height="10" fill="#0d47a1"/><text x="{lw + 97}" y="28">p50</text>'
               f'<circle cx="{lw + 140}" cy="24" r="4" fill="#c62828"/><text x="{lw + 148}" y="28">max</text>')
    for t in ticks:
        x = lw + t * scale
        out.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{h - 20}" stroke="#e3e3e3"/>'
                   f'<text x="{x:.1f}" y="{h - 6}" text-anchor="middle" fill="#555">{t:g}{unit}</text>')
    for i, row in enumerate(rows):
        label, p50, p95, mx = row[:4]
        note = (row[4] if len(row) > 4 else None) or "no data"
        y = top + rh * i + rh / 2
        out.append(f'<text x="{lw - 8}" y="{y + 4:.1f}" text-anchor="end">{_e(label)}</text>')
        if p50 is None:
            out.append(f'<text x="{lw + 4}" y="{y + 4:.1f}" fill="#777">{_e(note)}</text>')
            continue
        x50, x95 = lw + p50 * scale, lw + (p95 if p95 is not None else p50) * scale
        xm = lw + (mx if mx is not None else p95 or p50) * scale
        out.append(f'<line x1="{x95:.1f}" y1="{y:.1f}" x2="{xm:.1f}" y2="{y:.1f}" stroke="#999" stroke-dasharray="3,2"/>'
                   f'<rect x="{x50:.1f}" y="{y - 7:.1f}" width="{max(x95 - x50, 1):.1f}" height="14" fill="#90caf9"/>'
                   f'<rect x="{x50 - 1.5:.1f}" y="{y - 9:.1f}" width="3" height="18" fill="#0d47a1"/>'
                   f'<circle cx="{xm:.1f}" cy="{y:.1f}" r="4" fill="#c62828"><title>{_e(label)}: p50 {fmt(p50)} '
                   f'p95 {fmt(p95)} max {fmt(mx)} {unit}</title></circle>')
    out.append("</svg>")
    return "".join(out)


def trend_chart(points: list[tuple[str, float | None, int, int]], width: int = 700, height: int = 220) -> str:
    """Pass rate per date (line) with FAIL counts (bars): points = (date, pass_rate, fail, runs)."""
    if not points:
        return '<p class="muted">No nightly runs.</p>'
    l, r, t, b = 50, 20, 20, 40
    pw, ph = width - l - r, height - t - b
    n = len(points)
    step = pw / max(n, 1)
    maxf = max(max(p[2] for p in points), 1)
    out = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" {FONT} font-size="11">']
    for v in (0, 0.5, 1.0):
        y = t + ph * (1 - v)
        out.append(f'<line x1="{l}" y1="{y:.1f}" x2="{width - r}" y2="{y:.1f}" stroke="#e3e3e3"/>'
                   f'<text x="{l - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#555">{v:.0%}</text>')
    pts = []
    for i, (d, rate, fails, runs) in enumerate(points):
        cx = l + step * (i + 0.5)
        bh = ph * 0.4 * fails / maxf
        out.append(f'<rect x="{cx - step * 0.3:.1f}" y="{t + ph - bh:.1f}" width="{step * 0.6:.1f}" height="{bh:.1f}" '
                   f'fill="{FAIL}" opacity="0.35"><title>{_e(d)}: {fails} FAIL of {runs}</title></rect>')
        if n <= 16 or i % math.ceil(n / 16) == 0:
            out.append(f'<text x="{cx:.1f}" y="{height - 22}" text-anchor="middle" fill="#555">{_e(d)}</text>')
        if rate is not None:
            pts.append((cx, t + ph * (1 - rate), d, rate))
    if pts:
        out.append('<polyline fill="none" stroke="#2e7d32" stroke-width="2" points="'
                   + " ".join(f"{x:.1f},{y:.1f}" for x, y, _, _ in pts) + '"/>')
        for x, y, d, rate in pts:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="#2e7d32"><title>{_e(d)}: pass rate '
                       f'{rate:.3f}</title></circle>')
    out.append(f'<text x="{l}" y="{height - 6}" fill="#555">line: pass rate (PASS / decided) · bars: FAIL runs</text>')
    out.append("</svg>")
    return "".join(out)


def timeline(tl: dict, width: int = 1300) -> str:
    """A run's timeline: faults shaded; per partition the leader (colour = broker, label = epoch)
    and the ISR size; the acknowledged-write rate per second at the bottom.

    ``tl``: {"end": float, "faults": [{"fault","start","end"}], "partitions": {"t-0": [{"t","leader",
    "leader_epoch","isr"}...]}, "acks": {second: count}, "clients": {"p0": {"role", "alive": [[t0, t1|None]],
    "errors": [{"t", "state", "error"}]}}}: each client gets a lane with its alive band (green) and a
    red mark per fatal error, death or stall (the error in the mark's tooltip), beside the faults.
    """
    l, r = 190, 20
    pw = width - l - r
    end = max(tl.get("end") or 0.0, 1.0)
    sx = pw / end
    # Internal topics (``__consumer_offsets``) after the workload's own.
    parts = sorted(tl.get("partitions", {}).items(), key=lambda kv: (kv[0].startswith("__"), kv[0]))[:8]
    lane = 44
    top = 28
    ack_h = 60
    clients = sorted((tl.get("clients") or {}).items())[:8]
    c_lane = 20
    h = top + lane * len(parts) + c_lane * len(clients) + ack_h + 40
    X = lambda t: l + max(0.0, min(t, end)) * sx  # noqa: E731
    out = [f'<svg width="{width}" height="{h}" viewBox="0 0 {width} {h}" role="img" {FONT} font-size="11">']
    for f in tl.get("faults", []):
        x1, x2 = X(f["start"]), X(f["end"] if f.get("end") is not None else end)
        out.append(f'<rect x="{x1:.1f}" y="{top - 14}" width="{max(x2 - x1, 2):.1f}" height="{h - top - 10}" '
                   f'fill="{FAULT_FILL}" opacity="0.28"><title>{_e(f["fault"])} {fmt(f["start"], 1)}–'
                   f'{fmt(f.get("end"), 1)} s</title></rect>'
                   f'<text x="{x1 + 3:.1f}" y="{top - 3}" fill="#9a4a00" font-weight="600">{_e(f["fault"])}</text>')
    for t in nice_ticks(end, 10):
        if t > end:
            break
        out.append(f'<line x1="{X(t):.1f}" y1="{top}" x2="{X(t):.1f}" y2="{h - 28}" stroke="#eee"/>'
                   f'<text x="{X(t):.1f}" y="{h - 14}" text-anchor="middle" fill="#555">{t:g}s</text>')
    for i, (name, states) in enumerate(parts):
        y = top + lane * i
        full = max((len(s.get("isr") or []) for s in states), default=0) or 1
        short = name if len(name) <= 22 else name[:10] + "…" + name[-11:]
        out.append(f'<text x="{l - 8}" y="{y + 15}" text-anchor="end" font-weight="600">{_e(short)} leader'
                   f'<title>{_e(name)}</title></text>'
                   f'<text x="{l - 8}" y="{y + 34}" text-anchor="end" fill="#555">ISR</text>')
        for j, s in enumerate(states):
            x1 = X(s["t"])
            x2 = X(states[j + 1]["t"]) if j + 1 < len(states) else X(end)
            w = max(x2 - x1, 1.0)
            leader = s.get("leader")
            colour = broker_colour(leader)
            label = f"b{leader} e{s.get('leader_epoch')}" if leader is not None and leader >= 0 else "no leader"
            isr = s.get("isr") or []
            out.append(f'<rect x="{x1:.1f}" y="{y + 3}" width="{w:.1f}" height="18" fill="{colour}" opacity="0.85">'
                       f'<title>t={fmt(s["t"], 2)} leader {leader} epoch {s.get("leader_epoch")} ISR {isr}</title></rect>')
            if w > 46:
                out.append(f'<text x="{x1 + 4:.1f}" y="{y + 16}" fill="#fff">{_e(label)}</text>')
            frac = len(isr) / full
            fill = "#66bb6a" if frac >= 1 else ("#ffb74d" if frac > 0.5 else "#e57373")
            out.append(f'<rect x="{x1:.1f}" y="{y + 24}" width="{w:.1f}" height="14" fill="{fill}" opacity="0.9"/>')
            if w > 46:
                out.append(f'<text x="{x1 + 4:.1f}" y="{y + 35}" fill="#222">{_e(",".join(map(str, isr)))}</text>')
    # clients: alive bands and fatal errors
    for i, (proc, c) in enumerate(clients):
        y = top + lane * len(parts) + c_lane * i
        out.append(f'<g class="client" data-process="{_e(proc)}"><text x="{l - 8}" y="{y + 13}" text-anchor="end" '
                   f'font-weight="600">{_e(proc)} {_e(c.get("role") or "")}</text>')
        for a0, a1 in c.get("alive") or []:
            x1, x2 = X(a0), X(end if a1 is None else a1)
            out.append(f'<rect class="alive" x="{x1:.1f}" y="{y + 4}" width="{max(x2 - x1, 1.0):.1f}" height="12" '
                       f'fill="#43a047" opacity="0.75"><title>{_e(proc)} alive {fmt(a0, 1)}–'
                       f'{fmt(a1, 1) if a1 is not None else "end"} s</title></rect>')
        for e in c.get("errors") or []:
            x = X(e["t"])
            out.append(f'<path class="client-error" d="M{x:.1f} {y + 2} l5 8 l-5 8 l-5 -8 z" fill="#c62828">'
                       f'<title>{_e(proc)} {_e(e.get("state"))} at {fmt(e["t"], 1)} s: {_e(e.get("error"))}'
                       f'</title></path>')
        out.append("</g>")
    # ack rate
    ya = top + lane * len(parts) + c_lane * len(clients) + 6
    acks = tl.get("acks", {})
    peak = max(acks.values(), default=0)
    out.append(f'<text x="{l - 8}" y="{ya + ack_h / 2:.1f}" text-anchor="end" font-weight="600">acks/s</text>'
               f'<line x1="{l}" y1="{ya + ack_h}" x2="{width - r}" y2="{ya + ack_h}" stroke="#999"/>')
    if peak:
        out.append(f'<text x="{l - 8}" y="{ya + 10}" text-anchor="end" fill="#555">{peak}</text>')
        for sec, c in sorted(acks.items()):
            bh = (ack_h - 4) * c / peak
            out.append(f'<rect x="{X(sec):.1f}" y="{ya + ack_h - bh:.1f}" width="{max(sx - 1, 1):.1f}" '
                       f'height="{bh:.1f}" fill="#1565c0"><title>{sec}s: {c} acks</title></rect>')
    else:
        out.append(f'<text x="{l + 6}" y="{ya + ack_h / 2:.1f}" fill="#777">no acknowledged writes</text>')
    out.append("</svg>")
    return "".join(out)
