"""A real dynamic KRaft quorum (``apache-kraft-dynamic``, Kafka 4.4.0): 1 broker, 1 initial voter formatted
``--initial-controllers`` (kraft.version 1) and 2 spare controllers as observers; a spare is added and
removed with Kafka's ``kafka-metadata-quorum`` (harness/cluster/quorum_ops.py), and the metadata log read
afterwards holds the KRaftVersionRecord and one VotersRecord per change, which the voter-set rules Q1-Q7
(reference/kraft_voters.py) accept; the same log with a VotersRecord adding two voters at once is Q1.

Marked ``long`` (6 JVMs, ~60-90 s under load): ``PYTHONPATH=$PWD python3 -m pytest -p no:cacheprovider -n 0
-m long tests/integration/test_dynamic_quorum.py`` (hold a cluster slot). The grow / shrink / replace
scenarios: ``kafka-chaos run dynamic_quorum --distribution apache-kraft-dynamic --kafka-version 4.4.0``.
"""

from __future__ import annotations

import random

import pytest

from harness.cluster import quorum_ops
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.observer.kraft_history import read_kraft_history
from reference.kraft_voters import judge_voters

pytestmark = [pytest.mark.docker, pytest.mark.long]


def test_add_and_remove_a_controller_on_a_dynamic_quorum(kc_docker):
    spec = ClusterSpec(brokers=1, distribution="apache-kraft-dynamic", kafka_version="4.4.0", controllers=1,
                       name=f"dq{random.randrange(10**6)}")
    with Cluster(spec) as cl:
        assert [c.node_id for c in cl.controllers] == [101, 102, 103]
        st = quorum_ops.status(cl)
        assert {v["id"] for v in st["voters"]} == {101} and st["leader_id"] == 101
        assert {102, 103} <= {o["id"] for o in st["observers"]}
        quorum_ops.add_controller(cl, 102)
        assert set(quorum_ops.voters(cl)) == {101, 102}
        d102 = quorum_ops.voters(cl)[102]
        assert d102 == quorum_ops.directory_id(cl, 102)
        quorum_ops.remove_controller(cl, 102, d102)
        assert set(quorum_ops.voters(cl)) == {101}
        hist = read_kraft_history(cl)
    meta = hist.events
    kv = [e["level"] for e in meta if e["type"] == "meta.kraft_version"]
    sets = [sorted(v["id"] for v in e["voters"]) for e in meta if e["type"] == "meta.voters"]
    assert kv == [1]
    assert sets[0] == [101] and [101, 102] in sets and sets[-1] == [101]
    found = []
    stats = judge_voters([], meta, lambda rule, ev, msg, key=None: found.append((rule, msg)))
    assert found == [] and stats["voter_set"] == [101] and stats["voter_changes"] >= 2
    # negative control: the real log with a VotersRecord that adds two voters at once
    last = max(e["offset"] for e in meta)
    bad = dict(next(e for e in meta if e["type"] == "meta.voters"), offset=last + 1)
    bad["voters"] = bad["voters"] + [{"id": 102, "directory_id": "x", "endpoints": []},
                                     {"id": 103, "directory_id": "y", "endpoints": []}]
    judge_voters([], meta + [bad], lambda rule, ev, msg, key=None: found.append((rule, msg)))
    assert [r for r, _ in found] == ["Q1"]
