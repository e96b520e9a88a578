"""Synthetic run records, for the report tests, fixtures and the scaling benchmark.

Records follow docs/run-record.md (schema version 1). Two producers:

* :class:`RunBuilder` writes one hand-designed record (used by
  ``tests/fixtures/make_fixture_runs.py`` to build fixtures with known numbers);
* :func:`bulk_runs` writes many plausible records quickly (used by
  ``benchmarks/report_scaling.py``).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

from reference import versions

DEFAULT_TOPIC = "t"


def _dump(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True)


class RunBuilder:
    """Accumulates the events of one synthetic run and writes its record directory.

    Times are given explicitly (seconds since run start) so tests know every number.
    """

    def __init__(self, run_id: str, *, suite: str = "smoke", scenario: str = "broker_failover.kill_leader",
                 kafka_version: str | None = "3.9.0", broker_image: str | None = None,
                 harness_version: str = "0.1.0", profile: str | None = None, seed: int | None = 1,
                 acks: str | None = "all", min_isr: str | None = "2", unclean: str | None = "false",
                 started_at: str = "2025-06-01T02:00:00Z", schedule: list | None = None,
                 partitions: int = 1, replication_factor: int = 3):
        self.run_id = run_id
        image = broker_image or f"kafka-chaos/kafka:{kafka_version or 'generic'}"
        topic_cfg = {}
        if min_isr is not None:
            topic_cfg["min.insync.replicas"] = min_isr
        broker_cfg = {}
        if unclean is not None:
            broker_cfg["unclean.leader.election.enable"] = unclean
        workload = {"rate": 100, "duration_s": 30, "enable_idempotence": False}
        if acks is not None:
            workload["acks"] = acks
        self.metadata: dict = {
            "schema_version": 1, "run_id": run_id, "suite": suite, "scenario": scenario,
            "harness_version": harness_version, "git_sha": None, "kafka_version": kafka_version,
            "broker_image": image, "image_id": None,
            "distribution": "apache-zk" if kafka_version else "generic",
            "profile": profile or (f"apache-zk-{versions.series_name(kafka_version)}" if kafka_version
                                   else "compatible"),
            "cluster": {"brokers": 3, "zookeepers": 1}, "broker_config": broker_cfg,
            "topics": [{"name": DEFAULT_TOPIC, "partitions": partitions,
                        "replication_factor": replication_factor, "config": topic_cfg}],
            "workload": workload, "seed": seed, "schedule": schedule or [],
            "host": {"hostname": "synthetic", "platform": "linux", "cpus": 2, "python": "3.11",
                     "docker_version": None},
            "started_at": started_at, "ended_at": started_at, "replay_of": None,
        }
        self.events: list[dict] = []
        self._op = 0
        self._fault = 0

    # -- events ---------------------------------------------------------------------------
    def emit(self, t: float, type_: str, **fields: Any) -> "RunBuilder":
        ev = {"t": float(t), "wall": 1748743200.0 + t, "type": type_}
        ev.update(fields)
        self.events.append(ev)
        return self

    def phase(self, t: float, name: str) -> "RunBuilder":
        return self.emit(t, "phase", name=name)

    def pstate(self, t: float, leader: int, epoch: int, isr: list[int], partition: int = 0,
               topic: str = DEFAULT_TOPIC, zxid: int | None = None) -> "RunBuilder":
        return self.emit(t, "zk.partition_state", topic=topic, partition=partition, leader=leader,
                         leader_epoch=epoch, isr=list(isr), controller_epoch=1, leader_recovery_state=0,
                         version=epoch, deleted=False, zxid=zxid if zxid is not None else int(t * 1000),
                         source="watch")

    def fault(self, t: float, kind: str, broker_ids: list[int], target: str | None = None,
              end: float | None = None) -> "RunBuilder":
        fid = self._fault
        self._fault += 1
        nodes = [f"kafka-{b}" for b in broker_ids]
        self.emit(t, "fault.start", fault_id=fid, fault=kind, target=target or f"broker:{broker_ids[0]}",
                  nodes=nodes, broker_ids=list(broker_ids), params={})
        if end is not None:
            self.emit(end, "fault.end", fault_id=fid, fault=kind, nodes=nodes, ok=True, error=None)
        return self

    def send(self, t: float, outcome: str = "ok", dt: float = 0.01, partition: int = 0,
             offset: int | None = None) -> "RunBuilder":
        op = self._op
        self._op += 1
        value = f"v{op}"
        self.emit(t, "client", process="p0", f="send", phase="invoke", op_id=op, topic=DEFAULT_TOPIC,
                  partition=None, offset=None, value=value, error=None, leader_epoch=None)
        self.emit(t + dt, "client", process="p0", f="send", phase=outcome, op_id=op, topic=DEFAULT_TOPIC,
                  partition=partition if outcome == "ok" else None,
                  offset=(op if offset is None else offset) if outcome == "ok" else None, value=value,
                  error=None if outcome == "ok" else ("NOT_ENOUGH_REPLICAS" if outcome == "fail" else "timeout"),
                  leader_epoch=None)
        return self

    def sends(self, times: list[float], outcome: str = "ok") -> "RunBuilder":
        for t in times:
            self.send(t, outcome)
        return self

    # -- writing --------------------------------------------------------------------------
    def write(self, root: str | os.PathLike, verdict: str, reason: str = "", checks: dict | None = None,
              *, events_text: str | None = None, skip: tuple[str, ...] = (), cause: str | None = None,
              extra: dict | None = None, with_evidence: bool = True) -> Path:
        """Write metadata.json, events.jsonl and verdict.json (files named in ``skip`` are left out).

        The verdict is the one given, whatever the events say (the report fixtures choose their numbers
        by hand); ``with_evidence`` adds verdict.json ``evidence`` (the files' digests, this harness
        version), so that ``report --trust-stored`` takes the given verdict as stored.

        ``cause`` (for UNKNOWN) and ``extra`` (more top-level sections, e.g. ``coverage``) go into
        verdict.json only when given."""
        d = Path(root) / self.run_id
        d.mkdir(parents=True, exist_ok=True)
        if "metadata.json" not in skip:
            (d / "metadata.json").write_text(json.dumps(self.metadata, indent=2, sort_keys=True) + "\n")
        if "events.jsonl" not in skip:
            if events_text is None:
                evs = sorted(self.events, key=lambda e: e["t"])
                lines = []
                for seq, ev in enumerate(evs):
                    ev = {"seq": seq, **ev}
                    lines.append(_dump(ev))
                events_text = "\n".join(lines) + ("\n" if lines else "")
            (d / "events.jsonl").write_text(events_text)
        if "verdict.json" not in skip:
            body = {"schema_version": 1, "verdict": verdict, "reason": reason or verdict.lower(),
                    "checks": checks if checks is not None else {}, "stats": {}, **(extra or {})}
            if cause is not None:
                body["cause"] = cause
            if with_evidence:     # the digests of the files as written, as the runner records them
                from harness import __version__
                from harness.record.writer import evidence
                body.setdefault("evidence", evidence(d, __version__))
            (d / "verdict.json").write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
        return d


def durability_checks(lost: int = 0, duplicates: int = 0, inconsistent: int = 0, *, nested: bool = True,
                      divergences: list[str] | None = None) -> dict:
    """A verdict.json ``checks`` object as the durability and conformance checkers write it."""
    def one(n: int) -> dict:
        return {"verdict": "FAIL" if n else "PASS", "count": n}
    dur = {"lost": one(lost), "duplicates": one(duplicates), "inconsistent_offsets": one(inconsistent)}
    checks: dict = {}
    if nested:
        checks["durability"] = {"verdict": "FAIL" if (lost or duplicates or inconsistent) else "PASS", **dur}
    else:
        checks.update(dur)
    if divergences is not None:
        checks["conformance"] = {"verdict": "FAIL" if divergences else "PASS",
                                 "divergences": [{"rule": r, "explanation": f"synthetic {r}"}
                                                 for r in divergences]}
    return checks


# -- bulk generation for the benchmark -------------------------------------------------------
_SCENARIOS = [("smoke", "broker_failover.kill_leader", "kill"), ("chaos", "network.isolate_leader", "isolate"),
              ("chaos", "zk.expire_session", "zk_expire_session"), ("nightly", "random.mixed", "pause"),
              ("conformance", "controller.failover", "delete_controller_znode")]
_VERSIONS = ["3.6.2", "3.7.2", "3.8.1", "3.9.0"]


def bulk_runs(root: str | os.PathLike, n: int, seed: int = 0, sends: int = 20, first: int = 0,
              judged: bool = True) -> Path:
    """Write ``n`` plausible run records under ``root`` quickly (string templates, no builder),
    numbered from ``first`` (run ids differ between calls with disjoint numbers).

    Each run has ~``3*sends + 15`` events, in time order: a leader kill-like fault, a leader election,
    an ISR shrink and restore, acknowledged sends spread over the run, and a final drain. About 10%
    lose 1-5 acknowledged writes (their drain misses them: FAIL), 3% record an environment failure
    (UNKNOWN). The records are self-consistent: with ``judged`` (the default) each verdict.json is what
    the checkers decide from its events (:func:`harness.checkers.verdict.decide`, as the runner writes
    it, with the evidence digests), so a report re-deriving the outcomes finds nothing tampered.
    """
    from harness import __version__
    from harness.checkers.verdict import decide
    from harness.record.writer import evidence

    rng = random.Random(seed)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(first, first + n):
        suite, scenario, kind = _SCENARIOS[i % len(_SCENARIOS)]
        ver = _VERSIONS[(i // len(_SCENARIOS)) % len(_VERSIONS)]
        day = 1 + (i % 28)
        run_id = f"202506{day:02d}T020000Z-{scenario}-{i:06x}"
        d = root / run_id
        d.mkdir()
        r = rng.random()
        verdict = "UNKNOWN" if r < 0.03 else ("FAIL" if r < 0.13 else "PASS")
        lost = rng.randint(1, 5) if verdict == "FAIL" else 0
        acks = "all" if i % 3 or verdict == "FAIL" else "1"
        meta = {"schema_version": 1, "run_id": run_id, "suite": suite, "scenario": scenario,
                "harness_version": "0.1.0", "git_sha": None, "kafka_version": ver,
                "broker_image": f"kafka-chaos/kafka:{ver}", "image_id": None, "distribution": "apache-zk",
                "profile": f"apache-zk-{ver[:3]}", "cluster": {"brokers": 3, "zookeepers": 1},
                "broker_config": {"unclean.leader.election.enable": "false" if acks == "all" else "true"},
                "topics": [{"name": "t", "partitions": 1, "replication_factor": 3,
                            "config": {"min.insync.replicas": "2" if acks == "all" else "1"}}],
                "workload": {"acks": acks, "rate": 100}, "seed": i % 97,
                "schedule": [{"at": 10, "fault": kind, "target": "leader(t,0)", "duration": 10, "params": {}}],
                "host": {}, "started_at": f"2025-06-{day:02d}T02:00:00Z", "ended_at": None, "replay_of": None}
        meta_text = _dump(meta)
        (d / "metadata.json").write_text(meta_text)
        ttl = round(1 + rng.random() * 8, 3)
        isr_t = round(ttl + 5 + rng.random() * 20, 3)
        timed = [(0.5, '"type":"phase","name":"cluster.ready"'),
                 (1.0, '"type":"zk.partition_state","topic":"t","partition":0,"leader":1,"leader_epoch":0,'
                       '"isr":[1,2,3],"controller_epoch":1,"version":0,"deleted":false,"zxid":1,"source":"watch"')]
        step = 28.0 / max(sends, 1)
        for k in range(sends):
            t = 2 + k * step
            timed.append((t, f'"type":"client","process":"p0","f":"send","phase":"invoke","op_id":{k},'
                             f'"topic":"t","value":"v{k}"'))
            timed.append((t + 0.01, f'"type":"client","process":"p0","f":"send","phase":"ok","op_id":{k},'
                                    f'"topic":"t","partition":0,"offset":{k},"value":"v{k}"'))
        timed += [(10.0, f'"type":"fault.start","fault_id":0,"fault":"{kind}","target":"leader(t,0)",'
                         f'"nodes":["kafka-1"],"broker_ids":[1],"params":{{}}'),
                  (10.0 + ttl, '"type":"zk.partition_state","topic":"t","partition":0,"leader":2,"leader_epoch":1,'
                               '"isr":[2,3],"controller_epoch":1,"version":1,"deleted":false,"zxid":2,'
                               '"source":"watch"'),
                  (20.0, f'"type":"fault.end","fault_id":0,"fault":"{kind}","nodes":["kafka-1"],"ok":true'),
                  (10.0 + isr_t, '"type":"zk.partition_state","topic":"t","partition":0,"leader":2,'
                                 '"leader_epoch":1,"isr":[2,3,1],"controller_epoch":1,"version":2,"deleted":false,'
                                 '"zxid":3,"source":"watch"')]
        if verdict == "UNKNOWN":
            timed.append((38.0, '"type":"phase","name":"environment.error","cause":"environment",'
                                '"error":"synthetic: the host ran out of memory"'))
        timed.append((40.0, '"type":"phase","name":"drain.start"'))
        gone = set(rng.sample(range(sends), min(lost, sends)))
        kept = [k for k in range(sends) if k not in gone]
        for j, k in enumerate(kept):
            timed.append((40.1 + j * 0.001, f'"type":"client","process":"drain","f":"drain","phase":"ok",'
                                           f'"topic":"t","partition":0,"offset":{k},"value":"v{k}"'))
        timed.append((41.0, f'"type":"partition.end","topic":"t","partition":0,"end_offset":{sends}'))
        timed.append((41.5, '"type":"phase","name":"drain.end"'))
        timed.sort(key=lambda x: x[0])
        lines = [f'{{"seq":{seq},"t":{t:.3f},"wall":{1748743200 + t:.3f},{body}}}'
                 for seq, (t, body) in enumerate(timed)]
        events_text = "\n".join(lines) + "\n"
        (d / "events.jsonl").write_text(events_text)
        if judged:
            v = decide([json.loads(x) for x in lines], meta)
            body = {"schema_version": 1, **v.to_dict(), "stats": {}, "evidence": evidence(d, __version__)}
        else:
            checks = {} if verdict == "UNKNOWN" else durability_checks(lost, 0, 0, divergences=[])
            body = {"schema_version": 1, "verdict": verdict, "reason": verdict, "checks": checks, "stats": {}}
        (d / "verdict.json").write_text(_dump(body))
    return root
