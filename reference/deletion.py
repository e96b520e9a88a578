"""Topic deletion (spec §6.2, TDM:94-357).

Observable ZK effects: the delete marker appears; once the topic is eligible, every live replica
goes through OfflineReplica, i.e. one §4.6 write per ISR member (leader → -1, ISR shrinks to one
member, LE+1 each, broker order unspecified); after all StopReplica(delete) responses the whole
topic subtree, then the marker, are deleted. No elections happen for a topic queued for deletion
(H14).
"""

from __future__ import annotations

from reference.context import Ctx

R_OFFLINE = "§6.2-4/§4.6"
R_DONE = "§6.2-6"
R_DISABLED = "§6.2-1"


def eligible(ctx: Ctx, topic: str) -> bool:
    """§6.2 step 2: no replica offline and no reassignment in progress."""
    s = ctx.s
    t = s.topics[topic]
    for p, a in t.assignments.items():
        if a.reassigning or (topic, p) in s.legacy_reassign:
            return False
        if any(not s.is_live(r) for r in a.rs):
            return False
    return True


def queue_deletions(ctx: Ctx, topics) -> None:
    """Controller handling of new ``/admin/delete_topics`` children (KC:1787-1816)."""
    s = ctx.s
    unknown = [t for t in topics if t not in s.topics]
    if unknown or not s.config.delete_topic_enable:
        drop = set(unknown) | (set(topics) if not s.config.delete_topic_enable else set())
        s.deleting -= drop
        ctx.emit("delete_topics", None, tuple(sorted(s.deleting)), R_DISABLED)
    resume_deletions(ctx)


def resume_deletions(ctx: Ctx) -> None:
    """TDM:317 ``resumeDeletions``: start deletion of every eligible queued topic not yet started."""
    s = ctx.s
    if s.controller is None:
        return
    for topic in sorted(s.deleting):
        if topic in s.topics and topic not in s.deletion_started and eligible(ctx, topic):
            start_deletion(ctx, topic)


def start_deletion(ctx: Ctx, topic: str) -> None:
    """§6.2 steps 3-4: live replicas → OfflineReplica (§4.6 write per ISR member), broker by broker."""
    s = ctx.s
    s.deletion_started.add(topic)
    by_broker: dict[int, list] = {}
    for p, a in s.topics[topic].assignments.items():
        if (topic, p) not in s.partitions:
            continue
        for r in a.rs:
            if s.is_live(r):
                by_broker.setdefault(r, []).append((topic, p))
    ctx.offline_replicas(by_broker, R_OFFLINE, f"deletion order {topic}")


def halt_for_dead_brokers(ctx: Ctx, dead) -> None:
    """§5.2 step 5: replicas on dead brokers → ReplicaDeletionIneligible; deletion is retried later."""
    s = ctx.s
    for topic in list(s.deletion_started):
        if any(set(a.rs) & set(dead) for a in s.topics[topic].assignments.values()):
            s.deletion_started.discard(topic)


def can_complete(s, topic: str) -> bool:
    return (s.controller is not None and topic in s.deletion_started and
            all(s.is_live(r) for a in s.topics[topic].assignments.values() for r in a.rs))


def complete_deletion(ctx: Ctx, topic: str) -> None:
    """§6.2 step 6: all StopReplica(delete) succeeded: delete the state znodes and topic znode, then the marker."""
    s = ctx.s
    if not can_complete(s, topic):
        return
    for p in sorted(s.topics[topic].assignments):
        tp = (topic, p)
        st = s.partitions.pop(tp, None)
        if st is not None:
            ctx.emit("partition_state", tp, None, R_DONE)
    ctx.write_topic(topic, R_DONE, deleted=True)
    del s.topics[topic]
    s.deleting.discard(topic)
    s.deletion_started.discard(topic)
    ctx.emit("delete_topics", None, tuple(sorted(s.deleting)), R_DONE)
