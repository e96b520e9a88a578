"""Generate the ZooKeeper transaction-log fixtures in tests/observer/fixtures/.

Starts a throwaway ZooKeeper 3.8 on 127.0.0.1 (jars from $KAFKA_CHAOS_ZK_CLASSPATH), writes znodes
shaped exactly like Kafka's (controller-spec §1) through kazoo -- broker registrations (ephemeral),
controller election multi-ops, topic and partition-state writes wrapped in controller-epoch checks
(one failing), a reassignment, a topic deletion, a clean session close and a real session expiry
(the session owner is a child process killed with SIGKILL) -- then copies ``version-2/log.*`` into
``fixtures/kafka_zk/`` and writes ``fixtures/kafka_zk/expected.json``.

``expected.json`` is what the *client* saw (versions and zxids from the Stat of each write, czxids
read back, parent pzxids after deletions); it is independent of the log parser under test.

Usage: KAFKA_CHAOS_ZK_CLASSPATH='/tmp/zkjars/*' python tests/observer/make_fixtures.py
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

from kazoo.client import KazooClient  # noqa: E402

from zk_local_server import ENV, LocalZooKeeper, classpath  # noqa: E402

OUT = HERE / "fixtures" / "kafka_zk"

# The child process owning broker 1's session (and, after winning, /controller); it is killed
# with SIGKILL so ZooKeeper expires the session and logs a closeSession.
CHILD = r"""
import json, sys, time
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=1.0)
zk.start()
zk.create("/brokers/ids/1", sys.argv[2].encode(), ephemeral=True)
t = zk.transaction()
t.create("/controller", sys.argv[3].encode(), ephemeral=True)
t.set_data("/controller_epoch", b"1", 0)
res = t.commit()
print(json.dumps({"session": zk.client_id[0], "results": [repr(r) for r in res]}), flush=True)
time.sleep(3600)
"""


def broker_json(bid: int) -> bytes:
    port = 9091 + bid
    return json.dumps({
        "features": {}, "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "endpoints": [f"PLAINTEXT://kafka-{bid}:{port}"], "jmx_port": -1, "port": port,
        "host": f"kafka-{bid}", "version": 5, "timestamp": str(int(time.time() * 1000)),
    }, separators=(",", ":")).encode()


def controller_json(bid: int) -> bytes:
    return json.dumps({"version": 2, "brokerid": bid, "timestamp": str(int(time.time() * 1000)),
                       "kraftControllerEpoch": -1}, separators=(",", ":")).encode()


def topic_json(parts: dict, adding=None, removing=None, topic_id=None) -> bytes:
    obj = {"partitions": {str(p): r for p, r in parts.items()},
           "adding_replicas": {str(p): r for p, r in (adding or {}).items()},
           "removing_replicas": {str(p): r for p, r in (removing or {}).items()}, "version": 3}
    if topic_id:
        obj["topic_id"] = topic_id
    return json.dumps(obj, separators=(",", ":")).encode()


def state_json(leader: int, le: int, isr: list, ce: int, recovering: bool = False) -> bytes:
    obj = {"controller_epoch": ce, "leader": leader, "version": 1, "leader_epoch": le, "isr": isr}
    if recovering:
        obj["leader_recovery_state"] = 1
    return json.dumps(obj, separators=(",", ":")).encode()


class Script:
    """Does the writes and records what the client observed."""

    def __init__(self, zk: KazooClient):
        self.zk = zk
        self.expect: list[dict] = []
        self.epoch_version = 0

    def state_write(self, topic: str, p: int, leader: int, le: int, isr: list, ce: int,
                    recovering: bool = False) -> None:
        """A controller write: multi[check /controller_epoch version, setData state]."""
        path = f"/brokers/topics/{topic}/partitions/{p}/state"
        t = self.zk.transaction()
        t.check("/controller_epoch", self.epoch_version)
        t.set_data(path, state_json(leader, le, isr, ce, recovering))
        res = t.commit()
        stat = res[1]
        assert hasattr(stat, "version"), f"state write failed: {res}"
        self.expect.append({"kind": "partition_state", "topic": topic, "partition": p,
                            "version": stat.version, "zxid": stat.mzxid, "leader": leader,
                            "leader_epoch": le, "isr": isr, "controller_epoch": ce,
                            "leader_recovery_state": 1 if recovering else 0})

    def create_topic(self, topic: str, parts: dict, ce: int, topic_id: str) -> None:
        self.zk.create(f"/brokers/topics/{topic}", topic_json(parts, topic_id=topic_id))
        stat = self.zk.exists(f"/brokers/topics/{topic}")
        self.expect.append({"kind": "topic", "topic": topic, "version": 0, "zxid": stat.czxid,
                            "partitions": {str(p): r for p, r in parts.items()},
                            "topic_id": topic_id})
        self.zk.create(f"/brokers/topics/{topic}/partitions")
        for p, reps in parts.items():
            self.zk.create(f"/brokers/topics/{topic}/partitions/{p}")
            t = self.zk.transaction()
            t.check("/controller_epoch", self.epoch_version)
            t.create(f"/brokers/topics/{topic}/partitions/{p}/state", state_json(reps[0], 0, reps, ce))
            t.commit()
            stat = self.zk.exists(f"/brokers/topics/{topic}/partitions/{p}/state")
            self.expect.append({"kind": "partition_state", "topic": topic, "partition": p,
                                "version": 0, "zxid": stat.czxid, "leader": reps[0],
                                "leader_epoch": 0, "isr": reps, "controller_epoch": ce,
                                "leader_recovery_state": 0})

    def broker_registered(self, bid: int) -> None:
        stat = self.zk.exists(f"/brokers/ids/{bid}")
        self.expect.append({"kind": "broker", "broker_id": bid, "registered": True,
                            "broker_epoch": stat.czxid, "zxid": stat.czxid})

    def wait_gone(self, path: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.zk.exists(path) is not None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{path} still exists after {timeout} s")
            time.sleep(0.05)

    def parent_pzxid(self, path: str) -> int:
        return self.zk.exists(path.rsplit("/", 1)[0] or "/").pzxid

    def controller(self, bid: int) -> None:
        stat = self.zk.exists("/controller")
        estat = self.zk.exists("/controller_epoch")
        self.epoch_version = estat.version
        self.expect.append({"kind": "controller", "broker_id": bid, "zxid": stat.czxid})
        self.expect.append({"kind": "controller_epoch", "epoch": int(self.zk.get("/controller_epoch")[0]),
                            "version": estat.version, "zxid": estat.mzxid})

    def elect(self, zk: KazooClient, bid: int) -> None:
        t = zk.transaction()
        t.create("/controller", controller_json(bid), ephemeral=True)
        t.set_data("/controller_epoch", str(self.epoch_version + 1).encode(), self.epoch_version)
        res = t.commit()
        assert res[0] == "/controller", res
        self.controller(bid)


def generate(cp: str, out: Path) -> None:
    with LocalZooKeeper(cp, snap_count=60) as server:
        admin = KazooClient(hosts=server.connect, timeout=5.0)
        admin.start()
        s = Script(admin)
        for p in ("/brokers/ids", "/brokers/topics", "/brokers/seqid", "/admin/delete_topics",
                  "/config/topics", "/config/changes", "/isr_change_notification"):
            admin.ensure_path(p)
        admin.create("/controller_epoch", b"0")
        # broker 1 in a child process (its session will expire); it also wins the election
        child = subprocess.Popen([sys.executable, "-c", CHILD, server.connect,
                                  broker_json(1).decode(), controller_json(1).decode()],
                                 stdout=subprocess.PIPE, text=True)
        try:
            info = json.loads(child.stdout.readline())
            s.broker_registered(1)
            s.controller(1)
            brokers = {}
            for bid in (2, 3):
                c = KazooClient(hosts=server.connect, timeout=5.0)
                c.start()
                c.create(f"/brokers/ids/{bid}", broker_json(bid), ephemeral=True)
                brokers[bid] = c
                s.broker_registered(bid)

            s.create_topic("t1", {0: [1, 2, 3], 1: [2, 3, 1]}, 1, "7UyMV1ewQ2WBZc7ZpqQkHQ")
            # a burst of controller and leader writes on t1-0
            s.state_write("t1", 0, 1, 0, [1, 2], 1)          # ISR shrink by the leader
            s.state_write("t1", 0, 2, 1, [2], 1)             # election
            s.state_write("t1", 0, 2, 1, [2, 3], 1)          # ISR expand
            s.state_write("t1", 0, 2, 1, [2, 3, 1], 1)
            s.state_write("t1", 0, 1, 2, [2, 3, 1], 1)       # preferred election
            # a zombie write: multi with a stale controller-epoch check fails -> no change
            t = admin.transaction()
            t.check("/controller_epoch", 0)
            t.set_data("/brokers/topics/t1/partitions/0/state", state_json(3, 9, [3], 0))
            res = t.commit()
            assert not hasattr(res[1], "version"), res
            # a plain setData with a stale version fails -> error txn
            try:
                admin.set("/brokers/topics/t1/partitions/0/state", state_json(3, 9, [3], 0), version=0)
                raise AssertionError("stale setData succeeded")
            except Exception as e:  # BadVersionError
                assert "BadVersion" in type(e).__name__, e

            # reassignment of t1-1 from [2,3,1] to [3,2] via the legacy znode
            admin.create("/admin/reassign_partitions", json.dumps(
                {"version": 1, "partitions": [{"topic": "t1", "partition": 1, "replicas": [3, 2]}]}).encode())
            s.expect.append({"kind": "reassign", "partitions": [{"topic": "t1", "partition": 1, "replicas": [3, 2]}],
                             "zxid": admin.exists("/admin/reassign_partitions").czxid})
            st = admin.set("/brokers/topics/t1", topic_json({0: [1, 2, 3], 1: [3, 2, 1]}, removing={1: [1]},
                                                            topic_id="7UyMV1ewQ2WBZc7ZpqQkHQ"))
            s.expect.append({"kind": "topic", "topic": "t1", "version": st.version, "zxid": st.mzxid,
                             "partitions": {"0": [1, 2, 3], "1": [3, 2, 1]}, "removing_replicas": {"1": [1]},
                             "topic_id": "7UyMV1ewQ2WBZc7ZpqQkHQ"})
            s.state_write("t1", 1, 2, 1, [2, 3, 1], 1)       # reassignment start bumps LE
            s.state_write("t1", 1, 3, 2, [2, 3, 1], 1)       # leader moved into target
            s.state_write("t1", 1, 3, 3, [2, 3], 1)          # removed replica dropped
            st = admin.set("/brokers/topics/t1", topic_json({0: [1, 2, 3], 1: [3, 2]},
                                                            topic_id="7UyMV1ewQ2WBZc7ZpqQkHQ"))
            s.expect.append({"kind": "topic", "topic": "t1", "version": st.version, "zxid": st.mzxid,
                             "partitions": {"0": [1, 2, 3], "1": [3, 2]}, "removing_replicas": {},
                             "topic_id": "7UyMV1ewQ2WBZc7ZpqQkHQ"})
            admin.delete("/admin/reassign_partitions")
            s.expect.append({"kind": "reassign", "partitions": None,
                             "zxid": s.parent_pzxid("/admin/reassign_partitions")})

            # topic deletion
            s.create_topic("t2", {0: [3, 1, 2]}, 1, "AAAAAAAAAAAAAAAAAAAAAg")
            admin.create("/admin/delete_topics/t2")
            s.expect.append({"kind": "delete_topics", "topics": ["t2"],
                             "zxid": admin.exists("/admin/delete_topics/t2").czxid})
            admin.delete("/brokers/topics/t2/partitions/0/state")
            s.expect.append({"kind": "partition_state_deleted", "topic": "t2", "partition": 0,
                             "zxid": s.parent_pzxid("/brokers/topics/t2/partitions/0/state")})
            admin.delete("/brokers/topics/t2", recursive=True)
            s.expect.append({"kind": "topic_deleted", "topic": "t2",
                             "zxid": s.parent_pzxid("/brokers/topics/t2")})
            admin.delete("/admin/delete_topics/t2")
            s.expect.append({"kind": "delete_topics", "topics": [],
                             "zxid": s.parent_pzxid("/admin/delete_topics/t2")})

            # broker 3 shuts down cleanly (closeSession), then re-registers with a new session
            brokers.pop(3).stop()
            s.wait_gone("/brokers/ids/3")
            s.expect.append({"kind": "broker", "broker_id": 3, "registered": False,
                             "zxid": s.parent_pzxid("/brokers/ids/3"), "via": "close"})
            c = KazooClient(hosts=server.connect, timeout=5.0)
            c.start()
            c.create("/brokers/ids/3", broker_json(3), ephemeral=True)
            brokers[3] = c
            s.broker_registered(3)

            # broker 1 (the controller) dies: its session expires -> /brokers/ids/1 and /controller go
            child.send_signal(signal.SIGKILL)
            child.wait()
            s.wait_gone("/brokers/ids/1")
            s.wait_gone("/controller")
            expiry_zxid = s.parent_pzxid("/brokers/ids/1")
            s.expect.append({"kind": "broker", "broker_id": 1, "registered": False, "zxid": expiry_zxid,
                             "via": "expiry", "session": info["session"]})
            s.expect.append({"kind": "controller", "broker_id": None, "zxid": expiry_zxid})

            # broker 2 takes over: epoch 2; leader -1 then election (two bumps, spec §2.5)
            s.elect(brokers[2], 2)
            s.state_write("t1", 0, -1, 3, [2, 3], 2)
            s.state_write("t1", 0, 2, 4, [2, 3], 2)
            s.state_write("t1", 0, 3, 5, [3], 2, recovering=True)   # unclean election
            s.state_write("t1", 0, 3, 5, [3], 2)                    # recovery finished
            # the seed-004 trick: delete /controller by hand; broker 3 wins (epoch 3)
            admin.delete("/controller")
            s.expect.append({"kind": "controller", "broker_id": None, "zxid": s.parent_pzxid("/controller")})
            s.elect(brokers[3], 3)
            for i in range(6):                               # a final burst
                s.state_write("t1", 1, 3, 4 + i, [2, 3] if i % 2 else [3], 3)
            for c in brokers.values():
                c.stop()
                c.close()
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        admin.stop()
        admin.close()
        time.sleep(0.5)
        server.stop()
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        for f in sorted(server.log_dir.iterdir()):
            if f.name.startswith("log."):
                shutil.copy(f, out / f.name)
        (out / "expected.json").write_text(json.dumps(
            {"generated_by": "tests/observer/make_fixtures.py", "zookeeper_classpath_env": ENV,
             "broker1_session": info["session"], "expect": s.expect}, indent=1) + "\n")
        print(f"wrote {len(list(out.glob('log.*')))} log files and {len(s.expect)} expectations to {out}")


if __name__ == "__main__":
    cp = classpath()
    if not cp:
        sys.exit(f"set {ENV} to a ZooKeeper 3.8 classpath, e.g. '/tmp/zkjars/*'")
    generate(cp, OUT)
