"""The broker side of a cluster's :class:`~harness.cluster.security.Security` (docs/security.md): what the
client-facing EXTERNAL listener of every Kafka node the harness starts is configured with, the SCRAM user
created before any client connects, and how a cluster found running (``Cluster.attach``) gets it back.

- **TLS** (SSL, SASL_SSL): a CA and one server certificate per node made for this cluster
  (:mod:`harness.cluster.certs`), given to the broker inline as PEM (``ssl.keystore.type=PEM``,
  ``ssl.keystore.certificate.chain``, ``ssl.keystore.key``; Kafka 2.7+, KIP-651), so no file has to be
  put into a container. The CA certificate clients trust is written to the cluster's TLS directory on
  the host (:func:`harness.cluster.certs.tls_dir`) and removed with the cluster.
- **SASL**: PLAIN by the listener's JAAS configuration (``user_<name>="<password>"``); SCRAM-SHA-256/512
  by a credential created with Kafka's ``ConfigCommand`` over the INTERNAL listener, run inside a broker
  container once the first broker has started (ZooKeeper and KRaft mode alike), before the cluster is
  waited for. The user and a password made for the run (unless the scenario names them) are what every
  client logs in with.
- The INTERNAL (inter-broker) and CONTROLLER listeners stay PLAINTEXT: they exist only on the cluster's
  private Docker network, no client the harness runs uses them, and keeping them plain leaves the faults
  (partitions, netem) and the KRaft quorum exactly as in a PLAINTEXT run; ZooKeeper connections stay
  plaintext too. What a run tests is what its clients see.

Everything secret (the password, the private keys) is in the containers' configuration and
environment only; :func:`public_config` is what the run record keeps.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field, replace

from harness.cluster import certs
from harness.cluster.admin_tool import RUN_CLASS, TOOL_JVM_OPTS
from harness.cluster.security import DEFAULT_USERNAME, Security
from harness.errors import ClusterError, HarnessError

EXTERNAL = "listener.name.external."
# the environment of every Kafka node container of a secured cluster (read back by Cluster.attach)
ENV_SECURITY, ENV_USER, ENV_PASSWORD, ENV_CA = "KC_SECURITY", "KC_SASL_USERNAME", "KC_SASL_PASSWORD", "KC_TLS_CA"
_SECRET_MARKS = ("ssl.keystore.key", "ssl.keystore.certificate.chain", "sasl.jaas.config", "password")
SCRAM_TOOL_TIMEOUT_S = 90


def public_config(cfg: dict[str, str]) -> dict[str, str]:
    """``cfg`` without its secrets and certificates (what metadata.json keeps)."""
    return {k: v for k, v in cfg.items() if not any(m in k for m in _SECRET_MARKS)}


def _pem_value(pem: str) -> str:
    # one properties line: java.util.Properties turns "\n" back into a line break
    return pem.strip().replace("\n", "\\n")


def check_kafka_version(security: Security, kafka_version: str | None) -> None:
    """HarnessError when ``security`` needs more than Kafka ``kafka_version`` has (PEM keystores, KIP-651, and
    SCRAM users created over the Admin API, KIP-554, both 2.7); an unknown version passes."""
    from harness.distributions.base import version_key
    key = version_key(kafka_version)
    if not security.plaintext and key is not None and key < (2, 7):
        raise HarnessError(f"--security {security.spec()}: Kafka {kafka_version} predates PEM keystores and SCRAM "
                           "users created over the Admin API (KIP-651, KIP-554); use Kafka 2.7 or newer "
                           "(docs/security.md)")


@dataclass
class ListenerSecurity:
    """One cluster's listener security: the client-side :attr:`security` (credentials and CA file filled
    in) and what the brokers need (the CA, made when TLS is asked)."""
    security: Security
    cluster_name: str
    ca: certs.CertificateAuthority | None = None
    _server: dict[str, certs.ServerCert] = field(default_factory=dict)

    @classmethod
    def prepare(cls, asked: Security, cluster_name: str) -> "ListenerSecurity":
        """Make what the cluster ``cluster_name`` needs for ``asked`` (a CA, a password)."""
        sec = asked
        if sec.sasl:
            sec = sec.with_credentials(username=sec.username or DEFAULT_USERNAME,
                                       password=sec.password if sec.password is not None else secrets.token_urlsafe(18))
        ca = None
        if sec.tls:
            ca = certs.CertificateAuthority(cluster_name)
            sec = replace(sec, ca_file=certs.write_ca(cluster_name, ca.cert_pem))
        return cls(sec, cluster_name, ca)

    def server_cert(self, alias: str) -> certs.ServerCert:
        if alias not in self._server:
            self._server[alias] = self.ca.server(alias)
        return self._server[alias]

    def apply(self, plan, node):
        """``plan`` (a distribution's NodePlan for a Kafka node with an EXTERNAL listener) with the EXTERNAL
        listener secured; a controller-only node (no EXTERNAL listener) unchanged."""
        cfg = dict(plan.config)
        proto_map = cfg.get("listener.security.protocol.map", "")
        if "EXTERNAL:" not in proto_map:
            return plan
        sec = self.security
        cfg["listener.security.protocol.map"] = ",".join(
            f"EXTERNAL:{sec.protocol}" if p.startswith("EXTERNAL:") else p for p in proto_map.split(","))
        if sec.tls:
            sc = self.server_cert(node.alias)
            cfg.update({EXTERNAL + "ssl.keystore.type": "PEM",
                        EXTERNAL + "ssl.keystore.certificate.chain": _pem_value(sc.cert_pem),
                        EXTERNAL + "ssl.keystore.key": _pem_value(sc.key_pem),
                        EXTERNAL + "ssl.client.auth": "none"})
        if sec.sasl:
            mech = sec.mechanism
            cfg[EXTERNAL + "sasl.enabled.mechanisms"] = mech
            if mech == "PLAIN":
                jaas = (f'org.apache.kafka.common.security.plain.PlainLoginModule required '
                        f'user_{sec.username}="{sec.password}";')
            else:
                jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            cfg[f"{EXTERNAL}{mech.lower()}.sasl.jaas.config"] = jaas
        env = dict(plan.env)
        if "KC_CONFIG" not in env:
            raise HarnessError("--security needs a broker the harness configures (a kafka-chaos Apache Kafka "
                               "image); this distribution's nodes take no listener settings from the harness")
        env["KC_CONFIG"] = "\n".join(f"{k}={v}" for k, v in cfg.items())
        env[ENV_SECURITY] = sec.spec()
        if sec.sasl:
            env[ENV_USER], env[ENV_PASSWORD] = sec.username, sec.password
        if self.ca is not None:
            env[ENV_CA] = self.ca.cert_pem
        return replace(plan, config=cfg, env=env)

    # -- SCRAM users ----------------------------------------------------------------------------------
    def scram_command(self, kafka_version: str | None, bootstrap: str) -> list[str]:
        """The ConfigCommand that creates the user's SCRAM credential (class by Kafka version)."""
        sec = self.security
        major = int((kafka_version or "4").split(".")[0])
        klass = "org.apache.kafka.tools.ConfigCommand" if major >= 4 else "kafka.admin.ConfigCommand"
        add = f"{sec.mechanism}=[iterations=4096,password={sec.password}]"
        return ["env", f"JAVA_TOOL_OPTIONS={TOOL_JVM_OPTS}", "timeout", "-k", "5", str(SCRAM_TOOL_TIMEOUT_S),
                RUN_CLASS, klass, "--bootstrap-server", bootstrap, "--alter", "--add-config", add,
                "--entity-type", "users", "--entity-name", sec.username]

    def create_users(self, cluster, deadline: float) -> None:
        """SCRAM: create the user's credential through the INTERNAL listener, inside a broker container,
        as soon as a broker has started (bounded by ``deadline``); PLAIN and no SASL: nothing to do."""
        if not self.security.scram:
            return
        nodes = [cluster.brokers[b] for b in cluster.broker_ids]
        while True:
            up = [n for n in nodes if n.started()]
            if up:
                break
            cluster._check_running(nodes)
            if time.monotonic() > deadline:
                raise ClusterError(f"{cluster.name}: no broker started in time to create the SCRAM user")
            time.sleep(0.5)
        bootstrap = ",".join(f"{n.alias}:9093" for n in nodes)
        cmd = self.scram_command(cluster.image.kafka_version if cluster.image else None, bootstrap)
        last = ""
        while time.monotonic() < deadline:
            code, out = up[0].exec(cmd)
            if code == 0:
                return
            last = out.strip().splitlines()[-1:] or [f"exit {code}"]
            last = last[0]
            time.sleep(1.0)
        raise ClusterError(f"{cluster.name}: creating the SCRAM user {self.security.username!r} failed: {last[:300]}")


def from_env(env: dict[str, str], cluster_name: str) -> Security | None:
    """The client-side Security of an attached cluster from a Kafka node container's environment
    (None: the container has none of it, i.e. PLAINTEXT)."""
    spec = env.get(ENV_SECURITY)
    if not spec:
        return None
    sec = Security.parse(spec, f"cluster {cluster_name}")
    if sec.sasl:
        sec = sec.with_credentials(username=env.get(ENV_USER), password=env.get(ENV_PASSWORD))
    if sec.tls and env.get(ENV_CA):
        sec = sec.with_credentials(ca_file=certs.write_ca(cluster_name, env[ENV_CA]))
    return sec


class ClientAccessError(HarnessError):
    """The cluster's clients cannot connect with its Security: refused credentials, an untrusted or
    mismatched certificate. Said in one line before any fault (the run is UNKNOWN, exit 4)."""


def check_client_access(cluster, security: Security | None = None, timeout_s: float = 15.0) -> None:
    """Connect to the cluster the way its clients will (``security``, default the cluster's), right
    after it is up and before anything else: the protocol client (TLS handshake, SASL) and librdkafka
    (a Metadata request). A refused SASL login is asked again until ``timeout_s`` (a SCRAM credential
    just created reaches every broker a moment later); a certificate that does not verify is final.
    Raises :class:`ClientAccessError` naming "SASL authentication failed" or "certificate verify failed"."""
    from harness.protocol import ProtocolError, first_answer
    from harness.protocol.client import AuthenticationError
    sec = security or cluster.security
    if sec.plaintext:
        return
    endpoints = [cluster.brokers[b].endpoint for b in cluster.broker_ids]
    what = f"cluster {cluster.name}'s clients cannot connect with {sec.spec()}"
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            first_answer(endpoints, lambda c: c.metadata([]), 5.0, security=sec)
            break
        except AuthenticationError as e:
            if "certificate verify failed" in str(e) or time.monotonic() > deadline:
                raise ClientAccessError(f"{what}: {e}") from None
        except ProtocolError as e:
            if time.monotonic() > deadline:
                raise ClientAccessError(f"{what}: {e}") from None
        time.sleep(1.0)
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient
    from harness.clientlog import with_logger
    try:
        AdminClient(with_logger({"bootstrap.servers": cluster.bootstrap_servers,
                                 **sec.client_config()})).list_topics(timeout=max(5.0, deadline - time.monotonic()))
    except KafkaException as e:
        raise ClientAccessError(f"{what} (librdkafka): {e.args[0].str() if e.args else e}") from None
