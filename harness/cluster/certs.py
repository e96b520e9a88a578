"""Certificates for a cluster's TLS listeners, made per run with ``cryptography`` and never committed:
one certificate authority and one server certificate per Kafka node, signed by it, naming the node's
network alias (``broker1``), ``localhost`` and ``127.0.0.1`` (the address every host client dials, so
host-name verification holds). Everything is PEM: the brokers read it as ``ssl.keystore.type=PEM``
(Kafka 2.7+, KIP-651), the clients (librdkafka, the protocol client's :mod:`ssl`) as a CA file.

Keys are RSA 2048 (every JVM and librdkafka reads them); certificates are valid from an hour ago (clock
skew between the host and a container) for 30 days (a ``cluster up`` cluster may live that long).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_DAYS = 30


@dataclass(frozen=True)
class ServerCert:
    cert_pem: str       # the node's certificate, then the CA's (the chain a client is shown)
    key_pem: str        # PKCS#8, unencrypted (it never leaves the cluster's containers and this run)


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem_key(key) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def _pem_cert(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


class CertificateAuthority:
    """A CA made now (``cn`` names it: the cluster), signing server certificates."""

    def __init__(self, cn: str):
        self.key = _key()
        now = datetime.datetime.now(datetime.timezone.utc)
        name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafka-chaos"),
                          x509.NameAttribute(NameOID.COMMON_NAME, f"kafka-chaos CA {cn}"[:64])])
        self.name = name
        self.cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(hours=1))
                     .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                  content_commitment=False, key_encipherment=False,
                                                  data_encipherment=False, key_agreement=False,
                                                  encipher_only=False, decipher_only=False), critical=True)
                     .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
                     .sign(self.key, hashes.SHA256()))

    @property
    def cert_pem(self) -> str:
        return _pem_cert(self.cert)

    def server(self, host: str, extra_dns: tuple[str, ...] = ("localhost",),
               ips: tuple[str, ...] = ("127.0.0.1",)) -> ServerCert:
        """A server certificate for ``host`` (its CN and first DNS name), ``extra_dns`` and ``ips``."""
        key = _key()
        now = datetime.datetime.now(datetime.timezone.utc)
        sans = [x509.DNSName(host)] + [x509.DNSName(d) for d in extra_dns if d != host]
        sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafka-chaos"),
                                         x509.NameAttribute(NameOID.COMMON_NAME, host)]))
                .issuer_name(self.name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
                .add_extension(x509.SubjectAlternativeName(sans), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                               critical=False)
                .sign(self.key, hashes.SHA256()))
        return ServerCert(_pem_cert(cert) + self.cert_pem, _pem_key(key))


def tls_dir(cluster_name: str) -> str:
    """Where a cluster's client-side files (the CA certificate) live on this host while it runs:
    ``$TMPDIR/kafka-chaos-<uid>/tls/<cluster>`` (private to the user; removed with the cluster)."""
    import tempfile
    return os.path.join(tempfile.gettempdir(), f"kafka-chaos-{os.getuid()}", "tls", cluster_name)


def write_ca(cluster_name: str, ca_pem: str) -> str:
    """Write the CA certificate clients trust into :func:`tls_dir` (mode 0700 directory); its path."""
    d = tls_dir(cluster_name)
    os.makedirs(d, mode=0o700, exist_ok=True)
    path = os.path.join(d, "ca.pem")
    tmp = path + f".{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(ca_pem)
    os.replace(tmp, path)
    return path


def remove_tls_dir(cluster_name: str) -> None:
    shutil.rmtree(tls_dir(cluster_name), ignore_errors=True)


def remove_all_tls_dirs() -> None:
    shutil.rmtree(os.path.dirname(tls_dir("x")), ignore_errors=True)


def last_cert(chain_pem: str) -> str:
    """The last certificate of a PEM chain (a node's chain ends with the CA's)."""
    marker = "-----BEGIN CERTIFICATE-----"
    i = chain_pem.rfind(marker)
    return chain_pem[i:].strip() + "\n" if i >= 0 else ""
