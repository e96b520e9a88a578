"""Wire primitives against hand-computed bytes (Kafka protocol guide encodings)."""

from __future__ import annotations

import pytest

from harness.protocol.wire import DecodeError, Reader, Writer


@pytest.mark.parametrize("value,encoded", [
    (0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (16383, "ff7f"), (16384, "808001"),
    (2**31 - 1, "ffffffff07"),
])
def test_uvarint_round_trip(value, encoded):
    assert Writer().uvarint(value).bytes().hex() == encoded
    r = Reader(bytes.fromhex(encoded))
    assert r.uvarint() == value
    assert r.remaining() == 0


def test_uvarint_rejects_negative_and_overlong():
    with pytest.raises(ValueError):
        Writer().uvarint(-1)
    with pytest.raises(DecodeError, match="longer than 5 bytes"):
        Reader(bytes.fromhex("ffffffffff01")).uvarint()


def test_strings_compact_and_classic():
    assert Writer().string("kc", compact=False).bytes().hex() == "00026b63"
    assert Writer().string("kc", compact=True).bytes().hex() == "036b63"
    assert Writer().string(None, compact=False).bytes().hex() == "ffff"
    assert Writer().string(None, compact=True).bytes().hex() == "00"
    assert Writer().string("", compact=True).bytes().hex() == "01"
    assert Reader(bytes.fromhex("036b63")).string(True) == "kc"
    assert Reader(bytes.fromhex("00")).string(True) is None
    assert Reader(bytes.fromhex("ffff")).string(False) is None
    assert Reader(bytes.fromhex("0000")).string(False) == ""


def test_arrays_compact_and_classic():
    w = Writer().array([1, 2], lambda ww, v: ww.int32(v), compact=True)
    assert w.bytes().hex() == "030000000100000002"
    w = Writer().array([1, 2], lambda ww, v: ww.int32(v), compact=False)
    assert w.bytes().hex() == "000000020000000100000002"
    assert Writer().array(None, lambda ww, v: None, compact=True).bytes().hex() == "00"
    assert Writer().array(None, lambda ww, v: None, compact=False).bytes().hex() == "ffffffff"
    assert Reader(bytes.fromhex("030000000100000002")).array(lambda r: r.int32(), True) == [1, 2]
    assert Reader(bytes.fromhex("ffffffff")).array(lambda r: r.int32(), False) is None


def test_tagged_fields_are_skipped_and_kept_raw():
    # two tagged fields: tag 0 size 2 (abcd), tag 3 size 1 (01), then an int8 after the section
    r = Reader(bytes.fromhex("02" "00" "02" "abcd" "03" "01" "01" "7f"))
    assert r.tagged_fields() == {0: bytes.fromhex("abcd"), 3: b"\x01"}
    assert r.int8() == 127


def test_integers_big_endian_signed():
    w = Writer().int16(-2).int32(258).int64(-1).bool(True)
    assert w.bytes().hex() == "fffe" "00000102" "ffffffffffffffff" "01"
    r = Reader(w.bytes())
    assert (r.int16(), r.int32(), r.int64(), r.bool()) == (-2, 258, -1, True)


def test_truncation_and_garbage_are_decode_errors():
    with pytest.raises(DecodeError, match="truncated"):
        Reader(b"\x00\x01").int32()
    with pytest.raises(DecodeError, match="truncated"):
        Reader(bytes.fromhex("05" "6b")).string(True)        # says 4 bytes, has 1
    with pytest.raises(DecodeError, match="exceeds"):
        Reader(bytes.fromhex("7fffffff")).array(lambda r: r.int32(), False)
    with pytest.raises(DecodeError, match="neither 0 nor 1"):
        Reader(b"\x02").bool()
    with pytest.raises(DecodeError, match="not UTF-8"):
        Reader(bytes.fromhex("02ff")).string(True)
    with pytest.raises(DecodeError, match="trailing"):
        Reader(b"\x00").expect_end("x")
