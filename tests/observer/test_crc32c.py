"""harness/observer/crc32c.py: the big-int CRC-32C agrees with the byte-at-a-time table loop, and the
many-batches check finds every damaged batch; harness/observer/gc_pause.py restores the collector."""

from __future__ import annotations

import gc
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from harness.observer.crc32c import CHUNK, all_intact, crc32c, crc32c_bytewise
from harness.observer.gc_pause import gc_paused

ROOT = Path(__file__).resolve().parents[2]


def test_check_value():
    assert crc32c(b"123456789") == crc32c_bytewise(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0 and crc32c(bytes(32)) == 0x8A9136AA          # RFC 3720 B.4: 32 zero bytes
    assert crc32c(b"\xff" * 32) == 0x62A8AB43 and crc32c(bytes(range(32))) == 0x46DD794E


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 63, 64, 65, 100, 1000, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 17])
def test_agrees_with_the_table_loop(n):
    rng = random.Random(n)
    for _ in range(3):
        data = bytes(rng.randrange(256) for _ in range(n))
        assert crc32c(data) == crc32c_bytewise(data)
        assert crc32c(memoryview(data)) == crc32c_bytewise(data)


def _batches(rng, count):
    buf, spans = bytearray(), []
    for _ in range(count):
        body = bytes(rng.randrange(256) for _ in range(rng.choice([4, 9, 60, 300, CHUNK + 5])))
        buf += b"hdr" + struct.pack(">I", crc32c_bytewise(body)) + body
        spans.append((len(buf) - len(body) - 4, len(buf)))
    return bytes(buf), spans


def test_all_intact_accepts_good_batches_and_finds_any_damaged_one():
    rng = random.Random(5)
    buf, spans = _batches(rng, 40)
    assert all_intact(buf, spans) and all_intact(buf, [])
    for _ in range(300):
        cp, end = rng.choice(spans)
        damaged = bytearray(buf)
        damaged[rng.randrange(cp, end)] ^= 1 << rng.randrange(8)
        assert not all_intact(bytes(damaged), spans)
    # the same damage in two batches does not cancel out
    damaged = bytearray(buf)
    for cp, _ in spans[:2]:
        damaged[cp + 6] ^= 0x10
    assert not all_intact(bytes(damaged), spans)
    assert not all_intact(buf, [(0, 5)])                 # no room for a CRC


def test_gc_pause_restores_the_collector():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError):
        with gc_paused():
            1 / 0
    assert gc.isenabled()


GC_FROZEN_PROBE = """
import gc
from harness.observer.gc_pause import gc_paused
assert gc.get_freeze_count() == 0
with gc_paused():
    junk = [[i] for i in range(1000)]
assert gc.get_freeze_count() == 0 and gc.isenabled() and len(junk) == 1000
gc.freeze()
frozen = gc.get_freeze_count()
with gc_paused():
    more = [[i] for i in range(1000)]
assert gc.get_freeze_count() == frozen and gc.isenabled() and len(more) == 1000, (gc.get_freeze_count(), frozen)
print("ok")
"""


def test_gc_pause_leaves_a_programs_own_frozen_objects_frozen():
    # in a fresh interpreter: under pytest-xdist, execnet's thread frees frozen objects meanwhile, and the
    # permanent generation's count moves by itself
    res = subprocess.run([sys.executable, "-c", GC_FROZEN_PROBE], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]
