"""The schedule executor: order of applies and heals, skipped faults, stop, heal on every exit.

Uses a recording stand-in for the nemesis (no cluster involved; the real nemesis is exercised by
tests/integration/test_faults.py).
"""

from __future__ import annotations

import threading

import pytest

from harness.nemesis.fault_base import FaultError
from harness.scenario.schedule import Schedule, ScheduleItem, run_schedule


class _Handle:
    def __init__(self, fid, item):
        self.fault_id, self.item = fid, item


class _Nemesis:
    def __init__(self, fail=(), interrupt_on=None):
        self.log: list[tuple[str, int]] = []
        self.fail, self.interrupt_on = set(fail), interrupt_on
        self.n = 0
        self.lock = threading.Lock()

    def apply(self, item):
        self.n += 1
        if self.n == self.interrupt_on:
            raise KeyboardInterrupt
        if self.n in self.fail:
            self.log.append(("fail", self.n))
            raise FaultError(f"fault {self.n} failed")
        self.log.append(("apply", self.n))
        return _Handle(self.n, item)

    def heal(self, h):
        self.log.append(("heal", h.fault_id))
        return True


def _sched(*spec):
    return Schedule(1, [ScheduleItem(at, "pause", "random-broker", d, {}) for at, d in spec])


def test_applies_in_time_order_and_heals_after_duration():
    nem = _Nemesis()
    # fault 1 from 0.0 to 3.0 s overlaps fault 2 (0.5 - 1.0 s); fault 3 (at 1.5 s) is instant. Half-second
    # gaps: the order must not depend on a scheduling delay of the test thread on a loaded host
    res = run_schedule(nem, _sched((0.0, 3.0), (0.5, 0.5), (1.5, 0.0)))
    assert nem.log == [("apply", 1), ("apply", 2), ("heal", 2), ("apply", 3), ("heal", 3), ("heal", 1)]
    assert [r.ok for r in res] == [True, True, True]
    assert all(r.healed_at >= r.applied_at for r in res)


def test_a_failed_fault_is_recorded_and_the_run_goes_on():
    nem = _Nemesis(fail={2})
    res = run_schedule(nem, _sched((0.0, 0.01), (0.02, 0.01), (0.04, 0.01)))
    assert [r.ok for r in res] == [True, False, True]
    assert "fault 2 failed" in res[1].error
    assert ("heal", 2) not in nem.log and ("heal", 3) in nem.log


def test_stop_event_stops_applying_but_heals_what_is_active():
    nem = _Nemesis()
    stop = threading.Event()
    timer = threading.Timer(0.2, stop.set)
    timer.start()
    res = run_schedule(nem, _sched((0.0, 60.0), (30.0, 1.0)), stop)
    timer.cancel()
    assert nem.log == [("apply", 1), ("heal", 1)]
    assert len(res) == 1


def test_interrupt_still_heals_active_faults():
    nem = _Nemesis(interrupt_on=2)
    with pytest.raises(KeyboardInterrupt):
        run_schedule(nem, _sched((0.0, 60.0), (0.05, 1.0)))
    assert nem.log == [("apply", 1), ("heal", 1)]


def test_bounded_by_schedule_end_plus_overrun():
    t = [0.0]

    class _Slow(_Nemesis):
        def apply(self, item):        # an apply that takes 100 s of (fake) time
            t[0] += 100.0
            return super().apply(item)
    nem = _Slow()
    res = run_schedule(nem, _sched((0.0, 1.0), (2.0, 1.0)), clock=lambda: t[0], max_overrun_s=5.0)
    assert [r.item.at for r in res] == [0.0]          # the second item would start past end + overrun
    assert nem.log == [("apply", 1), ("heal", 1)]


def test_a_late_heal_shifts_the_rest_of_the_plan():
    """A heal that blocks (a restarted broker waited for) must not make the next fault start early
    relative to it: the next item keeps its planned quiet interval after the actual heal."""
    t = [0.0]

    class _SlowHeal(_Nemesis):
        def heal(self, h):
            if h.fault_id == 1:
                t[0] += 20.0          # the first heal takes 20 s of (fake) time
            return super().heal(h)

    nem = _SlowHeal()

    class _FakeStop:                  # waiting advances the fake clock instead of sleeping
        def is_set(self):
            return False

        def wait(self, seconds):
            t[0] += seconds
    # planned: fault 1 at 0-5, quiet 3 s, fault 2 at 8-13
    res = run_schedule(nem, _sched((0.0, 5.0), (8.0, 5.0)), _FakeStop(), clock=lambda: t[0], max_overrun_s=100.0)
    assert [r.ok for r in res] == [True, True]
    gap = res[1].applied_at - res[0].healed_at
    assert 2.9 <= gap <= 3.2, (res[0], res[1])         # the planned quiet interval, after the late heal
    assert res[1].healed_at - res[1].applied_at >= 5.0  # and the planned duration
