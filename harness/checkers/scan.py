"""One pass over a run's events, collecting what the durability checks need.

Kept deliberately flat (plain dicts, lists and tuples, locals bound outside the loop) because
it must digest a 1,000,000-operation history in a few seconds on one core
(``benchmarks/durability_check.py``). The judgement itself lives in ``durability.py``.

Keys: ``tp`` is ``(topic, partition)``; positions are ``(tp, offset)``.
"""

from __future__ import annotations

from itertools import compress
from operator import itemgetter, not_

from harness.checkers.common import PositionLog, malformed
from harness.checkers.config import ProducerFacts, RunFacts, producer_facts
from harness.record.events import FAULT_START
from harness.record.facts import ACKS_ALL
from harness.checkers.isr import IsrObservations

# the sender of a value no send invoked (a value record's first field); None is a process name a record may hold
UNSENT = object()
# how far past its end a partition's offset list grows to hold a new offset (farther: the partition goes to a dict)
MAX_GAP = 1 << 16
_ack = itemgetter(1)
_drained = itemgetter(4)


# A partition's offset table -- offset -> the record of the first value seen there -- is a list indexed by offset
# while every offset stored in it is an int from 0 to a little past its end (Kafka's offsets: no hash, no key to
# compare on a lookup); the first other offset (negative, far ahead, not an int: a bool or a float is a dict key
# equal to an int) turns it into a dict for good, with the same keys. The hot paths index the list inline and
# call these on the rest.

def _as_dict(table: list) -> dict:
    return {off: r for off, r in enumerate(table) if r is not None}


def pos_get(st: list, off):
    """The record of the first value seen at ``off`` of partition state ``st``, or None."""
    table = st[1]
    if type(table) is list:
        if type(off) is int:
            return table[off] if 0 <= off < len(table) else None
        table = st[1] = _as_dict(table)
    return table.get(off)


def pos_put(st: list, off, r: list) -> list:
    """``r`` becomes the record first seen at ``off`` unless one was there already; returns the one there."""
    table = st[1]
    if type(table) is list:
        if type(off) is int and off >= 0:
            n = len(table)
            if off < n:
                old = table[off]
                if old is None:
                    table[off] = r
                    return r
                return old
            if off - n <= MAX_GAP:
                if off > n:
                    table.extend([None] * (off - n))
                table.append(r)
                return r
        table = st[1] = _as_dict(table)
    return table.setdefault(off, r)


class Scan(PositionLog):
    """State gathered by :meth:`run`; read by the checks in ``durability.py``."""

    def __init__(self, facts: RunFacts, *, isr_lag_s: float, gap_s: float):
        self.facts = facts
        self.gap_s = gap_s
        self.producer_cfg: dict[str, dict] = {}
        self.consumer_mode: dict[str, str] = {}
        self._facts_cache: dict[str, ProducerFacts] = {}
        # tp -> offset -> the record of the first value seen there (a list or a dict: see pos_get). Declared before
        # vals, so that when a Scan is freed these drop their references first and vals the last ones, in the
        # order the records were made (freed in partition order instead, they cost several times more: scattered
        # through the allocator's pools)
        self.pos: dict[tuple, list | dict] = {}
        self._offsets: dict[tuple, dict] = {}   # tp -> offsets(tp)
        # value -> its record [sender, ack, ack order, first read, drained, ...] (see ``run``): one table for
        # every per-value fact, so that a value's invoke, ack and reads reach one hash slot, not four.
        # Made with one non-str key, taken out again: CPython (3.11+) then keeps it a dict of the general kind,
        # whose table holds each key's hash, so that a probe meeting another key compares hashes there; a
        # str-only dict reads that key's string object for its hash instead, a cache miss in a table of a
        # million values scattered through memory (the 1M-op check: 0.91x the CPU of a str-only dict)
        self.vals: dict = {UNSENT: None}
        del self.vals[UNSENT]
        self.unsent_reads: list = []  # values first read while no send had invoked them, in read order
        self.ack_procs: set = set()  # the process of every ack (a superset of the acked values' last ones)
        self.all_acked_drained = False  # no acked value left unread by the final drain (counted during the pass)
        # sends
        self.failed: dict = {}  # value -> (error, process)
        self.n_invoke = self.n_ok = self.n_fail = self.n_info = 0
        self.n_not_enough_replicas = 0
        self.timeouts: dict[str, int] = {}  # process -> message timeouts (_MSG_TIMED_OUT) it reported
        # idempotence evidence (rare events, kept out of the hot path)
        self.pids: dict[str, list] = {}  # process -> [(t, producer_id, epoch, epoch_cnt, instance)]
        self.unsure: dict = {}  # value -> (t_invoke, t_done, error) of sends completed info
        self.err_log: dict[str, list] = {}  # process -> [(t, error)] of fail / info completions
        self.fatal: list[dict] = []  # client.life fatal events
        self.errors: dict[str, int] = {}
        self.latencies: list[float] = []
        # (process, topic, partition) -> [op ids, offsets, in order]: two columns in send-ok order (no pair
        # per ack), and whether each op id and offset was above the one before (checked while both are hot);
        # like pos and last_ok, kept per partition during the pass and gathered here at its end
        self.send_order: dict[tuple, list] = {}
        self.first_invoke_t: float | None = None
        self.last_invoke_t: float | None = None
        # reads
        self.n_poll = self.n_drain = 0
        self.conflicts: dict[tuple, list] = {}  # (tp, offset) -> [values ...]
        self.dups: dict = {}  # value -> [(tp, offset), ...] all distinct read positions
        self.ends: dict[tuple, int] = {}  # tp -> end offset from partition.end
        self.absent: dict[tuple, str] = {}  # tp -> why the drain found it gone (partition.absent)
        self.deleted_topics: set = set()  # topics the scenario asked to delete (action delete_topic)
        self.poll_back: list[tuple] = []  # (process, tp, prev, cur)
        self.poll_gap: list[tuple] = []  # (process, tp, prev, cur) candidates for poll skip
        self.phases: list[tuple[str, float]] = []
        # availability
        self.first_ok: dict[tuple, float] = {}
        self.last_ok: dict[tuple, float] = {}
        self.gaps: list[tuple] = []  # (tp, from, to)
        self.faults: list[dict] = []
        self._open_faults: list[list] = []  # [fault record, pending tps]
        # cluster observations
        self.isr = IsrObservations(facts, isr_lag_s)    # ISR windows, txn-log ISRs, unclean recoveries

    # -- configuration -------------------------------------------------------------------
    def producer(self, process: str) -> ProducerFacts:
        f = self._facts_cache.get(process)
        if f is None:
            f = producer_facts(self.producer_cfg.get(process, {}), self.facts.workload)
            self._facts_cache[process] = f
        return f

    def _client_config(self, ev: dict) -> None:
        proc = ev.get("process")
        cfg = ev.get("config") or {}
        if ev.get("role") == "consumer":
            self.consumer_mode[proc] = str(cfg.get("mode") or "subscribe")
        else:
            self.producer_cfg[proc] = cfg
            self._facts_cache.pop(proc, None)

    # -- the pass ------------------------------------------------------------------------
    def run(self, events) -> "Scan":
        inv: dict = {}
        # a value's record: [process of its last invoke (UNSENT if none), its last ack (tp, offset, t_inv, t_ok,
        # process) or None, the n_ok of its first ack (the order the acks came in), the tp of its first read or
        # None, whether the final drain read it, the value, the offset of its first read] (no tuple per read)
        vals = self.vals
        unsent_reads = self.unsent_reads
        unsent = UNSENT
        latencies = self.latencies
        first_ok = self.first_ok
        gaps = self.gaps
        gap_s = self.gap_s
        isr = self.isr
        zk_below = isr.zk.below
        admin_below = isr.admin.below
        open_faults = self._open_faults
        producer = self.producer
        n_invoke = n_ok = n_poll = n_drain = n_acked = n_acked_drained = 0
        ack_procs = self.ack_procs
        # topic -> partition -> the partition's state, reached without hashing a (topic, partition) tuple:
        # [tp, offset -> the record of the first value seen there (acked or read; a list, see pos_get),
        #  last ack t or None, {process: its send-order columns}, {process: the offset it last polled}]
        part_of: dict = {}
        parts: list = []
        send_keys: list = []    # ((process, topic, partition), columns) in the order the keys first came

        def intern_part(topic, part):
            ps = part_of.get(topic)
            if ps is None:
                ps = part_of[topic] = {}
            st = ps[part] = [(topic, part), [], None, {}, {}]
            parts.append(st)
            return st
        first_invoke_t = last_invoke_t = None

        ev: dict = {}
        try:
            for ev in events:
                typ = ev["type"]
                if typ == "client":
                    f = ev["f"]
                    phase = ev["phase"]
                    t = ev["t"]
                    if f == "send":
                        proc = ev["process"]
                        if phase == "invoke":
                            n_invoke += 1
                            value = ev["value"]
                            # (the lookups that find their key but for a first time subscript the dict, which
                            # costs less than a call of its get method; the KeyError handlers run once per key)
                            try:
                                ip = inv[proc]          # process -> {op id: (t, value)}: no pair key per send
                            except KeyError:    # a process's first invoke (the history's first among them)
                                ip = inv[proc] = {}
                                if first_invoke_t is None:
                                    first_invoke_t = t
                            ip[ev["op_id"]] = (t, value)
                            r = vals.get(value)
                            if r is None:
                                vals[value] = [proc, None, None, None, False, value, None]
                            else:
                                r[0] = proc
                            last_invoke_t = t
                            continue
                        op_id = ev["op_id"]
                        try:
                            rec = inv[proc].pop(op_id, None)
                        except KeyError:
                            rec = None
                        value = ev["value"]
                        if value is None and rec is not None:
                            value = rec[1]
                        if phase == "ok":
                            n_ok += 1
                            t_inv = rec[0] if rec is not None else None
                            topic = ev["topic"]
                            part = ev["partition"]
                            off = ev["offset"]
                            try:
                                st = part_of[topic][part]
                            except KeyError:
                                st = intern_part(topic, part)
                            tp = st[0]      # one (topic, partition) tuple per partition, shared by every ack and read
                            if off is not None and off < 0:
                                off = None
                            try:
                                r = vals[value]     # hot: the invoke made it a few events ago
                            except KeyError:
                                r = vals[value] = [unsent, None, None, None, False, value, None]
                            if r[1] is None:    # its first ack
                                r[2] = n_ok
                                n_acked += 1
                                if r[4]:
                                    n_acked_drained += 1
                            r[1] = (tp, off, t_inv, t, proc)
                            if t_inv is not None:
                                latencies.append(t - t_inv)
                            if off is not None:
                                at = st[1]
                                if off == len(at) and type(at) is list and type(off) is int:
                                    at.append(r)    # the partition's next offset: the common case
                                else:
                                    old = pos_put(st, off, r)
                                    if old is not r:    # another value was seen there first (one record a value)
                                        self._conflict(tp, off, old[5], value)
                                so = st[3]
                                try:
                                    cols = so[proc]
                                except KeyError:
                                    cols = so[proc] = [[op_id], [off], True]
                                    send_keys.append(((proc, topic, part), cols))
                                    ack_procs.add(proc)
                                else:
                                    ops_, offs_, ordered = cols
                                    if ordered:     # still in order: op ids and offsets both increasing
                                        try:
                                            if not (ops_[-1] < op_id and offs_[-1] < off):
                                                cols[2] = False
                                        except TypeError:   # values that do not compare: the check sorts
                                            cols[2] = False
                                    ops_.append(op_id)
                                    offs_.append(off)
                            else:
                                ack_procs.add(proc)
                            last = st[2]
                            if last is None:
                                first_ok[tp] = t
                            elif t - last > gap_s:
                                gaps.append((tp, last, t))
                            st[2] = t
                            if open_faults:
                                self._fault_progress(tp, t)
                            if (zk_below and tp in zk_below) or (admin_below and tp in admin_below):
                                if producer(proc).acks == ACKS_ALL:
                                    isr.ack(tp, t_inv, t, value, off, proc)
                        elif phase == "fail":
                            self.n_fail += 1
                            err = ev.get("error") or "unknown"
                            self._err(proc, t, err)
                            self.failed[value] = (err, proc)
                            self.errors[err] = self.errors.get(err, 0) + 1
                            if err == "NOT_ENOUGH_REPLICAS":
                                self.n_not_enough_replicas += 1
                        elif phase == "info":
                            self.n_info += 1
                            err = ev.get("error") or "unknown"
                            self._err(proc, t, err)
                            self.unsure[value] = (rec[0] if rec is not None else None, t, err)
                            self.errors[err] = self.errors.get(err, 0) + 1
                            if err == "_MSG_TIMED_OUT":
                                self.timeouts[proc] = self.timeouts.get(proc, 0) + 1
                        else:
                            raise ValueError(f"event seq {ev.get('seq')}: send phase {phase!r} "
                                             "is not invoke/ok/fail/info")
                    elif f == "poll" or f == "drain":
                        if phase != "ok":
                            continue
                        value = ev["value"]
                        topic = ev["topic"]
                        part = ev["partition"]
                        off = ev["offset"]
                        try:
                            st = part_of[topic][part]
                        except KeyError:
                            st = intern_part(topic, part)
                        tp = st[0]
                        # the value's record, found by position when the value was the first seen at this offset (no
                        # hash of the value: the final drain reads long after the sends, where a hash slot is cold)
                        try:
                            r = st[1][off] if off >= 0 else pos_get(st, off)
                        except IndexError:              # past the end of the partition's list
                            r = None
                        except (KeyError, TypeError):   # a dict's missing key, or not an int
                            r = pos_get(st, off)
                        if r is None:                   # the first value seen at this offset
                            r = vals.get(value)
                            if r is None:
                                r = vals[value] = [unsent, None, None, None, False, value, None]
                            pos_put(st, off, r)
                            clash = False
                        elif r[5] is value or r[5] == value:
                            clash = False
                        else:                           # another value was seen there first
                            clash = True
                            old = r[5]
                            r = vals.get(value)
                            if r is None:
                                r = vals[value] = [unsent, None, None, None, False, value, None]
                        prev = r[3]
                        # a read again where the value was first read finds its conflict there (if any) already
                        # filed: nothing to do; otherwise a new position for the value (a partition's tp is one tuple)
                        if prev is not tp or r[6] != off:
                            if clash:
                                self._conflict(tp, off, old, value)
                            if prev is None:
                                r[3] = tp
                                r[6] = off
                                if r[0] is unsent:
                                    unsent_reads.append(value)
                            else:
                                self._dup(value, (prev, r[6]), (tp, off))
                        if f == "drain":
                            n_drain += 1
                            if not r[4]:
                                r[4] = True
                                if r[1] is not None:
                                    n_acked_drained += 1
                        else:
                            n_poll += 1
                            pl = st[4]
                            proc = ev["process"]
                            try:
                                last = pl[proc]
                            except KeyError:
                                last = None
                            if last is not None:
                                if off <= last:
                                    self.poll_back.append((proc, tp, last, off))
                                elif off > last + 1:
                                    self.poll_gap.append((proc, tp, last, off))
                            pl[proc] = off
                    else:
                        raise ValueError(f"event seq {ev.get('seq')}: client f {f!r} is not send/poll/drain")
                elif typ == "zk.partition_state":
                    isr.zk_state(ev)
                elif typ == "admin.metadata":
                    isr.admin_metadata(ev)
                elif typ == "partition.end":
                    self.ends[(ev.get("topic"), ev.get("partition"))] = int(ev["end_offset"])
                elif typ == "client.config":
                    self._client_config(ev)
                elif typ == "partition.absent":
                    self.absent[(ev.get("topic"), ev.get("partition"))] = str(ev.get("reason") or "absent")
                elif typ == "action" and ev.get("action") == "delete_topic":
                    self.deleted_topics.add((ev.get("params") or {}).get("topic"))
                elif typ == FAULT_START:
                    self._fault_start(ev)
                elif typ == "zk.topic":
                    isr.zk_topic(ev)
                elif typ == "phase":
                    self.phases.append((ev.get("name"), ev["t"]))
                elif typ == "client.producer_id":
                    self.pids.setdefault(ev["process"], []).append(
                        (ev["t"], ev.get("producer_id"), ev.get("producer_epoch"), ev.get("epoch_cnt"),
                         ev.get("instance")))
                elif typ == "client.life":
                    if ev.get("state") == "fatal":
                        self.fatal.append(ev)
        except (KeyError, TypeError) as e:
            raise malformed(ev, e) from None

        self.n_invoke, self.n_ok, self.n_poll, self.n_drain = n_invoke, n_ok, n_poll, n_drain
        self.all_acked_drained = n_acked_drained == n_acked
        self.first_invoke_t, self.last_invoke_t = first_invoke_t, last_invoke_t
        self.unfinished = sum(map(len, inv.values()))
        self.pos = {st[0]: st[1] for st in parts if st[1]}
        self.last_ok = {st[0]: st[2] for st in parts if st[2] is not None}
        self.send_order = dict(send_keys)
        isr.finish()
        return self

    # -- the value records, read by the judge ----------------------------------------------
    def sender(self, value):
        """The process of the value's last invoke, or None."""
        r = self.vals.get(value)
        return None if r is None or r[0] is UNSENT else r[0]

    def ack_of(self, value) -> tuple | None:
        """The value's last ack ``(tp, offset, t_inv, t_ok, process)``, or None."""
        r = self.vals.get(value)
        return None if r is None else r[1]

    def read_of(self, value) -> tuple | None:
        """The value's first read position ``(tp, offset)``, or None."""
        r = self.vals.get(value)
        return None if r is None or r[3] is None else (r[3], r[6])

    def acks(self):
        """Every acked value's last ack (an iterator)."""
        return filter(None, map(_ack, self.vals.values()))

    def offsets(self, tp) -> dict:
        """The offsets of partition ``tp`` where a value was seen (acked or read): a dict's keys (made once)."""
        known = self._offsets.get(tp)
        if known is None:
            table = self.pos.get(tp)
            if table is None:
                known = {}
            else:
                known = table if type(table) is dict else dict.fromkeys(compress(range(len(table)), table))
            self._offsets[tp] = known
        return known

    def acked_undrained(self) -> list:
        """The acked values the final drain did not read, in the order of their first acks."""
        if self.all_acked_drained:
            return []
        vals = self.vals
        return sorted((v for v in compress(vals, map(not_, map(_drained, vals.values()))) if vals[v][1] is not None),
                      key=lambda v: vals[v][2])

    def unexpected(self) -> list:
        """The values read that no send invoked, in the order of their first reads."""
        vals = self.vals
        return [v for v in self.unsent_reads if vals[v][0] is UNSENT]

    # -- rarer events, kept out of the hot loop --------------------------------------------
    def _err(self, proc, t, err) -> None:
        lst = self.err_log.get(proc)
        if lst is None:
            self.err_log[proc] = [(t, err)]
        else:
            lst.append((t, err))

    def _fault_start(self, ev: dict) -> None:
        rec = {"fault_id": ev.get("fault_id"), "fault": ev.get("fault"), "target": ev.get("target"),
               "t": ev["t"], "first_ok_s": None, "all_partitions_ok_s": None}
        self.faults.append(rec)
        self._open_faults.append([rec, set(self.first_ok)])     # the partitions with an ack so far

    def _fault_progress(self, tp, t: float) -> None:
        still = []
        for entry in self._open_faults:
            rec, pending = entry
            if rec["first_ok_s"] is None:
                rec["first_ok_s"] = round(t - rec["t"], 6)
            pending.discard(tp)
            if pending:
                still.append(entry)
            else:
                rec["all_partitions_ok_s"] = round(t - rec["t"], 6)
        self._open_faults[:] = still
