"""Judging one observed partition-state write (spec §4, §5.2, §5.5, §5.8-5.10, §7.4, §8.2, §8.3).

Part of the ZooKeeper-mode checker (``checker.py`` owns the event loop and the state this reads:
broker snapshots, controller epochs and frontiers, assignments). A write that keeps the leader
epoch is a leader-initiated ISR change (AlterPartition / legacy, §5.9-5.10: H10, H13, H19 since 3.3,
D7, D9); one that bumps it is a controller write (H2, H11-H14, H19, and under ``apache-zk-*`` the
set of writes the Apache controller could have made from any admissible view: D1-D12, D16); the
first write of a new partition is a creation (H19, D3).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from reference.elections import (clean_offline, controlled_shutdown_election, init_new_partition,
                                 preferred_election, reassign_election, remove_from_isr, unclean_offline)
from reference.profiles import GATE_FENCING
from reference.records import Obs, Record, new_record
from reference.rules import RULES, rule_id
from reference.state import NO_LEADER, RECOVERED, RECOVERING

if TYPE_CHECKING:   # pragma: no cover
    from reference.topics import _Topic


class _WriteCtx(Record):
    """The context of one controller write (``WriteJudge._write_ctx``)."""

    __slots__ = ("rs", "trs", "trs_must_be_in_isr", "removable", "deleting", "unclean", "failover_block",
                 "failover_maybe")
    rs: tuple
    trs: tuple | None            # reassignment target when a reassignment/cancel/reorder is in flight
    trs_must_be_in_isr: bool
    removable: frozenset         # replicas the controller may drop from the ISR (RR, dropped AR)
    deleting: bool
    unclean: bool
    failover_block: bool         # D12: the leader was dead before this controller was elected
    failover_maybe: bool         # D12 or not: the leader registered again after that election (below)


_EMPTY: frozenset = frozenset()
_NO_ASSIGN = ((), (), ())


def _summ(o) -> str:
    leader, isr, rec, rule = o
    extra = " RECOVERING" if rec == RECOVERING else ""
    return f"leader={leader} isr={sorted(isr)}{extra} ({rule_id(rule) if rule in RULES else rule})"


class WriteJudge:
    """Mixin of :class:`reference.checker.Checker`: the rules on one partition-state write."""

    def _write_ctx(self, tp, t: _Topic | None, a: tuple | None, prev: Obs, ce: int) -> _WriteCtx:
        """The context of a controller write to ``tp`` (topic ``t``, its assignment ``a``: (RS, AR, RR))."""
        topic, p = tp
        rs, ar, rr = a or _NO_ASSIGN
        trs, need, removable = None, False, _EMPTY
        if ar or rr:
            try:                            # (list_minus(RS, RR), RR as a set), computed once per (RS, RR)
                trs, removable = self._trs_of[(rs, rr)]
            except KeyError:
                trs, removable = self._trs_of[(rs, rr)] = (tuple([r for r in rs if r not in rr]), frozenset(rr))
            need = True
        elif self.zk_reassign:
            zk = self.zk_reassign.get(tp)
            if zk is not None:
                trs, need = zk, True
                removable = frozenset(r for r in rs if r not in zk)
        if t is not None:
            w = t.window.get(p)
            if w is not None:
                removable = removable.union(r for r in w if r not in rs)
                if trs is None:
                    trs = rs
        pend = self.pending_reassign
        if trs is None and pend and (tp in pend or (topic, None) in pend):
            trs = rs
        grants = self.unclean_grants
        unclean = (self.unclean_topic.get(topic, self.unclean_default)
                   or bool(grants and (tp in grants or (topic, None) in grants)))
        fb = maybe = False
        first = self.epoch_first_write.setdefault(ce, len(self.snaps) - 1)
        if self.apache and prev.leader != NO_LEADER:
            start = self.epoch_start.get(ce)
            if start is not None:
                # D12: the leader was already dead when this controller initialized, and has not come
                # back since (had it, the controller would have seen it live and failover would not apply).
                L = prev.leader
                if L in self.seen_brokers and L not in self.snaps[start]:
                    back = self.last_registered.get(L, -1)
                    fb = back < start
                    # It registered again after the election: the new controller reads /brokers/ids
                    # after its election, before its first write (§2.4 step 4, KC:951
                    # initializeControllerContext), so it may have found the leader dead (step 7:
                    # leader=-1 first, then the election of step 8) or live (no failover write).
                    # A registration after its first write came after that read. Seen on 3.9.2:
                    # restart.kill_all, controller elected at zxid 134, the old leader registered at
                    # 135, the leader=-1 write at 136.
                    maybe = not fb and back <= first
        # slot stores, not the constructor (a Python-level call): this runs per controller write
        c = new_record(_WriteCtx)
        c.rs = rs
        c.trs = trs
        c.trs_must_be_in_isr = need
        c.removable = removable
        c.deleting = topic in self.deleting
        c.unclean = unclean
        c.failover_block = fb
        c.failover_maybe = maybe
        return c

    def _outcomes(self, prev: Obs, c: _WriteCtx, reg: frozenset, sd: frozenset) -> list[tuple]:
        """Every (leader, isr-set, recovery, rule) the Apache controller could write, given the
        registered set ``reg`` and shutting-down set ``sd`` (§4.1-§4.6, §5.2, §5.5, §7.4)."""
        online = reg - sd if sd else reg
        L, isr, rec, rs = prev.leader, prev.isr, prev.recovery, c.rs
        outs = []
        elect_possible = False
        if not c.deleting:
            if (L == NO_LEADER or L not in online) and not c.failover_block:
                e = clean_offline(rs, isr, rec, online)
                if e is not None:
                    outs.append((e.leader, frozenset(e.isr), e.recovery, "D1"))
                    elect_possible = True
                elif c.unclean and not any(i in online for i in isr):
                    e = unclean_offline(rs, online, self.rec_supported)
                    if e is not None:
                        outs.append((e.leader, frozenset(e.isr), e.recovery, "D2"))
                        elect_possible = True
            if rs and L != rs[0]:
                e = preferred_election(rs, isr, rec, online)
                if e is not None:
                    outs.append((e.leader, frozenset(e.isr), e.recovery, "D4"))
            if L in sd and L in reg:
                e = controlled_shutdown_election(rs, isr, rec, reg, sd)
                if e is not None:
                    outs.append((e.leader, frozenset(e.isr), e.recovery, "D5"))
        if c.trs is not None and (not c.trs_must_be_in_isr or prev.isr_set.issuperset(c.trs)):
            if L not in c.trs or L not in online:
                e = reassign_election(c.trs, isr, rec, online)
                if e is not None:
                    outs.append((e.leader, frozenset(e.isr), e.recovery, "D6"))
            outs.append((L, prev.isr_set, rec, "D16"))
        elif c.trs is not None:
            outs.append((L, prev.isr_set, rec, "D16"))       # A1: LE+1, nothing else
        for r in isr:
            if r in online and not c.deleting and r not in c.removable:
                continue
            if r == L and not (c.deleting or r in c.removable or c.failover_block or not elect_possible):
                continue                                     # §5.2: the election comes first (D10)
            res = remove_from_isr(L, isr, r)
            if res is not None:
                outs.append((res[0], frozenset(res[1]), rec, "D8"))
        return outs

    def _explains(self, prev: Obs, c: _WriteCtx, reg: frozenset, sd: frozenset, nl: int, nisr: frozenset,
                  nrec: int, any_rec: bool) -> bool:
        """Whether one of :meth:`_outcomes` ``(prev, c, reg, sd)`` is the write (``nl``, ``nisr``,
        ``nrec``; the recovery state compared unless ``any_rec``): the same rules in the same order,
        without building the outcomes (the checker's hot path; a test compares the two exhaustively)."""
        online = reg - sd if sd else reg
        L, isr, rec, rs = prev.leader, prev.isr, prev.recovery, c.rs
        pset = prev.isr_set
        same_rec = any_rec or nrec == rec          # every outcome but D2 keeps the recovery state
        elect_possible = False
        deleting = c.deleting
        if not deleting:
            if (L == NO_LEADER or L not in online) and not c.failover_block:
                for r in rs:                       # D1 (clean_offline)
                    if r in online and r in pset:
                        if r == nl and same_rec and nisr == pset.intersection(online):
                            return True
                        elect_possible = True
                        break
                else:
                    if c.unclean and online.isdisjoint(isr):
                        for r in rs:               # D2 (unclean_offline)
                            if r in online:
                                if (r == nl and len(nisr) == 1 and r in nisr and
                                        (any_rec or nrec == (RECOVERING if self.rec_supported else RECOVERED))):
                                    return True
                                elect_possible = True
                                break
            if same_rec:
                if rs and L != rs[0]:              # D4 (preferred_election)
                    r = rs[0]
                    if r == nl and r in online and r in pset and nisr == pset:
                        return True
                if L in sd and L in reg:           # D5 (controlled_shutdown_election)
                    for r in rs:
                        if r in reg and r in pset and r not in sd:
                            if r == nl and nisr == pset.difference(sd):
                                return True
                            break
        if not same_rec:
            return False
        trs = c.trs
        if trs is not None:
            if nl == L and nisr == pset:           # D16 (with or without the D6 election)
                return True
            if (not c.trs_must_be_in_isr or pset.issuperset(trs)) and (L not in trs or L not in online):
                if nisr == pset:                   # D6 (reassign_election)
                    for r in trs:
                        if r in online and r in pset:
                            if r == nl:
                                return True
                            break
        one = len(isr) == 1
        removable = c.removable
        for r in isr:                              # D8 (remove_from_isr)
            if r in online and not deleting and r not in removable:
                continue
            if r == L and not (deleting or r in removable or c.failover_block or not elect_possible):
                continue
            if nl == (NO_LEADER if L == r else L) and (nisr == pset if one else
                                                      (r not in nisr and len(nisr) == len(pset) - 1 and nisr < pset)):
                return True
        return False

    def _views(self, ce: int):
        lo = self.lo.get(ce, 0)
        return lo, len(self.snaps) - 1

    def _live_in_some_view(self, b: int, ce: int) -> bool:
        """Whether ``b`` is registered in some admissible view of controller epoch ``ce`` (H19; a broker
        never seen counts as registered). A view after the frontier has ``b`` only if ``b`` registered
        after it (views change by one registration at a time), i.e. its last registration is later."""
        lo = self.lo.get(ce, 0)
        return b not in self.seen_brokers or b in self.snaps[lo] or self.last_registered.get(b, -1) > lo

    def _check_creation(self, tp, subject, new: Obs, rs):
        if new.version != 0:
            return                                     # first observation of an existing partition: baseline
        self.stats["creations"] += 1
        ce = new.controller_epoch
        if new.leader != NO_LEADER and not self._live_in_some_view(new.leader, ce):
            self._report("H19", subject, f"partition created with leader {new.leader} whose /brokers/ids znode "
                         "was already gone", None, new.to_dict())
            return
        if not self.apache or rs is None:
            return
        lo, hi = self._views(ce)
        allowed = []
        for k in range(lo, hi + 1):
            online = self.snaps[k] | frozenset(r for r in rs if r not in self.seen_brokers)
            for sd in self._sd_options(rs):
                e = init_new_partition(rs, online - sd)
                if e is None:
                    continue
                if new.leader_epoch == 0 and e.leader == new.leader and frozenset(e.isr) == new.isr_set:
                    self.lo[ce] = k
                    return
                if len(allowed) < 6:
                    allowed.append(_summ((e.leader, e.isr, 0, "D3")) + " LE=0")
        self._report("D3", subject, f"new partition got leader {new.leader} isr {list(new.isr)} LE "
                     f"{new.leader_epoch}; Apache picks the first online replica of {list(rs)} and all online "
                     "replicas as ISR, LE 0", None, new.to_dict(), allowed)

    def _check_leader_isr_change(self, subject, prev: Obs, new: Obs, rs):
        """Same LE: AlterPartition / legacy leader write (§5.9, §5.10): H10, H13, H19 (3.3+), D7, D9."""
        self.n_lic += 1
        ns, ps = new.isr_set, prev.isr_set
        added = [r for r in new.isr if r not in ps] if not ns <= ps else []
        removed = [r for r in prev.isr if r not in ns] if not ps <= ns else []
        if added and self.kip841:
            ce = self.epoch if self.epoch is not None else new.controller_epoch
            dead = [r for r in added if not self._live_in_some_view(r, ce)]
            if dead:
                self._report("H19", subject, f"ISR expanded with {dead} whose /brokers/ids znode was gone "
                             "(AlterPartition must reject non-live replicas, KIP-841)", prev.to_dict(), new.to_dict())
        if not self.apache:
            return
        if prev.leader == NO_LEADER and (added or removed):
            self._report("D7", subject, "ISR changed without a leader-epoch bump while there was no leader "
                         "(only controller writes can change a leaderless partition, and they bump LE)",
                         prev.to_dict(), new.to_dict(), [f"leader_epoch={prev.leader_epoch + 1}"])
        elif added and (len(added) > 1 or removed):
            self._report("D9", subject, f"leader ISR change added {added} and removed {removed} in one write; "
                         "Apache expands one replica at a time", prev.to_dict(), new.to_dict())
        elif not added and not removed and new.recovery == prev.recovery and new.leader == prev.leader:
            self._report("D7", subject, "state znode rewritten with no change and no leader-epoch bump",
                         prev.to_dict(), new.to_dict())

    def _check_controller_write(self, tp, subject, t, a, prev: Obs, new: Obs, rs):
        """LE increased: a controller write (§4, §5.2, §5.5, §6.2, §7.4)."""
        self.n_cwrites += 1
        ce = new.controller_epoch
        L, x = prev.leader, new.leader
        if (self.epoch is not None and ce < self.epoch and self.p.at_least(GATE_FENCING)
                and not self.epoch_gap):
            self._report("H2", subject, f"controller write with controller epoch {ce} after epoch "
                         f"{self.epoch} was established (a fenced controller's write succeeded)",
                         prev.to_dict(), new.to_dict())
        c = self._write_ctx(tp, t, a, prev, ce) if rs is not None else None
        if self.unclean_grants:
            self.unclean_grants.discard(tp)  # an ElectLeaders(UNCLEAN) request covers one controller write
        if x != L and x != NO_LEADER:
            self.n_elections += 1
            if not self._live_in_some_view(x, ce):
                self._report("H19", subject, f"broker {x} elected leader after its /brokers/ids znode was gone "
                             "(the controller already considered it dead)", prev.to_dict(), new.to_dict())
                return
            if x not in prev.isr_set:
                unclean_ok = c is not None and c.unclean
                if not unclean_ok:
                    self._report("H11", subject, f"broker {x} elected from outside the ISR {list(prev.isr)} "
                                 "with unclean leader election disabled", prev.to_dict(), new.to_dict())
                    return
                if new.isr != (x,):
                    self._report("H11", subject, f"unclean election of {x} must reset the ISR to [{x}], "
                                 f"got {list(new.isr)}", prev.to_dict(), new.to_dict())
                    return
                if self.rec_supported and new.recovery != RECOVERING:
                    self._report("H12", subject, f"unclean election of {x} did not set leader_recovery_state="
                                 "RECOVERING (3.2+)", prev.to_dict(), new.to_dict())
            if c is not None and c.deleting and t is not None and t.deletion_processed and c.trs is None:
                self._report("H14", subject, f"leader moved to {x} while topic {tp[0]} is being deleted",
                             prev.to_dict(), new.to_dict())
                return
        if not new.isr_set <= prev.isr_set and not (x != L and x not in prev.isr_set and new.isr == (x,)):
            added = [r for r in new.isr if r not in prev.isr_set]
            self._report("H13", subject, f"controller write added {added} to the ISR (only the leader expands "
                         "the ISR)", prev.to_dict(), new.to_dict())
            return
        # §2.6: the controller handles its event queue in FIFO order, so events queued before the
        # delete marker's notification (e.g. the BrokerChange of an earlier deregistration) are
        # processed as for a topic not being deleted, until the TopicDeletion event itself runs.
        # A deletion write (§6.2 step 4) shows it has run; an election never is one (§6.2: no
        # elections for a topic queued for deletion), so it does not mark the deletion processed.
        pending = c is not None and c.deleting and t is not None and not t.deletion_processed
        if (c is not None and c.deleting and t is not None and (x == L or x == NO_LEADER)
                and (x == NO_LEADER or len(new.isr) < len(prev.isr))):
            t.deletion_processed = True
        if c is None:
            return
        ctxs = (c, c._replace(deleting=False)) if pending else (c,)
        if c.failover_maybe:
            ctxs += tuple(cx._replace(failover_block=True) for cx in ctxs)
        if not self.apache:
            # Compatible profile: no D-rule is reported, but the Apache explanation of the write (if
            # any) still advances the controller's view frontier, which H19 relies on.
            self._match_outcomes(subject, prev, new, ctxs, ce, report=False)
            return
        if new.leader_epoch != prev.leader_epoch + 1:
            self._report("D7", subject, f"leader epoch went {prev.leader_epoch} -> {new.leader_epoch} in one "
                         "write; every Apache controller write bumps it by exactly 1", prev.to_dict(),
                         new.to_dict(), [f"leader_epoch={prev.leader_epoch + 1}"])
        k = self._explaining_view(prev, new, ctxs, ce)          # (_match_outcomes, inlined)
        if k is not None:
            self.lo[ce] = k
        else:
            self._report_unexplained(subject, prev, new, ctxs, ce)

    def _match_outcomes(self, subject, prev: Obs, new: Obs, ctxs: tuple, ce: int, report: bool = True):
        """Find a view (and shutting-down set) under which one of the write contexts ``ctxs``
        explains ``new``; advance the frontier to it, else report (attributed with ``ctxs[0]``)."""
        k = self._explaining_view(prev, new, ctxs, ce)
        if k is not None:
            self.lo[ce] = k
            return
        if report:
            self._report_unexplained(subject, prev, new, ctxs, ce)

    def _report_unexplained(self, subject, prev: Obs, new: Obs, ctxs: tuple, ce: int) -> None:
        """No admissible view explains the controller write ``new``: report it with the writes
        that were allowed (attributed with ``ctxs[0]``)."""
        seen: set = set()           # the writes that were allowed: scanned again, only for the report
        self._explaining_view(prev, new, ctxs, ce, seen)
        allowed = sorted({_summ(o) for o in seen})[:10]
        rule, why = self._attribute(prev, new, ctxs[0], ce)
        self._report(rule, subject, why, prev.to_dict(), new.to_dict(), allowed or ["no write"])

    def _explaining_view(self, prev: Obs, new: Obs, ctxs: tuple, ce: int, seen: set | None = None) -> int | None:
        """The oldest admissible view under which some context's outcome is ``new`` (None: none;
        ``seen`` collects every outcome when given). The hot path of the checker: one call per
        controller write, hence the locals."""
        c = ctxs[0]
        snaps = self.snaps
        lo, hi = self.lo.get(ce, 0), len(snaps) - 1         # self._views(ce), inlined
        sb = self.seen_brokers
        extra = (None if sb.issuperset(c.rs) and sb.issuperset(prev.isr_set) else
                 frozenset(r for r in itertools.chain(c.rs, prev.isr) if r not in sb))
        nl, nisr, nrec = new.leader, new.isr_set, new.recovery
        any_rec = not self.rec_supported
        usual = seen is None and extra is None and len(ctxs) == 1
        # the usual write (every replica seen, one context): the loop below's first try, the frontier's
        # view with no broker stopping (every sd_opts starts with the empty set), explains most writes
        if usual and lo <= hi and self._explains(prev, c, snaps[lo], _EMPTY, nl, nisr, nrec, any_rec):
            self.n_views += 1
            return lo
        ms = self.maybe_shutting
        if ms:
            # _sd_options of the replicas, cached per (RS, ISR) until the maybe-shutting set changes
            # (Checker._recompute_sd); ``_no_sd`` itself when none of them may be stopping
            key = (c.rs, prev.isr)
            sd_opts = self._sd_by_reps.get(key)
            if sd_opts is None:
                sd_opts = self._sd_by_reps[key] = (
                    self._no_sd if ms.isdisjoint(c.rs) and ms.isdisjoint(prev.isr_set)
                    else self._sd_options(itertools.chain(c.rs, prev.isr)))
        else:
            sd_opts = self._no_sd
        explains = self._explains
        if usual and sd_opts is self._no_sd:
            # what _sd_options gives when none of the replicas may be stopping: the empty set only, so
            # the next views (the loop below starts again otherwise, counting alike)
            for k in range(lo + 1, hi + 1):
                if explains(prev, c, snaps[k], _EMPTY, nl, nisr, nrec, any_rec):
                    self.n_views += k - lo + 1
                    return k
            self.n_views += max(0, hi - lo + 1)
            return None
        outcomes = self._outcomes
        scanned = 0
        try:
            for k in range(lo, hi + 1):
                reg = snaps[k] | extra if extra else snaps[k]
                for sd in sd_opts:
                    if sd and not (sd <= reg):
                        continue
                    scanned += 1
                    for cx in ctxs:
                        if seen is not None:
                            seen.update(outcomes(prev, cx, reg, sd))
                        elif explains(prev, cx, reg, sd, nl, nisr, nrec, any_rec):
                            return k
            return None
        finally:
            if seen is None:
                self.n_views += scanned

    def _attribute(self, prev: Obs, new: Obs, c: _WriteCtx, ce: int) -> tuple[str, str]:
        """Name the Apache rule an unexpected controller write breaks, with a one-line reason."""
        L, x = prev.leader, new.leader
        lo, hi = self._views(ce)
        live_now = L in self.snaps[hi] or L not in self.seen_brokers
        if x != L and x != NO_LEADER:
            if x not in prev.isr_set:
                return "D2", f"unclean election chose {x}; Apache picks the first online replica of {list(c.rs)}"
            if c.failover_block:
                return "D12", (f"leader {L} was dead before controller epoch {ce} began: Apache first writes "
                               f"leader=-1, then elects")
            if L in self.maybe_shutting and live_now:
                return "D5", f"controlled-shutdown election chose {x} / ISR {list(new.isr)} (RS {list(c.rs)})"
            if c.trs is not None:
                return "D6", f"reassignment election chose {x}; expected the first of TRS {list(c.trs)} in the ISR"
            if live_now and L != NO_LEADER:
                return "D4", f"leader moved from live broker {L} to {x}; only RS[0]={c.rs[0] if c.rs else None} " \
                             "(preferred election) may take over"
            return "D1", (f"offline election chose {x} with ISR {list(new.isr)}; Apache picks the first replica "
                          f"of {list(c.rs)} that is online and in the ISR, ISR := ISR ∩ online")
        if x == NO_LEADER and L != NO_LEADER:
            exp = remove_from_isr(L, prev.isr, L)
            if exp is not None and frozenset(exp[1]) != new.isr_set:
                return "D8", f"leader {L} removed but ISR became {list(new.isr)}, expected {list(exp[1])}"
            return "D1", f"leader {L} set to -1 although an online ISR member could have been elected"
        removed = [r for r in prev.isr if r not in new.isr_set]
        if removed and len(removed) > 1:
            return "D10", f"one controller write removed {removed} from the ISR; Apache removes one replica per write"
        if removed:
            return "D10", f"replica {removed[0]} removed from the ISR although the controller saw it live"
        if prev.isr_set == new.isr_set and len(prev.isr) == 1 and not new.isr_set - prev.isr_set:
            if L == x:
                return "D7", "leader-epoch bump with no change and no reassignment, failover or dead replica cause"
        if not new.isr and prev.isr:
            return "D8", "the last ISR member was removed"
        return "D7", "leader-epoch bump with no change and no reassignment, failover or dead replica cause"
