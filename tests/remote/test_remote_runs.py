"""``--nodes`` against real SSH test hosts (tests/remote/hosts.py: sshd and Kafka as a service in containers;
the harness reaches them only over SSH and the Kafka listeners): a scenario decided with the right
verdict, kill / pause / partition acting over SSH and leaving nothing behind, a host-key mismatch and a
failing service command refused before anything, and a SIGKILLed harness's leftovers undone by the next
command and by ``cleanup --nodes``.

``KAFKA_CHAOS_NODES_FILE`` points the tests at hosts already running (e.g. started with
``python3 -m tests.remote.hosts up``); otherwise the session's ``ssh_hosts`` are started.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import distributions
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.cluster.remote_cluster import accesses, host_lines, journal_of
from harness.nemesis.fault_base import Context
from harness.nemesis.net_faults import Partition
from tests.remote.hosts import host_leftovers

pytestmark = [pytest.mark.docker, pytest.mark.ssh]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def nodes_path(request) -> Path:
    given = os.environ.get("KAFKA_CHAOS_NODES_FILE")
    if given:
        return Path(given)
    return request.getfixturevalue("ssh_hosts").nodes_file


@pytest.fixture
def state(tmp_path, monkeypatch) -> Path:
    """A journal directory of this test's own (KAFKA_CHAOS_STATE), for this process and its children."""
    monkeypatch.setenv("KAFKA_CHAOS_STATE", str(tmp_path / "state"))
    return tmp_path / "state"


def _cli(args: list[str], timeout: float = 600, **env_vars) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **env_vars)
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_a_scenario_over_ssh_is_decided_and_leaves_nothing(nodes_path, state, tmp_path):
    r = _cli(["run", "broker_failover.kill_leader", "--nodes", str(nodes_path), "--runs-dir", str(tmp_path / "runs")])
    assert r.returncode == 0, r.stderr[-3000:]
    (run_dir,) = list((tmp_path / "runs").iterdir())
    verdict = json.loads((run_dir / "verdict.json").read_text())
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert verdict["verdict"] == "PASS", verdict
    assert meta["distribution"] == f"remote:{nodes_path}" and meta["controller_model"] == "kraft"
    events = [json.loads(ln) for ln in (run_dir / "events.jsonl").read_text().splitlines()]
    kills = [e for e in events if e.get("type") == "fault.start" and e.get("fault") == "kill"]
    assert kills and kills[0].get("error") is None
    assert any((run_dir / "metadata_log").iterdir())          # the ground truth, read over SSH
    assert [e["path"] for e in meta["container_logs"] if "path" in e]   # each node's log, over SSH
    assert journal_of(distributions.resolve(nodes=str(nodes_path)).nodes).pending() == []
    assert host_leftovers(nodes_path) == []


def test_kill_pause_and_partition_act_over_ssh_and_are_undone(nodes_path, state):
    dist = distributions.resolve(nodes=str(nodes_path))
    cl = Cluster(ClusterSpec(name="h2t", distribution=dist))
    cl.start()
    try:
        b1, b2, b3 = (cl.brokers[b] for b in cl.broker_ids[:3])
        b2.pause()
        assert b2.status() == "paused"
        assert [e["kind"] for e in cl.journal.pending(b2.name)] == ["paused"]
        ctx = Context(cl, view=None, rng=random.Random(1))
        part = Partition(ctx, 1, "broker:3", [b3], {})
        part.apply()
        rc, rules = b3.exec(["sh", "-c", "iptables -w 5 -S"])
        chain_in = f"KC_{cl.run_tag}_IN"
        assert f"-N {chain_in}" in rules and f"-A {chain_in} -s {b1.address}/32" in rules, rules
        part.heal()
        rc, rules = b3.exec(["sh", "-c", f"iptables -w 5 -S {chain_in}"])
        assert "-A " not in rules                          # heal removed its rules; the chain is the run's
        b1.kill()
        assert b1.status() == "exited"
        assert {e["kind"] for e in cl.journal.pending()} == {"paused", "chains", "stopped"}
    finally:
        cl.remove()                                         # undoes: resume b2, start b1, delete chains
    assert cl.journal.pending() == []
    deadline = time.monotonic() + 60
    while host_leftovers(nodes_path) and time.monotonic() < deadline:
        time.sleep(1)
    assert host_leftovers(nodes_path) == []
    Cluster(ClusterSpec(name="h2u", distribution=dist)).start().remove()   # serving again: ready within bounds


def test_a_host_key_mismatch_refuses_before_anything(nodes_path, state, tmp_path):
    text = nodes_path.read_text()
    kh = Path(nodes_path.parent / "known_hosts").read_text().splitlines()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    other = (tmp_path / "other.pub").read_text().split()
    (tmp_path / "known_hosts").write_text("".join(f"{ln.split()[0]} {other[0]} {other[1]}\n" for ln in kh if ln.strip()))
    (tmp_path / "id_ed25519").write_bytes((nodes_path.parent / "id_ed25519").read_bytes())
    (tmp_path / "id_ed25519").chmod(0o600)
    (tmp_path / "nodes.toml").write_text(text)
    r = _cli(["run", "broker_failover.kill_leader", "--nodes", str(tmp_path / "nodes.toml"),
              "--runs-dir", str(tmp_path / "runs")])
    errors = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("skipped ")]
    assert r.returncode == 2 and len(errors) == 1 and "host key mismatch" in errors[0], r.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    assert not state.exists()                              # no journal: nothing was changed


def test_a_failing_service_command_is_one_line(nodes_path, state, tmp_path):
    (tmp_path / "id_ed25519").write_bytes((nodes_path.parent / "id_ed25519").read_bytes())
    (tmp_path / "id_ed25519").chmod(0o600)
    (tmp_path / "known_hosts").write_bytes((nodes_path.parent / "known_hosts").read_bytes())
    text = nodes_path.read_text().replace('status = "/etc/init.d/kafka status"', 'status = "/etc/init.d/kafka-nope status"')
    assert "kafka-nope" in text
    (tmp_path / "nodes.toml").write_text(text)
    r = _cli(["run", "broker_failover.kill_leader", "--nodes", str(tmp_path / "nodes.toml"),
              "--runs-dir", str(tmp_path / "runs")])
    errors = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("skipped ")]
    assert r.returncode == 2 and len(errors) == 1 and "service.status" in errors[0], r.stderr


LEAVER = """
import os, random, sys
sys.path.insert(0, {root!r})
from harness import distributions
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.nemesis.fault_base import Context
from harness.nemesis.net_faults import Partition
from tests.remote.hosts import host_leftovers
cl = Cluster(ClusterSpec(name="h2k", distribution=distributions.resolve(nodes={path!r})))
cl.start()
b = [cl.brokers[i] for i in cl.broker_ids]
Partition(Context(cl, None, random.Random(1)), 1, "broker", [b[0]], {{}}).apply()
b[1].pause()
print("left", flush=True)
os.kill(os.getpid(), 9)
"""


def _leave_behind(nodes_path: Path) -> None:
    r = subprocess.run([sys.executable, "-c", LEAVER.format(root=str(ROOT), path=str(nodes_path))],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == -9 and "left" in r.stdout, r.stderr[-2000:]
    left = host_leftovers(nodes_path)
    assert any("paused" in x for x in left) and any("-N KC_" in x for x in left), left


def test_a_sigkilled_harness_s_leftovers_are_undone_by_cleanup_nodes_from_another_machine(nodes_path, state,
                                                                                          tmp_path):
    """The harness that left the changes kept its journal in ``state``; ``cleanup`` runs with another state
    directory, as on a second harness machine: it finds them in the journal's copies on the hosts."""
    _leave_behind(nodes_path)
    other = str(tmp_path / "other-machine-state")
    r = _cli(["cleanup", "--nodes", str(nodes_path), "--dry-run"], KAFKA_CHAOS_STATE=other)
    assert r.returncode == 0 and "would undo paused" in r.stdout and "would undo chains" in r.stdout, r.stdout
    r = _cli(["cleanup", "--nodes", str(nodes_path)], KAFKA_CHAOS_STATE=other)
    assert r.returncode == 0 and "undid" in r.stdout and "did not" in r.stderr, r.stdout + r.stderr
    assert host_leftovers(nodes_path) == []
    f = distributions.resolve(nodes=str(nodes_path)).nodes
    accs = accesses(f)
    try:                      # nothing pending is left in the hosts' copies: they were emptied
        assert [ln for ln in host_lines(f, accs) if ln.get("op") == "did"] == []
    finally:
        for a in accs.values():
            a.close()


def test_a_sigkilled_harness_s_leftovers_are_undone_by_the_next_command(nodes_path, state, tmp_path):
    _leave_behind(nodes_path)
    r = _cli(["run", "broker_failover.kill_leader", "--nodes", str(nodes_path), "--runs-dir", str(tmp_path / "runs")])
    assert r.returncode == 0 and "undid" in r.stderr, r.stderr[-3000:]
    assert host_leftovers(nodes_path) == []


def test_a_zookeeper_mode_nodes_file_runs_with_the_transaction_log_as_ground_truth(request, state, tmp_path):
    """A nodes file with a zookeeper node: ZooKeeper mode, observed by a watch and the transaction log
    read over SSH (``KAFKA_CHAOS_NODES_FILE_ZK``, else hosts of Kafka 3.9.2 with one ZooKeeper host)."""
    given = os.environ.get("KAFKA_CHAOS_NODES_FILE_ZK")
    path = Path(given) if given else request.getfixturevalue("ssh_hosts_factory")("3.9.2", zookeeper=True).nodes_file
    assert distributions.resolve(nodes=str(path)).controller_model == "zk"
    r = _cli(["run", "broker_failover.kill_leader", "--nodes", str(path), "--runs-dir", str(tmp_path / "runs")])
    assert r.returncode == 0, r.stderr[-3000:]
    (run_dir,) = list((tmp_path / "runs").iterdir())
    assert json.loads((run_dir / "verdict.json").read_text())["verdict"] == "PASS"
    events = [json.loads(ln) for ln in (run_dir / "events.jsonl").read_text().splitlines()]
    assert any(e.get("source") == "txnlog" for e in events)
    assert host_leftovers(path) == []


def test_a_sasl_ssl_nodes_file_runs_and_refuses_bad_credentials_before_any_fault(ssh_hosts_factory, state, tmp_path):
    """The nodes file's [client] table is the cluster's security: a scenario over SASL_SSL / SCRAM-SHA-512
    is decided PASS with no secret in its record; a wrong password or a CA that did not sign the brokers'
    certificates is one line and exit 2 before any fault, and nothing is left in the journal."""
    hs = ssh_hosts_factory("4.4.0", security="SASL_SSL:SCRAM-SHA-512")
    good = hs.nodes_file
    r = _cli(["run", "isr.pause_follower", "--nodes", str(good), "--runs-dir", str(tmp_path / "runs")])
    assert r.returncode == 0, r.stderr[-3000:]
    (run_dir,) = list((tmp_path / "runs").iterdir())
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["security"]["protocol"] == "SASL_SSL" and meta["security"]["mechanism"] == "SCRAM-SHA-512"
    password = next(ln.split('"')[1] for ln in good.read_text().splitlines() if ln.startswith("password"))
    for f in run_dir.rglob("*"):
        if f.is_file() and f.suffix in (".json", ".jsonl", ".log", ".txt", ""):
            assert password not in f.read_text(errors="replace"), f"{f} holds the password"

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    import datetime
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "another CA")])
    now = datetime.datetime.now(datetime.timezone.utc)
    other = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
             .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
             .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    (good.parent / "other-ca.pem").write_bytes(other.public_bytes(serialization.Encoding.PEM))
    lines = good.read_text().splitlines()
    cases = {"bad-password.toml": ([f'password = "not-{password}"' if ln.startswith("password") else ln for ln in lines],
                                   "SASL authentication failed"),
             "bad-ca.toml": (['ca_file = "other-ca.pem"' if ln.startswith("ca_file") else ln for ln in lines],
                             "certificate verify failed")}
    for fname, (text, said) in cases.items():
        bad = good.parent / fname
        bad.write_text("\n".join(text) + "\n")
        bad.chmod(0o600)
        r = _cli(["run", "isr.pause_follower", "--nodes", str(bad), "--runs-dir", str(tmp_path / fname)])
        assert r.returncode == 4, (fname, r.returncode, r.stderr[-2000:])   # UNKNOWN: ran, undecided
        verdict_lines = [ln for ln in (r.stdout + r.stderr).splitlines() if "UNKNOWN(environment)" in ln]
        assert verdict_lines and said in verdict_lines[0], (fname, r.stderr[-2000:])
        (run_dir,) = list((tmp_path / fname).iterdir())
        events = [json.loads(ln) for ln in (run_dir / "events.jsonl").read_text().splitlines()]
        assert not [e for e in events if e.get("type") == "fault.start"], f"{fname}: a fault ran"
    assert journal_of(distributions.resolve(nodes=str(good)).nodes).pending() == []
    assert host_leftovers(good) == []
