"""JUnit XML for CI: one ``<testsuite>`` per suite, one ``<testcase>`` per run.

PASS -> passed; FAIL -> ``<failure>`` (reason and failed checks); a tampered or stale record
(reports/outcome.py) -> ``<failure type="TAMPERED">`` naming what disagreed; UNKNOWN -> ``<skipped>`` (an
environment failure is not a broker verdict; the message names its ``cause``). Skipped records get a testcase in the
``skipped-records`` suite marked ``<skipped>`` with the reason, so CI shows them too.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def build(runs: list[dict], skipped: list[dict]) -> ET.Element:
    by_suite: dict[str, list[dict]] = defaultdict(list)
    for r in runs:
        by_suite[r.get("suite") or "adhoc"].append(r)
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
            tc = ET.SubElement(ts, "testcase", classname=f"{suite}.{r['scenario']}",
                               name=f"{r['run_id']} [{r.get('broker')}]", time=f"{float(dur or 0):.3f}")
            props = ET.SubElement(tc, "properties")
            for k in ("broker", "broker_image", "profile", "seed", "acks", "min_isr", "unclean", "path"):
                ET.SubElement(props, "property", name=k, value="" if r.get(k) is None else str(r[k]))
            if r.get("tampered"):     # the stored verdict.json is contradicted by the record: a failure for CI
                f = ET.SubElement(tc, "failure", message=r["tampered"], type="TAMPERED")
                f.text = f"stored verdict {r.get('stored_verdict')}, the events give {r['verdict']}\nrecord: {r.get('path')}"
                fails += r["verdict"] != "FAIL"
            elif r["verdict"] == "FAIL":
                checks = ", ".join(r.get("failed_checks") or []) or "-"
                f = ET.SubElement(tc, "failure", message=r.get("reason") or "FAIL", type="FAIL")
                f.text = (f"reason: {r.get('reason')}\nfailed checks: {checks}\nlost: {r.get('lost')} "
                          f"duplicates: {r.get('duplicates')} inconsistent_offsets: {r.get('inconsistent_offsets')}\n"
                          f"record: {r.get('path')}")
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
            tc = ET.SubElement(ts, "testcase", classname="skipped-records", name=s["path"], time="0")
            ET.SubElement(tc, "skipped", message=s["reason"])
        tot["tests"] += len(skipped)
        tot["skipped"] += len(skipped)
    for k, v in tot.items():
        root.set(k, str(v))
    root.set("errors", "0")
    return root


def write(path: Path, runs: list[dict], skipped: list[dict]) -> Path:
    tree = ET.ElementTree(build(runs, skipped))
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
    return path
