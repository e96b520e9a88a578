"""Share-group checks (KIP-932, queues for Kafka) over a run record. Pure: no I/O, no clock.

Entry point: :func:`check_share` (``events`` from ``events.jsonl``, the run's ``metadata.json``). The
history (docs/share-groups.md "History"): the producers' ``client`` sends; per member ``share.fetch``
(a poll call begins: its ``t`` is the earliest moment the broker may have acquired what that poll
returns), ``share.poll`` (a record delivered to a member and processed: ``fetch_t``, ``delivery_count``),
``share.ack`` (the member acknowledged it locally: ``ack`` accept | release | reject),
``share.ack_result`` (the broker's answer to an acknowledgement commit: ``offsets`` of one partition,
``error`` or null), ``share.member_crashed`` / ``client.life`` (a member ended), ``share.drain`` (the end:
``idle`` when no member got anything for the drain's quiet period).

A record holds an *acquisition* from the moment a poll acquired it (between its ``share.fetch`` and
its ``share.poll``) until the member acknowledges it, leaves, or the lock expires
(``record_lock_duration_ms`` after the acquisition, so not before ``fetch_t`` + lock). Final states: a
confirmed accept or reject; archived after ``delivery_count_limit`` deliveries.

- ``share-lost``: an acknowledged write that never reached a final state: never delivered to any member,
  or accepted without having been processed (an application that acknowledges before processing).
  FAIL once the drain ended idle; UNKNOWN (undecided) when the run has no idle drain.
- ``share-not-redelivered``: a record whose last delivery ended without a final state (released,
  its lock timed out, its member crashed) with fewer than the limit's deliveries, and not delivered
  again by the idle end of the run. FAIL (UNKNOWN without an idle drain).
- ``share-double-hold``: a record delivered while another acquisition of it (by any member) certainly
  still held its lock. FAIL.
- ``share-redelivered-after-final``: a record delivered again by a poll that began after the broker
  confirmed its accept or reject. FAIL.
- ``share-delivery-count``: a record's delivery count going down from one delivery to the next, a
  first delivery with a count below 1, or a delivery beyond the limit. FAIL.
- ``share-dlq`` (only when the workload names a dead-letter topic, ``dlq_topic``; share.version 2, Kafka
  4.4+): every record rejected (confirmed) or archived at the limit has a record in the dead-letter topic
  naming it (headers ``__dlq.errors.topic`` / ``partition`` / ``offset``), and no accepted record has
  one. FAIL; UNKNOWN when the record has no read of the dead-letter topic (``share.dlq_read``).
- ``share-spso-backwards`` (when the record has the SPSO sampler's ``share.spso_sampler``): the
  share-partition start offset (SPSO) sampled with DescribeShareGroupOffsets (``share.spso``: the
  offset persisted in ``__share_group_state``) went down for a (group, topic, partition): a sample
  below an earlier one, across partition leader changes and share-coordinator moves alike. FAIL with
  the two samples. Kafka only moves it forward (the share coordinator keeps ``max(new, old)`` on every
  state write: ``ShareCoordinatorShard.generateShareStateRecord``, kafka-share-coordinator-4.4.0.jar);
  only an administrator's reset (AlterShareGroupOffsets / DeleteShareGroupOffsets, never in a run)
  moves it back. UNKNOWN when the sampler got no answer at all.
- ``share-spso-delivered-below``: a record delivered by a poll that began after a sample had put the
  SPSO above its offset (every record below the SPSO is acknowledged or archived: it is never delivered
  again). FAIL.
- ``share-deliveries``: figures (deliveries, redeliveries, acknowledgements by type, archived records).
  Always PASS.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Iterable

from harness.checkers.common import check_result, gc_paused, malformed, merge_options, overall
from harness.record.events import CLIENT, CLIENT_LIFE, SHARE_SPSO, SHARE_SPSO_SAMPLER
from harness.record.verdicts import FAIL, PASS, UNKNOWN

__all__ = ["CHECK_ORDER", "DEFAULT_OPTIONS", "ShareHistory", "check_share", "maybe_applied"]

DEFAULT_OPTIONS = {"max_examples": 20, "slack_s": 0.2}
CHECK_ORDER = ("share-lost", "share-not-redelivered", "share-double-hold", "share-redelivered-after-final",
               "share-delivery-count", "share-dlq", "share-spso-backwards", "share-spso-delivered-below",
               "share-deliveries")
DEFAULT_LOCK_MS = 30_000      # group.share.record.lock.duration.ms (ShareGroupConfig, 4.4.0)
DEFAULT_LIMIT = 5             # group.share.delivery.count.limit (ShareGroupConfig, 4.4.0)
FINAL = ("accept", "reject")
ENDED = ("died", "stopped", "stalled", "fatal", "crashed", "closed")
# an acknowledgement commit that failed with one of these may still have been applied (no answer came back)
_MAYBE = ("TIMED_OUT", "TRANSPORT", "ALL_BROKERS_DOWN", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION",
          "COORDINATOR_NOT_AVAILABLE", "DESTROY", "_UNKNOWN")


def maybe_applied(error: str | None) -> bool:
    """Whether an acknowledgement that came back with ``error`` may still have been applied by the broker
    (a timeout, a lost connection); a definite error (INVALID_RECORD_STATE, ...) was not applied."""
    return error is not None and any(m in error.upper() for m in _MAYBE)


class _Delivery:
    __slots__ = ("process", "fetch_t", "t", "count", "ack", "ack_t", "result", "result_t", "result_error",
                 "seq", "group")

    def __init__(self, process, fetch_t, t, count, seq, group=None):
        self.process, self.fetch_t, self.t, self.count, self.seq = process, fetch_t, t, count, seq
        self.group = group
        self.ack = self.ack_t = self.result = self.result_t = self.result_error = None

    def to_dict(self) -> dict:
        return {"process": self.process, "fetch_t": self.fetch_t, "t": self.t, "delivery_count": self.count,
                "ack": self.ack, "ack_t": self.ack_t, "ack_result": self.result, "ack_error": self.result_error}


class ShareHistory:
    """One pass over the events: acknowledged writes, deliveries per record, acknowledgements."""

    def __init__(self):
        self.n_share_events = 0
        self.acked: set = set()                 # (topic, partition, offset) of acknowledged sends
        self.deliveries: dict = {}              # (topic, partition, offset) -> [_Delivery] in delivery order
        self.unprocessed_acks: dict = {}        # pos -> (process, ack, t) acknowledged with no delivery of it
        self.pending: dict = {}                 # (process, topic, partition, offset) -> _Delivery awaiting result
        self.ended: dict = {}                   # process -> [t of each sign of its end (crash, close)]
        self.fetch_t: dict = {}                 # process -> t of its last share.fetch
        self.members: set = set()
        self.drain: dict | None = None
        self.dlq: dict = {}                     # (topic, partition, offset) -> first share.dlq event naming it
        self.dlq_read: dict | None = None
        self.topics: set = set()
        self.orphan_results = 0
        self.spso_sampler: dict | None = None   # the SPSO sampler's start (share.spso_sampler)
        self.spso: dict = {}                    # (group, topic, partition) -> [share.spso events], record order
        self.spso_failed = 0                    # rounds or partitions the sampler got no SPSO for

    def run(self, events: Iterable[dict]) -> "ShareHistory":
        for ev in events:
            try:
                self._event(ev)
            except (KeyError, TypeError, ValueError) as e:
                raise malformed(ev, e) from e
        return self

    def _event(self, ev: dict) -> None:
        typ = ev["type"]
        if typ == CLIENT:
            if ev.get("f") == "send" and ev.get("phase") == "ok" and ev.get("offset") is not None:
                self.acked.add((ev["topic"], ev["partition"], ev["offset"]))
            return
        if typ == CLIENT_LIFE:
            if ev.get("role") == "share-consumer" and ev.get("state") in ENDED:
                self.ended.setdefault(ev["process"], []).append(ev["t"])
            return
        if not typ.startswith("share."):
            return
        self.n_share_events += 1
        proc = ev.get("process")
        if typ == "share.fetch":
            self.fetch_t[proc] = ev["t"]
            self.members.add(proc)
        elif typ == "share.poll":
            pos = (ev["topic"], ev["partition"], ev["offset"])
            self.topics.add(ev["topic"])
            fetch_t = ev.get("fetch_t")
            d = _Delivery(proc, fetch_t if fetch_t is not None else self.fetch_t.get(proc, ev["t"]), ev["t"],
                          ev.get("delivery_count"), ev["seq"], ev.get("group"))
            prev = self.pending.get((proc, *pos))
            if prev is not None and prev.fetch_t is None:   # acknowledged before processed: that acknowledgement
                d.ack, d.ack_t, d.result, d.result_t, d.result_error = (prev.ack, prev.ack_t, prev.result,
                                                                        prev.result_t, prev.result_error)
            self.deliveries.setdefault(pos, []).append(d)
            self.pending[(proc, *pos)] = d
        elif typ == "share.ack":
            pos = (ev["topic"], ev["partition"], ev["offset"])
            d = self.pending.get((proc, *pos))
            if d is None or d.ack is not None:
                self.unprocessed_acks.setdefault(pos, (proc, ev["ack"], ev["t"]))
                d = _Delivery(proc, None, None, None, ev["seq"])   # an acknowledgement of no processed delivery
                d.ack, d.ack_t = ev["ack"], ev["t"]
                self.pending[(proc, *pos)] = d
            else:
                d.ack, d.ack_t = ev["ack"], ev["t"]
        elif typ == "share.ack_result":
            for off in ev["offsets"]:
                d = self.pending.get((proc, ev["topic"], ev["partition"], off))
                if d is None or d.ack is None or d.result is not None:
                    self.orphan_results += 1
                    continue
                err = ev.get("error")
                d.result = "ok" if err is None else ("maybe" if maybe_applied(err) else "failed")
                d.result_t, d.result_error = ev["t"], err
                if d.fetch_t is None:       # the unprocessed acknowledgement: its result decides its state
                    self.unprocessed_acks[(ev["topic"], ev["partition"], off)] += (d.result,)
        elif typ == "share.member_crashed":
            self.ended.setdefault(proc, []).append(ev["t"])
        elif typ == "share.dlq":
            self.dlq.setdefault((ev.get("topic"), ev.get("partition"), ev.get("offset")), ev)
        elif typ == "share.dlq_read":
            self.dlq_read = ev
        elif typ == SHARE_SPSO:
            if ev.get("error") is not None or ev.get("partition") is None or ev.get("start_offset") is None:
                self.spso_failed += 1
            else:
                self.spso.setdefault((ev.get("group"), ev["topic"], ev["partition"]), []).append(ev)
        elif typ == SHARE_SPSO_SAMPLER:
            self.spso_sampler = self.spso_sampler or ev
        elif typ == "share.drain":
            self.drain = {"idle": bool(ev.get("idle")), "t": ev["t"], "seconds": ev.get("seconds")}

    def stats(self) -> dict:
        n = sum(len(v) for v in self.deliveries.values())
        acks: dict = {}
        for ds in self.deliveries.values():
            for d in ds:
                if d.ack:
                    acks[d.ack] = acks.get(d.ack, 0) + 1
        return {"share_events": self.n_share_events, "acknowledged_writes": len(self.acked),
                "records_delivered": len(self.deliveries), "deliveries": n,
                "redeliveries": n - len(self.deliveries), "acks": acks, "members": len(self.members),
                "unmatched_ack_results": self.orphan_results}


def check_share(events: Iterable[dict], metadata: dict, options: dict | None = None) -> dict:
    """Judge the share-group part of a run. ``applicable`` is False (verdict PASS, no checks) when the
    record holds no ``share.*`` event."""
    opts = merge_options(DEFAULT_OPTIONS, options, "share-check")
    wl = metadata.get("workload") or {}
    lock_s = int(wl.get("record_lock_duration_ms") or DEFAULT_LOCK_MS) / 1000
    limit = int(wl.get("delivery_count_limit") or DEFAULT_LIMIT)
    with gc_paused():
        h = ShareHistory().run(events)
        if not h.n_share_events:
            return {"verdict": PASS, "applicable": False, "checks": {}, "stats": h.stats(),
                    "reason": "no share-group events (share.*) in the record: nothing to check"}
        return _Judge(h, lock_s, limit, float(opts["slack_s"]), int(opts["max_examples"]),
                      wl.get("dlq_topic")).result()


def _spso(ev: dict) -> dict:
    """A ``share.spso`` sample as a FAIL example names it."""
    return {k: ev.get(k) for k in ("seq", "t", "start_offset", "leader_epoch", "coordinator")}


class _Judge:
    def __init__(self, h: ShareHistory, lock_s: float, limit: int, slack_s: float, k: int, dlq_topic=None):
        self.h, self.lock_s, self.limit, self.slack, self.k = h, lock_s, limit, slack_s, k
        self.dlq_topic = dlq_topic
        self.archived = 0

    def hold_end(self, d: _Delivery) -> float:
        """Until when delivery ``d``'s acquisition certainly held the record: its member's first
        acknowledgement of it, its member's end, or the earliest moment its lock could expire."""
        end = d.fetch_t + self.lock_s
        if d.ack_t is not None:
            end = min(end, d.ack_t)
        # a member ending (share.member_crashed, client.life died / stopped) leaves the group, and leaving
        # releases what it holds: its hold lasts until the first such sign after the delivery, and no
        # longer than the delivery itself when the member was already ending as it got the record
        marks = self.h.ended.get(d.process, ())
        if any(m < d.t for m in marks):
            return min(end, d.t)
        after = [m for m in marks if m >= d.t]
        return min([end, *after])

    @staticmethod
    def confirmed_final(d: _Delivery) -> bool:
        return d.ack in FINAL and d.result == "ok"

    def state(self, ds: list) -> str:
        """The record's state at the end: "final" (a confirmed or possibly applied accept / reject),
        "archived" (its last delivery reached the limit), or "open"."""
        for d in ds:
            if d.ack in FINAL and d.result in ("ok", "maybe"):
                return "final"
        last = ds[-1]
        if last.count is not None and last.count >= self.limit:
            return "archived"
        return "open"

    def endings(self) -> tuple[dict, dict]:
        lost, open_ = [], []
        for pos in sorted(self.h.acked):
            ds = self.h.deliveries.get(pos)
            un = self.h.unprocessed_acks.get(pos)
            if un is not None and (ds is None or all(not self.confirmed_final(d) for d in ds)):
                proc, ack, t = un[:3]
                result = un[3] if len(un) > 3 else None
                # acknowledged before processing: lost unless that member processed it after all
                if ack == "accept" and result in ("ok", "maybe") and not any(d.process == proc for d in ds or ()):
                    lost.append({"topic": pos[0], "partition": pos[1], "offset": pos[2], "why":
                                 "accepted without being processed", "process": proc, "ack_t": t})
                    continue
            if not ds:
                if un is None or un[1] != "reject":
                    lost.append({"topic": pos[0], "partition": pos[1], "offset": pos[2],
                                 "why": "never delivered to a member"})
                continue
            st = self.state(ds)
            if st == "archived":
                self.archived += 1
            elif st == "open":
                last = ds[-1]
                open_.append({"topic": pos[0], "partition": pos[1], "offset": pos[2],
                              "last_delivery": last.to_dict(), "deliveries": len(ds), "limit": self.limit})
        drain = self.h.drain
        undecided = None
        if drain is None:
            undecided = "the record has no share.drain: whether the members would still have got these is unknown"
        elif not drain["idle"]:
            undecided = "the drain ended while members still got records: the run stopped before the group did"
        return (self._end_check(lost, "acknowledged writes lost: never delivered, or accepted unprocessed (share-lost)",
                                undecided),
                self._end_check(open_, "records released or timed out and never delivered again (share-not-redelivered)",
                                undecided))

    def _end_check(self, items: list, what: str, undecided: str | None) -> dict:
        res = check_result(items, [], what, self.k)
        if items and undecided:
            res.update(verdict=UNKNOWN, reason=f"{len(items)} {what}, undecided: {undecided}")
        return res

    def double_hold(self) -> dict:
        fail = []
        for pos, ds in self.h.deliveries.items():
            if len(ds) < 2:
                continue
            for i in range(len(ds)):
                a = ds[i]
                end_a = self.hold_end(a) - self.slack
                for b in ds[i + 1:]:
                    end_b = self.hold_end(b) - self.slack
                    # a acquired within [a.fetch_t, a.t], b within [b.fetch_t, b.t]: the later of the two was
                    # acquired while the other held it if it lay inside the other's certain hold
                    later_b = b.fetch_t >= a.t and b.t < end_a
                    either = b.t < end_a and a.t < end_b
                    if later_b or either:
                        fail.append({"topic": pos[0], "partition": pos[1], "offset": pos[2],
                                     "first": a.to_dict(), "second": b.to_dict(),
                                     "first_hold_until": round(end_a + self.slack, 6)})
                        break
        return check_result(fail, [], "records delivered while another acquisition held them (share-double-hold)",
                            self.k)

    def after_final(self) -> dict:
        fail = []
        for pos, ds in self.h.deliveries.items():
            finals = [d for d in ds if self.confirmed_final(d)]
            if not finals:
                continue
            first = min(finals, key=lambda d: d.result_t)
            again = [d for d in ds if d.fetch_t > first.result_t + self.slack]
            if again:
                fail.append({"topic": pos[0], "partition": pos[1], "offset": pos[2], "final": first.to_dict(),
                             "again": again[0].to_dict(), "times": len(again)})
        return check_result(fail, [], "records delivered after a confirmed accept or reject "
                                      "(share-redelivered-after-final)", self.k)

    def counts(self) -> dict:
        fail = []
        for pos, ds in self.h.deliveries.items():
            prev = None
            for d in ds:
                c = d.count
                if c is None:
                    continue
                bad = None
                if prev is None and c < 1:
                    bad = f"first delivery with count {c}"
                elif prev is not None and c < prev.count:
                    bad = f"count went down from {prev.count} to {c}"
                elif c > self.limit:
                    bad = f"delivered a {c}th time, beyond the limit {self.limit}"
                if bad:
                    fail.append({"topic": pos[0], "partition": pos[1], "offset": pos[2], "why": bad,
                                 "delivery": d.to_dict(), "previous": prev.to_dict() if prev else None})
                    break
                prev = d
        return check_result(fail, [], "delivery counts out of order (share-delivery-count)", self.k)

    def dead_letters(self) -> dict:
        """Rejected / archived records against the dead-letter topic's records."""
        fail = []
        dead, accepted, rejected = set(), set(), set()
        for pos, ds in self.h.deliveries.items():
            if any(d.ack == "accept" and d.result == "ok" for d in ds):
                accepted.add(pos)
            elif any(d.ack == "reject" and d.result == "ok" for d in ds):
                dead.add(pos)
                rejected.add(pos)
            elif self.state(ds) == "archived":
                dead.add(pos)
        for pos in sorted(dead - set(self.h.dlq)):
            fail.append({"topic": pos[0], "partition": pos[1], "offset": pos[2], "why": "rejected or archived, "
                         f"not in the dead-letter topic {self.dlq_topic}"})
        for pos in sorted(accepted & set(self.h.dlq)):
            fail.append({"topic": pos[0], "partition": pos[1], "offset": pos[2], "why": "accepted, yet in the "
                         f"dead-letter topic {self.dlq_topic}", "dlq": self.h.dlq[pos]})
        why: dict = {}      # the broker's reason per dead-letter record (header __dlq.errors.message)
        for pos, ev in self.h.dlq.items():
            kind = "rejected" if pos in rejected else ("archived" if pos in dead else "other")
            key = f"{kind}: {ev.get('message')}"
            why[key] = why.get(key, 0) + 1
        res = check_result(fail, [], "dead-letter records missing or wrong (share-dlq)", self.k,
                           dead=len(dead), archived=len(dead - rejected), dlq_records=len(self.h.dlq),
                           messages=why)
        if self.h.dlq_read is None:
            res.update(verdict=UNKNOWN, reason="the record has no read of the dead-letter topic (share.dlq_read)")
        return res

    def spso_backwards(self) -> dict:
        """Per (group, topic, partition): no SPSO sample below the highest one before it. A sample of -1
        (no state) after a real one is counted (``state_missing``), not judged: the group coordinator
        also answers -1 for a topic its metadata image does not have yet."""
        fail, seqs, missing = [], {}, 0
        answered = 0
        for key, evs in sorted(self.h.spso.items(), key=lambda kv: tuple(map(str, kv[0]))):
            top, reported = None, False
            runs: list = []
            for ev in evs:
                so = ev["start_offset"]
                if so < 0:
                    missing += top is not None
                    continue
                answered += 1
                if not runs or runs[-1][0] != so or runs[-1][1] != ev.get("leader_epoch"):
                    runs.append([so, ev.get("leader_epoch"), 1])
                else:
                    runs[-1][2] += 1
                if top is not None and so < top["start_offset"]:
                    if not reported:        # one example per partition: the first sample below the highest
                        fail.append({"group": key[0], "topic": key[1], "partition": key[2],
                                     "why": f"SPSO went from {top['start_offset']} down to {so}",
                                     "earlier": _spso(top), "later": _spso(ev)})
                        reported = True
                    continue
                top = ev
            seqs[f"{key[1]}-{key[2]}"] = {
                "samples": len(evs), "first": runs[0][:2] if runs else None, "last": runs[-1][:2] if runs else None,
                "leader_epochs": sorted({r[1] for r in runs if r[1] is not None}),
                "coordinators": sorted({e.get("coordinator") for e in evs if e.get("coordinator") is not None}),
                # runs of [spso, leader_epoch, samples]; a long one keeps its first and last 30 runs
                "sequence": runs if len(runs) <= 60 else runs[:30] + runs[-30:], "runs": len(runs)}
        res = check_result(fail, [], "share-partition start offsets went down (share-spso-backwards)", self.k,
                           samples=answered, failed_samples=self.h.spso_failed, state_missing=missing,
                           sequences=seqs)
        if not answered:
            res.update(verdict=UNKNOWN, reason=f"the SPSO sampler ran but got no start offset "
                                               f"({self.h.spso_failed} rounds without one)")
        return res

    def spso_delivered_below(self) -> dict:
        """A delivery by a poll that began after a sample put the SPSO above the record's offset."""
        tops: dict = {}     # (group, topic, partition) -> ([t], [running-max sample])
        for key, evs in self.h.spso.items():
            ts, best, top = [], [], None
            for ev in sorted((e for e in evs if e["start_offset"] >= 0), key=lambda e: e["t"]):
                if top is None or ev["start_offset"] > top["start_offset"]:
                    top = ev
                ts.append(ev["t"])
                best.append(top)
            tops[key] = (ts, best)
        fail = []
        for pos, ds in sorted(self.h.deliveries.items()):
            for d in ds:
                got = tops.get((d.group, pos[0], pos[1]))
                if got is None:
                    continue
                i = bisect_left(got[0], d.fetch_t - self.slack) - 1
                if i >= 0 and got[1][i]["start_offset"] > pos[2]:
                    fail.append({"topic": pos[0], "partition": pos[1], "offset": pos[2], "group": d.group,
                                 "sample": _spso(got[1][i]), "delivery": d.to_dict()})
                    break
        return check_result(fail, [], "records delivered below a sampled share-partition start offset "
                                      "(share-spso-delivered-below)", self.k)

    def figures(self) -> dict:
        st = self.h.stats()
        counts = [d.count for ds in self.h.deliveries.values() for d in ds if d.count is not None]
        return {"verdict": PASS, "measurement": True, "count": st["deliveries"], "archived": self.archived,
                "max_delivery_count": max(counts) if counts else None, **st,
                "reason": f"{st['deliveries']} deliveries of {st['records_delivered']} records, "
                          f"{st['redeliveries']} redeliveries, {self.archived} archived"}

    def result(self) -> dict:
        checks = {}
        checks["share-lost"], checks["share-not-redelivered"] = self.endings()
        checks["share-double-hold"] = self.double_hold()
        checks["share-redelivered-after-final"] = self.after_final()
        checks["share-delivery-count"] = self.counts()
        if self.dlq_topic:
            checks["share-dlq"] = self.dead_letters()
        if self.h.spso_sampler is not None:
            checks["share-spso-backwards"] = self.spso_backwards()
            checks["share-spso-delivered-below"] = self.spso_delivered_below()
        checks["share-deliveries"] = self.figures()
        verdict, reason = overall(checks, "no share-group anomaly")
        stats = self.h.stats()
        stats["archived"] = self.archived
        stats["lock_s"], stats["delivery_count_limit"] = self.lock_s, self.limit
        return {"verdict": verdict, "applicable": True, "reason": reason, "checks": checks, "stats": stats}

