"""Leader election strategies and the controller-side ISR removal (spec §4.1-§4.6).

Pure functions over plain values so that the model (which applies them) and the checker (which
asks "what could the controller have written here?") share one definition. ``online`` is the set
of brokers the controller considers live (registered and not shutting down, §0.3).

Each function returns ``Election(leader, isr, recovery)`` or ``None`` when the strategy finds no
candidate (then nothing is written, §4.0).
"""

from __future__ import annotations

from typing import Collection, NamedTuple

from reference.state import NO_LEADER, RECOVERED, RECOVERING


class Election(NamedTuple):
    leader: int
    isr: tuple[int, ...]
    recovery: int


# Rule ids with their spec sections (used by the checker's divergence reports).
RULE_INIT = "§4.1.1/D3"
RULE_CLEAN = "§4.1.2/D1"
RULE_UNCLEAN = "§4.1.3/D2"
RULE_REASSIGN = "§4.2/D6"
RULE_PREFERRED = "§4.3/D4"
RULE_SHUTDOWN = "§4.4/D5"
RULE_ISR_REMOVAL = "§4.6/D8"


def init_new_partition(rs, online: Collection[int]) -> Election | None:
    """§4.1.1 / D3: leader = first online replica in RS order, ISR = online replicas in RS order."""
    live_rs = tuple(r for r in rs if r in online)
    if not live_rs:
        return None
    return Election(live_rs[0], live_rs, RECOVERED)


def clean_offline(rs, isr, recovery: int, online: Collection[int]) -> Election | None:
    """§4.1.2 / D1: first replica in RS order that is online and in the ISR; ISR := ISR ∩ online (old order)."""
    isr_set = set(isr)
    for r in rs:
        if r in online and r in isr_set:
            return Election(r, tuple(i for i in isr if i in online), recovery)
    return None


def unclean_offline(rs, online: Collection[int], recovery_supported: bool) -> Election | None:
    """§4.1.3 / D2: first online replica in RS order; ISR := [leader]; RECOVERING from 3.2 (EL:45-48)."""
    for r in rs:
        if r in online:
            return Election(r, (r,), RECOVERING if recovery_supported else RECOVERED)
    return None


def offline(rs, isr, recovery: int, online: Collection[int], allow_unclean: bool,
            recovery_supported: bool) -> tuple[Election | None, bool]:
    """§4.1: clean election, falling back to unclean only when no ISR member is online and it is allowed.

    Returns ``(election, was_unclean)``.
    """
    e = clean_offline(rs, isr, recovery, online)
    if e is not None:
        return e, False
    if allow_unclean and not any(i in online for i in isr):
        return unclean_offline(rs, online, recovery_supported), True
    return None, False


def reassign_election(trs, isr, recovery: int, online: Collection[int]) -> Election | None:
    """§4.2 / D6: first broker in TRS order that is online and in the ISR; ISR unchanged."""
    isr_set = set(isr)
    for r in trs:
        if r in online and r in isr_set:
            return Election(r, tuple(isr), recovery)
    return None


def preferred_election(rs, isr, recovery: int, online: Collection[int]) -> Election | None:
    """§4.3 / D4: only RS[0], only if online and in the ISR; no fallback; ISR unchanged."""
    if rs and rs[0] in online and rs[0] in isr:
        return Election(rs[0], tuple(isr), recovery)
    return None


def controlled_shutdown_election(rs, isr, recovery: int, registered: Collection[int],
                                 shutting_down: Collection[int]) -> Election | None:
    """§4.4 / D5: first in RS order that is registered, in the ISR and not shutting down; ISR := ISR − S."""
    isr_set = set(isr)
    for r in rs:
        if r in registered and r in isr_set and r not in shutting_down:
            return Election(r, tuple(i for i in isr if i not in shutting_down), recovery)
    return None


def remove_from_isr(leader: int, isr, replica: int) -> tuple[int, tuple[int, ...]] | None:
    """§4.6 / D8 (RSM:344-346): controller-side ISR removal of ``replica``.

    No write when ``replica`` is not in the ISR (returns None). Otherwise the leader becomes -1 if it
    was ``replica`` and the ISR loses ``replica`` unless it is the only member (the last ISR member
    is always kept, §4.9). The caller bumps LE by one.
    """
    if replica not in isr:
        return None
    new_leader = NO_LEADER if leader == replica else leader
    new_isr = tuple(isr) if len(isr) == 1 else tuple(i for i in isr if i != replica)
    return new_leader, new_isr
