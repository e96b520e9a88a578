"""SASL for the protocol client: the SaslHandshake (v1) and SaslAuthenticate (v1, v2) messages and the
two mechanisms a cluster here offers, PLAIN (RFC 4616) and SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802,
RFC 7677; without channel binding, as Kafka). :class:`ScramClient` is the client side of the exchange;
:func:`scram_credential` computes what a server stores for a password (salt, StoredKey, ServerKey).

An authentication the broker refuses raises :class:`SaslAuthenticationFailed` (its message starts with
"SASL authentication failed", which the harness's preflight shows as it is).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import unicodedata
from dataclasses import dataclass

from harness.protocol.header import encode_request_header, error_name
from harness.protocol.wire import Reader, Writer

API_SASL_HANDSHAKE = 17
API_SASL_AUTHENTICATE = 36
SASL_AUTHENTICATE_VERSIONS = (1, 2)
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# Kafka's minimum (ScramMechanism.minIterations); the harness creates its users with this count
SCRAM_ITERATIONS = 4096


class SaslAuthenticationFailed(Exception):
    """The broker refused the credentials or the mechanism (a message for a person)."""


# -- messages ------------------------------------------------------------------------------------
def encode_handshake_request(correlation_id: int, client_id: str | None, mechanism: str) -> bytes:
    w = Writer()
    encode_request_header(w, API_SASL_HANDSHAKE, 1, correlation_id, client_id, flexible=False)
    w.string(mechanism, compact=False)
    return w.bytes()


def decode_handshake_response(body: bytes) -> tuple[str | None, list[str]]:
    """(error name or None, the mechanisms the listener enables)."""
    r = Reader(body)
    err = r.int16()
    mechs = r.array(lambda rr: rr.string(compact=False), compact=False) or []
    r.expect_end("SaslHandshake response")
    return error_name(err), [m for m in mechs if m]


def _bytes(w: Writer, b: bytes, compact: bool) -> None:
    if compact:
        w.uvarint(len(b) + 1)
    else:
        w.int32(len(b))
    w.raw(b)


def _read_bytes(r: Reader, compact: bool) -> bytes:
    n = r.uvarint() - 1 if compact else r.int32()
    return b"" if n < 0 else r._take(n, "bytes")


def encode_authenticate_request(version: int, correlation_id: int, client_id: str | None, auth: bytes) -> bytes:
    flexible = version >= 2
    w = Writer()
    encode_request_header(w, API_SASL_AUTHENTICATE, version, correlation_id, client_id, flexible)
    _bytes(w, auth, flexible)
    if flexible:
        w.empty_tagged_fields()
    return w.bytes()


def decode_authenticate_response(body: bytes, version: int) -> tuple[str | None, str | None, bytes]:
    """(error name or None, the broker's error message, the server's auth bytes)."""
    flexible = version >= 2
    r = Reader(body)
    err = r.int16()
    msg = r.string(compact=flexible)
    data = _read_bytes(r, flexible)
    if version >= 1:
        r.int64()               # session lifetime
    if flexible:
        r.tagged_fields()
    r.expect_end("SaslAuthenticate response")
    return error_name(err), msg, data


def authenticate_response_flexible(version: int) -> bool:
    return version >= 2


# -- mechanisms ----------------------------------------------------------------------------------
def plain_initial(username: str, password: str) -> bytes:
    """RFC 4616: authzid (empty) NUL authcid NUL password."""
    return b"\0" + username.encode() + b"\0" + password.encode()


def _saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _normalize(password: str) -> bytes:
    # SASLprep in its common form (Kafka's ScramFormatter uses the UTF-8 bytes as they are; the
    # passwords the harness makes are ASCII, for which both agree)
    return unicodedata.normalize("NFKC", password).encode()


def _hi(hash_name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(hash_name, password, salt, iterations)


def _hmac(hash_name: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hash_name).digest()


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def scram_credential(mechanism: str, password: str, salt: bytes | None = None,
                     iterations: int = SCRAM_ITERATIONS) -> ScramCredential:
    """What a server stores for ``password`` (RFC 5802 §3)."""
    hn = _HASHES[mechanism]
    salt = salt if salt is not None else os.urandom(16)
    salted = _hi(hn, _normalize(password), salt, iterations)
    client_key = _hmac(hn, salted, b"Client Key")
    return ScramCredential(salt, hashlib.new(hn, client_key).digest(), _hmac(hn, salted, b"Server Key"), iterations)


class ScramClient:
    """One SCRAM exchange: :meth:`first` -> server-first -> :meth:`final` -> server-final -> :meth:`verify`."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None):
        if mechanism not in _HASHES:
            raise ValueError(f"not a SCRAM mechanism: {mechanism}")
        self.hash = _HASHES[mechanism]
        self.username, self.password = username, password
        self.nonce = nonce or base64.b64encode(os.urandom(24)).decode().rstrip("=")
        self._bare = f"n={_saslname(username)},r={self.nonce}"
        self._server_signature: bytes | None = None

    def first(self) -> bytes:
        return ("n,," + self._bare).encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attrs = dict(kv.split("=", 1) for kv in text.split(",") if "=" in kv)
        if "e" in attrs:
            raise SaslAuthenticationFailed(f"SASL authentication failed: the server says {attrs['e']}")
        nonce, salt, iterations = attrs.get("r", ""), attrs.get("s"), attrs.get("i")
        if not nonce.startswith(self.nonce) or not salt or not iterations:
            raise SaslAuthenticationFailed("SASL authentication failed: a malformed SCRAM server-first message")
        salted = _hi(self.hash, _normalize(self.password), base64.b64decode(salt), int(iterations))
        client_key = _hmac(self.hash, salted, b"Client Key")
        stored_key = hashlib.new(self.hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._bare},{text},{without_proof}".encode()
        signature = _hmac(self.hash, stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        self._server_signature = _hmac(self.hash, _hmac(self.hash, salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        text = server_final.decode()
        attrs = dict(kv.split("=", 1) for kv in text.split(",") if "=" in kv)
        if "e" in attrs:
            raise SaslAuthenticationFailed(f"SASL authentication failed: the server says {attrs['e']}")
        if self._server_signature is None or base64.b64decode(attrs.get("v", "")) != self._server_signature:
            raise SaslAuthenticationFailed("SASL authentication failed: the server's SCRAM signature does not "
                                           "match (not the server that holds this user's credential)")
