"""Scenarios on a KRaft cluster, observed through the Kafka protocol only and judged with the
kraft-<version> profile (issue 8: "A KRaft cluster runs the broker-failover, controller-failover and
reassignment scenarios with the KRaft profile and passes")."""

from __future__ import annotations

import pytest

from harness.record import read_run
from harness.runner import execute
from suites.catalog import scenarios_for

pytestmark = pytest.mark.docker


def _run(name, kc_image, tmp_path):
    out = execute(scenarios_for(name)[0], runs_dir=tmp_path, image=kc_image.tag, suite="pytest",
                  distribution="apache-kraft")
    rec = read_run(out.path)
    assert out.verdict == "PASS", f"{name} on KRaft: {out.reason} ({out.path})"
    assert rec.metadata["distribution"] == "apache-kraft" and rec.metadata["cluster"]["zookeepers"] == 0
    assert rec.metadata["profile"].startswith("kraft-")
    assert not rec.of_type("zk.partition_state", "zk.controller")           # no ZooKeeper anywhere
    conf = rec.verdict["checks"]["conformance"]
    assert conf["stats"]["samples"] > 0 and conf["stats"]["quorum_samples"] > 0
    return rec, conf


def test_kill_leader_on_kraft(kc_image, tmp_path):
    rec, conf = _run("broker_failover.kill_leader", kc_image, tmp_path)
    assert conf["stats"]["leader_changes"] >= 1 and conf["stats"]["elections_judged"] >= 1
    assert rec.verdict["checks"]["durability"]["verdict"] == "PASS"


@pytest.mark.conformance
@pytest.mark.parametrize("name", ["broker_failover.stop_leader", "controller_failover.kill_controller",
                                  "reassignment.move_replicas"])
def test_family_on_kraft(name, kc_image, tmp_path):
    rec, conf = _run(name, kc_image, tmp_path)
    if name.startswith("controller_failover"):
        assert conf["stats"]["quorum_leader_changes"] >= 1


def test_quorum_kill_leader_on_kraft(kc_image, tmp_path):
    """The quorum family's cheapest run (about 40 s at low load): the active controller killed, a new
    quorum leader named by DescribeQuorum and by a LeaderChange record in the metadata log (§9.1).
    The whole family: `kafka-chaos run quorum --distribution apache-kraft --parallel 1` (docs/kraft.md)."""
    rec, conf = _run("quorum.kill_leader", kc_image, tmp_path)
    assert conf["stats"]["quorum_leader_changes"] >= 1
    expects = {e["what"]: e["ok"] for e in rec.of_type("expect")}
    assert any(w.startswith("the metadata log records the new quorum leader") and ok for w, ok in expects.items())
