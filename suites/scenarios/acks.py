"""6. acks semantics (seed 001; spec §5.12, §5.13).

The matrix ``acks.a{0,1,all}_minisr{1,2}``: one partition replicated on three brokers, a producer
with the given ``acks`` against ``min.insync.replicas`` 1 or 2, and the ISR shrunk to the leader
alone (both followers paused) for a few seconds. What the spec says must happen in that window:

* ``acks=all`` with ``min.insync.replicas=2``: every produce fails with NOT_ENOUGH_REPLICAS (§5.12),
  nothing is acknowledged, and nothing acknowledged before or after is lost;
* ``acks=all`` with ``min.insync.replicas=1``: the leader alone is enough; writes go on;
* ``acks=0`` / ``acks=1``: no ISR-size check at all; writes go on (with ``min.insync.replicas=2``
  on 3.7+ they only become visible once the ISR is back, §5.13, which the drain sees).

The leader is never replaced here, so even ``acks=1`` loses nothing; the loss ``acks=1`` permits
(an out-of-sync leader elected) is ``unclean.out_of_sync_elected``. The ``acks=all`` cells use a
non-idempotent producer with ``retries=0`` so that NOT_ENOUGH_REPLICAS is a definite failure in
the history (``fail``, never to be read back: the durability check ``failed_visible``);
``acks.all_below_min_isr`` keeps the idempotent variant (its refusals are ``info``, retried until
the delivery timeout).

Layout: four brokers, the partitions on brokers 1, 2 and 4 (``chaos-0`` = [1, 2, 4]). In KRaft the
first three nodes are the controller quorum (harness/distributions/__init__.py), so pausing the followers 2
and 4 leaves two of the three voters running: the quorum keeps a leader, fences the paused brokers
and takes the leader's ISR shrink (§9.3), as ZooKeeper mode does with its ensemble untouched. On three
combined nodes the same pauses would stop the quorum itself and the ISR could not shrink.
"""

from __future__ import annotations

from harness.scenario.scenario import RunContext, Scenario, TopicSpec
from reference import versions

from .common import T, state

WINDOW_S = 6.0   # how long the ISR stays below min ISR
BROKERS = 4
# broker 3 holds no replica: in KRaft it is the voter that keeps the quorum while 2 and 4 are paused
ASSIGN = {0: [1, 2, 4], 1: [2, 4, 1], 2: [4, 1, 2]}
LAG_S = 1.0      # margin at both ends of the window (the leader learns its ISR late, §8.1)


def _window_sends(ctx: RunContext, t_from: float, t_to: float) -> dict:
    """Send completions of the workload whose invoke→completion lies inside [t_from, t_to]
    (recorder time), counted by outcome; and every NOT_ENOUGH_REPLICAS* error of the run so far."""
    invoked: dict[tuple, float] = {}
    counts = {"ok": 0, "fail": 0, "info": 0, "not_enough_replicas": 0, "nerr_in_window": 0, "nerr_completed": 0}
    for e in ctx.recorder.read_events():
        if e["type"] != "client" or e.get("f") != "send":
            continue
        key = (e["process"], e["op_id"])
        if e["phase"] == "invoke":
            invoked[key] = e["t"]
            continue
        err = e.get("error") or ""
        if err.startswith("NOT_ENOUGH_REPLICAS"):
            counts["not_enough_replicas"] += 1
            if t_from <= e["t"] <= t_to:
                counts["nerr_completed"] += 1     # refused in the window (invoked maybe earlier)
        t0 = invoked.get(key)
        if t0 is not None and t0 >= t_from and e["t"] <= t_to:
            counts[e["phase"]] += 1
            if err.startswith("NOT_ENOUGH_REPLICAS"):
                counts["nerr_in_window"] += 1
    return counts


def _kafka_version(ctx: RunContext) -> tuple[int, ...] | None:
    v = versions.parse_or_none(ctx.recorder.metadata.get("kafka_version"))
    return v[:2] if v else None


def _expect_visibility(ctx: RunContext, t_from: float, t_to: float) -> None:
    """acks=0/1 writes made while the ISR is below min ISR: visible to consumers at once before 3.7,
    only once the ISR is back from 3.7 on (KAFKA-15583: no HW advance under min ISR, §5.13, §10.3)."""
    version = _kafka_version(ctx)
    if version is None:
        return                      # a foreign image: the gate is unknown
    invoked: dict[str, float] = {}
    seen = 0
    for e in ctx.recorder.read_events():
        if e["type"] != "client":
            continue
        if e.get("f") == "send" and e["phase"] == "invoke":
            invoked[e["value"]] = e["t"]
        elif e.get("f") == "poll" and t_from <= e["t"] <= t_to and invoked.get(e.get("value"), -1.0) >= t_from:
            seen += 1
    detail = {"kafka_version": ctx.recorder.metadata.get("kafka_version"), "polled_in_window": seen}
    if version >= (3, 7):
        ctx.expect("3.7+: writes made while the ISR is below min ISR stay invisible to consumers "
                   "(the high watermark does not advance, §5.13)", seen == 0, detail)
    else:
        ctx.expect("before 3.7: writes made while the ISR is below min ISR are visible at once "
                   "(the high watermark advances with any ISR size, §5.13)", seen > 0, detail)


def _shrink_below_min_isr(acks: str, min_isr: int):
    """Pause both followers of chaos-0 until the ISR is the leader alone, hold it ``WINDOW_S``,
    then check what the producer saw in that window against §5.12; heal and wait for the full ISR."""
    def script(ctx: RunContext) -> None:
        st = state(ctx)
        leader = st["leader"]
        followers = [r for r in ctx.view.replicas(T, 0) if r != leader]
        handles = [ctx.fault("pause", f"broker:{f}") for f in followers]
        ctx.wait_until(f"ISR of {T}-0 shrinks to the leader {leader} alone (§5.7 / §4.6)",
                       lambda: ctx.isr(T, 0) == [leader], 40)
        t_shrunk = ctx.recorder.now()
        below = min_isr > 1 and acks == "all"
        # under load the client may still be clearing a backlog from before the shrink: wait for the
        # first answer given with the ISR below min ISR instead of trusting a fixed window
        if below:
            ctx.wait_until("acks=all below min.insync.replicas: the producer gets NOT_ENOUGH_REPLICAS (§5.12)",
                           lambda: _window_sends(ctx, t_shrunk, ctx.recorder.now())["nerr_completed"] > 0,
                           40, interval_s=0.5)
        else:
            ctx.wait_until(f"acks={acks}, min.insync.replicas={min_isr}: writes are acknowledged with the "
                           "leader alone in the ISR (§5.12)",
                           lambda: _window_sends(ctx, t_shrunk + LAG_S, ctx.recorder.now())["ok"] > 0,
                           40, interval_s=0.5)
        ctx.sleep(WINDOW_S - (ctx.recorder.now() - t_shrunk))
        mid = state(ctx)
        ctx.expect("the leader stays the leader while its followers are paused", mid["leader"] == leader, mid)
        seen = _window_sends(ctx, t_shrunk + LAG_S, ctx.recorder.now())
        if below:
            ctx.expect("acks=all below min.insync.replicas: no write is acknowledged (§5.12)",
                       seen["ok"] == 0, seen)
        else:
            ctx.expect(f"acks={acks}, min.insync.replicas={min_isr}: no NOT_ENOUGH_REPLICAS",
                       seen["not_enough_replicas"] == 0, seen)
        if min_isr > 1 and acks != "all":
            _expect_visibility(ctx, t_shrunk + LAG_S, ctx.recorder.now())
        for h in handles:
            ctx.heal(h)
        ctx.wait_until(f"ISR of {T}-0 is full again (§5.8)", lambda: len(ctx.isr(T, 0)) == 3, 60)
        t_full = ctx.recorder.now()
        # the client's backlog from the window (refusals, timeouts) clears first: wait, do not sleep
        ctx.wait_until("writes invoked after the ISR is full are acknowledged",
                       lambda: _window_sends(ctx, t_full, ctx.recorder.now())["ok"] > 0, 40, interval_s=0.25)
    return script


def _workload(acks: str) -> dict:
    w = {"topic": T, "partitions": 1, "acks": acks, "rate": 100.0,
         "delivery_timeout_ms": 10000, "request_timeout_ms": 3000}
    if acks == "all":
        w.update(enable_idempotence=False, retries=0)   # NOT_ENOUGH_REPLICAS is then a definite fail
    else:
        w.update(enable_idempotence=False)
    return w


def _matrix() -> list[Scenario]:
    out = []
    for acks in ("0", "1", "all"):
        for min_isr in (1, 2):
            out.append(Scenario(
                f"acks.a{acks}_minisr{min_isr}",
                f"acks={acks}, min.insync.replicas={min_isr}, ISR shrunk to the leader alone (seed 001, §5.12)",
                _shrink_below_min_isr(acks, min_isr), tags=("conformance", "chaos"),
                broker_config={"min.insync.replicas": str(min_isr)}, brokers=BROKERS,
                topics=[TopicSpec(T, 1, 3, assignment={0: ASSIGN[0]})], workload=_workload(acks),
                max_duration_s=150, kraft=True))
    return out


def _acks_below_min_isr(ctx: RunContext) -> None:
    st = state(ctx)
    followers = [r for r in ctx.view.replicas(T, 0) if r != st["leader"]]
    handles = [ctx.fault("pause", f"broker:{f}") for f in followers]
    ctx.wait_until(f"ISR of {T}-0 shrinks to the leader alone", lambda: ctx.isr(T, 0) == [st["leader"]], 40)
    ctx.sleep(4)  # acks=all writes must now fail with NOT_ENOUGH_REPLICAS (checked on the history)
    for h in handles:
        ctx.heal(h)
    ctx.wait_until(f"ISR of {T}-0 is full again", lambda: len(ctx.isr(T, 0)) == 3, 60)


SCENARIOS: list[Scenario] = _matrix() + [
    Scenario("acks.all_below_min_isr", "idempotent acks=all with min.insync.replicas=2 while the ISR is the "
             "leader alone (refusals retried until the delivery timeout)",
             _acks_below_min_isr, tags=("conformance", "chaos"),
             broker_config={"min.insync.replicas": "2"}, brokers=BROKERS, kraft=True,
             topics=[TopicSpec(T, 3, 3, assignment=ASSIGN)],
             # the delivery timeout outlasts the window: a timed-out message makes librdkafka bump the
             # producer epoch and may duplicate in-flight messages (librdkafka #4953), which would
             # leave this run unable to test the broker's duplicate detection
             workload={"topic": T, "partitions": 3, "acks": "all", "enable_idempotence": True,
                       "delivery_timeout_ms": 90000, "request_timeout_ms": 5000}),
]
