"""librdkafka's producer threads run nicer than the harness's own (harness/workload/client_threads.py).

A real confluent-kafka Producer (its bootstrap address answers nothing: the threads start anyway)."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest
from confluent_kafka import Producer

from harness.workload import client_threads as ct

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")


def thread_nice(tid: int) -> int | None:
    """The nice value of thread ``tid`` of this process (``/proc``), None when unreadable."""
    try:
        with open(f"/proc/self/task/{tid}/stat", encoding="ascii", errors="replace") as f:
            s = f.read()
        return int(s[s.rindex(")") + 2:].split()[16])
    except (OSError, ValueError, IndexError):
        return None


def threads_named(prefix: str) -> dict[int, str]:
    """Threads of this process whose name starts with ``prefix``: {tid: name} (Linux ``/proc``)."""
    out: dict[int, str] = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for t in tids:
        try:
            with open(f"/proc/self/task/{t}/comm", encoding="utf-8", errors="replace") as f:
                name = f.read().strip()
        except OSError:
            continue
        if name.startswith(prefix):
            out[int(t)] = name
    return out


def _rdk_threads(before: set[int], timeout_s: float = 5.0) -> dict[int, str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        new = {t: n for t, n in threads_named("rdk:").items() if t not in before}
        if new:
            return new
        time.sleep(0.05)
    return {}


def test_the_producers_threads_inherit_the_higher_nice_and_the_caller_keeps_its_own():
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    before = set(threads_named("rdk:"))
    p = ct.create_niced(lambda: Producer({"bootstrap.servers": "127.0.0.1:9", "linger.ms": 5}), 7)
    try:
        threads = _rdk_threads(before)
        assert any(n == "rdk:main" for n in threads.values()), threads
        # A thread that has exited since it was listed has no nice value left to read (None):
        # librdkafka may end a broker thread whose connection is refused. rdk:main must be read.
        nices = {n: thread_nice(t) for t, n in threads.items()}
        assert nices.get("rdk:main") is not None, nices
        assert all(v == min(19, mine + 7) for v in nices.values() if v is not None), nices
        assert os.getpriority(os.PRIO_PROCESS, 0) == mine
        assert thread_nice(threading.get_native_id()) == mine
    finally:
        p.flush(0)
        del p


def test_increment_zero_creates_in_the_callers_thread():
    seen = []
    assert ct.create_niced(lambda: seen.append(threading.get_ident()) or 5, 0) == 5
    assert seen == [threading.get_ident()]


def test_an_exception_of_the_factory_reaches_the_caller():
    def boom():
        raise ValueError("bad config")
    with pytest.raises(ValueError, match="bad config"):
        ct.create_niced(boom, 3)


@pytest.mark.parametrize("raw,want", [("", 10), ("0", 0), ("4", 4), ("40", 19), ("-3", 0), ("x", 10)])
def test_the_increment_comes_from_the_environment(monkeypatch, raw, want):
    monkeypatch.setenv(ct.ENV, raw)
    assert ct.nice_increment() == want
