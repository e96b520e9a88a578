"""Faults as the liveness signal of the KRaft checker (spec §9.3): which brokers are *certainly down*
(cannot heartbeat, so must be fenced after ``broker.session.timeout.ms``) and which have been
untouched by faults, from the run's ``fault.start`` / ``fault.heal`` / ``fault.end`` events (and, in
older records without ``fault.heal``, from which brokers the protocol answers list again).

Used by reference/kraft.py for H19 and K3.
"""

from __future__ import annotations

import math

STOP_TIMEOUT_S = 30.0            # nemesis default: SIGKILL after stop_timeout_s (docs/faults.md)
DOWN_FAULTS = frozenset({"kill", "stop", "pause", "isolate"})   # the broker cannot heartbeat


def params_restart(fault: str, params: dict) -> bool:
    """Does healing this fault bring its brokers back? Not a kill/stop with ``heal: none`` (left down
    until a later start/restart)."""
    return not (fault in ("kill", "stop") and params.get("heal") == "none")


def node_ids(ev: dict) -> list:
    """The Kafka nodes a ``fault.start`` acts on: ``node_ids`` (brokers and dedicated controllers, so
    the quorum's health is known on a dedicated layout too; older records get it from ``broker_ids``
    in :func:`harness.record.read.upgrade`)."""
    return ev.get("node_ids") or []


class Liveness:
    """Which brokers are *certainly down* (cannot heartbeat) and which are untouched by faults.

    Built from ``fault.start`` / ``fault.end`` (and ``phase faults.healed``) in event order; queries
    answer for "now" (the event being processed)."""

    def __init__(self):
        self.open: dict = {}                     # fault_id -> (fault, brokers, down_from | None, params)
        self.left_down: dict[int, float] = {}    # kill/stop with heal "none": down until a start/restart
        self.last_touched: dict[int, float] = {}  # broker -> last time a fault on it ended
        self.omitted: dict[int, set[int]] = {}    # answering broker -> down brokers its answers left out
        self.revived: dict[int, float] = {}       # broker -> when an answer listed it again (re-registered)
        # records with ``fault.heal`` (when a heal begins) say when a broker may run again; only older
        # records, without it, need the inference from answers in :meth:`listed`
        self.heals_recorded = False

    def _forget_answers(self, ids) -> None:
        """A fault on ``ids`` starts or ends: their earlier answers and revivals prove nothing more."""
        for b in ids:
            self.omitted.pop(b, None)
            self.revived.pop(b, None)
            for s in self.omitted.values():
                s.discard(b)

    def listed(self, by: int, brokers: frozenset, t: float) -> None:
        """One protocol answer of broker ``by`` listing the unfenced brokers ``brokers`` (KRaft Metadata).
        A certainly-down broker that ``by`` omitted before and lists now was unfenced after registering
        anew, which only a running broker does (§9.3): the heal has restarted it. Used only for records
        without ``fault.heal`` events (those say exactly when the restart began)."""
        if self.heals_recorded:
            return
        for b in self._down_brokers():
            if b not in brokers:
                self.omitted.setdefault(by, set()).add(b)
            elif b in self.omitted.get(by, ()):
                self.revived[b] = t
                for s in self.omitted.values():
                    s.discard(b)

    def _down_brokers(self) -> set[int]:
        out = {b for _, ids, d, _ in self.open.values() if d is not None for b in ids} | set(self.left_down)
        return {b for b in out if self.down_since(b) is not None}

    def start(self, ev: dict, t: float) -> None:
        fault = ev.get("fault")
        ids = frozenset(int(b) for b in node_ids(ev))
        params = ev.get("params") or {}
        self._forget_answers(ids)
        if fault in ("start", "restart"):
            for b in ids:
                self.left_down.pop(b, None)
        down_from = None
        if fault in DOWN_FAULTS and (fault != "isolate" or _cuts_brokers(params.get("links"))):
            down_from = t + float(params.get("stop_timeout_s", STOP_TIMEOUT_S)) if fault == "stop" else t
        self.open[ev.get("fault_id", id(ev))] = (fault, ids, down_from, params)

    def end(self, ev: dict, t: float) -> None:
        rec = self.open.pop(ev.get("fault_id"), None)
        if rec is None:
            return
        fault, ids, down_from, params = rec
        self._forget_answers(ids)
        for b in ids:
            self.last_touched[b] = t
        if down_from is not None and fault in ("kill", "stop") and params.get("heal") == "none" \
                and ev.get("ok") is not False:
            for b in ids:
                self.left_down[b] = min(self.left_down.get(b, down_from), down_from)

    def heal_begins(self, ev: dict, t: float) -> None:
        """``fault.heal``: the heal of a fault begins; a broker it killed, stopped or paused may run
        (and heartbeat, §9.3) again from now on, so it is no longer certainly down. It stays under the
        fault (not healthy) until ``fault.end``."""
        rec = self.open.get(ev.get("fault_id"))
        if rec is not None and params_restart(rec[0], rec[3]):
            fault, ids, _, params = rec
            self.open[ev.get("fault_id")] = (fault, ids, None, params)

    def healed(self, t: float) -> None:
        for b in list(self.left_down):
            self.last_touched[b] = t
        self.left_down.clear()

    def down_since(self, b: int) -> float | None:
        """Since when ``b`` has been continuously certainly down (None: it is not)."""
        ts = [d for f, ids, d, _ in self.open.values() if d is not None and b in ids]
        if b in self.left_down:
            ts.append(self.left_down[b])
        ts = [d for d in ts if d > self.revived.get(b, -math.inf)]   # down again only by a later fault
        return min(ts) if ts else None

    def touched_since(self, b: int, t: float) -> bool:
        """Was ``b`` under any fault at some time since ``t`` (or is it now)?"""
        return self.healthy_since(b) is None or self.last_touched.get(b, -math.inf) >= t

    def healthy_since(self, b: int | None) -> float | None:
        """Since when ``b`` has been under no fault at all (None: under one now, or unknown broker)."""
        if b is None or b in self.left_down or any(b in ids for _, ids, _, _ in self.open.values()):
            return None
        return self.last_touched.get(b, -math.inf)


def _cuts_brokers(links) -> bool:
    """An ``isolate`` cuts the broker-broker links (the KRaft controllers' too) unless ``links`` says
    otherwise (docs/faults.md; default: every peer link)."""
    if links is None:
        return True
    names = links if isinstance(links, list) else str(links).split(",")
    return any(str(n).strip() in ("broker-broker", "inter-broker") for n in names)
