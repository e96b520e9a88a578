"""Client health and coverage on a real cluster (1 ZooKeeper, 2 brokers), through harness.runner.execute.

- A producer ended mid-run by the nemesis's ``client_crash`` (while a broker is paused) records
  ``client.life`` died; the run's verdict is UNKNOWN(workload) naming p0 and the fault window it left
  uncovered, and verdict.json carries that coverage.
- The same scenario with a healthy producer: PASS with ``coverage`` in verdict.json, and the record holds
  the idempotent producer's id and epoch (``client.producer_id``) as librdkafka's statistics reported them.
"""

from __future__ import annotations

import json

import pytest

from harness.checkers.coverage import check_coverage
from harness.record import read_run
from harness.runner import execute
from harness.scenario.scenario import Scenario, TopicSpec

pytestmark = pytest.mark.docker


def _scenario(crash: bool) -> Scenario:
    def script(ctx):
        assert ctx.nemesis.workload is not None      # the runner hands its workload to the nemesis
        ctx.sleep(2)
        h = ctx.fault("pause", "broker:2")
        ctx.sleep(3)
        if crash:
            ctx.fault("client_crash", "p0")
        ctx.sleep(3)
        ctx.heal(h)
        ctx.sleep(7)          # the default settle time (5 s) after the last heal, with room

    return Scenario(name="client_health.crash" if crash else "client_health.healthy",
                    description="p0 writes through a paused broker" + (", and is ended mid-run" if crash else ""),
                    script=script, tags=("pytest",), brokers=2, zookeepers=1,
                    topics=[TopicSpec("cov", 2, 2)],
                    workload={"topic": "cov", "partitions": 2, "rate": 50.0, "assign_consumers": 1},
                    max_duration_s=90.0)


def _life(rec, process):
    return [e for e in rec.of_type("client.life") if e.get("process") == process]


def test_crashed_producer_leaves_the_fault_window_uncovered(kc_image, tmp_path):
    out = execute(_scenario(True), runs_dir=tmp_path, image=kc_image.tag, distribution="apache-zk", suite="pytest")
    rec = read_run(out.path)
    crash = [e for e in rec.of_type("fault.start") if e.get("fault") == "client_crash"]
    assert crash and crash[0]["target"] == "p0"
    died = [e for e in _life(rec, "p0") if e["state"] == "died"]
    assert len(died) == 1 and "client_crash" in died[0]["error"], _life(rec, "p0")
    assert died[0]["t"] >= crash[0]["t"]
    cov = check_coverage(rec.events, rec.metadata)
    assert cov["verdict"] == "UNKNOWN", cov
    first = cov["shortfalls"][0]
    assert "producer p0" in first and "client_crash" in first and "#1 pause broker:2" in first, first
    assert (out.verdict, out.cause) == ("UNKNOWN", "workload"), out.reason
    assert "producer p0" in out.reason and "#1 pause broker:2" in out.reason, out.reason
    v = json.loads((out.path / "verdict.json").read_text())
    assert (v["verdict"], v["cause"]) == ("UNKNOWN", "workload")
    assert v["coverage"]["shortfalls"] == cov["shortfalls"]
    # every invoke of the crashed producer still has its completion (purged sends stay unsure)
    sends = [e for e in rec.of_type("client") if e.get("f") == "send" and e.get("process") == "p0"]
    inv = {e["op_id"] for e in sends if e["phase"] == "invoke"}
    done = {e["op_id"] for e in sends if e["phase"] != "invoke"}
    assert inv == done


def test_healthy_producer_covers_the_run_and_records_its_producer_id(kc_image, tmp_path):
    out = execute(_scenario(False), runs_dir=tmp_path, image=kc_image.tag, distribution="apache-zk", suite="pytest")
    rec = read_run(out.path)
    cov = check_coverage(rec.events, rec.metadata)
    assert cov["verdict"] == "PASS", cov["reason"]
    (w,) = cov["windows"]
    assert w["fault"] == "pause" and w["writes"]["invoke"] > 50
    assert all(n > 0 for n in cov["acked_after_heal"].values()), cov["acked_after_heal"]
    states = [e["state"] for e in _life(rec, "p0")]
    assert states[0] == "started" and states[-1] == "stopped" and "died" not in states, states
    assert [e["state"] for e in _life(rec, "c0")][:1] == ["started"]
    pids = [e for e in rec.of_type("client.producer_id") if e["process"] == "p0"]
    assert pids and pids[0]["producer_id"] >= 0 and pids[0]["producer_epoch"] >= 0, pids
    assert out.verdict == "PASS", out.reason
    v = json.loads((out.path / "verdict.json").read_text())
    assert v["verdict"] == "PASS" and v["coverage"]["verdict"] == "PASS" and v["coverage"]["windows"], v
