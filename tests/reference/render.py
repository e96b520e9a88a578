"""Render model writes as run-record events (docs/run-record.md), e.g. to feed the checker with
histories produced by the model (property tests, benchmark).

``Renderer`` keeps ``seq`` and ``t`` counters across steps. Events that make the model's inputs
visible to the checker are rendered too: a graceful ``fault.start`` (``stop``) before a controlled
shutdown, ``action`` events for reassignments, unclean elections and config changes.
"""

from __future__ import annotations

from reference import model_events as m
from reference.context import Write
from reference.profiles import GATE_KIP455, GATE_RECOVERY


class Renderer:
    def __init__(self, version=(3, 9)):
        self.version = tuple(version)
        self.seq = 0
        self.events: list[dict] = []
        self._fault_id = 0

    def _add(self, type_: str, **fields) -> dict:
        ev = {"seq": self.seq, "t": self.seq * 0.001, "wall": 1.7e9 + self.seq * 0.001, "type": type_, **fields}
        self.seq += 1
        self.events.append(ev)
        return ev

    def event_inputs(self, ev) -> None:
        """Non-ZooKeeper events describing a model input (rendered before its writes)."""
        if isinstance(ev, m.ControlledShutdown):
            self._fault_id += 1
            self._add("fault.start", fault_id=self._fault_id, fault="stop", target=f"broker:{ev.broker}",
                      nodes=[f"kafka-{ev.broker}"], broker_ids=[ev.broker], params={})
        elif isinstance(ev, m.Reassign):
            action = "cancel_reassign" if ev.target is None else "reassign"
            self._add("action", action=action, params={"partitions": [
                {"topic": ev.topic, "partition": ev.partition,
                 "replicas": None if ev.target is None else list(ev.target)}]}, ok=True, error=None)
        elif isinstance(ev, m.ElectUnclean):
            self._add("action", action="elect_unclean", params={"partitions": [
                {"topic": t, "partition": p} for t, p in ev.partitions]}, ok=True, error=None)
        elif isinstance(ev, m.ElectPreferred):
            self._add("action", action="elect_preferred", params={}, ok=True, error=None)
        elif isinstance(ev, m.SetUnclean):
            params = {"config": {"unclean.leader.election.enable": "true" if ev.enabled else "false"}}
            if ev.topic is not None:
                params["topic"] = ev.topic
            self._add("action", action="set_config", params=params, ok=True, error=None)

    def writes(self, writes: list[Write]) -> None:
        for w in writes:
            self.write(w)

    def write(self, w: Write) -> dict:
        base = {"zxid": w.zxid, "source": "txnlog"}
        if w.kind == "broker":
            registered, epoch = w.value
            return self._add("zk.broker", broker_id=w.key, registered=registered, broker_epoch=epoch, **base)
        if w.kind == "controller":
            return self._add("zk.controller", broker_id=w.value, **base)
        if w.kind == "controller_epoch":
            epoch, version = w.value
            return self._add("zk.controller_epoch", epoch=epoch, version=version, **base)
        if w.kind == "topic":
            topic_id, assignments, version, deleted = w.value
            fields = {"topic": w.key, "topic_id": topic_id,
                      "partitions": {str(p): list(a.rs) for p, a in assignments}, "version": version,
                      "deleted": deleted}
            if self.version >= GATE_KIP455:
                fields["adding_replicas"] = {str(p): list(a.ar) for p, a in assignments if a.ar}
                fields["removing_replicas"] = {str(p): list(a.rr) for p, a in assignments if a.rr}
            return self._add("zk.topic", **fields, **base)
        if w.kind == "partition_state":
            topic, p = w.key
            st = w.value
            if st is None:
                return self._add("zk.partition_state", topic=topic, partition=p, leader=-1, leader_epoch=-1,
                                 isr=[], controller_epoch=-1, version=-1, deleted=True, **base)
            fields = {"topic": topic, "partition": p, "leader": st.leader, "leader_epoch": st.leader_epoch,
                      "isr": list(st.isr), "controller_epoch": st.controller_epoch, "version": st.version,
                      "deleted": False}
            if self.version >= GATE_RECOVERY:
                fields["leader_recovery_state"] = st.recovery
            return self._add("zk.partition_state", **fields, **base)
        if w.kind == "reassign_partitions":
            parts = None if w.value is None else [
                {"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in sorted(w.value.items())]
            return self._add("zk.reassign_partitions", partitions=parts, **base)
        if w.kind == "delete_topics":
            return self._add("zk.delete_topics", topics=list(w.value), **base)
        raise ValueError(f"cannot render write kind {w.kind!r}")


def metadata_for(config, profile: str) -> dict:
    """Minimal run metadata matching a model configuration."""
    return {"schema_version": 1, "kafka_version": f"{config.version[0]}.{config.version[1]}",
            "profile": profile, "distribution": "apache-zk",
            "broker_config": {"unclean.leader.election.enable": "true" if config.unclean_default else "false"},
            "topics": []}
