"""Containers are hardened (issue 14, item 7): every capability dropped but NET_ADMIN, memory and
pids limits, the JVMs run as a non-root user, and faults still work (a real
cluster: kill, pause and an iptables partition)."""

from __future__ import annotations

import pytest

from harness.distributions.node_settings import CAP_ADD, GENERIC_CAP_ADD, container_limits
from harness.errors import HarnessError


def test_limits_defaults_and_overrides(monkeypatch):
    for v in ("KAFKA_CHAOS_KAFKA_MEMORY", "KAFKA_CHAOS_ZOOKEEPER_MEMORY", "KAFKA_CHAOS_PIDS_LIMIT", "KAFKA_CHAOS_CAP_ADD"):
        monkeypatch.delenv(v, raising=False)
    kw = container_limits("broker")
    assert kw["cap_drop"] == ["ALL"] and kw["cap_add"] == CAP_ADD == ["NET_ADMIN"]
    assert kw["mem_limit"] == "1536m" and kw["pids_limit"] == 1024
    assert container_limits("zookeeper")["mem_limit"] == "768m"
    assert container_limits("broker", generic=True)["cap_add"] == GENERIC_CAP_ADD
    monkeypatch.setenv("KAFKA_CHAOS_KAFKA_MEMORY", "2g")
    monkeypatch.setenv("KAFKA_CHAOS_PIDS_LIMIT", "0")
    kw = container_limits("kraft")
    assert kw["mem_limit"] == "2g" and "pids_limit" not in kw
    monkeypatch.setenv("KAFKA_CHAOS_KAFKA_MEMORY", "lots")
    with pytest.raises(HarnessError, match="KAFKA_CHAOS_KAFKA_MEMORY='lots'"):
        container_limits("broker")


def _caps(names) -> set[str]:
    return {n.upper().removeprefix("CAP_") for n in names or []}


@pytest.mark.docker
def test_nodes_are_hardened_and_faults_still_work(kc_cluster_factory):
    cl = kc_cluster_factory(brokers=2, zookeepers=1)
    for n in cl.nodes():
        hc = n.container.attrs["HostConfig"]
        assert _caps(hc["CapDrop"]) == {"ALL"}, (n.name, hc["CapDrop"])
        assert _caps(hc["CapAdd"]) == {"NET_ADMIN"}, (n.name, hc["CapAdd"])
        assert not hc.get("Privileged")
        assert hc["Memory"] == (768 if n.role == "zookeeper" else 1536) * 1024 * 1024
        assert hc["PidsLimit"] == 1024
        code, users = n.exec(["sh", "-c", "ps -o user= -C java"])
        assert code == 0 and users.split() == ["kafka"], (n.name, users)   # the JVM is not root
        for port in (hc.get("PortBindings") or {}).values():
            assert all(b["HostIp"] == "127.0.0.1" for b in port)
    # faults: an iptables partition (exec as root with NET_ADMIN only), pause, kill + restart
    b1, b2 = cl.brokers[1], cl.brokers[2]
    ip2 = b2.ip()
    b1.exec(["iptables", "-A", "OUTPUT", "-d", ip2, "-j", "DROP"], check=True)
    code, _ = b1.exec(["sh", "-c", f"nc -z -w 2 {ip2} 9093"])
    assert code != 0                                   # the partition holds
    b1.exec(["iptables", "-D", "OUTPUT", "-d", ip2, "-j", "DROP"], check=True)
    code, out = b1.exec(["sh", "-c", f"nc -z -w 5 {ip2} 9093"])
    assert code == 0, out                              # and heals
    b2.pause()
    assert b2.status() == "paused"
    b2.unpause()
    cl.kill_broker(2)
    assert b2.status() == "exited"
    cl.start_broker(2, timeout_s=180)                  # the non-root JVM restarts on its own data
    assert 2 in cl.registered_brokers()
