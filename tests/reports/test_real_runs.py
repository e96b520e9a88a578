"""The report job on run records made by real runs (tests/fixtures/runs/real, written by
tests/fixtures/make_real_runs.py; MANIFEST.json there names each record's plan and verdict).

Every expected number is computed here from the records' own files (metadata.json, verdict.json,
events.jsonl) with plain Python, independently of the job's Spark code, then compared with the
job's Parquet tables, summary.json and JUnit XML. Regenerating the records therefore needs no edit.
The report re-derives each outcome from the events (reports/outcome.py): the checks expected here are
the checkers' (``decide``) on each record, and every real record's stored verdict must agree with them
(none tampered or stale).

Real records differ from the synthetic ones in ways that matter to the report: the ZooKeeper
transitions are there twice (the live watcher's copy and the transaction log's, the latter emitted
after the run), ``__consumer_offsets`` appears during the run, an UNKNOWN run has no workload.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from harness.checkers.verdict import decide
from harness.record import read_run
from reports.job import Options, run_report

pytestmark = pytest.mark.spark

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "real"
MANIFEST = json.loads((REAL / "MANIFEST.json").read_text())


# -- the records, read with plain Python ------------------------------------------------------
class Record:
    """One run record read from disk, with the numbers this test expects the report to show."""

    def __init__(self, label: str, entry: dict):
        self.label = label
        self.dir = REAL / entry["run_id"]
        self.meta = json.loads((self.dir / "metadata.json").read_text())
        self.verdict = json.loads((self.dir / "verdict.json").read_text())
        self.events = [json.loads(line) for line in (self.dir / "events.jsonl").read_text().splitlines()]
        assert self.verdict["verdict"] == entry["verdict"], f"{label}: MANIFEST and verdict.json disagree"
        rec = read_run(self.dir)
        self.judged = decide(rec.events, rec.metadata).to_dict()     # what the report re-derives
        assert self.judged["verdict"] == self.verdict["verdict"], f"{label}: the events do not give its verdict"

    @property
    def run_id(self) -> str:
        return self.dir.name

    def of(self, type_: str, **match) -> list[dict]:
        return [e for e in self.events if e["type"] == type_ and all(e.get(k) == v for k, v in match.items())]

    def sends(self, phase: str) -> list[dict]:
        return self.of("client", f="send", phase=phase)

    @property
    def fault_kinds(self) -> list[str]:
        kinds = {s["fault"] for s in self.meta.get("schedule") or []} | {e["fault"] for e in self.of("fault.start")}
        return sorted(kinds) or ["none"]

    def durability(self, name: str) -> int | None:
        d = self.judged["checks"].get("durability")
        return None if d is None else d["checks"][name]["count"]

    def divergences(self) -> list[str] | None:
        c = self.judged["checks"].get("conformance")
        if c is None:
            return None
        return [d["rule"] for d in c["divergences"] + c["invariant_violations"]]

    def states(self) -> dict[tuple, list[dict]]:
        """ZooKeeper's partition states from the txn-log copy, in zxid order, per partition."""
        out: dict[tuple, list[dict]] = defaultdict(list)
        for e in sorted(self.of("zk.partition_state", source="txnlog"), key=lambda e: e["zxid"]):
            if not e.get("deleted"):
                out[(e["topic"], e["partition"])].append(e)
        return out

    def recovery(self, fault: dict) -> tuple[float | None, float | None, int]:
        """(time to new leader, time to ISR restored, partitions whose leader changed) of a single
        fault, in ZooKeeper wall time:
        a leader change is the first write after the fault naming another live leader than the
        last write before it (partitions that did not exist before do not count); the ISR of a
        partition is restored at its first full ISR after it was seen shrunk."""
        t0 = fault["wall"]
        leader, isr, unrestored = [], [], False
        for ss in self.states().values():
            full = max(len(s["isr"]) for s in ss)
            before = [s for s in ss if s["zk_time"] <= t0]
            after = [s for s in ss if s["zk_time"] > t0]
            if before:
                old = before[-1]["leader"]
                moved = [s for s in after if s["leader"] >= 0 and s["leader"] != old]
                if moved:
                    leader.append(moved[0]["zk_time"] - t0)
            shrunk = t0 if before and len(before[-1]["isr"]) < full else \
                next((s["zk_time"] for s in after if len(s["isr"]) < full), None)
            if shrunk is not None:
                back = [s["zk_time"] for s in after if s["zk_time"] > shrunk and len(s["isr"]) == full]
                if back:
                    isr.append(back[0] - t0)
                else:
                    unrestored = True
        return (max(leader) if leader else None), (None if unrestored or not isr else max(isr)), len(leader)


@pytest.fixture(scope="module")
def records() -> dict[str, Record]:
    recs = {label: Record(label, entry) for label, entry in MANIFEST.items()}
    # What the fixture set must hold (tests/fixtures/make_real_runs.py).
    assert {"kill_leader", "delete_controller", "bad_config"} <= set(recs)
    assert Counter(r.verdict["verdict"] for r in recs.values())["PASS"] >= 2
    dirs = sorted(p.name for p in REAL.iterdir() if p.is_dir())
    assert dirs == sorted(r.run_id for r in recs.values()), "a record in runs/real is not in MANIFEST.json"
    return recs


@pytest.fixture(scope="module")
def report(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("real-report")
    summary = run_report(spark, Options(runs_path=str(REAL), out=str(out)))
    return out, summary


def table(spark, out: Path, name: str) -> list[dict]:
    return [r.asDict(recursive=True) for r in spark.read.parquet(str(out / "tables" / name)).collect()]


# -- the records themselves -------------------------------------------------------------------
def test_records_are_small_and_what_the_manifest_says(records):
    sizes = {label: sum(f.stat().st_size for f in r.dir.iterdir()) for label, r in records.items()}
    assert all(s < 1_000_000 for s in sizes.values()), sizes
    assert sum(sizes.values()) < 3_000_000
    for label, r in records.items():
        assert r.meta["scenario"] == MANIFEST[label]["scenario"] and r.meta["kafka_version"]
    kill = records["kill_leader"]
    assert kill.fault_kinds == ["kill"] and len(kill.sends("ok")) > 100
    assert records["delete_controller"].fault_kinds == ["delete_controller_znode"]
    bad = records["bad_config"]
    assert bad.meta["workload"] is None and bad.fault_kinds == ["none"]
    assert "num.network.threads" in bad.verdict["reason"]          # the environment failure, named
    # the PASS records lost nothing: every acknowledged value was read back (poll or final drain)
    for r in records.values():
        if r.verdict["verdict"] == "PASS":
            read = {e["value"] for e in r.of("client", phase="ok") if e["f"] in ("poll", "drain")}
            assert {e["value"] for e in r.sends("ok")} <= read


# -- the report's numbers against the records' ------------------------------------------------
def test_summary_totals_and_gate(records, report):
    out, s = report
    t = s["totals"]
    verdicts = Counter(r.verdict["verdict"] for r in records.values())
    assert (t["runs"], t["pass"], t["fail"], t["unknown"]) == \
        (len(records), verdicts["PASS"], verdicts["FAIL"], verdicts["UNKNOWN"])
    assert t["skipped_records"] == 0 and s["skipped_records"] == []       # MANIFEST.json is not a record
    assert t["tampered"] == 0 and s["tampered_records"] == []            # every stored verdict re-derived as is
    assert s["outcomes"]["rederived"] == len(records) and s["outcomes"]["stored"] == 0
    assert t["acknowledged_writes"] == sum(len(r.sends("ok")) for r in records.values())
    for k in ("lost", "duplicates", "inconsistent_offsets"):
        assert t[k] == sum(r.durability(k) or 0 for r in records.values()), k
    assert t["runs_without_durability_checks"] == sum(r.durability("lost") is None for r in records.values())
    assert t["conformance_divergences"] == sum(len(r.divergences() or []) for r in records.values())
    assert t["events"] == sum(len(r.events) for r in records.values())
    lost_not_allowed = sum((r.durability("lost") or 0) for r in records.values()) - \
        sum(r.verdict["checks"]["durability"]["checks"]["lost"]["allowed"] for r in records.values()
            if "durability" in r.verdict["checks"])
    expected_failed = [rule for rule, bad in (("fail_on_lost", lost_not_allowed >= 1),
                                              ("fail_on_fail", verdicts["FAIL"] >= 1)) if bad]
    assert s["gate"]["failed_rules"] == expected_failed
    assert s["exit_code"] == (1 if expected_failed else 0)


def test_runs_table(spark, records, report):
    out, _ = report
    runs = {r["run_id"]: r for r in table(spark, out, "runs")}
    assert set(runs) == {r.run_id for r in records.values()}
    for rec in records.values():
        row = runs[rec.run_id]
        assert row["verdict"] == rec.verdict["verdict"] and row["scenario"] == rec.meta["scenario"]
        assert row["n_events"] == len(rec.events)
        assert (row["sends"], row["acknowledged_writes"], row["send_failed"], row["send_unknown"]) == \
            tuple(len(rec.sends(p)) for p in ("invoke", "ok", "fail", "info"))
        assert row["consumed"] == len([e for e in rec.of("client", phase="ok") if e["f"] in ("poll", "drain")])
        assert row["faults"] == len(rec.of("fault.start")) and row["fault_kinds"] == rec.fault_kinds
        assert (row["lost"], row["duplicates"]) == (rec.durability("lost"), rec.durability("duplicates"))
        # each ZooKeeper transition once (txn-log copy when the run has one), not watcher + txn log
        txn = rec.of("zk.partition_state", source="txnlog")
        assert row["partition_states"] == (len(txn) if txn else len(rec.of("zk.partition_state")))
        assert row["broker"] == rec.meta["kafka_version"]
    assert runs[records["bad_config"].run_id]["acks"] is None        # no workload ran
    assert runs[records["kill_leader"].run_id]["acks"] == "all"


def test_pass_fail_matrix(spark, records, report):
    out, _ = report
    expect: dict[tuple, Counter] = defaultdict(Counter)
    for r in records.values():
        for kind in r.fault_kinds:
            expect[(r.meta["suite"], r.meta["scenario"], kind, r.meta["kafka_version"])][r.verdict["verdict"]] += 1
    got = {(m["suite"], m["scenario"], m["fault_kind"], m["broker"]): m for m in table(spark, out, "pass_fail_matrix")}
    assert set(got) == set(expect)
    for key, c in expect.items():
        m = got[key]
        assert (m["runs"], m["pass"], m["fail"], m["unknown"]) == \
            (sum(c.values()), c["PASS"], c["FAIL"], c["UNKNOWN"]), key
        decided = c["PASS"] + c["FAIL"]
        assert m["pass_rate"] == (c["PASS"] / decided if decided else None), key
    kill = records["kill_leader"]
    assert got[("fixtures", "broker_failover.kill_leader", "kill", kill.meta["kafka_version"])]["pass"] == 1
    bad = records["bad_config"]
    assert got[("fixtures", "broker_failover.kill_leader", "none", bad.meta["kafka_version"])]["unknown"] == 1


def test_durability(spark, records, report):
    out, _ = report
    expect: dict[tuple, list[Record]] = defaultdict(list)
    for r in records.values():
        acks = (r.meta["workload"] or {}).get("acks")
        acks = "unknown" if acks is None else ("all" if str(acks) in ("all", "-1") else str(acks))
        cfg = {**(r.meta.get("broker_config") or {}), **r.meta["topics"][0]["config"]}
        expect[(acks, cfg.get("min.insync.replicas", "1"),
                cfg.get("unclean.leader.election.enable", "false"))].append(r)
    got = {(d["acks"], d["min_isr"], d["unclean"]): d for d in table(spark, out, "durability")}
    assert set(got) == set(expect)
    for key, recs in expect.items():
        d = got[key]
        assert d["runs"] == len(recs) and d["acknowledged_writes"] == sum(len(r.sends("ok")) for r in recs)
        for k in ("lost", "duplicates", "inconsistent_offsets"):
            counts = [r.durability(k) for r in recs if r.durability(k) is not None]
            assert d[f"runs_checked_{k}"] == len(counts), (key, k)
            assert (d[k] or 0) == sum(counts) and d[f"runs_with_{k}"] == sum(c > 0 for c in counts), (key, k)
    strict = got[("all", "1", "false")]
    assert strict["acknowledged_writes"] > 0 and strict["lost"] == 0 and strict["lost_ci_low"] == 0.0


def test_availability_of_the_kill(spark, records, report):
    out, _ = report
    kill = records["kill_leader"]
    (fault,) = kill.of("fault.start")
    new_leader, isr_back, moved = kill.recovery(fault)
    assert new_leader is not None and 0 < new_leader < 60        # the killed leader's partitions moved
    rec = {(r["run_id"], r["fault_id"]): r for r in table(spark, out, "fault_recovery")}
    row = rec[(kill.run_id, fault["fault_id"])]
    assert row["fault"] == "kill" and row["time_to_new_leader"] == pytest.approx(new_leader, abs=0.05)
    assert row["partitions_leader_changed"] == moved >= 1
    assert isr_back is not None and row["time_to_isr_restored"] == pytest.approx(isr_back, abs=0.05)
    a = {(x["fault"], x["broker"]): x for x in table(spark, out, "availability")}
    k = a[("kill", kill.meta["kafka_version"])]
    assert k["faults"] == 1 and k["new_leader_s_n"] == 1
    assert k["new_leader_s_max"] == pytest.approx(new_leader, abs=0.05) == k["new_leader_s_p50"]

    # every single-fault record (recovery() measures one fault's window, to the end of the run)
    for r in records.values():
        faults = r.of("fault.start")
        if len(faults) == 1:
            nl, ib, n = r.recovery(faults[0])
            got = rec[(r.run_id, faults[0]["fault_id"])]
            assert got["time_to_new_leader"] == (None if nl is None else pytest.approx(nl, abs=0.05)), r.label
            assert got["time_to_isr_restored"] == (None if ib is None else pytest.approx(ib, abs=0.05)), r.label
            assert got["partitions_leader_changed"] == n, r.label
    windows = table(spark, out, "unavailability_windows")
    expect_windows = sum(1 for r in records.values() for ss in r.states().values()
                         for i, s in enumerate(ss) if s["leader"] < 0 and (i == 0 or ss[i - 1]["leader"] >= 0))
    assert len(windows) == expect_windows


def test_conformance(spark, records, report):
    out, _ = report
    rows = table(spark, out, "conformance")
    expect = Counter((rule, r.meta["kafka_version"], r.meta["profile"])
                     for r in records.values() for rule in r.divergences() or [])
    assert {(x["rule"], x["broker"], x["profile"]): x["divergences"] for x in rows} == dict(expect)
    for r in records.values():
        if r.verdict["verdict"] == "PASS":
            assert r.divergences() == [], r.label            # 0 divergences for the PASS runs
    runs = {x["run_id"]: x for x in table(spark, out, "runs")}
    for r in records.values():
        assert runs[r.run_id]["conformance_checked"] == (r.divergences() is not None)
        assert runs[r.run_id]["divergence_rules"] == (r.divergences() or [])


def test_junit(records, report):
    out, _ = report
    root = ET.parse(out / "junit.xml").getroot()
    verdicts = Counter(r.verdict["verdict"] for r in records.values())
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == \
        (str(len(records)), str(verdicts["FAIL"]), str(verdicts["UNKNOWN"]))
    bad = records["bad_config"]
    skipped = [c for c in root.iter("testcase") if c.find("skipped") is not None]
    assert len(skipped) == 1 and "num.network.threads" in ET.tostring(skipped[0], encoding="unicode")
    assert bad.run_id in ET.tostring(skipped[0], encoding="unicode")


def test_html_has_a_timeline_per_run(records, report):
    out, _ = report
    html = (out / "report.html").read_text()
    for r in records.values():
        assert f'id="timeline-{r.run_id}"' in html
