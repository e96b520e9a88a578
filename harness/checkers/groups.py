"""Consumer-group checks over a run record: committed offsets going backwards, records skipped
between a commit and the next owner's first fetch, records consumed twice in one generation, and
rebalance time (a measurement, not a verdict). Pure: no I/O, no clock.

Entry point: :func:`check_groups` (``events`` from ``events.jsonl``, the run's ``metadata.json``).
The history format (``group.assign``, ``group.revoke``, ``group.poll``, ``group.commit``,
``group.committed``) is in ``docs/transactions.md``. The result has the shape of
``check_durability``'s; check verdicts are PASS / FAIL / UNKNOWN / ALLOWED.

- ``offset-regression``: the group's committed offset for a partition, as the broker hands it out
  (the first fetch of a member newly assigned the partition, or a ``group.committed`` read back),
  is below an offset whose commit was acknowledged before that member was assigned (or the read
  began), and no later commit attempt moved it back. FAIL.
- ``group-skip``: a newly assigned member's first fetch lies beyond every offset ever committed
  before it, and records in between were consumed by no member of the group. FAIL.
- ``double-consume``: two members consumed the same record in the same (non-null) generation. FAIL.
- ``group-nonmonotonic-poll``: a member read a partition backwards without a new assignment. FAIL.
- ``rebalances``: per generation, from the first sign of a rebalance (a revoke, a member's death)
  to the last assignment of the new generation. Always PASS; the figures are the point.
"""

from __future__ import annotations

import bisect
import math
from typing import Iterable

from harness.checkers.common import check_result, gc_paused, malformed, merge_options
from harness.record.verdicts import ALLOWED, FAIL, PASS, UNKNOWN
from harness.checkers.config import RunFacts, parse_bool

__all__ = ["ALLOWED", "CHECK_ORDER", "DEFAULT_OPTIONS", "FAIL", "PASS", "UNKNOWN", "GroupHistory", "check_groups"]

DEFAULT_OPTIONS = {"max_examples": 20}
CHECK_ORDER = ("offset-regression", "group-skip", "double-consume", "group-nonmonotonic-poll", "rebalances")
DEATHS = ("died", "stopped", "stalled", "fatal")


def _tp(x) -> tuple:
    if isinstance(x, dict):
        return (x["topic"], x["partition"])
    return (x[0], x[1])


def check_groups(events: Iterable[dict], metadata: dict, options: dict | None = None) -> dict:
    """Judge the consumer-group part of a run. ``applicable`` is False (and the verdict PASS with
    no checks) when the record holds no ``group.*`` event."""
    opts = merge_options(DEFAULT_OPTIONS, options, "group-check")
    facts = RunFacts(metadata)
    with gc_paused():
        h = GroupHistory().run(events)
        if not h.n_group_events:
            return {"verdict": PASS, "applicable": False, "checks": {}, "stats": h.stats(),
                    "reason": "no consumer-group events (group.*) in the record: nothing to check"}
        return _Judge(h, facts, int(opts["max_examples"])).result()


class GroupHistory:
    """State of one pass over the events."""

    def __init__(self):
        self.n_group_events = 0
        self.n_poll = 0
        self.member_group: dict = {}  # process -> group
        self.assigns: list = []  # (t, group, process, generation, [tp])
        self.revokes: list = []  # (t, group, process, generation, [tp], lost)
        self.deaths: list = []  # (t, process, state)
        self.commits: dict = {}  # (group, tp) -> [(t_invoke, t_ok | None, offset, process, phase)]
        self.observed: list = []  # (t_invoke, t, group, tp, offset, process, source)
        self.pending_first: dict = {}  # (process, tp) -> (group, assign t, generation): awaiting a first poll
        self.consumed: dict = {}  # (group, tp) -> {(offset, generation): first process to consume it}
        self.double: list = []  # (group, tp, offset, first (process, gen), again (process, gen))
        self.backs: list = []  # (process, group, tp, prev, cur)
        self.known: dict = {}  # tp -> set of offsets known to hold records (polls, acknowledged sends)
        self.last: dict = {}  # (process, tp) -> last offset polled since the last assignment

    def stats(self) -> dict:
        return {"group_events": self.n_group_events, "polls": self.n_poll, "members": len(self.member_group),
                "groups": len(set(self.member_group.values())), "assignments": len(self.assigns),
                "revocations": len(self.revokes),
                "commits": sum(len(v) for v in self.commits.values())}

    def run(self, events) -> "GroupHistory":
        inv: dict = {}  # (process, op_id) -> invoke time of a commit
        ev: dict = {}
        consumed, known, last = self.consumed, self.known, self.last
        try:
            for ev in events:
                typ = ev["type"]
                if typ == "group.poll":
                    self.n_poll += 1
                    self.n_group_events += 1
                    proc, group, gen = ev["process"], ev["group"], ev.get("generation")
                    tp = (ev["topic"], ev["partition"])
                    off = ev["offset"]
                    s = known.get(tp)
                    if s is None:
                        s = known[tp] = set()
                    s.add(off)
                    d = consumed.get((group, tp))
                    if d is None:
                        d = consumed[(group, tp)] = {}
                    first = d.setdefault((off, gen), proc)  # the first consumer of the record in this generation
                    if first != proc and gen is not None:
                        self.double.append((group, tp, off, (first, gen), (proc, gen)))
                    k = (proc, tp)
                    prev = last.get(k)
                    if prev is not None and off <= prev:
                        self.backs.append((proc, group, tp, prev, off))
                    last[k] = off
                    pf = self.pending_first.pop(k, None)
                    if pf is not None:
                        self.observed.append((pf[1], ev["t"], pf[0], tp, off, proc, "first-fetch"))
                elif typ == "group.assign" or typ == "group.revoke":
                    self.n_group_events += 1
                    proc, group, gen = ev["process"], ev["group"], ev.get("generation")
                    self.member_group[proc] = group
                    tps = [_tp(x) for x in ev.get("partitions") or ()]
                    if typ == "group.assign":
                        self.assigns.append((ev["t"], group, proc, gen, tps))
                        for tp in tps:
                            self.pending_first[(proc, tp)] = (group, ev["t"], gen)
                            last.pop((proc, tp), None)
                    else:
                        self.revokes.append((ev["t"], group, proc, gen, tps, bool(ev.get("lost"))))
                        for tp in tps:
                            self.pending_first.pop((proc, tp), None)
                            last.pop((proc, tp), None)
                elif typ == "group.commit":
                    self.n_group_events += 1
                    phase = ev.get("phase", "ok")
                    key = (ev["process"], ev.get("op_id"))
                    tp = (ev["topic"], ev["partition"])
                    if phase == "invoke":
                        inv[key] = (ev["t"], ev["group"], tp, int(ev["offset"]))
                        continue
                    rec = inv.pop(key, None)
                    t_inv = rec[0] if rec is not None else ev["t"]
                    off = ev.get("offset")
                    off = int(off) if off is not None else rec[3]
                    self.commits.setdefault((ev["group"], tp), []).append(
                        (t_inv, ev["t"] if phase == "ok" else None, off, ev["process"], phase))
                elif typ == "group.committed":
                    self.n_group_events += 1
                    if ev.get("offset") is None or ev["offset"] < 0:
                        continue  # no committed offset
                    self.observed.append((ev.get("invoke_t", ev["t"]), ev["t"], ev["group"],
                                          (ev["topic"], ev["partition"]), int(ev["offset"]), ev.get("process"),
                                          "committed"))
                elif typ == "client.life":
                    if ev.get("state") in DEATHS:
                        self.deaths.append((ev["t"], ev.get("process"), ev.get("state")))
                elif typ == "client" and ev.get("f") == "send" and ev.get("phase") == "ok":
                    if ev.get("offset") is not None and ev["offset"] >= 0:
                        known.setdefault((ev["topic"], ev["partition"]), set()).add(ev["offset"])
        except (KeyError, TypeError, ValueError) as e:
            raise malformed(ev, e) from None
        for (proc, _op), (t_inv, group, tp, off) in inv.items():  # never completed: outcome unknown
            self.commits.setdefault((group, tp), []).append((t_inv, None, off, proc, "unfinished"))
        return self


class _Judge:
    def __init__(self, h: GroupHistory, facts: RunFacts, k: int):
        self.h, self.facts, self.k = h, facts, k

    def allowance(self, tp) -> str | None:
        """Unclean elections may roll back ``__consumer_offsets`` or the data partition itself."""
        if parse_bool(self.facts.broker_config.get("unclean.leader.election.enable")):
            return "unclean.leader.election.enable=true (broker)"
        if self.facts.unclean_enabled(tp[0]):
            return "unclean.leader.election.enable=true"
        return None

    def verdict(self, fail: list, allowed: list, what: str) -> dict:
        return check_result(fail, allowed, what, self.k)

    def offsets(self) -> tuple[dict, dict]:
        """offset-regression and group-skip from every observation of a committed offset."""
        h = self.h
        reg_f, reg_a, skip_f, skip_a = [], [], [], []
        by_key: dict = {}
        for key, lst in h.commits.items():
            acked = sorted((c for c in lst if c[1] is not None), key=lambda c: c[1])
            attempts = sorted(lst)
            by_key[key] = (acked, [c[1] for c in acked], attempts, [c[0] for c in attempts])
        group_consumed = h.consumed
        for t_from, t_obs, group, tp, off, proc, source in h.observed:
            entry = by_key.get((group, tp))
            if entry is None:
                continue  # nothing committed: the reset policy decides where a member starts
            acked, ack_ts, attempts, inv_ts = entry
            n_acked = bisect.bisect_left(ack_ts, t_from)
            d = {"group": group, "topic": tp[0], "partition": tp[1], "process": proc, "observed_offset": off,
                 "source": source, "from_t": t_from, "t": t_obs}
            why = self.allowance(tp)
            if why:
                d["allowed_by"] = why
            if n_acked:
                best = max(acked[:n_acked], key=lambda c: c[2])
                later = attempts[bisect.bisect_right(inv_ts, best[1]): bisect.bisect_right(inv_ts, t_obs)]
                if off < best[2] and not any(c[2] <= off for c in later):
                    d.update(committed_offset=best[2], committed_by=best[3], committed_t=best[1])
                    (reg_a if why else reg_f).append(dict(d))
            if source != "first-fetch":
                continue
            before = attempts[: bisect.bisect_right(inv_ts, t_obs)]
            if not before:
                continue
            cmax = max(c[2] for c in before)
            if off > cmax:
                seen = {o for o, _gen in group_consumed.get((group, tp), ())}
                known = h.known.get(tp, ())
                skipped = sorted(o for o in known if cmax <= o < off and o not in seen)
                if skipped:
                    d.update(highest_commit=cmax, skipped=len(skipped), skipped_offsets=skipped[:10])
                    (skip_a if why else skip_f).append(d)
        return (self.verdict(reg_f, reg_a, "committed offsets handed out below an acknowledged commit "
                             "(offset-regression)"),
                self.verdict(skip_f, skip_a, "first fetches after a commit that jumped over records no member "
                             "consumed (group-skip)"))

    def double_consume(self) -> dict:
        fail, allowed = [], []
        for group, tp, off, first, again in self.h.double:
            d = {"group": group, "topic": tp[0], "partition": tp[1], "offset": off, "generation": first[1],
                 "members": [first[0], again[0]]}
            why = self.allowance(tp)
            if why:
                d["allowed_by"] = why
            (allowed if why else fail).append(d)
        return self.verdict(fail, allowed, "records consumed by two members of one generation (double-consume)")

    def backwards(self) -> dict:
        fail, allowed = [], []
        for proc, group, tp, prev, cur in self.h.backs:
            d = {"process": proc, "group": group, "topic": tp[0], "partition": tp[1], "offset": cur,
                 "previous_offset": prev}
            why = self.allowance(tp)
            if why:
                d["allowed_by"] = why
            (allowed if why else fail).append(d)
        return self.verdict(fail, allowed, "polls going back without a new assignment (group-nonmonotonic-poll)")

    def rebalances(self) -> dict:
        """Per group and generation (or per assignment when generations are unknown): from the first
        revoke or member death since the previous round to the round's last assignment."""
        h = self.h
        rounds: dict = {}  # (group, generation or seq) -> [first assign t, last assign t]
        for n, (t, group, _proc, gen, _tps) in enumerate(h.assigns):
            key = (group, gen if gen is not None else f"#{n}")
            r = rounds.get(key)
            if r is None:
                rounds[key] = [t, t]
            else:
                r[1] = max(r[1], t)
        triggers: dict = {}
        for t, group, proc, _gen, _tps, lost in h.revokes:
            triggers.setdefault(group, []).append((t, "revoke" + (" (lost)" if lost else ""), proc))
        for t, proc, state in h.deaths:
            group = h.member_group.get(proc)
            if group is not None:
                triggers.setdefault(group, []).append((t, f"member {state}", proc))
        out = []
        prev_end: dict = {}
        for (group, gen), (t0, t1) in sorted(rounds.items(), key=lambda kv: kv[1][0]):
            since = prev_end.get(group, -math.inf)
            trig = [x for x in triggers.get(group, ()) if since < x[0] <= t0]
            prev_end[group] = t1
            if not trig:
                continue  # a first join, not a rebalance
            start = min(trig)
            out.append({"group": group, "generation": gen if not str(gen).startswith("#") else None,
                        "start": start[0], "end": t1, "seconds": round(t1 - start[0], 6),
                        "trigger": start[1], "trigger_process": start[2]})
        secs = sorted(r["seconds"] for r in out)
        summary = {"count": len(secs), "max_s": secs[-1] if secs else None,
                   "median_s": secs[len(secs) // 2] if secs else None}
        return {"verdict": PASS, "count": len(out), "measurement": True, **summary,
                "reason": (f"{len(out)} rebalances, longest {summary['max_s']} s" if out else "no rebalance"),
                "examples": out[: self.k], "rebalances": out}

    def result(self) -> dict:
        checks = {}
        checks["offset-regression"], checks["group-skip"] = self.offsets()
        checks["double-consume"] = self.double_consume()
        checks["group-nonmonotonic-poll"] = self.backwards()
        checks["rebalances"] = self.rebalances()
        checks = {n: checks[n] for n in CHECK_ORDER}
        failed = [n for n, c in checks.items() if c["verdict"] == FAIL]
        if failed:
            verdict, reason = FAIL, "; ".join(f"{n}: {checks[n]['reason']}" for n in failed)
        else:
            verdict, reason = PASS, "no consumer-group anomaly the configuration forbids"
        stats = self.h.stats()
        stats["rebalance_max_s"] = checks["rebalances"]["max_s"]
        return {"verdict": verdict, "applicable": True, "reason": reason, "checks": checks, "stats": stats}
