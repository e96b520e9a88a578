"""JUnit XML for CI: one ``<testsuite>`` per suite, one ``<testcase>`` per run.

PASS -> passed; FAIL -> ``<failure>`` (reason and failed checks); a tampered or stale record
(reports/outcome.py) -> ``<failure type="TAMPERED">`` naming what disagreed; UNKNOWN -> ``<skipped>`` (an
environment failure is not a broker verdict; the message names its ``cause``). Skipped records get a testcase in the
``skipped-records`` suite marked ``<skipped>`` with the reason, so CI shows them too.

Names are stable across builds so that a CI system can follow one test from build to build: the testcase
is ``family.scenario[distribution-version]`` (classname: the suite), e.g.
``broker_failover.kill_leader[apache-kraft-4.4.0]``; the timestamped run id is a property. A second run
of the same scenario on the same broker in one report is ``... #2`` (in run id order). Record paths are
relative to the report's RUNS_PATH (``base``) when under it, so no workspace's absolute path leaks in.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from harness.record.names import short_distribution, case_name


def relative(path: str | None, base: str | None) -> str | None:
    """``path`` relative to ``base`` when it lies under it (``file:`` URIs too); else unchanged (s3://...)."""
    if not path or not base:
        return path
    p, b = (re.sub(r"^file:(//)?", "", x) for x in (path, base))
    if not p.startswith("/") or re.match(r"[A-Za-z][\w+.-]*:", b):
        return path
    b = os.path.abspath(b).rstrip("/")
    return p[len(b) + 1:] if p.startswith(b + "/") else path


def case_names(runs: list[dict]) -> dict[str, str]:
    """run id -> its stable testcase name (see the module docstring)."""
    seen: dict[tuple, int] = defaultdict(int)
    out = {}
    for r in sorted(runs, key=lambda r: r["run_id"]):
        base = case_name(r["scenario"], r.get("distribution"), r.get("broker"))
        seen[(r.get("suite") or "adhoc", base)] += 1
        n = seen[(r.get("suite") or "adhoc", base)]
        out[r["run_id"]] = base if n == 1 else f"{base} #{n}"
    return out


def build(runs: list[dict], skipped: list[dict], base: str | None = None) -> ET.Element:
    by_suite: dict[str, list[dict]] = defaultdict(list)
    for r in runs:
        by_suite[r.get("suite") or "adhoc"].append(r)
    names = case_names(runs)
    root = ET.Element("testsuites", name="kafka-chaos")
    tot = {"tests": 0, "failures": 0, "skipped": 0}
    for suite in sorted(by_suite):
        rs = sorted(by_suite[suite], key=lambda r: r["run_id"])
        fails = sum(r["verdict"] == "FAIL" for r in rs)
        unk = sum(r["verdict"] == "UNKNOWN" and not r.get("tampered") for r in rs)
        ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(rs)), failures="0",
                           errors="0", skipped=str(unk))
        for r in rs:
            dur = r.get("last_t")
            tc = ET.SubElement(ts, "testcase", classname=suite, name=names[r["run_id"]], time=f"{float(dur or 0):.3f}")
            props = ET.SubElement(tc, "properties")
            path = relative(r.get("path"), base)
            for k in ("run_id", "distribution", "broker", "broker_image", "profile", "seed", "acks", "min_isr",
                      "unclean", "path"):
                v = path if k == "path" else short_distribution(r.get(k)) if k == "distribution" else r.get(k)
                ET.SubElement(props, "property", name=k, value="" if v is None else str(v))
            if r.get("tampered"):     # the stored verdict.json is contradicted by the record: a failure for CI
                f = ET.SubElement(tc, "failure", message=r["tampered"], type="TAMPERED")
                f.text = f"stored verdict {r.get('stored_verdict')}, the events give {r['verdict']}\nrecord: {path}"
                fails += r["verdict"] != "FAIL"
            elif r["verdict"] == "FAIL":
                checks = ", ".join(r.get("failed_checks") or []) or "-"
                f = ET.SubElement(tc, "failure", message=r.get("reason") or "FAIL", type="FAIL")
                f.text = (f"reason: {r.get('reason')}\nfailed checks: {checks}\nlost: {r.get('lost')} "
                          f"duplicates: {r.get('duplicates')} inconsistent_offsets: {r.get('inconsistent_offsets')}\n"
                          f"record: {path}")
            elif r["verdict"] == "UNKNOWN":
                cause = f" ({r['cause']})" if r.get("cause") else ""
                ET.SubElement(tc, "skipped", message=f"UNKNOWN{cause}: {r.get('reason')}")
        ts.set("failures", str(fails))
        tot["tests"] += len(rs)
        tot["failures"] += fails
        tot["skipped"] += unk
    if skipped:
        ts = ET.SubElement(root, "testsuite", name="skipped-records", tests=str(len(skipped)), failures="0",
                           errors="0", skipped=str(len(skipped)))
        for s in skipped:
            tc = ET.SubElement(ts, "testcase", classname="skipped-records", name=relative(s["path"], base) or "?",
                               time="0")
            ET.SubElement(tc, "skipped", message=s["reason"])
        tot["tests"] += len(skipped)
        tot["skipped"] += len(skipped)
    for k, v in tot.items():
        root.set(k, str(v))
    root.set("errors", "0")
    return root


def write(path: Path, runs: list[dict], skipped: list[dict], base: str | None = None) -> Path:
    tree = ET.ElementTree(build(runs, skipped, base))
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
    return path
