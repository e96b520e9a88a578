"""Kafka wire primitives: the big-endian integers, varints, strings, arrays and tagged fields that
request and response bodies are made of.

Encoding rules (Kafka protocol guide; ``clients/src/main/resources/common/message/README.md``):

* ``int8/16/32/64`` are big-endian two's complement; ``uint16`` unsigned.
* Non-flexible versions: ``string`` = int16 length + UTF-8 bytes (-1 = null); arrays = int32 count
  (-1 = null).
* Flexible versions: ``compact string`` = unsigned varint (length + 1, 0 = null) + bytes; compact
  arrays = unsigned varint (count + 1, 0 = null); every struct ends with a tagged-field section:
  unsigned varint count, then per field (uvarint tag, uvarint size, bytes).
* ``uuid`` = 16 raw bytes; ``bool`` = one byte 0/1.

:class:`Writer` builds bytes; :class:`Reader` consumes them and raises :class:`DecodeError` (with the
offset) on truncated or malformed input instead of returning garbage.
"""

from __future__ import annotations

import struct
from typing import Callable, TypeVar

T = TypeVar("T")


class DecodeError(ValueError):
    """The bytes do not form a valid message of the expected shape."""


class Writer:
    """Accumulates an encoded message."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def bytes(self) -> bytes:
        return b"".join(self._parts)

    def raw(self, b: bytes) -> "Writer":
        self._parts.append(bytes(b))
        return self

    def int8(self, v: int) -> "Writer":
        return self.raw(struct.pack(">b", v))

    def bool(self, v: bool) -> "Writer":
        return self.int8(1 if v else 0)

    def int16(self, v: int) -> "Writer":
        return self.raw(struct.pack(">h", v))

    def int32(self, v: int) -> "Writer":
        return self.raw(struct.pack(">i", v))

    def int64(self, v: int) -> "Writer":
        return self.raw(struct.pack(">q", v))

    def uvarint(self, v: int) -> "Writer":
        if v < 0:
            raise ValueError(f"unsigned varint cannot encode {v}")
        out = bytearray()
        while True:
            byte = v & 0x7F
            v >>= 7
            if v:
                out.append(byte | 0x80)
            else:
                out.append(byte)
                return self.raw(bytes(out))

    def uuid(self, v: bytes | None) -> "Writer":
        v = v or bytes(16)
        if len(v) != 16:
            raise ValueError(f"a uuid is 16 bytes, not {len(v)}")
        return self.raw(v)

    def string(self, v: str | None, compact: bool) -> "Writer":
        """A (nullable) string: compact (flexible versions) or int16-prefixed."""
        if v is None:
            return self.uvarint(0) if compact else self.int16(-1)
        b = v.encode("utf-8")
        if compact:
            self.uvarint(len(b) + 1)
        else:
            if len(b) > 0x7FFF:
                raise ValueError("string too long for an int16 length")
            self.int16(len(b))
        return self.raw(b)

    def array(self, items: list[T] | None, write_item: Callable[["Writer", T], object],
              compact: bool) -> "Writer":
        """A (nullable) array, each item written by ``write_item(writer, item)``."""
        if items is None:
            return self.uvarint(0) if compact else self.int32(-1)
        if compact:
            self.uvarint(len(items) + 1)
        else:
            self.int32(len(items))
        for it in items:
            write_item(self, it)
        return self

    def empty_tagged_fields(self) -> "Writer":
        return self.uvarint(0)


class Reader:
    """Consumes an encoded message from the front."""

    def __init__(self, data: bytes, offset: int = 0) -> None:
        self.data = bytes(data)
        self.pos = offset

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def _take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise DecodeError(f"truncated message: {what} needs {n} bytes at offset {self.pos}, "
                              f"{self.remaining()} left")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def int8(self) -> int:
        return struct.unpack(">b", self._take(1, "int8"))[0]

    def bool(self) -> bool:
        v = self.int8()
        if v not in (0, 1):
            raise DecodeError(f"bool byte {v} at offset {self.pos - 1} is neither 0 nor 1")
        return bool(v)

    def int16(self) -> int:
        return struct.unpack(">h", self._take(2, "int16"))[0]

    def uint16(self) -> int:
        return struct.unpack(">H", self._take(2, "uint16"))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self._take(4, "int32"))[0]

    def int64(self) -> int:
        return struct.unpack(">q", self._take(8, "int64"))[0]

    def uvarint(self) -> int:
        start, shift, value = self.pos, 0, 0
        while True:
            b = self._take(1, "varint")[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise DecodeError(f"unsigned varint at offset {start} is longer than 5 bytes")

    def uuid(self) -> bytes:
        return self._take(16, "uuid")

    def string(self, compact: bool) -> str | None:
        if compact:
            n = self.uvarint() - 1
        else:
            n = self.int16()
        if n < 0:
            if n != -1:
                raise DecodeError(f"invalid string length {n} at offset {self.pos}")
            return None
        try:
            return self._take(n, "string").decode("utf-8")
        except UnicodeDecodeError as e:
            raise DecodeError(f"string at offset {self.pos - n} is not UTF-8: {e}") from None

    def array(self, read_item: Callable[["Reader"], T], compact: bool) -> list[T] | None:
        n = self.uvarint() - 1 if compact else self.int32()
        if n < 0:
            if n != -1:
                raise DecodeError(f"invalid array length {n} at offset {self.pos}")
            return None
        if n > self.remaining():    # every item takes at least one byte: cheap sanity bound
            raise DecodeError(f"array of {n} items at offset {self.pos} exceeds the {self.remaining()} bytes left")
        return [read_item(self) for _ in range(n)]

    def tagged_fields(self) -> dict[int, bytes]:
        """Read a tagged-field section; returns {tag: raw bytes} (unknown tags are kept, not parsed)."""
        out: dict[int, bytes] = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            size = self.uvarint()
            out[tag] = self._take(size, f"tagged field {tag}")
        return out

    def expect_end(self, what: str) -> None:
        if self.remaining():
            raise DecodeError(f"{what}: {self.remaining()} unexpected trailing bytes at offset {self.pos}")
