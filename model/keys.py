"""Key layouts and key-to-server partitioning (docs/workload.md, sections 2-3).

A *layout* says how a key number becomes the 16-byte key on the wire:

``farreach`` (FarReach's YCSB client, the default)
    YCSB names the key ``"user" + fnvhash64(keynum)`` (``insertorder=hashed``,
    the default) or ``"user" + keynum`` (``ordered``). FarReach's
    ``Key.fromString`` strips ``"user"`` and leading zeros and parses the rest
    as a Java long ``K``; its low 32 bits become ``keyhilo``, its high 32 bits
    ``keyhihi``, ``keylolo = keylohi = 0``. ``Key.serialize`` writes
    ``keylolo``, ``keylohi``, ``keyhilo`` as big-endian 32-bit words, then the
    low and the high 16-bit halves of ``keyhihi``, each big-endian::

        bytes 0..7   zero
        bytes 8..11  K & 0xffffffff             (big-endian)
        bytes 12..13 (K >> 32) & 0xffff          (big-endian)
        bytes 14..15 (K >> 48) & 0xffff          (big-endian; the range field)

``synthetic`` (FarReach's synthetic-trace key format)
    The key number ``k`` (as a 32-bit unsigned) is split so that its *low* 16
    bits become the top half of ``keyhihi`` and its high 16 bits the low half;
    the other words are zero. Bytes 0..11 zero, bytes 12..13 ``k >> 16``,
    bytes 14..15 ``k & 0xffff``. The range field is the key number's low 16
    bits, so consecutive keys cycle over the range partitions.

``kvperf`` (this repository's native server and load generator, docs/protocol.md)
    Record ``i``: bytes 0..7 ``fnvhash64(i)``, bytes 8..15 ``i``, big-endian.

Partitioning, with ``N`` servers:

``range`` (FarReach ``Key::get_rangepartition_idx``)
    ``server = keyhihihi / (65536 / N)`` in integer arithmetic, ``keyhihihi``
    the 16-bit range field. YCSB's ``fnvhash64`` ends in ``Math.abs``, so for
    ``farreach`` keys the field's top bit is 0 and servers ``N/2 .. N-1`` get
    no keys at all.
``range-even`` (this repository's split)
    The populated top 32 bits (``keyhihi``; for ``kvperf`` the first 4 key
    bytes) split evenly: ``server = min(N-1, top32 * N >> B)`` with
    ``B = 31`` where the top bit is always 0 (``farreach``, ``kvperf``) and
    ``B = 32`` for ``synthetic``.
``hash`` (FarReach ``Key::get_hashpartition_idx``)
    ``bucket = crc32(wire key) % 32768`` (``java.util.zip.CRC32``, the
    zlib CRC-32), ``server = bucket / (32768 / N)``. The public code needs
    ``N`` to divide the bucket count; for other ``N`` (where it would index
    past the last server) we use ``bucket * N / 32768``, which is the same
    whenever ``N`` divides it.
"""

from __future__ import annotations

import functools
import re
import zlib

import numpy as np

from .errors import InputError
from .ycsb import fnvhash64, fnvhash64_np

LAYOUTS = ("farreach", "synthetic", "kvperf")
PARTITIONS = ("range", "range-even", "hash")
INSERTORDERS = ("hashed", "ordered")
RANGE_SPAN = 1 << 16                 # FarReach splits the 16-bit range field
DEFAULT_BUCKETS = 32768
_M64 = (1 << 64) - 1
_U = np.uint64
_LONG = re.compile(r"[+-]?[0-9]+")   # what Long.parseLong accepts


def check_partition(partition: str, field: str = "switch.partition") -> None:
    if partition not in PARTITIONS:
        raise InputError(f"unknown partition {partition!r}; allowed: {', '.join(PARTITIONS)}",
                         field=field)


def check_layout(layout: str, field: str = "workload.layout") -> None:
    if layout not in LAYOUTS:
        raise InputError(f"unknown key layout {layout!r}; allowed: {', '.join(LAYOUTS)}",
                         field=field)


# ------------------------------------------------------------ key names
def ycsb_key_name(keynum: int, insertorder: str = "hashed") -> str:
    """YCSB ``CoreWorkload.buildKeyName`` with the default ``zeropadding=1``."""
    return "user" + str(fnvhash64(keynum) if insertorder == "hashed" else keynum)


def farreach_key_value(name: str) -> int:
    """FarReach ``Key.fromString``: strip ``"user"`` and leading zeros, parse
    a Java long. Returns the value as an unsigned 64-bit int (two's
    complement). Raises ValueError where the Java code would throw."""
    if len(name) < 5 or not name.startswith("user"):
        raise ValueError("a YCSB key name is 'user' followed by a number")
    digits = name[4:].lstrip("0")
    if not digits:
        # Java: the zero-stripping loop runs past the end (user0, user00...)
        raise ValueError("FarReach's Key.fromString cannot parse a key of only zeros")
    if not _LONG.fullmatch(digits):
        raise ValueError("not a decimal number after 'user'")
    v = int(digits, 10)
    if not -(1 << 63) <= v < (1 << 63):
        raise ValueError("the number after 'user' does not fit a Java long")
    return v & _M64


# ------------------------------------------------------- fields per key
def key_values(recs, layout: str, insertorder: str = "hashed") -> np.ndarray:
    """The 64-bit key number K (uint64) that each record's wire key encodes."""
    recs = np.asarray(recs, dtype=np.int64)
    if layout == "farreach":
        k = fnvhash64_np(recs) if insertorder == "hashed" else recs
        return k.astype(np.int64).view(np.uint64)
    if layout == "synthetic":
        return recs.astype(np.uint64) & _U(0xFFFFFFFF)
    if layout == "kvperf":
        return fnvhash64_np(recs).view(np.uint64)
    check_layout(layout)
    raise AssertionError


def range_fields(kv: np.ndarray, layout: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(16-bit range field, top 32 bits, populated bits B) of key numbers ``kv``."""
    kv = np.asarray(kv, dtype=np.uint64)
    if layout == "synthetic":
        lo16 = kv & _U(0xFFFF)
        hi16 = (kv >> _U(16)) & _U(0xFFFF)
        return lo16, (lo16 << _U(16)) | hi16, 32
    # farreach: keyhihi = K >> 32; kvperf: first 4 bytes = fnvhash64(i) >> 32
    top32 = kv >> _U(32)
    return top32 >> _U(16), top32, 31


def wire_keys(kv: np.ndarray, layout: str, recs=None) -> np.ndarray:
    """16-byte wire keys as an (n, 16) uint8 array."""
    kv = np.asarray(kv, dtype=np.uint64)
    n = len(kv)
    out = np.zeros((n, 16), dtype=np.uint8)
    if layout == "kvperf":
        both = np.stack([kv, np.asarray(recs, dtype=np.int64).view(np.uint64)], axis=1)
        return both.astype(">u8").view(np.uint8).reshape(n, 16)
    if layout == "farreach":
        lo32 = (kv & _U(0xFFFFFFFF)).astype(">u4").view(np.uint8).reshape(n, 4)
        mid16 = ((kv >> _U(32)) & _U(0xFFFF)).astype(">u2").view(np.uint8).reshape(n, 2)
        top16 = (kv >> _U(48)).astype(">u2").view(np.uint8).reshape(n, 2)
        out[:, 8:12], out[:, 12:14], out[:, 14:16] = lo32, mid16, top16
        return out
    if layout == "synthetic":
        out[:, 12:14] = ((kv >> _U(16)) & _U(0xFFFF)).astype(">u2").view(np.uint8).reshape(n, 2)
        out[:, 14:16] = (kv & _U(0xFFFF)).astype(">u2").view(np.uint8).reshape(n, 2)
        return out
    check_layout(layout)
    raise AssertionError


def wire_key(keynum: int, layout: str = "farreach", insertorder: str = "hashed") -> bytes:
    """One record's 16-byte wire key (scalar reference of :func:`wire_keys`)."""
    kv = key_values([keynum], layout, insertorder)
    return bytes(wire_keys(kv, layout, [keynum])[0])


def _crc_table() -> np.ndarray:
    t = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        t = np.where(t & 1, (t >> 1) ^ np.uint32(0xEDB88320), t >> 1).astype(np.uint32)
    return t


_CRC_TABLE = _crc_table()


def crc32_rows(keys: np.ndarray) -> np.ndarray:
    """zlib.crc32 (= java.util.zip.CRC32) of each row of an (n, L) uint8 array."""
    c = np.full(keys.shape[0], 0xFFFFFFFF, dtype=np.uint32)
    for j in range(keys.shape[1]):
        c = _CRC_TABLE[(c ^ keys[:, j]) & 0xFF] ^ (c >> np.uint32(8))
    return c ^ np.uint32(0xFFFFFFFF)


# ---------------------------------------------------------- partitioning
def range_server(field16, n: int) -> np.ndarray:
    """FarReach's range split of the 16-bit field (clamped where the public
    code would abort)."""
    width = _U(max(RANGE_SPAN // n, 1))
    s = np.asarray(field16, dtype=np.uint64) // width
    return np.minimum(s, _U(n - 1)).astype(np.int64)


def range_even_server(top32, n: int, bits: int) -> np.ndarray:
    s = (np.asarray(top32, dtype=np.uint64) * _U(n)) >> _U(bits)
    return np.minimum(s, _U(n - 1)).astype(np.int64)


def hash_server(crc, n: int, buckets: int = DEFAULT_BUCKETS) -> np.ndarray:
    b = np.asarray(crc, dtype=np.uint64) % _U(buckets)
    if buckets % n == 0:
        return (b // _U(buckets // n)).astype(np.int64)
    return ((b * _U(n)) // _U(buckets)).astype(np.int64)


def servers_of(recs, layout: str, n: int, partition: str, buckets: int = DEFAULT_BUCKETS,
               insertorder: str = "hashed") -> np.ndarray:
    """Server index of each record number under a layout and partitioning."""
    check_partition(partition)
    recs = np.asarray(recs, dtype=np.int64)
    kv = key_values(recs, layout, insertorder)
    return servers_of_values(kv, layout, n, partition, buckets, recs)


def partition_keys(recs, layout: str, partition: str, buckets: int = DEFAULT_BUCKETS,
                   insertorder: str = "hashed") -> np.ndarray:
    """The part of :func:`servers_of` that does not depend on the server count:
    each record's CRC32 (hash partitioning) or key number (range). Hashing a
    million head records is most of placing them; :func:`servers_from_keys`
    does the rest for any server count."""
    check_partition(partition)
    recs = np.asarray(recs, dtype=np.int64)
    kv = key_values(recs, layout, insertorder)
    if partition == "hash":
        return crc32_rows(wire_keys(kv, layout, recs))
    return kv


def servers_from_keys(pk, layout: str, n: int, partition: str,
                      buckets: int = DEFAULT_BUCKETS) -> np.ndarray:
    """:func:`servers_of` from :func:`partition_keys`."""
    if partition == "hash":
        return hash_server(pk, n, buckets)
    return servers_of_values(pk, layout, n, partition, buckets)


def servers_of_values(kv, layout: str, n: int, partition: str, buckets: int = DEFAULT_BUCKETS,
                      recs=None) -> np.ndarray:
    """Server index of key numbers ``kv`` (``recs`` only for ``kvperf`` hashing)."""
    if partition == "hash":
        return hash_server(crc32_rows(wire_keys(kv, layout, recs)), n, buckets)
    field16, top32, bits = range_fields(kv, layout)
    if partition == "range":
        return range_server(field16, n)
    if partition == "range-even":
        return range_even_server(top32, n, bits)
    check_partition(partition)
    raise AssertionError


def server_of_wire(key: bytes, layout: str, n: int, partition: str,
                   buckets: int = DEFAULT_BUCKETS) -> int:
    """Scalar reference straight from a wire key (used for key traces)."""
    if partition == "hash":
        return int(hash_server(np.array([zlib.crc32(key)]), n, buckets)[0])
    if layout == "kvperf":
        top32, bits = int.from_bytes(key[0:4], "big"), 31
        field16 = top32 >> 16
    else:
        hihilo = int.from_bytes(key[12:14], "big")
        hihihi = int.from_bytes(key[14:16], "big")
        top32 = (hihihi << 16) | hihilo
        field16, bits = hihihi, (32 if layout == "synthetic" else 31)
    if partition == "range":
        return int(range_server(np.array([field16]), n)[0])
    return int(range_even_server(np.array([top32]), n, bits)[0])


# ---------------------------------------- servers of all records at once
RECORD_ENUM_LIMIT = 1 << 21          # enumerate per-record servers up to this


@functools.lru_cache(maxsize=256)
def record_fractions(records: int, layout: str, insertorder: str, n: int, partition: str,
                     buckets: int) -> tuple[tuple, bool]:
    """Fraction of records 0..records-1 on each server, and whether it is
    exact. Enumerated up to RECORD_ENUM_LIMIT records; beyond, exact for
    ordered keys under range partitions (intervals), otherwise the value for
    an ideal hash (key numbers uniform over the populated range; CRC-32 uniform
    over its 2^32 values)."""
    if records <= RECORD_ENUM_LIMIT:
        srv = servers_of(np.arange(records), layout, n, partition, buckets, insertorder)
        return tuple(np.bincount(srv, minlength=n) / records), True
    ordered = (layout == "farreach" and insertorder == "ordered") or layout == "synthetic"
    if partition != "hash" and ordered:
        return tuple(_ordered_counts(records, layout, n, partition) / records), True
    if partition == "hash":
        b = np.arange(buckets)
        per_bucket = (1 << 32) // buckets + (b < (1 << 32) % buckets)
        srv = hash_server(b, n, buckets)
        cnt = np.bincount(srv, weights=per_bucket, minlength=n)
        return tuple(cnt / float(1 << 32)), False
    # hashed keys: top32 uniform on [0, 2^31) (Math.abs clears the top bit)
    if partition == "range":
        f = np.arange(1 << 15, dtype=np.uint64)           # populated 16-bit field values
        cnt = np.bincount(range_server(f, n), minlength=n).astype(float)
        return tuple(cnt / cnt.sum()), False
    edges = np.array([-((-i << 31) // n) for i in range(n + 1)], dtype=np.float64)
    return tuple(np.diff(edges) / float(1 << 31)), False


def server_runs(lo: int, hi: int, layout: str, n: int, partition: str,
                insertorder: str = "hashed"):
    """Maximal runs of consecutive key numbers in [lo, hi) that map to one
    server, as arrays (start, end, server), or None where the server is not a
    run-structured function of the key number (hashed keys, hash partitioning).

    Range partitions of ordered key numbers are: the field is a bit slice of
    the key number, so the server is constant between band edges. For
    ``synthetic`` keys under ``range-even`` the high 16 bits of the key number
    also enter ``top32`` (as its low half); they can move a key across a band
    edge only when ``N`` does not divide 65536, and then only keys whose low
    16 bits sit on an edge (at most 1/65536 of the keys per edge) - ignored.
    """
    if partition == "hash" or lo >= hi:
        return None
    if layout == "farreach" and insertorder == "ordered":
        if partition == "range":          # field16 = K >> 48
            return _runs_from_edges(lo, hi, _band_edges(n, 16, None), n, 48)
        # range-even: top32 = K >> 32 split over [0, 2^31), the rest clamped
        return _runs_from_edges(lo, hi, _band_edges(n, 32, 31), n, 32)
    if layout == "synthetic":
        return _periodic_runs(lo, hi, _synthetic_band(n, partition), RANGE_SPAN)
    return None


def _synthetic_band(n: int, partition: str) -> np.ndarray:
    """The server of each value of a synthetic key's low 16 bits (the key
    number repeats them every 2^16 keys)."""
    v = np.arange(RANGE_SPAN, dtype=np.uint64)
    return range_server(v, n) if partition == "range" else range_even_server(v << _U(16), n, 32)


def _band_edges(n, width, bits):
    """First field value of each server's band (n + 1 edges, last = 2^width)."""
    if bits is None:                  # FarReach's split of the 16-bit field
        w = max(RANGE_SPAN // n, 1)
        edges = [min(i * w, 1 << width) for i in range(n)]
    else:                             # even split of [0, 2^bits), the rest to N-1
        edges = [-((-i << bits) // n) for i in range(n)]
    return edges + [1 << width]


def _runs_from_edges(lo, hi, edges, n, shift):
    starts, ends, srv = [], [], []
    for i in range(n):
        s, e = max(lo, edges[i] << shift), min(hi, edges[i + 1] << shift)
        if s < e:
            starts.append(s), ends.append(e), srv.append(i)
    return (np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64),
            np.array(srv, dtype=np.int64))


#: cycles of a periodic key-to-server map enumerated run by run; past them
#: the runs are merged over geometric groups of cycles (:func:`_periodic_runs`)
EXACT_CYCLES = 1024


def _periodic_runs(lo, hi, band, period):
    """Runs of a server that is band[K mod period].

    The first :data:`EXACT_CYCLES` cycles of [lo, hi) are exact. A longer
    range (242 billion records are 3.7 million cycles; as runs, 7 GiB at 261
    servers) continues in at most EXACT_CYCLES groups of whole cycles,
    geometric in the cycle number, and the last, partial cycle exactly. In
    a group of g cycles each band becomes one run g times its length, in
    band order: every server keeps its exact count of keys per group; what
    moves is which keys of the group it holds, and with groups growing by
    under 1 % a key's popularity rank changes by less than that within one."""
    change = np.flatnonzero(np.diff(band)) + 1
    b_starts = np.concatenate([[0], change]).astype(np.int64)
    b_ends = np.concatenate([change, [period]]).astype(np.int64)
    b_srv = band[b_starts].astype(np.int64)
    c0, c1 = lo // period, (hi - 1) // period
    if c1 - c0 + 1 <= EXACT_CYCLES:
        first = np.arange(c0, c1 + 1, dtype=np.int64)
        groups = np.ones(len(first), dtype=np.int64)
    else:
        exact = np.arange(c0, c0 + EXACT_CYCLES, dtype=np.int64)
        # whole cycles c0 + EXACT_CYCLES .. c1 - 1 in geometric groups, then c1
        edges = np.unique(np.geomspace(c0 + EXACT_CYCLES, c1, EXACT_CYCLES + 1)
                          .round().astype(np.int64))
        edges[0], edges[-1] = c0 + EXACT_CYCLES, c1
        first = np.concatenate([exact, edges[:-1], [c1]])
        groups = np.concatenate([np.ones(EXACT_CYCLES, dtype=np.int64), np.diff(edges), [1]])
        first, groups = first[groups > 0], groups[groups > 0]
    base = first * period
    starts = (base[:, None] + groups[:, None] * b_starts[None, :]).ravel()
    ends = (base[:, None] + groups[:, None] * b_ends[None, :]).ravel()
    srv = np.broadcast_to(b_srv, (len(first), len(b_srv))).ravel()
    starts, ends = np.maximum(starts, lo), np.minimum(ends, hi)
    keep = starts < ends
    return starts[keep], ends[keep], srv[keep]


def _ordered_counts(records, layout, n, partition):
    if layout == "synthetic":
        # band[K mod 2^16] repeats: whole cycles, then the first r values of
        # one more (242 billion records are 3.7 million cycles: counted, not
        # enumerated as runs)
        band = _synthetic_band(n, partition)
        q, r = divmod(int(records), RANGE_SPAN)
        return (q * np.bincount(band, minlength=n).astype(float)
                + np.bincount(band[:r], minlength=n))
    s, e, srv = server_runs(0, records, layout, n, partition, "ordered")
    return np.bincount(srv, weights=(e - s).astype(float), minlength=n)
