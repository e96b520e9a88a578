"""Several node ids served by one process (a distribution file's layout single-node,
docs/examples/kfake-3.toml): the cluster's nodes share one container, and the nemesis refuses a fault
that would reach one of them alone instead of pretending it did (no Docker: the cluster is not
started; the refusal comes before any container is touched)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster.cluster import Cluster, ClusterSpec
from harness.nemesis.fault_base import FaultError
from harness.nemesis.nemesis import Nemesis

ROOT = Path(__file__).resolve().parents[1]
KFAKE3 = ROOT / "docs" / "examples" / "kfake-3.toml"
GOOD = """
name = "vendor"
image = "vendor/broker:1"
layout = "replicated"
node_ids = [1, 2, 3]
[env]
VENDOR_ADVERTISED = "{advertised_host}:{port}"
"""


class Events:
    def __init__(self):
        self.items: list[tuple[str, dict]] = []

    def emit(self, kind: str, **fields) -> None:
        self.items.append((kind, fields))


def cluster(distribution: str) -> Cluster:
    cl = Cluster(ClusterSpec(distribution=distribution, name="onep"))
    ids = cl.distribution.broker_ids(3)
    cl.brokers = cl._broker_nodes(ids, [21001, 21002, 21003])
    return cl


def test_node_ids_of_one_process_share_its_container():
    cl = cluster(f"file:{KFAKE3}")
    assert {cl.brokers[b].name for b in cl.broker_ids} == {"kc-onep-b1"}
    assert [cl.brokers[b].host_port for b in cl.broker_ids] == [21001, 21002, 21003]
    assert [n.node_id for n in cl.broker_containers()] == [1]
    assert cl.sharing(cl.brokers[3]) == [1, 2, 3]


def test_separate_containers_share_nothing(tmp_path):
    f = tmp_path / "vendor.toml"
    f.write_text(GOOD)
    cl = cluster(f"file:{f}")
    assert [n.name for n in cl.broker_containers()] == ["kc-onep-b1", "kc-onep-b2", "kc-onep-b3"]
    assert cl.sharing(cl.brokers[2]) == []


@pytest.mark.parametrize("fault,target", [("kill", "broker:2"), ("pause", "broker:1"), ("stop", "broker:3")])
def test_the_nemesis_refuses_a_fault_on_one_node_id_of_a_shared_process(fault, target):
    cl = cluster(f"file:{KFAKE3}")
    ev = Events()
    nem = Nemesis(cl, recorder=ev, view=object())
    with pytest.raises(FaultError) as e:
        nem.apply(fault, target)
    assert str(e.value) == (f"{fault} on {target}: node ids 1,2,3 share one process, so a fault cannot reach one "
                            "node alone; this harness does not apply it")
    kinds = [k for k, _ in ev.items]
    assert kinds == ["fault.start", "fault.end"] and ev.items[1][1]["ok"] is False
    assert not nem.active




def test_a_process_fault_on_every_node_id_reaches_the_process_once_and_names_every_id(monkeypatch):
    cl = cluster(f"file:{KFAKE3}")
    kills = []
    for b in cl.broker_ids:
        monkeypatch.setattr(cl.brokers[b], "kill", lambda n=cl.brokers[b]: kills.append(n.node_id))
    ev = Events()
    nem = Nemesis(cl, recorder=ev, view=object())
    nem.apply("kill", "all-brokers", {"heal": "none"})
    assert kills == [1]                                  # one SIGKILL for the one process
    start = next(f for k, f in ev.items if k == "fault.start")
    assert start["broker_ids"] == [1, 2, 3] and start["nodes"] == ["kc-onep-b1"]


def test_a_network_fault_on_every_node_id_of_one_process_is_still_refused():
    cl = cluster(f"file:{KFAKE3}")
    nem = Nemesis(cl, recorder=Events(), view=object())
    with pytest.raises(FaultError, match="share one process"):
        nem.apply("isolate", "all-brokers")
