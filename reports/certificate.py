"""The certificate of ``kafka-chaos certify`` as files: ``certificate.json`` and a self-contained
``certificate.html`` (inline CSS, no scripts, no external assets), both rendered from the
certificate data built by :func:`harness.certify.certificate_data.build_certificate`.

The HTML puts what a reader needs first: the overall result in a large coloured badge
(``id="overall"``), what was certified (image, Kafka version, profile, harness git sha, date),
then one row per capability with its status and evidence runs (links to the run record
directories, relative to the certificate), and below it each failing rule.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from urllib.parse import quote

from harness.record.facts import features_label

COLOURS = {  # status -> (background, text)
    "PASS": ("#1a7f37", "#ffffff"), "CERTIFIED": ("#1a7f37", "#ffffff"),
    "FAIL": ("#cf222e", "#ffffff"), "NOT CERTIFIED": ("#cf222e", "#ffffff"),
    "UNKNOWN": ("#9a6700", "#ffffff"), "INCONCLUSIVE": ("#9a6700", "#ffffff"),
    "NOT-APPLICABLE": ("#6e7781", "#ffffff"),
}

CSS = """
body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:24px 32px;color:#1f2328;background:#fff}
h1{font-size:22px;margin:0 0 12px 0}
h2{font-size:18px;margin:28px 0 8px 0;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.overall{display:inline-block;font-size:44px;font-weight:700;padding:14px 36px;border-radius:10px;letter-spacing:1px}
.why{font-size:16px;margin:10px 0 18px 0}
table{border-collapse:collapse;font-size:14px}
td,th{border:1px solid #d0d7de;padding:5px 9px;vertical-align:top;text-align:left}
th{background:#f6f8fa}
table.facts th{width:190px}
.badge{display:inline-block;font-weight:700;padding:2px 8px;border-radius:5px;font-size:13px;white-space:nowrap}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}
.muted{color:#656d76}
ul.rules{margin:4px 0 0 0;padding-left:18px}
.partial{color:#9a6700;font-weight:600}
"""


def _nodes(subject: dict) -> str:
    """The node roles of the certified distribution ("broker, zookeeper nodes"); certificates written
    before roles were recorded say ``has_zookeeper`` instead."""
    roles = subject.get("roles")
    if roles is None:
        roles = ["broker", "zookeeper" if subject.get("has_zookeeper") else "controller"]
    return ", ".join(roles) + " nodes"


def _e(x) -> str:
    return html.escape("" if x is None else str(x))


def _badge(status: str, elem_id: str | None = None, cls: str = "badge") -> str:
    bg, fg = COLOURS.get(status, ("#6e7781", "#ffffff"))
    ident = f' id="{_e(elem_id)}"' if elem_id else ""
    return f'<span class="{cls}"{ident} style="background:{bg};color:{fg}">{_e(status)}</span>'


def _href(path: str) -> str:
    """A relative link to a run record path, URL-quoted per segment."""
    return "/".join(quote(p) for p in Path(path).as_posix().split("/"))


def _run_links(run: dict) -> str:
    p = run["path"]
    verdict = run["verdict"]
    extra = ""
    if run.get("run_verdict") and run["run_verdict"] != verdict:
        extra = (f' <span class="muted">(the run record, judged with the applied configuration, says '
                 f'{_e(run["run_verdict"])}; this verdict is against the {_e(run.get("judged_against"))})</span>')
    rec = run.get("record") or {}
    if rec.get("disagrees"):
        extra += f' <span class="tampered">({_e(rec["disagrees"])}: {_e(run.get("judged_against"))})</span>'
    sha = rec.get("sha256") or {}
    if sha:       # the digests of the files this verdict stands on (certificate.json has them in full)
        extra += (' <span class="muted sha" title="' + _e(", ".join(f"{k} {v}" for k, v in sha.items())) + '">'
                  + _e(" ".join(f"{k.split('_')[0]}:{str(v)[:12]}" for k, v in sha.items())) + "</span>")
    return (f'{_badge(verdict)} <a href="{_e(_href(p))}/"><code>{_e(run["run_id"])}</code></a>{extra} '
            f'<span class="muted">[<a href="{_e(_href(p + "/verdict.json"))}">verdict</a> · '
            f'<a href="{_e(_href(p + "/events.jsonl"))}">events</a> · '
            f'<a href="{_e(_href(p + "/metadata.json"))}">metadata</a>'
            + "".join(f' · <a href="{_e(_href(p + "/" + log))}">{_e(_log_label(log))}</a>'
                      for log in run.get("container_logs") or [])
            + ']</span>')


def _run_block(run: dict) -> str:
    """One evidence run: its links, reason, feature levels (when recorded) and failing rules."""
    levels = (f'<div class="muted features">features: {_e(features_label(run["features"], run.get("features_requested")))}'
              '</div>') if run.get("features") is not None else ""
    rules = _rules(run.get("failing_rules") or []) if run["verdict"] != "PASS" else ""
    return f'<div>{_run_links(run)}<div class="muted">{_e(run["reason"])}</div>{levels}{rules}</div>'


def _log_label(path: str) -> str:
    """``logs/kc-r1a2b3c-b2.log.gz`` -> ``b2 log`` (the node's part of the container name)."""
    name = Path(path).name.removesuffix(".log.gz")
    return name.rsplit("-", 1)[-1] + " log"


def _rules(rules: list[dict]) -> str:
    if not rules:
        return ""
    items = "".join(f"<li><b>{_e(r['check'])}</b> <code>{_e(r['rule'])}</code> {_e(r.get('detail'))}</li>"
                    for r in rules[:12])
    more = f"<li class=\"muted\">… {len(rules) - 12} more in verdict.json</li>" if len(rules) > 12 else ""
    return f'<ul class="rules">{items}{more}</ul>'


def _all_decided(cert: dict) -> bool:
    return bool(cert["scope"].get("complete")) and not cert.get("undecided") and not cert.get("not_applicable")


def _old_scope_text(scope: dict) -> str:
    """The scope of a certificate written before ``scope_text`` existed."""
    if scope.get("complete"):
        return "every capability of this harness version was selected"
    return ("partial: " + ", ".join(scope["capabilities"]) + " only"
            + (f" (scenarios: {', '.join(scope['scenarios'])})" if scope.get("scenarios") else ""))


MEASURED_LABELS = {"group_join_s": "group join", "first_read_s": "first read", "first_ack_s": "first ack",
                   "unavailable_s": "unavailable under fault", "leader_change_s": "leader change"}


def _measured(m: dict) -> str:
    """A capability's measured facts (medians over its decided runs; harness/checkers/measured.py)."""
    items = [f'{label} {m[k]["median"]:g} s' for k, label in MEASURED_LABELS.items() if k in m]
    return (f'<div class="muted measured" title="medians over the decided runs">measured: {_e(", ".join(items))}'
            '</div>') if items else ""


def render_html(cert: dict) -> str:
    """The certificate as one self-contained HTML page."""
    s = cert["subject"]
    h = cert["harness"]
    overrides = cert.get("broker_config_overrides") or {}
    scope = cert["scope"]
    sha = h.get("git_sha") or "unknown"
    if h.get("git_dirty"):
        sha += " (with uncommitted changes)"
    scope_cls = "" if _all_decided(cert) else ' class="partial"'
    facts = [
        ("Broker image", f"<code>{_e(s['broker_image'])}</code>"),
        ("Image id", f"<code>{_e((s.get('image_id') or 'unknown').replace('sha256:', '')[:19])}</code>"),
        ("Kafka version", _e(s.get("kafka_version") or "unknown (not an Apache image built here)")),
        ("Distribution", _e(f"{s['distribution']}: " + _nodes(s))),
        ("Profile", f"<b>{_e(cert['profile'])}</b>"),
        ("Harness", f"kafka-chaos {_e(h.get('version'))}, git <code>{_e(sha)}</code>"),
        ("Date", f"{_e(cert['started_at'])} – {_e(cert['finished_at'])}"),
        ("Broker config overrides", "<code>" + _e(", ".join(f"{k}={v}" for k, v in overrides.items())) + "</code>"
         + " <span class=\"muted\">(runs judged against the declared configuration)</span>"
         if overrides else "none"),
        ("Scope", f'<span id="scope"{scope_cls}>{_e(cert.get("scope_text") or _old_scope_text(scope))}</span>'),
    ]
    if cert.get("feature_levels_text"):      # certificates from before feature levels were kept have none
        facts.append(("Feature levels", f'<span id="feature-levels">{_e(cert["feature_levels_text"])}</span> '
                      '<span class="muted">(finalized, from each run\'s metadata log; * asked for; a feature not '
                      'listed is level 0)</span>'))
    rows = []
    for c in cert["capabilities"]:
        ev = []
        for sc in c["scenarios"]:
            if not sc["applicable"]:
                ev.append(f'<div><code>{_e(sc["name"])}</code> {_badge("NOT-APPLICABLE")} '
                          f'<span class="muted">{_e(sc["note"])}</span></div>')
                continue
            runs = "".join(_run_block(r) for r in sc["runs"]) or f'<div class="muted">{_e(sc.get("note") or "not run")}</div>'
            ev.append(f'<div style="margin-bottom:6px"><code title="{_e(sc.get("description"))}">'
                      f'{_e(sc["name"])}</code>: {runs}</div>')
        rows.append(
            f'<tr id="cap-{_e(c["name"])}" data-status="{_e(c["status"])}"><td><b>{_e(c["title"])}</b><br>'
            f'<code class="muted">{_e(c["name"])}</code></td><td>{_badge(c["status"])}<div class="muted">'
            f'{_e(c["reason"])}</div>{_measured(c.get("measured") or {})}</td>'
            f'<td>{"".join(ev) or "<span class=muted>—</span>"}</td></tr>')
    unmapped = cert.get("unmapped_scenarios") or []
    unmapped_html = ("<h2>Conformance scenarios no capability claims</h2><p class=\"muted\">Not evidence for this "
                     "certificate; map their family in harness/certify/command.py CAPABILITIES.</p><p>"
                     + ", ".join(f"<code>{_e(n)}</code>" for n in unmapped) + "</p>") if unmapped else ""
    interrupted = '<p class="partial">Interrupted: some scenarios did not run.</p>' if cert.get("interrupted") else ""
    undecided = cert.get("undecided") or []
    undecided_html = ""
    if undecided:
        items = "".join(
            f'<tr data-key="{_e(u["name"])}"><td><b>{_e(u["title"])}</b><br><code class="muted">{_e(u["name"])}'
            f'</code></td><td data-col="causes">{_e(", ".join(u["causes"]))}</td><td>'
            + "".join(f'<div><code>{_e(sc["scenario"])}</code>: <b>{_e(sc["cause"])}</b> '
                      f'<span class="muted">{_e(sc["reason"])} ({sc["attempts"]} attempt(s))</span></div>'
                      for sc in u["scenarios"]) + "</td></tr>" for u in undecided)
        undecided_html = ("<h2>Undecided capabilities</h2><p class=\"muted\">Their scenarios stayed UNKNOWN after "
                          "the retries: no evidence about the broker either way, so the certificate cannot say "
                          "CERTIFIED.</p><table id=\"undecided\"><tr><th>Capability</th><th>Causes</th>"
                          "<th>Scenarios</th></tr>" + items + "</table>\n")
    title = f"kafka-chaos certificate — {s['broker_image']} — {cert['profile']}"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>\n"
        f"<h1>kafka-chaos conformance certificate</h1>\n"
        f"<div>{_badge(cert['overall'], 'overall', 'overall')}</div>\n"
        f"<p class=\"why\" id=\"overall-reason\">{_e(cert['overall_reason'])}</p>{interrupted}\n"
        "<table class=\"facts\">" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts) + "</table>\n"
        "<h2>Capabilities</h2>\n<table class=\"caps\"><tr><th>Capability</th><th>Result</th>"
        "<th>Evidence runs</th></tr>" + "".join(rows) + "</table>\n" + undecided_html + unmapped_html +
        "\n<p class=\"muted\">PASS: every applicable scenario of the capability passed. FAIL: one failed "
        "(its failing rules are listed). NOT-APPLICABLE: no scenario applies to this broker (none exists yet, "
        "a newer Kafka version is needed, or ZooKeeper is absent). UNKNOWN (undecided): every attempt of a "
        "scenario stayed UNKNOWN, for the cause shown (the environment, the harness, a client that died or "
        "stalled, ...). CERTIFIED only if every applicable capability passed.</p>\n</body></html>\n")


def write_certificate(cert: dict, out_dir: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``certificate.json`` and ``certificate.html`` into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    js = out / "certificate.json"
    page = out / "certificate.html"
    for path, text in ((js, json.dumps(cert, indent=2, sort_keys=True) + "\n"), (page, render_html(cert))):
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return page, js


def read_certificate(out_dir: str | os.PathLike) -> dict:
    """Read a certificate's JSON back (tests, tooling)."""
    return json.loads((Path(out_dir) / "certificate.json").read_text(encoding="utf-8"))
