"""Transaction checks over a run record: aborted reads, lost and torn transactions, zombie writes,
exactly-once duplicates and dependency cycles (Elle style). Pure: no I/O, no clock.

Entry point: :func:`check_transactions` (``events`` from ``events.jsonl``, the run's
``metadata.json``). The history format (``txn``, ``txn.init``, ``txn.poll``, ``txn.fenced``) and
the meaning of every check are in ``docs/transactions.md``. The result has the shape of
``check_durability``'s: ``{"verdict", "reason", "checks": {name: {"verdict", "count",
"examples", "reason", ...}}, "stats"}``; check verdicts are PASS / FAIL / UNKNOWN / ALLOWED.

Anomalies and their verdicts (Kafka's transaction model: read_committed readers see only
committed transactions, each transaction atomically; writes are *not* isolated from each other):

- ``G1a`` aborted read: a read_committed reader saw a write of an aborted transaction. FAIL.
- ``lost-write``: a committed transaction's write never read although a reader read past its offset.
- ``torn-transaction``: some writes of a transaction were read, others were read past and never seen.
- ``poll-skip`` / ``intermediate-read``: one reader jumped over a visible record (intermediate: of a
  transaction it read another part of). ``nonmonotonic-poll``: a reader went back.
- ``duplicate``, ``inconsistent-offsets``, ``int-nonmonotonic-send``, ``unexpected-value``.
- ``eos-duplicate``: one input record consumed by two committed consume-transform-produce transactions.
- ``zombie``: a transaction begun after a newer producer initialised the same ``transactional.id``
  committed, or its writes became visible.
- ``G1c``: a cycle of write-read and process-order dependencies (commit order contradicts itself),
  including a transaction reading its own write (precommitted read). FAIL.
- ``G0-realtime``: a transaction begun after another committed wrote earlier in a shared partition. FAIL.
- ``ww-cycles``: cycles that need write-write (log order) edges, ``G0`` (ww only) and ``G1c-ww``;
  normal in Kafka (concurrent transactions interleave in each partition), so ALLOWED unless the
  option ``isolated_writes`` says the broker promises otherwise.
"""

from __future__ import annotations

import bisect
from typing import Iterable

from harness.checkers.common import check_result, gc_paused, merge_options, overall
from harness.checkers.common import pos as _pos
from harness.checkers.config import RunFacts
from harness.record.facts import normalize_acks
from harness.record.verdicts import ALLOWED, FAIL, PASS, UNKNOWN
from harness.checkers.cycles import GraphChecks
from harness.checkers.txn_history import ABORTED, COMMITTED, UNSURE, TxnHistory

__all__ = ["ABORTED", "ALLOWED", "CHECK_ORDER", "COMMITTED", "DEFAULT_OPTIONS", "FAIL", "PASS", "UNKNOWN", "UNSURE",
           "TxnHistory", "check_transactions"]

DEFAULT_OPTIONS = {
    "max_examples": 20,  # examples kept per check
    "isolated_writes": False,  # True: G0 / G1c-ww cycles FAIL (a broker that serialises transactions)
    "cycle_tries": 8,  # start nodes per component for the shortest-cycle search
    "max_cycle_components": 1000,  # components whose shortest cycle is searched (all are counted)
}

CHECK_ORDER = ("G1a", "lost-write", "torn-transaction", "intermediate-read", "poll-skip", "nonmonotonic-poll",
               "duplicate", "inconsistent-offsets", "int-nonmonotonic-send", "unexpected-value", "eos-duplicate",
               "zombie", "G1c", "G0-realtime", "ww-cycles", "unseen")


def check_transactions(events: Iterable[dict], metadata: dict, options: dict | None = None) -> dict:
    """Judge the transactional part of a run. ``applicable`` is False (and the verdict PASS with
    no checks) when the record holds no ``txn`` / ``txn.poll`` event."""
    opts = merge_options(DEFAULT_OPTIONS, options, "transaction-check")
    facts = RunFacts(metadata)
    with gc_paused():
        h = TxnHistory(facts)
        h.run(events)
        if not h.n_txn and not h.n_txn_poll:
            return {"verdict": PASS, "applicable": False, "checks": {}, "stats": h.stats(),
                    "reason": "no transaction events (txn, txn.poll) in the record: nothing to check"}
        return _Judge(h, facts, opts).result()


class _Judge(GraphChecks):
    def __init__(self, h: TxnHistory, facts: RunFacts, opts: dict):
        self.h = h
        self.facts = facts
        self.opts = opts
        self.k = int(opts["max_examples"])
        self._unclean: dict = {}
        self.expected_isolation = h.expected_isolation
        # visible[i]: the transaction committed, or its outcome was unsure and a write of it was read
        st = h.status
        self.visible = [s == COMMITTED for s in st]
        read_at, writer = h.read_at, h.writer
        for i, s in enumerate(st):
            if s == UNSURE:  # seen by a read_committed reader: it committed
                self.visible[i] = any(v in read_at and self.read_committed(read_at[v][2]) for v in h.writes[i])
        # reads whose position no transactional send reported (non-transactional writers, sends
        # without offsets) also mark offsets that readers must not jump over
        self.extra_visible = any(v < 0 for v in writer.values()) or len(h.wpos) < len(writer)

    # -- helpers -----------------------------------------------------------------------------
    def txn(self, i: int) -> dict:
        h = self.h
        status = {COMMITTED: "committed", ABORTED: "aborted", UNSURE: "unsure"}[h.status[i]]
        d = {"process": h.proc[i], "op_id": h.op_id[i], "status": status}
        if h.tid[i] is not None:
            d["transactional_id"] = h.tid[i]
        return d

    def unclean(self, tp) -> str | None:
        on = self._unclean.get(tp[0])
        if on is None:
            on = self._unclean[tp[0]] = self.facts.unclean_enabled(tp[0])
        return "unclean.leader.election.enable=true" if on else None

    def lossy(self, i: int, tp) -> str | None:
        """Why the configuration permits losing or reordering this write, if it does."""
        if i is not None and i >= 0:
            cfg = self.h.producer_cfg.get(self.h.proc[i]) or {}
            acks = normalize_acks(cfg.get("acks", self.facts.workload.get("acks")))
            if acks in ("0", "1"):
                return f"acks={acks}"
        return self.unclean(tp)

    def read_committed(self, proc) -> bool:
        if self.expected_isolation:
            return self.expected_isolation == "read_committed"
        cfg = self.h.consumer_cfg.get(proc) or {}
        return str(cfg.get("isolation.level", "read_committed")) == "read_committed"

    def verdict(self, fail: list, allowed: list, what: str, **extra) -> dict:
        return check_result(fail, allowed, what, self.k, **extra)

    # -- checks ------------------------------------------------------------------------------
    def aborted_reads(self) -> dict:
        h = self.h
        fail, allowed = [], []
        status, writer, read_at = h.status, h.writer, h.read_at
        for i, w in enumerate(h.writes):
            if status[i] != ABORTED:
                continue
            for value in w:
                at = read_at.get(value)
                if at is None:
                    continue
                tp, off, proc = at
                d = {"value": value, **_pos(tp, off), "reader": proc, "writer": self.txn(i)}
                if self.read_committed(proc):
                    fail.append(d)
                else:
                    d["allowed_by"] = "isolation.level=read_uncommitted"
                    allowed.append(d)
        for r, reads in enumerate(h.reads):
            for tp, off, value in reads or ():
                i = writer.get(value)
                if i is not None and i >= 0 and status[i] == ABORTED:
                    fail.append({"value": value, **_pos(tp, off), "reader_txn": self.txn(r), "writer": self.txn(i)})
        return self.verdict(fail, allowed, "reads of writes from aborted transactions (G1a)")

    def missing_writes(self) -> tuple[dict, dict, dict]:
        """lost-write, torn-transaction and unseen from the committed (or seen) transactions' writes."""
        h = self.h
        read_at, wpos, ends = h.read_at, h.wpos, h.ends
        visible = self.visible
        covered = self._coverage()
        lost_f, lost_a, torn_f, torn_a, unseen = [], [], [], [], []
        for i, w in enumerate(h.writes):
            if not visible[i] or not w:
                continue
            missing = []
            seen = 0
            for value in w:
                if value in read_at:
                    seen += 1
                    continue
                p = wpos.get(value)
                if p is None:
                    unseen.append({"value": value, "writer": self.txn(i), "offset": None})
                    continue
                tp, off = p
                end = ends.get(tp)
                if (end is not None and off < end) or covered(tp, off):
                    missing.append((value, tp, off))
                else:
                    unseen.append({"value": value, **_pos(tp, off), "writer": self.txn(i)})
            if not missing:
                continue
            why = next((self.lossy(i, tp) for _, tp, _ in missing if self.lossy(i, tp)), None)
            d = {"writer": self.txn(i), "missing": [{"value": v, **_pos(tp, o)} for v, tp, o in missing[:10]],
                 "missing_count": len(missing), "seen": seen, "writes": len(w)}
            if why:
                d["allowed_by"] = why
            if seen:
                (torn_a if why else torn_f).append(d)
            else:
                (lost_a if why else lost_f).append(d)
        lost = self.verdict(lost_f, lost_a, "committed transactions none of whose writes was read though readers "
                            "read past them (lost-write)")
        torn = self.verdict(torn_f, torn_a, "transactions partially visible: some writes read, others read past "
                            "and never seen (torn-transaction)")
        if unseen and not h.ends and h.drain_t is None:
            v, why = UNKNOWN, (f"{len(unseen)} committed writes lie beyond every read and there was no final "
                               "drain: whether they were lost cannot be judged")
        elif unseen:
            v, why = UNKNOWN, (f"{len(unseen)} committed writes lie at or beyond the final drain's end offsets "
                               "(or have no offset): drain again after healing")
        else:
            v, why = PASS, "every committed write lies within the range read"
        return lost, torn, {"verdict": v, "count": len(unseen), "reason": why, "examples": unseen[: self.k]}

    def skips(self) -> tuple[dict, dict, dict]:
        """poll-skip and intermediate-read from each reader's runs through a partition; nonmonotonic-poll."""
        h = self.h
        vis_offsets = self.vis_offsets
        flagged = set()
        for proc, tp, first, last, n in h.segments:
            vis = vis_offsets.get(tp)
            if vis and bisect.bisect_right(vis, last) - bisect.bisect_left(vis, first) > n:
                flagged.add((proc, tp))
        skip_f, skip_a, inter_f, inter_a = [], [], [], []
        if flagged:
            readers_of = self._readers_by_txn()
            status, writer, visible = h.status, h.writer, self.visible
            for proc, tp, prev, cur in h.gaps:
                if (proc, tp) not in flagged:
                    continue
                known = h.pos.get(tp) or {}
                vis = vis_offsets.get(tp) or []
                for o in vis[bisect.bisect_right(vis, prev): bisect.bisect_left(vis, cur)]:
                    value = known.get(o)
                    i = writer.get(value)
                    if i is not None and i >= 0 and (status[i] == ABORTED or not visible[i]):
                        continue
                    d = {"reader": proc, "value": value, **_pos(tp, o), "previous_offset": prev, "next_offset": cur}
                    if i is not None and i >= 0:
                        d["writer"] = self.txn(i)
                    why = self.unclean(tp)
                    if why:
                        d["allowed_by"] = why
                    if i is not None and i >= 0 and proc in readers_of.get(i, ()):
                        (inter_a if why else inter_f).append(d)
                    else:
                        (skip_a if why else skip_f).append(d)
        back_f, back_a = [], []
        for proc, tp, prev, cur in h.backs:
            d = {"reader": proc, **_pos(tp, cur), "previous_offset": prev}
            why = self.unclean(tp)
            if why:
                d["allowed_by"] = why
            (back_a if why else back_f).append(d)
        return (self.verdict(skip_f, skip_a, "visible records a reader jumped over (poll-skip)"),
                self.verdict(inter_f, inter_a, "records a reader jumped over in a transaction it read another part "
                             "of (intermediate-read)"),
                self.verdict(back_f, back_a, "reads at an offset not after the reader's previous one "
                             "(nonmonotonic-poll)"))

    def _coverage(self):
        """``covered(tp, offset)``: some reader's run through the partition started at or before
        the offset and went past it (a reader that began later never had to see it)."""
        spans: dict = {}
        for _proc, tp, first, last, _n in self.h.segments:
            spans.setdefault(tp, []).append((first, last))
        merged: dict = {}
        for tp, lst in spans.items():
            lst.sort()
            out = [list(lst[0])]
            for a, b in lst[1:]:
                if a <= out[-1][1] + 1:
                    out[-1][1] = max(out[-1][1], b)
                else:
                    out.append([a, b])
            merged[tp] = ([a for a, _ in out], [b for _, b in out])

        def covered(tp, off) -> bool:
            m = merged.get(tp)
            if m is None:
                return False
            firsts, lasts = m
            if len(firsts) == 1:
                return firsts[0] <= off < lasts[0]
            k = bisect.bisect_right(firsts, off) - 1
            return k >= 0 and off < lasts[k]
        return covered

    def _readers_by_txn(self) -> dict:
        """txn -> readers known to have read one of its writes (the first reader of each value)."""
        out: dict = {}
        writer = self.h.writer
        for value, (_tp, _off, proc) in self.h.read_at.items():
            i = writer.get(value)
            if i is not None and i >= 0:
                out.setdefault(i, set()).add(proc)
        return out

    def duplicates(self) -> tuple[dict, dict]:
        h = self.h
        fail, allowed = [], []
        for value, positions in h.dups.items():
            i = h.writer.get(value)
            d = {"value": value, "positions": [_pos(tp, o) for tp, o in positions]}
            if i is not None and i >= 0:
                d["writer"] = self.txn(i)
            why = next((self.unclean(tp) for tp, _ in positions if self.unclean(tp)), None)
            if i is not None and i < 0:
                why = why or "a non-transactional producer wrote it"
            if why:
                d["allowed_by"] = why
            (allowed if why else fail).append(d)
        inc_f, inc_a = [], []
        for (tp, off), values in h.conflicts.items():
            d = {**_pos(tp, off), "values": values}
            why = self.unclean(tp)
            if why:
                d["allowed_by"] = why
            (inc_a if why else inc_f).append(d)
        return (self.verdict(fail, allowed, "values at more than one offset (duplicate)"),
                self.verdict(inc_f, inc_a, "offsets holding more than one value (inconsistent-offsets)"))

    def unexpected(self) -> dict:
        h = self.h
        extra = set(h.read_at.keys() - h.writer.keys())
        for reads in h.reads:
            for _, _, v in reads or ():
                if v not in h.writer:
                    extra.add(v)
        fail = []
        for v in sorted(extra, key=str)[: self.k]:
            at = h.read_at.get(v)
            fail.append({"value": v, **(_pos(at[0], at[1]) if at else {}), "reader": at[2] if at else None})
        out = self.verdict(fail, [], "values read that no send wrote (unexpected-value)")
        out["count"] = out["violations"] = len(extra)
        return out

    def eos_duplicates(self) -> dict:
        h = self.h
        consumed: dict = {}  # (tp, offset) -> first committed txn that consumed it
        fail = []
        for i, reads in enumerate(h.reads):
            if not reads or h.status[i] != COMMITTED:
                continue
            for tp, off, value in reads:
                j = consumed.setdefault((tp, off), i)
                if j != i:
                    fail.append({"input": {**_pos(tp, off), "value": value}, "first": self.txn(j),
                                 "again": self.txn(i)})
        return self.verdict(fail, [], "input records consumed by two committed transactions (eos-duplicate)")

    def zombies(self) -> dict:
        h = self.h
        if not h.inits:
            return {"verdict": PASS, "count": 0, "examples": [], "fenced_events": len(h.fenced),
                    "reason": "no txn.init events: no fencing to judge"}
        inits = {tid: sorted(v) for tid, v in h.inits.items()}
        own_tid: dict = {}
        for tid, lst in inits.items():
            for _, p in lst:
                own_tid.setdefault(p, tid)
        fail = []
        for i in range(len(h.t_inv)):
            tid = h.tid[i] or own_tid.get(h.proc[i])
            lst = inits.get(tid)
            if not lst:
                continue
            k = bisect.bisect_right(lst, (h.t_inv[i], "\uffff")) - 1
            if k < 0 or lst[k][1] == h.proc[i]:
                continue  # the latest initialisation of its transactional.id before it began was its own
            shown = [v for v in h.writes[i] if v in h.read_at]
            if h.status[i] == COMMITTED or shown:
                fail.append({"zombie": self.txn(i), "transactional_id": tid, "fenced_by": lst[k][1],
                             "fenced_at": lst[k][0], "committed": h.status[i] == COMMITTED,
                             "visible_values": shown[:10], "visible": len(shown)})
        out = self.verdict(fail, [], "transactions of a fenced producer that committed or became visible (zombie)")
        out["fenced_events"] = len(h.fenced)
        return out

    # -- overall -------------------------------------------------------------------------------
    def result(self) -> dict:
        checks = {}
        checks["int-nonmonotonic-send"], checks["G0-realtime"] = self.log_view()
        checks["G1a"] = self.aborted_reads()
        checks["lost-write"], checks["torn-transaction"], checks["unseen"] = self.missing_writes()
        checks["poll-skip"], checks["intermediate-read"], checks["nonmonotonic-poll"] = self.skips()
        checks["duplicate"], checks["inconsistent-offsets"] = self.duplicates()
        checks["unexpected-value"] = self.unexpected()
        checks["eos-duplicate"] = self.eos_duplicates()
        checks["zombie"] = self.zombies()
        checks["G1c"], checks["ww-cycles"] = self.cycles()
        checks = {name: checks[name] for name in CHECK_ORDER}
        verdict, reason = overall(checks, "no transactional anomaly the configuration forbids")
        stats = self.h.stats()
        stats["edges"] = dict(self.graph.counts)
        stats["unfinished"] = self.h.unfinished
        return {"verdict": verdict, "applicable": True, "reason": reason, "checks": checks, "stats": stats}
