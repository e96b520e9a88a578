"""3. Topic creation and deletion (spec §6.1-§6.3, §8.4 P4).

A second topic (``doomed``) is created and deleted with the Admin API while the workload writes to
``chaos``; the ZooKeeper transaction log then holds the whole deletion flow the reference model
checks: the ``/admin/delete_topics`` marker, one §4.6 ISR-removal write per live replica (leader -1,
LE + 1 each), then the removal of the topic subtree, its config and the marker.
"""

from __future__ import annotations

import json
import time

from kazoo.exceptions import NoNodeError

from harness import admin_ops as ao
from harness.scenario import RunContext, Scenario

from .common import T, has_zookeeper, state

DOOMED = "doomed"  # the topic these scenarios create and delete (the workload keeps writing to ``chaos``)
PARTS = 2


def _znode(ctx: RunContext, path: str) -> dict | None:
    """The JSON of a znode read from ZooKeeper now (None if it does not exist)."""
    try:
        data, _ = ctx.cluster.zk().get(path)
    except NoNodeError:
        return None
    return json.loads(data) if data else {}


def _exists(ctx: RunContext, path: str) -> bool:
    return ctx.cluster.zk().exists(path) is not None


def topic_id(ctx: RunContext, name: str) -> str | None:
    """The topic id in ``/brokers/topics/<name>`` (2.8+), None when the topic does not exist; on KRaft
    the ``TopicId`` of a Metadata v10+ answer (§9.8), hex."""
    if not has_zookeeper(ctx):
        md = ctx.cluster.protocol_metadata([name])
        tid = next((t.topic_id for t in md.topics if t.name == name and t.error is None), None)
        return tid.hex() if tid and any(tid) else None
    z = _znode(ctx, f"/brokers/topics/{name}")
    return None if z is None else z.get("topic_id")


def _unlisted_watching(ctx: RunContext, name: str, seen: list[dict]):
    """A wait predicate: ``name`` is no longer listed by Metadata; meanwhile every partition entry of
    ``name`` a protocol Metadata answer still shows is appended to ``seen`` (KRaft: there is no write
    log to read the deletion's states from)."""
    def pred() -> bool:
        md = ctx.cluster.protocol_metadata([name])
        for t in md.topics:
            if t.name == name and t.error is None:
                seen.extend({"partition": q.partition, "leader": q.leader, "leader_epoch": q.leader_epoch,
                             "isr": list(q.isr)} for q in t.partitions if q.error is None)
        return not _listed(ctx, name)
    return pred


def _expect_atomic_deletion_kraft(ctx: RunContext, name: str, seen: list[dict]) -> None:
    """§9.7: a KRaft deletion is one RemoveTopicRecord, with no ``leader = -1`` intermediate state (ZooKeeper
    mode writes one, §6.2 step 4): no Metadata answer polled while the deletion ran showed the topic
    leaderless (the states before the DeleteTopics answer are polled too, in ``seen``)."""
    ctx.expect(f"{name}: no answer showed a partition with leader -1 before the removal (atomic "
               "RemoveTopicRecord, §9.7)", not any(p["leader"] == -1 for p in seen),
               {"entries_seen": len(seen), "leaderless": [p for p in seen if p["leader"] == -1][:5]})


def _gone(ctx: RunContext, name: str) -> bool:
    """§6.2 step 6 is done: topic subtree, config and delete marker are all removed."""
    return not any(_exists(ctx, p) for p in (f"/brokers/topics/{name}", f"/config/topics/{name}",
                                             f"/admin/delete_topics/{name}"))


def _full_isr(ctx: RunContext, name: str, parts: int = PARTS, rf: int = 3) -> bool:
    return all(len(ctx.isr(name, p)) == rf for p in range(parts))


def _listed(ctx: RunContext, name: str) -> bool:
    """Whether a Metadata response (the Admin client's) lists the topic."""
    return name in ctx.cluster.admin().list_topics(timeout=5).topics


def create(ctx: RunContext, name: str = DOOMED, parts: int = PARTS, rf: int = 3, timeout_s: float = 60.0) -> None:
    """CreateTopics through the Admin API, recorded as an ``action``. A name whose previous
    incarnation is still being forgotten by the brokers (TOPIC_ALREADY_EXISTS) is retried."""
    def go():
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return ctx.cluster.create_topic(name, parts, rf, timeout_s=30)
            except Exception as e:  # noqa: BLE001 - KafkaException carries the error name in its text
                if "ALREADY_EXISTS" not in str(e) and "marked for deletion" not in str(e) \
                        or time.monotonic() > deadline:
                    raise
                time.sleep(1.0)
    ctx.action("create_topic", go, name=name, partitions=parts, replication_factor=rf, config={}, assignment=None)
    ctx.wait_until(f"{name}: full ISR after creation", lambda: _full_isr(ctx, name, parts, rf), 60)


def delete(ctx: RunContext, name: str = DOOMED, wait_s: float = 30.0) -> None:
    """DeleteTopics through the Admin API, recorded as an ``action``. ``wait_s`` = 0: the broker
    answers as soon as the ``/admin/delete_topics`` marker is written (no wait for completion)."""
    def go():
        fut = ctx.cluster.admin().delete_topics([name], operation_timeout=wait_s)[name]
        return fut.result(timeout=wait_s + 30)
    ctx.action("delete_topic", go, topic=name, operation_timeout_s=wait_s)


def _deletion_writes(ctx: RunContext, name: str) -> list[dict]:
    """The state-znode writes of ``name`` so far, from ZooKeeper's transaction log (the live watcher
    can miss a write that is overwritten or deleted at once, as the deletion's leader -1 writes are);
    the watcher's events only when no log is readable."""
    try:
        evs = ao.zk_writes_since(ctx.cluster, 0, ("zk.partition_state",))
    except ao.AdminOpError:
        evs = ctx.recorder.read_events()
    return [e for e in evs if e["type"] == "zk.partition_state" and e.get("topic") == name and not e.get("deleted")]


def _create_delete(ctx: RunContext) -> None:
    create(ctx)
    before = {p: ctx.view.partition_state(DOOMED, p, fresh=True) for p in range(PARTS)}
    tid = topic_id(ctx, DOOMED)
    ctx.expect("the new topic has a topic id (§6.1 step 3, IBP >= 2.8)", bool(tid), tid)
    ctx.expect("new partitions start at leader epoch 0 (§4.1.1, D3)",
               all(s is not None and s["leader_epoch"] == 0 for s in before.values()), before)
    delete(ctx)
    zk, seen = has_zookeeper(ctx), []
    ctx.wait_until(f"{DOOMED}: Metadata stops listing the topic (§6.2 step 3, §8.1 caveat 4)",
                   (lambda: not _listed(ctx, DOOMED)) if zk else _unlisted_watching(ctx, DOOMED, seen),
                   60, interval_s=0.2 if zk else 0.05)
    if not zk:
        _expect_atomic_deletion_kraft(ctx, DOOMED, seen)
        ctx.expect(f"{T} keeps its leaders while {DOOMED} is deleted",
                   all(ctx.leader(T, p) is not None for p in range(3)), [state(ctx, p) for p in range(3)])
        return
    ctx.wait_until(f"{DOOMED}: topic znode, config and marker removed (§6.2 step 6)",
                   lambda: _gone(ctx, DOOMED), 90)
    writes = _deletion_writes(ctx, DOOMED)
    ctx.expect("every partition was written with leader -1 before its removal (replicas offline, §6.2 step 4, §6.3)",
               all(any(e["partition"] == p and e["leader"] == -1 for e in writes) for p in range(PARTS)),
               [{k: e[k] for k in ("partition", "leader", "leader_epoch", "isr")} for e in writes])
    ctx.expect(f"{T} keeps its leaders while {DOOMED} is deleted",
               all(ctx.leader(T, p) is not None for p in range(3)), [state(ctx, p) for p in range(3)])


def _delete_with_broker_down(ctx: RunContext) -> None:
    create(ctx)
    controller = ctx.controller()
    victim = next(b for b in ctx.live_brokers() if b != controller)  # hosts a replica: RF = #brokers
    h = ctx.fault("kill", f"broker:{victim}")
    ctx.wait_until(f"broker {victim} is unregistered (dead for the controller)",
                   lambda: victim not in ctx.live_brokers(), 40)
    if not has_zookeeper(ctx):
        return _delete_with_broker_down_kraft(ctx, victim, h)
    delete(ctx, wait_s=0)  # the broker only writes the marker; completion cannot happen now
    ctx.wait_until(f"/admin/delete_topics/{DOOMED} exists", lambda: _exists(ctx, f"/admin/delete_topics/{DOOMED}"), 30)
    ctx.sleep(8)
    ctx.expect(f"deletion is halted while broker {victim} holding a replica is down (§6.2 step 2, P4)",
               _exists(ctx, f"/brokers/topics/{DOOMED}") and _exists(ctx, f"/admin/delete_topics/{DOOMED}"),
               {"topics": ctx.view.topics(), "queued": ctx.view.delete_topics()})
    ctx.heal(h)
    ctx.wait_until(f"broker {victim} registered again", lambda: victim in ctx.live_brokers(), 60)
    ctx.wait_until(f"{DOOMED}: deletion completes after broker {victim} returned (§5.3 step 5, §6.2 step 7)",
                   lambda: _gone(ctx, DOOMED), 90)
    ctx.wait_until(f"{T}: full ISR again", lambda: _full_isr(ctx, T, 3), 60)


def _delete_with_broker_down_kraft(ctx: RunContext, victim: int, h) -> None:
    """KRaft: deletion is one RemoveTopicRecord (§9.7) and does not wait for the replicas' brokers (no
    P4 halt as in ZooKeeper mode, §6.2 step 2): it completes while ``victim`` is down; the returning
    broker drops its replicas when it replays the metadata log."""
    delete(ctx)
    seen: list[dict] = []
    ctx.wait_until(f"{DOOMED}: Metadata stops listing the topic while broker {victim} is still down "
                   "(no halt in KRaft, §9.7)", _unlisted_watching(ctx, DOOMED, seen), 60, interval_s=0.05)
    ctx.expect(f"broker {victim} was still down when the deletion completed",
               victim not in ctx.live_brokers(), {"live": ctx.live_brokers()})
    _expect_atomic_deletion_kraft(ctx, DOOMED, seen)
    ctx.heal(h)
    ctx.wait_until(f"broker {victim} registered again", lambda: victim in ctx.live_brokers(), 60)
    ctx.wait_until(f"{DOOMED} stays deleted after broker {victim} returned",
                   lambda: not _listed(ctx, DOOMED) and DOOMED not in ctx.view.topics(), 30)
    ctx.wait_until(f"{T}: full ISR again", lambda: _full_isr(ctx, T, 3), 60)


def _recreate(ctx: RunContext) -> None:
    create(ctx)
    old_id = topic_id(ctx, DOOMED)
    # the deletion's §4.6 writes move the first incarnation's epochs above 0, so a restart at 0 is visible
    zk = has_zookeeper(ctx)
    if not zk:
        # §9.7 writes no leader -1 state at deletion, so move the epoch above 0 first:
        # the restart at 0 in the second incarnation is then visible
        _bump_epoch_kraft(ctx, DOOMED)
    delete(ctx)
    if zk:
        ctx.wait_until(f"{DOOMED}: deletion completes (§6.2 step 6)", lambda: _gone(ctx, DOOMED), 90)
    ctx.wait_until(f"{DOOMED}: Metadata stops listing the topic", lambda: not _listed(ctx, DOOMED), 60)
    if zk:
        first_max = max((e["leader_epoch"] for e in _deletion_writes(ctx, DOOMED)), default=0)
        ctx.expect("the first incarnation ended above leader epoch 0 (its deletion writes bumped it, §6.2 step 4)",
                   first_max > 0, first_max)
    create(ctx)
    new_id = topic_id(ctx, DOOMED)
    ctx.expect("the re-created topic has a new topic id (§6.3)", bool(new_id) and new_id != old_id,
               {"old": old_id, "new": new_id})
    states = {p: ctx.view.partition_state(DOOMED, p, fresh=True) for p in range(PARTS)}
    if zk:
        ctx.expect("the re-created topic's partitions start again at leader epoch 0, partition epoch 0 (§6.3)",
                   all(s is not None and s["leader_epoch"] == 0 and s["version"] == 0 for s in states.values()),
                   states)
    else:   # the protocol shows no partition epoch (§9.8)
        ctx.expect("the re-created topic's partitions start again at leader epoch 0 (§6.3, §9.7)",
                   all(s is not None and s["leader_epoch"] == 0 for s in states.values()), states)
    delete(ctx)
    if zk:
        ctx.wait_until(f"{DOOMED}: second incarnation deleted", lambda: _gone(ctx, DOOMED), 90)
    else:
        ctx.wait_until(f"{DOOMED}: Metadata stops listing the second incarnation", lambda: not _listed(ctx, DOOMED), 60)


def _bump_epoch_kraft(ctx: RunContext, name: str) -> None:
    """Raise ``name``-0's leader epoch above 0 (KRaft): clean-stop its leader (controlled shutdown moves
    the leadership, LE + 1, §9.4), start it again and wait for the full ISR."""
    st = ctx.view.partition_state(name, 0, fresh=True)
    assert st is not None, f"{name}-0 has no state"
    h = ctx.fault("stop", f"broker:{st['leader']}", heal="start")
    ctx.wait_until(f"{name}-0: a new leader after a clean stop of leader {st['leader']} (§9.4)",
                   lambda: ctx.leader(name, 0) not in (None, st["leader"]), 60)
    ctx.heal(h)
    ctx.wait_until(f"{name}: full ISR again", lambda: _full_isr(ctx, name), 90)
    ctx.wait_until(f"{T}: full ISR again", lambda: _full_isr(ctx, T, 3), 90)


SCENARIOS: list[Scenario] = [
    Scenario("topics.create_delete", f"create topic {DOOMED} with the Admin API, then delete it: marker, "
             "replicas offline (leader -1), znodes removed (§6.1-6.3); KRaft: atomic removal (§9.7)", _create_delete,
             tags=("conformance", "chaos"), kraft=True),
    Scenario("topics.delete_with_broker_down", f"delete {DOOMED} while a broker holding a replica is down: "
             "halted, completes after the broker returns (§6.2, P4); KRaft: not halted (§9.7)", _delete_with_broker_down,
             tags=("conformance", "chaos"), max_duration_s=240, kraft=True),
    Scenario("topics.recreate", f"delete {DOOMED} and create it again: a new topic id, epochs restart at 0 (§6.3)",
             _recreate, tags=("conformance", "chaos"), max_duration_s=240, kraft=True),
]
