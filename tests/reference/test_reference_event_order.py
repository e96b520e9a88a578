"""Event order for the checker when the ZooKeeper history comes from the transaction log.

The runner reads ZooKeeper's txn log after the run and appends its ``zk.*`` events at the end of
the record, so their ``seq`` is later than every fault and action. ``reference.events.normalize``
must then place them by time (``zk_time`` vs ``wall``): a graceful ``stop`` of a leader must be
seen between the broker's first registration and its controlled-shutdown election (§5.5, D5),
otherwise the re-registration clears the "maybe shutting down" mark and the controlled-shutdown
election is misreported as a preferred-election divergence (D4).
"""

from reference import check_conformance
from reference.events import normalize
from reference_helpers import started_history

T0 = 1_795_000_000.0


def _timed_txnlog_run(h):
    """Give every event a time (its index), then move the zk.* events to the end of the seq order,
    as the runner does with the txn-log copies."""
    evs = []
    for i, e in enumerate(h.events):
        e = dict(e, wall=T0 + i)
        if e["type"].startswith("zk."):
            e["zk_time"] = T0 + i
        evs.append(e)
    others = [e for e in evs if not e["type"].startswith("zk.")]
    zk = [e for e in evs if e["type"].startswith("zk.")]
    out = []
    for seq, e in enumerate(others + [dict(z, wall=T0 + 1000 + k) for k, z in enumerate(zk)]):
        out.append(dict(e, seq=seq))
    return out


def _stop_leader_history():
    h = started_history()
    h.fault("stop", [1])
    h.state("t", 0, 2, 1, (2, 3), 1)                  # controlled-shutdown election: 1 shutting down
    h.broker(1, up=False)
    h.broker(1, up=True)                             # restarted
    h.state("t", 0, 2, 1, (2, 3, 1), 2)              # rejoined by the leader's AlterPartition
    return h


def test_txnlog_events_are_merged_by_time():
    events = _timed_txnlog_run(_stop_leader_history())
    order = [e["type"] for e in normalize(events)]
    i = order.index("fault.start")
    # three registrations, epoch, controller + epoch, topic, state come before the fault
    assert order[:i].count("zk.broker") == 3 and order[i + 1] == "zk.partition_state", order


def test_graceful_stop_of_leader_passes_with_txnlog_history():
    events = _timed_txnlog_run(_stop_leader_history())
    r = check_conformance(events, {}, "apache-zk-3.9")
    assert r.verdict == "PASS", [str(d) for d in r.divergences + r.invariant_violations]


def test_leader_move_without_a_stop_is_still_a_divergence():
    """The time merge does not hide a real D4: the same move with a history without any stop."""
    h = started_history()
    h.state("t", 0, 2, 1, (2, 3), 1)                  # leader 1 alive, not stopping: only RS[0] may lead
    r = check_conformance(_timed_txnlog_run(h), {}, "apache-zk-3.9")
    assert r.verdict == "FAIL" and "D4" in r.rules(), r.rules()


def test_action_is_placed_at_the_scripts_previous_event():
    """An action is recorded when its call returned, after its controller write: it is placed at the
    script's previous event (here the kill), so an ElectLeaders(UNCLEAN) grant precedes its write."""
    h = started_history()
    h.fault("kill", [1])
    h.fault("kill", [2])
    h.broker(1, up=False)
    h.state("t", 0, 2, 1, (2, 3), 1)
    h.broker(2, up=False)
    h.state("t", 0, 3, 2, (3,), 2)
    h.fault("kill", [3])
    h.broker(3, up=False)
    h.state("t", 0, -1, 3, (3,), 3)
    h.broker(1, up=True)
    h._add("expect", what="broker 1 back")
    h.state("t", 0, 1, 4, (1,), 4, rec=1)             # the unclean election written by the request ...
    h.action("elect_unclean", partitions=[{"topic": "t", "partition": 0}])  # ... recorded after it returned
    r = check_conformance(_timed_txnlog_run(h), {}, "apache-zk-3.9")
    assert r.verdict == "PASS", [str(d) for d in r.divergences + r.invariant_violations]


def test_action_goes_before_samples_recorded_while_the_call_ran():
    """A reassignment tool runs for seconds while the harness keeps sampling: admin.metadata samples later
    than the script's previous event but earlier in seq than the action must not hold the action back
    behind the controller's writes (kafkatest.reassign_partitions: a no-op partition's B3 bump came
    before the action was recorded, and was misreported as D7)."""
    h = started_history(brokers=(1, 2, 3, 4), controller=4)
    h.topic("t", {0: (1, 2, 3), 1: (2, 3, 1)}, version=1)
    h.state("t", 1, 2, 0, (2, 3, 1), 0)
    h._add("expect", what="full ISR")                                 # the script's previous event
    for _ in range(5):                                                 # samples taken during the call
        h._add("admin.metadata", partitions=[])
    h.topic("t", {0: (4, 2, 3, 1), 1: (2, 3, 1)}, adding={0: [4]}, removing={0: [1]}, version=2)
    h.state("t", 0, 1, 1, (1, 2, 3), 1)
    h.state("t", 1, 2, 1, (2, 3, 1), 1)                                # B3 of the no-op partition 1
    h.action("reassign", partitions=[{"topic": "t", "partition": 0, "replicas": [4, 2, 3]},
                                     {"topic": "t", "partition": 1, "replicas": [2, 3, 1]}])
    events = _timed_txnlog_run(h)
    order = [(e["type"], e.get("action")) for e in normalize(events)]
    assert order.index(("action", "reassign")) < order.index(("admin.metadata", None)), order
    r = check_conformance(events, {}, "apache-zk-3.9")
    assert r.verdict == "PASS", [str(d) for d in r.divergences + r.invariant_violations]


def test_a_write_seen_twice_is_kept_once_in_the_place_of_its_first_copy():
    """A watch copy after the txn-log copy of a write (and the very same dict given twice) is one
    write; the first copy keeps its place among the faults and actions."""
    h = started_history()
    h.fault("kill", [1])
    h.broker(1, up=False)
    h.state("t", 0, 2, 1, (2, 3), 1)
    events = [dict(e, seq=i) for i, e in enumerate(h.events)]
    write = events[-1]
    events.append({"seq": len(events), "type": "admin.metadata", "wall": write["wall"], "brokers": []})
    events.append(dict(write, seq=len(events), source="watch"))        # a watch copy, later in seq
    events.append(write)                                                 # the same dict again
    out = normalize(events)
    kept = [e for e in out if e["type"] == "zk.partition_state" and e.get("leader") == 2]
    assert kept == [write] and out[-1]["type"] == "admin.metadata"
    assert [e["type"] for e in out].count("zk.broker") == sum(e["type"] == "zk.broker" for e in events)
