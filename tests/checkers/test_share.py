"""The share-group checker (harness/checkers/share.py) on fabricated histories: a clean history PASSes,
and each anomaly class is caught by a history that has it and only it."""

from __future__ import annotations

import pytest

from harness.checkers.share import check_share, maybe_applied
from harness.checkers.verdict import decide
from harness.record.schema import event_error

T, G = "q", "kc-s-q"
META = {"workload": {"kind": "share", "topic": T, "record_lock_duration_ms": 15000, "delivery_count_limit": 3}}


class H:
    """A history builder: times are explicit so that lock windows are exact."""

    def __init__(self):
        self.events: list[dict] = []

    def ev(self, t: float, type_: str, **f) -> "H":
        self.events.append({"seq": len(self.events), "t": t, "wall": 1e9 + t, "type": type_, **f})
        return self

    def send(self, t, p, off):
        return self.ev(t, "client", process="p0", f="send", phase="ok", topic=T, partition=p, offset=off,
                       value=f"v{p}-{off}")

    def deliver(self, t, proc, p, off, count=1, fetch_t=None):
        self.ev(t - 0.05 if fetch_t is None else fetch_t, "share.fetch", process=proc, group=G)
        return self.ev(t, "share.poll", process=proc, group=G, topic=T, partition=p, offset=off,
                       delivery_count=count, fetch_t=t - 0.05 if fetch_t is None else fetch_t)

    def ack(self, t, proc, p, off, ack="accept", result_t=None, error=None):
        self.ev(t, "share.ack", process=proc, group=G, topic=T, partition=p, offset=off, ack=ack)
        if result_t is not None:
            self.ev(result_t, "share.ack_result", process=proc, group=G, topic=T, partition=p, offsets=[off],
                    error=error)
        return self

    def drain(self, t, idle=True):
        return self.ev(t, "share.drain", group=G, idle=idle, seconds=5.0, open=0)


def clean() -> H:
    h = H()
    for off in range(3):
        h.send(1.0 + off, 0, off)
    h.deliver(5.0, "m0", 0, 0).ack(5.1, "m0", 0, 0, result_t=5.2)
    # released by m1, delivered again to m0 with a higher count, accepted
    h.deliver(5.0, "m1", 0, 1).ack(5.1, "m1", 0, 1, "release", result_t=5.2)
    h.deliver(6.0, "m0", 0, 1, count=2).ack(6.1, "m0", 0, 1, result_t=6.2)
    # m2 crashes holding offset 2; its lock expires; m0 gets it later with count 2
    h.deliver(5.0, "m2", 0, 2)
    h.ev(5.5, "share.member_crashed", process="m2", group=G, reason="client_crash")
    h.deliver(21.0, "m0", 0, 2, count=2).ack(21.1, "m0", 0, 2, "reject", result_t=21.2)
    return h.drain(30.0)


def checks(h: H) -> dict:
    return check_share(h.events, META)


def test_clean_history_passes_and_fits_the_schema():
    h = clean()
    assert all(event_error(e) is None for e in h.events), [event_error(e) for e in h.events]
    r = checks(h)
    assert r["verdict"] == "PASS", r["reason"]
    st = r["checks"]["share-deliveries"]
    assert (st["deliveries"], st["redeliveries"], st["records_delivered"]) == (5, 2, 3)
    assert st["acks"] == {"accept": 2, "release": 1, "reject": 1}


def test_no_share_events_is_not_applicable():
    r = check_share([{"seq": 0, "t": 0.0, "wall": 1.0, "type": "phase", "name": "run.end"}], META)
    assert r["applicable"] is False and r["verdict"] == "PASS"


def test_lost_never_delivered():
    h = clean()
    h.events.insert(0, {"seq": -1, "t": 0.5, "wall": 1e9, "type": "client", "process": "p0", "f": "send",
                        "phase": "ok", "topic": T, "partition": 1, "offset": 7, "value": "x"})
    r = checks(h)
    c = r["checks"]["share-lost"]
    assert r["verdict"] == "FAIL" and c["verdict"] == "FAIL" and c["examples"][0]["offset"] == 7
    assert c["examples"][0]["why"] == "never delivered to a member"


def test_lost_accepted_before_processing():
    """The negative control's shape: m3 acknowledged offset 3 and committed, then crashed before
    processing it (no share.poll): accepted, never processed."""
    h = clean()
    h.send(2.0, 0, 3)
    h.ack(7.0, "m3", 0, 3, "accept", result_t=7.1)
    h.ev(7.2, "share.member_crashed", process="m3", group=G, reason="ack_before_process")
    r = checks(h)
    c = r["checks"]["share-lost"]
    assert c["verdict"] == "FAIL" and c["examples"][0]["why"] == "accepted without being processed"


def test_lost_is_undecided_without_an_idle_drain():
    h = clean()
    h.events = [e for e in h.events if e["type"] != "share.drain"]
    h.send(4.0, 1, 0)
    r = checks(h)
    assert r["verdict"] == "UNKNOWN" and r["checks"]["share-lost"]["verdict"] == "UNKNOWN"
    h.drain(40.0, idle=False)
    assert checks(h)["checks"]["share-lost"]["verdict"] == "UNKNOWN"


def test_not_redelivered_after_release():
    h = clean()
    h.send(2.0, 0, 4)
    h.deliver(8.0, "m1", 0, 4).ack(8.1, "m1", 0, 4, "release", result_t=8.2)
    r = checks(h)
    c = r["checks"]["share-not-redelivered"]
    assert r["verdict"] == "FAIL" and c["examples"][0]["offset"] == 4


def test_not_redelivered_after_lock_timeout():
    h = clean()
    h.send(2.0, 0, 4)
    h.deliver(8.0, "m1", 0, 4)        # never acknowledged: the lock times out
    assert checks(h)["checks"]["share-not-redelivered"]["verdict"] == "FAIL"


def test_archived_at_the_limit_is_not_an_anomaly():
    h = clean()
    h.send(2.0, 0, 4)
    for n in (1, 2, 3):               # limit 3 (META)
        h.deliver(8.0 + n, "m1", 0, 4, count=n).ack(8.1 + n, "m1", 0, 4, "release", result_t=8.2 + n)
    r = checks(h)
    assert r["verdict"] == "PASS", r["reason"]
    assert r["stats"]["archived"] == 1


def test_double_hold_two_members():
    h = clean()
    h.send(2.0, 0, 5)
    h.deliver(8.0, "m0", 0, 5).ack(12.0, "m0", 0, 5, result_t=12.1)
    h.deliver(9.0, "m1", 0, 5, count=2).ack(9.1, "m1", 0, 5, result_t=9.2)   # m0 still held it (lock 15 s)
    r = checks(h)
    c = r["checks"]["share-double-hold"]
    assert r["verdict"] == "FAIL" and c["verdict"] == "FAIL" and c["examples"][0]["offset"] == 5
    assert {c["examples"][0]["first"]["process"], c["examples"][0]["second"]["process"]} == {"m0", "m1"}


def test_redelivery_after_lock_expiry_is_no_double_hold():
    h = clean()
    h.send(2.0, 0, 5)
    h.deliver(8.0, "m0", 0, 5)                                               # paused past the lock
    h.deliver(24.0, "m1", 0, 5, count=2).ack(24.1, "m1", 0, 5, result_t=24.2)
    h.ack(25.0, "m0", 0, 5, result_t=25.1, error="INVALID_RECORD_STATE")     # late: refused
    r = checks(h)
    assert r["verdict"] == "PASS", r["reason"]


def test_overlapping_fetches_still_caught():
    """Both polls in flight at once, each returning the record: whichever acquired second did so while
    the other held it."""
    h = clean()
    h.send(2.0, 0, 6)
    h.deliver(8.0, "m0", 0, 6, fetch_t=7.0).ack(9.0, "m0", 0, 6, result_t=9.1)
    h.deliver(8.2, "m1", 0, 6, count=2, fetch_t=7.5).ack(9.0, "m1", 0, 6, result_t=9.1)
    assert checks(h)["checks"]["share-double-hold"]["verdict"] == "FAIL"


def test_redelivered_after_accept():
    h = clean()
    h.deliver(10.0, "m1", 0, 0, count=2).ack(10.1, "m1", 0, 0, result_t=10.2)   # 0 was accepted at 5.2
    r = checks(h)
    c = r["checks"]["share-redelivered-after-final"]
    assert r["verdict"] == "FAIL" and c["examples"][0]["offset"] == 0


def test_redelivered_after_reject():
    h = clean()
    h.deliver(25.0, "m1", 0, 2, count=3).ack(25.1, "m1", 0, 2, result_t=25.2)   # 2 was rejected at 21.2
    assert checks(h)["checks"]["share-redelivered-after-final"]["verdict"] == "FAIL"


def test_redelivery_after_a_failed_accept_is_fine():
    h = clean()
    h.send(2.0, 0, 8)
    h.deliver(8.0, "m0", 0, 8).ack(8.1, "m0", 0, 8, result_t=8.2, error="INVALID_RECORD_STATE")
    h.deliver(9.0, "m1", 0, 8, count=2).ack(9.1, "m1", 0, 8, result_t=9.2)
    r = checks(h)
    assert r["verdict"] == "PASS", r["reason"]


def test_delivery_count_going_down():
    h = clean()
    h.send(2.0, 0, 9)
    h.deliver(8.0, "m0", 0, 9, count=2).ack(8.1, "m0", 0, 9, "release", result_t=8.2)
    h.deliver(9.0, "m1", 0, 9, count=1).ack(9.1, "m1", 0, 9, result_t=9.2)
    c = checks(h)["checks"]["share-delivery-count"]
    assert c["verdict"] == "FAIL" and "went down" in c["examples"][0]["why"]


@pytest.mark.parametrize("count,why", [(0, "first delivery"), (4, "beyond the limit")])
def test_delivery_count_out_of_range(count, why):
    h = clean()
    h.send(2.0, 0, 9)
    h.deliver(8.0, "m0", 0, 9, count=count).ack(8.1, "m0", 0, 9, result_t=8.2)
    c = checks(h)["checks"]["share-delivery-count"]
    assert c["verdict"] == "FAIL" and why in c["examples"][0]["why"]


def test_maybe_applied_errors():
    assert maybe_applied("_TIMED_OUT") and maybe_applied("REQUEST_TIMED_OUT")
    assert not maybe_applied("INVALID_RECORD_STATE") and not maybe_applied(None)


def test_a_timed_out_accept_is_maybe_final_not_lost():
    h = clean()
    h.send(2.0, 0, 10)
    h.deliver(8.0, "m0", 0, 10).ack(8.1, "m0", 0, 10, result_t=8.2, error="_TIMED_OUT")
    r = checks(h)
    assert r["verdict"] == "PASS", r["reason"]


def test_decide_judges_share_as_data():
    """Through the one decision: a share FAIL is a data FAIL; the check is named share."""
    h = clean()
    h.deliver(10.0, "m1", 0, 0, count=2)
    h.ev(40.0, "phase", name="run.end")
    v = decide(h.events, {**META, "checks": ["share"]})
    assert v.verdict == "FAIL" and "share: share-redelivered-after-final" in v.reason
    v2 = decide(clean().ev(39.0, "phase", name="drain.end").ev(40.0, "phase", name="run.end").events, {**META, "checks": ["share"]})
    assert v2.verdict == "PASS", v2.reason


def test_malformed_event_is_an_error():
    h = clean()
    h.ev(9.0, "share.poll", process="m0", group=G, topic=T, partition=0)      # no offset
    with pytest.raises(ValueError, match="malformed event"):
        checks(h)


def test_a_crashing_members_held_batch_may_go_elsewhere_at_once():
    """The member decided to crash (share.member_crashed) before the poll that returned the record came
    back: its close() may release it right after, so another member getting it 1 s later is no double hold."""
    h = clean()
    h.send(2.0, 0, 11)
    h.ev(7.9, "share.member_crashed", process="m1", group=G, reason="client_crash", holding=1)
    h.deliver(8.0, "m1", 0, 11)
    h.ev(8.5, "client.life", process="m1", role="share-consumer", state="died", error="client_crash")
    h.deliver(9.0, "m0", 0, 11, count=2).ack(9.1, "m0", 0, 11, result_t=9.2)
    assert checks(h)["verdict"] == "PASS"
    # but a member that ends only later holds the record until then
    h2 = clean()
    h2.send(2.0, 0, 11)
    h2.deliver(8.0, "m1", 0, 11)
    h2.ev(12.0, "client.life", process="m1", role="share-consumer", state="died", error="client_crash")
    h2.deliver(9.0, "m0", 0, 11, count=2).ack(9.1, "m0", 0, 11, result_t=9.2)
    assert checks(h2)["checks"]["share-double-hold"]["verdict"] == "FAIL"


def _with_dlq(h: H, entries) -> dict:
    for n, off in enumerate(entries):
        h.ev(31.0 + n, "share.dlq", process="dlq", group=G, dlq_topic="dlq.q", dlq_offset=n, topic=T, partition=0,
             offset=off, delivery_count=2)
    h.ev(40.0, "share.dlq_read", group=G, dlq_topic="dlq.q", records=len(entries), expected=1)
    return check_share(h.events, {"workload": {**META["workload"], "dlq_topic": "dlq.q"}})


def test_dlq_holds_the_rejected_record():
    h = clean()                      # offset 2 is rejected
    assert all(event_error(e) is None for e in h.events)
    r = _with_dlq(h, [2])
    assert r["verdict"] == "PASS" and r["checks"]["share-dlq"]["dlq_records"] == 1, r["reason"]


def test_dlq_missing_a_rejected_record():
    c = _with_dlq(clean(), [])["checks"]["share-dlq"]
    assert c["verdict"] == "FAIL" and "not in the dead-letter topic" in c["examples"][0]["why"]


def test_dlq_holding_an_accepted_record():
    c = _with_dlq(clean(), [2, 0])["checks"]["share-dlq"]
    assert c["verdict"] == "FAIL" and c["examples"][0]["offset"] == 0 and "accepted" in c["examples"][0]["why"]


def test_dlq_unread_is_undecided_and_absent_without_a_dlq_topic():
    r = check_share(clean().events, {"workload": {**META["workload"], "dlq_topic": "dlq.q"}})
    assert r["checks"]["share-dlq"]["verdict"] == "UNKNOWN"
    assert "share-dlq" not in checks(clean())["checks"]


def test_accepted_first_then_processed_is_not_lost():
    """ack_before_process without a crash: the member accepts, commits, then processes (share.poll after
    the acknowledgement): nothing is lost."""
    h = clean()
    h.send(2.0, 0, 12)
    h.ack(7.0, "m3", 0, 12, "accept", result_t=7.1)
    h.deliver(7.3, "m3", 0, 12)
    assert checks(h)["verdict"] == "PASS", checks(h)["reason"]


def _released_to_the_limit(h: H, off: int = 5) -> H:
    """Offset ``off`` released at each of its 3 deliveries (the limit, META): the broker archives it."""
    h.send(2.0, 0, off)
    for n in range(3):
        h.deliver(6.0 + n, f"m{n}", 0, off, count=n + 1).ack(6.1 + n, f"m{n}", 0, off, "release", result_t=6.2 + n)
    return h


def test_dlq_holds_the_record_archived_at_the_delivery_limit():
    r = _with_dlq(_released_to_the_limit(clean()), [2, 5])
    c = r["checks"]["share-dlq"]
    assert r["verdict"] == "PASS", r["reason"]
    assert (c["dead"], c["archived"]) == (2, 1)
    assert r["checks"]["share-deliveries"]["archived"] == 1


def test_dlq_missing_the_record_archived_at_the_delivery_limit():
    c = _with_dlq(_released_to_the_limit(clean()), [2])["checks"]["share-dlq"]
    assert c["verdict"] == "FAIL" and [e["offset"] for e in c["examples"]] == [5]
    assert "rejected or archived" in c["examples"][0]["why"]
