"""Nemesis bookkeeping without containers: bad input, unresolvable targets, view failures.

Only paths that stop before any container is touched are exercised here; applying faults is
covered on a real cluster by tests/integration/test_faults.py.
"""

from __future__ import annotations

import pytest

from harness.nemesis import FaultError, FaultSkipped, FaultSpecError, Nemesis


class _Rec:
    def __init__(self):
        self.events = []

    def emit(self, type_, **f):
        self.events.append((type_, f))
        return f


class _Cluster:
    name = "x"
    brokers: dict = {}
    zookeepers: list = []
    broker_ids: list = []


class _View:
    def __init__(self, controller=None, error=None):
        self.c, self.error = controller, error

    def controller_id(self):
        if self.error:
            raise self.error
        return self.c

    def live_brokers(self):
        return []

    def partition_state(self, t, p):
        return None

    def replicas(self, t, p):
        return []


def test_unresolvable_target_is_recorded_as_skipped():
    rec = _Rec()
    nem = Nemesis(_Cluster(), rec, _View(controller=None))
    with pytest.raises(FaultSkipped, match="no controller"):
        nem.apply("kill", "controller")
    (t1, start), (t2, end) = rec.events
    assert (t1, t2) == ("fault.start", "fault.end")
    assert start["nodes"] == [] and start["target"] == "controller"
    assert end["fault_id"] == start["fault_id"] and end["ok"] is False and end["error"].startswith("skipped:")
    assert nem.active == []


def test_view_failure_is_a_fault_error_and_recorded():
    rec = _Rec()
    nem = Nemesis(_Cluster(), rec, _View(error=ConnectionError("zk down")))
    with pytest.raises(FaultError, match="cannot resolve target 'controller'.*zk down"):
        nem.apply({"fault": "pause", "target": "controller"})
    assert [t for t, _ in rec.events] == ["fault.start", "fault.end"]
    assert rec.events[1][1]["ok"] is False


@pytest.mark.parametrize("args, message", [
    (("explode", "controller"), "unknown fault"),
    (("kill", "leader(t)"), "cannot parse"),
    (("netem", "broker:1", {"delay": 5}), "unknown parameter 'delay'"),
    (("isolate", "broker:1", {"links": ["bluetooth"]}), "unknown link"),
])
def test_bad_input_raises_before_anything_is_recorded(args, message):
    rec = _Rec()
    with pytest.raises(FaultSpecError, match=message):
        Nemesis(_Cluster(), rec, _View()).apply(*args)
    assert rec.events == []


def test_fault_ids_increase():
    rec = _Rec()
    nem = Nemesis(_Cluster(), rec, _View(controller=None))
    for _ in range(3):
        with pytest.raises(FaultSkipped):
            nem.apply("kill", "controller")
    assert [f["fault_id"] for t, f in rec.events if t == "fault.start"] == [1, 2, 3]
