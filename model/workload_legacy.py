"""The project's former workload model, kept for the callers that still use it.

DEPRECATED: :func:`model.workload.evaluate` replaces :func:`shares` (it follows
YCSB 0.17 and FarReach bit for bit and takes workload profiles instead of
``cache_scale`` / ``hot_colocation``; docs/workload.md). This module keeps
the old numbers unchanged until the rack model and the simulator switch over:

* records are ``fnvhash64(rank) % records`` (this repository's load generator,
  generator ``kvperf``), not YCSB's ``% (records + 1)`` with a redraw;
* keys use this repository's wire layout (docs/protocol.md), and ``range``
  (and ``range-even``) split the populated top 32 bits evenly;
* the cache holds the ``round(cache_keys * cache_scale)`` hottest records, and
  ``hot_colocation`` moves that share of the hot set's mass to server 0.

Head / tail computation: the first ``head`` ranks are folded onto records
exactly; the remaining (closed-form) mass is spread evenly over all records.
``tolerance`` bounds the absolute error of every share and of the hit ratio
(6 sigma of the random-hash tail spread plus a cache-selection term).
"""

from __future__ import annotations

import functools
import math
import zlib
from dataclasses import dataclass

import numpy as np

from .errors import InputError

from .keys import RECORD_ENUM_LIMIT, crc32_rows
from .ycsb import (ITEM_COUNT, USED_ZIPFIAN_CONSTANT, ZETAN, ZipfParams, fnvhash64,  # noqa: F401
                   fnvhash64_np, rank_pmf, sample_ranks, zeta)
from . import workload_cache

DEFAULT_HEAD = 1 << 20             # exact ranks; ~0.3 s first computation
DEFAULT_HOT_RECORDS = 10_000
_M64 = (1 << 64) - 1
_LEGACY_PARTITIONS = ("range", "range-even", "hash")


def record_key(i: int) -> bytes:
    """The 16-byte key of record ``i`` (docs/protocol.md)."""
    return (fnvhash64(i) & _M64).to_bytes(8, "big") + (i & _M64).to_bytes(8, "big")


def record_keys_np(recs: np.ndarray) -> np.ndarray:
    """Keys of many records as an (n, 16) uint8 array."""
    recs = np.asarray(recs, dtype=np.int64)
    both = np.stack([fnvhash64_np(recs), recs], axis=1).astype(">u8")
    return both.view(np.uint8).reshape(len(recs), 16)


def range_server(top32, n: int):
    """Range partitioning of the top 32 key bits (scalar or array) over [0, 2^31)."""
    s = (np.asarray(top32, dtype=np.uint64) * np.uint64(n)) >> np.uint64(31)
    return np.minimum(s, np.uint64(n - 1))


def key_server(key: bytes, n: int, partition: str, hash_buckets: int = 32768) -> int:
    """Scalar reference of both partition functions, straight from the spec."""
    if partition in ("range", "range-even"):
        return min(n - 1, (int.from_bytes(key[:4], "big") * n) >> 31)
    if partition == "hash":
        return (zlib.crc32(key) % hash_buckets) * n // hash_buckets
    raise InputError(f"unknown partition {partition!r}; allowed: range, hash",
                     field="switch.partition")


def sample_records(n: int, records: int, theta: float, rng: np.random.Generator,
                   distribution: str = "zipf", items: int | None = None) -> np.ndarray:
    """Draw ``n`` record numbers exactly as YCSB does (Gray et al. algorithm
    for zipf, then fnvhash64 mod records; uniform; sequential from 0)."""
    if distribution == "uniform":
        return rng.integers(0, records, size=n)
    if distribution == "sequential":
        return np.arange(n, dtype=np.int64) % records
    if distribution != "zipf":
        raise InputError(f"unknown distribution {distribution!r}", field="workload.distribution")
    zp = ZipfParams.make(theta, items)
    return fnvhash64_np(sample_ranks(n, zp, rng)) % records


# --------------------------------------------------------- folded head
@dataclass(frozen=True)
class _Fold:
    recs: np.ndarray      # distinct head records, sorted by mass desc (ties: id)
    mass: np.ndarray      # their head mass + T/records
    top32: np.ndarray     # top 32 key bits per head record
    crc: np.ndarray       # crc32 of the key per head record
    tail: float           # T: exact mass of ranks >= H
    s2: float             # bound on Σ_{v>=H} p_v^2
    records: int


@functools.lru_cache(maxsize=32)
def _fold(records: int, theta: float, items: int | None, head: int) -> _Fold:
    zp = ZipfParams.make(theta, items)
    h = min(head, zp.items)
    p = rank_pmf(zp, h)
    tail = 0.0 if h == zp.items else float(1.0 - zp.cdf(h))
    rec = fnvhash64_np(np.arange(h, dtype=np.int64)) % records
    uniq, inv = np.unique(rec, return_inverse=True)
    mass = np.bincount(inv, weights=p) + tail / records
    order = np.lexsort((uniq, -mass))
    uniq, mass = uniq[order], mass[order]
    keys = record_keys_np(uniq)
    top32 = (fnvhash64_np(uniq).astype(np.uint64) >> np.uint64(32))
    s2 = 0.0
    if tail > 0:
        c = (1 - theta) * zp.items ** (theta - 1) / zp.eta
        e = 1 - 2 * theta
        integ = math.log(zp.items / h) if abs(e) < 1e-12 else (zp.items ** e - h ** e) / e
        s2 = c * c * (h ** (-2 * theta) + integ)
    return _Fold(uniq, mass, top32, crc32_rows(keys), tail, s2, records)


@functools.lru_cache(maxsize=256)
def record_fractions(records: int, servers: int, partition: str, hash_buckets: int) -> tuple:
    """Fraction of all records on each server. Exact (enumerated) for
    ``records <= RECORD_ENUM_LIMIT``; otherwise the ideal-hash value (top32
    uniform on [0, 2^31) after Math.abs; crc32 uniform on [0, 2^32))."""
    if records <= RECORD_ENUM_LIMIT:
        srv = _servers_of(np.arange(records, dtype=np.int64), None, servers, partition, hash_buckets)
        return tuple(np.bincount(srv, minlength=servers) / records), True
    if partition in ("range", "range-even"):
        edges = [-((-i << 31) // servers) for i in range(servers + 1)]
        cnt = np.diff(np.array(edges, dtype=np.float64))
        return tuple(cnt / (1 << 31)), False
    b = np.arange(hash_buckets)
    per_bucket = (1 << 32) // hash_buckets + (b < (1 << 32) % hash_buckets)
    cnt = np.bincount(b * servers // hash_buckets, weights=per_bucket, minlength=servers)
    return tuple(cnt / float(1 << 32)), False


def _servers_of(recs, fold_cols, n, partition, buckets):
    if fold_cols is None:
        top32 = fnvhash64_np(recs).astype(np.uint64) >> np.uint64(32)
        crc = crc32_rows(record_keys_np(recs)) if partition == "hash" else None
    else:
        top32, crc = fold_cols
    if partition in ("range", "range-even"):
        return range_server(top32, n).astype(np.int64)
    if partition == "hash":
        return ((crc % np.uint32(buckets)).astype(np.int64) * n) // buckets
    raise InputError(f"unknown partition {partition!r}; allowed: {', '.join(_LEGACY_PARTITIONS)}",
                     field="switch.partition")


# ------------------------------------------------------------- result
@dataclass(frozen=True)
class WorkloadShares:
    """Workload-determined load split, all as fractions of ALL requests.

    - ``hit_ratio``: requests answered by the switch cache.
    - ``shares`` / ``shares_nocache``: per-server fraction with / without the
      cache (sum to ``1 - hit_ratio`` / 1).
    - ``normalized_x``: max(shares_nocache) / max(shares) (docs/workload.md).
    - ``server_hot_fraction`` (per server, with the cache): fraction of that
      server's requests that go to its ``hot_records`` most popular uncached
      records; ``server_hot_fraction_nocache`` the same without the cache. A
      skew measure for the storage model (memtable / block-cache hits): the
      cache removes the head, so servers see flatter traffic.
    - ``cached_keys``: effective cache size round(K * cache_scale).
    - ``tail_mass``: mass of ranks beyond the exact head; ``tolerance``: the
      absolute error bound on shares and hit ratio (module docstring).
    """
    hit_ratio: float
    shares: np.ndarray
    shares_nocache: np.ndarray
    normalized_x: float
    server_hot_fraction: np.ndarray
    server_hot_fraction_nocache: np.ndarray
    hot_records: int
    cached_keys: int
    tail_mass: float
    tolerance: float

    @property
    def bottleneck(self) -> int:
        return int(np.argmax(self.shares))


def _validate(servers, partition, cache_keys, cache_scale, hash_buckets):
    if not isinstance(servers, (int, np.integer)) or servers < 1:
        raise InputError(f"servers must be a positive integer, got {servers!r}", field="servers.count")
    if partition not in _LEGACY_PARTITIONS:
        raise InputError(f"unknown partition {partition!r}; allowed: {', '.join(_LEGACY_PARTITIONS)}",
                         field="switch.partition")
    if cache_keys < 0:
        raise InputError(f"cache_keys must be >= 0, got {cache_keys!r}", field="switch.cache_keys")
    if not (cache_scale >= 0 and math.isfinite(cache_scale)):
        raise InputError(f"cache_scale must be a finite number >= 0, got {cache_scale!r}",
                         field="cache_scale")
    if hash_buckets < 1:
        raise InputError(f"hash_buckets must be >= 1, got {hash_buckets!r}", field="switch.hash_buckets")


def shares(workload, servers: int, partition: str, cache_keys: int, cache_on: bool,
           cache_scale: float = 1.0, hash_buckets: int = 32768, *,
           hot_colocation: float = 0.0,
           hot_records: int = DEFAULT_HOT_RECORDS, items: int | None = None,
           head: int = DEFAULT_HEAD) -> WorkloadShares:
    """Per-server shares, hit ratio and normalized throughput for a
    :class:`model.scenario.Workload` (uses ``distribution``, ``zipf_theta``,
    ``records``). ``items`` overrides YCSB's zipf item count (tests use small
    ones); ``head`` is the number of exactly folded ranks.

    ``hot_colocation`` (placement, 0..1) is the fraction of the mass of the
    hot set (the records a cache of this size would hold) that lives on the
    first partition (server 0) instead of where the key hash puts it. It
    expresses key layouts whose hot keys are contiguous at the low end of the
    key space, so range partitioning gives them to one server; FarReach's
    reference runs show that ("server 0 overloaded": one of 4 NoCache
    servers takes about 68 % of requests).
    The cached shares do not change: the cache absorbs the hot set wherever
    it lives."""
    _validate(servers, partition, cache_keys, cache_scale, hash_buckets)
    if not 0.0 <= hot_colocation <= 1.0:
        raise InputError(f"hot_colocation must be within [0, 1], got {hot_colocation!r}",
                         field="hot_colocation")
    kh = min(int(round(cache_keys * cache_scale)), int(workload.records))
    k = kh if cache_on else 0
    return _cached_shares(workload.distribution, float(workload.zipf_theta), int(workload.records),
                          int(servers), partition, k, int(hash_buckets),
                          int(hot_records), items, int(head), kh, float(hot_colocation))


_ARRAYS = ("shares", "shares_nocache", "server_hot_fraction", "server_hot_fraction_nocache")
_SCALARS = ("hit_ratio", "normalized_x", "hot_records", "cached_keys", "tail_mass", "tolerance")


@functools.lru_cache(maxsize=512)
def _cached_shares(*args) -> WorkloadShares:
    """Memory cache in front of a small on-disk cache in front of :func:`_shares`.

    The first computation of a large key space takes about half a second;
    a command-line prediction should not pay it every time.
    """
    path = workload_cache.path_for("shares", args)
    z = workload_cache.load(path)
    if z is not None:
        try:
            return WorkloadShares(**{k: z[k] for k in _ARRAYS}, **{k: z[k].item() for k in _SCALARS})
        except KeyError:
            pass
    res = _shares(*args)
    workload_cache.save(path, {k: getattr(res, k) for k in _ARRAYS + _SCALARS})
    return res


@functools.lru_cache(maxsize=512)
def _shares(dist, theta, records, n, partition, k, buckets, hot, items, head,
            kh=0, colocation=0.0):
    frac, exact_recs = record_fractions(records, n, partition, buckets)
    frac = np.array(frac)
    if dist in ("uniform", "sequential"):
        # Every record equally likely; a top-K cache holds K arbitrary records,
        # spread over servers like all records. (Sequential over a run shorter
        # than the key space touches fewer records; not modelled.)
        hit = k / records
        nocache = frac.copy()
        cached = frac * (1 - hit)
        per_srv = np.maximum(frac * records, 1.0)
        hot_nc = np.minimum(1.0, hot / per_srv)
        hot_c = np.minimum(1.0, hot / np.maximum(per_srv * (1 - hit), 1.0))
        return _result(hit, cached, nocache, hot_c, hot_nc, hot, k, 0.0, 0.0)
    if dist != "zipf":
        raise InputError(f"unknown distribution {dist!r}", field="workload.distribution")

    f = _fold(records, theta, items, head)
    per_rec_tail = f.tail / records
    srv = _servers_of(None, (f.top32, f.crc), n, partition, buckets)
    head_mass_srv = np.bincount(srv, weights=f.mass - per_rec_tail, minlength=n)
    head_cnt_srv = np.bincount(srv, minlength=n)
    nocache = head_mass_srv + f.tail * frac

    d = len(f.recs)
    if colocation > 0 and kh > 0:
        # Move that part of the hot set's mass to the hottest record's server.
        hot_srv = np.bincount(srv[:min(kh, d)], weights=f.mass[:min(kh, d)], minlength=n)
        moved = colocation * hot_srv
        nocache = nocache - moved
        nocache[0] += moved.sum()
        colo = (colocation, 0)
    else:
        colo = None
    kc = min(k, d)
    removed = np.bincount(srv[:kc], weights=f.mass[:kc], minlength=n)
    if colo is not None and kc > 0:
        c, target = colo
        hot_removed = removed.copy()
        removed = removed - c * hot_removed
        removed[target] += c * hot_removed.sum()
    extra = k - kc  # cache slots beyond the distinct head records
    nonhead_cnt = np.maximum(frac * records - head_cnt_srv, 0.0)
    if extra > 0 and nonhead_cnt.sum() > 0:
        removed += extra * per_rec_tail * nonhead_cnt / nonhead_cnt.sum()
    hit = float(removed.sum())
    cached = np.maximum(nocache - removed, 0.0)

    hot_nc = _hot_fraction(srv, f.mass, np.zeros(d, bool), nocache, hot, per_rec_tail, n)
    is_cached = np.zeros(d, bool)
    is_cached[:kc] = True
    hot_c = _hot_fraction(srv, f.mass, is_cached, cached, hot, per_rec_tail, n)

    sigma = math.sqrt(f.s2 * frac.max())
    if not exact_recs:
        sigma += f.tail * math.sqrt(frac.max() / records)
    # The cache picks the truly heaviest records, which favours records that
    # caught more tail ranks than average: bound that selection gain by an
    # 8-sigma per-record tail deviation for each cached record.
    tol = 6 * sigma + 8 * k * math.sqrt(f.s2 / records) + 1e-12
    return _result(hit, cached, nocache, hot_c, hot_nc, hot, k, f.tail, tol)


def _hot_fraction(srv, mass, excluded, load, hot, per_rec_tail, n):
    """Share of each server's load on its ``hot`` heaviest non-excluded records."""
    keep = ~excluded
    s, m = srv[keep], mass[keep]          # already sorted by mass desc
    order = np.argsort(s, kind="stable")  # group by server, mass order kept
    s, m = s[order], m[order]
    starts = np.searchsorted(s, np.arange(n))
    pos = np.arange(len(s)) - starts[s]
    top = np.bincount(s[pos < hot], weights=m[pos < hot], minlength=n).astype(float)
    cnt = np.bincount(s, minlength=n)
    top += np.maximum(hot - cnt, 0) * per_rec_tail  # fill with tail records
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(load > 0, top / load, 0.0)
    return np.minimum(out, 1.0)


def _result(hit, cached, nocache, hot_c, hot_nc, hot, k, tail, tol):
    mc = cached.max()
    norm = float(nocache.max() / mc) if mc > 0 else math.inf
    for a in (cached, nocache, hot_c, hot_nc):
        a.setflags(write=False)  # results are shared through the lru_cache
    return WorkloadShares(float(hit), cached, nocache, norm, hot_c, hot_nc, hot, k,
                          float(tail), float(tol))
