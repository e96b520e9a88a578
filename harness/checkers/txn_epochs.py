"""Transactions as the log holds them: producer epochs per transaction (KIP-890 part 2) and exactly-once copying.

Pure: events + metadata in, a result dict out (the shape of :func:`harness.checkers.txn.check_transactions`).
Input (docs/transactions.md, "Transactions v2"): the ``txn.batch`` events (every batch of the output topic,
read back with Fetch by harness/workload/batch_log.py), ``txn.read`` (how each partition's read ended),
``jtxn.input`` (the acknowledged records the harness wrote to the input topic), ``jtxn.client`` (the Java
copier instances) and metadata ``features`` (the run's finalized feature levels, which the runner takes
from the metadata log with ``harness.distributions.control_history.feature_levels``) and ``workload``.

A **transaction** of producer id P in partition X is the run of P's data batches after P's previous marker
in X up to P's next marker (a control batch: COMMIT or ABORT). Checks:

| check | what | verdict |
|---|---|---|
| ``zombie-write`` | a data batch of P written after a marker of P with a higher epoch: a write of a fenced or ended transaction accepted after the marker | FAIL |
| ``epoch-regress`` | any other batch of P with an epoch below an earlier batch of P in X | FAIL |
| ``epoch-reuse`` | TV2: two transactions of P in X with a data epoch in common (TV2 bumps the epoch at every end) | FAIL |
| ``marker-epoch`` | TV2: a marker not above its transaction's data epoch (a COMMIT exactly one above); TV0/1: a COMMIT marker at another epoch than its data | FAIL |
| ``open-transaction`` | data of P after P's last marker when the read ended | UNKNOWN |
| ``eos-duplicate`` | an input record in the committed output twice | FAIL |
| ``eos-lost`` | an acknowledged input record not in the committed output after the final copier of its partition completed | FAIL (UNKNOWN without a completed final copier, or when the read back of an output partition failed) |
| ``unexpected-value`` | a committed output record that is no input record | FAIL |
| ``coverage`` | committed transactions at least ``min_committed_txns`` (metadata workload) | UNKNOWN below |

The version comes from ``features["transaction.version"]`` (absent: 0). Without ``features`` in the
metadata, ``epoch-reuse`` and ``marker-epoch`` are UNKNOWN. Sources: docs/transactions.md.
"""

from __future__ import annotations

from harness.checkers.common import overall
from harness.record.facts import features
from harness.record.verdicts import FAIL, PASS, UNKNOWN

TXN_BATCH, TXN_READ, JTXN_INPUT, JTXN_CLIENT = "txn.batch", "txn.read", "jtxn.input", "jtxn.client"
KIND = "java-txn"
CHECKS = ("zombie-write", "epoch-regress", "epoch-reuse", "marker-epoch", "open-transaction", "eos-duplicate",
          "eos-lost", "unexpected-value", "coverage")


def transaction_version(metadata: dict) -> int | None:
    """The run's finalized ``transaction.version`` (metadata ``features``; a feature never finalized is
    level 0), or None when the record does not say."""
    feats = features(metadata or {})
    if feats is None:
        return None
    return int(feats.get("transaction.version") or 0)


def transactions_of(batches: list[dict]) -> dict[tuple, list[dict]]:
    """``(topic, partition, producer id)`` -> its transactions in offset order: ``{"data": [batch...],
    "marker": batch | None}`` (the last one has ``marker: None`` when its data has no marker yet). Batches
    of non-transactional producers are left out."""
    out: dict[tuple, list[dict]] = {}
    for b in sorted(batches, key=lambda b: (b["topic"], b["partition"], b["base_offset"])):
        if not b.get("transactional"):
            continue
        txns = out.setdefault((b["topic"], b["partition"], b["producer_id"]), [])
        if not txns or txns[-1]["marker"] is not None:
            txns.append({"data": [], "marker": None})
        if b.get("control"):
            txns[-1]["marker"] = b
        else:
            txns[-1]["data"].append(b)
    return out


def _where(b: dict) -> dict:
    return {"topic": b["topic"], "partition": b["partition"], "offset": b["base_offset"],
            "producer_id": b["producer_id"], "producer_epoch": b["producer_epoch"],
            **({"marker": b.get("marker")} if b.get("control") else {})}


def _check(found: list, verdict_if_found: str, reason: str, max_examples: int, **extra) -> dict:
    return {"verdict": verdict_if_found if found else PASS, "count": len(found),
            "reason": reason if found else "", "examples": found[:max_examples], **extra}


def epoch_sequences(txns: dict[tuple, list[dict]], limit: int = 12) -> dict[str, list]:
    """Per ``topic-partition/pid``: the first ``limit`` transactions as ``[data epochs, marker, marker epoch]``
    (what the report shows: TV2 bumps at every marker, TV1 stays)."""
    out = {}
    for (topic, p, pid), ts in sorted(txns.items()):
        out[f"{topic}-{p}/{pid}"] = [[sorted({b["producer_epoch"] for b in t["data"]}),
                                      t["marker"]["marker"] if t["marker"] else None,
                                      t["marker"]["producer_epoch"] if t["marker"] else None] for t in ts[:limit]]
    return out


def per_producer(txns: dict[tuple, list[dict]]) -> dict[str, dict]:
    """Per ``topic-partition/pid``: transactions (with a marker), distinct data epochs, first and last epoch:
    under TV2 about one data epoch per transaction, under TV1 one per InitProducerId."""
    out = {}
    for (topic, p, pid), ts in sorted(txns.items()):
        epochs = [b["producer_epoch"] for t in ts for b in t["data"] + ([t["marker"]] if t["marker"] else [])]
        out[f"{topic}-{p}/{pid}"] = {"transactions": sum(1 for t in ts if t["marker"] is not None),
                                     "data_epochs": len({b["producer_epoch"] for t in ts for b in t["data"]}),
                                     "first_epoch": min(epochs, default=None), "last_epoch": max(epochs, default=None)}
    return out


def check_txn_epochs(events, metadata: dict, options: dict | None = None) -> dict:
    opts = {"max_examples": 20, **(options or {})}
    unknown_opts = set(opts) - {"max_examples"}
    if unknown_opts:
        raise ValueError(f"unknown options {sorted(unknown_opts)}")
    mx = int(opts["max_examples"])
    wl = (metadata or {}).get("workload") or {}
    batches, reads, inputs, clients = [], [], [], []
    for e in events:
        t = e.get("type")
        if t == TXN_BATCH:
            for k in ("topic", "partition", "base_offset", "producer_id", "producer_epoch"):
                if e.get(k) is None:
                    raise ValueError(f"event seq {e.get('seq')}: txn.batch without {k}")
            batches.append(e)
        elif t == TXN_READ:
            reads.append(e)
        elif t == JTXN_INPUT:
            inputs.append(e)
        elif t == JTXN_CLIENT:
            clients.append(e)
    if not batches and not reads and wl.get("kind") != KIND:
        return {"verdict": PASS, "applicable": False, "reason": "no transaction batches in the record",
                "checks": {}, "stats": {}}
    tv = transaction_version(metadata)
    txns = transactions_of(batches)
    checks: dict[str, dict] = {}

    # -- epochs in offset order: never below a marker already written (zombie), never below earlier data
    zombie, regress = [], []
    for key, ts in txns.items():
        top_marker = top_any = None
        for t in ts:
            for b in t["data"] + ([t["marker"]] if t["marker"] else []):
                e = b["producer_epoch"]
                if not b.get("control") and top_marker is not None and e < top_marker["producer_epoch"]:
                    zombie.append({**_where(b), "after_marker": _where(top_marker)})
                elif top_any is not None and e < top_any["producer_epoch"]:
                    regress.append({**_where(b), "after": _where(top_any)})
                if top_any is None or e > top_any["producer_epoch"]:
                    top_any = b
                if b.get("control") and (top_marker is None or e >= top_marker["producer_epoch"]):
                    top_marker = b
    checks["zombie-write"] = _check(zombie, FAIL, "a data batch was accepted after a marker of its producer id "
                                    "with a higher epoch (a write of a fenced or ended transaction)", mx)
    checks["epoch-regress"] = _check(regress, FAIL, "a batch's producer epoch is below an earlier batch of its "
                                     "producer id in the partition (ProducerAppendInfo refuses lower epochs)", mx)

    # -- the version's epoch rule at every marker, and (TV2) no epoch shared by two transactions
    reuse, bad_marker = [], []
    for key, ts in txns.items():
        seen: dict[int, int] = {}            # data epoch -> index of the first transaction that used it
        for i, t in enumerate(ts):
            epochs = {b["producer_epoch"] for b in t["data"]}
            m = t["marker"]
            if tv is not None and tv >= 2:
                for e in sorted(epochs):
                    if e in seen and seen[e] != i:
                        reuse.append({**_where(t["data"][0]), "epoch": e, "transaction": i,
                                      "earlier_transaction": seen[e]})
                        break
                for e in epochs:
                    seen.setdefault(e, i)
            if m is None or not epochs:
                continue
            top = max(epochs)
            if tv is not None and tv >= 2:
                ok = m["producer_epoch"] == top + 1 if m.get("marker") == "commit" else m["producer_epoch"] > top
            elif tv is not None:
                ok = m["producer_epoch"] == top if m.get("marker") == "commit" else m["producer_epoch"] >= top
            else:
                ok = True
            if not ok:
                bad_marker.append({**_where(m), "data_epochs": sorted(epochs), "transaction_version": tv})
    if tv is None:
        for name in ("epoch-reuse", "marker-epoch"):
            checks[name] = {"verdict": UNKNOWN, "count": 0, "examples": [],
                            "reason": "metadata.json has no finalized feature levels (features): the run's "
                                      "transaction.version is not known"}
    else:
        checks["epoch-reuse"] = _check(reuse, FAIL, "two transactions of one producer id share a producer epoch "
                                       "under transaction.version 2 (each end must bump it)", mx,
                                       applies=tv >= 2)
        rule = ("a marker's epoch is one above its data's (COMMIT), above it (ABORT)" if tv >= 2 else
                "a COMMIT marker has its data's epoch; an ABORT marker at least that")
        checks["marker-epoch"] = _check(bad_marker, FAIL, f"transaction.version {tv}: {rule}; broken", mx, rule=rule)

    # -- open transactions when the read ended
    open_txns = [{**_where(t["data"][-1]), "batches": len(t["data"])}
                 for ts in txns.values() for t in ts[-1:] if t["marker"] is None and t["data"]]
    stuck = [r for r in reads if r.get("lso_below_high") or r.get("error")]
    why = "; ".join(f"{r.get('topic')}-{r.get('partition')}: " + (r.get("error") or
                    f"last stable offset {r.get('last_stable_offset')} below the high watermark "
                    f"{r.get('high_watermark')} after {r.get('waited_s')} s") for r in stuck)
    checks["open-transaction"] = _check(open_txns or stuck, UNKNOWN,
                                        "transaction data without a marker when the log was read" +
                                        (f" ({why})" if why else ""), mx)

    # -- exactly once: every acknowledged input record once in the committed output
    out_topic = wl.get("topic")
    committed: dict[str, list] = {}
    n_commit = n_abort = 0
    for (topic, p, pid), ts in txns.items():
        if out_topic is not None and topic != out_topic:
            continue
        for t in ts:
            if t["marker"] is None:
                continue
            if t["marker"].get("marker") != "commit":
                n_abort += 1
                continue
            n_commit += 1
            for b in t["data"]:
                for j, v in enumerate(b.get("values") or ()):
                    committed.setdefault(v, []).append({"partition": p, "offset": b["base_offset"] + j})
    acked: dict[str, int] = {}
    for e in inputs:
        for v in e.get("values") or ():
            acked[v] = e.get("partition")
    dup = [{"value": v, "at": at} for v, at in committed.items() if len(at) > 1]
    unexpected = [{"value": v, "at": at} for v, at in committed.items() if v not in acked]
    final_ok = {c.get("partition") for c in clients if c.get("final") and c.get("state") == "exited"
                and c.get("exit_code") == 0}
    lost = [{"value": v, "input_partition": p} for v, p in acked.items() if v not in committed]
    # the output as read back is whole only if no partition's read failed (a failed read is the harness's)
    unread = [f"{r.get('topic')}-{r.get('partition')}: {r.get('error')}" for r in reads
              if r.get("error") and (out_topic is None or r.get("topic") == out_topic)]
    lost_decided = [] if unread else [x for x in lost if x["input_partition"] in final_ok]
    checks["eos-duplicate"] = _check(dup, FAIL, "an input record appears more than once in the committed output", mx)
    checks["unexpected-value"] = _check(unexpected, FAIL, "a committed output record is no input record", mx)
    if lost_decided:
        checks["eos-lost"] = _check(lost_decided, FAIL, "acknowledged input records missing from the committed "
                                    "output after the final copier of their partition completed", mx)
    elif lost:
        checks["eos-lost"] = {"verdict": UNKNOWN, "count": len(lost), "examples": lost[:mx],
                              "reason": (f"input records not in the output as read, and the read back of the output "
                                         f"failed ({'; '.join(unread)})" if unread else
                                         "input records not (yet) in the committed output and no final copier of "
                                         "their partition completed")}
    else:
        checks["eos-lost"] = _check([], FAIL, "", mx)
    need = int(wl.get("min_committed_txns") or 0)
    checks["coverage"] = {"verdict": UNKNOWN if n_commit < need else PASS, "count": n_commit,
                          "reason": f"{n_commit} committed transactions in the log; the run needs {need}"
                          if n_commit < need else "", "examples": []}
    verdict, reason = overall(checks, "every transaction check passed")
    epochs = {b["producer_epoch"] for b in batches if b.get("transactional") and not b.get("control")}
    return {"verdict": verdict, "applicable": True, "reason": reason, "checks": checks,
            "stats": {"transaction_version": tv, "batches": len(batches), "producer_ids": len({k[2] for k in txns}),
                      "committed_txns": n_commit, "aborted_txns": n_abort, "input_records": len(acked),
                      "committed_records": sum(len(a) for a in committed.values()),
                      "distinct_data_epochs": len(epochs),
                      "client_instances": sum(1 for c in clients if c.get("state") == "started"),
                      "epoch_sequences": epoch_sequences(txns), "per_producer": per_producer(txns)}}
