"""Ground truth: which copy of ZooKeeper's transitions a reader believes.

A ZooKeeper-mode record holds the live watcher's ``zk.*`` events (``source: "watch"``, ``t`` = when
the harness noticed) and, when ZooKeeper's transaction log was read after the run, the complete
history again (``source: "txnlog"``), all emitted at the end of the run. **The rule**: a run with
txn-log events is judged on those only (the history is complete); a run without them on the
watcher's. A txn-log event's time of the change on the run's clock is ``zk_time - (wall - t)``.

The conformance checker (:func:`harness.checkers.verdict.conformance_input`), the report's summary
(:func:`reports.summary.structural_truth`) and the report's timelines (the Spark form,
:func:`reports.load.zk_ground_truth`, built from :data:`ZK_PREFIX` / :data:`TXNLOG` and :func:`keep`)
all apply it through this module.
"""

from __future__ import annotations

from typing import Iterable

from harness.record.events import ZK_GAP, ZK_PREFIX

TXNLOG = "txnlog"      # ``source`` of a zk.* event read from ZooKeeper's transaction log
WATCH = "watch"        # ``source`` of a zk.* event the live watcher saw


def is_zk(event: dict) -> bool:
    return event["type"].startswith(ZK_PREFIX)


def has_txnlog(events: Iterable[dict]) -> bool:
    """Whether the run's record holds ZooKeeper's transaction log (any ``zk.*`` event from it)."""
    return any(e.get("source") == TXNLOG for e in events if is_zk(e))


def keep(from_txn: bool, run_has_txn: bool, from_watch: bool = True, strict_watch: bool = False) -> bool:
    """The rule for one ``zk.*`` event: txn-log copies when the run has them, else the others
    (with ``strict_watch``, only those marked ``source: "watch"``)."""
    if run_has_txn:
        return from_txn
    return from_watch if strict_watch else not from_txn


def change_time(event: dict) -> float:
    """When ZooKeeper made the change of a txn-log event, on the run's clock (``t`` if unknown)."""
    if event.get("zk_time") is not None and event.get("wall") is not None:
        return event["zk_time"] - (event["wall"] - event["t"])
    return event["t"]


def ground_truth(events: list[dict], *, types: Iterable[str] | None = None, strict_watch: bool = False,
                 drop_gaps: bool = False, retime: bool = False) -> list[dict]:
    """``events`` with one copy of ZooKeeper's transitions (the rule above); non-``zk.*`` events kept.

    ``types``: keep only events of these types (the txn-log choice still looks at every event).
    ``strict_watch``: without a txn log keep only ``source: "watch"`` events (source-less ones out).
    ``drop_gaps``: with a txn log drop ``zk.gap`` markers (the history is complete).
    ``retime``: txn-log events get ``t`` = :func:`change_time` (new dicts; the input is not changed)."""
    run_has_txn = has_txnlog(events)
    wanted = None if types is None else frozenset(types)
    out = []
    for e in events:
        if wanted is not None and e["type"] not in wanted:
            continue
        if is_zk(e):
            from_txn = e.get("source") == TXNLOG
            if not keep(from_txn, run_has_txn, e.get("source") == WATCH, strict_watch):
                continue
            if run_has_txn and drop_gaps and e["type"] == ZK_GAP:
                continue
            if retime and from_txn and e.get("zk_time") is not None and e.get("wall") is not None:
                e = {**e, "t": change_time(e)}
        out.append(e)
    return out
