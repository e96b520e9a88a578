"""The verdict (harness/checkers/verdict.py) on real run records and copies of them with one thing changed.

The fixture is a real ``broker_failover.kill_leader`` run on 3.9.2 (PASS): broker 2 killed at 50.7 s,
restarted at 102 s, 2,896 client events, a final read of the three partitions.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from harness.checkers.verdict import Verdict, decide, environment_failures, record_complete
from harness.record.verdicts import CAUSES
from harness.record import read_run

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "real"
KILL_LEADER = REAL / "20261121T075025Z-broker_failover.kill_leader-53702c"


@pytest.fixture(scope="module")
def record():
    return read_run(KILL_LEADER)


def _events(record) -> list[dict]:
    return copy.deepcopy(record.events)


def _meta(rec, **extra) -> dict:
    return {**copy.deepcopy(rec.metadata), **extra}


def _phase_seq(events, name) -> int:
    return next(i for i, e in enumerate(events) if e["type"] == "phase" and e.get("name") == name)


def _next_seq(events) -> int:
    return max(e["seq"] for e in events) + 1


def test_stored_verdicts_are_reproduced():
    for d in sorted(p for p in REAL.iterdir() if p.is_dir()):
        rec = read_run(d)
        v = decide(rec.events, rec.metadata)
        stored = rec.verdict["verdict"]
        if stored == "UNKNOWN":         # recorded before causes existed; still undecided
            assert v.verdict == "UNKNOWN", d.name
        else:
            assert v.verdict == stored, (d.name, v.reason, rec.verdict["reason"])


def test_pass_has_no_cause(record):
    v = decide(_events(record), _meta(record))
    assert (v.verdict, v.cause) == ("PASS", None)
    assert v.to_dict()["cause"] is None


def test_unknown_needs_a_known_cause():
    with pytest.raises(ValueError):
        Verdict("UNKNOWN", "why", None)
    with pytest.raises(ValueError):
        Verdict("UNKNOWN", "why", "the-weather")
    assert Verdict("FAIL", "x", "aborted").cause is None


# -- truncated records --------------------------------------------------------------------------------
def _truncated_after_first_partition_end(events):
    first_end = next(i for i, e in enumerate(events) if e["type"] == "partition.end")
    return events[: first_end + 1], events[first_end]


@pytest.mark.parametrize("marker", [False, True], ids=["legacy-record", "record-with-end-marker"])
def test_truncated_record_without_loss_is_unknown_record_incomplete(record, marker):
    events, _ = _truncated_after_first_partition_end(_events(record))
    meta = _meta(record, record={"end_marker": True}) if marker else _meta(record)
    complete, why = record_complete(events, meta)
    assert not complete and why
    v = decide(events, meta)
    assert (v.verdict, v.cause) == ("UNKNOWN", "record-incomplete"), v.reason
    # the partitions whose final read is missing were not called lost
    assert v.checks["durability"]["checks"]["lost"]["violations"] == 0


def test_truncated_record_with_a_lost_write_in_its_complete_part_is_fail(record):
    events, end = _truncated_after_first_partition_end(_events(record))
    tp = (end["topic"], end["partition"])
    acked = {e["value"] for e in events if e["type"] == "client" and e["f"] == "send" and e["phase"] == "ok"
             and (e["topic"], e["partition"]) == tp and e["offset"] < end["end_offset"]}
    victim = next(e for e in events if e["type"] == "client" and e["f"] == "drain" and e["value"] in acked)
    events.remove(victim)                    # the final read of that partition no longer has it
    v = decide(events, _meta(record, record={"end_marker": True}))
    assert v.verdict == "FAIL", v.reason
    assert "lost" in v.reason
    lost = v.checks["durability"]["checks"]["lost"]["examples"]
    assert [x["value"] for x in lost] == [victim["value"]]


def test_complete_record_with_end_marker_but_no_run_end_is_incomplete(record):
    events = _events(record)
    assert decide(events, _meta(record, record={"end_marker": True})).cause == "record-incomplete"
    events.append({"seq": _next_seq(events), "t": 200.0, "wall": 0.0, "type": "phase", "name": "run.end"})
    assert decide(events, _meta(record, record={"end_marker": True})).verdict == "PASS"


# -- environment failures ------------------------------------------------------------------------------
def _docker_event(events, action, container, t, wall):
    return {"seq": _next_seq(events), "t": t, "wall": wall, "type": "docker.event", "container": container,
            "role": "broker", "node_id": 3, "action": action, "wall_docker": wall, "exit_code": 137, "signal": None}


def _fault(events, fid):
    return next(e for e in events if e["type"] == "fault.start" and e["fault_id"] == fid)


def test_docker_stop_inside_a_fault_window_is_the_fault(record):
    events = _events(record)
    f = _fault(events, 1)
    for action in ("kill", "die"):
        events.append(_docker_event(events, action, f["nodes"][0], f["t"] + 0.05, f["wall"] + 0.05))
    assert environment_failures(events) == []
    assert decide(events, _meta(record)).verdict == "PASS"


def test_container_removed_from_outside_is_unknown_not_fail(record):
    events = _events(record)
    f = _fault(events, 1)
    other = f["nodes"][0].replace("-b2", "-b3")
    # broker 3 removed from outside 5 s before broker 2 was killed
    for action in ("kill", "die", "destroy"):
        events.append(_docker_event(events, action, other, f["t"] - 5, f["wall"] - 5))
    # ... and, as in the seen case, an expectation failed afterwards (no full ISR after healing)
    events.append({"seq": _next_seq(events), "t": 150.0, "wall": 0.0, "type": "expect",
                   "what": "chaos: full ISR after healing", "ok": False, "waited_s": 60.0})
    v = decide(events, _meta(record))
    assert (v.verdict, v.cause) == ("UNKNOWN", "container-removed"), v.reason
    assert other in v.reason and "full ISR" in v.reason      # the finding is shown, not judged


def test_the_killed_container_removed_from_outside_is_container_removed_not_the_fault(record):
    # seen under load: the fault killed broker 2, and its container was then removed from outside while
    # the kill's window was open; the heal could not restart it and "full ISR after healing" failed
    events = _events(record)
    f = _fault(events, 1)
    node = f["nodes"][0]
    for action, dt in (("kill", 0.3), ("die", 0.5), ("destroy", 0.8)):
        events.append(_docker_event(events, action, node, f["t"] + dt, f["wall"] + dt))
    events.append({"seq": _next_seq(events), "t": 150.0, "wall": 0.0, "type": "expect",
                   "what": "chaos: full ISR after healing", "ok": False, "waited_s": 60.0})
    assert [c for c, _ in environment_failures(events)] == ["container-removed"]
    v = decide(events, _meta(record))
    assert (v.verdict, v.cause) == ("UNKNOWN", "container-removed"), v.reason
    assert node in v.reason


def test_container_stopped_from_outside_is_unknown(record):
    events = _events(record)
    zk = "kc-r53702c-zk1"
    events.append(_docker_event(events, "stop", zk, 60.0, _fault(events, 1)["wall"] + 60))
    v = decide(events, _meta(record))
    assert (v.verdict, v.cause) == ("UNKNOWN", "container-stopped"), v.reason


def test_data_loss_is_fail_even_with_an_environment_failure(record):
    events = _events(record)
    f = _fault(events, 1)
    events.append(_docker_event(events, "destroy", "kc-r53702c-b3", f["t"] + 100, f["wall"] + 100))
    drained = [e for e in events if e["type"] == "client" and e["f"] == "drain"]
    events.remove(drained[len(drained) // 2])
    v = decide(events, _meta(record))
    assert v.verdict == "FAIL", v.reason
    assert "lost" in v.reason and "container-removed" in v.reason


@pytest.mark.parametrize("cause", ["aborted", "docker-error", "disk-full", "environment"])
def test_recorded_environment_error_gives_its_cause(record, cause):
    events = _events(record)
    events = events[: _phase_seq(events, "faults.healed")]
    events.append({"seq": _next_seq(events), "t": 90.0, "wall": 0.0, "type": "phase",
                   "name": "aborted" if cause == "aborted" else "environment.error", "error": "x", "cause": cause})
    v = decide(events, _meta(record))
    assert (v.verdict, v.cause) == ("UNKNOWN", cause)


# -- the script ---------------------------------------------------------------------------------------
def test_script_error_is_unknown_script_and_expectation_is_fail(record):
    events = _events(record)
    events.append({"seq": _next_seq(events), "t": 90.0, "wall": 0.0, "type": "phase", "name": "script.failed",
                   "kind": "error", "error": "TypeError: bad operand (broker_failover.py:12 in script)"})
    v = decide(events, _meta(record))
    assert (v.verdict, v.cause) == ("UNKNOWN", "script")
    assert "broker_failover.py:12" in v.reason
    events[-1]["kind"] = "expectation"
    v = decide(events, _meta(record))
    assert v.verdict == "FAIL" and "expectation" in v.reason


def test_every_cause_has_a_meaning():
    assert all(isinstance(k, str) and v for k, v in CAUSES.items())
    assert {"aborted", "harness-crash", "container-removed", "docker-error", "disk-full", "record-incomplete",
            "contract", "workload", "script"} <= set(CAUSES)


def test_every_cut_of_a_passing_record_is_record_incomplete_never_fail(record):
    """The record cut after any event (the harness killed there) is UNKNOWN(record-incomplete): missing reads
    never become lost writes, missing expectations never a failure."""
    events = _events(record)
    meta = _meta(record, record={"end_marker": True})
    n = len(events)
    for cut in sorted({0, 1, n - 1, *range(0, n, max(1, n // 60))}):
        v = decide(events[:cut], meta)
        assert (v.verdict, v.cause) == ("UNKNOWN", "record-incomplete"), (cut, v.reason)


def test_docs_list_exactly_the_causes():
    text = (Path(__file__).resolve().parents[2] / "docs" / "verdicts.md").read_text()
    causes_table = text.split("## Causes of UNKNOWN", 1)[1].split("\n## ", 1)[0]
    documented = {line.split("|")[1].strip().strip("`") for line in causes_table.splitlines()
                  if line.startswith("| `")} - {"cause"}       # the header row
    assert documented == set(CAUSES)


# -- coverage -------------------------------------------------------------------------------------------
def _producer_died_at(events, t):
    """The record as if the producer had died at ``t``: no send after it, so none of those values was read."""
    gone = {e["value"] for e in events if e["type"] == "client" and e.get("f") == "send" and e["t"] > t
            and e.get("phase") == "invoke"}
    ops = {(e["process"], e["op_id"]) for e in events if e["type"] == "client" and e.get("value") in gone}
    return [e for e in events if not (e["type"] == "client" and (e.get("value") in gone or (
        e.get("f") == "send" and (e.get("process"), e.get("op_id")) in ops)))]


def test_healthy_producer_covers_the_run(record):
    v = decide(_events(record), _meta(record))
    assert v.coverage["verdict"] == "PASS" and v.coverage["clients"]["p0"]["acked"] > 500
    assert v.to_dict()["coverage"] == v.coverage


def test_sends_that_stop_at_the_first_fault_are_unknown_workload_not_pass(record):
    events = _events(record)
    f = _fault(events, 1)
    events = _producer_died_at(events, f["t"] + 5)
    v = decide(events, _meta(record))
    assert (v.verdict, v.cause) == ("UNKNOWN", "workload"), v.reason
    assert "p0" in v.reason and "uncovered" in v.reason


def test_a_dead_producer_does_not_hide_data_loss(record):
    events = _events(record)
    events = _producer_died_at(events, _fault(events, 1)["t"] + 5)
    acked = {e["value"] for e in events if e["type"] == "client" and e["f"] == "send" and e["phase"] == "ok"}
    victim = next(e for e in events if e["type"] == "client" and e["f"] == "drain" and e["value"] in acked)
    events.remove(victim)
    assert decide(events, _meta(record)).verdict == "FAIL"


def test_a_container_found_gone_after_healing_is_container_removed_without_its_docker_event(record):
    # the runner skipped the full-ISR wait because a container no longer existed; the Docker events watcher
    # saw no removal (it may have stopped): the run is still undecided, never a PASS without that check
    events = _events(record)
    events.append({"seq": _next_seq(events), "t": 140.0, "wall": 0.0, "type": "phase",
                   "name": "progress.not_awaited", "reason": "kc-r53702c-b3 removed by something other than the harness"})
    assert [c for c, _ in environment_failures(events)] == ["container-removed"]
    v = decide(events, _meta(record))
    assert (v.verdict, v.cause) == ("UNKNOWN", "container-removed"), v.reason
    assert "kc-r53702c-b3" in v.reason


def test_the_phase_adds_nothing_when_the_removal_was_seen(record):
    events = _events(record)
    f = _fault(events, 1)
    other = f["nodes"][0].replace("-b2", "-b3")
    events.append(_docker_event(events, "destroy", other, f["t"] - 5, f["wall"] - 5))
    events.append({"seq": _next_seq(events), "t": 140.0, "wall": 0.0, "type": "phase",
                   "name": "progress.not_awaited", "reason": f"{other} removed by something other than the harness"})
    assert [c for c, _ in environment_failures(events)] == ["container-removed"]
