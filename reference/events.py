"""Adapter from run-record events (docs/run-record.md) to the checker's input.

* validates the fields the checker needs and raises ``ValueError`` naming the offending ``seq``;
* deduplicates ``watch``/``txnlog`` copies of the same ZooKeeper write;
* orders ``zk.*`` events by ``zxid`` while keeping other events (faults, actions, admin samples)
  at their place in the ``seq`` order; when the ``zk.*`` events all come from ZooKeeper's
  transaction log with their ``zk_time`` (the runner appends them after the run, so their ``seq``
  says nothing about when they happened), they are merged with the other events by time instead
  (see :func:`_time_merge`);
* parses ``zk.gap`` paths into what they refer to; a gap without ``zxid`` (optional, docs/run-record.md
  "Additions") is placed before the first write of its path past the missing versions.
"""

from __future__ import annotations

import re
from itertools import compress
import operator
from operator import eq, itemgetter, lt
from typing import Iterable

from harness.record.events import ACTION, ADMIN_METADATA, EXPECT, FAULT_END, FAULT_START
from harness.record.truth import TXNLOG

ZK_TYPES = ("zk.controller", "zk.controller_epoch", "zk.broker", "zk.topic", "zk.partition_state",
            "zk.reassign_partitions", "zk.delete_topics", "zk.gap")
OTHER_TYPES = (FAULT_START, FAULT_END, ACTION, ADMIN_METADATA)

_REQUIRED = {
    "zk.controller": ("broker_id",),
    "zk.controller_epoch": ("epoch", "version"),
    "zk.broker": ("broker_id", "registered"),
    "zk.topic": ("topic", "partitions"),
    "zk.partition_state": ("topic", "partition", "leader", "leader_epoch", "isr", "controller_epoch", "version"),
    "zk.reassign_partitions": ("partitions",),
    "zk.delete_topics": ("topics",),
    "zk.gap": ("path",),
}

_KNOWN = frozenset(ZK_TYPES) | frozenset(OTHER_TYPES)
_ZK = frozenset(ZK_TYPES)
# the fields each zk.* type needs, zxid included but for a gap (placed later): KeyError if one is missing
_NEED = {t: itemgetter(*(f if t == "zk.gap" else f + ("zxid",))) for t, f in _REQUIRED.items()}
_NEED_Z = {t: itemgetter(*(f + ("zxid",))) for t, f in _REQUIRED.items()}    # zxid last, a gap's too
_SEQ, _ZXID, _TYPE, _LAST = itemgetter("seq"), itemgetter("zxid"), itemgetter("type"), itemgetter(-1)
_call = getattr(operator, "call", None) or (lambda f, x: f(x))     # (operator.call: Python 3.11+)

_STATE_PATH = re.compile(r"^/brokers/topics/([^/]+)/partitions/(\d+)/state$")
_TOPIC_PATH = re.compile(r"^/brokers/topics/([^/]+)$")
_BROKER_PATH = re.compile(r"^/brokers/ids(?:/(\d+))?$")


def parse_gap_path(path: str) -> tuple[str, object]:
    """``/brokers/topics/t/partitions/0/state`` -> ``("partition", ("t", 0))`` etc."""
    m = _STATE_PATH.match(path)
    if m:
        return "partition", (m.group(1), int(m.group(2)))
    m = _TOPIC_PATH.match(path)
    if m:
        return "topic", m.group(1)
    m = _BROKER_PATH.match(path)
    if m:
        return "broker", int(m.group(1)) if m.group(1) else None
    if path in ("/controller", "/controller_epoch"):
        return "controller", path
    return "other", path


def _key(ev: dict):
    t = ev["type"]
    if t == "zk.partition_state":
        return (ev["topic"], ev["partition"], ev.get("version"), bool(ev.get("deleted")))
    if t == "zk.topic":
        return (ev["topic"], ev.get("version"), bool(ev.get("deleted")))
    if t == "zk.broker":
        return (ev["broker_id"], ev["registered"])
    if t == "zk.controller_epoch":
        return (ev["version"],)
    return ()


def validate(ev: dict) -> None:
    t = ev.get("type")
    if not isinstance(t, str):
        raise ValueError(f"event seq={ev.get('seq')}: missing 'type'")
    need = _REQUIRED.get(t)
    if need:
        for f in need:
            if f not in ev:
                missing = [f for f in need if f not in ev]
                raise ValueError(f"event seq={ev.get('seq')} type={t}: missing field(s) {missing} (docs/run-record.md)")
        if t == "zk.gap" and ev.get("zxid") is None:
            return              # optional for gaps (docs/run-record.md, "Additions"): placed by _place_gaps
        if "zxid" not in ev or not isinstance(ev["zxid"], int):
            raise ValueError(f"event seq={ev.get('seq')} type={t}: zk.* events need an integer 'zxid'")


def normalize(events: Iterable[dict]) -> list[dict]:
    """Validated, deduplicated events: zk.* sorted by (zxid, seq) placed into the zk slots of the
    seq order, other relevant events untouched. Unknown types are dropped."""
    return normalize_counted(events)[0]


def normalize_counted(events: Iterable[dict]) -> tuple[list[dict], int]:
    """:func:`normalize`'s events and how many of them are zk.* (the checker's stats)."""
    events = list(events)
    evs, types = _in_seq_order(events)
    # (C-level passes where they can be: this sees every event of the record, and each pass over the
    # events' dicts costs a memory access per event on a long record)
    gaps = "zk.gap" in types
    if gaps and any(e["type"] == "zk.gap" and e.get("zxid") is None for e in evs):
        evs = _place_gaps(evs)
        types = list(map(_TYPE, evs))
    slots = list(compress(range(len(types)), map(_ZK.__contains__, types)))
    zk = list(map(evs.__getitem__, slots))
    zx = _checked_zxids(zk, list(map(types.__getitem__, slots)))
    # zk is in seq order: a stable sort by zxid keeps it within one zxid ((zxid, seq) order); the
    # positions are sorted, so that a repeated write (the same dict twice included) is told apart
    if gaps:                            # a gap precedes its write
        keys = [(z, e["type"] != "zk.gap") for z, e in zip(zx, zk)]
        order = sorted(range(len(zk)), key=keys.__getitem__)
    elif any(map(lt, zx[1:], zx)):
        order = sorted(range(len(zk)), key=zx.__getitem__)
    else:
        order = None                    # in zxid order already (as a record written in order is)
    dupes = _duplicates(zk, zx, range(len(zk)) if order is None else order)
    out: list[dict | None] | None
    if dupes:                           # the first of each stays, in its own slot
        drop = {slots[i] for i in dupes}
        out = [None if t in _ZK else e for i, (e, t) in enumerate(zip(evs, types)) if i not in drop]
        slots = [i for i, e in enumerate(out) if e is None]
        zk = [zk[i] for i in (range(len(zk)) if order is None else order) if i not in dupes]
    elif order is None:
        out = None                      # every zk.* event is in its own slot already: evs as it is
    else:
        zk = list(map(zk.__getitem__, order))
        out = list(evs)
        for i in slots:
            out[i] = None
    if _zk_from_txnlog(zk):
        others = ([e for e, t in zip(evs, types) if t not in _ZK] if out is None else
                  [e for e in out if e is not None])
        if all(_num(e.get("wall")) for e in others):
            return _time_merge(zk, others, _script_marks(events)), len(zk)
    if out is None:
        return evs, len(zk)
    for i, e in zip(slots, zk):
        out[i] = e
    return out, len(zk)  # type: ignore[return-value]


def _in_seq_order(events: list[dict]) -> tuple[list[dict], list[str]]:
    """The events of a known type in ``seq`` order (stable: a repeated seq keeps the record's order)
    and their types. A record whose events all have a known type and a seq, already in order, is
    ``events`` itself (one pass for the types, one for the seqs)."""
    try:
        types = list(map(_TYPE, events))
        if _KNOWN.issuperset(types):
            seqs = list(map(_SEQ, events))
            if not any(map(lt, seqs[1:], seqs)):   # what a stable sort by seq would leave as it is
                return events, types
    except (KeyError, TypeError):       # the general case below raises what it always did, if anything
        pass
    evs = [e for e in events if e.get("type") in _KNOWN]
    try:
        evs.sort(key=_SEQ)
    except (KeyError, TypeError):       # an event without (or with a malformed) seq: sorted as seq 0
        evs.sort(key=lambda e: e.get("seq", 0))
    return evs, list(map(_TYPE, evs))


def _checked_zxids(zk: list[dict], types: list[str]) -> list[int]:
    """The zxids of the zk.* events ``zk`` (their ``types``), once each has every field its type needs
    and an integer zxid; else :func:`validate` raises for the first one that does not, in order (a
    bool zxid passes, as it always did)."""
    try:
        # each event's fields through its type's getter, the zxid last (_NEED has no zxid for a gap,
        # which has one here: a gap without is placed or dropped by _place_gaps before)
        zx = list(map(_LAST, map(_call, map(_NEED_Z.__getitem__, types), zk)))
        if set(map(type, zx)) <= {int}:
            return zx
    except KeyError:
        pass
    for e in zk:
        try:
            _NEED[e["type"]](e)
            ok = e.get("zxid").__class__ is int
        except KeyError:
            ok = False
        if not ok:
            validate(e)                 # raises with the seq and the missing field (bools pass)
    return list(map(_ZXID, zk))


def _duplicates(zk: list[dict], zx: list[int], order) -> set[int]:
    """Positions in ``zk`` of the events repeating an earlier one (same zxid, type and key: a write
    seen twice, e.g. by the txn log and a watch). ``order`` sorts ``zk`` by zxid (``zx``; a range when
    it is in order), so only events sharing a zxid are compared: one pass, keys built only where a
    zxid repeats with a type already in its run (a /controller write and its epoch's share one)."""
    dupes: set[int] = set()
    seen: dict = {}             # type -> the events of the current run (keys: once a type repeats)
    last = None
    zs = zx if isinstance(order, range) else list(map(zx.__getitem__, order))
    for n in compress(range(1, len(zs)), map(eq, zs[1:], zs)):     # where the zxid repeats
        i, p = order[n], order[n - 1]
        if zx[i] != last:               # a new run of one zxid: it starts at the previous event
            last, seen = zx[i], {zk[p]["type"]: [zk[p]]}
        e = zk[i]
        t = e["type"]
        keys = seen.get(t)
        if keys is None:                # the first of its type in the run: no duplicate
            seen[t] = [e]
            continue
        if keys.__class__ is list:
            keys = seen[t] = {_key(x) for x in keys}
        k = _key(e)
        if k in keys:
            dupes.add(i)
        else:
            keys.add(k)
    return dupes


def _place_gaps(evs: list[dict]) -> list[dict]:
    """Give each ``zk.gap`` without a ``zxid`` (older watchers; the reconciliation's markers) the zxid
    of the first observed write of its path past the missing versions, so that it marks exactly the
    transition it covers. A gap marked ``filled`` (its versions are in the record from the txn log)
    or with no later write of its path marks nothing and is dropped."""
    writes: dict[str, list[tuple[int, int]]] = {}
    for e in evs:
        path = _path_of(e)
        if path is not None and isinstance(e.get("zxid"), int):
            writes.setdefault(path, []).append((e.get("version", -1), e["zxid"]))
    out = []
    for e in evs:
        if e["type"] != "zk.gap" or e.get("zxid") is not None:
            out.append(e)
            continue
        if e.get("filled"):
            continue
        miss = [v for v in e.get("missing_versions") or [] if isinstance(v, int)]
        after = max(miss) if miss else -1
        z = min((zx for v, zx in writes.get(e.get("path"), ()) if v > after), default=None)
        if z is not None:
            out.append(dict(e, zxid=z))
    return out


def _path_of(e: dict) -> str | None:
    t = e["type"]
    if t == "zk.partition_state" and "topic" in e and "partition" in e:
        return f"/brokers/topics/{e['topic']}/partitions/{e['partition']}/state"
    if t == "zk.topic" and "topic" in e:
        return f"/brokers/topics/{e['topic']}"
    return None


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _zk_from_txnlog(zk: list[dict]) -> bool:
    """Every zk.* event is a txn-log copy with ZooKeeper's time (and then, if every other event has
    a wall time, :func:`normalize` merges them by time)."""
    return bool(zk) and all(e.get("source") == TXNLOG and _num(e.get("zk_time")) for e in zk)


SCRIPT_TYPES = (FAULT_START, FAULT_END, ACTION, EXPECT)


def _script_marks(events: Iterable[dict]) -> dict[int, float]:
    """For each ``action`` event (by ``seq``): the wall time of the scenario script's previous event.

    An ``action`` is recorded when the administrative call *returned*, after its effect (e.g. the
    controller's ElectLeaders write) may already be in ZooKeeper. The script is sequential, so the
    call was made after its previous event (fault, heal, action or ``expect``): that time is the
    earliest the action can have acted, and the action is placed there (it grants permissions;
    placing it early can only permit more).
    """
    marks: dict[int, float] = {}
    last = None
    for e in sorted((e for e in events if e.get("type") in SCRIPT_TYPES), key=lambda e: e.get("seq", 0)):
        w = e.get("wall")
        if e["type"] == "action":
            marks[e.get("seq", 0)] = last if last is not None else w
        if _num(w):
            last = w if last is None else max(last, w)
    return marks


def _time_merge(zk: list[dict], others: list[dict], marks: dict[int, float]) -> list[dict]:
    """Merge zxid-ordered txn-log events into the seq-ordered other events by time.

    A zk.* event's time is its ``zk_time`` (ZooKeeper's clock, the same host clock as the
    harness's ``wall``; millisecond resolution); another event's time is its ``wall`` (an
    ``action``: see :func:`_script_marks`). A ZooKeeper write goes before an event whose time is
    later than the write's. Both input orders are kept (times are made non-decreasing within each).
    Example: a graceful ``stop`` fault must come after the broker's first registration and before
    its deregistration, which only time tells once the txn log replaces the live watch.
    """
    actions = [o for o in others if o["type"] == "action"]
    if actions:
        others = [o for o in others if o["type"] != "action"]
    out: list[dict] = []
    j, zt = 0, float("-inf")
    ot = float("-inf")
    for o in others:
        ot = max(ot, o["wall"])
        while j < len(zk) and max(zt, zk[j]["zk_time"]) < ot:
            zt = max(zt, zk[j]["zk_time"])
            out.append(zk[j])
            j += 1
        out.append(o)
    out.extend(zk[j:])
    if not actions:
        return out
    # Each action goes at its mark: before the first event (ZooKeeper write or other) later than the
    # moment the script made the call, even when client events recorded before the action's own
    # event came later (a reassignment tool runs for seconds; the controller starts on it at once).
    merged: list[dict] = []
    i, run = 0, float("-inf")
    for a in actions:
        m = marks.get(a.get("seq", 0), a["wall"])
        while i < len(out):
            e = out[i]
            te = e["zk_time"] if e["type"].startswith("zk.") else e["wall"]
            if max(run, te) > m:
                break
            run = max(run, te)
            merged.append(e)
            i += 1
        merged.append(a)
    merged.extend(out[i:])
    return merged
