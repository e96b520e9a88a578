"""Faults on a real cluster (3 brokers, 1 ZooKeeper): each test proves a fault takes effect and heals.

Every test ends with no fault applied (no KAFKA_CHAOS_* rule, no netem/tbf qdisc, nothing paused
or stopped), checked by the ``nemesis`` fixture after the test body, before the cluster is removed.
Cluster defaults: zookeeper.session.timeout.ms 6000, replica.lag.time.max.ms 5000.
"""

from __future__ import annotations

import time
import uuid

import pytest

from harness.nemesis import FaultUnsupported, Nemesis, ZkView, nemesis_guard
from harness.nemesis.faults import wait_started
from harness.record import RunRecorder, read_run
from harness.scenario.schedule import generate_schedule, load_schedule, run_schedule

from waiting import wait_for  # noqa: E402  (tests/integration is on sys.path)

pytestmark = pytest.mark.docker

TOPIC = "faults"


@pytest.fixture
def nemesis(kc_cluster_factory, tmp_path):
    """``nemesis(cluster) -> (Nemesis, RunRecorder)``; afterwards heal_all and assert nothing is left."""
    made: list[tuple[Nemesis, RunRecorder]] = []

    def make(cluster, seed: int = 1):
        wait_started(cluster)             # registered is not enough: startup must be complete
        rec = RunRecorder(tmp_path / "runs", "faults.test")
        nem = Nemesis(cluster, rec, ZkView(cluster), seed=seed)
        made.append((nem, rec))
        return nem, rec

    yield make
    for nem, rec in made:
        left = nem.heal_all()
        rec.finish("PASS", "test over")
        assert left == [], f"faults left applied: {left}"


def _isr(view: ZkView, topic: str = TOPIC, p: int = 0) -> list[int]:
    st = view.partition_state(topic, p)
    return sorted(st["isr"]) if st else []


def _fault_events(rec: RunRecorder):
    run = read_run(rec.final_dir)
    return run.of_type("fault.start"), run.of_type("fault.end")


def test_paused_follower_leaves_isr_and_rejoins_after_unpause(kc_cluster_factory, nemesis):
    cluster = kc_cluster_factory(brokers=3, zookeepers=1)
    cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
    nem, rec = nemesis(cluster)
    view = ZkView(cluster)
    wait_for(lambda: _isr(view) == [1, 2, 3], 20, "full ISR")

    h = nem.apply("pause", f"follower({TOPIC},0)")
    follower = h.broker_ids[0]
    assert follower != view.partition_state(TOPIC, 0)["leader"]
    assert cluster.brokers[follower].status() == "paused"
    # replica.lag.time.max.ms = 5000: the leader drops the silent follower from the ISR
    wait_for(lambda: follower not in _isr(view), 30, f"broker {follower} to leave the ISR")

    assert nem.heal(h)
    assert cluster.brokers[follower].status() == "running"
    wait_for(lambda: _isr(view) == [1, 2, 3], 30, f"broker {follower} to rejoin the ISR")
    assert nem.residue() == []

    rec.finish("PASS", "done")
    starts, ends = _fault_events(rec)
    assert [(e["fault"], e["target"], e["broker_ids"]) for e in starts] == [
        ("pause", f"follower({TOPIC},0)", [follower])]
    assert [(e["fault_id"], e["ok"]) for e in ends] == [(starts[0]["fault_id"], True)]
    assert ends[0]["t"] > starts[0]["t"]


def test_isolated_broker_loses_its_zookeeper_registration(kc_cluster_factory, nemesis):
    cluster = kc_cluster_factory(brokers=3, zookeepers=1)
    nem, _ = nemesis(cluster)
    h = nem.apply("isolate", "broker:3")
    epoch = None
    # cut from ZooKeeper for longer than the 6 s session timeout: the ephemeral registration goes
    wait_for(lambda: 3 not in cluster.registered_brokers(), 25, "broker 3 to lose /brokers/ids/3")
    assert cluster.registered_brokers() == {1, 2}
    nem.heal(h)
    wait_for(lambda: 3 in cluster.registered_brokers(), 30, "broker 3 to register again")
    epoch = cluster.broker_epoch(3)
    assert epoch is not None
    assert nem.residue() == []


def test_expire_session_makes_the_broker_register_with_a_new_epoch(kc_cluster_factory, nemesis):
    cluster = kc_cluster_factory(brokers=3, zookeepers=1)
    nem, _ = nemesis(cluster)
    before = cluster.broker_epoch(2)
    h = nem.apply("zk_expire_session", "broker:2")      # returns once expired, links restored, re-registered
    assert h.detail["expired"] == [2]
    nem.heal(h)
    after = cluster.broker_epoch(2)
    assert after is not None and after > before
    time.sleep(3)
    assert cluster.brokers[2].status() == "running", cluster.brokers[2].logs(60)
    assert nem.residue() == []


def test_killing_the_controller_elects_a_new_one_with_epoch_plus_one(kc_cluster_factory, nemesis):
    cluster = kc_cluster_factory(brokers=3, zookeepers=1)
    nem, _ = nemesis(cluster)
    view = ZkView(cluster)
    c0, e0 = view.controller_id(), view.controller_epoch()
    assert c0 is not None and e0 is not None
    h = nem.apply("kill", "controller")
    assert h.broker_ids == [c0]
    assert cluster.brokers[c0].status() == "exited"
    c1 = wait_for(lambda: (view.controller_id() not in (None, c0)) and view.controller_id(), 30,
                  "a new controller")
    assert c1 in (set(cluster.broker_ids) - {c0})
    assert view.controller_epoch() == e0 + 1
    nem.heal(h)                                          # starts the old controller again
    assert cluster.registered_brokers() == {1, 2, 3}
    assert view.controller_id() == c1                    # the new controller keeps the role
    assert view.controller_epoch() == e0 + 1
    assert nem.residue() == []


def test_deleting_the_controller_znode_triggers_reelection(kc_cluster_factory, nemesis):
    cluster = kc_cluster_factory(brokers=3, zookeepers=1)
    nem, _ = nemesis(cluster)
    view = ZkView(cluster)
    e0 = view.controller_epoch()
    h = nem.apply("delete_controller_znode")
    assert h.detail["deleted_version"] >= 0
    wait_for(lambda: view.controller_id() is not None and view.controller_epoch() == e0 + 1, 20,
             "re-election after /controller was deleted")
    nem.heal(h)
    assert view.controller_id() in cluster.broker_ids
    assert nem.residue() == []


def _exec_number(node, script: str, attempts: int = 3) -> int | None:
    """Run ``script`` (which prints one integer) in the container; None when it exits non-zero.

    docker exec occasionally returns the exit code of a short command without its output: retried.
    """
    for _ in range(attempts):
        code, out = node.exec(["bash", "-c", script])
        if code != 0:
            return None
        if out.strip().isdigit():
            return int(out.strip())
    raise AssertionError(f"{node.name}: no output from {script!r} after {attempts} attempts")


def _log_size(cluster, broker: int, topic: str) -> int:
    size = _exec_number(cluster.brokers[broker], f"stat -c %s /var/lib/kafka/data/{topic}-0/00000000000000000000.log")
    return -1 if size is None else size


def test_client_link_cut_leaves_inter_broker_replication_intact(kc_cluster_factory, nemesis):
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import AdminClient

    cluster = kc_cluster_factory(brokers=3, zookeepers=1)
    cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
    nem, _ = nemesis(cluster)
    view = ZkView(cluster)
    wait_for(lambda: _isr(view) == [1, 2, 3], 20, "full ISR")
    leader = view.partition_state(TOPIC, 0)["leader"]

    for b in cluster.broker_ids:         # every broker answers host clients before the cut
        AdminClient({"bootstrap.servers": f"127.0.0.1:{cluster.brokers[b].host_port}"}).list_topics(timeout=10)

    h = nem.apply("link_cut", f"follower({TOPIC},0)", {"links": ["client"]})
    (cut,) = h.broker_ids
    assert cut != leader
    only_cut = f"127.0.0.1:{cluster.brokers[cut].host_port}"
    # the follower is unreachable from the host: a metadata request through it alone fails
    with pytest.raises(KafkaException):
        AdminClient({"bootstrap.servers": only_cut, "socket.timeout.ms": 3000,
                     "socket.connection.setup.timeout.ms": 3000}).list_topics(timeout=6)
    # ... while replication to it goes on: acks=all through the leader waits for every ISR member
    acked, errors = [], []
    p = Producer({"bootstrap.servers": f"127.0.0.1:{cluster.brokers[leader].host_port}", "acks": "all",
                  "message.timeout.ms": 20000})
    for i in range(200):
        p.produce(TOPIC, f"v{i}-{uuid.uuid4().hex[:8]}".encode(), partition=0,
                  on_delivery=lambda err, msg: (errors if err else acked).append(err or msg.offset()))
    assert p.flush(30) == 0
    assert not errors and len(acked) == 200
    time.sleep(7.0)                       # longer than replica.lag.time.max.ms (5 s)
    assert cut in _isr(view), f"broker {cut} left the ISR: inter-broker replication was cut"
    leader_size = _log_size(cluster, leader, TOPIC)
    assert leader_size > 0
    wait_for(lambda: _log_size(cluster, cut, TOPIC) == leader_size, 10,
             f"broker {cut}'s replica to match the leader's log")

    nem.heal(h)
    AdminClient({"bootstrap.servers": only_cut}).list_topics(timeout=10)      # reachable again
    assert nem.residue() == []


def _connect_ms(cluster, src: int, dst_ip: str, timeout_s: float = 2.0) -> int | None:
    """Milliseconds for a TCP connect from broker ``src`` to ``dst_ip``:9093 (None when it failed)."""
    script = (f"a=$(date +%s%N); timeout {timeout_s} bash -c 'exec 3<>/dev/tcp/{dst_ip}/9093' 2>/dev/null "
              "|| exit 1; b=$(date +%s%N); echo $(( (b - a) / 1000000 ))")
    return _exec_number(cluster.brokers[src], script)


def test_netem_adds_latency_and_heals(kc_cluster_factory, nemesis):
    cluster = kc_cluster_factory(brokers=2, zookeepers=1)
    nem, _ = nemesis(cluster)
    ip2 = cluster.brokers[2].ip()
    wait_for(lambda: _connect_ms(cluster, 1, ip2) is not None, 20, "broker 1 to connect to broker 2")
    try:
        h = nem.apply("netem", "broker:2", {"delay_ms": 300})
    except FaultUnsupported as e:
        assert nem.residue() == []
        pytest.skip(f"kernel without netem: {e}")
    # broker 2's SYN-ACK leaves 300 ms late: no connect can be faster than the delay
    times = [_connect_ms(cluster, 1, ip2) for _ in range(3)]
    assert all(t is not None and t >= 290 for t in times), times
    nem.heal(h)
    assert nem.residue() == []
    assert _connect_ms(cluster, 1, ip2) is not None


def test_random_loss_drops_some_packets_and_heals(kc_cluster_factory, nemesis):
    cluster = kc_cluster_factory(brokers=2, zookeepers=1)
    nem, _ = nemesis(cluster)
    ip2 = cluster.brokers[2].ip()
    wait_for(lambda: _connect_ms(cluster, 1, ip2) is not None, 20, "broker 1 to connect to broker 2")
    h = nem.apply("loss", "broker:2", {"loss_pct": 50, "direction": "in"})
    # a SYN lost is retransmitted only after 1 s, so a 0.5 s connect fails about half of the time
    results = [_connect_ms(cluster, 1, ip2, timeout_s=0.5) for _ in range(30)]
    failures = sum(r is None for r in results)
    assert 0 < failures < 30, results           # P(all 30 equal) = 2 * 0.5**30
    nem.heal(h)
    assert nem.residue() == []
    assert all(_connect_ms(cluster, 1, ip2) is not None for _ in range(10))


def test_heal_all_restores_everything_on_interrupt(kc_cluster_factory):
    cluster = kc_cluster_factory(brokers=3, zookeepers=1)
    wait_started(cluster)
    with pytest.raises(KeyboardInterrupt):
        with nemesis_guard(cluster, seed=3) as nem:
            nem.apply("pause", "broker:1")
            nem.apply("partition", "broker:2")
            nem.apply("loss", "broker:3", {"loss_pct": 30})
            nem.apply("kill", "zk:1")
            nem.apply("bandwidth", "broker:3", {"rate_kbit": 800})
            left = nem.residue()
            assert any("paused" in x for x in left) and any("iptables" in x for x in left)
            assert any("exited" in x for x in left) and any("tbf" in x for x in left)
            raise KeyboardInterrupt
    assert nem.active == []
    assert nem.residue() == []
    wait_for(lambda: cluster.registered_brokers() == {1, 2, 3}, 30, "every broker registered again")


def test_seeded_schedule_runs_heals_and_replays_from_the_record(kc_cluster_factory, tmp_path):
    cluster = kc_cluster_factory(brokers=3, zookeepers=1)
    wait_started(cluster)
    mix = {"length": 14, "interval": [0.5, 1.5], "duration": [1, 2.5],
           "faults": {"pause": 1, "isolate": 1, "partition": 1, "loss": 1, "one_way": 1, "bridge": 1}}
    schedule = generate_schedule(2024, mix)
    assert len(schedule) >= 3
    rec = RunRecorder(tmp_path, "faults.schedule", metadata={"seed": schedule.seed, "schedule": schedule.to_json()})
    with nemesis_guard(cluster, rec, seed=schedule.seed) as nem:
        results = run_schedule(nem, schedule, max_overrun_s=30)
        assert nem.active == []
    assert nem.residue() == []
    run_dir = rec.finish("PASS", "schedule done")

    assert [r.item for r in results] == schedule.items
    assert all(r.ok for r in results), [(r.item, r.error) for r in results]
    starts, ends = read_run(run_dir).of_type("fault.start"), read_run(run_dir).of_type("fault.end")
    assert [e["fault"] for e in starts] == [i.fault for i in schedule]
    assert sorted(e["fault_id"] for e in ends) == sorted(e["fault_id"] for e in starts)
    assert all(e["ok"] for e in ends)
    replay = load_schedule(run_dir)
    assert replay.seed == 2024 and replay.items == schedule.items
