"""The certificate as data: each scenario's and capability's status from its runs, the overall
result and the scope statement (pure; :mod:`harness.certify.command` runs the scenarios, and
:mod:`reports.certificate` renders what is built here as HTML and JSON).

Overall: CERTIFIED only if every applicable capability passed; NOT CERTIFIED if one failed;
INCONCLUSIVE while one is undecided; INCOMPATIBLE when the broker does not fit (its distribution
file's preflight, or a capability the certification requires cannot apply to it: ``--require``).
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

from harness import __version__
from harness.errors import EXIT_FAIL, EXIT_INCOMPATIBLE, EXIT_OK, EXIT_UNKNOWN, EXIT_USAGE  # noqa: F401 - re-exported
from harness.record.facts import features_label
from harness.record.verdicts import FAIL, INCOMPATIBLE, NOT_APPLICABLE, PASS, UNKNOWN
from harness.certify.capabilities import CapabilityPlan, Subject, capability_names

NA = NOT_APPLICABLE
CERTIFIED, NOT_CERTIFIED, INCONCLUSIVE = "CERTIFIED", "NOT CERTIFIED", "INCONCLUSIVE"
UNRECORDED = "unrecorded"          # an UNKNOWN run whose verdict.json names no cause (older records)
CERTIFICATE_SCHEMA = 1


MEASURED = ("group_join_s", "first_read_s", "first_ack_s", "unavailable_s", "leader_change_s")


def measured_facts(verdict: dict) -> dict:
    """The run's measured facts (verdict.json ``coverage.measured``, harness/checkers/measured.py): the
    largest group join, first read, first acknowledgement and client-seen unavailability, in seconds."""
    m = (verdict.get("coverage") or {}).get("measured") or {}
    return {k: m.get(k) for k in MEASURED if m.get(k) is not None}


def measured_medians(attempts: list[dict]) -> dict:
    """Per fact, the median over the given attempts that measured it, with how many did."""
    out = {}
    for k in MEASURED:
        vs = [a["measured"][k] for a in attempts if (a.get("measured") or {}).get(k) is not None]
        if vs:
            out[k] = {"median": round(statistics.median(vs), 3), "runs": len(vs)}
    return out


# -- aggregation ---------------------------------------------------------------------------------
def scenario_status(attempts: list[dict]) -> str:
    """A scenario's status is its last attempt's certificate verdict (earlier ones were UNKNOWN)."""
    return attempts[-1]["verdict"] if attempts else UNKNOWN


def capability_status(statuses: list[str]) -> str:
    """FAIL if any scenario failed; else UNKNOWN if any is undecided; else PASS; NOT-APPLICABLE if none ran."""
    if not statuses:
        return NA
    if FAIL in statuses:
        return FAIL
    if UNKNOWN in statuses:
        return UNKNOWN
    return PASS


def overall(statuses: list[str]) -> tuple[str, str, int]:
    """(result, reason, exit code) from the capabilities' statuses."""
    applicable = [s for s in statuses if s != NA]
    n_fail = applicable.count(FAIL)
    n_unknown = applicable.count(UNKNOWN)
    if not applicable:
        return NOT_CERTIFIED, "no applicable capability was tested", EXIT_USAGE
    if n_fail:
        return NOT_CERTIFIED, f"{n_fail} of {len(applicable)} applicable capabilities failed", EXIT_FAIL
    if n_unknown:
        return INCONCLUSIVE, (f"{n_unknown} of {len(applicable)} applicable capabilities could not be decided "
                              "(their runs stayed UNKNOWN); no capability failed"), EXIT_UNKNOWN
    return CERTIFIED, f"all {len(applicable)} applicable capabilities passed", EXIT_OK


def build_certificate(plans: list[CapabilityPlan], results: dict[str, list[dict]], *, subject: Subject,
                      profile: str, overrides: dict, started_at: str, finished_at: str, out_dir: Path,
                      git: dict, selected: list[str] | None, unmapped: list[str], interrupted: bool = False,
                      only: list[str] | None = None, required: list[str] | None = None) -> dict:
    """The certificate as data (the JSON file; the HTML is rendered from it).

    ``results``: scenario name -> attempts, each ``judge_run`` output plus ``run_id``, ``path``
    (absolute) and ``seconds``. Paths are stored relative to ``out_dir``."""
    caps = []
    for cp in plans:
        scen_rows = []
        statuses = []
        for sp in cp.scenarios:
            row = {"name": sp.name, "description": getattr(sp.scenario, "description", ""),
                   "applicable": sp.applicable, "note": sp.reason, "runs": []}
            if not sp.applicable:
                row["status"] = NA
            else:
                attempts = results.get(sp.name, [])
                for a in attempts:
                    r = dict(a)
                    r["path"] = a["path"] if "://" in a["path"] else os.path.relpath(a["path"], out_dir)
                    row["runs"].append(r)
                if not attempts:
                    row["status"] = UNKNOWN
                    row["note"] = "not run (interrupted)" if interrupted else "not run"
                    row["cause"] = "aborted" if interrupted else "not run"
                else:
                    row["status"] = scenario_status(attempts)
                    row["cause"] = (attempts[-1].get("cause") or UNRECORDED) if row["status"] == UNKNOWN else None
                statuses.append(row["status"])
            scen_rows.append(row)
        status = NA if cp.na_reason else capability_status(statuses)
        if status == NA:
            reason = cp.na_reason or "no applicable scenario"
        else:
            counts = {s: statuses.count(s) for s in (PASS, FAIL, UNKNOWN) if statuses.count(s)}
            reason = ", ".join(f"{n} {s}" for s, n in counts.items()) + f" of {len(statuses)} scenarios"
        undecided = [{"scenario": r["name"], "cause": r["cause"],
                      "reason": (r["runs"][-1]["reason"] if r["runs"] else r["note"]), "attempts": len(r["runs"])}
                     for r in scen_rows if r.get("status") == UNKNOWN] if status == UNKNOWN else []
        causes = sorted({u["cause"] for u in undecided})
        if causes:
            reason += f"; undecided ({', '.join(causes)})"
        decided_runs = [r["runs"][-1] for r in scen_rows if r.get("status") in (PASS, FAIL) and r["runs"]]
        caps.append({"name": cp.capability.name, "title": cp.capability.title,
                     "families": list(cp.capability.families), "status": status, "reason": reason,
                     "scenarios": scen_rows, "undecided": undecided, "causes": causes,
                     "measured": measured_medians(decided_runs)})
    levels = feature_levels(caps)
    result, why, code = overall([c["status"] for c in caps])
    if interrupted and result == CERTIFIED:
        result, why, code = INCONCLUSIVE, "interrupted before every scenario ran", EXIT_UNKNOWN
    undecided_caps = [{"name": c["name"], "title": c["title"], "causes": c["causes"], "scenarios": c["undecided"]}
                      for c in caps if c["status"] == UNKNOWN]
    if undecided_caps:
        # never CERTIFIED while a capability it would cover is undecided (overall() already says so;
        # this keeps it true whatever changes there), and the reason names them with their causes
        if result == CERTIFIED:
            result, code = INCONCLUSIVE, EXIT_UNKNOWN
        why += "; undecided after retries: " + "; ".join(
            f"{c['name']} ({', '.join(c['causes'])})" for c in undecided_caps)
    required = list(required or [])
    req_na = [c for c in caps if c["name"] in required and c["status"] == NA]
    if req_na:     # normally caught before any run (harness.certify.command); a merged or partial plan can still get here
        result, code = INCOMPATIBLE, EXIT_INCOMPATIBLE
        why = "; ".join(f"required capability {c['name']} is not applicable: {c['reason']}" for c in req_na)
    decided = [c["name"] for c in caps if c["status"] in (PASS, FAIL)]
    not_applicable = [{"name": c["name"], "reason": c["reason"]} for c in caps if c["status"] == NA]
    scope = {"capabilities": [c["name"] for c in caps],
             "scenarios": sorted(only) if only else None,
             "complete": not only and (not selected or set(selected) >= set(capability_names())),
             **({"required": required} if required else {})}
    return {
        "schema_version": CERTIFICATE_SCHEMA,
        "kind": "kafka-chaos certificate",
        "overall": result, "overall_reason": why, "exit_code": code,
        "subject": subject.to_dict(), "profile": profile,
        "harness": {"version": __version__, **git},
        "started_at": started_at, "finished_at": finished_at,
        "broker_config_overrides": dict(overrides),
        "scope": scope,
        "scope_text": scope_text(scope, decided, undecided_caps, not_applicable),
        "decided": decided, "undecided": undecided_caps, "not_applicable": not_applicable,
        "capabilities": caps,
        # at which feature levels the evidence ran (each scenario's last run; docs/kraft.md "Feature levels")
        "feature_levels": levels, "feature_levels_text": feature_levels_text(levels),
        "unmapped_scenarios": list(unmapped),
        "interrupted": interrupted,
    }


def feature_levels(caps: list[dict]) -> list[dict]:
    """The feature levels the evidence ran at: each scenario's last run grouped by its finalized levels
    (metadata.json ``features``, via judge_run), ``[{"label", "features", "scenarios", "runs"}]``, the most
    runs first; runs without recorded levels (ZooKeeper mode, older records) under ``features`` None."""
    groups: dict[str | None, dict] = {}
    for c in caps:
        for sc in c["scenarios"]:
            if not sc.get("runs"):
                continue
            last = sc["runs"][-1]
            label = features_label(last.get("features"), last.get("features_requested"))
            g = groups.setdefault(label, {"label": label, "features": last.get("features"), "scenarios": [], "runs": 0})
            g["runs"] += 1
            g["scenarios"].append(sc["name"])
    return sorted(groups.values(), key=lambda g: (-g["runs"], g["label"] is None, g["label"] or ""))


def feature_levels_text(levels: list[dict]) -> str:
    """The certificate's line on feature levels: the one set every run had, or each set with its run count."""
    if not levels:
        return "no run"
    said = [f"{g['label'] or 'not recorded (no KRaft metadata log read)'} ({g['runs']} run{'s' if g['runs'] != 1 else ''})"
            for g in levels]
    if len(said) == 1:
        return "every evidence run: " + said[0]
    return f"{len(said)} sets of levels: " + "; ".join(said)


def scope_text(scope: dict, decided: list[str], undecided: list[dict], not_applicable: list[dict]) -> str:
    """What the certificate covers, in words: which capabilities were selected, and exactly which
    were decided, undecided (with the causes) and not applicable (with why). It says "all" only of
    what was decided: never "all capabilities" while one was not decided."""
    if scope.get("complete"):
        head = f"every capability of this harness version was selected ({len(scope['capabilities'])})"
    else:
        head = "partial: " + ", ".join(scope["capabilities"]) + " only"
        if scope.get("scenarios"):
            head += f" (scenarios: {', '.join(scope['scenarios'])})"
    parts = [head]
    if scope.get("required"):
        parts.append("required: " + ", ".join(
            f"{n} ({'decided' if n in decided else 'NOT decided'})" for n in scope["required"]))
    if decided and not undecided and not not_applicable:
        parts.append(f"all {len(decided)} decided: {', '.join(decided)}")
    else:
        parts.append(f"decided ({len(decided)}): {', '.join(decided) or 'none'}")
    if undecided:
        parts.append(f"undecided ({len(undecided)}): "
                     + ", ".join(f"{u['name']} ({', '.join(u['causes'])})" for u in undecided))
    if not_applicable:
        parts.append(f"not applicable ({len(not_applicable)}): "
                     + ", ".join(f"{n['name']} ({n['reason']})" for n in not_applicable))
    return "; ".join(parts)
