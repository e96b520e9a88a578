"""Partition reassignment (spec §7): KIP-455 (2.4+) and the legacy pre-2.4 algorithm (§7.11).

Entry points take a :class:`reference.context.Ctx` and perform the controller's writes for one
event. LE accounting (D16): +1 per phase-A invocation (A1), +1 at B3, +1 per RR replica in the ISR
at B4, +1 per dropped adding replica in the ISR at U3.
"""

from __future__ import annotations

import itertools

from reference.context import Ctx
from reference.deletion import resume_deletions
from reference.elections import reassign_election
from reference.profiles import GATE_KIP455
from reference.state import Assignment, list_minus

R_U1 = "§7.4-U1/D15"
R_U3 = "§7.4-U3/§4.6"
R_A1 = "§7.4-A1/D16"
R_B3 = "§7.4-B3/D6"
R_B4 = "§7.4-B4/§4.6"
R_B6 = "§7.4-B6"
R_B7 = "§7.4-B7/D17"
R_LEGACY = "§7.11"


def is_complete(ctx: Ctx, tp, a: Assignment) -> bool:
    """§7.6 (KC:1039-1049): not being reassigned, or TRS ⊆ ISR read from the state znode."""
    if not a.reassigning:
        return True
    st = ctx.s.partitions.get(tp)
    return st is not None and set(a.trs) <= set(st.isr)


def _bump(ctx: Ctx, tp, rule: str) -> None:
    st = ctx.s.partitions.get(tp)
    if st is not None:
        ctx.write_state(tp, st.leader, st.isr, st.recovery, rule)


def _move_leader_if_required(ctx: Ctx, tp, trs) -> None:
    """B3 (KC:1051-1071): reassignment election when the leader is not in TRS or not online, else LE+1."""
    st = ctx.s.partitions.get(tp)
    if st is None:
        return
    if st.leader not in trs or not ctx.s.is_live(st.leader):
        e = reassign_election(trs, st.isr, st.recovery, ctx.s.live_set())
        if e is not None:      # §7.10: on failure nothing is written, B4.. continue
            ctx.write_state(tp, e.leader, e.isr, e.recovery, R_B3)
    else:
        ctx.write_state(tp, st.leader, st.isr, st.recovery, R_B3)


def _remove_from_zk_znode(ctx: Ctx, tp, rs) -> None:
    """B7 / D17 (KC:1184-1207): drop the entry if its replicas equal the completed RS; delete node when empty."""
    z = ctx.s.reassign_znode
    if z is None or tp not in z:
        return
    if tuple(z[tp]) != tuple(rs):
        return
    del z[tp]
    if not z:
        ctx.s.reassign_znode = None
        ctx.emit("reassign_partitions", None, None, R_B7)
    else:
        ctx.emit("reassign_partitions", None, dict(z), R_B7)


def on_partition_reassignment(ctx: Ctx, tp, new: Assignment) -> None:
    """KIP-455 ``onPartitionReassignment`` (KC:712-829), phases U, A, B of §7.4, atomically."""
    if not ctx.s.at_least(GATE_KIP455):
        raise ValueError("KIP-455 reassignment used with a pre-2.4 model; use the legacy path")
    cur = ctx.s.assignment(tp)
    if new != cur:
        ctx.set_assignment(tp, new)                  # U2 (memory) ...
        ctx.write_topic(tp[0], R_U1)                 # ... U1 is written first in Kafka; same observable order
        dropped = list_minus(cur.rs, new.rs)         # U3
        if dropped:
            ctx.offline_replicas({r: [tp] for r in dropped}, R_U3, "U3 order")
    a = ctx.s.assignment(tp)
    if not is_complete(ctx, tp, a):
        _bump(ctx, tp, R_A1)                          # A1 (+1 per invocation)
        return
    trs = a.trs
    rr = a.rr
    ctx.set_assignment(tp, Assignment(rs=trs))        # B2
    _move_leader_if_required(ctx, tp, trs)            # B3
    if rr:
        ctx.offline_replicas({r: [tp] for r in rr}, R_B4, "B4 order")   # B4
    ctx.write_topic(tp[0], R_B6)                      # B6
    _remove_from_zk_znode(ctx, tp, trs)               # B7
    if tp[0] in ctx.s.deleting:                       # B8
        resume_deletions(ctx)


def api_reassign(ctx: Ctx, tp, target) -> str | None:
    """AlterPartitionReassignments (KC:1854-1906): validate, then ``onPartitionReassignment``.

    ``target=None`` cancels (§7.8). Returns an error code string or None on acceptance.
    """
    s = ctx.s
    if s.controller is None:
        return "NOT_CONTROLLER"
    if tp[0] not in s.topics or tp[1] not in s.topics[tp[0]].assignments or tp[0] in s.deleting:
        return "UNKNOWN_TOPIC_OR_PARTITION"
    cur = s.assignment(tp)
    if target is None:
        if not cur.reassigning:
            return "NO_REASSIGNMENT_IN_PROGRESS"
        new = cur.reassign_to(cur.ors)                 # §7.8 cancel: target = ORS in current-RS order
    else:
        target = tuple(target)
        if not target or len(set(target)) != len(target) or min(target) < 0:
            return "INVALID_REPLICA_ASSIGNMENT"
        new = cur.reassign_to(target)
        if any(not s.is_live(r) for r in new.ar):     # §7.3: adding replicas must be live
            return "INVALID_REPLICA_ASSIGNMENT"
    if s.reassign_znode and tp in s.reassign_znode:   # "latest reassignment wins" (KC:1854-1882)
        del s.reassign_znode[tp]
        if s.reassign_znode:
            ctx.emit("reassign_partitions", None, dict(s.reassign_znode), R_B7)
        else:
            s.reassign_znode = None
            ctx.emit("reassign_partitions", None, None, R_B7)
    on_partition_reassignment(ctx, tp, new)
    return None


def zk_reassign(ctx: Ctx, entries: dict) -> None:
    """Controller handling of ``/admin/reassign_partitions`` (KC:1818-1852, §7.2 trigger 2; §7.11 legacy)."""
    s = ctx.s
    for tp in sorted(entries):
        target = tuple(entries[tp])
        if tp[0] not in s.topics or tp[1] not in s.topics[tp[0]].assignments or tp[0] in s.deleting:
            if s.reassign_znode and tp in s.reassign_znode:     # invalid entries are dropped immediately
                del s.reassign_znode[tp]
                ctx.emit("reassign_partitions", None, dict(s.reassign_znode) or None, R_B7)
                if not s.reassign_znode:
                    s.reassign_znode = None
            continue
        if s.at_least(GATE_KIP455):
            on_partition_reassignment(ctx, tp, s.assignment(tp).reassign_to(target))
        else:
            legacy_reassignment(ctx, tp, target)


def legacy_reassignment(ctx: Ctx, tp, rar) -> None:
    """Pre-2.4 algorithm (§7.11, KC-2.3:495-580). RS is written as OAR ∪ RAR in *set order*
    (unspecified: a choice point over the possible orders)."""
    s = ctx.s
    rar = tuple(rar)
    cur = s.assignment(tp)
    st = s.partitions.get(tp)
    complete = st is not None and set(rar) <= set(st.isr)
    if not complete:
        union = sorted(set(cur.rs) | set(rar))
        if set(cur.rs) != set(union):
            orders = list(itertools.permutations(union)) if len(union) <= 4 else [tuple(union)]
            ctx.set_assignment(tp, Assignment(rs=ctx.choose(orders, "legacy RS order")))
            ctx.write_topic(tp[0], R_LEGACY)
        s.legacy_reassign[tp] = rar
        _bump(ctx, tp, R_LEGACY)
        return
    rs = s.assignment(tp).rs
    ctx.set_assignment(tp, Assignment(rs=rar))
    _move_leader_if_required(ctx, tp, rar)
    removed = list_minus(rs, rar)
    if removed:
        ctx.offline_replicas({r: [tp] for r in removed}, R_LEGACY, "legacy removal order")
    ctx.write_topic(tp[0], R_LEGACY)
    s.legacy_reassign.pop(tp, None)
    _remove_from_zk_znode(ctx, tp, rar)


def maybe_complete(ctx: Ctx, tp) -> None:
    """§7.2 trigger 3 (KC:1929-1937): after an ISR change, complete the reassignment if TRS ⊆ ISR."""
    s = ctx.s
    if tp[0] not in s.topics:
        return
    if tp in s.legacy_reassign:
        st = s.partitions.get(tp)
        if st is not None and set(s.legacy_reassign[tp]) <= set(st.isr):
            legacy_reassignment(ctx, tp, s.legacy_reassign[tp])
        return
    a = s.assignment(tp)
    if a.reassigning and is_complete(ctx, tp, a):
        on_partition_reassignment(ctx, tp, a)


def resume_reassignments(ctx: Ctx, only_brokers=None) -> None:
    """Failover step 9 / broker startup step 4 (§2.4, §5.3, §7.7): each resumption of an incomplete
    reassignment performs A1 again (+1 LE)."""
    s = ctx.s
    if s.reassign_znode:                              # znode entries first, they supersede the topic znode
        entries = {tp: t for tp, t in s.reassign_znode.items()
                   if only_brokers is None or set(t) & set(only_brokers)}
        zk_reassign(ctx, entries)
    if not s.at_least(GATE_KIP455):
        return
    for topic in sorted(s.topics):
        for p, a in sorted(s.topics[topic].assignments.items()):
            tp = (topic, p)
            if s.reassign_znode and tp in s.reassign_znode:
                continue
            if a.reassigning and (only_brokers is None or set(a.trs) & set(only_brokers)):
                on_partition_reassignment(ctx, tp, a)
