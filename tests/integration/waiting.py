"""Bounded polling for integration tests: wait for a state, never sleep a fixed time."""

from __future__ import annotations

import time

import pytest


def wait_for(pred, timeout: float, what: str, interval: float = 0.2):
    """Poll ``pred`` until it returns a truthy value (returned) or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")
