"""``run --json`` / ``run --summary-md FILE`` (harness/commands/run_summary.py): read back from the run
records a run wrote; the test names are the JUnit ones (``family.scenario[distribution-version]``); a
record without a readable verdict is UNKNOWN, never PASS; the Markdown is appended, FAIL rows first."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.commands import run_summary
from harness.record.names import broker_label, case_name, short_distribution

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "runs" / "synthetic"


def _records(tmp_path: Path) -> list[Path]:
    picked = []
    for d in sorted(FIXTURES.iterdir()):
        v = json.loads((d / "verdict.json").read_text()).get("verdict") if (d / "verdict.json").is_file() else None
        if v in ("PASS", "FAIL", "UNKNOWN") and v not in [p[1] for p in picked]:
            picked.append((d, v))
    out = []
    for d, _v in picked:
        shutil.copytree(d, tmp_path / d.name)
        out.append(tmp_path / d.name)
    broken = tmp_path / "broken"
    shutil.copytree(picked[0][0], broken)
    (broken / "verdict.json").write_text("{not json")
    return [*out, broken, None]


def test_rows_json_and_markdown(tmp_path):
    paths = _records(tmp_path)
    rows = run_summary.rows(paths)
    assert len(rows) == 4                                  # None: a child that left no record
    assert sorted(r["verdict"] for r in rows) == ["FAIL", "PASS", "UNKNOWN", "UNKNOWN"]
    broken = next(r for r in rows if r["path"].endswith("broken"))
    assert broken["verdict"] == "UNKNOWN" and "unreadable" in broken["reason"]
    for r in rows:
        meta = json.loads((Path(r["path"]) / "metadata.json").read_text())
        assert r["name"] == f"{meta['scenario']}[{meta['distribution']}-{meta['kafka_version']}]"
    doc = json.loads(run_summary.as_json(rows, 1))
    assert doc["exit_code"] == 1 and doc["counts"] == {"PASS": 1, "FAIL": 1, "UNKNOWN": 2}
    md = tmp_path / "summary.md"
    md.write_text("earlier step\n")
    run_summary.write_markdown(str(md), rows, 1)
    text = md.read_text()
    assert text.startswith("earlier step\n### kafka-chaos run: 1 PASS, 1 FAIL, 2 UNKNOWN (exit 1)")
    table = [ln for ln in text.splitlines() if ln.startswith("| ") and "`" in ln]
    assert len(table) == 4 and table[0].startswith("| ❌ |") and table[-1].startswith("| ✅ |")


def test_names_carry_no_machine_path():
    assert short_distribution("file:/home/ci/x/kfake.toml") == "file:kfake.toml"
    assert broker_label("file:/home/ci/x/kfake.toml", "kafka-chaos/kfake:latest") == "kfake-kafka-chaos/kfake:latest"
    assert case_name("isr.pause_follower", "apache-kraft", "4.4.0") == "isr.pause_follower[apache-kraft-4.4.0]"
    assert case_name("isr.pause_follower", None, None) == "isr.pause_follower[unknown]"
