"""A small blocking Kafka protocol client over one TCP connection to a broker (an :class:`Endpoint`).

It speaks only the requests in :mod:`harness.protocol.messages` (ApiVersions, Metadata v7+,
DescribeQuorum, DescribeTopicPartitions, FindCoordinator) and :mod:`harness.protocol.admin_messages`
(ListPartitionReassignments, AlterPartitionReassignments, DescribeLogDirs) and
:mod:`harness.protocol.share_messages` (DescribeShareGroupOffsets) and negotiates each version
with ApiVersions. Every socket operation is bounded by ``timeout`` seconds; any failure (refused, reset, timed out, malformed answer) closes the connection
and raises :class:`ProtocolError` naming the address and request, so a caller sampling a cluster
under faults can record the error and try again later.

Only loopback addresses and the hosts a loaded nodes file names are accepted
(harness/protocol/endpoint.py): the harness never sends traffic anywhere else.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
from typing import Callable, Iterable, TypeVar

from harness.errors import HarnessError
from harness.protocol import admin_messages as a
from harness.protocol import header as h
from harness.protocol import messages as m
from harness.protocol import sasl
from harness.protocol import share_messages as sm
from harness.protocol.endpoint import LOOPBACK, Endpoint, require_permitted
from harness.protocol.wire import DecodeError, Reader

T = TypeVar("T")
MAX_RESPONSE_BYTES = 64 * 1024 * 1024


class ProtocolError(HarnessError):
    """A request could not be completed (connection, timeout, decoding, or unsupported API)."""


class UnsupportedApi(ProtocolError):
    """The broker does not speak any version of the API that this client implements."""


class AuthenticationError(ProtocolError):
    """The broker refused this client's SASL credentials or mechanism, or its TLS certificate is not one
    this client trusts: asking again will not help (the harness's preflight says so and stops)."""


def tls_context(security) -> ssl.SSLContext:
    """The TLS context of ``security`` (a :class:`harness.cluster.security.Security`): the CA file it
    names (else the system's), host names checked, its client certificate when it has one."""
    ctx = ssl.create_default_context(cafile=getattr(security, "ca_file", None) or None)
    if getattr(security, "cert_file", None):
        ctx.load_cert_chain(security.cert_file, security.key_file)
    return ctx


class ProtocolClient:
    """One connection to ``host:port``; use as a context manager or call :meth:`close`."""

    def __init__(self, host: str = LOOPBACK, port: int = 9092, timeout: float = 5.0,
                 client_id: str = "kafka-chaos-protocol", security=None):
        require_permitted(host)
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        self.host, self.port, self.timeout, self.client_id = host, int(port), timeout, client_id
        self._sock: socket.socket | None = None
        self._correlation = 0
        self._versions: m.ApiVersionsResult | None = None
        # how the listener is reached (a harness.cluster.security.Security; None or PLAINTEXT: plain TCP)
        self.security = security if security is not None and security.protocol != "PLAINTEXT" else None
        self._tls = tls_context(self.security) if self.security is not None and self.security.tls else None

    @classmethod
    def at(cls, endpoint: Endpoint, **kw) -> "ProtocolClient":
        """A client of the listener at ``endpoint`` (a node's :attr:`harness.cluster.node.Node.endpoint`)."""
        return cls(endpoint.host, endpoint.port, **kw)

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.host, self.port)

    def __repr__(self) -> str:
        return f"ProtocolClient({self.endpoint})"

    # -- connection ------------------------------------------------------------------------------
    def _connect(self) -> socket.socket:
        if self._sock is None:
            try:
                self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            except OSError as e:
                raise ProtocolError(f"{self.host}:{self.port}: cannot connect: {e}") from None
            self._sock.settimeout(self.timeout)
            if self._tls is not None:
                try:
                    self._sock = self._tls.wrap_socket(self._sock, server_hostname=self.host)
                except ssl.SSLCertVerificationError as e:
                    self.close()
                    raise AuthenticationError(f"{self.host}:{self.port}: TLS: certificate verify failed: "
                                              f"{e.verify_message or e}") from None
                except (OSError, ssl.SSLError) as e:
                    self.close()
                    raise ProtocolError(f"{self.host}:{self.port}: TLS handshake: {e}") from None
            if self.security is not None and self.security.sasl:
                try:
                    self._authenticate()
                except BaseException:
                    self.close()
                    raise
        return self._sock

    def _authenticate(self) -> None:
        """SaslHandshake v1, then SaslAuthenticate (PLAIN: one message; SCRAM: two) on the new connection."""
        sec, where = self.security, f"{self.host}:{self.port}"
        mech = sec.mechanism
        # ApiVersions first (a listener takes it before the handshake, not between handshake and authenticate)
        v = self._version(sasl.API_SASL_AUTHENTICATE, sasl.SASL_AUTHENTICATE_VERSIONS, "SaslAuthenticate")
        body = self.roundtrip(sasl.API_SASL_HANDSHAKE, 1,
                              lambda cid: sasl.encode_handshake_request(cid, self.client_id, mech),
                              "SaslHandshake v1")
        try:
            err, enabled = sasl.decode_handshake_response(body)
        except DecodeError as e:
            raise ProtocolError(f"{where}: SaslHandshake v1: {e}") from None
        if err is not None:
            raise AuthenticationError(f"{where}: SASL authentication failed: the listener does not enable "
                                      f"{mech} (it enables {', '.join(enabled) or 'none'}; {err})")

        def step(data: bytes) -> bytes:
            got = self.roundtrip(sasl.API_SASL_AUTHENTICATE, v,
                                 lambda cid: sasl.encode_authenticate_request(v, cid, self.client_id, data),
                                 f"SaslAuthenticate v{v}")
            try:
                e, msg, out = sasl.decode_authenticate_response(got, v)
            except DecodeError as x:
                raise ProtocolError(f"{where}: SaslAuthenticate v{v}: {x}") from None
            if e is not None:
                raise AuthenticationError(f"{where}: SASL authentication failed ({mech}, user "
                                          f"{sec.username!r}): {msg or e}")
            return out
        try:
            if mech == "PLAIN":
                step(sasl.plain_initial(sec.username or "", sec.password or ""))
                return
            sc = sasl.ScramClient(mech, sec.username or "", sec.password or "")
            sc.verify(step(sc.final(step(sc.first()))))
        except sasl.SaslAuthenticationFailed as e:
            raise AuthenticationError(f"{where}: {e}") from None

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def __enter__(self) -> "ProtocolClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _recv_exactly(self, sock: socket.socket, n: int, deadline: float) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("response not complete in time")
            sock.settimeout(left)
            chunk = sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            buf += chunk
        return bytes(buf)

    def roundtrip(self, api_key: int, version: int, build: Callable[[int], bytes], what: str) -> bytes:
        """Send one request (``build(correlation_id)`` → header + body) and return the response body
        after the response header. Bounded by ``timeout`` as a whole."""
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        cid = self._correlation
        payload = build(cid)
        deadline = time.monotonic() + self.timeout
        try:
            sock = self._connect()
            sock.sendall(struct.pack(">i", len(payload)) + payload)
            size = struct.unpack(">i", self._recv_exactly(sock, 4, deadline))[0]
            if not 4 <= size <= MAX_RESPONSE_BYTES:
                raise DecodeError(f"response size {size} is out of bounds")
            data = self._recv_exactly(sock, size, deadline)
            r = Reader(data)
            got = h.decode_response_header(r, h.response_header_flexible(api_key, version))
            if got != cid:
                raise DecodeError(f"correlation id {got} does not match the request's {cid}")
            return data[r.pos:]
        except ProtocolError:
            self.close()
            raise
        except (OSError, DecodeError, struct.error) as e:
            self.close()
            kind = "timed out" if isinstance(e, socket.timeout) else type(e).__name__
            raise ProtocolError(f"{self.host}:{self.port}: {what}: {kind}: {e}") from None

    # -- requests --------------------------------------------------------------------------------
    def api_versions(self, refresh: bool = False) -> m.ApiVersionsResult:
        """The broker's supported API versions (asked once per client unless ``refresh``)."""
        if self._versions is not None and not refresh:
            return self._versions
        version = m.API_VERSIONS_VERSIONS[1]
        body = self.roundtrip(h.API_API_VERSIONS, version,
                              lambda cid: m.encode_api_versions_request(version, cid, self.client_id),
                              f"ApiVersions v{version}")
        try:
            res = m.decode_api_versions_response(body, version)
        except DecodeError as e:
            self.close()
            raise ProtocolError(f"{self.host}:{self.port}: ApiVersions v{version}: {e}") from None
        if res.error == "UNSUPPORTED_VERSION":      # an old broker: ask again with what it knows
            lo_hi = res.versions.get(h.API_API_VERSIONS, (0, 0))
            v = min(lo_hi[1], version)
            body = self.roundtrip(h.API_API_VERSIONS, v,
                                  lambda cid: m.encode_api_versions_request(v, cid, self.client_id),
                                  f"ApiVersions v{v}")
            try:
                res = m.decode_api_versions_response(body, v)
            except DecodeError as e:
                self.close()
                raise ProtocolError(f"{self.host}:{self.port}: ApiVersions v{v}: {e}") from None
        if res.error is not None:
            raise ProtocolError(f"{self.host}:{self.port}: ApiVersions failed: {res.error}")
        self._versions = res
        return res

    def _version(self, api_key: int, supported: tuple[int, int], name: str) -> int:
        v = self.api_versions().max_version(api_key, supported)
        if v is None:
            have = self.api_versions().versions.get(api_key)
            raise UnsupportedApi(f"{self.host}:{self.port}: the broker does not support {name} "
                                 f"v{supported[0]}–v{supported[1]} (it speaks {have or 'none'})")
        return v

    def _decode(self, decode: Callable[[bytes, int], T], body: bytes, v: int, name: str) -> T:
        try:
            return decode(body, v)
        except DecodeError as e:
            self.close()
            raise ProtocolError(f"{self.host}:{self.port}: {name} v{v}: {e}") from None

    def metadata(self, topics: list[str] | None = None) -> m.MetadataResult:
        """Metadata (v7+: with leader epochs) for ``topics`` (None = all topics, [] = none)."""
        v = self._version(h.API_METADATA, m.METADATA_VERSIONS, "Metadata")
        body = self.roundtrip(h.API_METADATA, v,
                              lambda cid: m.encode_metadata_request(v, cid, self.client_id, topics),
                              f"Metadata v{v}")
        return self._decode(m.decode_metadata_response, body, v, "Metadata")

    def supports_describe_quorum(self) -> bool:
        return self.api_versions().max_version(h.API_DESCRIBE_QUORUM, m.DESCRIBE_QUORUM_VERSIONS) is not None

    def describe_quorum(self) -> m.QuorumInfo:
        """The KRaft metadata quorum (forwarded to the active controller by a broker).

        Raises :class:`UnsupportedApi` on brokers without it (ZooKeeper-mode brokers).
        """
        v = self._version(h.API_DESCRIBE_QUORUM, m.DESCRIBE_QUORUM_VERSIONS, "DescribeQuorum")
        body = self.roundtrip(h.API_DESCRIBE_QUORUM, v,
                              lambda cid: m.encode_describe_quorum_request(v, cid, self.client_id),
                              f"DescribeQuorum v{v}")
        return self._decode(m.decode_describe_quorum_response, body, v, "DescribeQuorum")

    def supports_list_partition_reassignments(self) -> bool:
        return self.api_versions().max_version(h.API_LIST_PARTITION_REASSIGNMENTS,
                                               a.LIST_PARTITION_REASSIGNMENTS_VERSIONS) is not None

    def list_partition_reassignments(self, topics: dict[str, list[int]] | None = None) -> a.ReassignmentsResult:
        """Ongoing reassignments (all, or of ``{topic: [partitions]}``). In ZooKeeper mode only the
        controller answers (others say NOT_CONTROLLER); KRaft brokers forward to the controller."""
        v = self._version(h.API_LIST_PARTITION_REASSIGNMENTS, a.LIST_PARTITION_REASSIGNMENTS_VERSIONS,
                          "ListPartitionReassignments")
        timeout_ms = int(self.timeout * 1000)
        body = self.roundtrip(h.API_LIST_PARTITION_REASSIGNMENTS, v,
                              lambda cid: a.encode_list_partition_reassignments_request(
                                  v, cid, self.client_id, topics, timeout_ms),
                              f"ListPartitionReassignments v{v}")
        return self._decode(a.decode_list_partition_reassignments_response, body, v, "ListPartitionReassignments")

    def alter_partition_reassignments(self, targets: dict[tuple[str, int], list[int] | None],
                                      timeout_ms: int = 30000) -> a.AlterReassignmentsResult:
        """AlterPartitionReassignments: ``{(topic, partition): replicas}`` (``None``: cancel). In
        ZooKeeper mode only the controller acts (others answer NOT_CONTROLLER); KRaft brokers forward
        to the active controller. Per-partition errors are in the result, not raised."""
        v = self._version(h.API_ALTER_PARTITION_REASSIGNMENTS, a.ALTER_PARTITION_REASSIGNMENTS_VERSIONS,
                          "AlterPartitionReassignments")
        body = self.roundtrip(h.API_ALTER_PARTITION_REASSIGNMENTS, v,
                              lambda cid: a.encode_alter_partition_reassignments_request(
                                  v, cid, self.client_id, targets, timeout_ms),
                              f"AlterPartitionReassignments v{v}")
        return self._decode(a.decode_alter_partition_reassignments_response, body, v,
                            "AlterPartitionReassignments")

    def describe_log_dirs(self, topics: dict[str, list[int]] | None = None) -> a.LogDirsResult:
        """DescribeLogDirs: the replicas this broker holds (all, or of ``{topic: [partitions]}``), per
        log directory. Each broker answers for itself only."""
        v = self._version(h.API_DESCRIBE_LOG_DIRS, a.DESCRIBE_LOG_DIRS_VERSIONS, "DescribeLogDirs")
        body = self.roundtrip(h.API_DESCRIBE_LOG_DIRS, v,
                              lambda cid: a.encode_describe_log_dirs_request(v, cid, self.client_id, topics),
                              f"DescribeLogDirs v{v}")
        return self._decode(a.decode_describe_log_dirs_response, body, v, "DescribeLogDirs")

    def find_coordinator(self, key: str, key_type: str | int = "group") -> m.CoordinatorInfo:
        """FindCoordinator: the broker coordinating group ``key`` (``key_type`` "group") or transactional
        id ``key`` ("transaction"). Errors (COORDINATOR_NOT_AVAILABLE while the state partition has no
        leader, COORDINATOR_LOAD_IN_PROGRESS) are in the result, not raised."""
        kt = m.COORDINATOR_KEY_TYPES[key_type] if isinstance(key_type, str) else int(key_type)
        v = self._version(h.API_FIND_COORDINATOR, m.FIND_COORDINATOR_VERSIONS, "FindCoordinator")
        body = self.roundtrip(h.API_FIND_COORDINATOR, v,
                              lambda cid: m.encode_find_coordinator_request(v, cid, self.client_id, key, kt),
                              f"FindCoordinator v{v}")
        return self._decode(lambda b, vv: m.decode_find_coordinator_response(b, vv, key, kt), body, v,
                            "FindCoordinator")

    def describe_share_group_offsets(self, group: str, topics: dict[str, list[int]] | None = None
                                     ) -> "sm.ShareGroupOffsets":
        """DescribeShareGroupOffsets (key 90): the persisted share-partition start offset of each
        share-partition of share group ``group`` ({topic: [partitions]}, None: all). Ask the group's
        coordinator (:meth:`find_coordinator` key type "group"); another broker answers NOT_COORDINATOR.
        Errors (group or partition level) are in the result, not raised."""
        v = self._version(h.API_DESCRIBE_SHARE_GROUP_OFFSETS, sm.DESCRIBE_SHARE_GROUP_OFFSETS_VERSIONS,
                          "DescribeShareGroupOffsets")
        body = self.roundtrip(h.API_DESCRIBE_SHARE_GROUP_OFFSETS, v,
                              lambda cid: sm.encode_describe_share_group_offsets_request(v, cid, self.client_id,
                                                                                        group, topics),
                              f"DescribeShareGroupOffsets v{v}")
        groups = self._decode(sm.decode_describe_share_group_offsets_response, body, v, "DescribeShareGroupOffsets")
        if len(groups) != 1:
            self.close()
            raise ProtocolError(f"{self.host}:{self.port}: DescribeShareGroupOffsets v{v}: {len(groups)} groups "
                                f"in the answer to one")
        return groups[0]

    def supports_describe_topic_partitions(self) -> bool:
        return self.api_versions().max_version(h.API_DESCRIBE_TOPIC_PARTITIONS,
                                               m.DESCRIBE_TOPIC_PARTITIONS_VERSIONS) is not None

    def describe_topic_partitions(self, topics: list[str] | None = None, partition_limit: int = 2000,
                                  max_pages: int = 100) -> list[m.TopicInfo]:
        """Every partition of ``topics`` (None/[] = all topics) with ELR fields, following the
        response cursor page by page (at most ``max_pages`` requests)."""
        v = self._version(h.API_DESCRIBE_TOPIC_PARTITIONS, m.DESCRIBE_TOPIC_PARTITIONS_VERSIONS,
                          "DescribeTopicPartitions")
        merged: dict[str | None, m.TopicInfo] = {}
        cursor: tuple[str, int] | None = None
        for _ in range(max_pages):
            body = self.roundtrip(h.API_DESCRIBE_TOPIC_PARTITIONS, v,
                                  lambda cid: m.encode_describe_topic_partitions_request(
                                      v, cid, self.client_id, topics, partition_limit, cursor),
                                  f"DescribeTopicPartitions v{v}")
            page = self._decode(m.decode_describe_topic_partitions_response, body, v, "DescribeTopicPartitions")
            for t in page.topics:
                if t.name in merged:
                    merged[t.name].partitions.extend(t.partitions)
                else:
                    merged[t.name] = t
            if page.next_cursor is None:
                return list(merged.values())
            if page.next_cursor == cursor:
                raise ProtocolError(f"{self.host}:{self.port}: DescribeTopicPartitions cursor did not advance "
                                    f"({cursor})")
            cursor = page.next_cursor
        raise ProtocolError(f"{self.host}:{self.port}: DescribeTopicPartitions needs more than {max_pages} pages")


def first_answer(endpoints: Iterable[Endpoint], ask: Callable[[ProtocolClient], T], timeout: float = 5.0,
                 security=None) -> tuple[Endpoint, T]:
    """Ask each broker endpoint in turn until one answers; returns ``(endpoint, answer)``.

    Raises the last :class:`ProtocolError` (or :class:`UnsupportedApi`) when none answers.
    """
    last: ProtocolError | None = None
    for ep in list(endpoints):
        with ProtocolClient.at(ep, timeout=timeout, security=security) as c:
            try:
                return ep, ask(c)
            except ProtocolError as e:
                last = e
    if last is None:
        raise ProtocolError("no broker endpoint to ask")
    raise last
