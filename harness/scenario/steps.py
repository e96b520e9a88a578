"""The script of a scenario file: its ``[[steps]]`` run in time order through :class:`RunContext`
(faults by ``ctx.fault``/``ctx.heal``, administrative acts by ``ctx.action``), its ``[[expect]]``
entries as ``ctx.wait_until`` (docs/scenario-files.md).

Timing: a step's ``at`` counts from the start of the fault phase, or from the moment the step named
by ``after`` ran (e.g. a reassignment's start). A fault step with a ``duration`` is healed that long
after it was applied; one without is healed when every step has run. Expectations that name a step
(``after = "kill"``) are waited for right after that step, before the next one; the rest (``after =
"faults"``, the default) after every fault is healed, each ``within`` seconds counted from then.
Checker-backed expectations (``no_acked_write_lost``, ``conformance``) are not run here: they select
the checks the verdict applies to the whole record.
"""

from __future__ import annotations

import heapq
import time
from typing import Any, Callable

from harness.cluster import admin_ops as ao
from harness.scenario.scenario import RunContext, run_scheduled
from harness.scenario.schema import CHECKER_EXPECTATIONS

SMALL_BATCH = 16384   # preload batch size (a throttled follower copies one batch per fetch)


# ------------------------------------------------------------------------------------- expectations
def _assignment(ctx: RunContext, topic: str, p: int):
    return ao.topic_assignment(ctx.cluster, topic).get(p)


def _before(ctx: RunContext, x: dict) -> Any:
    """What an expectation anchored on a step compares with, read just before that step."""
    try:
        if x["that"] == "leader_elected":
            return ctx.leader(x["topic"], x["partition"])
        if x["that"] == "controller_elected":
            return ctx.controller()
    except Exception:  # noqa: BLE001 - the cluster is mid-fault: compare with nothing
        return None
    return None


def _full(ctx: RunContext, topics: list[str], partitions: dict[str, int]) -> bool:
    for t in topics:
        assignment = ao.topic_assignment(ctx.cluster, t)      # one read per topic
        for p in range(partitions[t]):
            reps = list(assignment[p][0]) if p in assignment else []
            if not reps or set(ctx.isr(t, p)) != set(reps):
                return False
    return True


def check(ctx: RunContext, x: dict, before: Any, timeout_s: float, reassigned: list[tuple[str, int, list[int]]],
          partitions: dict[str, int], faulted: tuple[int, ...] = ()) -> None:
    """Wait (bounded by ``timeout_s``) for expectation ``x``; a timeout fails the run (StepTimeout).
    ``faulted``: the brokers the anchoring fault step acted on (``isr_shrinks`` without a broker)."""
    that, t, p = x["that"], x.get("topic"), x.get("partition")
    tp = f"{t}-{p}"
    within = f"within {x['within']:g} s"
    when = "after the faults stopped" if x["after"] == "faults" else f"after step {x['after']!r}"
    if that == "leader_elected":
        what, pred = (f"{tp} has a new leader (not {before}) {within} {when}",
                      lambda: ctx.leader(t, p) not in (None, -1, before))
    elif that == "controller_elected":
        what, pred = (f"a new controller (not {before}) {within} {when}",
                      lambda: ctx.controller() not in (None, -1, before))
    elif that == "leader_is":
        what, pred = f"{tp}: leader is broker {x['broker']} {within} {when}", lambda: ctx.leader(t, p) == x["broker"]
    elif that == "isr_shrinks":
        gone = [x["broker"]] if "broker" in x else list(faulted)
        what, pred = (f"{tp}: broker(s) {gone} leave the ISR {within} {when}",
                      lambda: bool(gone) and not set(gone) & set(ctx.isr(t, p)))
    elif that == "topic_deleted":
        what, pred = f"topic {t} deleted {within} {when}", lambda: not ao.topic_assignment(ctx.cluster, t)
    elif that == "isr_is":
        what, pred = f"{tp}: ISR = {x['brokers']} {within} {when}", lambda: ctx.isr(t, p) == x["brokers"]
    elif that == "isr_full":
        topics = [t] if t else list(partitions)
        what, pred = (f"every replica of {', '.join(topics)} in the ISR {within} {when}",
                      lambda: _full(ctx, topics, partitions))
    elif that == "reassignment_completes":
        moves = [(rt, rp, reps) for rt, rp, reps in reassigned if t is None or (rt, rp) == (t, p)]
        names = ", ".join(f"{rt}-{rp} -> {reps}" for rt, rp, reps in moves) or "(no reassignment ran)"
        what, pred = (f"reassignment {names} completed {within} {when}",
                      lambda: bool(moves) and all(_assignment(ctx, rt, rp) == (reps, [], []) for rt, rp, reps in moves))
    else:  # pragma: no cover - the schema allows no other
        raise AssertionError(that)
    ctx.wait_until(what, pred, max(0.1, timeout_s), interval_s=0.5)


# ------------------------------------------------------------------------------------- actions
def preload(ctx: RunContext, topic: str, partition: int, mb: int) -> None:
    """Write ``mb`` MB to one partition (acks=all) in small batches, so that a throttled reassignment of
    it takes long (as suites/scenarios/reassignment.py does for its slow reassignments)."""
    from confluent_kafka import Producer   # lazy: the loader stays importable without a client
    prod = Producer({**ctx.cluster.client_config(), "acks": "all", "linger.ms": 50,
                     "batch.size": SMALL_BATCH})
    value = b"r" * 10_000
    for _ in range(mb * 100):
        while True:
            try:
                prod.produce(topic, value, partition=partition)
                break
            except BufferError:
                prod.poll(0.1)
        prod.poll(0)
    left = prod.flush(60)
    assert left == 0, f"preloading {topic}-{partition}: {left} records not delivered in 60 s"


def run_action(ctx: RunContext, s: dict, reassigned: list, throttled: list, partitions: dict[str, int]) -> None:
    a = s["action"]
    if a == "reassign":
        plan = ao.make_plan({(s["topic"], s["partition"]): s["replicas"]})
        ctx.action("reassign", lambda: ao.reassign_execute(ctx.cluster, plan, throttle=s.get("throttle")),
                   **ao.action_params(plan, via="api", throttle=s.get("throttle")))
        reassigned.append((s["topic"], s["partition"], list(s["replicas"])))
        if s.get("throttle"):
            throttled.append(True)
    elif a == "preload":
        p, mb = s.get("partition", 0), s.get("mb", 4)
        ctx.action("preload", lambda: preload(ctx, s["topic"], p, mb), topic=s["topic"], partition=p, mb=mb)
    elif a == "clear_throttle":
        _clear_throttle(ctx, s.get("brokers"))
        throttled.clear()
    elif a == "delete_topic":
        # where the deletion waits for every replica's broker (ZooKeeper mode, §6.2 P4) the request only writes
        # the marker (operation timeout 0: the broker answers at once); KRaft deletes at once (§9.7), and there a
        # zero timeout is the controller operation's deadline (ControllerApis.handleDeleteTopics:
        # requestTimeoutMsToDeadlineNs), so it expires unexecuted (seen on 4.1.2); the answer is waited for
        # (reference/semantics.py deletion_waits_for_replicas; suites/scenarios/topics.py does the same)
        wait_s = 0 if ctx.semantics.deletion_waits_for_replicas else 30

        def go():
            return ctx.cluster.admin().delete_topics([s["topic"]], operation_timeout=wait_s)[s["topic"]].result(
                timeout=wait_s + 30)
        ctx.action("delete_topic", go, topic=s["topic"], operation_timeout_s=wait_s)
    elif a == "elect_preferred":
        tps = [(s["topic"], s["partition"])] if "partition" in s else [
            (s["topic"], p) for p in range(partitions[s["topic"]])]
        ctx.action("elect_preferred", lambda: ao.elect_preferred(ctx.cluster, tps),
                   partitions=[{"topic": t, "partition": p} for t, p in tps])
    # "wait": nothing to do; it only marks a time other steps can count from


def _clear_throttle(ctx: RunContext, brokers: list[int] | None) -> None:
    ctx.action("set_config", lambda: ao.clear_replication_throttle(ctx.cluster, brokers),
               topic=None, brokers=brokers, config={k: None for k in ao.THROTTLE_KEYS})


# ------------------------------------------------------------------------------------- the script
def make_script(steps: list[dict], expect: list[dict], partitions: dict[str, int],
                random: bool = False) -> Callable[[RunContext], None] | None:
    """The ``script(ctx)`` of a scenario file (None: a random mix with nothing to wait for, which the
    runner's :func:`harness.scenario.scenario.run_scheduled` runs alone)."""
    waits = [x for x in expect if x["that"] not in CHECKER_EXPECTATIONS]
    if random and not waits:
        return None
    by_step: dict[str, list[dict]] = {}
    for x in waits:
        by_step.setdefault(x["after"], []).append(x)

    def script(ctx: RunContext) -> None:
        reassigned: list[tuple[str, int, list[int]]] = []
        throttled: list[bool] = []
        if random:
            run_scheduled(ctx)
        else:
            _run_steps(ctx, steps, by_step, partitions, reassigned, throttled)
        if throttled:      # a throttled reassignment is released once the faults stopped
            _clear_throttle(ctx, None)
        t_end = time.monotonic()
        for x in by_step.get("faults", []):
            check(ctx, x, None, t_end + x["within"] - time.monotonic(), reassigned, partitions)
    script.plan_steps = [] if random else steps     # what `run --plan` shows (harness/scenario/script_faults.py)
    return script


def _run_steps(ctx: RunContext, steps: list[dict], by_step: dict[str, list[dict]], partitions: dict[str, int],
               reassigned: list, throttled: list) -> None:
    t0 = time.monotonic()
    ran: dict[str, float] = {}                 # step id -> when it ran (monotonic)
    pending = list(steps)
    heals: list[tuple[float, int, Any]] = []   # (due, seq, handle)
    open_ended: list[Any] = []                 # faults healed when every step has run
    seq = 0

    def due(s: dict) -> float:
        return (ran[s["after"]] if "after" in s else t0) + s["at"]

    try:
        while pending or heals:
            ready = [s for s in pending if "after" not in s or s["after"] in ran]
            nxt = min(ready, key=lambda s: (due(s), s["index"])) if ready else None
            if heals and (nxt is None or heals[0][0] <= due(nxt)):
                when, _, h = heals[0]
                ctx.sleep(when - time.monotonic())
                heapq.heappop(heals)
                ctx.heal(h)
                continue
            assert nxt is not None, "a step waits for a step that never runs"  # the schema orders anchors
            ctx.sleep(due(nxt) - time.monotonic())
            pending.remove(nxt)
            mine = by_step.get(nxt.get("id", ""), [])
            before = [_before(ctx, x) for x in mine]
            ran_at = time.monotonic()
            faulted: tuple[int, ...] = ()
            if "fault" in nxt:
                h = ctx.fault(nxt["fault"], nxt["target"], **nxt["params"])
                faulted = tuple(getattr(h, "broker_ids", None) or ())
                if nxt["duration"] is None:
                    open_ended.append(h)
                elif nxt["duration"] > 0:
                    seq += 1
                    heapq.heappush(heals, (time.monotonic() + nxt["duration"], seq, h))
            else:
                run_action(ctx, nxt, reassigned, throttled, partitions)
            if "id" in nxt:
                ran[nxt["id"]] = ran_at
            for x, b in zip(mine, before):
                check(ctx, x, b, ran_at + x["within"] - time.monotonic(), reassigned, partitions, faulted)
    finally:
        # heal what this script applied, in order; the runner's heal_all() still covers everything else
        while heals:
            ctx.heal(heapq.heappop(heals)[2])
        for h in open_ended:
            ctx.heal(h)
