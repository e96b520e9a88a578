"""Brokers on other hosts: a nodes file whose endpoints are not on 127.0.0.1 (harness/protocol/endpoint.py).

The SSH test hosts (tests/remote/hosts.py) are reached at their own IPs on the hosts' network: SSH on port
22, the Kafka client listener on 9092. A nodes file that names only those addresses (nothing on
127.0.0.1) must work end to end: connecting (SSH, readiness over the Kafka protocol), the protocol sampler,
FindCoordinator, the control plane's Metadata + ListPartitionReassignments, the admin operations; and
a ``[ports] client`` the brokers do not bind is refused in one line once the cluster is ready.

- :func:`test_a_nodes_file_of_host_ips_is_dialled_at_those_ips` (CI, ~15 s on the session's hosts): the
  session's hosts under a second nodes file naming their IPs (the brokers still advertise 127.0.0.1, which
  only librdkafka follows; everything the harness dials itself goes to the IPs).
- :func:`test_a_scenario_on_hosts_that_advertise_their_ips` (``long``): a host set started with
  ``network=True`` (the brokers advertise ``<IP>:9092`` too, so no client of the run touches 127.0.0.1),
  a scenario run through the CLI decided PASS and nothing left on the hosts. Run it with
  ``python3 -m pytest -p no:cacheprovider -n 0 -m long tests/remote/test_remote_endpoints.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import distributions
from harness.cluster import admin_ops
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.errors import HarnessError
from harness.observer.protocol_sampler import ProtocolSampler
from harness.protocol.endpoint import Endpoint
from tests.remote import hosts

pytestmark = [pytest.mark.docker, pytest.mark.ssh]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def state(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("KAFKA_CHAOS_STATE", str(tmp_path / "state"))
    return tmp_path / "state"


def test_a_nodes_file_of_host_ips_is_dialled_at_those_ips(ssh_hosts, state, tmp_path):
    path = hosts.network_nodes_file(ssh_hosts, tmp_path / "net")
    assert "127.0.0.1" not in path.read_text()
    ips = {h.address for h in ssh_hosts.hosts}
    want = {h.node_id: Endpoint(h.address, hosts.EXTERNAL_PORT) for h in ssh_hosts.kafka_hosts}
    dist = distributions.resolve(nodes=str(path))
    assert {n.id: n.endpoint for n in dist.nodes.nodes} == want
    cl = Cluster(ClusterSpec(name="h1ep", distribution=dist))
    cl.start()                         # SSH to <IP>:22, readiness over the protocol at <IP>:9092
    try:
        assert {b: cl.brokers[b].endpoint for b in cl.broker_ids} == want
        assert cl.bootstrap_servers == ",".join(f"{want[b].host}:9092" for b in sorted(want))
        smp = ProtocolSampler.for_cluster(cl, quorum=True)
        assert set(smp.brokers.values()) == set(want.values())
        got = {e["type"]: e for e in smp.sample()}
        md, q, ra = got["admin.metadata"], got["kraft.quorum"], got["admin.reassignments"]
        assert md["error"] is None and md["answered_by"] in want and len(md["brokers"]) == len(want), md
        assert q["error"] is None and q["leader_id"] in want, q
        assert ra.get("error") is None and ra["answered_by"] in want, ra
        # FindCoordinator (the first ask creates __consumer_offsets: COORDINATOR_NOT_AVAILABLE until it has leaders)
        ep, info = admin_ops.wait_for("a group coordinator", lambda: (lambda a: a if a[1].error is None else None)(
            cl.coordinator("h1-endpoint-probe", "group")), 90)
        assert ep.host in ips and ep.port == hosts.EXTERNAL_PORT and info.error is None, (ep, info)
        cl.create_topic("h1-endpoints", partitions=2, replication_factor=3)
        assigned = admin_ops.topic_assignment(cl, "h1-endpoints")
        assert sorted(assigned) == [0, 1] and all(sorted(r) == sorted(want) for r, _, _ in assigned.values())
        assert admin_ops.reassign_list(cl, timeout_s=10) == {}
    finally:
        cl.remove()
    assert cl.journal.pending() == []
    # a client port the brokers do not bind on their hosts: refused in one line once the cluster is ready,
    # before anything is applied (a `client` link cut there would cut nothing: a false network.client_only FAIL)
    wrong = path.parent / "wrong-client-port.toml"
    wrong.write_text(path.read_text().replace("client = 9092", "client = 9099"))
    wrong.chmod(0o600)
    cl = Cluster(ClusterSpec(name="h1ep2", distribution=distributions.resolve(nodes=str(wrong))))
    with pytest.raises(HarnessError) as e:
        cl.start()
    assert "\n" not in str(e.value) and "nothing listens on port 9099 on the host" in str(e.value), e.value
    assert "9092" in str(e.value).rsplit("listening there:", 1)[1]     # the port to set is named
    assert cl.journal.pending() == [] and hosts.host_leftovers(path) == []


@pytest.mark.long
def test_a_scenario_on_hosts_that_advertise_their_ips(ssh_hosts_factory, state, tmp_path):
    hs = ssh_hosts_factory("4.4.0", network=True)
    text = hs.nodes_file.read_text()
    assert "127.0.0.1" not in text and f'endpoint = "{hs.hosts[0].address}:9092"' in text
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "harness.cli", "run", "broker_failover.kill_leader", "--nodes",
                        str(hs.nodes_file), "--runs-dir", str(tmp_path / "runs")],
                       capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    (run_dir,) = list((tmp_path / "runs").iterdir())
    assert json.loads((run_dir / "verdict.json").read_text())["verdict"] == "PASS"
    events = [json.loads(ln) for ln in (run_dir / "events.jsonl").read_text().splitlines()]
    sampled = [e for e in events if e.get("type") == "admin.metadata" and e.get("source") == "protocol"]
    assert sampled and any(e.get("error") is None for e in sampled)
    assert hosts.host_leftovers(hs.nodes_file) == []
