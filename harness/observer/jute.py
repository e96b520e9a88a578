"""Minimal reader for ZooKeeper's *jute* binary serialization (BinaryInputArchive).

Jute is big-endian: ``int`` = 4 bytes, ``long`` = 8 bytes, ``boolean`` = 1 byte, ``buffer`` and
``ustring`` = int length (-1 means null) followed by the bytes, ``vector<T>`` = int count (-1 means
null) followed by the elements. Only what the transaction-log reader needs is implemented.
"""

from __future__ import annotations

import struct


class JuteError(ValueError):
    """Bytes that do not decode as the expected jute record (truncated or malformed)."""


class JuteReader:
    """Sequential big-endian reader over one byte string."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes, pos: int = 0):
        self.buf = buf
        self.pos = pos

    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def _take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise JuteError(f"truncated: need {n} bytes for {what} at offset {self.pos}, "
                            f"{len(self.buf) - self.pos} left")
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def int(self, what: str = "int") -> int:
        return struct.unpack(">i", self._take(4, what))[0]

    def long(self, what: str = "long") -> int:
        return struct.unpack(">q", self._take(8, what))[0]

    def byte(self, what: str = "byte") -> int:
        return self._take(1, what)[0]

    def boolean(self, what: str = "boolean") -> bool:
        return self._take(1, what)[0] != 0

    def buffer(self, what: str = "buffer") -> bytes | None:
        n = self.int(f"length of {what}")
        if n == -1:
            return None
        if n < -1:
            raise JuteError(f"negative length {n} for {what} at offset {self.pos - 4}")
        return self._take(n, what)

    def ustring(self, what: str = "ustring") -> str | None:
        b = self.buffer(what)
        if b is None:
            return None
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError as e:
            raise JuteError(f"{what} is not UTF-8: {e}") from None

    def vector(self, elem, what: str = "vector") -> list | None:
        n = self.int(f"count of {what}")
        if n == -1:
            return None
        if n < -1 or n > self.remaining():
            raise JuteError(f"implausible element count {n} for {what} at offset {self.pos - 4}")
        return [elem(self) for _ in range(n)]

    def acl(self) -> tuple[int, str | None, str | None]:
        """``ACL { int perms; Id { ustring scheme; ustring id } }``"""
        return (self.int("acl perms"), self.ustring("acl scheme"), self.ustring("acl id"))
