"""The transaction checker's history: one pass over a run's events (``txn``, ``txn.poll``,
``group.poll``, ``txn.init``, ``txn.fenced``, ``partition.end``, ``client.config`` ...) into columnar
state, read by the anomaly rules in ``txn.py`` and ``cycles.py``. Pure: no I/O, no clock.
The history format is in ``docs/transactions.md``.
"""

from __future__ import annotations

import math

from harness.checkers.common import PositionLog, malformed
from harness.checkers.config import RunFacts
from harness.record.events import CLIENT_LIFE
from harness.record.windows import ALIVE_STATES

# transaction status
COMMITTED, ABORTED, UNSURE = 1, 2, 0


class TxnHistory(PositionLog):
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
        self.gaps: list = []  # (process, tp, prev, cur) forward jumps of one reader
        self.segments: list = []  # (process, tp, first, last, reads): a reader's run through a partition
        self.chain: dict = {}
        self.skipped: dict = {}
        self.seg_start: dict = {}
        self.plog: dict = {}  # tp -> ([offset], [txn], [send index in the txn]) of acknowledged sends
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
        writer = self.writer
        pos = self.pos
        read_at = self.read_at
        gaps = self.gaps
        plog = self.plog
        chain = self.chain  # (process, tp) -> last offset read
        skipped = self.skipped  # (process, tp) -> offsets jumped over in the current segment
        seg_start = self.seg_start
        ru_procs = self.ru_procs
        drain_t = None
        n_read = n_group_poll = 0
        ev: dict = {}
        try:
            for ev in events:
                typ = ev["type"]
                if typ == "txn.poll" or typ == "group.poll":  # a group member's reads count too
                    n_read += 1
                    if typ != "txn.poll":
                        n_group_poll += 1
                    value = ev["value"]
                    tp = (ev["topic"], ev["partition"])
                    off = ev["offset"]
                    proc = ev["process"]
                    prev = read_at.get(value)
                    if prev is None or prev[1] != off or prev[0] != tp:
                        if prev is None:
                            read_at[value] = (tp, off, proc)
                        else:
                            self._dup(value, (prev[0], prev[1]), (tp, off))
                        d = pos.get(tp)
                        if d is None:
                            d = pos[tp] = {}
                        old = d.setdefault(off, value)
                        if old != value:
                            self._conflict(tp, off, old, value)
                    elif ru_procs and prev[2] in ru_procs and proc not in ru_procs:
                        read_at[value] = (tp, off, proc)  # keep a read_committed reader of the value
                    k = (proc, tp)
                    last = chain.get(k)
                    if last is None:
                        seg_start[k] = off
                        skipped[k] = 0
                    elif off != last + 1:
                        if off > last:
                            gaps.append((proc, tp, last, off))
                            skipped[k] += off - last - 1
                        else:
                            self.backs.append((proc, tp, last, off))
                            self._close(k)
                            seg_start[k] = off
                            skipped[k] = 0
                    chain[k] = off
                    if drain_t is None and ev.get("drain"):
                        drain_t = ev["t"]
                elif typ == "txn":
                    self._txn_event(ev)
                elif typ == "txn.seek":
                    # the reader positioned itself: its next read in the partition should be at this offset
                    k = (ev["process"], (ev["topic"], ev["partition"]))
                    self._close(k)
                    chain[k] = int(ev["offset"]) - 1
                    seg_start[k] = int(ev["offset"])
                    skipped[k] = 0
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
                elif typ == "group.assign" or (typ == CLIENT_LIFE and ev.get("state") in ALIVE_STATES):
                    # a new assignment or a new consumer instance starts every chain of that process afresh
                    p = ev.get("process")
                    for k in [k for k in chain if k[0] == p]:
                        self._close(k)
                elif typ == "client" and ev.get("f") == "send" and ev.get("phase") == "invoke":
                    writer.setdefault(ev.get("value"), -1)  # a non-transactional write sharing the topics
                elif typ == "phase" and ev.get("name") == "drain.start" and drain_t is None:
                    drain_t = ev["t"]
        except (KeyError, TypeError, ValueError) as e:
            raise malformed(ev, e) from None
        for k in list(chain):
            self._close(k)
        self.drain_t = drain_t
        self.n_read = n_read
        self.n_txn_poll = n_read - n_group_poll
        self.n_send = sum(len(v[0]) for v in plog.values())
        self.unfinished = sum(1 for s, d in zip(self.status, self.t_done) if s == UNSURE and d == math.inf)
        return self

    def _close(self, k) -> None:
        """End a reader's segment in a partition: ``(process, tp, first, last, reads)``."""
        last = self.chain.pop(k, None)
        if last is None:
            return
        first = self.seg_start.pop(k)
        n = last - first + 1 - self.skipped.pop(k)  # offsets read in the segment
        if last >= first:
            self.segments.append((k[0], k[1], first, last, n))

    def _txn_event(self, ev: dict) -> None:
        proc = ev["process"]
        phase = ev["phase"]
        i = self.by_op.get((proc, ev["op_id"]))
        if i is None:  # a completion without its invoke is kept too, its invoke time unknown
            i = self._txn(proc, ev["op_id"], ev["t"] if phase == "invoke" else -math.inf)
            self.n_txn += 1
        if ev.get("transactional_id") is not None:
            self.tid[i] = ev["transactional_id"]
        if phase == "ok":
            self.t_done[i] = ev["t"]
            self.status[i] = ABORTED if ev.get("outcome") == "abort" else COMMITTED
        elif phase == "fail":
            self.status[i] = ABORTED
        elif phase != "info" and phase != "invoke":
            raise ValueError(f"txn phase {phase!r} is not invoke/ok/fail/info")
        ops = ev.get("ops")
        if not ops:
            return
        writer, wpos, pos, plog = self.writer, self.wpos, self.pos, self.plog
        w = self.writes[i]
        known = len(w)
        j = 0
        for op in ops:
            f = op["f"]
            if f == "send":
                value = op["value"]
                if j >= known:
                    writer[value] = i
                    w.append(value)
                off = op.get("offset")
                if off is not None and off >= 0 and phase != "invoke":
                    tp = (op["topic"], op["partition"])
                    old_pos = wpos.get(value)
                    if old_pos is None:
                        wpos[value] = (tp, off)
                        lg = plog.get(tp)
                        if lg is None:
                            lg = plog[tp] = ([], [], [])
                        lg[0].append(off)
                        lg[1].append(i)
                        lg[2].append(j)
                    elif old_pos != (tp, off):
                        self._dup(value, old_pos, (tp, off))
                    d = pos.get(tp)
                    if d is None:
                        d = pos[tp] = {}
                    old = d.setdefault(off, value)
                    if old != value:
                        self._conflict(tp, off, old, value)
                j += 1
            elif f == "read":
                self.n_txn_read += 1
                rec = ((op["topic"], op["partition"]), op["offset"], op["value"])
                r = self.reads[i]
                if r is None:
                    self.reads[i] = [rec]
                else:
                    r.append(rec)
