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
import gc
import math
from typing import Iterable

from .config import RunFacts, normalize_acks
from .cycles import find_cycles, strongly_connected, shortest_cycle

PASS, FAIL, UNKNOWN, ALLOWED = "PASS", "FAIL", "UNKNOWN", "ALLOWED"

DEFAULT_OPTIONS = {
    "max_examples": 20,  # examples kept per check
    "isolated_writes": False,  # True: G0 / G1c-ww cycles FAIL (a broker that serialises transactions)
    "cycle_tries": 8,  # start nodes per component for the shortest-cycle search
    "max_cycle_components": 1000,  # components whose shortest cycle is searched (all are counted)
}

# transaction status
COMMITTED, ABORTED, UNSURE = 1, 2, 0

CHECK_ORDER = ("G1a", "lost-write", "torn-transaction", "intermediate-read", "poll-skip", "nonmonotonic-poll",
               "duplicate", "inconsistent-offsets", "int-nonmonotonic-send", "unexpected-value", "eos-duplicate",
               "zombie", "G1c", "G0-realtime", "ww-cycles", "unseen")


def _options(options: dict | None) -> dict:
    opts = dict(DEFAULT_OPTIONS)
    for k, v in (options or {}).items():
        if k not in DEFAULT_OPTIONS:
            raise ValueError(f"unknown transaction-check option {k!r}; known: {sorted(DEFAULT_OPTIONS)}")
        opts[k] = v
    return opts


def check_transactions(events: Iterable[dict], metadata: dict, options: dict | None = None) -> dict:
    """Judge the transactional part of a run. ``applicable`` is False (and the verdict PASS with
    no checks) when the record holds no ``txn`` / ``txn.poll`` event."""
    opts = _options(options)
    facts = RunFacts(metadata)
    gc_was_enabled = gc.isenabled()
    gc.disable()  # millions of small acyclic objects: the cyclic collector only costs time here
    try:
        h = TxnHistory(facts)
        h.run(events)
        if not h.n_txn and not h.n_read:
            return {"verdict": PASS, "applicable": False, "checks": {}, "stats": h.stats(),
                    "reason": "no transaction events (txn, txn.poll) in the record: nothing to check"}
        return _Judge(h, facts, opts).result()
    finally:
        if gc_was_enabled:
            gc.enable()


class TxnHistory:
    """Columnar state of one pass over the events; read by :class:`_Judge`."""

    def __init__(self, facts: RunFacts):
        self.facts = facts
        expected = facts.workload.get("isolation.level") or facts.workload.get("isolation_level")
        self.expected_isolation = str(expected) if expected else None
        self.ru_procs: set = set()  # readers with isolation.level=read_uncommitted (when none is expected)
        # transactions, by index
        self.t_inv: list[float] = []
        self.t_done: list[float] = []  # completion time of a definite (ok) completion, else inf
        self.status: list[int] = []
        self.proc: list[str] = []
        self.op_id: list = []
        self.tid: list = []
        self.writes: list[list] = []  # values sent, in op order
        self.reads: list = []  # None or [(tp, offset, value)]
        self.by_op: dict = {}  # (process, op_id) -> index
        # values
        self.writer: dict = {}  # value -> txn index (-1: a non-transactional client send)
        self.wpos: dict = {}  # value -> (tp, offset) acknowledged by the send
        self.pos: dict = {}  # tp -> {offset: value first known there}
        self.conflicts: dict = {}  # (tp, offset) -> [values]
        self.read_at: dict = {}  # value -> (tp, offset, process) first read
        self.dups: dict = {}  # value -> [(tp, offset), ...]
        self.max_read: dict = {}  # tp -> highest offset read by any reader
        self.gaps: list = []  # (process, tp, prev, cur) forward jumps of one reader
        self.backs: list = []  # (process, tp, prev, cur) a reader going back
        self.ends: dict = {}  # tp -> end offset of the final drain
        self.drain_t: float | None = None
        self.consumer_cfg: dict = {}  # process -> config
        self.producer_cfg: dict = {}
        self.inits: dict = {}  # transactional_id -> [(t, process)]
        self.fenced: list = []  # (t, process, transactional_id)
        self.n_txn = self.n_read = self.n_send = self.n_txn_read = 0
        self.unfinished = 0

    def stats(self) -> dict:
        st = self.status
        return {"transactions": self.n_txn, "committed": st.count(COMMITTED), "aborted": st.count(ABORTED),
                "unsure": st.count(UNSURE), "sends": self.n_send, "reads": self.n_read,
                "txn_reads": self.n_txn_read, "fenced_events": len(self.fenced),
                "producer_inits": sum(len(v) for v in self.inits.values())}

    def _txn(self, proc, op_id, t) -> int:
        i = len(self.t_inv)
        self.by_op[(proc, op_id)] = i
        self.t_inv.append(t)
        self.t_done.append(math.inf)
        self.status.append(UNSURE)
        self.proc.append(proc)
        self.op_id.append(op_id)
        self.tid.append(None)
        self.writes.append([])
        self.reads.append(None)
        return i

    def run(self, events) -> "TxnHistory":
        by_op = self.by_op
        writer = self.writer
        wpos = self.wpos
        pos = self.pos
        read_at = self.read_at
        max_read = self.max_read
        gaps = self.gaps
        chain: dict = {}  # (process, tp) -> last offset read
        ru_procs = self.ru_procs
        n_read = n_send = n_txn_read = 0
        ev: dict = {}
        try:
            for ev in events:
                typ = ev["type"]
                if typ == "txn.poll":
                    n_read += 1
                    value = ev["value"]
                    tp = (ev["topic"], ev["partition"])
                    off = ev["offset"]
                    proc = ev["process"]
                    d = pos.get(tp)
                    if d is None:
                        d = pos[tp] = {}
                    old = d.setdefault(off, value)
                    if old != value:
                        self._conflict(tp, off, old, value)
                    prev = read_at.get(value)
                    if prev is None:
                        read_at[value] = (tp, off, proc)
                    elif prev[1] != off or prev[0] != tp:
                        self._dup(value, (prev[0], prev[1]), (tp, off))
                    elif ru_procs and prev[2] in ru_procs and proc not in ru_procs:
                        read_at[value] = (tp, off, proc)  # keep a read_committed reader of the value
                    if ev.get("seek"):
                        chain.pop((proc, tp), None)
                    k = (proc, tp)
                    last = chain.get(k)
                    if last is not None:
                        if off > last + 1:
                            gaps.append((proc, tp, last, off))
                        elif off <= last:
                            self.backs.append((proc, tp, last, off))
                    chain[k] = off
                    m = max_read.get(tp)
                    if m is None or off > m:
                        max_read[tp] = off
                    if ev.get("drain") and self.drain_t is None:
                        self.drain_t = ev["t"]
                elif typ == "txn":
                    proc = ev["process"]
                    key = (proc, ev["op_id"])
                    phase = ev["phase"]
                    i = by_op.get(key)
                    if phase == "invoke":
                        if i is None:
                            i = self._txn(proc, ev["op_id"], ev["t"])
                            self.n_txn += 1
                        if ev.get("transactional_id") is not None:
                            self.tid[i] = ev["transactional_id"]
                        ops = ev.get("ops")
                        if ops:
                            w = self.writes[i]
                            for op in ops:
                                if op["f"] == "send":
                                    value = op["value"]
                                    writer[value] = i
                                    w.append(value)
                        continue
                    if i is None:  # a completion without its invoke: keep it, the invoke time unknown
                        i = self._txn(proc, ev["op_id"], -math.inf)
                        self.n_txn += 1
                    if ev.get("transactional_id") is not None:
                        self.tid[i] = ev["transactional_id"]
                    if phase == "ok":
                        self.t_done[i] = ev["t"]
                        self.status[i] = ABORTED if ev.get("outcome") == "abort" else COMMITTED
                    elif phase == "fail":
                        self.status[i] = ABORTED
                    elif phase != "info":
                        raise ValueError(f"event seq {ev.get('seq')}: txn phase {phase!r} is not "
                                         "invoke/ok/fail/info")
                    ops = ev.get("ops")
                    if ops:
                        w = self.writes[i]
                        known = len(w)
                        nw = 0
                        for op in ops:
                            f = op["f"]
                            if f == "send":
                                value = op["value"]
                                if nw >= known:
                                    writer[value] = i
                                    w.append(value)
                                nw += 1
                                off = op.get("offset")
                                if off is not None and off >= 0:
                                    n_send += 1
                                    tp = (op["topic"], op["partition"])
                                    old_pos = wpos.get(value)
                                    if old_pos is None:
                                        wpos[value] = (tp, off)
                                    elif old_pos != (tp, off):
                                        self._dup(value, old_pos, (tp, off))
                                    d = pos.get(tp)
                                    if d is None:
                                        d = pos[tp] = {}
                                    old = d.setdefault(off, value)
                                    if old != value:
                                        self._conflict(tp, off, old, value)
                            elif f == "read":
                                n_txn_read += 1
                                r = self.reads[i]
                                tp = (op["topic"], op["partition"])
                                rec = (tp, op["offset"], op["value"])
                                if r is None:
                                    self.reads[i] = [rec]
                                else:
                                    r.append(rec)
                elif typ == "txn.seek":
                    # the reader positioned itself: its next read in the partition should be at this offset
                    chain[(ev["process"], (ev["topic"], ev["partition"]))] = int(ev["offset"]) - 1
                elif typ == "partition.end":
                    self.ends[(ev.get("topic"), ev.get("partition"))] = int(ev["end_offset"])
                elif typ == "client.config":
                    cfg = ev.get("config") or {}
                    if ev.get("role") == "consumer":
                        self.consumer_cfg[ev.get("process")] = cfg
                        if not self.expected_isolation and cfg.get("isolation.level") == "read_uncommitted":
                            ru_procs.add(ev.get("process"))
                    else:
                        self.producer_cfg[ev.get("process")] = cfg
                elif typ == "txn.init":
                    if ev.get("phase", "ok") == "ok":
                        self.inits.setdefault(ev["transactional_id"], []).append((ev["t"], ev["process"]))
                elif typ == "txn.fenced":
                    self.fenced.append((ev["t"], ev.get("process"), ev.get("transactional_id")))
                elif typ == "group.assign" or typ == "client.life":
                    # a new assignment or a new consumer instance starts every chain of that process afresh
                    if typ == "group.assign" or ev.get("state") in ("started", "recreated"):
                        p = ev.get("process")
                        for k in [k for k in chain if k[0] == p]:
                            del chain[k]
                elif typ == "client" and ev.get("f") == "send" and ev.get("phase") == "invoke":
                    writer.setdefault(ev.get("value"), -1)  # a non-transactional write sharing the topics
                elif typ == "phase" and ev.get("name") == "drain.start" and self.drain_t is None:
                    self.drain_t = ev["t"]
        except (KeyError, TypeError) as e:
            raise ValueError(f"malformed event (seq {ev.get('seq') if isinstance(ev, dict) else '?'}): "
                             f"{type(e).__name__}: {e} in {ev!r:.300}") from None
        self.n_read, self.n_send, self.n_txn_read = n_read, n_send, n_txn_read
        self.unfinished = sum(1 for s, d in zip(self.status, self.t_done) if s == UNSURE and d == math.inf)
        return self

    def _conflict(self, tp, off, old, value) -> None:
        vals = self.conflicts.get((tp, off))
        if vals is None:
            self.conflicts[(tp, off)] = [old, value]
        elif value not in vals:
            vals.append(value)

    def _dup(self, value, first, again) -> None:
        lst = self.dups.get(value)
        if lst is None:
            self.dups[value] = [first, again]
        elif again not in lst:
            lst.append(again)


def _pos(tp, offset) -> dict:
    return {"topic": tp[0], "partition": tp[1], "offset": offset}


class _Judge:
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
        for value in read_at:
            i = writer.get(value)
            if i is not None and i >= 0 and st[i] == UNSURE:
                self.visible[i] = True

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
        if fail:
            v, why = FAIL, f"{len(fail)} {what}"
        elif allowed:
            v, why = ALLOWED, f"{len(allowed)} {what}, as the configuration permits"
        else:
            v, why = PASS, f"no {what}"
        out = {"verdict": v, "count": len(fail) + len(allowed), "violations": len(fail), "allowed": len(allowed),
               "reason": why, "examples": (fail + allowed)[: self.k]}
        out.update(extra)
        return out

    # -- checks ------------------------------------------------------------------------------
    def aborted_reads(self) -> dict:
        h = self.h
        fail, allowed = [], []
        status, writer = h.status, h.writer
        for value, (tp, off, proc) in h.read_at.items():
            i = writer.get(value)
            if i is None or i < 0 or status[i] != ABORTED:
                continue
            d = {"value": value, **_pos(tp, off), "reader": proc, "writer": self.txn(i)}
            if self.read_committed(proc):
                fail.append(d)
            else:
                d["allowed_by"] = "isolation.level=read_uncommitted"
                allowed.append(d)
        for r, reads in enumerate(h.reads):
            if not reads:
                continue
            for tp, off, value in reads:
                i = writer.get(value)
                if i is not None and i >= 0 and status[i] == ABORTED:
                    fail.append({"value": value, **_pos(tp, off), "reader_txn": self.txn(r), "writer": self.txn(i)})
        return self.verdict(fail, allowed, "reads of writes from aborted transactions (G1a)")

    def missing_writes(self) -> tuple[dict, dict, dict]:
        """lost-write, torn-transaction and unseen from the committed (or seen) transactions' writes."""
        h = self.h
        read_at, wpos, max_read, ends = h.read_at, h.wpos, h.max_read, h.ends
        visible = self.visible
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
                m = max_read.get(tp)
                end = ends.get(tp)
                if (m is not None and m > off) or (end is not None and off < end):
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
        """poll-skip and intermediate-read from each reader's forward jumps; nonmonotonic-poll."""
        h = self.h
        status, writer, read_at = h.status, h.writer, h.read_at
        visible = self.visible
        skip_f, skip_a, inter_f, inter_a = [], [], [], []
        readers_of: dict | None = None
        for proc, tp, prev, cur in h.gaps:
            known = h.pos.get(tp)
            if not known:
                continue
            if cur - prev - 1 <= 4 * len(known):
                cand = [o for o in range(prev + 1, cur) if o in known]
            else:
                cand = sorted(o for o in known if prev < o < cur)
            skipped = []
            for o in cand:
                value = known[o]
                i = writer.get(value)
                if value in read_at or (i is not None and (i < 0 or visible[i])):
                    if i is None or i < 0 or status[i] != ABORTED:
                        skipped.append((o, value, i))
            if not skipped:
                continue
            if readers_of is None:
                readers_of = self._readers_by_txn()
            why = self.unclean(tp)
            for o, value, i in skipped:
                partial = i is not None and i >= 0 and proc in readers_of.get(i, ())
                d = {"reader": proc, "value": value, **_pos(tp, o), "previous_offset": prev, "next_offset": cur}
                if i is not None and i >= 0:
                    d["writer"] = self.txn(i)
                if why:
                    d["allowed_by"] = why
                if partial:
                    (inter_a if why else inter_f).append(d)
                else:
                    (skip_a if why else skip_f).append(d)
        back_f, back_a = [], []
        for proc, tp, prev, cur in h.backs:
            d = {"reader": proc, **_pos(tp, cur), "previous_offset": prev}
            why = self.unclean(tp)
            if why:
                d["allowed_by"] = why
                back_a.append(d)
            else:
                back_f.append(d)
        return (self.verdict(skip_f, skip_a, "visible records a reader jumped over (poll-skip)"),
                self.verdict(inter_f, inter_a, "records a reader jumped over in a transaction it read another part "
                             "of (intermediate-read)"),
                self.verdict(back_f, back_a, "reads at an offset not after the reader's previous one "
                             "(nonmonotonic-poll)"))

    def _readers_by_txn(self) -> dict:
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
                allowed.append(d)
            else:
                fail.append(d)
        inc_f, inc_a = [], []
        for (tp, off), values in h.conflicts.items():
            d = {**_pos(tp, off), "values": values}
            why = self.unclean(tp)
            if why:
                d["allowed_by"] = why
                inc_a.append(d)
            else:
                inc_f.append(d)
        return (self.verdict(fail, allowed, "values at more than one offset (duplicate)"),
                self.verdict(inc_f, inc_a, "offsets holding more than one value (inconsistent-offsets)"))

    def internal_send_order(self) -> dict:
        h = self.h
        wpos = h.wpos
        fail = []
        for i, w in enumerate(h.writes):
            if len(w) < 2:
                continue
            last: dict = {}
            for value in w:
                p = wpos.get(value)
                if p is None:
                    continue
                tp, off = p
                prev = last.get(tp)
                if prev is not None and off <= prev[1]:
                    fail.append({"writer": self.txn(i), **_pos(tp, off), "value": value,
                                 "previous_value": prev[0], "previous_offset": prev[1]})
                last[tp] = (value, off)
        return self.verdict(fail, [], "sends of one transaction to a partition at offsets not increasing in send "
                            "order (int-nonmonotonic-send)")

    def unexpected(self) -> dict:
        h = self.h
        extra = [v for v in h.read_at if v not in h.writer]
        for reads in h.reads:
            if reads:
                extra.extend(v for _, _, v in reads if v not in h.writer and v not in h.read_at)
        fail = []
        for v in sorted(set(extra), key=str)[: self.k]:
            at = h.read_at.get(v)
            fail.append({"value": v, **(_pos(at[0], at[1]) if at else {}), "reader": at[2] if at else None})
        out = self.verdict(fail, [], "values read that no send wrote (unexpected-value)")
        out["count"] = out["violations"] = len(set(extra))
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
                continue
            shown = [v for v in h.writes[i] if v in h.read_at]
            if h.status[i] == COMMITTED or shown:
                fail.append({"zombie": self.txn(i), "transactional_id": tid, "fenced_by": lst[k][1],
                             "fenced_at": lst[k][0], "committed": h.status[i] == COMMITTED,
                             "visible_values": shown[:10], "visible": len(shown)})
        out = self.verdict(fail, [], "transactions of a fenced producer that committed or became visible (zombie)")
        out["fenced_events"] = len(h.fenced)
        return out

    # -- dependency graph ----------------------------------------------------------------------
    def graph(self) -> tuple[list, list, dict, dict]:
        """``(full, wrp, wr, proc_next)``: successor lists over every edge kind and over wr +
        process edges only; the wr edges with the read that makes them; process edges."""
        h = self.h
        n = len(h.t_inv)
        visible = self.visible
        full: list = [None] * n
        wrp: list = [None] * n
        ww_edges = 0
        # ww: consecutive visible transactions in each partition's log order
        per_tp: dict = {}
        wpos, writer = h.wpos, h.writer
        for i, w in enumerate(h.writes):
            if not visible[i]:
                continue
            for value in w:
                p = wpos.get(value)
                if p is not None:
                    lst = per_tp.get(p[0])
                    if lst is None:
                        per_tp[p[0]] = lst = ([], [])
                    lst[0].append(p[1])
                    lst[1].append(i)
        for offs, txns in per_tp.values():
            order = sorted(range(len(offs)), key=offs.__getitem__)
            prev = -1
            for j in order:
                cur = txns[j]
                if cur != prev:
                    if prev >= 0:
                        s = full[prev]
                        if s is None:
                            full[prev] = [cur]
                        else:
                            s.append(cur)
                        ww_edges += 1
                    prev = cur
        # wr: the writer of every value a transaction read
        wr: dict = {}
        self.self_reads = []
        for r, reads in enumerate(h.reads):
            if not reads:
                continue
            for tp, off, value in reads:
                i = writer.get(value)
                if i is None or i < 0 or not visible[i]:
                    continue
                if i == r:
                    self.self_reads.append((r, tp, off, value))
                    continue
                if (i, r) not in wr:
                    wr[(i, r)] = (tp, off, value)
                    for g in (full, wrp):
                        s = g[i]
                        if s is None:
                            g[i] = [r]
                        else:
                            s.append(r)
        # process order: a visible transaction after the process's last one that committed first
        proc_next: dict = {}
        by_proc: dict = {}
        for i in range(n):
            if visible[i]:
                by_proc.setdefault(h.proc[i], []).append(i)
        t_inv, t_done, status = h.t_inv, h.t_done, h.status
        for lst in by_proc.values():
            lst.sort(key=t_inv.__getitem__)
            last_ok = -1
            for i in lst:
                if last_ok >= 0 and t_done[last_ok] <= t_inv[i]:
                    proc_next.setdefault(last_ok, []).append(i)
                    for g in (full, wrp):
                        s = g[last_ok]
                        if s is None:
                            g[last_ok] = [i]
                        else:
                            s.append(i)
                if status[i] == COMMITTED:
                    last_ok = i
        self.edge_counts = {"ww": ww_edges, "wr": len(wr), "process": sum(len(v) for v in proc_next.values())}
        return full, wrp, wr, proc_next

    def label(self, a: int, b: int, wr: dict, proc_next: dict) -> dict:
        """Why the edge ``a -> b`` exists: the read, the process order or the partition order."""
        r = wr.get((a, b))
        if r is not None:
            tp, off, value = r
            return {"kind": "wr", "value": value, **_pos(tp, off)}
        if b in proc_next.get(a, ()):
            return {"kind": "process", "process": self.h.proc[a]}
        wpos = self.h.wpos
        mine: dict = {}
        for v in self.h.writes[a]:
            p = wpos.get(v)
            if p is not None:
                mine.setdefault(p[0], []).append((p[1], v))
        for v in self.h.writes[b]:
            p = wpos.get(v)
            if p is not None and p[0] in mine:
                before = [x for x in mine[p[0]] if x[0] < p[1]]
                if before:
                    o, va = max(before)
                    return {"kind": "ww", "topic": p[0][0], "partition": p[0][1], "offset": o, "value": va,
                            "next_offset": p[1], "next_value": v}
        return {"kind": "?"}

    def describe(self, cycle: list, wr: dict, proc_next: dict) -> dict:
        steps = []
        kinds = set()
        for j, a in enumerate(cycle):
            b = cycle[(j + 1) % len(cycle)]
            lab = self.label(a, b, wr, proc_next)
            kinds.add(lab["kind"])
            steps.append({"txn": self.txn(a), "then": lab})
        if kinds <= {"ww"}:
            name = "G0"
        elif "ww" in kinds:
            name = "G1c-ww"
        else:
            name = "G1c-process" if "process" in kinds else "G1c"
        return {"anomaly": name, "length": len(cycle), "steps": steps}

    def cycles(self) -> tuple[dict, dict]:
        full, wrp, wr, proc_next = self.graph()
        n = len(full)
        tries = int(self.opts["cycle_tries"])
        lim = int(self.opts["max_cycle_components"])
        fail = []
        for r, tp, off, value in self.self_reads:
            fail.append({"anomaly": "precommitted-read", "length": 1,
                         "steps": [{"txn": self.txn(r), "then": {"kind": "wr", "value": value, **_pos(tp, off)}}]})
        n_hard, hard = find_cycles(n, wrp, tries=tries, limit=lim)
        fail.extend(self.describe(c, wr, proc_next) for c in hard)
        g1c = self.verdict(fail, [], "cycles of write-read and process-order dependencies (G1c): commit order "
                           "contradicts itself", components=n_hard + len(self.self_reads),
                           edges=dict(self.edge_counts))
        comps = strongly_connected(n, full)
        comps.sort(key=len)
        soft = []
        hard_members = set()
        for comp in strongly_connected(n, wrp) if hard else ():
            hard_members.update(comp)
        for comp in comps[:lim]:
            if hard_members and hard_members.intersection(comp):
                continue  # reported among the G1c cycles
            members = frozenset(comp)
            best = None
            for start in sorted(comp)[:tries]:
                c = shortest_cycle(full, members, start)
                if c is not None and (best is None or len(c) < len(best)):
                    best = c
                    if len(c) == 2:
                        break
            if best is not None:
                soft.append(self.describe(best, wr, proc_next))
        n_soft = len(comps) - sum(1 for c in comps if hard_members and hard_members.intersection(c))
        sizes = [len(c) for c in comps]
        extra = {"components": n_soft, "largest_component": max(sizes) if sizes else 0,
                 "by_anomaly": {}}
        for d in soft:
            extra["by_anomaly"][d["anomaly"]] = extra["by_anomaly"].get(d["anomaly"], 0) + 1
        if not soft:
            ww = {"verdict": PASS, "count": 0, "examples": [], "reason": "no cycle through write-write dependencies",
                  **extra}
        elif self.opts["isolated_writes"]:
            ww = {"verdict": FAIL, "count": n_soft, "examples": soft[: self.k], **extra,
                  "reason": f"{n_soft} dependency cycles through write-write edges (G0 / G1c-ww), and the "
                            "option isolated_writes says transactions must not interleave"}
        else:
            ww = {"verdict": ALLOWED, "count": n_soft, "examples": soft[: self.k], **extra,
                  "reason": f"{n_soft} dependency cycles through write-write edges (G0 / G1c-ww): Kafka orders a "
                            "partition by append, not by commit, so concurrent transactions interleave"}
        return g1c, ww

    def realtime_order(self) -> dict:
        """A write sits later in a partition's log than the write of a transaction that began only
        after the first one had completed (G0-realtime): log order contradicts real time."""
        h = self.h
        wpos, writer, t_inv, t_done = h.wpos, h.writer, h.t_inv, h.t_done
        per_tp: dict = {}
        for value, (tp, off) in wpos.items():
            i = writer.get(value)
            if i is None or i < 0:
                continue
            lst = per_tp.get(tp)
            if lst is None:
                per_tp[tp] = lst = []
            lst.append((off, i))
        fail, allowed = [], []
        for tp, lst in per_tp.items():
            lst.sort()
            best_inv, best_i, best_off = -math.inf, -1, None
            for off, i in lst:
                if t_done[i] < best_inv and best_i != i:
                    d = {**_pos(tp, off), "writer": self.txn(i), "completed_t": t_done[i],
                         "earlier_offset": best_off, "earlier_writer": self.txn(best_i), "earlier_invoked_t": best_inv}
                    why = self.unclean(tp)
                    if why:
                        d["allowed_by"] = why
                    (allowed if why else fail).append(d)
                if t_inv[i] > best_inv:
                    best_inv, best_i, best_off = t_inv[i], i, off
        return self.verdict(fail, allowed, "writes placed in a partition before the write of a transaction that "
                            "had completed before they began (G0-realtime)")

    # -- overall -------------------------------------------------------------------------------
    def result(self) -> dict:
        checks = {}
        checks["G1a"] = self.aborted_reads()
        checks["lost-write"], checks["torn-transaction"], checks["unseen"] = self.missing_writes()
        checks["poll-skip"], checks["intermediate-read"], checks["nonmonotonic-poll"] = self.skips()
        checks["duplicate"], checks["inconsistent-offsets"] = self.duplicates()
        checks["int-nonmonotonic-send"] = self.internal_send_order()
        checks["unexpected-value"] = self.unexpected()
        checks["eos-duplicate"] = self.eos_duplicates()
        checks["zombie"] = self.zombies()
        checks["G1c"], checks["ww-cycles"] = self.cycles()
        checks["G0-realtime"] = self.realtime_order()
        checks = {name: checks[name] for name in CHECK_ORDER}
        failed = [n for n, c in checks.items() if c["verdict"] == FAIL]
        unknown = [n for n, c in checks.items() if c["verdict"] == UNKNOWN]
        if failed:
            verdict, reason = FAIL, "; ".join(f"{n}: {checks[n]['reason']}" for n in failed)
        elif unknown:
            verdict, reason = UNKNOWN, "; ".join(f"{n}: {checks[n]['reason']}" for n in unknown)
        else:
            verdict, reason = PASS, "no transactional anomaly the configuration forbids"
        stats = self.h.stats()
        stats["edges"] = dict(self.edge_counts)
        stats["unfinished"] = self.h.unfinished
        return {"verdict": verdict, "applicable": True, "reason": reason, "checks": checks, "stats": stats}
