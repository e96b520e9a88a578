"""Seeded schedules: determinism, JSON round trip through metadata.json, validation errors."""

from __future__ import annotations

import json

import pytest

from harness.scenario.schedule import (Schedule, ScheduleError, generate_schedule, load_schedule,
                              parse_mix)

MIX = {
    "length": 300, "interval": [2, 6], "duration": [3, 12],
    "faults": {"kill": 1, "pause": {"weight": 2, "targets": ["follower(orders,0)", "controller"]},
               "partition": 0.5, "isolate": {"weight": 1, "params": {"clients": True}},
               "delete_controller_znode": 0.3, "zk_expire_session": 0.2, "netem": 0.5},
}


def test_same_seed_gives_identical_schedule():
    a = generate_schedule(42, MIX)
    b = generate_schedule(42, json.loads(json.dumps(MIX)))
    assert len(a) > 10
    assert a.to_json() == b.to_json()
    assert a.dumps() == b.dumps()


def test_different_seed_gives_different_schedule():
    schedules = {generate_schedule(s, MIX).dumps() for s in range(20)}
    assert len(schedules) == 20


def test_mix_order_does_not_matter():
    reordered = dict(MIX, faults=dict(reversed(list(MIX["faults"].items()))))
    assert generate_schedule(7, MIX).to_json() == generate_schedule(7, reordered).to_json()


def test_generated_items_respect_the_mix():
    s = generate_schedule(3, MIX)
    prev_end = 0.0
    for it in s:
        assert it.fault in MIX["faults"]
        assert it.at >= prev_end + 2 - 1e-9           # quiet interval after the previous heal
        assert it.at + it.duration <= 300
        if it.fault in ("delete_controller_znode", "zk_expire_session"):
            assert it.duration == 0                   # instant faults
        else:
            assert 3 <= it.duration <= 12
        if it.fault == "pause":
            assert it.target in ("follower(orders,0)", "controller")
        if it.fault == "isolate":
            assert it.params == {"clients": True}
        if it.fault == "netem":
            assert it.params == {"delay_ms": 100, "jitter_ms": 20}
        prev_end = it.at + it.duration
    assert {it.fault for it in s} >= {"kill", "pause", "partition"}


def test_zero_weight_fault_never_drawn_and_max_faults_bounds():
    s = generate_schedule(1, {"length": 1000, "interval": [1, 1], "duration": [1, 1], "max_faults": 5,
                              "faults": {"kill": 1, "pause": 0}})
    assert len(s) == 5
    assert {it.fault for it in s} == {"kill"}


def test_json_round_trip_through_metadata(tmp_path):
    s = generate_schedule(99, MIX)
    run = tmp_path / "20250101T000000Z-x-abcdef"
    run.mkdir()
    (run / "metadata.json").write_text(json.dumps({"seed": s.seed, "schedule": s.to_json()}))
    loaded = load_schedule(run)
    assert loaded.seed == 99
    assert loaded.items == s.items
    assert loaded.to_json() == s.to_json()
    assert load_schedule(run / "metadata.json").items == s.items


def _write(tmp_path, meta) -> str:
    d = tmp_path / "run"
    d.mkdir(exist_ok=True)
    (d / "metadata.json").write_text(meta if isinstance(meta, str) else json.dumps(meta))
    return str(d)


GOOD = {"at": 1.5, "fault": "kill", "target": "controller", "duration": 4, "params": {}}


@pytest.mark.parametrize("meta, message", [
    ("{not json", "not valid JSON"),
    ([1, 2], "expected a JSON object"),
    ({"seed": 1}, "has no 'schedule'"),
    ({"seed": 1, "schedule": None}, "'schedule' is null"),
    ({"seed": 1, "schedule": {"at": 1}}, "expected a list"),
    ({"seed": "x", "schedule": []}, "seed must be an integer"),
    ({"schedule": [GOOD, "kill"]}, "schedule[1]: expected an object"),
    ({"schedule": [dict(GOOD, at=-1)]}, "schedule[0].at: expected a number >= 0"),
    ({"schedule": [dict(GOOD, at=True)]}, "schedule[0].at"),
    ({"schedule": [dict(GOOD, duration="5")]}, "schedule[0].duration"),
    ({"schedule": [dict(GOOD, fault="explode")]}, "schedule[0].fault: unknown fault 'explode'"),
    ({"schedule": [dict(GOOD, target="leader(t)")]}, "schedule[0].target"),
    ({"schedule": [dict(GOOD, target="brokers:1")]}, "cannot parse 'brokers:1'"),
    ({"schedule": [dict(GOOD, params={"signal": 9})]}, "unknown parameter 'signal'"),
    ({"schedule": [dict(GOOD, params=[1])]}, "params must be an object"),
    ({"schedule": [{"at": 1, "fault": "kill", "target": "controller"}]}, "missing field(s) ['duration']"),
    ({"schedule": [dict(GOOD, when=3)]}, "unknown field(s) ['when']"),
    ({"schedule": [dict(GOOD, fault="isolate", params={"links": ["wifi"]})]}, "unknown link 'wifi'"),
])
def test_malformed_schedules_are_reported_clearly(tmp_path, meta, message):
    with pytest.raises(ScheduleError) as e:
        load_schedule(_write(tmp_path, meta))
    assert message in str(e.value)
    assert "metadata.json" in str(e.value)


def test_missing_run_dir_and_metadata(tmp_path):
    with pytest.raises(ScheduleError, match="no such run record"):
        load_schedule(tmp_path / "nope")
    with pytest.raises(ScheduleError, match="metadata.json: missing"):
        load_schedule(tmp_path)


def test_empty_schedule_is_valid(tmp_path):
    assert len(load_schedule(_write(tmp_path, {"seed": None, "schedule": []}))) == 0


def test_items_are_sorted_by_time():
    s = Schedule.from_json([dict(GOOD, at=5), dict(GOOD, at=1)])
    assert [i.at for i in s] == [1, 5]
    assert s.end == 9


@pytest.mark.parametrize("mix, message", [
    ({"faults": {}}, "non-empty object"),
    ({"faults": {"kill": 0}}, "at least one weight must be > 0"),
    ({"faults": {"kill": -1}}, "weight: expected a number >= 0"),
    ({"faults": {"teleport": 1}}, "unknown fault"),
    ({"faults": {"kill": 1}, "interval": [5, 1]}, "min 5 is greater than max 1"),
    ({"faults": {"kill": 1}, "length": 0}, "must be > 0"),
    ({"faults": {"kill": 1}, "max_faults": 0}, "max_faults"),
    ({"faults": {"kill": {"targets": ["leader(t,x)"]}}}, "targets[0]"),
    ({"faults": {"kill": {"wieght": 1}}}, "unknown key(s) ['wieght']"),
    ({"faults": {"kill": 1}, "lenght": 5}, "unknown key(s) ['lenght']"),
])
def test_malformed_mix(mix, message):
    with pytest.raises(ScheduleError) as e:
        parse_mix(mix)
    assert message in str(e.value)


def test_seed_must_be_an_integer():
    with pytest.raises(ScheduleError, match="seed must be an integer"):
        generate_schedule("42", MIX)


# -- one mix for every distribution (harness.scenario.schedule.for_roles) ----------------------------------------------
ZK_ROLES, KRAFT_ROLES = ("broker", "zookeeper"), ("broker", "controller")


def test_for_roles_drops_faults_and_targets_a_cluster_cannot_have():
    from harness.scenario.schedule import for_roles
    mix = {"length": 60, "faults": {"kill": {"targets": ["random-broker", "quorum-leader", "random-zk"]},
                                    "zk_expire_session": 1, "delete_controller_znode": 1,
                                    "pause": {"targets": ["quorum-follower"]}}}
    zk = for_roles(mix, ZK_ROLES)
    assert sorted(zk.faults) == ["delete_controller_znode", "kill", "zk_expire_session"]
    assert zk.faults["kill"].targets == ("random-broker", "random-zk")
    kr = for_roles(mix, KRAFT_ROLES)
    assert sorted(kr.faults) == ["kill", "pause"]
    assert kr.faults["kill"].targets == ("random-broker", "quorum-leader")
    with pytest.raises(ScheduleError, match="no fault left for a cluster with roles broker, controller"):
        for_roles({"faults": {"zk_kill": 1}}, KRAFT_ROLES)


def test_a_zookeeper_schedule_is_unchanged_by_quorum_targets_in_the_mix():
    """Listing KRaft-only targets must not move a ZooKeeper-mode run's draws (stored seeds stay meaningful)."""
    from suites.scenarios.nightly import MIXED
    zk_only = {**MIXED, "faults": {
        name: {**spec, "targets": [t for t in spec["targets"] if not t.startswith("quorum-")]} if "targets" in spec
        else spec for name, spec in MIXED["faults"].items()}}
    for seed in range(20):
        assert generate_schedule(seed, MIXED, ZK_ROLES).to_json() == generate_schedule(seed, zk_only).to_json()
    kraft = {(i.fault, i.target) for seed in range(20) for i in generate_schedule(seed, MIXED, KRAFT_ROLES)}
    assert not any(f.startswith("zk_") or f == "delete_controller_znode" or "zk" in t for f, t in kraft)
    assert {t for _, t in kraft} >= {"quorum-leader", "quorum-follower"}
