"""CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), pure Python: DefaultRecordBatch's checksum.

A byte-at-a-time table loop costs about as much as decoding the whole KRaft metadata log, so the bulk
work is done with big-int operations (C loops) instead, using that a CRC is linear over GF(2):

* ``_lin(data)`` — the CRC with initial value and final XOR 0 — is the XOR of one 32-bit constant per
  set message bit, the constant depending only on the bit's distance from the end of the message
  (``_SEQ[q]``: the CRC register started at 1 and stepped q + 1 times). With the bits of every byte
  reversed (``_REV``) and the message read as one big-endian integer ``m``, bit q of ``m`` IS the bit
  at distance q, so bit t of the CRC is the parity of ``m & _ROWS[t]`` (``_ROWS[t]``: bit t of every
  constant): 32 ANDs and popcounts per chunk of ``CHUNK`` bytes, after the chunk is folded to about
  1024 bits (``_folds``: shifts and XORs by the few terms of x^a mod the polynomial); chunks are joined
  with Horner's rule (the register moved over ``CHUNK`` zero bytes, four 256-entry tables).
* the standard CRC is ``_lin`` of the message with its first 4 bytes inverted (the initial value
  0xFFFFFFFF), XOR 0xFFFFFFFF.
* :func:`all_intact` checks many batches at once: a message followed by its raw CRC (little-endian)
  has raw CRC 0, so each batch region (first 4 bytes inverted) followed by its stored CRC XOR
  0xFFFFFFFF is a zero-remainder message exactly when the stored CRC is right, and the concatenation
  of such messages has ``_lin`` 0 when every one is. One damaged batch makes it non-zero always (the
  Horner shift is invertible); errors in several batches cancel only when their sum is a multiple of
  the polynomial, as errors within one long message would. A caller that gets ``False`` checks its
  batches one by one to find the damaged one.
"""

from __future__ import annotations

import struct

POLY = 0x82F63B78
G = 0x1EDC6F41                  # the same polynomial, unreflected: S[q + 32] = XOR of S[q + k], bit k of G set
CHUNK = 4096                    # bytes per big-int step (rows of 8 * CHUNK bits, built once on first use)
_REV = bytes(int(f"{i:08b}"[::-1], 2) for i in range(256))     # bit order within a byte reversed
_INV = bytes(255 - i for i in range(256))
_U32 = struct.Struct(">I")


def _crc_table() -> list[int]:
    out = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ POLY if c & 1 else c >> 1
        out.append(c)
    return out


_CRC_TABLE = _crc_table()
_TABLES: list = []              # [rows, advance tables], filled by _tables()


def crc32c_bytewise(data: bytes) -> int:
    """The textbook table loop (the reference the big-int form is tested against)."""
    c, t = 0xFFFFFFFF, _CRC_TABLE
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _tables() -> list:
    if not _TABLES:
        n = 8 * CHUNK
        seq, s = [], 1
        for _ in range(n + 32):
            s = (s >> 1) ^ POLY if s & 1 else s >> 1
            seq.append(s)
        # rows[t]: bit q = bit t of seq[q]; row t+1 = (row t >> 1) ^ (row 0 if POLY has bit t), as
        # seq[q+1] = seq[q] >> 1 ^ (POLY if seq[q] & 1); each step loses the top bit (32 spare terms)
        row = int("".join("1" if v & 1 else "0" for v in reversed(seq)), 2)
        rows, r0, mask = [row], row, (1 << n) - 1
        for t in range(31):
            row = (row >> 1) ^ (r0 if POLY >> t & 1 else 0)
            rows.append(row)
        rows = [(1 << t, r & mask) for t, r in enumerate(rows)]
        # the register moved over CHUNK zero bytes: bit k of the register ends as seq[n - k - 1]
        adv = [[0] * 256 for _ in range(4)]
        for j in range(4):
            for b in range(8):
                col, bit = seq[n - (8 * j + b) - 1], 1 << b
                tab = adv[j]
                for v in range(bit, 256):
                    if v & bit:
                        tab[v] ^= col
        _TABLES.extend((tuple(rows), tuple(adv), _folds(n)))
    return _TABLES


def _folds(nbits: int, last: int = 1024) -> tuple:
    """``(a, shifts)`` steps that shrink a message of ``nbits`` to about ``last`` bits without changing
    ``_lin``: a bit at a + j counts as the bits at j + k for k in ``shifts`` (the set bits of x^a mod G),
    so ``m`` becomes ``m & (2^a - 1) ^ XOR((m >> a) << k)``; each ``a`` just above half the size, where
    x^a mod G has few terms."""
    powers, r = [], 1                               # powers[a] = x^a mod G
    for _ in range(nbits):
        powers.append(r)
        r <<= 1
        if r >> 32:
            r ^= (1 << 32) | G
    out, size = [], nbits
    while size > last:
        lo = size // 2 + 32
        a = min(range(lo, min(lo + 2048, size)), key=lambda x: (powers[x].bit_count(), x))
        out.append((a, (1 << a) - 1, tuple(k for k in range(32) if powers[a] >> k & 1)))
        size = max(a, size - a + 32)
    return tuple(out)


def _lin(data: bytes) -> int:
    """The CRC of ``data`` with initial value 0 and no final XOR."""
    rows, (a0, a1, a2, a3), folds = _tables()
    rev = data.translate(_REV)
    c, n = 0, len(rev)
    first = n % CHUNK or CHUNK
    starts = range(first, n, CHUNK)
    for lo, hi in zip([0, *starts], [*starts, n]):
        c = a0[c & 0xFF] ^ a1[c >> 8 & 0xFF] ^ a2[c >> 16 & 0xFF] ^ a3[c >> 24]
        m = int.from_bytes(rev[lo:hi], "big")
        for a, mask, shifts in folds:
            high = m >> a
            if high:
                m &= mask
                for k in shifts:
                    m ^= high << k
        for bit, row in rows:
            if (m & row).bit_count() & 1:
                c ^= bit
    return c


def crc32c(data: bytes) -> int:
    """CRC-32C of ``data`` (``crc32c(b"123456789") == 0xE3069283``)."""
    if len(data) < 64:
        return crc32c_bytewise(data)
    return _lin(bytes(data[:4]).translate(_INV) + data[4:]) ^ 0xFFFFFFFF


def all_intact(buf: bytes, spans) -> bool:
    """Whether every ``(crc_pos, end)`` of ``spans`` holds the right CRC: a big-endian uint32 at
    ``crc_pos`` over ``buf[crc_pos + 4:end]``. ``False`` says some (at least one) does not."""
    parts = []
    for cp, end in spans:
        if end - cp < 8:
            return False
        parts += (buf[cp + 4:cp + 8].translate(_INV), buf[cp + 8:end],
                  (_U32.unpack_from(buf, cp)[0] ^ 0xFFFFFFFF).to_bytes(4, "little"))
    return not parts or _lin(b"".join(parts)) == 0
