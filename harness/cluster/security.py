"""How clients reach a cluster's client-facing listener: the security protocol (PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL), the SASL mechanism and credentials, and the certificate authority the clients
trust (docs/security.md).

One :class:`Security` travels with a cluster (``ClusterSpec.security`` / ``Cluster.security``) and is
the only source of every client's settings: :meth:`Security.client_config` gives confluent-kafka's keys,
``Cluster.client_config()`` adds ``bootstrap.servers``; the project's protocol client reads the same
fields (protocol, mechanism, username, password, ca_file). :meth:`Security.describe` is what the run
record and the plan show: never a password or a key.

Written as ``PROTOCOL[:MECHANISM]`` on the command line (``--security SASL_SSL:SCRAM-SHA-512``) and in a
scenario file (``[cluster] security = "SASL_SSL:SCRAM-SHA-512"``), or as a table (a nodes file's
``[client]``; :meth:`Security.from_mapping`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness.errors import HarnessError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
DEFAULT_MECHANISM = "SCRAM-SHA-512"
# the user a cluster the harness starts creates and its clients log in as (the password is generated per run)
DEFAULT_USERNAME = "kafka-chaos"
_KEYS = ("protocol", "mechanism", "username", "password", "ca_file", "cert_file", "key_file")


@dataclass(frozen=True)
class Security:
    """The client-facing listener's security. ``mechanism`` is set exactly when the protocol is SASL_*."""

    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    ca_file: str | None = None          # PEM of the CA the clients trust (SSL, SASL_SSL)
    cert_file: str | None = None        # client certificate (mutual TLS), optional
    key_file: str | None = None

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise HarnessError(f"security protocol {self.protocol!r} is not one of {', '.join(PROTOCOLS)}")
        if self.sasl:
            if self.mechanism not in MECHANISMS:
                raise HarnessError(f"SASL mechanism {self.mechanism!r} is not one of {', '.join(MECHANISMS)}")
        elif self.mechanism is not None:
            raise HarnessError(f"security protocol {self.protocol} takes no SASL mechanism "
                               f"(got {self.mechanism}); use SASL_PLAINTEXT or SASL_SSL")
        if (self.cert_file is None) != (self.key_file is None):
            raise HarnessError("a client certificate needs both cert_file and key_file")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def plaintext(self) -> bool:
        return self.protocol == "PLAINTEXT"

    @property
    def scram(self) -> bool:
        return bool(self.mechanism and self.mechanism.startswith("SCRAM-"))

    # -- parsing -------------------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str, where: str = "--security") -> "Security":
        """``PROTOCOL[:MECHANISM]`` (case-insensitive) -> a Security without credentials or files (a cluster
        the harness starts fills them in: :meth:`with_credentials`). A SASL protocol without a mechanism
        takes SCRAM-SHA-512."""
        if not isinstance(text, str) or not text.strip():
            raise HarnessError(f"{where}: expected PROTOCOL[:MECHANISM], e.g. SASL_SSL:SCRAM-SHA-512")
        proto, _, mech = text.strip().upper().partition(":")
        proto, mech = proto.strip().replace("-", "_"), mech.strip() or None
        if proto not in PROTOCOLS:
            raise HarnessError(f"{where}: security protocol {proto!r} is not one of {', '.join(PROTOCOLS)}")
        if proto.startswith("SASL_") and mech is None:
            mech = DEFAULT_MECHANISM
        try:
            return cls(protocol=proto, mechanism=mech)
        except HarnessError as e:
            raise HarnessError(f"{where}: {e}") from None

    @classmethod
    def from_mapping(cls, d, where: str) -> "Security":
        """A table (a nodes file's ``[client]``, a scenario's ``[cluster] security`` table) or a
        ``PROTOCOL[:MECHANISM]`` string -> Security; HarnessError naming ``where`` and the key on any
        unknown key, wrong type or bad value."""
        if isinstance(d, str):
            return cls.parse(d, where)
        if not isinstance(d, dict):
            raise HarnessError(f"{where}: security must be a table or a PROTOCOL[:MECHANISM] string")
        unknown = sorted(set(d) - set(_KEYS))
        if unknown:
            raise HarnessError(f"{where}: unknown security key {unknown[0]!r} (known: {', '.join(_KEYS)})")
        for k, v in d.items():
            if not isinstance(v, str) or not v:
                raise HarnessError(f"{where}: security key {k!r} must be a non-empty string")
        proto = d.get("protocol", "PLAINTEXT").upper().replace("-", "_")
        mech = d.get("mechanism")
        mech = mech.upper() if mech else (DEFAULT_MECHANISM if proto.startswith("SASL_") else None)
        try:
            sec = cls(protocol=proto, mechanism=mech, username=d.get("username"), password=d.get("password"),
                      ca_file=d.get("ca_file"), cert_file=d.get("cert_file"), key_file=d.get("key_file"))
        except HarnessError as e:
            raise HarnessError(f"{where}: {e}") from None
        if sec.sasl and (not sec.username or sec.password is None):
            raise HarnessError(f"{where}: security protocol {sec.protocol} needs username and password")
        return sec

    def spec(self) -> str:
        """``PROTOCOL[:MECHANISM]``: what --security and a scenario's ``security`` take."""
        return f"{self.protocol}:{self.mechanism}" if self.mechanism else self.protocol

    def with_credentials(self, *, username: str | None = None, password: str | None = None,
                         ca_file: str | None = None) -> "Security":
        return replace(self, username=username if username is not None else self.username,
                       password=password if password is not None else self.password,
                       ca_file=ca_file if ca_file is not None else self.ca_file)

    # -- what clients use ----------------------------------------------------------------------------
    def client_config(self) -> dict[str, str]:
        """confluent-kafka (librdkafka) settings for this security; {} for PLAINTEXT."""
        if self.plaintext:
            return {}
        cfg = {"security.protocol": self.protocol}
        if self.sasl:
            cfg.update({"sasl.mechanism": self.mechanism, "sasl.username": self.username or "",
                        "sasl.password": self.password or ""})
        if self.tls:
            if self.ca_file:
                cfg["ssl.ca.location"] = self.ca_file
            if self.cert_file:
                cfg.update({"ssl.certificate.location": self.cert_file, "ssl.key.location": self.key_file})
            # the brokers' certificates name 127.0.0.1 and localhost (their published ports) and their
            # network alias: librdkafka checks the host name against the SANs (its default, said here)
            cfg["ssl.endpoint.identification.algorithm"] = "https"
        return cfg

    def describe(self) -> dict:
        """What the run record and the plan show: no password, no key, no file contents."""
        out: dict = {"protocol": self.protocol}
        if self.mechanism:
            out["mechanism"] = self.mechanism
        if self.username:
            out["username"] = self.username
        if self.tls:
            out["ca"] = "given" if self.ca_file else "system"
            out["client_certificate"] = bool(self.cert_file)
        return out

    def __repr__(self) -> str:      # a password never reaches a log line through repr()
        return f"Security({self.spec()}, username={self.username!r})"


PLAINTEXT = Security()
