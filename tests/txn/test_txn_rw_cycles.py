"""G1c through the ``wr`` edges of read-write (consume-transform-produce) transactions: cycles longer
than two, and cycles that mix ``ww`` with ``wr`` edges (issue 42: fabricated records)."""

from __future__ import annotations

from txn_history import Hist

from harness.checkers.txn import ALLOWED, FAIL, PASS, check_transactions


def hist(n: int, partitions: int) -> Hist:
    h = Hist(partitions=partitions)
    for k in range(n):
        h.producer(f"p{k}")
    h.consumer("c0")
    return h


def failed(r: dict) -> set:
    return {n for n, c in r["checks"].items() if c["verdict"] == FAIL}


def ring(n: int):
    """``n`` read-write transactions, each writing partition k and reading the write of the one before
    it in the ring: T0 <- T1 <- ... <- T(n-1) <- T0 through wr edges alone."""
    h = hist(n, n)
    txs = [h.begin(f"p{k}", [k]) for k in range(n)]
    for tx in txs:
        h.write(tx)
    for k, tx in enumerate(txs):
        prev = txs[k - 1]
        tx.reads = [(prev.parts[0], prev.offsets[0], prev.values[0])]
    for tx in txs:
        h.complete(tx)
    h.read_visible("c0")
    h.drain()
    return h, txs


def test_a_ring_of_three_read_write_transactions_is_G1c_of_length_three():
    h, txs = ring(3)
    r = check_transactions(h.events, h.metadata)
    assert failed(r) == {"G1c"}
    assert r["stats"]["edges"]["wr"] == 3 and r["stats"]["txn_reads"] == 3
    ex = r["checks"]["G1c"]["examples"][0]
    assert ex["anomaly"] == "G1c" and ex["length"] == 3
    assert {s["txn"]["op_id"] for s in ex["steps"]} == {t.op_id for t in txs}
    assert {s["then"]["kind"] for s in ex["steps"]} == {"wr"}


def test_a_chain_of_read_write_transactions_without_the_closing_read_passes():
    h, txs = ring(4)
    ev = next(e for e in h.events if e["type"] == "txn" and e["phase"] == "ok" and e["op_id"] == txs[0].op_id)
    ev["ops"] = [o for o in ev["ops"] if o["f"] != "read"]  # T0 no longer reads T3: a chain, not a cycle
    r = check_transactions(h.events, h.metadata)
    assert r["verdict"] == PASS, r["reason"]
    assert r["stats"]["edges"]["wr"] == 3 and r["checks"]["G1c"]["count"] == 0


def test_a_cycle_of_one_ww_and_one_wr_edge_is_allowed_unless_writes_must_be_isolated():
    # a and b both write partition 0 (a first: a -ww-> b), and a reads b's write of partition 1 (b -wr-> a)
    h = hist(2, 2)
    a = h.begin("p0", [0])
    b = h.begin("p1", [0, 1])
    h.write(a)
    h.write(b)
    a.reads = [(1, b.offsets[1], b.values[1])]
    h.complete(b)
    h.complete(a)
    h.read_visible("c0")
    h.drain()
    r = check_transactions(h.events, h.metadata)
    assert r["verdict"] == PASS and r["checks"]["G1c"]["count"] == 0  # no cycle of wr + process alone
    ww = r["checks"]["ww-cycles"]
    assert ww["verdict"] == ALLOWED and ww["count"] == 1
    ex = ww["examples"][0]
    assert ex["length"] == 2 and sorted(s["then"]["kind"] for s in ex["steps"]) == ["wr", "ww"]
    assert ex["anomaly"] == "G1c-ww" and ww["by_anomaly"] == {"G1c-ww": 1}  # a wr edge in it: not G0
    r = check_transactions(h.events, h.metadata, {"isolated_writes": True})
    assert failed(r) == {"ww-cycles"}
