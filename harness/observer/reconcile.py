"""After the run: merge the live watcher's events with ZooKeeper's transaction log.

The transaction log is the ground truth. The result is

* ``history`` — the complete, zxid-ordered ``zk.*`` history (the txn-log events);
* ``missed`` — per partition-state znode (and per topic znode), every data version the watcher never
  saw (expected: watches are one-shot), now filled from the log; plus counts of missed events by type;
* ``unexplained`` — watch events that the txn log does not contain (same key, different content, or
  no such transaction): a harness bug, never a broker verdict;
* ``before_log`` / ``after_log`` — watch events outside the log's zxid range (the log was purged or
  read too early); they cannot be checked.

How a watch event is matched (see docs/observer.md): data events by (path, version, zxid) and content;
deletions (whose watch zxid is the parent's pzxid, an upper bound) by the latest txn-log deletion of
the same znode at or before that zxid.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from harness.observer.kafka_znodes import state_path
from harness.observer.txn_events import TxnHistory

ZK_TYPES = ("zk.controller", "zk.controller_epoch", "zk.broker", "zk.topic", "zk.partition_state",
            "zk.reassign_partitions", "zk.delete_topics")
_STATE_CONTENT = ("leader", "leader_epoch", "isr", "controller_epoch", "leader_recovery_state")
_TOPIC_CONTENT = ("topic_id", "partitions", "adding_replicas", "removing_replicas")


def _is_deletion(ev: dict) -> bool:
    t = ev["type"]
    return ((t in ("zk.topic", "zk.partition_state") and ev.get("deleted"))
            or (t == "zk.controller" and ev.get("broker_id") is None)
            or (t == "zk.broker" and not ev.get("registered"))
            or (t == "zk.reassign_partitions" and ev.get("partitions") is None))


def _znode(ev: dict) -> tuple:
    """Which znode an event is about."""
    t = ev["type"]
    if t == "zk.partition_state":
        return (t, ev["topic"], ev["partition"])
    if t == "zk.topic":
        return (t, ev["topic"])
    if t == "zk.broker":
        return (t, ev["broker_id"])
    return (t,)


def _data_key(ev: dict) -> tuple:
    """Exact identity of a non-deletion event."""
    t = ev["type"]
    if t == "zk.partition_state":
        return _znode(ev) + (ev["version"], ev["zxid"]) + tuple(_freeze(ev.get(k)) for k in _STATE_CONTENT)
    if t == "zk.topic":
        return _znode(ev) + (ev["version"], ev["zxid"]) + tuple(_freeze(ev.get(k)) for k in _TOPIC_CONTENT)
    if t == "zk.controller":
        return (t, ev["zxid"], ev["broker_id"])
    if t == "zk.controller_epoch":
        return (t, ev["zxid"], ev["epoch"], ev["version"])
    if t == "zk.broker":
        return (t, ev["broker_id"], ev["zxid"], ev["broker_epoch"])
    if t == "zk.reassign_partitions":
        return (t, ev["zxid"], _freeze(ev["partitions"]))
    if t == "zk.delete_topics":
        return (t, ev["zxid"], tuple(sorted(ev["topics"])))
    raise ValueError(f"not a zk.* data event: {ev!r}")


def _freeze(v):
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v


@dataclass
class Reconciliation:
    history: list[dict]
    missed: list[dict]      # [{"path", "kind": "partition_state"|"topic", "topic", "partition", "missing_versions"}]
    missed_by_type: dict[str, int]          # txn-log events of each type the watcher never saw
    unexplained: list[dict]                 # watch events the txn log lacks (harness bug)
    before_log: list[dict]
    after_log: list[dict]
    txnlog_complete: bool                   # the log starts at the first zxid and has no holes
    first_zxid: int | None
    last_zxid: int | None
    watch_events: int
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The reconciled history is complete and everything the watcher saw is explained."""
        return self.txnlog_complete and not self.unexplained and not contiguity_problems(self.history)

    def report(self) -> dict:
        """JSON-able gap report (e.g. for verdict.json ``stats`` or a check)."""
        return {
            "ok": self.ok,
            "txnlog_complete": self.txnlog_complete,
            "first_zxid": self.first_zxid,
            "last_zxid": self.last_zxid,
            "history_events": len(self.history),
            "watch_events": self.watch_events,
            "missed_partition_state_versions": sum(len(m["missing_versions"]) for m in self.missed
                                                   if m["kind"] == "partition_state"),
            "missed_topic_versions": sum(len(m["missing_versions"]) for m in self.missed
                                         if m["kind"] == "topic"),
            "missed": self.missed,
            "missed_by_type": self.missed_by_type,
            "unexplained": self.unexplained,
            "before_log": len(self.before_log),
            "after_log": len(self.after_log),
            "contiguity_problems": contiguity_problems(self.history),
            "problems": self.problems,
        }


def reconcile(watch_events: Iterable[dict], txn: TxnHistory) -> Reconciliation:
    """Check the watcher's events against the txn-log history (see module docstring)."""
    watch = [e for e in watch_events if e.get("type") in ZK_TYPES and e.get("source", "watch") == "watch"]
    hist = list(txn.events)
    first, last = txn.first_zxid, txn.last_zxid
    by_key: dict[tuple, dict] = {}
    deletions: dict[tuple, list[int]] = {}
    for ev in hist:
        if _is_deletion(ev):
            deletions.setdefault(_znode(ev) if ev["type"] != "zk.broker"
                                 else _znode(ev) + (ev.get("broker_epoch"),), []).append(ev["zxid"])
        else:
            by_key[_data_key(ev)] = ev
    seen: set[int] = set()              # id() of matched txn-log events
    unexplained, before, after = [], [], []
    for w in watch:
        z = w.get("zxid")
        if z is not None and first is not None and z < first and not txn.starts_at_beginning:
            before.append(w)
            continue
        if z is not None and last is not None and z > last:
            after.append(w)
            continue
        if _is_deletion(w):
            node = _znode(w) if w["type"] != "zk.broker" else _znode(w) + (w.get("broker_epoch"),)
            cands = [d for d in deletions.get(node, []) if z is None or d <= z]
            if not cands and w["type"] == "zk.broker":
                # an epoch unknown on either side (registration older than the log) matches any
                cands = [d for n, ds in deletions.items() if n[:2] == node[:2]
                         and (w.get("broker_epoch") is None or n[2] is None) for d in ds
                         if z is None or d <= z]
            if not cands:
                unexplained.append(dict(w, why="no such deletion in the txn log"))
            continue
        m = by_key.get(_data_key(w))
        if m is None:
            unexplained.append(dict(w, why=_why_unmatched(w, hist)))
        else:
            seen.add(id(m))
    missed_by_path: dict[str, dict] = {}
    missed_by_type: dict[str, int] = {}
    for ev in hist:
        if _is_deletion(ev) or id(ev) in seen:
            continue
        missed_by_type[ev["type"]] = missed_by_type.get(ev["type"], 0) + 1
        if ev["type"] in ("zk.partition_state", "zk.topic"):
            kind = ev["type"][3:]
            part = ev.get("partition") if kind == "partition_state" else None
            p = state_path(ev["topic"], part) if kind == "partition_state" else f"/brokers/topics/{ev['topic']}"
            m = missed_by_path.setdefault(p, {"path": p, "kind": kind, "topic": ev["topic"],
                                              "partition": part, "missing_versions": []})
            m["missing_versions"].append(ev["version"])
    return Reconciliation(
        history=hist, missed=list(missed_by_path.values()), missed_by_type=missed_by_type,
        unexplained=unexplained, before_log=before, after_log=after, txnlog_complete=txn.complete,
        first_zxid=first, last_zxid=last, watch_events=len(watch),
        problems=list(txn.problems) + list(txn.torn_tails))


def _why_unmatched(w: dict, hist: list[dict]) -> str:
    same_zxid = [e for e in hist if e["zxid"] == w.get("zxid") and e["type"] == w["type"]]
    if same_zxid:
        return "the txn log has this transaction with different content"
    return "no transaction with this zxid changed this znode in the txn log"


def contiguity_problems(history: list[dict]) -> list[str]:
    """Partition-state versions that are not 0, 1, 2, ... per znode incarnation (a gap in the
    *reconciled* history, which must never happen when the log is complete)."""
    out = []
    nxt: dict[tuple, int] = {}
    for ev in history:
        if ev["type"] != "zk.partition_state":
            continue
        k = (ev["topic"], ev["partition"])
        if ev.get("deleted"):
            nxt.pop(k, None)
            continue
        if k not in nxt:
            if ev["version"] != 0:
                out.append(f"{state_path(*k)}: first version in history is {ev['version']} "
                           f"(zxid {ev['zxid']:#x})")
        elif ev["version"] != nxt[k]:
            out.append(f"{state_path(*k)}: version {ev['version']} follows {nxt[k] - 1} "
                       f"(zxid {ev['zxid']:#x})")
        nxt[k] = ev["version"] + 1
    return out


def emit_reconciled(emit: Callable[..., dict], rec: Reconciliation) -> None:
    """Write the reconciled history into a run record: every txn-log event (``source: "txnlog"``),
    then one ``zk.gap`` per partition-state or topic znode listing the versions the watcher missed."""
    for ev in rec.history:
        emit(ev["type"], **{k: v for k, v in ev.items() if k != "type"})
    for m in rec.missed:
        emit("zk.gap", path=m["path"], missing_versions=m["missing_versions"], source="txnlog", filled=True)
