"""Durability, consistency and availability checks over a run record's events.

Entry point: :func:`check_durability` (``events`` from ``events.jsonl`` and the run's
``metadata.json``). Pure: no cluster, no clock, no I/O. The meaning of every check and of
its verdict is documented in ``docs/checkers.md``.

Check verdicts: ``PASS`` (nothing found), ``FAIL`` (the broker broke a promise the
configuration makes), ``ALLOWED`` (anomalies found, but the configuration permits them, e.g.
loss with ``acks=1``), ``UNKNOWN`` (the history cannot decide, e.g. no final drain).
The overall verdict is ``FAIL`` if any check failed, else ``UNKNOWN`` if any was unknown,
else ``PASS``.
"""

from __future__ import annotations

import bisect
import math
from typing import Iterable

from harness.checkers.common import check_result, gc_paused, merge_options
from harness.checkers.common import file_example as _file
from harness.checkers.common import pos as _pos
from harness.checkers.config import ProducerFacts, RunFacts
from harness.checkers.coverage import FATAL_ERRORS, fatal_points_at
from harness.checkers.scan import Scan
from harness.record.verdicts import ALLOWED, CHECK_VERDICTS, FAIL, PASS, UNKNOWN

__all__ = ["ALLOWED", "CHECK_VERDICTS", "DEFAULT_OPTIONS", "FAIL", "PASS", "UNKNOWN", "check_durability",
           "check_run_record"]

# ZooKeeper's txn-log times are milliseconds of the host's clock, placed on the record's clock through the
# watch's own wall/t pair: an ack this close to a state change may have been decided under either state
TXNLOG_MARGIN_S = 0.05

DEFAULT_OPTIONS = {
    "max_examples": 20,  # examples kept per check
    "unavailable_window_s": 5.0,  # a partition without a successful ack for longer is reported
    "availability_limit_s": None,  # if set, a longer window fails the availability check
    "isr_lag_s": 1.0,  # trust margin at both ends of an observed ISR-below-min window
    "max_skip_scan": 10_000,  # poll-skip gaps wider than this use a sorted index instead of a scan
}


def check_durability(events: Iterable[dict], metadata: dict, options: dict | None = None) -> dict:
    """Judge a run: ``{"verdict", "reason", "checks": {name: {...}}, "stats": {...}}``.

    ``events`` are the run's events in ``seq`` order (a list or any iterable of dicts);
    ``metadata`` the run's metadata.json (``broker_config``, ``topics``, ``workload``,
    ``kafka_version`` are used). ``options`` override :data:`DEFAULT_OPTIONS`.
    """
    opts = merge_options(DEFAULT_OPTIONS, options, "durability")
    facts = RunFacts(metadata)
    with gc_paused():
        scan = Scan(facts, isr_lag_s=float(opts["isr_lag_s"]), gap_s=float(opts["unavailable_window_s"]))
        scan.run(events)
        result = _Judge(scan, facts, opts).result()
        # freed while the collector is still off: re-enabled with millions of young objects alive, its
        # first collection would traverse them all (~8 % of a 1M-op check) only to free them right after
        del scan
    return result


def check_run_record(record) -> dict:
    """Convenience: :func:`check_durability` over a :class:`harness.record.RunRecord`."""
    return check_durability(record.events, record.metadata)


class _Judge:
    """Turns a finished :class:`Scan` into per-check verdicts."""

    def __init__(self, scan: Scan, facts: RunFacts, opts: dict):
        self.scan = scan
        self.facts = facts
        self.opts = opts
        self.k = int(opts["max_examples"])
        self._unclean_cfg: dict[str, bool] = {}
        self.has_drain = bool(scan.ends) or scan.n_drain > 0 or bool(scan.absent)
        self.lossy_tps: set = set()  # partitions where the configuration permits loss / truncation
        self._txn_sorted: dict = {}  # tp -> the txn log's (commit t, ISR size) in time order, sorted once

    # -- allowances ------------------------------------------------------------------------
    def unclean(self, tp) -> str | None:
        if tp in self.scan.isr.unclean_observed:
            return "unclean leader election observed (leader_recovery_state=1)"
        topic = tp[0]
        on = self._unclean_cfg.get(topic)
        if on is None:
            on = self._unclean_cfg[topic] = self.facts.unclean_enabled(topic)
        return "unclean.leader.election.enable=true" if on else None

    def loss_allowance(self, pf: ProducerFacts, tp) -> str | None:
        if pf.may_lose:
            return f"acks={pf.acks}"
        return self.unclean(tp)

    def tp_allowance(self, tp) -> str | None:
        if tp in self.lossy_tps:
            return self.unclean(tp) or "a producer with acks=0/1 wrote to this partition"
        return None

    # -- checks ------------------------------------------------------------------------------
    def lost_and_unseen(self) -> tuple[dict, dict]:
        s = self.scan
        ends = s.ends
        # every acked value's producer (and perhaps a few more, whose acks a later ack of the value replaced)
        cache: dict[str, ProducerFacts] = {p: s.producer(p) for p in s.ack_procs}
        lost, unseen = [], []
        lossy = self.lossy_tps
        lossy_procs = {p for p, pf in cache.items() if pf.may_lose}
        if lossy_procs:
            lossy.update(x[0] for x in s.acks() if x[4] in lossy_procs)
        for value in s.acked_undrained():     # in the order of their first acks, as before
            tp, off, _t_inv, t_ok, proc = s.ack_of(value)
            end = ends.get(tp)
            entry = (value, tp, off, proc, t_ok)
            if (end is not None and (off is None or off < end)) or tp in s.absent:
                lost.append(entry)
            else:
                unseen.append(entry)
        for tp in s.isr.unclean_observed:
            lossy.add(tp)
        for tp in set(s.pos) | set(ends):
            if self.unclean(tp):
                lossy.add(tp)

        def describe(entries):
            out_fail, out_allowed = [], []
            for value, tp, off, proc, t_ok in entries:
                d = {"value": value, **_pos(tp, off), "process": proc, "acked_t": t_ok}
                gone = s.absent.get(tp)
                if gone is None:
                    why = self.loss_allowance(cache[proc], tp)
                else:   # no acks setting excuses a partition that ceased to exist; a deletion the scenario asked for does
                    d["partition_absent"] = gone
                    why = f"the scenario deleted topic {tp[0]}" if tp[0] in s.deleted_topics else None
                _file(d, why, out_fail, out_allowed)
            for lst in (out_fail, out_allowed):
                lst.sort(key=lambda d: (str(d["topic"]), d["partition"] if d["partition"] is not None else -1,
                                        d["offset"] if d["offset"] is not None else -1))
            return out_fail, out_allowed

        lf, la = describe(lost)
        uf, ua = describe(unseen)
        if not self.has_drain:
            reason = "no final drain (no drain reads and no partition.end events): loss cannot be judged"
            lost_c = {"verdict": UNKNOWN, "count": 0, "reason": reason, "examples": []}
            unseen_c = {"verdict": UNKNOWN, "count": len(uf) + len(ua), "reason": reason,
                        "examples": (uf + ua)[: self.k]}
            return lost_c, unseen_c
        if lf:
            gone = sum(1 for d in lf if "partition_absent" in d)
            v, why = FAIL, f"{len(lf)} acknowledged writes are missing from the final drain" + (
                f" ({gone} on partitions the brokers say no longer exist)" if gone else "")
        elif la:
            v, why = ALLOWED, f"{len(la)} acknowledged writes lost, as the configuration permits"
        else:
            v, why = PASS, "every acknowledged write within the drained range was read"
        lost_c = {"verdict": v, "count": len(lf) + len(la), "violations": len(lf), "allowed": len(la),
                  "reason": why, "examples": (lf + la)[: self.k]}
        undrained = sorted({(str(d["topic"]), d["partition"]) for d in uf + ua
                            if (d["topic"], d["partition"]) not in ends})
        if uf:
            v, why = UNKNOWN, (f"{len(uf)} acknowledged writes lie beyond the end offset of the final drain "
                               "(not yet committed, or lost): heal the cluster and drain again")
        elif ua:
            v, why = ALLOWED, f"{len(ua)} acknowledged writes unseen, as the configuration permits loss"
        else:
            v, why = PASS, "no acknowledged write beyond the drained end offsets"
        unseen_c = {"verdict": v, "count": len(uf) + len(ua), "violations": len(uf), "allowed": len(ua),
                    "reason": why, "undrained_partitions": [list(x) for x in undrained[: self.k]],
                    "examples": (uf + ua)[: self.k]}
        return lost_c, unseen_c

    def epoch_evidence(self, value, proc) -> dict | None:
        """What the producer's recorded id / epoch (``client.producer_id``) says about the copies of an
        idempotent ``value``: ``{"class": "across-epoch-bump" | "within-epoch", ...}``, or None when the
        record cannot tell (no samples around the send: older records, a producer that died first).

        librdkafka's ``epoch_cnt`` counts producer-id assignments (an epoch bump is one), so an unchanged
        (producer id, epoch, epoch_cnt) from before the send's invoke to after its completion proves no
        bump happened while it was outstanding; a change inside that time is the bump (between two samples)."""
        s = self.scan
        samples = s.pids.get(proc)
        life = s.ack_of(value)
        life = (life[2], life[3]) if life is not None else (s.unsure.get(value) or (None, None))[:2]
        t_inv, t_done = life
        if not samples or t_inv is None or t_done is None:
            return None
        key = lambda x: (x[1], x[2], x[3])   # noqa: E731
        for a, b in zip(samples, samples[1:]):
            # a change between samples a and b: the bump happened in (a.t, b.t]; it overlaps the send's life
            if key(a) != key(b) and a[0] < t_done and b[0] >= t_inv:
                errs = list(dict.fromkeys(f"{e} at {t:.1f} s" for t, e in s.err_log.get(proc, ())
                                          if a[0] - 5.0 <= t <= b[0]))      # once each, in order
                return {"class": "across-epoch-bump", "producer_id": b[1], "epochs": [a[2], b[2]],
                        "producer_ids": [a[1], b[1]], "bump_between_s": [a[0], b[0]],
                        "ambiguous_errors": errs[-5:]}
        before = [x for x in samples if x[0] <= t_inv]
        after = next((x for x in samples if x[0] >= t_done), None)
        if after is None:
            return None                          # no sample after the completion: cannot tell
        if before and key(before[-1]) != key(after):
            return None
        if not before and after[3] != 1:
            return None                          # no sample before the send, and more than one assignment
        after = [after]
        return {"class": "within-epoch", "producer_id": after[0][1], "epochs": [after[0][2]],
                "epoch_cnt": after[0][3]}

    def duplicates(self) -> dict:
        s = self.scan
        fail, allowed = [], []
        classes = {"across-epoch-bump": 0, "within-epoch": 0, "no-evidence": 0}
        for value, positions in s.dups.items():
            proc = s.sender(value)
            pf = s.producer(proc) if proc is not None else None
            why = None
            ev = self.epoch_evidence(value, proc) if pf is not None and pf.idempotent and s.pids else None
            if ev is not None:
                classes[ev["class"]] += 1
            elif pf is not None and pf.idempotent:
                classes["no-evidence"] += 1
            if pf is None or not pf.idempotent:
                why = "producer without idempotence (retries may duplicate)"
            elif ev is not None and ev["class"] == "across-epoch-bump":
                a, b = ev["bump_between_s"]
                errs = ", ".join(ev["ambiguous_errors"]) or "no error recorded near it"
                why = (f"across a producer-epoch bump of {proc} (producer id {ev['producer_ids'][0]} epoch "
                       f"{ev['epochs'][0]} -> id {ev['producer_ids'][1]} epoch {ev['epochs'][1]}, between "
                       f"{a:.1f} and {b:.1f} s; ambiguous errors: {errs}): the client re-sent in-flight messages "
                       "under the new epoch with new sequence numbers; Kafka de-duplicates only within one "
                       "producer id and epoch (KIP-98, KIP-360), librdkafka documents that in-flight messages "
                       "may be written again after a bump (INTRODUCTION.md, Idempotent Producer)")
            elif ev is not None and ev["class"] == "within-epoch":
                why = self.tp_allowance(next(iter(positions))[0])   # the broker failed to de-duplicate: FAIL
            elif s.timeouts.get(proc):
                # librdkafka cannot retry a timed-out message under the same sequence: it drains the
                # partition, bumps the producer epoch and re-sends what was in flight with new
                # sequence numbers, so a copy already written is written again (librdkafka #4953)
                why = (f"idempotent producer with {s.timeouts[proc]} message timeouts (_MSG_TIMED_OUT): the "
                       "epoch bump that follows may re-send in-flight messages")
            else:
                why = next((self.tp_allowance(tp) for tp, _ in positions if self.tp_allowance(tp)), None)
            d = {"value": value, "process": proc, "positions": [_pos(tp, o) for tp, o in positions]}
            if ev is not None:
                d.update(ev)
            elif pf is not None and pf.idempotent:
                d["class"] = "no-evidence"
            _file(d, why, fail, allowed)
        out = self._verdict(fail, allowed, "values read at more than one offset")
        if any(classes.values()):
            out["classes"] = classes
        return out

    def producer_fatal(self) -> dict:
        """Fatal errors of idempotent producers that point at the broker (coverage.FATAL_ERRORS): a
        finding with its evidence. The others are the client's (a coverage shortfall, not judged here)."""
        s = self.scan
        fail, client = [], []
        for ev in s.fatal:
            proc, err, t = ev.get("process"), ev.get("error"), ev.get("t")
            acked = ev.get("acked_before")
            if acked is None:
                acked = sum(1 for x in s.acks() if x[4] == proc and x[3] <= t)
            d = {"process": proc, "error": err, "t": t, "acked_before": acked, "detail": ev.get("detail"),
                 "points_at": fatal_points_at(err, acked),
                 "why": FATAL_ERRORS.get(str(err), ("client", "not a known broker-side cause"))[1]}
            pid = [x for x in s.pids.get(proc, ()) if x[0] <= t]
            if pid:
                d["producer_id"], d["producer_epoch"] = pid[-1][1], pid[-1][2]
            (fail if d["points_at"] == "broker" else client).append(d)
        out = self._verdict(fail, [], "fatal producer errors that point at the broker")
        out["client_errors"] = client[: self.k]
        return out

    def inconsistent_offsets(self) -> dict:
        fail, allowed = [], []
        for (tp, off), values in self.scan.conflicts.items():
            d = {**_pos(tp, off), "values": values}
            why = self.tp_allowance(tp)
            _file(d, why, fail, allowed)
        return self._verdict(fail, allowed, "offsets seen with more than one value (sends, polls, drain)")

    def nonmonotonic_send(self) -> dict:
        s = self.scan
        fail, allowed = [], []
        for (proc, topic, part), (ops, offs, ordered) in s.send_order.items():
            if ordered:     # acks in increasing op id order with increasing offsets (the scan compared them)
                continue
            lst = sorted(zip(ops, offs))    # otherwise (or op ids that do not compare) the sort decides
            offs = [o for _, o in lst]
            if offs == sorted(offs) and len(set(offs)) == len(offs):
                continue
            tp = (topic, part)
            pf = s.producer(proc)
            why = None if pf.ordered else "producer may reorder (no idempotence, retries with >1 request in flight)"
            why = why or self.tp_allowance(tp)
            for (op0, o0), (op1, o1) in zip(lst, lst[1:]):
                if o1 <= o0:
                    d = {"process": proc, **_pos(tp, o1), "op_id": op1, "previous_op_id": op0, "previous_offset": o0}
                    _file(d, why, fail, allowed)
        return self._verdict(fail, allowed, "acknowledged offsets not increasing in send order")

    def _assign(self, proc) -> bool:
        return self.scan.consumer_mode.get(proc) == "assign"

    def nonmonotonic_poll(self) -> dict:
        fail, allowed = [], []
        for proc, tp, prev, cur in self.scan.poll_back:
            if not self._assign(proc):
                continue
            d = {"process": proc, **_pos(tp, cur), "previous_offset": prev}
            why = self.tp_allowance(tp)
            _file(d, why, fail, allowed)
        return self._verdict(fail, allowed, "assign-mode consumer read an offset not after its previous one")

    def poll_skip(self) -> dict:
        s = self.scan
        fail, allowed = [], []
        index: dict = {}
        for proc, tp, prev, cur in s.poll_gap:
            if not self._assign(proc):
                continue
            known = s.offsets(tp)
            if cur - prev - 1 <= self.opts["max_skip_scan"]:
                skipped = [o for o in range(prev + 1, cur) if o in known]
            else:
                keys = index.get(tp)
                if keys is None:
                    keys = index[tp] = sorted(o for o in known if o is not None)
                skipped = keys[bisect.bisect_right(keys, prev): bisect.bisect_left(keys, cur)]
            if not skipped:
                continue  # nothing is known to live in the gap
            d = {"process": proc, **_pos(tp, cur), "previous_offset": prev, "skipped": len(skipped),
                 "skipped_offsets": skipped[:10]}
            why = self.tp_allowance(tp)
            _file(d, why, fail, allowed)
        return self._verdict(fail, allowed, "assign-mode consumer jumped over offsets holding known values")

    def isr_met_meanwhile(self, v: dict) -> bool:
        """Does ZooKeeper's transaction log show the partition's ISR at or above the minimum at some moment
        of the ack's life (invoke to ok, widened by TXNLOG_MARGIN_S)? The watch sees only the latest state
        when it re-reads a znode, so it can miss a short expansion: then the window it drew is wrong there,
        and the broker may have acknowledged the write under the larger ISR."""
        tp = (v["topic"], v["partition"])
        states = self._txn_sorted.get(tp)
        if states is None:
            states = self._txn_sorted[tp] = sorted(self.scan.isr.txn_isr.get(tp, ()))
        if not states:
            return False
        lo, hi, need = v["invoke_t"] - TXNLOG_MARGIN_S, v["ok_t"] + TXNLOG_MARGIN_S, v["min_isr"]
        i = bisect.bisect_right(states, (lo, math.inf))
        if i and states[i - 1][1] >= need:       # the state in effect when the write was sent
            return True
        return any(size >= need for t, size in states[i:] if t <= hi)

    def acks_semantics(self) -> dict:
        s = self.scan
        zk, adm = s.isr.zk, s.isr.admin
        zk_violations = [v for v in zk.violations if not self.isr_met_meanwhile(v)]
        violations = zk_violations + [v for v in adm.violations if (v["topic"], v["partition"]) not in zk.seen]
        windows = list(zk.windows) + [w for w in adm.windows if (w["topic"], w["partition"]) not in zk.seen]
        out = {"count": len(violations), "isr_below_min_windows": len(windows),
               "observed_partitions": len(zk.seen | adm.seen),
               "not_enough_replicas_fails": s.n_not_enough_replicas,
               "isr_lag_s": self.opts["isr_lag_s"],
               "windows": windows[: self.k],
               "examples": violations[: self.k]}
        if len(zk_violations) < len(zk.violations):
            out["excused_by_txnlog"] = len(zk.violations) - len(zk_violations)
            out["txnlog_note"] = ("acks inside a window the watch drew, during which ZooKeeper's transaction log "
                                  "shows the ISR back at or above the minimum (a state the watch missed): not counted")
        if violations:
            out.update(verdict=FAIL, reason=(f"{len(violations)} acks=all writes acknowledged while the ISR was "
                                             "below the effective min.insync.replicas"))
        else:
            out.update(verdict=PASS, reason="no acks=all write acknowledged inside an ISR-below-min window")
            if not (zk.seen or adm.seen):
                out["note"] = "no ISR observations (zk.partition_state / admin.metadata): nothing to check against"
        return out

    def failed_visible(self) -> dict:
        s = self.scan
        fail = []
        for value, (err, proc) in s.failed.items():
            at = s.read_of(value)
            if at is not None:
                fail.append({"value": value, "process": proc, "error": err, **_pos(*at)})
        return self._verdict(fail, [], "writes that failed definitely but were read")

    def unexpected_values(self) -> dict:
        s = self.scan
        extra = s.unexpected()
        fail = [{"value": v, **_pos(*s.read_of(v))} for v in sorted(extra, key=str)[: self.k]]
        out = self._verdict(fail, [], "values read that no send invoked")
        out["count"] = len(extra)
        return out

    def availability(self) -> dict:
        s = self.scan
        gap_s = float(self.opts["unavailable_window_s"])
        start = s.first_invoke_t
        for name, t in s.phases:
            if name == "workload.start" and (start is None or t < start):
                start = t
        end = s.last_invoke_t
        windows = [(tp, a, b) for tp, a, b in s.gaps]
        if start is not None and end is not None:
            for tp in set(s.first_ok) | set(s.ends):
                first, last = s.first_ok.get(tp), s.last_ok.get(tp)
                if first is None:
                    if end - start > gap_s:
                        windows.append((tp, start, end))
                    continue
                if first - start > gap_s:
                    windows.append((tp, start, first))
                if end - last > gap_s:
                    windows.append((tp, last, end))
        # longest first; ties in topic, partition and start order, so that re-judging a record gives the
        # same examples whatever the interpreter's string hashing (the partitions come from sets)
        windows.sort(key=lambda w: (w[1] - w[2], str(w[0][0]), -1 if w[0][1] is None else w[0][1], w[1]))
        longest: dict[str, float] = {}
        for tp, a, b in windows:
            key = f"{tp[0]}/{tp[1]}"
            longest[key] = max(longest.get(key, 0.0), round(b - a, 6))
        lat = sorted(s.latencies)
        out = {
            "count": len(windows),
            "threshold_s": gap_s,
            "longest_s": round(windows[0][2] - windows[0][1], 6) if windows else 0.0,
            "longest_by_partition": longest,
            "latency_s": {"n": len(lat), "p50": _pct(lat, 0.50), "p99": _pct(lat, 0.99),
                          "max": round(lat[-1], 6) if lat else None},
            "faults": s.faults,
            "examples": [{"topic": tp[0], "partition": tp[1], "from_t": a, "to_t": b, "duration_s": round(b - a, 6)}
                         for tp, a, b in windows[: self.k]],
        }
        limit = self.opts["availability_limit_s"]
        if limit is not None and windows and windows[0][2] - windows[0][1] > limit:
            out.update(verdict=FAIL, reason=f"a partition had no successful ack for {out['longest_s']} s "
                                            f"(limit {limit} s)")
        else:
            out.update(verdict=PASS, reason=f"{len(windows)} windows without a successful ack longer than {gap_s} s"
                                            " (informational)")
        return out

    # -- assembly ------------------------------------------------------------------------------
    def _verdict(self, fail: list, allowed: list, what: str) -> dict:
        return check_result(fail, allowed, what, self.k)

    def result(self) -> dict:
        lost, unseen = self.lost_and_unseen()  # first: fills lossy_tps used by the others
        checks = {
            "lost": lost,
            "unseen": unseen,
            "duplicates": self.duplicates(),
            "producer_fatal": self.producer_fatal(),
            "inconsistent_offsets": self.inconsistent_offsets(),
            "nonmonotonic_send": self.nonmonotonic_send(),
            "nonmonotonic_poll": self.nonmonotonic_poll(),
            "poll_skip": self.poll_skip(),
            "acks_semantics": self.acks_semantics(),
            "failed_visible": self.failed_visible(),
            "unexpected_values": self.unexpected_values(),
            "availability": self.availability(),
        }
        s = self.scan
        stats = {"sends": s.n_invoke, "acked": s.n_ok, "failed": s.n_fail, "unknown": s.n_info,
                 "unfinished": s.unfinished, "polled": s.n_poll, "drained": s.n_drain,
                 "partitions_drained": len(s.ends), "errors": dict(sorted(s.errors.items())),
                 "faults": len(s.faults)}
        failed = [f"{n} ({c['count']})" for n, c in checks.items() if c["verdict"] == FAIL]
        unknown = [n for n, c in checks.items() if c["verdict"] == UNKNOWN]
        allowed = [f"{n} ({c['count']})" for n, c in checks.items() if c["verdict"] == ALLOWED]
        if failed:
            verdict, reason = FAIL, "failed checks: " + ", ".join(failed)
        elif s.n_invoke == 0 and s.n_ok == 0:
            verdict, reason = UNKNOWN, "no client sends in the history"
        elif unknown:
            verdict, reason = UNKNOWN, "undecided checks: " + ", ".join(
                f"{n}: {checks[n]['reason']}" for n in unknown)
        else:
            verdict, reason = PASS, "all durability checks passed"
            if allowed:
                reason += "; allowed by configuration: " + ", ".join(allowed)
        return {"verdict": verdict, "reason": reason, "checks": checks, "stats": stats}


def _pct(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return None
    i = max(0, math.ceil(q * len(sorted_values)) - 1)
    return round(sorted_values[i], 6)
