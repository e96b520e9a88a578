"""Unit tests of the election strategies and the controller-side ISR removal (spec §4.1-§4.6)."""

from reference.elections import (clean_offline, controlled_shutdown_election, init_new_partition, offline,
                                 preferred_election, reassign_election, remove_from_isr, unclean_offline)
from reference.state import RECOVERED, RECOVERING


def test_init_new_partition_first_online_in_rs_order_d3():
    e = init_new_partition((3, 1, 2), online={1, 2})
    assert (e.leader, e.isr) == (1, (1, 2))
    assert init_new_partition((3,), online={1}) is None          # no state znode is created


def test_clean_offline_uses_rs_order_not_isr_order_d1():
    e = clean_offline(rs=(1, 2, 3), isr=(3, 2, 1), recovery=RECOVERED, online={2, 3})
    assert e.leader == 2                      # first of RS in ISR & online, although 3 is first in the ISR
    assert e.isr == (3, 2)                    # ISR ∩ online, old ISR order kept


def test_clean_offline_fails_without_online_isr_member():
    assert clean_offline((1, 2, 3), (1,), RECOVERED, {2, 3}) is None


def test_unclean_offline_first_online_replica_and_recovering_d2():
    e = unclean_offline((1, 2, 3), online={3, 2}, recovery_supported=True)
    assert e == (2, (2,), RECOVERING)
    assert unclean_offline((1, 2, 3), {3}, recovery_supported=False).recovery == RECOVERED  # < 3.2


def test_offline_only_falls_back_to_unclean_when_allowed():
    assert offline((1, 2, 3), (1,), RECOVERED, {2, 3}, False, True) == (None, False)
    e, unclean = offline((1, 2, 3), (1,), RECOVERED, {2, 3}, True, True)
    assert unclean and e.leader == 2 and e.isr == (2,)


def test_preferred_election_never_falls_back_d4():
    assert preferred_election((1, 2, 3), (1, 2, 3), RECOVERED, {1, 2, 3}).leader == 1
    assert preferred_election((1, 2, 3), (2, 3), RECOVERED, {1, 2, 3}) is None     # RS[0] not in ISR
    assert preferred_election((1, 2, 3), (1, 2, 3), RECOVERED, {2, 3}) is None     # RS[0] offline


def test_reassign_election_uses_trs_order_d6():
    e = reassign_election(trs=(6, 4, 5), isr=(1, 4, 5, 6), recovery=RECOVERED, online={1, 4, 5})
    assert e.leader == 4 and e.isr == (1, 4, 5, 6)   # 6 offline; ISR unchanged


def test_controlled_shutdown_skips_all_shutting_down_brokers_d5():
    e = controlled_shutdown_election((1, 2, 3), (1, 2, 3), RECOVERED, registered={1, 2, 3}, shutting_down={1, 2})
    assert e.leader == 3 and e.isr == (3,)
    assert controlled_shutdown_election((1, 2), (1,), RECOVERED, {1, 2}, {1}) is None


def test_isr_removal_keeps_last_member_and_drops_leader_d8():
    assert remove_from_isr(1, (1, 2, 3), 2) == (1, (1, 3))
    assert remove_from_isr(1, (1, 3), 1) == (-1, (3,))
    assert remove_from_isr(3, (3,), 3) == (-1, (3,))           # singleton kept, leader -> -1
    assert remove_from_isr(-1, (3,), 3) == (-1, (3,))          # still a write (LE+1 by the caller)
    assert remove_from_isr(1, (1, 3), 2) is None               # not in ISR: no write
