"""Checker: a broker failure queued before a topic's delete marker is handled first (spec §2.6).

The ZooKeeper controller processes its event queue one event at a time in FIFO order, so the
BrokerChange caused by a deregistration at zxid z runs to completion before the TopicDeletion
caused by a marker created at a later zxid. Its §4.1/§5.2 election of a partition of the doomed
topic is therefore legitimate although the marker already exists in ZooKeeper; only after the
controller has visibly processed the deletion (§6.2 step 4 writes) are elections forbidden (H14).
Reproduces the real run record of ``topics.delete_with_broker_down`` on 3.9.2.
"""

from reference import check_conformance
from reference_helpers import started_history

APACHE = "apache-zk-3.9"
COMPAT = "compatible"


def _broker_down_then_marker():
    """RS [2,3,1], leader 2 (as doomed-0 in the record); broker 2 deregisters, then the marker."""
    h = started_history(controller=1, rs=(2, 3, 1))
    h.broker(2, up=False)                    # zxid of the BrokerChange event
    h.delete_marker(["t"])                   # queued after it
    return h


def _failures(h, profile):
    r = check_conformance(h.events, {}, profile)
    return r, [str(d) for d in r.divergences + r.invariant_violations]


def test_failure_election_queued_before_the_marker_passes():
    h = _broker_down_then_marker()
    h.state("t", 0, 3, 1, (3, 1), 1)         # §5.2 step 3 / §4.1.2: first live ISR replica of RS
    h.state("t", 0, 3, 2, (3,), 2)           # §6.2 step 4: replica 1 offlined
    h.state("t", 0, -1, 3, (3,), 3)          # §6.2 step 4: replica 3 (leader) offlined
    for profile in (APACHE, COMPAT):
        r, fails = _failures(h, profile)
        assert r.verdict == "PASS", (profile, fails)
        assert r.stats["elections"] == 1


def test_wrong_failure_election_before_the_marker_is_still_d1():
    h = _broker_down_then_marker()
    h.state("t", 0, 1, 1, (3, 1), 1)         # 1 is not the first live ISR replica of [2, 3, 1]
    r, fails = _failures(h, APACHE)
    assert r.verdict == "FAIL" and "D1" in r.rules(), fails


def test_election_after_the_deletion_was_processed_is_still_h14():
    h = _broker_down_then_marker()
    h.state("t", 0, 3, 1, (3, 1), 1)         # BrokerChange (queued first)
    h.state("t", 0, -1, 2, (1,), 2)          # TopicDeletion has started: replica 3 (leader) offlined
    h.state("t", 0, 1, 3, (1,), 3)           # an election now is forbidden (§6.2, PSM:70-74)
    r, fails = _failures(h, COMPAT)
    assert r.verdict == "FAIL" and "H14" in r.rules(), fails
