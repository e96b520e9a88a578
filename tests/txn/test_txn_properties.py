"""Property tests of the transaction checker: random correct histories (concurrent transactions
interleaving in the log, aborts, unsure outcomes, consume-transform-produce reads, a
read_committed consumer and a final drain) never FAIL; hiding any one visible record from every
reader is always found; serial histories have no dependency cycle at all."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from txn_history import Hist

from harness.checkers.cycles import find_cycles, strongly_connected
from harness.checkers.txn import FAIL, PASS, check_transactions


@st.composite
def histories(draw, serial: bool = False):
    partitions = draw(st.integers(1, 4))
    producers = draw(st.integers(1, 3))
    h = Hist(partitions=partitions)
    for k in range(producers):
        h.producer(f"p{k}")
    h.consumer("c0")
    open_tx: dict = {}
    inputs: list = []  # committed (partition, offset, value) not consumed by a pipeline yet
    steps = draw(st.lists(st.tuples(st.integers(0, producers - 1), st.sampled_from(
        ["begin", "write", "commit", "abort", "fail", "info", "poll"])), min_size=1, max_size=60))
    for k, what in steps:
        proc = f"p{k}"
        tx = open_tx.get(proc)
        if what == "poll":
            h.read_visible("c0")
        elif tx is None:
            if what == "begin" or not serial:
                parts = draw(st.lists(st.integers(0, partitions - 1), min_size=1, max_size=4))
                reads = [inputs.pop(0)] if inputs and draw(st.booleans()) else []
                tx = open_tx[proc] = h.begin(proc, parts, reads=reads,
                                             outcome="abort" if what == "abort" else "commit")
                if serial:
                    h.complete(tx)
                    del open_tx[proc]
                    inputs.append((tx.parts[0], tx.offsets[0], tx.values[0]))
        elif what == "write":
            h.write(tx, tx.offsets.index(None) if None in tx.offsets else None)  # the next send, in order
        elif what in ("commit", "abort", "fail", "info"):
            phase = {"commit": "ok", "abort": "ok", "fail": "fail", "info": "info"}[what]
            h.complete(tx, phase=phase, error=None if phase == "ok" else "x")
            if phase == "info":
                tx.status = draw(st.sampled_from(["committed", "aborted"]))  # what really happened
                for p in sorted(set(tx.parts)):
                    h.logs[p].append((None, None))
            if tx.status == "committed":
                inputs.append((tx.parts[0], tx.offsets[0], tx.values[0]))
            del open_tx[proc]
    for proc, tx in open_tx.items():  # what is still open gets aborted by the coordinator
        h.complete(tx, phase="info", error="timed out")
        tx.status = "aborted"
        for p in sorted(set(tx.parts)):
            h.logs[p].append((None, None))
    h.read_visible("c0")
    h.drain()
    return h


@settings(max_examples=200, deadline=None)
@given(histories())
def test_correct_histories_never_fail(h):
    r = check_transactions(h.events, h.metadata)
    assert r["verdict"] == PASS, (r["reason"], {n: c["examples"][:2] for n, c in r["checks"].items()
                                                if c["verdict"] != PASS})


@settings(max_examples=100, deadline=None)
@given(histories(serial=True))
def test_serial_histories_have_no_cycle(h):
    r = check_transactions(h.events, h.metadata)
    assert r["verdict"] == PASS
    if not r["applicable"]:
        return
    assert r["checks"]["ww-cycles"]["count"] == 0 and r["checks"]["G1c"]["count"] == 0


@settings(max_examples=150, deadline=None)
@given(histories(), st.data())
def test_a_visible_record_hidden_from_every_reader_is_found(h, data):
    ok = {v for tx in h.txns if tx.phase == "ok" for v in tx.values}  # known to have committed
    visible = [(p, off, v) for p in range(h.partitions) for off, v in h.visible(p) if v in ok]
    if not visible:
        return
    p, off, value = data.draw(st.sampled_from(visible))
    events = [e for e in h.events if not (e["type"] == "txn.poll" and e["value"] == value)]
    r = check_transactions(events, h.metadata)
    assert r["verdict"] == FAIL
    found = {n for n, c in r["checks"].items() if c["verdict"] == FAIL}
    assert found & {"lost-write", "torn-transaction"}, found
    where = [m for n in ("lost-write", "torn-transaction") for ex in r["checks"][n]["examples"] for m in ex["missing"]]
    assert {"value": value, "topic": "t", "partition": p, "offset": off} in where


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.lists(
    st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=30))))
def test_cycle_search_agrees_with_reachability(graph):
    n, edges = graph
    succ = [[] for _ in range(n)]
    for a, b in edges:
        if a != b:
            succ[a].append(b)
    reach = [set() for _ in range(n)]
    for s in range(n):  # reachability by plain search
        todo = list(succ[s])
        while todo:
            v = todo.pop()
            if v not in reach[s]:
                reach[s].add(v)
                todo.extend(succ[v])
    on_cycle = {v for v in range(n) if v in reach[v]}
    comps = strongly_connected(n, succ)
    assert set().union(*comps) == on_cycle if comps else not on_cycle
    count, cycles = find_cycles(n, succ)
    assert count == len(comps) and len(cycles) == len(comps)
    for c in cycles:  # each is a real cycle
        for j, v in enumerate(c):
            assert c[(j + 1) % len(c)] in succ[v]
    for comp in comps:  # the cycle found is a shortest one in its component (every node tried when <= 8)
        members = set(comp)
        best = min(shortest_through(succ, members, v) for v in comp)
        found = next(c for c in cycles if c[0] in members)
        assert len(found) == shortest_through(succ, members, found[0])
        if len(comp) <= 8:
            assert len(found) == best


def shortest_through(succ, members, start) -> int:
    """Length of the shortest cycle through ``start`` inside ``members`` (plain BFS distances)."""
    dist = {start: 0}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in succ[v]:
                if w in members and w not in dist:
                    dist[w] = dist[v] + 1
                    nxt.append(w)
        frontier = nxt
    return min(dist[v] + 1 for v in dist if start in succ[v])
