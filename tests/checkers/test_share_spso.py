"""The share checker's SPSO rules (harness/checkers/share.py: share-spso-backwards,
share-spso-delivered-below) on fabricated histories built on test_share's clean history, and the
DescribeShareGroupOffsets codec (harness/protocol/share_messages.py) on hand-built bytes."""

from __future__ import annotations

import pytest

from harness.checkers.share import check_share
from harness.protocol import share_messages as sm
from harness.protocol.wire import DecodeError, Reader, Writer
from harness.record.schema import event_error
from tests.checkers.test_share import G, META, T, H, clean


def sampler(h: H, t: float = 0.5) -> H:
    return h.ev(t, "share.spso_sampler", group=G, topic=T, partitions=[0], interval=0.5)


def spso(h: H, t: float, so: int | None, epoch: int | None = 0, p: int | None = 0, error=None, coord=1) -> H:
    return h.ev(t, "share.spso", group=G, topic=T, partition=p, start_offset=so, leader_epoch=epoch,
                lag=None, error=error, coordinator=coord)


def with_samples(*samples) -> H:
    h = sampler(clean())
    for s in samples:
        spso(h, *s)
    h.events.sort(key=lambda e: e["t"])
    for i, e in enumerate(h.events):
        e["seq"] = i
    return h


def test_clean_with_monotonic_samples_passes_and_fits_the_schema():
    # offsets 0..2 all final by 21.2: the SPSO goes 0 -> 1 (after 5.2) -> 3 (after 21.2), epochs 0 -> 1
    h = with_samples((4.0, 0), (5.5, 1), (10.0, 1, 1), (22.0, 3, 1), (25.0, 3, 1, 0, "NOT_COORDINATOR"))
    assert all(event_error(e) is None for e in h.events), [event_error(e) for e in h.events]
    r = check_share(h.events, META)
    assert r["verdict"] == "PASS", r["reason"]
    b = r["checks"]["share-spso-backwards"]
    assert b["verdict"] == "PASS" and b["samples"] == 4 and b["failed_samples"] == 1
    seq = b["sequences"][f"{T}-0"]
    assert seq["sequence"] == [[0, 0, 1], [1, 0, 1], [1, 1, 1], [3, 1, 1]]
    assert (seq["first"], seq["last"], seq["leader_epochs"], seq["coordinators"]) == ([0, 0], [3, 1], [0, 1], [1])
    assert r["checks"]["share-spso-delivered-below"]["verdict"] == "PASS"


def test_without_the_sampler_the_spso_checks_are_absent():
    r = check_share(clean().events, META)
    assert "share-spso-backwards" not in r["checks"] and r["verdict"] == "PASS"


def test_spso_going_back_across_a_leader_change_fails_with_both_samples():
    h = with_samples((4.0, 0), (5.5, 1, 0), (10.0, 0, 1), (12.0, 0, 1))
    r = check_share(h.events, META)
    assert r["verdict"] == "FAIL" and "share-spso-backwards" in r["reason"]
    ex = r["checks"]["share-spso-backwards"]["examples"]
    assert len(ex) == 1            # one example per partition, however many samples stay below
    assert (ex[0]["earlier"]["start_offset"], ex[0]["earlier"]["leader_epoch"]) == (1, 0)
    assert (ex[0]["later"]["start_offset"], ex[0]["later"]["leader_epoch"]) == (0, 1)


def test_spso_going_back_across_a_coordinator_move_fails():
    h = with_samples((5.5, 1, 0, 0, None, 1), (8.0, 0, 0, 0, None, 2))
    r = check_share(h.events, META)
    ex = r["checks"]["share-spso-backwards"]["examples"][0]
    assert (ex["earlier"]["coordinator"], ex["later"]["coordinator"]) == (1, 2)


def test_missing_state_after_a_real_sample_is_counted_not_judged():
    h = with_samples((5.5, 1), (8.0, -1), (9.0, 1))
    r = check_share(h.events, META)
    b = r["checks"]["share-spso-backwards"]
    assert b["verdict"] == "PASS" and b["state_missing"] == 1


def test_sampler_without_any_answer_is_unknown():
    h = with_samples((5.5, None, None, None, "ProtocolError: refused"))
    r = check_share(h.events, META)
    assert r["checks"]["share-spso-backwards"]["verdict"] == "UNKNOWN"
    assert r["verdict"] == "UNKNOWN"


def test_delivery_below_a_sampled_spso_fails():
    # the SPSO passed offset 2 at 15.0 (sampled 3), yet a poll beginning at 20.95 returned offset 2
    h = with_samples((15.0, 3))
    r = check_share(h.events, META)
    c = r["checks"]["share-spso-delivered-below"]
    assert c["verdict"] == "FAIL" and r["verdict"] == "FAIL"
    assert (c["examples"][0]["offset"], c["examples"][0]["sample"]["start_offset"]) == (2, 3)


def test_delivery_by_a_poll_begun_before_the_sample_is_not_judged():
    # the sample came back at 20.96, after the poll (fetch at 20.95) had begun
    h = with_samples((20.96, 3))
    assert check_share(h.events, META)["checks"]["share-spso-delivered-below"]["verdict"] == "PASS"


def test_samples_of_another_partition_or_group_do_not_count():
    h = with_samples((15.0, 3, 0, 1))
    h.ev(16.0, "share.spso", group="other", topic=T, partition=0, start_offset=9, leader_epoch=0, lag=None,
         error=None, coordinator=1)
    r = check_share(h.events, META)
    assert r["checks"]["share-spso-delivered-below"]["verdict"] == "PASS"


# -- the codec -------------------------------------------------------------------------------------
def _response(version: int, start: int, code: int = 0) -> bytes:
    w = Writer().int32(0)

    def part(ww, p):
        ww.int32(p).int64(start + p).int32(4)
        if version >= 1:
            ww.int64(7)
        ww.int16(code).string(None, compact=True).empty_tagged_fields()

    def top(ww, t):
        ww.string(t, compact=True).raw(bytes(range(16))).array([0, 1], part, compact=True).empty_tagged_fields()

    def grp(ww, g):
        ww.string(g, compact=True).array(["t"], top, compact=True).int16(0).string(None, compact=True)
        ww.empty_tagged_fields()

    return w.array(["g"], grp, compact=True).empty_tagged_fields().bytes()


@pytest.mark.parametrize("version", [0, 1])
def test_describe_share_group_offsets_codec(version):
    req = sm.encode_describe_share_group_offsets_request(version, 9, "kc", "g", {"t": [0, 1]})
    r = Reader(req)
    assert (r.int16(), r.int16(), r.int32()) == (90, version, 9)
    [g] = sm.decode_describe_share_group_offsets_response(_response(version, 40), version)
    assert g.group == "g" and g.error is None
    assert [(p.partition, p.start_offset, p.leader_epoch, p.lag) for p in g.partitions] == \
        [(0, 40, 4, 7 if version else None), (1, 41, 4, 7 if version else None)]
    [g] = sm.decode_describe_share_group_offsets_response(_response(version, 0, code=16), version)
    assert g.partitions[0].error == "NOT_COORDINATOR"


def test_describe_share_group_offsets_truncated_answer_is_a_decode_error():
    with pytest.raises(DecodeError):
        sm.decode_describe_share_group_offsets_response(_response(1, 40)[:-5], 1)
