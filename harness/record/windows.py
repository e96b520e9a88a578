"""Fault windows and client windows: the one place that pairs ``fault.start`` with its end.

Every applied fault has one ``fault.start``, one ``fault.heal`` and one ``fault.end`` with the same
``fault_id`` (docs/run-record.md, "Faults"); a ``phase`` ``faults.healed`` says every fault is healed.
Readers differ in what ends a window for them and in which clock they read, so :func:`fault_windows`
pairs the events once and each reader takes the times it needs from the paired events:

* ``closing``: the event types that close a window (``fault.end``; or ``fault.heal`` and ``fault.end``,
  whichever comes first).
* ``match``: ``"id"``: fault ids are keys: every closing event with a window's id belongs to it
  (``ends``, in order), and a later ``fault.start`` with the same id replaces the window (in its place).
  ``"open"``: a closing event closes the open window with its id and no other (later ones with that
  id are ignored); with ``replace`` False a second start of an open id opens a second window and the
  first stays open.
* ``healed_phase``: a ``faults.healed`` phase closes every open window; each window lists every such
  phase after its start (``healed``), for readers that let it cut short a window already closed.
* ``clock``: ``"t"`` / ``"wall"``: events without a number there are left out.
* ``by_seq``: pair in ``seq`` order rather than in the given order.

Positions (``start_at``, ``end_at``, the first of ``healed``) index the sequence that was paired, so
a reader walking the same events knows which windows are open at each event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from harness.record.events import FAULT_END, FAULT_START, FAULT_TYPES, PHASE, PHASE_FAULTS_HEALED


@dataclass(eq=False)
class FaultWindow:
    fault_id: Any
    start: dict                                          # the fault.start event
    start_at: int                                        # its position in the paired sequence
    ends: list[dict] = field(default_factory=list)       # the closing events with its id (see ``match``)
    end_at: int | None = None                            # position of the first of them
    healed: list[tuple[int, dict]] = field(default_factory=list)   # faults.healed phases after its start
    closed_by_phase: bool = False

    @property
    def fault(self) -> Any:
        return self.start.get("fault")

    @property
    def end(self) -> dict | None:
        """The event that closed the window (its first closing event), None if none did."""
        return self.ends[0] if self.ends else None

    @property
    def nodes(self) -> list:
        return self.start.get("nodes") or []

    @property
    def never_applied(self) -> bool:
        """Whether an end of the window says its fault was never applied (skipped, or its target not
        resolved): it opened no window on the cluster."""
        return any(fault_never_applied(e) for e in self.ends)


def fault_never_applied(end: dict) -> bool:
    """Whether a ``fault.end`` says its fault was never applied (skipped, or its target not resolved)."""
    err = str(end.get("error") or "")
    return end.get("ok") is False and (err.startswith("skipped") or err.startswith("cannot resolve"))


def _timed(e: dict, clock: str | None) -> bool:
    return clock is None or isinstance(e.get(clock), (int, float))


def ordered(events: Iterable[dict], *, by_seq: bool = False, clock: str | None = None,
            healed_phase: bool = False) -> list[dict]:
    """The fault events (and ``phase`` events with ``healed_phase``) :func:`fault_windows` pairs, in the
    order it pairs them."""
    types = (*FAULT_TYPES, PHASE) if healed_phase else FAULT_TYPES
    evs = [e for e in events if e.get("type") in types and _timed(e, clock)]
    if by_seq:
        evs.sort(key=lambda e: e.get("seq", 0))
    return evs


def fault_windows(events: Iterable[dict], *, closing: tuple[str, ...] = (FAULT_END,), match: str = "id",
                  replace: bool = True, healed_phase: bool = False, clock: str | None = None,
                  by_seq: bool = False, positions: str = "events") -> list[FaultWindow]:
    """Every fault window of ``events``, in start order (module doc). ``positions``: ``"events"``:
    positions index ``events`` as given (every event counts; needs ``by_seq`` False and no ``clock``);
    ``"paired"``: they index :func:`ordered` (the fault and phase events alone)."""
    if match not in ("id", "open"):
        raise ValueError(f"match must be 'id' or 'open', not {match!r}")
    evs = list(events)
    if positions == "paired":
        seq = list(enumerate(ordered(evs, by_seq=by_seq, clock=clock, healed_phase=healed_phase)))
    else:
        if by_seq or clock is not None:
            raise ValueError("positions='events' indexes the events as given: no by_seq, no clock")
        seq = list(enumerate(evs))
    out: list[FaultWindow] = []
    open_: dict = {}
    by_id: dict = {}
    for i, e in seq:
        typ = e.get("type")
        if typ == FAULT_START:
            fid = e.get("fault_id")
            old = by_id.get(fid) if match == "id" else open_.get(fid)
            w = FaultWindow(fid, e, i)
            if old is not None and replace:
                out[out.index(old)] = w         # in its place, as a dict keyed by fault id keeps it
            else:
                out.append(w)
            open_[fid] = by_id[fid] = w
        elif typ in closing:
            fid = e.get("fault_id")
            w = by_id.get(fid) if match == "id" else open_.pop(fid, None)
            if w is None:
                continue
            if not w.ends:
                w.end_at = i
            w.ends.append(e)
            if open_.get(fid) is w:
                del open_[fid]
        elif healed_phase and typ == PHASE and e.get("name") == PHASE_FAULTS_HEALED:
            for w in out:
                w.healed.append((i, e))
            for w in open_.values():
                w.closed_by_phase = True
            open_.clear()
    return out


# client.life states: a client runs from a start (or re-creation) to its next death or stop
ALIVE_STATES = ("started", "recreated")
DEAD_STATES = ("fatal", "stopped", "died", "stalled")


def client_windows(life: Iterable[tuple]) -> tuple[list[list], list[tuple]]:
    """A client's alive windows ``[start, end]`` (``end`` None: alive to the record's end) from its
    ``client.life`` entries ``(t, state, error)``, and its deaths ``(t, state, error)`` (every dead state
    but a clean ``stopped``)."""
    alive: list[list] = []
    deaths: list[tuple] = []
    cur = None
    for t, state, err in sorted(life, key=lambda x: x[0]):
        if state in ALIVE_STATES:
            if cur is None:
                cur = [t, None]
                alive.append(cur)
        elif state in DEAD_STATES:
            if state != "stopped" or err:
                deaths.append((t, state, err))
            if cur is not None:
                cur[1] = t
                cur = None
    return alive, deaths


def first_end_by_id(events: Iterable[dict]) -> dict:
    """``fault_id`` -> the first ``fault.end`` with that id, wherever it is in ``events`` (for readers
    that attribute an end to every start of its id)."""
    out: dict = {}
    for e in events:
        if e.get("type") == FAULT_END:
            fid = e.get("fault_id")
            if fid is not None and fid not in out:
                out[fid] = e
    return out


def fault_times(events: Iterable[dict], fault_id: Any) -> dict[str, float]:
    """``{"start": t, "heal": t, "end": t}`` of one fault, as far as recorded (the first of each)."""
    out: dict[str, float] = {}
    for e in events:
        if e.get("fault_id") == fault_id and e.get("type") in FAULT_TYPES:
            out.setdefault(e["type"].split(".", 1)[1], e["t"])
    return out


# the report's timelines draw a client as alive from a start to its end: a stall is an error shown on the
# band, not an end (coverage, above, ends the window at a stall: the client did no work after it)
ENDED_STATES = ("fatal", "stopped", "died")
ERROR_STATES = ("fatal", "died", "stalled")


def client_life(clients: dict, ev: dict) -> None:
    """Fold one ``client.life`` event into ``{process: {"role", "alive": [[t0, t1|None]], "errors"}}``
    (the shape of verdict.json ``coverage.clients`` and of the report's timelines): alive from
    started/recreated until fatal/stopped/died; fatal, died and stalled are errors."""
    c = clients.setdefault(ev.get("process") or "?", {"role": ev.get("role"), "alive": [], "errors": []})
    state, t = ev.get("state"), ev.get("t")
    if t is None:
        return
    open_ = bool(c["alive"]) and c["alive"][-1][1] is None
    if state in ALIVE_STATES and not open_:
        c["alive"].append([t, None])
    elif state in ENDED_STATES and open_:
        c["alive"][-1][1] = t
    if state in ERROR_STATES:
        c["errors"].append({"t": t, "state": state, "error": ev.get("error")})
