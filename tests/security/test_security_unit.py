"""The client-facing listener's security without a cluster: ``Security`` parsing and what it gives clients
and the record (harness/cluster/security.py), the broker settings of a secured EXTERNAL listener and what
the record keeps of them (harness/cluster/listener_security.py), a scenario file's ``[cluster] security``
and ``--security`` on the command line (one line, exit 2, for a bad value)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.cluster import certs
from harness.cluster.listener_security import ListenerSecurity, from_env, public_config
from harness.cluster.security import Security
from harness.distributions.base import NodePlan, listeners
from harness.errors import HarnessError
from harness.scenario.file import ScenarioFileError, load_file


@pytest.mark.parametrize("text, spec", [
    ("PLAINTEXT", "PLAINTEXT"), ("ssl", "SSL"), ("SASL_SSL", "SASL_SSL:SCRAM-SHA-512"),
    ("sasl_plaintext:plain", "SASL_PLAINTEXT:PLAIN"), ("SASL-SSL:scram-sha-256", "SASL_SSL:SCRAM-SHA-256")])
def test_parse_normalises(text, spec):
    assert Security.parse(text).spec() == spec


@pytest.mark.parametrize("text, words", [
    ("TLS", "is not one of PLAINTEXT, SSL"), ("SSL:PLAIN", "takes no SASL mechanism"),
    ("SASL_SSL:GSSAPI", "SASL mechanism 'GSSAPI' is not one of"), ("", "expected PROTOCOL[:MECHANISM]")])
def test_parse_refuses_in_one_line(text, words):
    with pytest.raises(HarnessError) as e:
        Security.parse(text, "--security")
    assert words in str(e.value) and str(e.value).startswith("--security: ") and "\n" not in str(e.value)


def test_from_mapping_names_where_and_key():
    sec = Security.from_mapping({"protocol": "SASL_SSL", "mechanism": "PLAIN", "username": "u", "password": "p",
                                 "ca_file": "/ca.pem"}, "nodes.toml [client]")
    assert (sec.protocol, sec.mechanism, sec.username, sec.ca_file) == ("SASL_SSL", "PLAIN", "u", "/ca.pem")
    with pytest.raises(HarnessError, match=r"^nodes.toml \[client\]: unknown security key 'pasword'"):
        Security.from_mapping({"protocol": "SASL_SSL", "pasword": "x"}, "nodes.toml [client]")
    with pytest.raises(HarnessError, match="needs username and password"):
        Security.from_mapping({"protocol": "SASL_PLAINTEXT"}, "f")
    with pytest.raises(HarnessError, match="needs both cert_file and key_file"):
        Security.from_mapping({"protocol": "SSL", "cert_file": "/c.pem"}, "f")
    with pytest.raises(HarnessError, match="must be a non-empty string"):
        Security.from_mapping({"protocol": "SSL", "ca_file": 3}, "f")
    assert Security.from_mapping("SSL", "f") == Security("SSL")


def test_client_config_and_describe_keep_secrets_out_of_the_record():
    sec = Security("SASL_SSL", "SCRAM-SHA-512", "alice", "s3cret", "/tmp/ca.pem")
    assert sec.client_config() == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
        "sasl.password": "s3cret", "ssl.ca.location": "/tmp/ca.pem", "ssl.endpoint.identification.algorithm": "https"}
    described = sec.describe()
    assert described == {"protocol": "SASL_SSL", "mechanism": "SCRAM-SHA-512", "username": "alice", "ca": "given",
                         "client_certificate": False}
    assert "s3cret" not in repr(sec) and "s3cret" not in str(described)
    assert Security().client_config() == {}


def _node(alias="broker1", port=29092):
    return type("N", (), {"node_id": 1, "alias": alias, "host_port": port})()


def _plan(node):
    cfg = {"log.dirs": "/var/lib/kafka/data", **listeners(node, controller=True)}
    return NodePlan("kraft", {"KC_CONFIG": "\n".join(f"{k}={v}" for k, v in cfg.items())}, cfg)


def test_external_listener_secured_internal_and_controller_stay_plaintext(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    ls = ListenerSecurity.prepare(Security.parse("SASL_SSL:SCRAM-SHA-512"), "h3unit")
    try:
        assert ls.security.password and ls.security.username == "kafka-chaos"
        assert ls.security.ca_file.startswith(str(tmp_path)) and open(ls.security.ca_file).read() == ls.ca.cert_pem
        node = _node()
        plan = ls.apply(_plan(node), node)
        cfg = plan.config
        assert cfg["listener.security.protocol.map"] == "INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL,CONTROLLER:PLAINTEXT"
        assert cfg["listener.name.external.ssl.keystore.type"] == "PEM"
        assert cfg["listener.name.external.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
        assert "ScramLoginModule" in cfg["listener.name.external.scram-sha-512.sasl.jaas.config"]
        # one properties line each: the PEM's line breaks are \n escapes java.util.Properties reads back
        assert "\n" not in cfg["listener.name.external.ssl.keystore.key"]
        assert cfg["listener.name.external.ssl.keystore.key"].startswith("-----BEGIN PRIVATE KEY-----\\n")
        assert len(plan.env["KC_CONFIG"].splitlines()) == len(cfg)
        kept = public_config(cfg)
        assert not any(k.endswith(("keystore.key", "certificate.chain", "jaas.config")) for k in kept) and ls.security.password not in str(kept)
        # what Cluster.attach reads back from the container's environment
        back = from_env(plan.env, "h3unit")
        assert (back.spec(), back.username, back.password) == ("SASL_SSL:SCRAM-SHA-512", "kafka-chaos",
                                                               ls.security.password)
        assert open(back.ca_file).read() == ls.ca.cert_pem
        # PLAIN: the user is in the listener's JAAS configuration
        plain = ListenerSecurity.prepare(Security.parse("SASL_PLAINTEXT:PLAIN"), "h3unit2")
        jaas = plain.apply(_plan(node), node).config["listener.name.external.plain.sasl.jaas.config"]
        assert f'user_kafka-chaos="{plain.security.password}"' in jaas and plain.ca is None
    finally:
        certs.remove_tls_dir("h3unit")
    import os
    assert not os.path.exists(certs.tls_dir("h3unit"))


def test_scram_user_command_by_kafka_version():
    ls = ListenerSecurity(Security("SASL_SSL", "SCRAM-SHA-256", "u", "pw"), "x")
    assert "kafka.admin.ConfigCommand" in ls.scram_command("3.9.2", "broker1:9093")
    cmd = ls.scram_command("4.4.0", "broker1:9093,broker2:9093")
    assert "org.apache.kafka.tools.ConfigCommand" in cmd
    assert cmd[cmd.index("--add-config") + 1] == "SCRAM-SHA-256=[iterations=4096,password=pw]"
    assert cmd[cmd.index("--bootstrap-server") + 1] == "broker1:9093,broker2:9093"


def test_scenario_file_security(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('name = "x.secure"\n[cluster]\nsecurity = "sasl_plaintext:plain"\n')
    assert load_file(f).scenario.security == "SASL_PLAINTEXT:PLAIN"
    f.write_text('name = "x.secure"\n[cluster]\nsecurity = "SSL:SCRAM-SHA-512"\n')
    with pytest.raises(ScenarioFileError) as e:
        load_file(f)
    assert str(e.value) == (f"{f}:3: cluster.security: security protocol SSL takes no SASL mechanism "
                            "(got SCRAM-SHA-512); use SASL_PLAINTEXT or SASL_SSL")


@pytest.mark.parametrize("argv", [["run", "smoke", "--security", "SSL:PLAIN"],
                                  ["cluster", "up", "--security", "KERBEROS"]])
def test_bad_security_option_is_one_line_and_exit_2(argv):
    res = subprocess.run([sys.executable, "-m", "harness.cli", *argv], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafka-chaos: error: --security: "), res.stderr


def test_kafka_before_2_7_is_refused_in_one_line():
    from harness.cluster.listener_security import check_kafka_version
    with pytest.raises(HarnessError, match=r"Kafka 2.6.3 predates PEM keystores .* use Kafka 2.7 or newer"):
        check_kafka_version(Security.parse("SSL"), "2.6.3")
    check_kafka_version(Security.parse("SSL"), "2.7.0")
    check_kafka_version(Security(), "2.4.1")          # PLAINTEXT: any version
