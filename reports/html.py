"""The self-contained HTML report: inline CSS and SVG only (no scripts, no external resources).

Stable element ids (used by tests and by anyone scraping the report): ``gate-status``,
``total-runs``, ``count-pass``, ``count-fail``, ``count-unknown``, ``total-acked``, ``total-lost``,
``total-duplicates``, ``total-inconsistent``, ``total-divergences``, ``skipped-count``; tables
``pass-fail-matrix``, ``durability``, ``availability``, ``conformance``, ``flakiness``,
``trends``, ``regressions``, ``skipped-records``, ``gate-rules``; timelines ``timeline-<run_id>``,
each with links (``class="logs"``) to the run's container logs when the record is on a local disk: the logs
are copied into the report's directory (``logs/<run_id>/<container>.log.gz``) and linked relative to it, so
the directory is a self-contained artifact.
Table rows carry ``data-key`` attributes naming their group.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from html import escape
from pathlib import Path

from harness.record.storage import is_remote
from reports import svg
from reports.svg import fmt

CSS = """
body{font-family:system-ui,Segoe UI,Helvetica,Arial,sans-serif;margin:0;color:#1d1d1f;background:#f6f7f9}
header{background:#1f2937;color:#fff;padding:18px 28px}
header h1{margin:0 0 4px;font-size:22px} header .sub{color:#cbd5e1;font-size:13px}
main{padding:8px 28px 40px;max-width:1400px}
section{background:#fff;border:1px solid #e2e5ea;border-radius:8px;padding:14px 18px;margin:16px 0}
h2{font-size:18px;margin:2px 0 10px} h3{font-size:15px;margin:12px 0 6px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:14px 0}
.card{background:#fff;border:1px solid #e2e5ea;border-radius:8px;padding:10px 16px;min-width:120px}
.card .v{font-size:26px;font-weight:700} .card .k{font-size:12px;color:#555;text-transform:uppercase}
.gate{display:inline-block;padding:4px 12px;border-radius:6px;font-weight:700;color:#fff}
.passed{background:#2e7d32} .failed{background:#c62828}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border:1px solid #e2e5ea;padding:4px 8px;text-align:right;white-space:nowrap}
th{background:#f0f2f5;position:sticky;top:0} td.l,th.l{text-align:left}
tr:nth-child(even) td{background:#fafbfc}
.cell{font-weight:600} .muted{color:#777;font-size:13px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;font-size:12px;font-weight:600}
.PASS{background:#2e7d32} .FAIL{background:#c62828} .UNKNOWN{background:#8d8d8d}
.yes{color:#c62828;font-weight:700}
.scroll{overflow-x:auto}
nav a{color:#93c5fd;margin-right:14px;font-size:13px;text-decoration:none}
"""


def _e(s) -> str:
    return escape("" if s is None else str(s), quote=True)


MAX_ROWS = 300


LOGS_DIR = "logs"       # under the report's directory: the bundled container logs, logs/<run_id>/<container>.log.gz


def log_links(run_dir: str | None, out: Path | None) -> str:
    """Links to a local record's container logs (``logs/<container>.log.gz``). With ``out`` (the report's
    directory) the logs are copied into ``out/logs/<run_id>/`` and linked relative to the report, so the
    report directory works on its own (uploaded as a CI artifact, moved, opened elsewhere); without it the
    links are absolute ``file://`` URIs to the record."""
    if not run_dir or is_remote(run_dir):
        return ""                                     # s3a:// records: no local file to link
    run = Path(run_dir[len("file:"):] if run_dir.startswith("file:") else run_dir)
    logs = run / "logs"
    files = sorted(logs.glob("*.log.gz")) if logs.is_dir() else []
    if not files:
        return ""
    if out is not None:
        bundle = out / LOGS_DIR / run.name
        bundle.mkdir(parents=True, exist_ok=True)
        for f in files:
            target = bundle / f.name
            if not (target.exists() and target.stat().st_size == f.stat().st_size):
                shutil.copyfile(f, target)
        hrefs = [f"{LOGS_DIR}/{run.name}/{f.name}" for f in files]
    else:
        hrefs = [f.resolve().as_uri() for f in files]
    return (' · logs: ' + " ".join(f'<a class="logs" href="{_e(h)}">{_e(f.name[:-len(".log.gz")])}</a>'
                                   for f, h in zip(files, hrefs)))


def table(tid: str, rows: list[dict], cols: list[tuple[str, str]], key: list[str] | None = None,
          left: tuple[str, ...] = (), empty: str = "No rows.", max_rows: int = MAX_ROWS) -> str:
    """An HTML table with id ``tid``; ``cols`` = [(field, header)]; rows get ``data-key``.

    At most ``max_rows`` rows are shown (the Parquet tables have them all)."""
    if not rows:
        return f'<p class="muted" id="{tid}">{_e(empty)}</p>'
    more = len(rows) - max_rows
    rows = rows[:max_rows]
    head = "".join(f'<th class="{"l" if c in left else ""}">{_e(h)}</th>' for c, h in cols)
    body = []
    for r in rows:
        dk = "|".join("" if r.get(k) is None else str(r.get(k)) for k in (key or []))
        tds = []
        for c, _ in cols:
            v = r.get(c)
            cls = "l" if c in left else ""
            if isinstance(v, bool) and v:
                cls += " yes"
            if isinstance(v, list):
                v = ", ".join(map(str, v))
            tds.append(f'<td class="{cls}" data-col="{c}">{_e(fmt(v))}</td>')
        body.append(f'<tr data-key="{_e(dk)}">{"".join(tds)}</tr>')
    note = f'<p class="muted">{more:,} more rows in the Parquet table.</p>' if more > 0 else ""
    return (f'<div class="scroll"><table id="{tid}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>{note}')


def _rate_colour(rate) -> str:
    if rate is None:
        return "#eeeeee"
    # red (0) -> amber -> green (1)
    r = int(198 + (46 - 198) * rate)
    g = int(40 + (125 - 40) * rate)
    b = int(40 + (50 - 40) * rate)
    return f"rgb({r},{g},{b})"


def matrix_pivot(rows: list[dict]) -> str:
    """Pass/fail matrix as a heat map: rows suite/scenario/fault, columns broker versions."""
    if not rows:
        return '<p class="muted" id="pass-fail-matrix">No runs.</p>'
    brokers = sorted({r["broker"] for r in rows}, key=lambda b: tuple(
        (0, int(p)) if p.isdigit() else (1, p) for p in str(b).replace("-", ".").split(".")))
    cells = defaultdict(dict)
    for r in rows:
        cells[(r["suite"], r["scenario"], r["fault_kind"])][r["broker"]] = r
    head = '<th class="l">suite</th><th class="l">scenario</th><th class="l">fault</th>' + "".join(
        f"<th>{_e(b)}</th>" for b in brokers)
    body = []
    for key in sorted(cells):
        tds = [f'<td class="l">{_e(k)}</td>' for k in key]
        for b in brokers:
            r = cells[key].get(b)
            if r is None:
                tds.append('<td style="background:#fafafa"></td>')
                continue
            decided = r["pass"] + r["fail"]
            txt = f'{r["pass"]}/{decided}' + (f' +{r["unknown"]}?' if r["unknown"] else "")
            title = (f'{r["runs"]} runs: {r["pass"]} PASS, {r["fail"]} FAIL, {r["unknown"]} UNKNOWN; '
                     f'fail rate {fmt(r["fail_rate"])} [{fmt(r["fail_ci_low"])}, {fmt(r["fail_ci_high"])}]')
            dk = "|".join(str(x) for x in (*key, b))
            tds.append(f'<td class="cell" data-key="{_e(dk)}" title="{_e(title)}" '
                       f'style="background:{_rate_colour(r["pass_rate"])};color:#fff">{_e(txt)}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    return (f'<div class="scroll"><table id="pass-fail-matrix"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>'
            '<p class="muted">Cell: PASS / decided runs (+N? = UNKNOWN runs); colour: pass rate, red 0 → green 1. '
            'A run with several fault kinds counts under each.</p>')


def render(summary: dict, t: dict[str, list[dict]], timelines: list[tuple[dict, dict]], skipped: list[dict],
           out: Path | None = None) -> str:
    """The whole report as one HTML string (``out``: the directory it is written to, for relative links)."""
    tot = summary["totals"]
    gate = summary["gate"]
    g_cls = "passed" if gate["passed"] else "failed"
    cards = [("total-runs", "runs", tot["runs"]), ("count-pass", "PASS", tot["pass"]),
             ("count-fail", "FAIL", tot["fail"]), ("count-unknown", "UNKNOWN", tot["unknown"]),
             ("total-acked", "acknowledged writes", tot["acknowledged_writes"]),
             ("total-lost", "lost", tot["lost"]), ("total-duplicates", "duplicated", tot["duplicates"]),
             ("total-inconsistent", "inconsistent offsets", tot["inconsistent_offsets"]),
             ("total-divergences", "divergences", tot["conformance_divergences"]),
             ("skipped-count", "skipped records", tot["skipped_records"]),
             ("tampered-count", "tampered or stale", tot.get("tampered", 0)),
             ("undecided-count", "undecided scenarios", tot.get("undecided_scenarios", 0)),
             ("coverage-short-count", "coverage fell short", tot.get("coverage_short", 0))]
    card_html = "".join(f'<div class="card"><div class="v" id="{i}">{_e(fmt(v))}</div><div class="k">{_e(k)}</div>'
                        f'</div>' for i, k, v in cards)
    h = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>kafka-chaos report</title>'
         f'<style>{CSS}</style></head><body>',
         f'<header><h1>kafka-chaos report</h1><div class="sub">{_e(summary["runs_path"])} · generated '
         f'{_e(summary["generated_at"])} · {tot["runs"]} runs · gate '
         f'<span class="gate {g_cls}" id="gate-status">{"PASSED" if gate["passed"] else "FAILED"}</span></div>'
         '<nav><a href="#s-matrix">matrix</a><a href="#s-durability">durability</a><a href="#s-availability">'
         'availability</a><a href="#s-conformance">conformance</a><a href="#s-flaky">flakiness</a>'
         '<a href="#s-trends">trends</a><a href="#s-regressions">regressions</a><a href="#s-timelines">timelines</a>'
         '<a href="#s-scenarios">scenarios</a><a href="#s-tampered">tampered</a><a href="#s-skipped">skipped</a></nav></header><main>',
         f'<div class="cards">{card_html}</div>',
         '<section id="s-verdicts"><h2>Verdicts</h2>',
         svg.stacked_bar([("PASS", tot["pass"], svg.PASS), ("FAIL", tot["fail"], svg.FAIL),
                          ("UNKNOWN", tot["unknown"], svg.UNKNOWN)], width=900),
         '<h3>Gate</h3>',
         table("gate-rules", [r for r in gate["rules"] if r["enabled"]],
               [("rule", "rule"), ("description", "what"), ("value", "total"), ("threshold", "fails at ≥"),
                ("failed", "failed")], key=["rule"], left=("rule", "description")),
         '<h3>UNKNOWN runs by cause</h3>',
         table("unknown-causes", t.get("unknown_causes", []),
               [("cause", "cause"), ("runs", "runs"), ("scenarios", "scenarios"), ("scenario_names", "which")],
               key=["cause"], left=("cause", "scenario_names"), empty="No UNKNOWN runs."),
         '</section>']
    h += ['<section id="s-scenarios"><h2>Scenarios (undecided first)</h2>'
          '<p class="muted">Undecided: no PASS or FAIL run, so no evidence about the broker (the gate fails). '
          'Coverage fell short: UNKNOWN runs with cause <code>workload</code> (a client died or stalled).</p>',
          table("scenarios", t.get("scenarios", []),
                [("scenario", "scenario"), ("runs", "runs"), ("pass", "PASS"), ("fail", "FAIL"),
                 ("unknown", "UNKNOWN"), ("coverage_short", "coverage fell short"),
                 ("unknown_causes", "UNKNOWN by cause"), ("undecided", "undecided")],
                key=["scenario"], left=("scenario", "unknown_causes")),
          '</section>']

    h += ['<section id="s-matrix"><h2>Pass / fail matrix</h2>', matrix_pivot(t["pass_fail_matrix"]),
          '<h3>Detail</h3>',
          table("pass-fail-detail", t["pass_fail_matrix"],
                [("suite", "suite"), ("scenario", "scenario"), ("fault_kind", "fault"), ("broker", "broker"),
                 ("broker_image", "image"), ("runs", "runs"), ("pass", "PASS"), ("fail", "FAIL"),
                 ("unknown", "UNKNOWN"), ("pass_rate", "pass rate"), ("fail_ci_low", "fail CI low"),
                 ("fail_ci_high", "fail CI high")],
                key=["suite", "scenario", "fault_kind", "broker"], left=("suite", "scenario", "fault_kind", "broker",
                                                                         "broker_image")),
          '</section>']

    dur = t["durability"]
    h += ['<section id="s-durability"><h2>Durability per configuration</h2>',
          svg.interval_chart([(r["configuration"], r["lost_run_rate"], r["lost_ci_low"], r["lost_ci_high"])
                              for r in dur], width=900,
                             title="Share of runs with lost acknowledged writes (Wilson 95 % interval)"),
          table("durability", dur,
                [("configuration", "configuration"), ("runs", "runs"), ("acknowledged_writes", "acked"),
                 ("lost", "lost"), ("lost_allowed", "of which allowed"), ("runs_with_lost", "runs w/ loss"),
                 ("runs_checked_lost", "checked"),
                 ("lost_run_rate", "loss rate"), ("lost_ci_low", "CI low"), ("lost_ci_high", "CI high"),
                 ("duplicates", "duplicated"), ("duplicates_ci_high", "dup CI high"),
                 ("inconsistent_offsets", "inconsistent"), ("inconsistent_offsets_ci_high", "incons. CI high")],
                key=["configuration"], left=("configuration",)),
          '</section>']

    av = t["availability"]
    h += ['<section id="s-availability"><h2>Availability per fault kind and broker</h2>',
          svg.range_chart([(f'{r["fault"]} · {r["broker"]}', r["new_leader_s_p50"], r["new_leader_s_p95"],
                            r["new_leader_s_max"], "leader did not change") for r in av],
                          width=900, title="Time to new leader"),
          svg.range_chart([(f'{r["fault"]} · {r["broker"]}', r["isr_restored_s_p50"], r["isr_restored_s_p95"],
                            r["isr_restored_s_max"],
                            f'ISR not restored after {r["isr_unrestored_faults"]} fault(s)'
                            if r.get("isr_unrestored_faults") else "ISR did not shrink")
                           for r in av], width=900, title="Time to ISR restored"),
          table("availability", av,
                [("fault", "fault"), ("broker", "broker"), ("faults", "faults"), ("new_leader_s_n", "leader chg"),
                 ("new_leader_s_p50", "leader p50 s"), ("new_leader_s_p95", "p95"), ("new_leader_s_max", "max"),
                 ("isr_restored_s_n", "ISR restored n"), ("isr_restored_s_p50", "ISR p50 s"),
                 ("isr_restored_s_p95", "p95"), ("isr_restored_s_max", "max"),
                 ("isr_unrestored_faults", "ISR not back"), ("unavailable_windows", "leaderless windows"),
                 ("unavailable_total_s", "leaderless s"), ("unavailable_s_max", "longest s")],
                key=["fault", "broker"], left=("fault", "broker")),
          '</section>']

    h += ['<section id="s-conformance"><h2>Conformance divergences</h2>',
          table("conformance", t["conformance"],
                [("rule", "rule"), ("broker", "broker"), ("profile", "profile"), ("divergences", "divergences"),
                 ("runs_affected", "runs affected"), ("runs_checked", "runs checked"), ("run_rate", "share"),
                 ("run_ci_low", "CI low"), ("run_ci_high", "CI high")],
                key=["rule", "broker", "profile"], left=("rule", "broker", "profile"), empty="No divergences."),
          '</section>',
          '<section id="s-flaky"><h2>Flakiness (same scenario and seed, different verdicts)</h2>',
          table("flakiness", t["flakiness"],
                [("scenario", "scenario"), ("seed", "seed"), ("broker", "broker"), ("runs", "runs"),
                 ("pass", "PASS"), ("fail", "FAIL"), ("unknown", "UNKNOWN"), ("flaky", "PASS+FAIL"),
                 ("run_ids", "runs")], key=["scenario", "seed", "broker"], left=("scenario", "broker", "run_ids"),
                empty="No scenario+seed with differing verdicts."),
          '</section>',
          '<section id="s-trends"><h2>Nightly trend</h2>',
          svg.trend_chart([(r["date"], r["pass_rate"], r["fail"], r["runs"]) for r in t["trends"]], width=900),
          table("trends", t["trends"],
                [("date", "date"), ("runs", "runs"), ("pass", "PASS"), ("fail", "FAIL"), ("unknown", "UNKNOWN"),
                 ("pass_rate", "pass rate"), ("lost", "lost"), ("acknowledged_writes", "acked")],
                key=["date"], left=("date",), empty="No nightly runs."),
          '</section>',
          '<section id="s-regressions"><h2>Regressions</h2>',
          table("regressions", t["regressions"],
                [("dimension", "between"), ("baseline", "baseline"), ("candidate", "candidate"),
                 ("suite", "suite"), ("scenario", "scenario"), ("fault_kind", "fault"),
                 ("base_runs", "base runs"), ("base_fail_rate", "base fail rate"), ("cand_runs", "cand runs"),
                 ("cand_fail_rate", "cand fail rate"), ("base_lost", "base lost"), ("cand_lost", "cand lost"),
                 ("regressed", "regressed")],
                key=["dimension", "suite", "scenario", "fault_kind"],
                left=("dimension", "baseline", "candidate", "suite", "scenario", "fault_kind"),
                empty="Fewer than two broker or harness versions: nothing to compare."),
          '</section>',
          '<section id="s-first-failures"><h2>First failures (by broker version and by day)</h2>',
          table("first-failures", t.get("first_failures", []),
                [("scenario", "scenario"), ("dimension", "by"), ("first_fail", "first FAIL"),
                 ("last_pass_before", "last passing before"), ("fail_runs_since", "FAIL since"),
                 ("decided_runs_since", "decided since"), ("regressed", "regressed")],
                key=["scenario", "dimension"], left=("scenario", "dimension", "first_fail", "last_pass_before"),
                empty="No scenario failed."),
          '</section>',
          '<section id="s-feature-levels"><h2>Verdicts per feature levels</h2>'
          '<p class="muted">The finalized feature levels of each KRaft run, read from its metadata log '
          '(metadata.json <code>features</code>; a feature not listed is level 0); * marks a level the run asked '
          'for (<code>[cluster] features</code>, <code>run --feature</code>). docs/kraft.md "Feature levels".</p>',
          table("feature-levels", t.get("feature_levels", []),
                [("scenario", "scenario"), ("broker", "broker"), ("features", "feature levels"), ("runs", "runs"),
                 ("pass", "PASS"), ("fail", "FAIL"), ("unknown", "UNKNOWN")],
                key=["scenario", "broker", "features"], left=("scenario", "broker", "features"),
                empty="No run recorded its feature levels (ZooKeeper-mode runs and older records have none)."),
          '</section>',
          '<section id="s-scenario-flakiness"><h2>Fail rate per scenario and broker (Wilson 95 %)</h2>',
          table("scenario-flakiness", t.get("scenario_flakiness", []),
                [("scenario", "scenario"), ("broker", "broker"), ("decided", "decided"), ("pass", "PASS"),
                 ("fail", "FAIL"), ("unknown", "UNKNOWN"), ("fail_rate", "fail rate"), ("fail_ci_low", "CI low"),
                 ("fail_ci_high", "CI high"), ("flaky", "PASS+FAIL"), ("flaky_seeds", "flaky seeds")],
                key=["scenario", "broker"], left=("scenario", "broker"), empty="No runs."),
          '</section>']

    h.append(f'<section id="s-timelines"><h2>Run timelines ({len(timelines)} shown of {tot["runs"]}; '
             'FAIL first, then UNKNOWN, then PASS)</h2>'
             '<p class="muted">Shaded: fault from start to heal. Per partition: leader (colour = broker, '
             'label = broker and leader epoch) and ISR members (green full, amber shrunk, red below half). '
             'Then each client: alive (green) and, in red, a fatal error, death or stall (hover for the error). '
             'Bottom: acknowledged writes per second.</p>')
    for run, tl in timelines:
        h.append(f'<div id="timeline-{_e(run["run_id"])}"><h3><span class="badge {_e(run["verdict"])}">'
                 f'{_e(run["verdict"])}</span> {_e(run["run_id"])}</h3><div class="muted">{_e(run["suite"])} · '
                 f'{_e(run["scenario"])} · broker {_e(run["broker"])} · seed {_e(fmt(run.get("seed")))} · '
                 f'acked {_e(fmt(run.get("acknowledged_writes")))} · lost {_e(fmt(run.get("lost")))} · '
                 + (f'cause <b>{_e(run["cause"])}</b> · ' if run.get("cause") else "")
                 + (f'features {_e(run["features"])} · ' if run.get("features") else "")
                 + f'{_e(run.get("reason"))}{log_links(run.get("run_dir"), out)}</div>{svg.timeline(tl)}</div>')
    h.append('</section>')
    dups = summary.get("duplicate_records") or []
    o = summary.get("outcomes") or {}
    how = (f"Stored verdicts used where their evidence digests matched ({o.get('stored', 0)}), the others re-derived "
           f"from their events ({o.get('rederived', 0)})." if o.get("trust_stored") else
           "Every run's verdict was re-derived from its events by the checkers; the stored verdict.json only "
           "compared.")
    h += ['<section id="s-tampered"><h2>Tampered or stale records</h2>', f'<p class="muted">{_e(how)}</p>',
          table("tampered-records", summary.get("tampered_records") or [],
                [("path", "record"), ("stored", "verdict.json says"), ("derived", "events give"),
                 ("what", "what disagreed")], key=["path"], left=("path", "stored", "derived", "what"),
                empty="None: every stored verdict agreed with its events."),
          '</section>']
    h += ['<section id="s-skipped"><h2>Skipped records</h2>',
          table("skipped-records", skipped, [("path", "record"), ("reason", "reason")], key=["path"],
                left=("path", "reason"), empty="None: every record was usable."),
          '<h3>Read twice, counted once</h3>',
          table("duplicate-records", dups, [("path", "record"), ("run_id", "run id"), ("kept", "counted as")],
                key=["path"], left=("path", "run_id", "kept"),
                empty="None: no run id was read twice (symlinked or copied record)."),
          '</section></main></body></html>']
    return "\n".join(h)
