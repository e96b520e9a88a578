"""harness/record/windows.py: the one pairing of fault.start with its end, in each reader's mode."""

import math

from harness.record import read_run
from harness.record.windows import fault_never_applied, fault_times, fault_windows, first_end_by_id, ordered

from pathlib import Path

KRAFT = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "kraft"


def ev(seq, type_, **kw):
    return {"seq": seq, "t": float(seq), "wall": 1000.0 + seq, "type": type_, **kw}


HISTORY = [
    ev(0, "fault.start", fault_id=0, fault="kill", nodes=["kafka-1"]),
    ev(1, "client", f="send", phase="ok"),
    ev(2, "fault.heal", fault_id=0),
    ev(3, "fault.end", fault_id=0, ok=True),
    ev(4, "fault.start", fault_id=1, fault="pause", nodes=["kafka-2"]),
    ev(5, "phase", name="faults.healed"),
    ev(6, "fault.end", fault_id=1, ok=True),
    ev(7, "fault.start", fault_id=2, fault="stop", nodes=[]),
    ev(8, "fault.end", fault_id=2, ok=False, error="skipped: no such node"),
    ev(9, "fault.start", fault_id=3, fault="kill", nodes=["kafka-3"]),
]


def test_default_pairs_each_start_with_its_fault_end_and_leaves_the_last_open():
    ws = fault_windows(HISTORY)
    assert [(w.fault_id, w.start["seq"], w.end and w.end["seq"]) for w in ws] == [(0, 0, 3), (1, 4, 6), (2, 7, 8),
                                                                                   (3, 9, None)]
    assert [w.start_at for w in ws] == [0, 4, 7, 9] and ws[0].end_at == 3     # positions index the events
    assert [w.never_applied for w in ws] == [False, False, True, False]
    assert ws[0].nodes == ["kafka-1"] and ws[0].fault == "kill"


def test_heal_closes_first_when_asked_and_faults_healed_closes_the_open_ones():
    ws = fault_windows(HISTORY, closing=("fault.heal", "fault.end"), match="open", healed_phase=True,
                       clock="wall", by_seq=True, positions="paired")
    assert ws[0].end["type"] == "fault.heal"
    assert ws[1].closed_by_phase and ws[1].end is None          # its fault.end came after faults.healed
    assert [i for i, _ in ws[0].healed] == [ws[1].start_at + 1]  # every faults.healed after its start
    assert ws[3].healed == [] and ws[3].end is None


def test_id_mode_collects_every_end_and_a_repeated_id_replaces_in_place():
    evs = [ev(0, "fault.start", fault_id=7), ev(1, "fault.end", fault_id=7), ev(2, "fault.end", fault_id=7),
           ev(3, "fault.start", fault_id=8), ev(4, "fault.start", fault_id=7)]
    ws = fault_windows(evs)
    assert [(w.fault_id, w.start["seq"]) for w in ws] == [(7, 4), (8, 3)]
    assert [len(w.ends) for w in fault_windows(evs[:3])] == [2]
    kept = fault_windows(evs, match="open", replace=False)
    assert [(w.fault_id, w.start["seq"]) for w in kept] == [(7, 0), (8, 3), (7, 4)]
    assert kept[0].ends == [evs[1]]                               # the second end closes nothing


def test_clock_leaves_out_events_without_that_clock():
    evs = [ev(0, "fault.start", fault_id=0), {**ev(1, "fault.end", fault_id=0), "wall": None}]
    assert fault_windows(evs, clock="wall", positions="paired")[0].end is None
    assert len(ordered(evs, clock="wall")) == 1


def test_helpers():
    assert fault_never_applied({"ok": False, "error": "cannot resolve leader(t,0)"})
    assert not fault_never_applied({"ok": False, "error": "boom"})
    assert first_end_by_id([ev(0, "fault.end", fault_id=1), ev(1, "fault.end", fault_id=1)])[1]["seq"] == 0
    assert fault_times(HISTORY, 0) == {"start": 0.0, "heal": 2.0, "end": 3.0}


def test_a_real_kraft_record_has_closed_windows_in_both_modes():
    rec = read_run(next(p for p in sorted(KRAFT.iterdir()) if p.is_dir()))
    plain = fault_windows(rec.events)
    assert plain and all(w.end is not None and w.end["t"] >= w.start["t"] for w in plain)
    healed = fault_windows(rec.events, closing=("fault.heal", "fault.end"), match="open", healed_phase=True,
                           clock="wall", by_seq=True, positions="paired")
    assert [w.fault_id for w in healed] == [w.fault_id for w in plain]
    assert all(w.end["wall"] <= p.end["wall"] for w, p in zip(healed, plain))   # the heal begins first
    assert not math.isnan(plain[0].start["t"])


def test_client_windows_from_client_life():
    from harness.record.windows import client_windows
    life = [(9.0, "stopped", None), (1.0, "started", None), (4.0, "fatal", "boom"), (5.0, "recreated", None),
            (2.0, "started", None)]
    alive, deaths = client_windows(life)
    assert alive == [[1.0, 4.0], [5.0, 9.0]]
    assert deaths == [(4.0, "fatal", "boom")]                    # a clean stop is no death
    assert client_windows([(1.0, "started", None)]) == ([[1.0, None]], [])
