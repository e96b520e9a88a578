"""TLS and SASL listeners on real clusters (docs/security.md): a scenario passes with every client
(workload, the observer's admin client, the protocol client) on SASL_SSL/SCRAM, the record keeps no secret,
and refused credentials or an untrusted certificate are said in one line before any fault.

In CI (``docker``): one SASL_SSL scenario on the default image and the two refusals on one cluster. On demand
(``long``, `./run.sh test -m long tests/integration/test_security.py`): the smoke suite on KRaft 4.4.0 and
ZooKeeper-mode 3.9.2 over SASL_SSL, ``transactions.coordinator_kill`` over SASL_SSL/SCRAM, SSL and
SASL_PLAINTEXT/PLAIN, and a run stopped before its faults by a wrong password.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from harness import runner
from harness.cluster.certs import CertificateAuthority
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.cluster.listener_security import ClientAccessError, check_client_access
from harness.cluster.security import Security
from harness.record import read_run
from harness.runner import execute, run_cluster_name
from suites.catalog import scenarios_for

pytestmark = pytest.mark.docker

SECRET_MARKS = (b"sasl.password", b"PRIVATE KEY", b"KC_SASL_PASSWORD", b"user_kafka-chaos")


def _scenario(name: str, security: str):
    (s,) = [s for s in scenarios_for(name) if s.name == name]
    return s.with_security(security)


def _assert_no_secret(path: Path, password: str | None = None) -> None:
    import gzip
    for f in path.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            if f.suffix == ".gz":
                data = gzip.decompress(data)
            for mark in SECRET_MARKS + ((password.encode(),) if password else ()):
                assert mark not in data, f"{f} holds {mark!r}"


def _secured_run(path: Path, protocol: str, mechanism: str | None) -> None:
    rec = read_run(path)
    want = {"protocol": protocol, **({"mechanism": mechanism} if mechanism else {})}
    assert {k: rec.metadata["security"][k] for k in want} == want
    # the workload's clients connected with it (their recorded settings, secrets left out)
    configs = [e["config"] for e in rec.events if e.get("type") == "client.config"]
    assert configs and all(c.get("security.protocol") == protocol for c in configs), configs[:2]
    _assert_no_secret(path)


def test_sasl_ssl_scram_scenario_passes(kc_image, tmp_path):
    out = execute(_scenario("broker_failover.kill_leader", "SASL_SSL:SCRAM-SHA-512"), runs_dir=tmp_path,
                  image=kc_image.tag, distribution="apache-zk", suite="pytest")
    assert out.verdict == "PASS", out.reason
    _secured_run(out.path, "SASL_SSL", "SCRAM-SHA-512")


def test_wrong_password_and_untrusted_certificate_are_one_line(kc_image, tmp_path):
    cl = Cluster(ClusterSpec(brokers=1, image=kc_image.tag, distribution="apache-zk", name=run_cluster_name("sec"),
                             security=Security.parse("SASL_SSL:SCRAM-SHA-256")))
    with cl:
        check_client_access(cl)              # the cluster's own settings connect
        assert os.path.exists(cl.security.ca_file)
        with pytest.raises(ClientAccessError) as e:
            check_client_access(cl, cl.security.with_credentials(password="not-the-password"), timeout_s=3)
        assert "SASL authentication failed" in str(e.value) and "\n" not in str(e.value)
        other = tmp_path / "other-ca.pem"
        other.write_text(CertificateAuthority("not-this-cluster").cert_pem)
        with pytest.raises(ClientAccessError) as e:
            check_client_access(cl, cl.security.with_credentials(ca_file=str(other)))
        assert "certificate verify failed" in str(e.value) and "\n" not in str(e.value)
        ca_file = cl.security.ca_file
    assert not os.path.exists(ca_file)       # the per-run TLS directory went with the cluster


@pytest.mark.long
def test_a_refused_login_stops_the_run_before_any_fault(kc_image, tmp_path, monkeypatch):
    """The run's own check, with the clients' password changed after the cluster is up: UNKNOWN(environment),
    the reason names the refusal, no fault started."""
    real = runner.check_client_access

    def with_wrong_password(cluster, *a, **kw):
        cluster.security = dataclasses.replace(cluster.security, password="wrong")
        return real(cluster, timeout_s=3)
    monkeypatch.setattr(runner, "check_client_access", with_wrong_password)
    out = execute(_scenario("broker_failover.kill_leader", "SASL_SSL:SCRAM-SHA-512"), runs_dir=tmp_path,
                  image=kc_image.tag, distribution="apache-zk", suite="pytest")
    assert (out.verdict, out.cause) == ("UNKNOWN", "environment"), out.reason
    assert "SASL authentication failed" in out.reason
    rec = read_run(out.path)
    assert not rec.of_type("fault.start") and "faults.start" not in [p["name"] for p in rec.of_type("phase")]


@pytest.mark.long
@pytest.mark.parametrize("version, distribution", [("4.4.0", "apache-kraft"), ("3.9.2", "apache-zk")])
def test_smoke_suite_on_sasl_ssl(version, distribution, tmp_path):
    from harness.request import resolve_broker
    broker = resolve_broker(kafka_version=version, distribution=distribution)
    for req in broker.applicable([s.with_security("SASL_SSL:SCRAM-SHA-512") for s in scenarios_for("smoke")]):
        out = execute(req, runs_dir=tmp_path, suite="pytest")
        assert out.verdict == "PASS", (req.scenario.name, out.reason)
        _secured_run(out.path, "SASL_SSL", "SCRAM-SHA-512")


@pytest.mark.long
@pytest.mark.parametrize("security", ["SASL_SSL:SCRAM-SHA-512", "SSL", "SASL_PLAINTEXT:PLAIN"])
def test_transactions_coordinator_kill(security, kc_image, tmp_path):
    out = execute(_scenario("transactions.coordinator_kill", security), runs_dir=tmp_path, image=kc_image.tag, distribution="apache-zk",
                  suite="pytest")
    assert out.verdict == "PASS", out.reason
    sec = Security.parse(security)
    _secured_run(out.path, sec.protocol, sec.mechanism)


def test_cluster_up_prints_what_a_client_needs_and_down_removes_the_ca(kc_image):
    import subprocess
    import sys
    from confluent_kafka.admin import AdminClient
    name = run_cluster_name("up")
    up = subprocess.run([sys.executable, "-m", "harness.cli", "cluster", "up", "--name", name, "--brokers", "1",
                         "--broker-image", kc_image.tag, "--distribution", "apache-zk", "--security", "sasl_ssl"],
                        capture_output=True, text=True, timeout=300)
    try:
        assert up.returncode == 0, up.stderr[-2000:]
        printed = dict(line.split("=", 1) for line in up.stdout.splitlines() if "=" in line)
        assert printed["security.protocol"] == "SASL_SSL" and printed["sasl.mechanism"] == "SCRAM-SHA-512"
        client = {k: v for k, v in printed.items() if k == "bootstrap.servers" or k.startswith(("sasl.", "ssl.",
                                                                                                "security."))}
        assert len(AdminClient(client).list_topics(timeout=30).brokers) == 1     # the printed settings connect
        attached = Cluster.attach(name)            # another process finds the same settings on the containers
        assert attached.security.password == printed["sasl.password"]
        check_client_access(attached)
    finally:
        down = subprocess.run([sys.executable, "-m", "harness.cli", "cluster", "down", "--name", name],
                              capture_output=True, text=True, timeout=300)
    assert down.returncode == 0, down.stderr
    assert not os.path.exists(printed["ssl.ca.location"])


def test_pytest_plugin_cluster_with_security(kc_cluster_factory):
    """``kc_cluster_factory(security=...)`` (and ``--kc-security``): a cluster whose clients use TLS."""
    from confluent_kafka.admin import AdminClient
    cl = kc_cluster_factory(brokers=1, security="SSL")
    assert cl.client_config()["security.protocol"] == "SSL" and os.path.exists(cl.security.ca_file)
    assert list(AdminClient(cl.client_config()).list_topics(timeout=30).brokers) == [1]
    # a PLAINTEXT client does not get an answer from this listener
    from harness.protocol import ProtocolClient, ProtocolError
    with ProtocolClient(port=cl.brokers[1].host_port, timeout=3) as c, pytest.raises(ProtocolError):
        c.api_versions()


@pytest.mark.long
@pytest.mark.kafka_chaos(security="SASL_SSL:SCRAM-SHA-256")
def test_pytest_plugin_judged_run_on_sasl_ssl(kc_run, kc_ctx):
    """A judged run of the plugin on SASL_SSL: the leader of chaos-0 killed and restarted, PASS at teardown."""
    assert kc_run.cluster.security.protocol == "SASL_SSL"
    import time
    h = kc_ctx.fault("kill", "leader(chaos,0)")
    time.sleep(3)
    kc_ctx.heal(h)
