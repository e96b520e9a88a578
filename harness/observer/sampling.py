"""What the periodic samplers share: a bounded background thread and event emission.

A subclass (:class:`harness.observer.admin_sampler.AdminSampler`,
:class:`harness.observer.protocol_sampler.ProtocolSampler`) implements :meth:`sample` (one round of
requests, emitting its events through :meth:`_emit`) and may override :meth:`_join_timeout`. The
thread stops after ``max_samples`` samples, after ``duration`` seconds or on :meth:`stop`,
whichever is first.
"""

from __future__ import annotations

import threading
import time
from typing import Callable


class PeriodicSampler:
    thread_name = "sampler"

    def __init__(self, emit: Callable[..., dict] | None, interval: float, max_samples: int | None,
                 duration: float | None):
        if interval <= 0:
            raise ValueError(f"interval must be > 0, got {interval}")
        self._emit_fn = emit
        self.interval, self.max_samples, self.duration = interval, max_samples, duration
        self.samples: list[dict] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> list[dict]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _join_timeout(self) -> float:
        return 5.0

    def _emit(self, type_: str, fields: dict) -> dict:
        """Emit one event (through the recorder when given) and keep it in :attr:`samples`."""
        if self._emit_fn is not None:
            ev = self._emit_fn(type_, **fields) or dict(fields, type=type_)
        else:
            ev = dict(fields, type=type_, wall=round(time.time(), 6))
        self.samples.append(ev)
        return ev

    # -- background thread ---------------------------------------------------------------------
    def start(self):
        if self._thread is not None:
            raise RuntimeError("sampler already started")
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        t0 = time.monotonic()
        n = 0
        while not self._stop.is_set():
            if self.max_samples is not None and n >= self.max_samples:
                break
            if self.duration is not None and time.monotonic() - t0 >= self.duration:
                break
            started = time.monotonic()
            self.sample()
            n += 1
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def stop(self, timeout: float | None = None) -> None:
        """Stop and join the thread (waits at most for the sample in flight)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout if timeout is not None else self._join_timeout())

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
