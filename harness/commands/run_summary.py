"""What one ``kafka-chaos run`` decided, for CI: ``--json`` (one object on stdout) and ``--summary-md FILE``
(a Markdown table appended to FILE: ``--summary-md "$GITHUB_STEP_SUMMARY"`` shows it on the job's page).

Both are read back from the run records this invocation wrote (metadata.json, verdict.json), so they say
what the records say, serial or ``--parallel`` alike. A test is named as in the JUnit file of the report
(reports/junit.py): ``family.scenario[distribution-version]``.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.record.facts import features, features_label, features_requested
from harness.record.names import case_name

MARK = {"PASS": "✅", "FAIL": "❌", "UNKNOWN": "❔"}


def _read(path: Path, name: str) -> dict:
    try:
        v = json.loads((path / name).read_text(encoding="utf-8"))
        return v if isinstance(v, dict) else {}
    except (OSError, ValueError):
        return {}


def rows(paths: list[Path | str | None]) -> list[dict]:
    """One row per run record (a record without a readable verdict.json is UNKNOWN, never PASS)."""
    out = []
    for p in paths:
        if p is None:
            continue
        p = Path(p)
        meta, verdict = _read(p, "metadata.json"), _read(p, "verdict.json")
        v = verdict.get("verdict") if verdict.get("verdict") in MARK else "UNKNOWN"
        row = {"scenario": meta.get("scenario") or p.name, "distribution": meta.get("distribution"),
               "broker": meta.get("kafka_version") or meta.get("broker_image"), "seed": meta.get("seed"),
               "run_id": meta.get("run_id") or p.name, "verdict": v,
               "cause": verdict.get("cause") if v == "UNKNOWN" else None,
               "reason": verdict.get("reason") or ("verdict.json missing or unreadable" if not verdict else ""),
               "path": str(p),
               # the finalized feature levels (asked-for ones starred); None: none recorded (ZooKeeper mode)
               "features": features_label(features(meta), features_requested(meta))}
        row["name"] = case_name(row["scenario"], row["distribution"], row["broker"])
        out.append(row)
    return out


def as_json(runs: list[dict], exit_code: int) -> str:
    counts = {k: sum(r["verdict"] == k for r in runs) for k in MARK}
    return json.dumps({"exit_code": exit_code, "counts": counts, "runs": runs}, sort_keys=True)


def _cell(s) -> str:
    return str(s if s is not None else "").replace("|", "\\|").replace("\n", " ")


def markdown(runs: list[dict], exit_code: int, title: str = "kafka-chaos run") -> str:
    counts = {k: sum(r["verdict"] == k for r in runs) for k in MARK}
    head = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no run"
    lines = [f"### {title}: {head} (exit {exit_code})", "",
             "| | test | verdict | reason | record |", "|---|---|---|---|---|"]
    order = {"FAIL": 0, "UNKNOWN": 1, "PASS": 2}
    for r in sorted(runs, key=lambda r: (order[r["verdict"]], r["name"], r["run_id"])):
        what = f"{r['verdict']}({r['cause']})" if r.get("cause") else r["verdict"]
        reason = _cell(r["reason"])
        levels = f"<br>features: {_cell(r['features'])}" if r.get("features") else ""
        lines.append(f"| {MARK[r['verdict']]} | `{_cell(r['name'])}`{levels} | {what} | "
                     f"{reason[:300] + ('…' if len(reason) > 300 else '')} | `{_cell(Path(r['path']).name)}` |")
    return "\n".join(lines) + "\n\n"


def write_markdown(file: str, runs: list[dict], exit_code: int) -> None:
    """Append (GitHub's step summary file is shared by the steps of a job)."""
    with open(file, "a", encoding="utf-8") as f:
        f.write(markdown(runs, exit_code))
