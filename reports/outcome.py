"""What the report believes of a record's outcome: re-derived from its events, or stored and verified.

A record's ``verdict.json`` is a claim; its ``events.jsonl`` (and ``metadata.json``) are the evidence.
By default the report **re-derives** every record's outcome (verdict, cause, lost / duplicated /
inconsistent counts, conformance) from its events with the same pure checkers ``check`` and the runner
run (:func:`harness.checkers.verdict.decide`), and compares it with the stored verdict:

* the stored verdict names other digests than the files' (``evidence``, harness/record/writer.py):
  the record was changed after it was judged -> **tampered**, whatever the outcomes say;
* the outcomes disagree and the evidence names these files and this harness version: verdict.json
  was edited -> **tampered**;
* the outcomes disagree and the verdict has no evidence or was judged by another harness version
  -> **stale** (an older judgement the current checkers do not reproduce).

Either way the report counts the re-derived outcome, lists the record with what disagreed, and the
gate fails (``fail_on_tampered``). With ``trust_stored`` (``report --trust-stored``) the stored
verdict is used without re-deriving, but only where its evidence names exactly the record's digests
and this harness version; any other record is re-derived as above and its ``outcome`` says why.
Pure (no Spark): called per record by :func:`reports.summary.summarize`, on the driver or executors.
"""

from __future__ import annotations

from harness import __version__
from harness.checkers.verdict import Verdict, decide
from harness.record.read import RunRecord, digests, evidence_problems
from harness.record.verdicts import UNKNOWN

OUTCOME_FIELDS = ("stored_verdict", "tampered", "outcome")
# the outcome facts compared between the stored and the re-derived verdict (columns of the runs table)
COMPARED = ("verdict", "cause", "lost", "lost_allowed", "duplicates", "inconsistent_offsets")
STORED = "stored (evidence verified)"
REDERIVED = "re-derived"


def label(row: dict) -> str:
    return f"{row['verdict']}({row['cause']})" if row.get("cause") else str(row.get("verdict"))


def judge(row: dict, rec: RunRecord, files: dict[str, bytes | None], trust_stored: bool,
          fill_verdict, version: str = __version__) -> dict:
    """``row`` (the record's columns, its verdict columns from the stored verdict.json) with the verdict
    columns the report believes and :data:`OUTCOME_FIELDS`: ``stored_verdict`` (the stored label),
    ``tampered`` (None, or ``"tampered: ..."`` / ``"stale: ..."`` naming what disagreed), ``outcome``
    (where the verdict columns come from). ``fill_verdict(row, verdict_dict)`` sets the verdict columns
    (:func:`reports.parse.fill_verdict`)."""
    problems = evidence_problems(rec.verdict, digests(files), version)
    out = dict(row, stored_verdict=label(row), tampered=None)
    if trust_stored and not problems:
        out["outcome"] = STORED
        return out
    out["outcome"] = REDERIVED if not trust_stored else f"{REDERIVED} ({'; '.join(problems)})"
    try:
        derived = decide(rec.events, rec.metadata)
    except Exception as e:  # noqa: BLE001 - one record's checker error is that record's, not the report's
        derived = Verdict(UNKNOWN, f"a checker raised {e.__class__.__name__}: {str(e)[:200]}", "checker-error")
    fill_verdict(out, {"verdict": derived.verdict, "reason": derived.reason, "cause": derived.cause,
                       "checks": derived.checks})
    if derived.cause == "checker-error":
        out["outcome"] += " (a checker raised: the run counts as UNKNOWN)"
        return out
    changed = [p for p in problems if "sha256" in p]
    differ = [k for k in COMPARED if row.get(k) != out.get(k)
              and not (k == "cause" and row.get("cause") is None)]   # older records name no cause
    if not changed and not differ:
        return out
    parts = []
    if differ:
        facts = [f"{k} {row.get(k)} -> {out.get(k)}" for k in COMPARED[2:] if k in differ]
        parts.append(f"verdict.json says {label(row)}, the events give {label(out)}"
                     + (f" ({', '.join(facts)})" if facts else ""))
    parts += changed
    stale = not changed and any(p.startswith(("verdict.json has no evidence", "judged by harness")) for p in problems)
    if stale:
        parts += [p for p in problems if "sha256" not in p]
    out["tampered"] = ("stale: " if stale else "tampered: ") + "; ".join(parts)
    return out
