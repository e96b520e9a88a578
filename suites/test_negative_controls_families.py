"""Negative controls for scenario families 3, 4, 9 and 10: the suites can fail, and say why.

For each family one real run is recorded (module fixture, a fresh cluster each); each control then
changes one observation of a copy of its events into what a misbehaving controller would have
written, and re-judges the copy with :func:`harness.checkers.verdict.decide`. The verdict must turn to FAIL
with the broken rule named; the unmodified copy must still PASS (so the control is what fails it).

Families and their broken observation (spec rule):
- topics (``topics.create_delete``): a partition of a topic being deleted gets a new leader instead
  of going offline (H14, §6.2);
- restart (``restart.catch_up``): the controller, not the leader, puts the returning broker back into
  the ISR (H13, §5.3 step 2 / §5.8);
- zookeeper (``zookeeper.session_expiry``): the broker whose session expired is elected leader while
  its ``/brokers/ids`` znode is gone (H19, §5.1-§5.2);
- network (``network.isolate_controller``): the isolated (deposed) controller's write lands after
  the new controller epoch (H2, §2.2 zombie fencing).
"""

from __future__ import annotations

import copy

import pytest

from suites.negative import record_passing_run, rejudge

pytestmark = [pytest.mark.docker, pytest.mark.conformance]

FAMILY_RUNS = {"topics": "topics.create_delete", "restart": "restart.catch_up",
               "zookeeper": "zookeeper.session_expiry", "network": "network.isolate_controller"}


@pytest.fixture(scope="module")
def runs(kc_image, tmp_path_factory):
    """One recorded run per family, made the first time a test of that family asks for it."""
    made: dict[str, tuple] = {}
    runs_dir = tmp_path_factory.mktemp("runs")

    def get(family: str):
        if family not in made:
            made[family] = record_passing_run(FAMILY_RUNS[family], kc_image.tag, runs_dir)
        return made[family]
    return get


# -- helpers on a run's events ------------------------------------------------------------------
def _txn(events, type_):
    """The events of ``type_`` read from ZooKeeper's transaction log, in zxid order."""
    return sorted((e for e in events if e["type"] == type_ and e.get("source") == "txnlog"),
                  key=lambda e: (e["zxid"], e["seq"]))


def _states(events, topic, partition=None):
    return [e for e in _txn(events, "zk.partition_state") if e["topic"] == topic and not e.get("deleted")
            and (partition is None or e["partition"] == partition)]


def _prev_state(events, ev):
    """The write of the same partition just before ``ev``."""
    return max((e for e in _states(events, ev["topic"], ev["partition"]) if e["zxid"] < ev["zxid"]),
               key=lambda e: e["zxid"])


def _registration_window(events, broker):
    """(zxid its znode was deleted, zxid it was created again) of the broker's last absence."""
    regs = _txn(events, "zk.broker")
    gone = max(e["zxid"] for e in regs if e["broker_id"] == broker and not e["registered"])
    back = min(e["zxid"] for e in regs if e["broker_id"] == broker and e["registered"] and e["zxid"] > gone)
    return gone, back


def _fault_broker(events, fault):
    return next(e for e in events if e["type"] == "fault.start" and e["fault"] == fault)["broker_ids"][0]


def _assert_fails_with(scenario, rec, events, rule):
    verdict, reason, checks = rejudge(scenario, rec, events)
    assert verdict == "FAIL", f"a broken {rule} observation was judged {verdict}: {reason}"
    assert "conformance" in reason and rule in reason, reason
    conf = checks["conformance"]
    found = {d["rule"] for d in conf["invariant_violations"] + conf["divergences"]}
    assert rule in found, found


# -- the controls ------------------------------------------------------------------------------
@pytest.mark.parametrize("family", sorted(FAMILY_RUNS))
def test_unmodified_record_passes(runs, family):
    scenario, rec = runs(family)
    verdict, reason, _ = rejudge(scenario, rec, copy.deepcopy(rec.events))
    assert verdict == "PASS", reason


def test_topics_election_during_deletion_fails(runs):
    """Topics: once the deletion started taking replicas offline, a leader moves to another broker (H14)."""
    scenario, rec = runs("topics")
    events = copy.deepcopy(rec.events)
    marker = next(e for e in _txn(events, "zk.delete_topics") if "doomed" in (e.get("topics") or []))
    writes = [e for e in _states(events, "doomed", 0) if e["zxid"] > marker["zxid"]]
    assert len(writes) >= 2, f"the deletion wrote {len(writes)} states of doomed-0 (expected one per replica)"
    first, second = writes[0], writes[1]
    other = next(r for r in first["isr"] if r != first["leader"])
    second.update(leader=other, isr=list(first["isr"]))
    _assert_fails_with(scenario, rec, events, "H14")


def test_restart_controller_adds_returning_broker_to_isr_fails(runs):
    """Restart: the returning broker is put back into an ISR by a controller write (LE + 1), not by
    its leader after catching up (H13)."""
    scenario, rec = runs("restart")
    events = copy.deepcopy(rec.events)
    broker = _fault_broker(events, "stop")
    _, back = _registration_window(events, broker)
    rejoin = [e for e in _states(events, "chaos") if e["zxid"] > back and broker in e["isr"]
              and broker not in _prev_state(events, e)["isr"]]
    assert rejoin, f"broker {broker} never rejoined an ISR in the recorded run"
    rejoin[-1]["leader_epoch"] += 1
    _assert_fails_with(scenario, rec, events, "H13")


def test_zookeeper_expired_broker_elected_fails(runs):
    """ZooKeeper: the broker whose session expired is elected while /brokers/ids/<id> is gone (H19)."""
    scenario, rec = runs("zookeeper")
    events = copy.deepcopy(rec.events)
    broker = _fault_broker(events, "zk_expire_session")
    gone, back = _registration_window(events, broker)
    candidates = [e for e in _states(events, "chaos") if gone < e["zxid"] < back
                  and _prev_state(events, e)["leader"] != broker and broker in _prev_state(events, e)["isr"]]
    assert candidates, f"no partition followed by {broker} was written while it was unregistered"
    w = candidates[0]
    w.update(leader=broker, isr=list(_prev_state(events, w)["isr"]))
    _assert_fails_with(scenario, rec, events, "H19")


def test_network_zombie_controller_write_fails(runs):
    """Network: a write of the isolated, deposed controller succeeds after the new epoch (H2)."""
    scenario, rec = runs("network")
    events = copy.deepcopy(rec.events)
    epochs = _txn(events, "zk.controller_epoch")
    new = epochs[-1]
    assert new["epoch"] >= 2, f"no controller failover in the recorded run (epochs {[e['epoch'] for e in epochs]})"
    w = next(e for e in _states(events, "chaos") if e["zxid"] > new["zxid"])
    w["controller_epoch"] = new["epoch"] - 1
    _assert_fails_with(scenario, rec, events, "H2")
