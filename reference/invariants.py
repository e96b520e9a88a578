"""Hard invariants of spec §8.2 that can be evaluated on ZooKeeper data.

Two kinds of functions:

* :func:`state_violations` -- on one partition state (H5, H6, H7, H8, H12 shape);
* :func:`transition_violations` -- on two consecutive observed states of the same partition
  incarnation (H3, H4 via the caller's epoch map, H9, H10, H12 marking, H13 membership).

Liveness-dependent invariants (H11 permission, H14 deletion, H19 fencing) need the checker's
context and live in ``checker.py``. The model's own states are checked with
:func:`model_state_violations` (used by the property tests).
"""

from __future__ import annotations

from reference.state import NO_LEADER, RECOVERING, ClusterState


def state_violations(leader: int, isr, recovery: int, rs=None) -> list[tuple[str, str]]:
    out = []
    if leader != NO_LEADER and leader not in isr:
        out.append(("H5", f"leader {leader} is not in the ISR {list(isr)}"))
    if leader != NO_LEADER and rs is not None and leader not in rs:
        out.append(("H6", f"leader {leader} is not a replica {list(rs)}"))
    if leader != NO_LEADER and not isr:
        out.append(("H7", f"leader {leader} with an empty ISR"))
    if rs is not None and not rs.issuperset(isr):
        # §8.2 H8; ``rs`` already admits the §7.10 cancel/replace transients (checker.py)
        out.append(("H8", f"ISR members {[r for r in isr if r not in rs]} are not replicas {sorted(rs)}"))
    if recovery == RECOVERING and (len(isr) != 1 or leader not in (NO_LEADER, isr[0])):
        out.append(("H12", f"leader_recovery_state=RECOVERING with leader {leader} and ISR {list(isr)} "
                           "(must be a one-member ISR led by that member or -1)"))
    return out


def transition_violations(prev, new, rs=None) -> list[tuple[str, str]]:
    """``prev``/``new``: objects with leader, leader_epoch, isr, recovery, version (consecutive
    observations; ``new.version`` may skip versions)."""
    out = []
    if new.version <= prev.version:
        out.append(("H9", f"partition epoch (znode version) went from {prev.version} to {new.version}"))
    if new.leader_epoch < prev.leader_epoch:
        out.append(("H3", f"leader epoch went backwards {prev.leader_epoch} -> {new.leader_epoch}"))
    elif new.leader_epoch == prev.leader_epoch:
        if new.leader != prev.leader:
            out.append(("H4", f"leader changed {prev.leader} -> {new.leader} within leader epoch "
                              f"{new.leader_epoch}"))
        elif new.leader != NO_LEADER and (new.leader not in prev.isr or new.leader not in new.isr):
            out.append(("H10", f"same-epoch ISR change {list(prev.isr)} -> {list(new.isr)} does not keep "
                               f"leader {new.leader} in both ISRs"))
        if prev.recovery != RECOVERING and new.recovery == RECOVERING:
            out.append(("H12", "RECOVERED -> RECOVERING without an unclean election (same leader epoch)"))
        if rs is not None:
            outside = [r for r in new.isr if r not in prev.isr and r not in rs]
            if outside:
                out.append(("H13", f"ISR expansion added {outside}, not replicas of {list(rs)}"))
    return out


def model_state_violations(s: ClusterState) -> list[tuple[str, str]]:
    """Hard invariants on a model state (used to test the model against itself)."""
    out = []
    for tp, st in s.partitions.items():
        a = s.topics[tp[0]].assignments[tp[1]]
        rs = set(a.rs)
        for rule, msg in state_violations(st.leader, st.isr, st.recovery, None):
            out.append((rule, f"{tp}: {msg}"))
        if not st.isr:
            out.append(("H7", f"{tp}: empty ISR (ZK mode never writes an empty ISR, §4.9)"))
        if st.leader != NO_LEADER and st.leader not in rs:
            out.append(("H6", f"{tp}: leader {st.leader} not in RS {a.rs} at quiescence"))
        if a.ar and (set(a.ar) & set(a.rr) or not set(a.ar) <= rs or not set(a.rr) <= rs):
            out.append(("H15", f"{tp}: bad reassignment shape {a}"))
        if not a.trs or not a.ors:
            out.append(("H15", f"{tp}: empty ORS or TRS in {a}"))
        if st.leader_epoch < 0 or st.version < 0:
            out.append(("H9", f"{tp}: negative epochs {st}"))
    if s.controller is not None and s.controller not in s.registered:
        out.append(("H1", f"controller {s.controller} is not a registered broker"))
    return out
