"""librdkafka's own threads of the workload's producers run at a lower CPU priority (nice).

Why: an idempotent (or transactional) librdkafka producer busy-loops while a partition waits for
its in-flight requests to drain, e.g. for the whole time a partition leader is down. Every broker
thread of the producer (``rdk:broker<N>``) then spins at 100 % of a core until the drain ends (up to
``request.timeout.ms``), measured here with librdkafka 2.16: SIGKILL of one of three brokers, 200
sends/s, the two surviving broker threads used 4.7 s and 5.8 s of CPU in the next 9.8 s; none
without idempotence. The cause, in librdkafka's ``src/rdkafka_broker.c``
``rd_kafka_toppar_producer_serve``: the linger deadline of the queued messages is set as the broker
thread's next wake-up (``rd_kafka_msgq_allow_wakeup_at``) *before* the ``wait_drain`` check returns
without sending, so once that deadline has passed the thread polls its socket with a 0 ms timeout
in a loop. On a 2-core host that spin takes the CPU from the brokers under test exactly during the
fault windows (a broker scenario's fault is what makes a leader go away).

The fix here leaves the client and its load as they are: the producer is created in a short-lived
thread whose nice value is raised by :func:`nice_increment` (``$KAFKA_CHAOS_PRODUCER_NICE``, 10 when
unset; 0: off); the threads librdkafka starts (``rdk:main``, then the broker threads ``rdk:main`` creates) inherit it,
on Linux, where nice is per thread. The Python thread that paces the sends, polls and records
completions keeps its priority. With two CPU hogs beside it the spinning threads' CPU over the same
kill fell from 5.3 s to 1.0 s, and the steady-state send latency (p50 7-8 ms) did not change.
Elsewhere (no per-thread nice) the producer is created as before.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Callable, TypeVar

T = TypeVar("T")
ENV = "KAFKA_CHAOS_PRODUCER_NICE"
DEFAULT_NICE = 10


def nice_increment() -> int:
    """How much nicer librdkafka's producer threads run: ``$KAFKA_CHAOS_PRODUCER_NICE`` (0-19) or 10;
    0 off Linux (there ``setpriority`` of a thread would renice the whole process)."""
    if not sys.platform.startswith("linux"):
        return 0
    raw = os.environ.get(ENV, "").strip()
    try:
        n = int(raw) if raw else DEFAULT_NICE
    except ValueError:
        n = DEFAULT_NICE
    return max(0, min(19, n))


def create_niced(make: Callable[[], T], increment: int | None = None) -> T:
    """``make()`` run in a thread of its own whose nice value is ``increment`` higher (default
    :func:`nice_increment`), so the threads it starts inherit that; its result (or its exception)."""
    inc = nice_increment() if increment is None else increment
    if inc <= 0:
        return make()
    box: dict = {}

    def body() -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, min(19, os.getpriority(os.PRIO_PROCESS, 0) + inc))
        except OSError:
            pass                    # not allowed here: the client runs at the caller's priority
        try:
            box["value"] = make()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e

    t = threading.Thread(target=body, name="client-create", daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]

