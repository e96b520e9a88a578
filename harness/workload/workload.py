"""The Jepsen-style client side of a run: producers and consumers in background threads.

A scenario builds a :class:`Workload`, calls :meth:`Workload.start`, injects faults, calls
:meth:`Workload.stop` (bounded), heals, then :meth:`Workload.drain`. Every client operation is
recorded through ``emit(type_, **fields)`` (the signature of ``RunRecorder.emit``).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from harness.workload.config import WorkloadConfig
from harness.workload.consumer import ConsumerProcess
from harness.workload.drain import drain
from harness.workload.producer import ProducerProcess

Emit = Callable[..., object]


# how long ``stop`` lets consumers read what was acknowledged before stopping them: a few of their
# fetch waits (fetch.wait.max.ms 100 ms); once they have, at once
CATCH_UP_S = 1.0


class ClientGroup:
    """The life cycle every workload shares (the interface the runner and the nemesis use): client
    processes with a ``thread``, ``name`` and ``crash()`` in ``producers`` / ``consumers``, started
    together, stopped producers first (bounded), one of them ended on demand. A subclass builds the
    processes and says what an acknowledgement is (:meth:`acknowledged`), how long a stop may take
    (:meth:`_stop_timeout`), how to drain and what its stats are."""

    def __init__(self, bootstrap: str, config, emit: Emit):
        if not bootstrap:
            raise ValueError("bootstrap servers are required")
        if not callable(emit):
            raise TypeError("emit must be callable like RunRecorder.emit(type_, **fields)")
        self.bootstrap = bootstrap
        self.config = config
        self.emit = emit
        self._stop_producers = threading.Event()
        self._stop_consumers = threading.Event()
        self.producers: list = []
        self.consumers: list = []
        self.started = False

    def start(self):
        if self.started:
            raise RuntimeError("workload already started")
        self.started = True
        self.emit("phase", name="workload.start", topic=self.config.topic)
        for proc in self.consumers + self.producers:
            proc.thread.start()
        return self

    def _stop_timeout(self) -> float:
        raise NotImplementedError

    def acknowledged(self) -> int:
        raise NotImplementedError

    def _consumers_caught_up(self) -> bool:
        """Whether the consumers read what the producers had acknowledged (``stop`` waits for it,
        bounded by ``CATCH_UP_S``); a group without such a measure is caught up."""
        return True

    def _stop_producing(self, timeout: float | None) -> float:
        """Ask every producer to end and wait for them, bounded by ``timeout`` (default:
        :meth:`_stop_timeout`); returns the stop's deadline, for what stops after the producers."""
        timeout = self._stop_timeout() if timeout is None else timeout
        end = time.monotonic() + timeout
        # from here on a client's end is asked for (coverage needs no client after this moment)
        self.emit("phase", name="workload.stopping", topic=self.config.topic)
        self._stop_producers.set()
        for p in self.producers:
            p.thread.join(max(0.0, end - time.monotonic()))
        return end

    def stop(self, timeout: float | None = None) -> bool:
        """Stop producing (each producer finishing what it has outstanding), then stop the consumers.
        Returns True if every thread ended within ``timeout`` (default: :meth:`_stop_timeout`)."""
        end = self._stop_producing(timeout)
        # the consumers' last fetch may still wait at the broker (fetch.wait.max.ms, consumer_settings):
        # give them, bounded, the time to read what was acknowledged before they stop
        catch_up_end = min(end, time.monotonic() + CATCH_UP_S)
        while not self._consumers_caught_up() and time.monotonic() < catch_up_end:
            time.sleep(0.02)
        self._stop_consumers.set()
        for c in self.consumers:
            c.thread.join(max(0.0, end - time.monotonic()))
        alive = [t.name for t in self._threads() if t.is_alive()]
        self.emit("phase", name="workload.stop", topic=self.config.topic, still_running=alive)
        return not alive

    def crash(self, target: str, rng=None, timeout_s: float = 30.0) -> str:
        """End one client abruptly (the nemesis's ``client_crash``) and wait (bounded) until its thread
        recorded ``client.life`` died. ``target``: a process name (``p0``, ``c1``, with the workload's
        prefix or without), ``random-producer`` or ``random-consumer``. Returns the process name."""
        procs = {p.name: p for p in self.producers + self.consumers}
        pre = self.config.process_prefix
        if target in ("random-producer", "random-consumer"):
            pool = [p for p in (self.producers if target == "random-producer" else self.consumers)
                    if p.thread.is_alive()]
            if not pool:
                raise LookupError(f"client_crash: no live {target.split('-')[1]} to end")
            proc = (rng.choice(pool) if rng is not None else pool[0])
        else:
            proc = procs.get(target) or procs.get(pre + str(target))
            if proc is None:
                raise LookupError(f"client_crash: no client {target!r}; the workload has {', '.join(sorted(procs))}")
        proc.crash()
        proc.thread.join(timeout_s)
        if proc.thread.is_alive():
            raise TimeoutError(f"client_crash: {proc.name} did not end within {timeout_s:.0f} s")
        return proc.name

    def wait_acknowledged(self, n: int = 1, timeout_s: float = 30.0) -> bool:
        """Wait (bounded) until ``n`` acknowledgements (:meth:`acknowledged`): the producers have
        connected and, if idempotent, hold a producer id, so a first fault does not land on a client
        still starting."""
        deadline = time.monotonic() + timeout_s
        while self.acknowledged() < n:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return True

    def _threads(self) -> list[threading.Thread]:
        return [p.thread for p in self.producers] + [c.thread for c in self.consumers]


class Workload(ClientGroup):
    """Producers (``<prefix>p<i>``), assign-mode consumers (``<prefix>c<i>``) and group consumers
    (``<prefix>g<i>``) against one topic."""

    def __init__(self, bootstrap: str, config: WorkloadConfig, emit: Emit):
        super().__init__(bootstrap, config, emit)
        pre = config.process_prefix
        self.producers = [ProducerProcess(f"{pre}p{i}", bootstrap, config, emit, self._stop_producers)
                          for i in range(config.producers)]
        self.consumers = [ConsumerProcess(f"{pre}c{i}", "assign", bootstrap, config, emit, self._stop_consumers)
                          for i in range(config.assign_consumers)]
        self.consumers += [ConsumerProcess(f"{pre}g{i}", "subscribe", bootstrap, config, emit, self._stop_consumers)
                           for i in range(config.subscribe_consumers)]

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the producers to finish on their own (duration or count reached); True if they did."""
        end = None if timeout is None else time.monotonic() + timeout
        for p in self.producers:
            p.thread.join(None if end is None else max(0.0, end - time.monotonic()))
        return not any(p.thread.is_alive() for p in self.producers)

    def _stop_timeout(self) -> float:
        return self.config.flush_timeout_s + 10.0     # producers wait up to the flush timeout for acks

    def drain(self, timeout_s: float = 60.0) -> dict:
        """The final read of every partition to its end (see :func:`harness.workload.drain`)."""
        return drain(self.bootstrap, self.config.topic, self.config.partition_ids, self.emit,
                     timeout_s=timeout_s, process=f"{self.config.process_prefix}drain",
                     consumer_config=self.config.consumer_config)

    def acknowledged(self) -> int:
        """Writes acknowledged so far, over every producer."""
        return sum(p.counts["ok"] for p in self.producers)

    def _consumers_caught_up(self) -> bool:
        """Each assign-mode consumer (it reads every partition from the start) read at least as many
        records as were acknowledged."""
        acked = self.acknowledged()
        return all(c.records >= acked for c in self.consumers if c.mode == "assign" and c.thread.is_alive())

    def stats(self) -> dict:
        """Per-process counts and any exception that ended a thread (for logs and verdict stats)."""
        return {
            "producers": {p.name: {**p.counts, "error": p.error} for p in self.producers},
            "consumers": {c.name: {"mode": c.mode, "records": c.records, "errors": dict(c.errors),
                                   "error": c.error} for c in self.consumers},
        }
