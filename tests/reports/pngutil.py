"""A minimal PNG reader (8-bit RGB/RGBA, non-interlaced: what Chromium writes) for pixel checks."""

from __future__ import annotations

import struct
import zlib


def read_png(path, max_rows: int | None = None) -> tuple[int, int, int, list[bytes]]:
    """(width, height, channels, the first ``max_rows`` rows of raw pixel bytes)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    w, h, depth, colour, _, _, interlace = hdr
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unsupported PNG {hdr}"
    ch = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * ch
    rows, prev = [], bytearray(stride)
    for y in range(min(h, max_rows or h)):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - ch] if i >= ch else 0
            b = prev[i]
            c = prev[i - ch] if i >= ch else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, ch, rows


def stats(path, step: int = 5, max_rows: int = 700) -> dict:
    """Width, height, grey-level variance, distinct colours and red pixels over a sample of the
    top ``max_rows`` rows (decoding in pure Python is slow; the top holds the summary)."""
    w, h, ch, rows = read_png(path, max_rows)
    vals, colours, red = [], set(), 0
    for y in range(0, len(rows), step):
        r = rows[y]
        for x in range(0, w, step):
            px = r[x * ch:x * ch + 3]
            colours.add(bytes(px))
            vals.append(sum(px) / 3)
            red += px[0] > 170 and px[1] < 80 and px[2] < 80
    mean = sum(vals) / len(vals)
    var = sum((v - mean) ** 2 for v in vals) / len(vals)
    return {"width": w, "height": h, "variance": var, "colours": len(colours),
            "red_pixels": red, "sampled": len(vals)}
