"""Reader for the KRaft metadata log (``<metadata.log.dir>/__cluster_metadata-0/<base offset>.log``), pure Python.

This is the ground truth of a KRaft cluster's controller: every decision of the active controller is
a record appended to this Raft log, in offset order, so unlike polling nothing can be missed.

Segment file = a sequence of record batches, magic 2 (``DefaultRecordBatch``)::

    baseOffset int64, batchLength int32 (bytes after this field), partitionLeaderEpoch int32 (the Raft
    epoch of the leader that wrote it), magic int8 = 2, crc uint32 (CRC-32C of attributes..end),
    attributes int16 (bits 0-2 codec, 4 transactional, 5 control), lastOffsetDelta int32,
    baseTimestamp int64, maxTimestamp int64, producerId int64, producerEpoch int16, baseSequence int32,
    recordsCount int32, records (compressed as one stream when the codec is not NONE)

Record (``DefaultRecord``): length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
key (varint length, -1 = null), value (same), headers count varint + headers (all varints zigzag).

A data record's value is an ``ApiMessageAndVersion`` (``AbstractApiMessageSerde``: frame version
unsigned varint = 1, apiKey unsigned varint, version unsigned varint, then the message in Kafka's
generated encoding — metadata records are flexible from version 0: compact strings and arrays, length
+ 1 as an unsigned varint, 0 = null, and a tagged-field section after every struct). A control
record's key is ``{int16 version, int16 type}`` (``ControlRecordType``) and its value the message at
version 0 (``ControlRecordUtils``). Field layouts: ``metadata/src/main/resources/common/metadata/*.json``
and ``clients/src/main/resources/common/message/{LeaderChangeMessage,SnapshotHeaderRecord,...}.json``.

:func:`parse_segment_bytes` / :func:`read_metadata_blobs` give :class:`MetadataLog` with one
:class:`MetaRecord` per log offset; :mod:`harness.observer.kraft_events` replays them into events.
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass, field
from typing import Iterable

from harness.observer.crc32c import crc32c
from harness.observer.crc32c import all_intact
from harness.observer.gc_pause import gc_paused
from harness.observer.kraft_records import fast_records, read_records
from harness.observer.kraft_wire import (COMPRESSION, CONTROL_RECORDS, METADATA_RECORDS, F, KraftLogError, MetaRecord, Reader,
                         _Short, decode_control, decode_metadata_value, read_struct)

__all__ = ["COMPRESSION", "CONTROL_RECORDS", "METADATA_RECORDS", "F", "KraftLogError", "MetaRecord", "Reader",
           "crc32c", "decode_control", "decode_metadata_value", "read_struct", "Batch", "SegmentFile",
           "MetadataLog", "offset_from_name", "parse_segment_bytes", "merge_segments", "read_metadata_blobs"]


# -- record batches --------------------------------------------------------------------------------
BATCH_HEADER = 61           # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
_HEADER = struct.Struct(">qiibIhiqqqhii")
_LENGTH = struct.Struct(">i").unpack_from


@dataclass
class Batch:
    base_offset: int
    last_offset: int
    raft_epoch: int             # partitionLeaderEpoch
    base_timestamp: int
    compression: str
    control: bool
    records: list[MetaRecord]
    position: int               # byte position in its file


def _decode_batch(buf: bytes, pos: int, crc_checked: bool = False) -> Batch:
    """One batch; ``crc_checked``: its CRC is already known to be right (:func:`all_intact`)."""
    (base_offset, length, epoch, magic, crc, attrs, last_delta, base_ts, _max_ts, _pid, _pepoch, _seq,
     count) = _HEADER.unpack_from(buf, pos)
    end = pos + 12 + length
    if magic != 2:
        raise KraftLogError(f"batch at byte {pos} has magic {magic} (the metadata log uses 2)")
    if not crc_checked and crc32c(buf[pos + 21:end]) != crc:
        raise KraftLogError(f"batch at byte {pos} fails its CRC-32C")
    codec = COMPRESSION.get(attrs & 0x07, f"codec {attrs & 0x07}")
    control = bool(attrs & 0x20)
    if codec == "none":
        data, start, stop = buf, pos + BATCH_HEADER, end
    elif codec == "gzip":
        data = zlib.decompress(buf[pos + BATCH_HEADER:end], 16 + zlib.MAX_WBITS)
        start, stop = 0, len(data)
    else:
        raise KraftLogError(f"batch at offset {base_offset} is compressed with {codec}; "
                            "this reader decodes only uncompressed and gzip batches")
    try:
        recs, rest = fast_records(data, start, stop, count, base_offset, base_ts, epoch, control), None
    except Exception:                   # noqa: BLE001 -- any doubt: the reference decodes it, errors included
        recs, rest = None, data[start:stop]
    if rest is not None:
        r = Reader(rest)
        try:
            recs = read_records(r, count, base_offset, base_ts, epoch, control)
        except _Short as e:
            raise KraftLogError(f"batch at offset {base_offset}: records end early ({e})") from None
        if r.remaining():
            raise KraftLogError(f"batch at offset {base_offset}: {r.remaining()} bytes after its records")
    return Batch(base_offset, base_offset + last_delta, epoch, base_ts, codec, control, recs, pos)


@dataclass
class SegmentFile:
    path: str
    name_offset: int | None         # the base offset in the file name
    batches: list[Batch] = field(default_factory=list)
    torn_tail: str | None = None    # a partially written last batch, dropped


_SEGMENT_NAME = re.compile(r"(?:^|/)(\d{20})\.log$")


def offset_from_name(name: str) -> int | None:
    m = _SEGMENT_NAME.search(name)
    return int(m.group(1)) if m else None


def _frames(buf: bytes) -> list[tuple[int, int]]:
    """``(crc position, end)`` of the batches the walk below meets, as far as their lengths fit."""
    out, pos, n = [], 0, len(buf)
    while n - pos >= BATCH_HEADER:
        length = _LENGTH(buf, pos + 8)[0]
        end = pos + 12 + length
        if length < BATCH_HEADER - 12 or end > n:
            break
        out.append((pos + 17, end))
        pos = end
    return out


def parse_segment_bytes(buf: bytes, path: str = "<bytes>") -> SegmentFile:
    """Decode one segment. A torn last batch (crash, or the file read while being appended to) is
    dropped and described in ``torn_tail``; damage followed by more data raises :class:`KraftLogError`.
    Trailing zero bytes (a pre-allocated segment) end the data.

    The CRCs are checked first all at once (:func:`all_intact`); only when that fails is each batch
    checked on its own, to name the damaged one."""
    out = SegmentFile(path, offset_from_name(path))
    with gc_paused():
        spans = _frames(buf)
        checked = {cp - 17 for cp, _ in spans} if all_intact(buf, spans) else frozenset()
        pos = 0
        while pos < len(buf):
            rest = len(buf) - pos
            if buf[pos] == 0 and not any(buf[pos:pos + 12]) and not buf[pos:].strip(b"\0"):
                break                       # a batch has a non-zero length: only padding starts with 12 zeros
            if rest < BATCH_HEADER:
                out.torn_tail = f"{rest} bytes at byte {pos}, shorter than a batch header"
                break
            length = struct.unpack_from(">i", buf, pos + 8)[0]
            end = pos + 12 + length
            if length < BATCH_HEADER - 12:
                raise KraftLogError(f"{path}: batch at byte {pos} declares length {length}")
            if end > len(buf):
                out.torn_tail = f"batch at byte {pos} declares {length} bytes, the file ends after {rest - 12}"
                break
            try:
                out.batches.append(_decode_batch(buf, pos, pos in checked))
            except KraftLogError as e:
                if "CRC" in str(e) and not buf[end:].strip(b"\0"):
                    out.torn_tail = str(e)
                    break
                raise KraftLogError(f"{path}: {e}") from None
            pos = end
    return out


@dataclass
class MetadataLog:
    """All segments of one node's ``__cluster_metadata-0``, in offset order."""
    files: list[SegmentFile]
    records: list[MetaRecord]
    offset_gaps: list[tuple[int, int]]      # (last offset before, first offset after)

    @property
    def first_offset(self) -> int | None:
        return self.records[0].offset if self.records else None

    @property
    def last_offset(self) -> int | None:
        return self.records[-1].offset if self.records else None

    @property
    def starts_at_beginning(self) -> bool:
        """The log still holds offset 0 (no prefix replaced by a snapshot and deleted)."""
        return bool(self.records) and self.records[0].offset == 0

    @property
    def torn_tails(self) -> list[str]:
        return [f"{f.path}: {f.torn_tail}" for f in self.files if f.torn_tail]


def merge_segments(files: Iterable[SegmentFile]) -> MetadataLog:
    """Segments (any order) into one log; an offset seen twice keeps its first decoding, and any
    skipped offset is reported (the Raft log has no holes: control records take offsets too)."""
    files = sorted(files, key=lambda f: f.name_offset if f.name_offset is not None else
                   (f.batches[0].base_offset if f.batches else 0))
    recs = [rec for f in files for b in f.batches for rec in b.records]
    offsets = [rec.offset for rec in recs]
    if any(a >= b for a, b in zip(offsets, offsets[1:])):      # overlaps or disorder: sort it out
        seen: dict[int, MetaRecord] = {}
        for rec in recs:
            seen.setdefault(rec.offset, rec)
        offsets = sorted(seen)
        recs = [seen[o] for o in offsets]
    gaps = [(a, b) for a, b in zip(offsets, offsets[1:]) if b != a + 1]
    return MetadataLog(files, recs, gaps)


def read_metadata_blobs(blobs: dict[str, bytes]) -> MetadataLog:
    """Segments fetched as bytes, ``{"00000000000000000000.log": b"..."}``; other names are ignored."""
    with gc_paused():
        files = [parse_segment_bytes(b, n) for n, b in blobs.items() if offset_from_name(n) is not None]
        if not files:
            raise KraftLogError("no metadata log segments (<20-digit offset>.log) among " + ", ".join(sorted(blobs)))
        return merge_segments(files)
