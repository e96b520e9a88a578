"""3. Topic creation and deletion (spec §6.1-§6.3, §8.4 P4).

A second topic (``doomed``) is created and deleted with the Admin API while the workload writes to
``chaos``; the controller's own log (ZooKeeper's transaction log, the KRaft metadata log) then holds
the whole deletion the scenario and the reference model check. ZooKeeper mode: the
``/admin/delete_topics`` marker, one §4.6 ISR-removal write per live replica (leader -1, LE + 1
each), then the removal of the topic subtree, its config and the marker, halted while a replica's
broker is down (P4). KRaft: one RemoveTopicRecord, not halted (§9.7). Which applies is
``ctx.semantics`` (reference/semantics.py).
"""

from __future__ import annotations

import time

from harness.scenario.scenario import RunContext, Scenario

from .common import T, state

DOOMED = "doomed"  # the topic these scenarios create and delete (the workload keeps writing to ``chaos``)
PARTS = 2


def topic_id(ctx: RunContext, name: str) -> str | None:
    """The topic id of ``name`` (hex; §6.1 step 3, §9.8), None when the topic does not exist."""
    return ctx.view.topic_id(name)


def _removal(ctx: RunContext, name: str, marker: int) -> list[dict] | None:
    """The controller's writes since ``marker`` once they hold the removal of ``name`` (the topic
    znode deleted, §6.2 step 6; a RemoveTopicRecord, §9.7); None before."""
    writes = ctx.writes_since(marker)
    return writes if any(w["kind"] == "topic_removed" and w["topic"] == name for w in writes) else None


def _wait_removed(ctx: RunContext, name: str, marker: int, timeout_s: float = 90.0) -> list[dict]:
    """Wait for the removal of ``name`` in the controller's log; returns the writes since ``marker``."""
    got: list[list[dict]] = []

    def removed() -> bool:
        writes = _removal(ctx, name, marker)
        if writes is not None:
            got.append(writes)
        return writes is not None
    ctx.wait_until(f"{name}: the controller removed the topic (§6.2 step 6, §9.7)", removed, timeout_s, interval_s=2.0)
    return got[-1]


def _expect_deletion_writes(ctx: RunContext, name: str, writes: list[dict], parts: int = PARTS) -> None:
    """How the partitions of ``name`` went: ZooKeeper mode writes each one leaderless (leader -1, LE + 1)
    before the removal (§6.2 step 4, §6.3); KRaft removes the topic in one RemoveTopicRecord with no
    leaderless state (§9.7). Read from the controller's own log, so no short-lived write is missed."""
    states = [w for w in writes if w["kind"] == "state" and w["topic"] == name]
    shown = [{k: w[k] for k in ("partition", "leader", "leader_epoch", "isr")} for w in states]
    if ctx.semantics.deletion_writes_leaderless:
        ctx.expect("every partition was written with leader -1 before its removal (replicas offline, §6.2 step 4, "
                   "§6.3)", all(any(w["partition"] == p and w["leader"] == -1 for w in states) for p in range(parts)),
                   shown)
    else:
        ctx.expect(f"{name}: no partition was written leaderless before the removal (one RemoveTopicRecord, §9.7)",
                   not any(w["leader"] == -1 for w in states), shown)


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


def _create_delete(ctx: RunContext) -> None:
    create(ctx)
    before = {p: ctx.view.partition_state(DOOMED, p, fresh=True) for p in range(PARTS)}
    tid = topic_id(ctx, DOOMED)
    ctx.expect("the new topic has a topic id (§6.1 step 3, IBP >= 2.8)", bool(tid), tid)
    ctx.expect("new partitions start at leader epoch 0 (§4.1.1, D3)",
               all(s is not None and s["leader_epoch"] == 0 for s in before.values()), before)
    marker = ctx.history_marker()
    delete(ctx)
    ctx.wait_until(f"{DOOMED}: Metadata stops listing the topic (§6.2 step 3, §8.1 caveat 4)",
                   lambda: not _listed(ctx, DOOMED), 60, interval_s=0.2)
    _expect_deletion_writes(ctx, DOOMED, _wait_removed(ctx, DOOMED, marker))
    ctx.expect(f"{T} keeps its leaders while {DOOMED} is deleted",
               all(ctx.leader(T, p) is not None for p in range(3)), [state(ctx, p) for p in range(3)])


def _delete_with_broker_down(ctx: RunContext) -> None:
    """ZooKeeper mode halts the deletion while a broker holding a replica is down and completes it
    after the broker returns (§6.2 step 2, P4, §5.3 step 5); KRaft removes the topic at once and the
    returning broker drops its replicas when it replays the metadata log (§9.7)."""
    create(ctx)
    controller = ctx.controller()
    victim = next(b for b in ctx.live_brokers() if b != controller)  # hosts a replica: RF = #brokers
    h = ctx.fault("kill", f"broker:{victim}")
    ctx.wait_until(f"broker {victim} is unregistered (dead for the controller)",
                   lambda: victim not in ctx.live_brokers(), 40)
    marker = ctx.history_marker()
    waits = ctx.semantics.deletion_waits_for_replicas
    delete(ctx, wait_s=0 if waits else 30)  # ZooKeeper: the broker only writes the marker; completion cannot happen now
    if waits:
        ctx.sleep(8)
        ctx.expect(f"deletion is halted while broker {victim} holding a replica is down (§6.2 step 2, P4)",
                   _removal(ctx, DOOMED, marker) is None, {"topics": ctx.view.topics()})
    else:
        ctx.wait_until(f"{DOOMED}: Metadata stops listing the topic while broker {victim} is still down "
                       "(no halt in KRaft, §9.7)", lambda: not _listed(ctx, DOOMED), 60, interval_s=0.2)
        ctx.expect(f"broker {victim} was still down when the deletion completed",
                   victim not in ctx.live_brokers(), {"live": ctx.live_brokers()})
        _expect_deletion_writes(ctx, DOOMED, _wait_removed(ctx, DOOMED, marker, 30))
    ctx.heal(h)
    ctx.wait_until(f"broker {victim} registered again", lambda: victim in ctx.live_brokers(), 60)
    writes = _wait_removed(ctx, DOOMED, marker)
    if waits:
        _expect_deletion_writes(ctx, DOOMED, writes)
    ctx.wait_until(f"{DOOMED} stays deleted after broker {victim} returned",
                   lambda: not _listed(ctx, DOOMED) and DOOMED not in ctx.view.topics(), 30)
    ctx.wait_until(f"{T}: full ISR again", lambda: _full_isr(ctx, T, 3), 60)


def _recreate(ctx: RunContext) -> None:
    marker = ctx.history_marker()
    create(ctx)
    old_id = topic_id(ctx, DOOMED)
    if not ctx.semantics.deletion_writes_leaderless:
        # §9.7 writes no leaderless state at deletion (ZooKeeper mode's §6.2 step 4 writes bump the
        # epochs), so move the epoch above 0 first: the restart at 0 in the second incarnation is then visible
        _bump_epoch(ctx, DOOMED)
    delete(ctx)
    first = [w for w in _wait_removed(ctx, DOOMED, marker) if w["kind"] == "state" and w["topic"] == DOOMED]
    ctx.wait_until(f"{DOOMED}: Metadata stops listing the topic", lambda: not _listed(ctx, DOOMED), 60)
    first_max = max((w["leader_epoch"] for w in first), default=0)
    ctx.expect("the first incarnation ended above leader epoch 0 (its deletion writes, §6.2 step 4, or a clean "
               "stop of its leader, §9.4, bumped it)", first_max > 0, first_max)
    marker = ctx.history_marker()
    create(ctx)
    new_id = topic_id(ctx, DOOMED)
    ctx.expect("the re-created topic has a new topic id (§6.3)", bool(new_id) and new_id != old_id,
               {"old": old_id, "new": new_id})
    firsts = {}
    for w in ctx.writes_since(marker):
        if w["kind"] == "state" and w["topic"] == DOOMED:
            firsts.setdefault(w["partition"], w)
    ctx.expect("the re-created topic's partitions start again at leader epoch 0, partition epoch 0 (§6.3, §9.7)",
               sorted(firsts) == list(range(PARTS)) and all(w["leader_epoch"] == 0 and w["partition_epoch"] == 0
                                                             for w in firsts.values()), firsts)
    delete(ctx)
    _wait_removed(ctx, DOOMED, marker)
    ctx.wait_until(f"{DOOMED}: Metadata stops listing the second incarnation", lambda: not _listed(ctx, DOOMED), 60)


def _bump_epoch(ctx: RunContext, name: str) -> None:
    """Raise ``name``-0's leader epoch above 0: clean-stop its leader (controlled shutdown moves the
    leadership, LE + 1, §4.4, §9.4), start it again and wait for the full ISR."""
    st = ctx.view.partition_state(name, 0, fresh=True)
    assert st is not None, f"{name}-0 has no state"
    h = ctx.fault("stop", f"broker:{st['leader']}", heal="start")
    ctx.wait_until(f"{name}-0: a new leader after a clean stop of leader {st['leader']} (§4.4, §9.4)",
                   lambda: ctx.leader(name, 0) not in (None, st["leader"]), 60)
    ctx.heal(h)
    ctx.wait_until(f"{name}: full ISR again", lambda: _full_isr(ctx, name), 90)
    ctx.wait_until(f"{T}: full ISR again", lambda: _full_isr(ctx, T, 3), 90)


SCENARIOS: list[Scenario] = [
    Scenario("topics.create_delete", f"create topic {DOOMED} with the Admin API, then delete it: marker, "
             "replicas offline (leader -1), znodes removed (§6.1-6.3); KRaft: atomic removal (§9.7)", _create_delete,
             tags=("conformance", "chaos"), kraft=True, faults_one_node=False, reads_controller_log=True),
    Scenario("topics.delete_with_broker_down", f"delete {DOOMED} while a broker holding a replica is down: "
             "halted, completes after the broker returns (§6.2, P4); KRaft: not halted (§9.7)", _delete_with_broker_down,
             tags=("conformance", "chaos"), max_duration_s=240, kraft=True, reads_controller_log=True),
    Scenario("topics.recreate", f"delete {DOOMED} and create it again: a new topic id, epochs restart at 0 (§6.3)",
             _recreate, tags=("conformance", "chaos"), max_duration_s=240, kraft=True, reads_controller_log=True),
]
