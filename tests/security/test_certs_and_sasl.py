"""Certificates made per run (harness/cluster/certs.py) checked by a real TLS stack, and the SASL exchanges
of the protocol client (harness/protocol/sasl.py): SCRAM against RFC 7677's SHA-256 test vector and against
a server side computed from :func:`scram_credential` (SHA-512), PLAIN's message."""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import socket
import ssl
import threading

import pytest
from cryptography import x509

from harness.cluster.certs import CertificateAuthority, last_cert
from harness.cluster.security import Security
from harness.protocol.client import AuthenticationError, ProtocolClient
from harness.protocol.sasl import SaslAuthenticationFailed, ScramClient, plain_initial, scram_credential


@pytest.fixture(scope="module")
def ca():
    return CertificateAuthority("h3-unit")


def test_server_certificate_names_alias_localhost_and_loopback_and_chains_to_the_ca(ca):
    sc = ca.server("broker2")
    leaf = x509.load_pem_x509_certificate(sc.cert_pem.encode())
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["broker2", "localhost"]
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    leaf.verify_directly_issued_by(ca.cert)
    assert last_cert(sc.cert_pem).strip() == ca.cert_pem.strip()
    assert sc.key_pem.startswith("-----BEGIN PRIVATE KEY-----")       # PKCS#8, what ssl.keystore.key takes


def _tls_server(tmp_path, sc):
    (tmp_path / "chain.pem").write_text(sc.cert_pem)
    (tmp_path / "key.pem").write_text(sc.key_pem)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "chain.pem", tmp_path / "key.pem")
    srv = socket.create_server(("127.0.0.1", 0))

    def serve():
        srv.settimeout(10)
        try:
            conn, _ = srv.accept()
            with ctx.wrap_socket(conn, server_side=True) as c:
                c.recv(1)
        except (OSError, ssl.SSLError):
            pass
    threading.Thread(target=serve, daemon=True).start()
    return srv


def test_a_tls_client_trusting_the_ca_verifies_127_0_0_1(ca, tmp_path):
    srv = _tls_server(tmp_path, ca.server("broker1"))
    (tmp_path / "ca.pem").write_text(ca.cert_pem)
    ctx = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
    with socket.create_connection(srv.getsockname(), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            assert tls.getpeercert()["subject"][-1][0][1] == "broker1"
    srv.close()


def test_the_protocol_client_refuses_a_certificate_of_another_ca(ca, tmp_path):
    srv = _tls_server(tmp_path, ca.server("broker1"))
    other = tmp_path / "other.pem"
    other.write_text(CertificateAuthority("someone-else").cert_pem)
    with ProtocolClient(port=srv.getsockname()[1], timeout=5, security=Security("SSL", ca_file=str(other))) as c:
        with pytest.raises(AuthenticationError, match="TLS: certificate verify failed"):
            c.api_versions()
    srv.close()


def test_scram_sha_256_rfc7677_vector():
    c = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert c.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = c.final(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    c.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    with pytest.raises(SaslAuthenticationFailed, match="signature does not match"):
        c.verify(b"v=" + base64.b64encode(b"\0" * 32))


@pytest.mark.parametrize("password, accepted", [("right horse", True), ("wrong horse", False)])
def test_scram_sha_512_against_a_stored_credential(password, accepted):
    """The server side of RFC 5802 §3 from what scram_credential() stores: it accepts the proof of the
    right password only, and its signature verifies at the client."""
    cred = scram_credential("SCRAM-SHA-512", "right horse", salt=b"0123456789abcdef")
    c = ScramClient("SCRAM-SHA-512", "ali,ce=", password)
    first = c.first().decode()
    assert first.startswith("n,,n=ali=2Cce=3D,r=")
    bare = first[3:]
    server_first = f"r={c.nonce}srv,s={base64.b64encode(cred.salt).decode()},i={cred.iterations}"
    final = c.final(server_first.encode()).decode()
    without_proof, proof = final.rsplit(",p=", 1)
    auth = f"{bare},{server_first},{without_proof}".encode()
    signature = hmac.new(cred.stored_key, auth, "sha512").digest()
    client_key = bytes(a ^ b for a, b in zip(base64.b64decode(proof), signature))
    assert (hashlib.sha512(client_key).digest() == cred.stored_key) is accepted
    if accepted:
        c.verify(b"v=" + base64.b64encode(hmac.new(cred.server_key, auth, "sha512").digest()))


def test_scram_server_error_and_plain_message():
    c = ScramClient("SCRAM-SHA-256", "u", "p")
    with pytest.raises(SaslAuthenticationFailed, match="the server says unknown-user"):
        c.final(b"e=unknown-user")
    assert plain_initial("u", "p") == b"\0u\0p"
