"""A screenshot's colours: :func:`decode_png` (8-bit PNG to a numpy array,
no imaging library needed) and :func:`colour_stats` (distinct colours and the
share of pixels off the background), which say whether a page is blank.
"""

from __future__ import annotations

import zlib

import numpy as np


def decode_png(data: bytes) -> np.ndarray:
    """8-bit, non-interlaced greyscale/RGB/RGBA PNG -> uint8 array (h, w, channels)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, []
    width = height = ctype = None
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height = int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big")
            depth, ctype, interlace = body[8], body[9], body[12]
            if depth != 8 or interlace or ctype not in (0, 2, 4, 6):
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {ctype})")
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8)
    stride = width * bpp
    raw = raw[: height * (stride + 1)].reshape(height, stride + 1)
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        f, line = raw[y, 0], raw[y, 1:]
        if f == 0:
            cur = line.copy()
        elif f == 1:
            cur = (np.cumsum(line.reshape(width, bpp).astype(np.uint32), axis=0) & 0xFF
                   ).astype(np.uint8).reshape(-1)
        elif f == 2:
            cur = line + prev
        elif f == 3:
            cur = _unfilter_scalar(line, prev, bpp, avg=True)
        elif f == 4:
            cur = _unfilter_scalar(line, prev, bpp, avg=False)
        else:
            raise ValueError(f"bad PNG filter {f}")
        out[y] = cur
        prev = cur
    return out.reshape(height, width, bpp)


def _unfilter_scalar(line: np.ndarray, prev: np.ndarray, bpp: int, *, avg: bool) -> np.ndarray:
    cur = bytearray(line.tobytes())
    up = prev.tobytes()
    n = len(cur)
    if avg:
        for i in range(n):
            left = cur[i - bpp] if i >= bpp else 0
            cur[i] = (cur[i] + ((left + up[i]) >> 1)) & 0xFF
    else:
        for i in range(n):
            if i >= bpp:
                a, c = cur[i - bpp], up[i - bpp]
            else:
                a = c = 0
            b = up[i]
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[i] = (cur[i] + pred) & 0xFF
    return np.frombuffer(bytes(cur), dtype=np.uint8)


def colour_stats(png: bytes) -> tuple[int, float]:
    """(distinct colours, ink fraction): ink = pixels not of the most common colour."""
    img = decode_png(png)
    h, w, c = img.shape
    flat = img[..., :3] if c >= 3 else img[..., :1]
    packed = np.zeros((h, w), dtype=np.uint32)
    for k in range(flat.shape[2]):
        packed = (packed << 8) | flat[..., k].astype(np.uint32)
    _, counts = np.unique(packed, return_counts=True)
    return int(counts.size), float(1.0 - counts.max() / packed.size)


def distinct_colours(png: bytes) -> int:
    return colour_stats(png)[0]
