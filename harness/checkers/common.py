"""What the pure checkers (durability, transactions, groups) share: the check verdicts, option
merging, example positions, filing an anomaly as a violation or an allowed one, a check's result
dict, and the bookkeeping of values seen at more than one offset. Pure: no I/O, no clock.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

from harness.record.verdicts import ALLOWED, FAIL, PASS, UNKNOWN


def merge_options(defaults: dict, options: dict | None, what: str) -> dict:
    """``defaults`` overridden by ``options``; an unknown key is a ValueError naming ``what`` checker."""
    opts = dict(defaults)
    for k, v in (options or {}).items():
        if k not in defaults:
            raise ValueError(f"unknown {what} option {k!r}; known: {sorted(defaults)}")
        opts[k] = v
    return opts


@contextmanager
def gc_paused() -> Iterator[None]:
    """A pass allocates millions of small acyclic objects (tuples, dict entries); the cyclic garbage
    collector's generation scans over them cost ~25 % of the run and free nothing."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def pos(tp, offset) -> dict:
    """An example's position: ``{"topic", "partition", "offset"}``."""
    return {"topic": tp[0], "partition": tp[1], "offset": offset}


def file_example(example: dict, allowed_by: str | None, fail: list, allowed: list) -> None:
    """Put an anomaly among the violations, or among the allowed ones with the reason why."""
    if allowed_by:
        example["allowed_by"] = allowed_by
        allowed.append(example)
    else:
        fail.append(example)


def check_result(fail: list, allowed: list, what: str, max_examples: int, **extra) -> dict:
    """A check's result: FAIL with violations, else ALLOWED with allowed anomalies, else PASS."""
    if fail:
        v, why = FAIL, f"{len(fail)} {what}"
    elif allowed:
        v, why = ALLOWED, f"{len(allowed)} {what}, as the configuration permits"
    else:
        v, why = PASS, f"no {what}"
    out = {"verdict": v, "count": len(fail) + len(allowed), "violations": len(fail), "allowed": len(allowed),
           "reason": why, "examples": (fail + allowed)[:max_examples]}
    out.update(extra)
    return out


def malformed(ev, e: Exception) -> ValueError:
    """The error for an event a history pass cannot read."""
    return ValueError(f"malformed event (seq {ev.get('seq') if isinstance(ev, dict) else '?'}): "
                      f"{type(e).__name__}: {e} in {ev!r:.300}")


class PositionLog:
    """Mixin of the history passes: ``conflicts`` ((tp, offset) -> values found there) and ``dups``
    (value -> positions it was found at), filled on the rare events, out of the hot loop."""

    conflicts: dict
    dups: dict

    def _conflict(self, tp, off, old, value) -> None:
        vals = self.conflicts.get((tp, off))
        if vals is None:
            self.conflicts[(tp, off)] = [old, value]
        elif value not in vals:
            vals.append(value)

    def _dup(self, value, first, again) -> None:
        lst = self.dups.get(value)
        if lst is None:
            self.dups[value] = [first, again]
        elif again not in lst:
            lst.append(again)


def overall(checks: dict[str, dict], passed: str) -> tuple[str, str]:
    """A checker's verdict and reason from its named checks: FAIL naming every failed check with its reason,
    else UNKNOWN naming every undecided one, else PASS with ``passed``."""
    for v in (FAIL, UNKNOWN):
        named = [n for n, c in checks.items() if c["verdict"] == v]
        if named:
            return v, "; ".join(f"{n}: {checks[n]['reason']}" for n in named)
    return PASS, passed

