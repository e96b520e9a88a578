"""Shared helpers for the reference-model tests: boot a model cluster, build run-record histories."""

from __future__ import annotations


from reference.model import ControllerModel
from reference.model_events import BrokerStartup, ControllerElected, CreateTopic
from reference.state import ClusterState, LeaderAndIsr, ModelConfig


def boot(version=(3, 9), brokers=(1, 2, 3), controller=1, topics=None, unclean=False):
    """A model cluster with ``brokers`` registered, ``controller`` elected, ``topics`` created.

    ``topics``: {name: {partition: [replicas]}}. Returns (model, state)."""
    m = ControllerModel(ModelConfig(version=tuple(version), unclean_default=unclean))
    s = m.initial_state()
    for b in brokers:
        s = only(m.step(s, BrokerStartup(b))).state
    if controller is not None:
        s = only(m.step(s, ControllerElected(controller))).state
    for name, parts in (topics or {}).items():
        s = only(m.step(s, CreateTopic(name, tuple((p, tuple(rs)) for p, rs in parts.items())))).state
    return m, s


def only(outcomes):
    assert len(outcomes) == 1, f"expected a deterministic outcome, got {len(outcomes)}"
    assert outcomes[0].error is None, outcomes[0].error
    return outcomes[0]


def set_partition(s: ClusterState, tp, leader, isr, le, version=None, ce=None):
    """Overwrite one partition state (to start a test from the spec's worked-example numbers)."""
    old = s.partitions[tp]
    s.partitions[tp] = LeaderAndIsr(leader, le, tuple(isr), old.controller_epoch if ce is None else ce,
                                    old.recovery, old.version if version is None else version)


def state_writes(outcome, tp=None):
    return [w.value for w in outcome.writes if w.kind == "partition_state" and (tp is None or w.key == tp)]


class History:
    """Hand-written run-record event histories: each helper appends one event with the next seq/zxid."""

    def __init__(self):
        self.events: list[dict] = []
        self.zxid = 0
        self.wall = 1.7e9          # every event happens at ``wall``; ``wait`` moves it on

    def wait(self, seconds: float):
        self.wall += seconds
        return self

    def _add(self, type_, same_txn=False, **f):
        if type_.startswith("zk.") and not same_txn:
            self.zxid += 1
        ev = {"seq": len(self.events), "t": len(self.events) * 0.1, "wall": self.wall, "type": type_, **f}
        if type_.startswith("zk."):
            ev.update(zxid=self.zxid, source="txnlog")
        self.events.append(ev)
        return self

    def broker(self, b, up=True):
        return self._add("zk.broker", broker_id=b, registered=up, broker_epoch=self.zxid + 1 if up else None)

    def controller(self, b, epoch):
        self._add("zk.controller", broker_id=b)
        return self._add("zk.controller_epoch", same_txn=True, epoch=epoch, version=epoch)

    def controller_gone(self):
        return self._add("zk.controller", broker_id=None)

    def epoch(self, epoch, version):
        return self._add("zk.controller_epoch", epoch=epoch, version=version)

    def topic(self, name, parts, adding=None, removing=None, version=0, topic_id="tid"):
        return self._add("zk.topic", topic=name, topic_id=topic_id,
                         partitions={str(p): list(r) for p, r in parts.items()},
                         adding_replicas={str(p): list(r) for p, r in (adding or {}).items()},
                         removing_replicas={str(p): list(r) for p, r in (removing or {}).items()},
                         version=version, deleted=False)

    def state(self, topic, p, leader, le, isr, version, ce=1, rec=0, **extra):
        return self._add("zk.partition_state", topic=topic, partition=p, leader=leader, leader_epoch=le,
                         isr=list(isr), controller_epoch=ce, leader_recovery_state=rec, version=version,
                         deleted=False, **extra)

    def fault(self, fault, brokers, **params):
        return self._add("fault.start", fault_id=len(self.events), fault=fault, target=f"broker:{brokers[0]}",
                         nodes=[f"kafka-{b}" for b in brokers], broker_ids=list(brokers), params=params)

    def zk_fault(self, fault="zk_kill", nodes=("kc-x-zk1",)):
        return self._add("fault.start", fault_id=len(self.events), fault=fault, target="zookeeper",
                         nodes=list(nodes), broker_ids=[], params={})

    def last_fault_id(self):
        return [e for e in self.events if e["type"] == "fault.start"][-1]["fault_id"]

    def heal(self, fault_id):
        return self._add("fault.end", fault_id=fault_id, fault="?", nodes=[], ok=True, error=None)

    def sample(self):
        """An Admin-API sample with nothing in it: an event that shows the record goes on."""
        return self._add("admin.metadata", controller_id=None, brokers=[], partitions=[])

    def action(self, action, **params):
        return self._add("action", action=action, params=params, ok=True, error=None)

    def delete_marker(self, topics):
        return self._add("zk.delete_topics", topics=list(topics))

    def gap(self, path):
        return self._add("zk.gap", path=path, missing_versions=[])


def started_history(brokers=(1, 2, 3), controller=1, rs=(1, 2, 3)):
    """Brokers registered, a controller with epoch 1, topic t with one partition led by rs[0]."""
    h = History()
    for b in brokers:
        h.broker(b)
    h.epoch(0, 0)
    h.controller(controller, 1)
    h.topic("t", {0: rs})
    h.state("t", 0, rs[0], 0, rs, 0)
    return h
