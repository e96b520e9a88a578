"""Topic znode writes: reassignment shape and completion (spec §7.1, §7.6, §7.8; H15, H16, D15).

Part of the ZooKeeper-mode checker (``checker.py``). Each partition's ``(RS, AR, RR)`` is compared
with its previous observed value: a write with AR/RR starts or replaces a reassignment (U1, D15
encoding), one that leaves the reassigning state completes it (H16: the target was in the ISR; RS
becomes TRS) or cancels it (RS back to ORS). Replicas dropped by such a write may stay in the ISR
until the controller's next writes (§7.10 window, used by H6/H8). Skipped topic versions (a gap)
exempt the one transition they cover.
"""

from __future__ import annotations

from reference.profiles import GATE_KIP455
from reference.state import distinct, list_minus


class _Topic:
    __slots__ = ("topic_id", "assign", "version", "window", "trs_covered", "deletion_processed", "rs_ok", "gap")

    def __init__(self, topic_id):
        self.topic_id = topic_id
        self.rs_ok: dict[int, frozenset] = {}   # p -> RS ∪ AR ∪ window, dropped when one may change
        self.assign: dict[int, tuple] = {}     # p -> (rs, ar, rr)
        self.version = -1
        self.window: dict[int, tuple] = {}     # p -> previous RS, after a topic write changed p (U1/U3 window)
        self.trs_covered: dict[int, bool] = {}
        self.deletion_processed = False
        self.gap = False                       # versions of the topic znode were skipped


class TopicJudge:
    """Mixin of :class:`reference.checker.Checker`: the rules on topic znode writes."""

    def _on_topic(self, ev):
        name = ev["topic"]
        if ev.get("deleted"):
            self.topics.pop(name, None)
            for tp in [tp for tp in self.parts if tp[0] == name]:
                del self.parts[tp]
                self.progress.on_state_deleted(tp)
            self.progress.on_topic(name, None)
            return
        tid = ev.get("topic_id")
        t = self.topics.get(name)
        if t is None or (tid is not None and t.topic_id is not None and tid != t.topic_id):
            t = self.topics[name] = _Topic(tid)        # new incarnation (§6.3: key by topic id)
            for tp in [tp for tp in self.parts if tp[0] == name]:
                del self.parts[tp]
                self.progress.on_state_deleted(tp)
        elif tid is not None:
            t.topic_id = tid
        adding = ev.get("adding_replicas") or {}
        removing = ev.get("removing_replicas") or {}
        subject = name
        v = ev.get("version")
        gap = t.gap or (isinstance(v, int) and t.version >= 0 and v > t.version + 1)
        t.gap = False
        changed = set()
        for ps, rs in ev["partitions"].items():
            p = int(ps)
            new = (tuple(rs), tuple(adding.get(ps, ())), tuple(removing.get(ps, ())))
            old = t.assign.get(p)
            t.assign[p] = new
            if new != old:
                changed.add(p)
            elif not (new[1] or new[2]):    # unchanged, not reassigning: all _check_topic_partition does
                if t.window.pop(p, None) is not None:
                    t.rs_ok.pop(p, None)
                continue
            t.rs_ok.pop(p, None)            # (its RS, AR or window may change: the cached union goes)
            self._check_topic_partition(f"{subject}-{p}", t, p, old, new, gap)
        # A requested reassignment is in the topic znode once its partition's entry changed (U1 of §7.4;
        # from then on the entry and the reorder window describe it). A partition whose target equals
        # its assignment (a no-op) never changes the entry: the controller only bumps its leader epoch
        # (B3, KC:1051-1071) and rewrites the znode unchanged (B6), possibly after other partitions'
        # writes of the same reassignment. Its request stays pending until that bump (checker.py).
        for tp in [tp for tp in self.pending_reassign if tp[0] == name and (tp[1] is None or tp[1] in changed)]:
            self.pending_reassign.discard(tp)
        t.version = v if isinstance(v, int) else t.version + 1
        self.progress.on_topic(name, t)

    def _check_topic_partition(self, subject, t: _Topic, p, old, new, gap: bool = False):
        rs, ar, rr = new
        if ar or rr:
            if set(ar) & set(rr) or not set(ar) <= set(rs) or not set(rr) <= set(rs) \
                    or not list_minus(rs, ar) or not list_minus(rs, rr):
                self._report("H15", subject, f"invalid reassignment state RS={list(rs)} AR={list(ar)} "
                             f"RR={list(rr)}", None, {"replicas": list(rs), "adding": list(ar), "removing": list(rr)})
        if old is None or old == new:
            t.window.pop(p, None)
            return
        if gap:
            # skipped topic versions: the transition old -> new is not one write, so D15/H16 cannot be
            # judged on it; the dropped replicas may still leave the ISR (§7.10 window), and whether the
            # target was ever in the ISR is unknown (H16 resumes with the next reassignment)
            t.window[p] = old[0]
            t.trs_covered[p] = True
            return
        ors_old = list_minus(old[0], old[1])
        trs_old = list_minus(old[0], old[2])
        if ar or rr:                                                      # U1: start / replace
            if self.apache and self.p.at_least(GATE_KIP455):
                target = list_minus(rs, rr)
                exp = distinct(target + ors_old)
                exp_ar, exp_rr = list_minus(exp, ors_old), list_minus(exp, target)
                if (rs, ar, rr) != (exp, exp_ar, exp_rr):
                    self._report("D15", subject, f"reassignment to {list(target)} written as RS={list(rs)} "
                                 f"AR={list(ar)} RR={list(rr)}", {"replicas": list(old[0])},
                                 {"replicas": list(rs), "adding": list(ar), "removing": list(rr)},
                                 [f"RS={list(exp)} AR={list(exp_ar)} RR={list(exp_rr)}"])
            if list_minus(rs, rr) != trs_old or not (old[1] or old[2]):
                t.trs_covered[p] = False
            t.window[p] = old[0]
            return
        if old[1] or old[2]:                                              # left the reassigning state
            if set(rs) == set(trs_old) and set(rs) != set(ors_old):       # completion (B6)
                if not t.trs_covered.get(p, False):
                    self._report("H16", subject, f"reassignment completed to {list(rs)} but the target "
                                 "replicas were never all in the ISR", {"replicas": list(old[0])},
                                 {"replicas": list(rs)})
                elif self.apache and tuple(rs) != trs_old:
                    self._report("D15", subject, f"completed RS {list(rs)} is not TRS {list(trs_old)} in order",
                                 None, {"replicas": list(rs)}, [f"RS={list(trs_old)}"])
                t.window.pop(p, None)
                return
            if set(rs) == set(ors_old):                                   # cancel (U1 of §7.8)
                t.window[p] = old[0]
                return
            self._report("H16", subject, f"reassignment ended with replicas {list(rs)}: neither the target "
                         f"{list(trs_old)} nor the original {list(ors_old)}", {"replicas": list(old[0])},
                         {"replicas": list(rs)})
            t.window.pop(p, None)
            return
        t.window[p] = old[0]                                              # reorder / legacy write
