"""The verdict: one run record in, one classified verdict out.

Used by the runner when a run ends, by ``certify``, by the report and by re-judging stored records,
so every consumer of a run makes the same decision. Pure: events and metadata in, no I/O.

A verdict is a claim about the broker:

``PASS``
    every check the scenario names passed and the run covered what it claims.
``FAIL``
    a broker-observable fact broke a promise: a conformance rule id, lost / duplicated acknowledged
    writes, an expectation on broker state. Data loss found in the complete part of a record is
    FAIL whatever else went wrong.
``UNKNOWN``
    the run cannot decide, with a ``cause`` from :data:`harness.record.verdicts.CAUSES`: something went wrong in the
    harness or on the host, or the record does not hold enough to decide.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.checkers.coverage import check_coverage
from harness.checkers.durability import check_durability
from harness.checkers.groups import check_groups
from harness.checkers.share import check_share
from harness.checkers.txn import check_transactions
from harness.checkers.txn_epochs import check_txn_epochs

from harness.record import truth
from harness.record.events import (CLIENT, DOCKER_EVENT, EXPECT, PHASE, PHASE_ABORTED, PHASE_DRAIN_END,
                                   PHASE_ENVIRONMENT_ERROR, PHASE_PROGRESS_NOT_AWAITED, PHASE_RUN_END,
                                   PHASE_SCRIPT_FAILED)
from harness.record.facts import workload_kind
from harness.record.verdicts import CAUSES, CHECK_NAMES, FAIL, PASS, UNKNOWN, VERDICTS
from harness.record.windows import fault_windows


@dataclass
class Verdict:
    verdict: str
    reason: str
    cause: str | None = None          # for UNKNOWN only: a key of CAUSES
    checks: dict = field(default_factory=dict)
    coverage: dict | None = None
    applied: list[str] | None = None          # the checks judged (in verdict.json ``checks_applied``)
    not_applied: dict | None = None           # check asked for -> why it was not (``checks_not_applied``)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, not {self.verdict!r}")
        if self.verdict == UNKNOWN and self.cause not in CAUSES:
            raise ValueError(f"an UNKNOWN verdict needs a cause from {sorted(CAUSES)}, not {self.cause!r}")
        if self.verdict != UNKNOWN:
            self.cause = None

    def to_dict(self) -> dict:
        out = {"verdict": self.verdict, "reason": self.reason, "cause": self.cause, "checks": self.checks}
        if self.coverage is not None:
            out["coverage"] = self.coverage
        if self.applied is not None:
            out["checks_applied"] = self.applied
            out["checks_not_applied"] = self.not_applied or {}
        return out


DEFAULT_CHECKS = ("conformance", "durability", "expectations")

# Docker actions on a cluster container that stop or remove what is running there. One the harness did
# not cause (no fault of the nemesis covers that container then) is an environment failure.
_STOPPING_ACTIONS = {"kill": "container-stopped", "die": "container-stopped", "stop": "container-stopped",
                     "pause": "container-stopped", "oom": "container-stopped", "destroy": "container-removed"}
_WINDOW_SLACK_S = (1.0, 2.0)      # a Docker event this long before fault.start / after fault.end still counts


# -- what the record holds ---------------------------------------------------------------------------
def _phases(events: list[dict], *names: str) -> list[dict]:
    return [e for e in events if e.get("type") == PHASE and e.get("name") in names]


def record_complete(events: list[dict], metadata: dict) -> tuple[bool, str]:
    """Whether the record holds the whole run, and why not.

    Records written since the ``run.end`` marker (metadata ``record.end_marker``) are complete exactly
    when the marker is there. Older records are complete when they have no workload or a final read
    (``drain.end``), or ended by an environment failure that they record.
    """
    if (metadata.get("record") or {}).get("end_marker"):
        if _phases(events, PHASE_RUN_END):
            return True, ""
        last = events[-1] if events else None
        where = f"after event seq {last.get('seq')} at {last.get('t')} s" if last else "with no event"
        return False, f"the record has no run.end marker: its events stop {where}"
    if not metadata.get("workload") or _phases(events, PHASE_DRAIN_END, PHASE_ABORTED, PHASE_ENVIRONMENT_ERROR):
        return True, ""
    return False, "the record has a workload but no final read (drain.end) and no recorded end"


def _fault_windows(events: list[dict]) -> dict[str, list[tuple[float, float]]]:
    """Container name -> [(wall start, wall end)] of every fault the nemesis applied to it (a fault never
    ended: open until the record's end)."""
    out: dict[str, list[tuple[float, float]]] = {}
    last_wall = max((e.get("wall") or 0.0 for e in events), default=0.0)
    for w in fault_windows(events, match="open"):
        end = (w.end.get("wall") or last_wall) if w.end is not None else float("inf")
        for n in w.nodes:
            out.setdefault(n, []).append((w.start.get("wall") or 0.0, end))
    return out


def environment_failures(events: list[dict]) -> list[tuple[str, str]]:
    """``(cause, text)`` for everything in the record that went wrong outside the broker: failures the
    runner recorded (``environment.error`` / ``aborted`` phases, with their ``cause``) and Docker events
    on the cluster's containers that no fault of the nemesis explains."""
    out: list[tuple[str, str]] = []
    for e in _phases(events, PHASE_ENVIRONMENT_ERROR, PHASE_ABORTED):
        cause = e.get("cause") or ("aborted" if e.get("name") == PHASE_ABORTED else "environment")
        out.append((cause if cause in CAUSES else "environment", str(e.get("error") or e.get("name"))))
    windows = _fault_windows(events)
    before, after = _WINDOW_SLACK_S
    seen: set[tuple[str, str]] = set()
    for e in events:
        if e.get("type") != DOCKER_EVENT or e.get("action") not in _STOPPING_ACTIONS:
            continue
        name, action, w = e.get("container"), e.get("action"), e.get("wall_docker") or e.get("wall") or 0.0
        # no fault removes a container (the harness removes them after the record ends): a removal is never
        # explained by a fault window, not even one of a kill on that very container
        if action != "destroy" and any(s - before <= w <= end + after for s, end in windows.get(name, [])):
            continue
        if e.get("by_harness"):
            continue
        if e.get("role") == "client":   # a workload's client container (java-txn): its instances are its events
            continue
        cause = _STOPPING_ACTIONS[action]
        if (name, cause) in seen:
            continue
        seen.add((name, cause))
        what = {"destroy": "removed", "pause": "paused", "oom": "killed for memory (OOM)"}.get(action, "stopped")
        detail = f" (exit code {e['exit_code']})" if e.get("exit_code") not in (None, "") else ""
        why = "no fault removes a container" if action == "destroy" else "no fault was applied to it then"
        out.append((cause, f"container {name} was {what}{detail} at {e.get('t')} s by something other than "
                           f"the harness ({why})"))
    # the runner found a container gone after healing and skipped the full-ISR wait: the run is undecided on
    # that alone, whether or not the Docker events watcher saw the removal
    if not any(c == "container-removed" for c, _ in out):
        out += [("container-removed", f"{e.get('reason')} (found after healing; the full ISR was not awaited)")
                for e in _phases(events, PHASE_PROGRESS_NOT_AWAITED)][:1]
    # a removal explains the stop that preceded it: report the removal first
    out.sort(key=lambda ct: ct[0] != "container-removed")
    return out


def script_failures(events: list[dict]) -> tuple[list[str], list[str]]:
    """``(expectation failures, script errors)`` the runner recorded as ``script.failed`` phases."""
    exp, err = [], []
    for e in _phases(events, PHASE_SCRIPT_FAILED):
        (exp if e.get("kind") == "expectation" else err).append(str(e.get("error")))
    return exp, err


def expectations_from(events: list[dict]) -> list[dict]:
    """The scenario's expectations as recorded (``expect`` events)."""
    return [{k: e.get(k) for k in ("what", "ok", "waited_s", "detail", "rule") if k in e}
            for e in events if e.get("type") == EXPECT]


def conformance_input(events: list[dict]) -> list[dict]:
    """Ground-truth zk.* events (from the txn log) when present, else the watcher's; plus non-zk events.

    With the txn log the history is complete, so the watcher's gap markers (and the reconciliation's
    "filled" markers) are left out; without it, the watcher's gaps tell the checker what was skipped.
    """
    return truth.ground_truth(events, strict_watch=True, drop_gaps=True)


# -- the decision ------------------------------------------------------------------------------------
def decide(events, metadata: dict, *, checks=None, expectations: list[dict] | None = None,
           script_error: str | None = None) -> Verdict:
    """Judge one run record: its events (in ``seq`` order) and metadata → :class:`Verdict`.

    Everything the decision needs is in the record: the checks the scenario names (metadata
    ``checks``), its expectations (``expect`` events) and script failures (``script.failed``),
    environment failures (``environment.error`` / ``aborted`` phases, unexplained ``docker.event``\\ s)
    and whether the record is complete (``run.end``). ``checks`` / ``expectations`` / ``script_error``
    override what the record says (for re-judging a modified copy).

    ``transactions`` (a record whose workload has ``kind: "txn"``) is judged by
    :func:`harness.checkers.txn.check_transactions`: its FAIL counts as data loss does, its UNKNOWN as
    undecided. ``groups`` (a record whose workload has ``kind: "group"``) is judged the same way by
    :func:`harness.checkers.groups.check_groups`.

    Order of precedence: durability violations are FAIL whatever else happened (data loss is never
    UNKNOWN); other broker findings (conformance rules, expectations on broker state) are FAIL unless
    an environment failure could explain them; then UNKNOWN for an environment failure, an incomplete
    record, a script error, a workload that did not cover the run, or a check the history cannot decide.
    """
    from reference import check_conformance     # the model is imported only when a record is judged

    events = list(events)
    wanted = tuple(checks or metadata.get("checks") or DEFAULT_CHECKS)
    complete, incomplete_why = record_complete(events, metadata)
    env = environment_failures(events)
    exp_failed, script_errors = script_failures(events)
    if script_error:
        exp_failed = [script_error]
    out: dict = {}
    data_fail: list[str] = []     # durability: never UNKNOWN
    broker_fail: list[str] = []   # conformance and expectations: FAIL unless the environment explains them
    undecided: list[str] = []

    if "conformance" in wanted:
        res = check_conformance(conformance_input(events), metadata, metadata.get("profile"))
        out["conformance"] = res.to_dict()
        if res.verdict != PASS:
            first = res.invariant_violations or res.divergences
            broker_fail.append("conformance: " + (f"{first[0].rule} {first[0].explanation}" if first else res.verdict))
    def data_check(name: str, check) -> None:
        """A check of the data the clients wrote and read: its FAIL is data loss (never UNKNOWN)."""
        r = out[name] = check(events, metadata)
        if r["verdict"] == FAIL:
            bad = [k for k, v in r["checks"].items() if v.get("verdict") == FAIL]
            data_fail.append(f"{name}: {', '.join(bad)}")
        elif r["verdict"] == UNKNOWN:
            undecided.append(f"{name} undecided: " + r.get("reason", ""))

    if "durability" in wanted and metadata.get("workload"):
        data_check("durability", check_durability)
    # the transactional workload (kind "txn", docs/transactions.md): a FAIL is the broker's, like durability
    if "transactions" in wanted and workload_kind(metadata) == "txn":
        data_check("transactions", check_transactions)
    # the consumer-group workload (kind "group"): a committed offset going back or a skip is data loss too
    if "groups" in wanted and workload_kind(metadata) == "group":
        data_check("groups", check_groups)
    # the share-group workload (kind "share", docs/share-groups.md): a lost or doubly held record is the broker's
    if "share" in wanted and workload_kind(metadata) == "share":
        data_check("share", check_share)
    # the Java transactional workload (kind "java-txn"): epochs per transaction read from the log (transactions v2)
    if "txn-epochs" in wanted and workload_kind(metadata) == "java-txn":
        data_check("txn-epochs", check_txn_epochs)
    # what the run exercised, judged against the scenario's needs (metadata coverage_needs; coverage.py)
    coverage = check_coverage(events, metadata) if metadata.get("workload") else None
    if "expectations" in wanted:
        items = expectations if expectations is not None else expectations_from(events)
        bad = [e for e in items if not e.get("ok")]
        failed = bool(bad or exp_failed)
        out["expectations"] = {"verdict": FAIL if failed else PASS, "items": items,
                               "error": exp_failed[0] if exp_failed else None}
        if failed:
            broker_fail.append("expectation: " + (exp_failed[0] if exp_failed else str(bad[0].get("what"))))

    applied, skipped, unchecked = checks_applied(wanted, out, events, metadata)

    def verdict(v: str, text: str, cause: str | None = None) -> Verdict:
        return Verdict(v, text + unchecked, cause, out, coverage, applied, skipped)

    def unknown(cause: str, text: str) -> Verdict:
        also = f" (also seen, not judged because of this: {'; '.join(broker_fail)})" if broker_fail else ""
        return verdict(UNKNOWN, text + also, cause)

    if data_fail:
        extra = [f"{c}: {t}" for c, t in env] + ([incomplete_why] if not complete else [])
        note = f" (the run also had: {'; '.join(extra)})" if extra else ""
        return verdict(FAIL, "; ".join(data_fail + broker_fail) + note)
    if env:
        cause, text = env[0]
        return unknown(cause, text)
    if broker_fail:
        return verdict(FAIL, "; ".join(broker_fail))
    if not complete:
        return verdict(UNKNOWN, incomplete_why, "record-incomplete")
    if script_errors:
        return verdict(UNKNOWN, f"the scenario script failed: {script_errors[0]}", "script")
    if coverage is not None and coverage["verdict"] != PASS:
        return verdict(UNKNOWN, "the workload did not cover the run: " + coverage["reason"], "workload")
    if undecided:
        return verdict(UNKNOWN, "; ".join(undecided), "undecided")
    return verdict(PASS, "all checks passed")


DATA_CHECKS = ("durability", "transactions", "groups", "share", "txn-epochs")    # checks of the data the clients wrote and read


def checks_applied(wanted, out: dict, events: list[dict], metadata: dict) -> tuple[list[str], dict, str]:
    """``(checks applied, {check asked for but not applied: why}, note)``: ``note`` (for the reason) when no
    check of the data was applied although the run has acknowledged writes, else ``""``."""
    applied = [c for c in CHECK_NAMES if c in out]
    kind = workload_kind(metadata) or "plain"
    why = {"durability": "metadata.json has no workload",
           "transactions": f"the workload's kind is {kind}, not txn",
           "groups": f"the workload's kind is {kind}, not group",
           "share": f"the workload's kind is {kind}, not share",
           "txn-epochs": f"the workload's kind is {kind}, not java-txn"}
    skipped = {c: why.get(c, "not applied") for c in wanted if c not in out}
    if any(c in out for c in DATA_CHECKS):
        return applied, skipped, ""
    acked = sum(1 for e in events if e.get("type") == CLIENT and e.get("f") == "send" and e.get("phase") == "ok")
    if not acked:
        return applied, skipped, ""
    reason = skipped.get("durability", "the record's checks do not name it")
    return applied, skipped, f" (no durability check applied: {reason}; {acked} acknowledged write(s) not checked)"
