"""Who gets which requests: key popularity, key layout, partitioning, switch cache.

The entry point is :func:`evaluate`. From the scenario's ``[workload]`` and
``[switch]`` sections, the server count and an optional *workload source* it
returns a :class:`WorkloadResult`: the cache hit ratio, each server's share of
all requests with and without the cache, the normalized throughput, the skew
each server sees (hot fractions, and :func:`window_hit_fraction` for
memtable hits) and a stated tolerance. docs/workload.md explains every rule;
its section numbers are cited below.

Workload sources (docs/workload.md, section 4):

* none: the generator the scenario names, exactly as the public code runs it
  (``generator = "ycsb"``: YCSB 0.17 CoreWorkload + FarReach's wire key;
  ``"kvperf"``: this repository's load generator and wire key);
* a :class:`~model.workload_sources.WorkloadProfile`: a calibrated description
  of a lab's key popularity and key layout (``model/profiles/workloads/``);
* a :class:`~model.workload_sources.MeasuredWorkload`: per-server load ratios
  and hit ratio as FarReach's client statistics report them;
* a :class:`~model.workload_sources.KeyTrace`: the keys of a run.

One popularity model
--------------------
Every source is turned into the same representation, *blocks* of records:
each block has a total request mass, a record count and a server, and all
records of a block are equally popular. Exactly computed records are blocks
of one; the long tail of a key space is a few flat blocks per server. Shares,
cache selection, hot fractions and memtable (window) hits are all computed
from these blocks (:func:`_summarize`), so the storage model and the load
split see the same popularity.

The former API (:func:`shares`, :func:`sample_records`, ``_fold``,
``_servers_of``, :func:`record_key`) lives on in :mod:`model.workload_legacy`
with its old numbers until its callers move to :func:`evaluate`.
"""

from __future__ import annotations

import functools
import math
import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import keys, workload_cache, ycsb
from .errors import InputError
# Former API, unchanged numbers (see the module docstring of workload_legacy).
from .workload_legacy import (DEFAULT_HEAD, DEFAULT_HOT_RECORDS, WorkloadShares,  # noqa: F401
                              _cached_shares, _fold, _servers_of, _shares, key_server,
                              range_server, record_fractions, record_key, record_keys_np,
                              sample_records, shares)
from .keys import PARTITIONS, crc32_rows  # noqa: F401
from .ycsb import (ITEM_COUNT, ZETAN, ZipfParams, fnvhash64, fnvhash64_np,  # noqa: F401
                   rank_pmf, zeta)

RANK_HEAD = 1 << 20          # rank-ordered profiles: ranks enumerated exactly
TAIL_BINS = 48               # log-spaced rank bins of a rank-ordered tail
WIN_PER_OCTAVE = 16          # window tables: bins per factor 2 of per-record mass
WIN_OCTAVES = 64            # per-record masses down to 2^-64
_NB = WIN_PER_OCTAVE * WIN_OCTAVES + 1


# ---------------------------------------------------------------- sources
@dataclass(frozen=True)
class StockSpec:
    """A generator as the public code runs it (docs/workload.md, sections 1-2)."""
    distribution: str = "zipf"
    theta: float = 0.99
    records: int = 100_000_000
    generator: str = "ycsb"         # ycsb | kvperf
    layout: str = "farreach"        # farreach | synthetic | kvperf
    insertorder: str = "hashed"
    items: int | None = None        # zipf ranks; None = YCSB's 10^10 + 1
    head: int = DEFAULT_HEAD        # ranks folded onto records exactly

    @property
    def label(self) -> str:
        return f"{self.generator} {self.distribution}"


@dataclass(frozen=True)
class RankSpec:
    """Rank-ordered keys: key number ``r - 1`` has popularity rank ``r``
    (docs/workload.md, section 5)."""
    pmf: str                        # zipf (p ∝ r^-theta) | ycsb (Gray et al.'s)
    theta: float
    items: int
    layout: str = "synthetic"
    insertorder: str = "ordered"
    head: int = RANK_HEAD

    @property
    def label(self) -> str:
        return f"rank-ordered {self.pmf} {self.theta} over {self.items:.4g} keys"


@dataclass(frozen=True)
class _Blocks:
    mass: np.ndarray        # request mass of each block (sums to 1)
    count: np.ndarray       # records in each block
    server: np.ndarray      # server of each block
    # sorted by per-record mass (mass / count) descending
    tolerance: float        # abs error bound on shares / hit ratio from the tail
    select_tol: float       # extra bound per cached key (cache selection among tail records)
    tail_mass: float        # mass not computed record by record
    records: float          # total records


# ----------------------------------------------------------- the result
@dataclass(frozen=True)
class WorkloadResult:
    """Workload-determined load split, all as fractions of ALL requests.

    - ``hit_ratio``: requests answered by the switch cache.
    - ``shares`` / ``shares_nocache``: per-server fraction with / without the
      cache (sum to ``1 - hit_ratio`` / 1).
    - ``normalized_x``: ``max(shares_nocache) / max(shares)``.
    - ``server_hot_fraction`` (with the cache) and ``..._nocache``: per
      server, the fraction of that server's requests that go to its
      ``hot_records`` most popular keys (the cache removes the head, so
      servers behind it see flatter traffic).
    - ``cached_keys``: keys the switch holds (0 with the cache off).
    - ``tail_mass``: mass not computed key by key; ``tolerance``: absolute
      error bound on every share and on the hit ratio (docs/workload.md,
      section 6). NaN entries mean "not known" (measured descriptions that
      lack a quantity).
    - ``source``: what described the workload; ``notes``: assumptions made.
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
    source: str = "ycsb"
    partition: str = "range"
    notes: tuple = ()
    # Che tables for window_hit_fraction: per server and per-record-mass bin,
    # request mass and record count of read lookups and of written keys.
    win_read_mass: np.ndarray | None = field(default=None, repr=False)
    win_read_count: np.ndarray | None = field(default=None, repr=False)
    win_write_mass: np.ndarray | None = field(default=None, repr=False)
    win_write_count: np.ndarray | None = field(default=None, repr=False)

    @property
    def servers(self) -> int:
        return len(self.shares)

    @property
    def bottleneck(self) -> int:
        return int(np.nanargmax(self.shares))

    def restricted(self, servers) -> "WorkloadResult":
        """The workload seen when clients send only the requests of ``servers``
        (FarReach's server rotation runs a few partitions and skips the rest,
        :mod:`model.rotation`): those servers, in that order, with every
        fraction renormalised to the requests they receive (cache hits
        included). Per-server quantities (hot fractions, popularity tables)
        are each server's own and stay as they are."""
        idx = np.asarray(list(servers), dtype=np.int64)
        nocache = np.asarray(self.shares_nocache, dtype=float)[idx]
        shares = np.asarray(self.shares, dtype=float)[idx]
        total = float(np.nansum(nocache))
        if not total > 0:
            raise ValueError("these servers receive no requests")
        shares, nocache = shares / total, nocache / total
        with np.errstate(invalid="ignore", divide="ignore"):
            nx = float(np.nanmax(nocache) / np.nanmax(shares))
        pick = (lambda a: None if a is None else np.asarray(a)[idx])
        return dataclasses.replace(
            self, hit_ratio=float(1.0 - np.nansum(shares)), shares=shares,
            shares_nocache=nocache, normalized_x=nx,
            server_hot_fraction=np.asarray(self.server_hot_fraction)[idx],
            server_hot_fraction_nocache=np.asarray(self.server_hot_fraction_nocache)[idx],
            win_read_mass=pick(self.win_read_mass), win_read_count=pick(self.win_read_count),
            win_write_mass=pick(self.win_write_mass), win_write_count=pick(self.win_write_count),
            notes=self.notes + (f"restricted to servers {idx.tolist()} of {self.servers}",))

    def to_dict(self) -> dict[str, Any]:
        """The ``sim workload --json`` object (non-finite numbers -> None)."""
        def num(x):
            x = float(x)
            return x if math.isfinite(x) else None
        return {
            "source": self.source,
            "partition": self.partition,
            "servers": self.servers,
            "hit_ratio": num(self.hit_ratio),
            "shares": [num(v) for v in self.shares],
            "shares_nocache": [num(v) for v in self.shares_nocache],
            "normalized_x": num(self.normalized_x),
            "max_share": num(np.nanmax(self.shares)) if np.any(np.isfinite(self.shares)) else None,
            "max_share_nocache": (num(np.nanmax(self.shares_nocache))
                                  if np.any(np.isfinite(self.shares_nocache)) else None),
            "idle_servers": int(np.sum(np.asarray(self.shares_nocache) == 0)),
            "server_hot_fraction": [num(v) for v in self.server_hot_fraction],
            "server_hot_fraction_nocache": [num(v) for v in self.server_hot_fraction_nocache],
            "hot_records": int(self.hot_records),
            "cached_keys": int(self.cached_keys),
            "tail_mass": num(self.tail_mass),
            "tolerance": num(self.tolerance),
            "notes": list(self.notes),
        }


# ------------------------------------------------------------ block builders
@functools.lru_cache(maxsize=16)
def _stock_fold(spec: StockSpec):
    """Head ranks folded onto key numbers, with YCSB's modulus and redraw.

    Returns (recs, mass, per_rec_tail, tail, s2, modulus): head records sorted
    by mass descending (ties: lower key number first), each mass including its
    even share of the tail; all masses already conditioned on the redraw.

    The fold does not depend on the server count, and it is half of a new
    server count's first evaluation (0.6 s of 1.3 s: 2^20 FNV hashes and a
    unique), so it is kept on disk too: a sweep to a server count the user has
    not run before only partitions the folded head."""
    path = workload_cache.path_for("fold", (spec,))
    z = workload_cache.load(path)
    if z is not None and all(a in z for a in ("recs", "mass", "scalars", "modulus")):
        per_rec, tail, s2 = (float(x) for x in z["scalars"])
        return z["recs"], z["mass"], per_rec, tail, s2, int(z["modulus"])
    out = _fold_head(spec)
    recs, mass, per_rec, tail, s2, m = out
    workload_cache.save(path, {"recs": recs, "mass": mass, "scalars": np.array([per_rec, tail, s2]),
                               "modulus": np.array(m, dtype=np.int64)}, compress=False)
    return out


@functools.lru_cache(maxsize=16)
def _head_keys(spec: StockSpec, partition: str, buckets: int) -> np.ndarray:
    """:func:`model.keys.partition_keys` of the folded head's records, kept
    like the fold (they too do not depend on the server count: FNV, wire
    key and CRC32 of 10^6 records were a third of a new count's evaluation)."""
    path = workload_cache.path_for("headkeys", (spec, partition, buckets))
    z = workload_cache.load(path)
    if z is not None and "keys" in z:
        return z["keys"]
    pk = keys.partition_keys(_stock_fold(spec)[0], spec.layout, partition, buckets,
                             spec.insertorder)
    pk.setflags(write=False)
    workload_cache.save(path, {"keys": pk}, compress=False)
    return pk


def _fold_head(spec: StockSpec):
    """:func:`_stock_fold`, computed."""
    zp = ZipfParams.make(spec.theta, spec.items)
    h = min(spec.head, zp.items)
    p = rank_pmf(zp, h)
    tail = 0.0 if h == zp.items else float(1.0 - zp.cdf(h))
    m = ycsb.modulus(spec.records, spec.generator)
    rec = fnvhash64_np(np.arange(h, dtype=np.int64)) % m
    uniq, inv = np.unique(rec, return_inverse=True)
    mass = np.bincount(inv, weights=p) + tail / m
    per_rec_tail = tail / m
    z = 1.0
    if m > spec.records:
        # CoreWorkload.nextKeynum redraws key number `records`: condition on the rest
        out = uniq >= spec.records
        z = 1.0 - (float(mass[out].sum()) if np.any(out) else per_rec_tail)
        uniq, mass = uniq[~out], mass[~out]
    mass = mass / z
    order = np.lexsort((uniq, -mass))
    uniq, mass = uniq[order], mass[order]
    s2 = 0.0
    if tail > 0:
        # Σ_{v>=H} p_v^2 <= c^2 (H^-2θ + ∫_H^items x^-2θ dx), p_v <= c v^-θ
        c = (1 - spec.theta) * zp.items ** (spec.theta - 1) / zp.eta
        e = 1 - 2 * spec.theta
        integ = math.log(zp.items / h) if abs(e) < 1e-12 else (zp.items ** e - h ** e) / e
        s2 = c * c * (h ** (-2 * spec.theta) + integ) / (z * z)
    for a in (uniq, mass):
        a.setflags(write=False)
    return uniq, mass, per_rec_tail / z, tail / z, s2, m


def _stock_blocks(spec: StockSpec, n: int, partition: str, buckets: int) -> _Blocks:
    frac, exact = keys.record_fractions(spec.records, spec.layout, spec.insertorder, n,
                                        partition, buckets)
    frac = np.array(frac)
    recs_per_srv = frac * spec.records
    if spec.distribution in ("uniform", "sequential"):
        # Every record equally likely (sequential: each visited once per pass).
        keep = recs_per_srv > 0
        srv = np.flatnonzero(keep)
        tol = 0.0 if exact else 6 * math.sqrt(frac.max() / spec.records)
        return _Blocks(frac[keep], recs_per_srv[keep], srv, tol, 0.0, 1.0, float(spec.records))
    if spec.distribution != "zipf":
        raise InputError(f"unknown distribution {spec.distribution!r}", field="workload.distribution")
    recs, mass, per_rec, tail, s2, m = _stock_fold(spec)
    srv = keys.servers_from_keys(_head_keys(spec, partition, buckets), spec.layout, n,
                                 partition, buckets)
    head_cnt = np.bincount(srv, minlength=n)
    nonhead = np.maximum(recs_per_srv - head_cnt, 0.0)
    t_srv = np.flatnonzero(nonhead > 0)
    # random-hash spread of the tail: variance Σ p_v^2 f (1 - f) per server
    f1f = float(np.max(frac * (1 - frac)))
    sigma = math.sqrt(s2 * f1f)
    if not exact:
        sigma += tail * math.sqrt(f1f / spec.records)
    return _Blocks(
        mass=np.concatenate([mass, nonhead[t_srv] * per_rec]),
        count=np.concatenate([np.ones(len(recs)), nonhead[t_srv]]),
        server=np.concatenate([srv, t_srv]).astype(np.int64),
        tolerance=6 * sigma, select_tol=8 * math.sqrt(s2 / spec.records),
        tail_mass=tail, records=float(spec.records))


def _rank_masses(spec: RankSpec, starts, ends) -> np.ndarray:
    """Mass of key numbers [start, end) (ranks start+1 .. end)."""
    if spec.pmf == "zipf":
        z = float(ycsb.zipf_cum(spec.items, spec.theta))
        return ycsb.zipf_sum(np.asarray(starts) + 1, np.asarray(ends) + 1, spec.theta) / z
    zp = ZipfParams.make(spec.theta, spec.items)
    def cdf(x):
        x = np.asarray(x, dtype=np.float64)
        out = np.where(x >= 2, zp.cdf(np.maximum(x, 2)), 0.0)
        out = np.where(x == 1, 1 / zp.zetan, out)
        return out
    return cdf(ends) - cdf(starts)


def _rank_blocks(spec: RankSpec, n: int, partition: str, buckets: int) -> _Blocks:
    h = min(spec.head, spec.items)
    k = np.arange(h, dtype=np.int64)
    if spec.pmf == "zipf":
        p = (k + 1.0) ** -spec.theta / float(ycsb.zipf_cum(spec.items, spec.theta))
    else:
        p = rank_pmf(ZipfParams.make(spec.theta, spec.items), h)
    srv = keys.servers_of(k, spec.layout, n, partition, buckets, spec.insertorder)
    mass, count, server = [p], [np.ones(h)], [srv]
    tol = 0.0
    tail = 0.0
    if spec.items > h:
        edges = np.unique(np.geomspace(h, spec.items, TAIL_BINS + 1).round().astype(np.int64))
        runs = keys.server_runs(h, spec.items, spec.layout, n, partition, spec.insertorder)
        if runs is not None:
            rs, re, rsrv = runs
            # cut the runs at the bin edges so each piece has one server and one bin
            cuts = np.union1d(np.concatenate([rs, [re[-1]]]), edges)
            ps, pe = cuts[:-1], cuts[1:]
            psrv = rsrv[np.searchsorted(rs, ps, side="right") - 1]
            pbin = np.searchsorted(edges, ps, side="right") - 1
            pm = _rank_masses(spec, ps, pe)
            key_ = pbin * n + psrv
            bm = np.bincount(key_, weights=pm, minlength=len(edges) * n)
            bc = np.bincount(key_, weights=(pe - ps).astype(float), minlength=len(edges) * n)
            nz = np.flatnonzero(bc > 0)
            mass.append(bm[nz]), count.append(bc[nz]), server.append(nz % n)
            tol = 1e-12 * len(pm)
        else:
            # not run-structured (hash partitioning, hashed keys): the ideal split
            frac = np.array(keys.record_fractions(max(spec.items, keys.RECORD_ENUM_LIMIT + 1),
                                                  spec.layout, spec.insertorder, n, partition,
                                                  buckets)[0])
            bm = _rank_masses(spec, edges[:-1], edges[1:])
            bc = np.diff(edges).astype(float)
            for b in range(len(bm)):
                keep = frac > 0
                mass.append(bm[b] * frac[keep]), count.append(bc[b] * frac[keep])
                server.append(np.flatnonzero(keep))
            # random-hash spread of the tail: Σ p_r^2 <= p_h * tail
            t = float(bm.sum())
            p_h = float(_rank_masses(spec, [h], [h + 1])[0])
            tol = 6 * math.sqrt(p_h * t * float(np.max(frac * (1 - frac))))
        tail = float(np.sum(np.concatenate(mass[1:]))) if len(mass) > 1 else 0.0
    mass = np.concatenate(mass)
    count = np.concatenate(count)
    server = np.concatenate(server).astype(np.int64)
    q = mass / count
    order = np.argsort(-q, kind="stable")
    return _Blocks(mass[order], count[order], server[order], tol, 0.0, tail, float(spec.items))


def _trace_blocks(trace, n: int, partition: str, buckets: int) -> _Blocks:
    srv = trace.servers(n, partition, buckets)
    mass = trace.counts / trace.counts.sum()
    order = np.lexsort((np.arange(len(mass)), -mass))
    return _Blocks(mass[order], np.ones(len(mass)), srv[order].astype(np.int64), 0.0, 0.0, 0.0,
                   float(len(mass)))


@functools.lru_cache(maxsize=32)
def _blocks(source, n: int, partition: str, buckets: int) -> _Blocks:
    if isinstance(source, StockSpec):
        return _stock_blocks(source, n, partition, buckets)
    if isinstance(source, RankSpec):
        return _rank_blocks(source, n, partition, buckets)
    return _trace_blocks(source, n, partition, buckets)


# --------------------------------------------------------------- summary
def _select(b: _Blocks, k: float):
    """Split blocks so that each is wholly cached or not; the cache takes the
    ``k`` records of highest per-record mass (ties: single records in block
    order, equally popular flat blocks share the boundary evenly).
    Returns (mass, count, server, cached) sorted like ``b``."""
    mass, count, server = b.mass, b.count, b.server
    cached = np.zeros(len(mass), bool)
    if k <= 0 or len(mass) == 0:
        return mass, count, server, cached
    q = mass / count
    # Records of equal popularity in flat (multi-record) blocks share the
    # boundary evenly; single records are taken in their (deterministic) order.
    single = count <= 1
    step = (q[1:] < q[:-1] * (1 - 1e-12)) | single[1:] | single[:-1]
    grp = np.concatenate([[0], np.cumsum(step)])
    gcount = np.bincount(grp, weights=count)
    gcum = np.cumsum(gcount)
    g = int(np.searchsorted(gcum, k, side="left"))
    if g >= len(gcount):
        return mass, count, server, np.ones(len(mass), bool)
    before = gcum[g - 1] if g > 0 else 0.0
    f = (k - before) / gcount[g]           # cached fraction of the boundary group
    cached = grp < g
    part = np.flatnonzero(grp == g)
    if f <= 0:
        return mass, count, server, cached
    # boundary blocks: a cached piece and an uncached piece
    mass = np.concatenate([mass, mass[part] * f])
    count = np.concatenate([count, count[part] * f])
    server = np.concatenate([server, server[part]])
    cached = np.concatenate([cached, np.ones(len(part), bool)])
    mass[part] *= 1 - f
    count[part] *= 1 - f
    return mass, count, server, cached


def _hot(mass, count, server, n, hot):
    """Mass of each server's ``hot`` most popular records (blocks sorted by
    per-record mass within each server by the caller)."""
    order = _by_server_then_mass(mass / np.maximum(count, 1e-300), server, n)
    s, m, c = server[order], mass[order], count[order]
    cum = np.cumsum(c)
    starts = np.searchsorted(s, np.arange(n))
    base = np.where(starts > 0, cum[np.maximum(starts - 1, 0)], 0.0)[s]
    before = cum - c - base                     # records of this server ahead of the block
    take = np.clip(hot - before, 0.0, c)
    return np.bincount(s, weights=m * np.where(c > 0, take / np.maximum(c, 1e-300), 0.0),
                       minlength=n)


def _by_server_then_mass(q, server, n):
    """``np.lexsort((-q, server))`` (server ascending, then per-record mass
    descending, ties in input order) by two stable sorts: the first on -q is
    near linear because the blocks come almost sorted by mass, the second on
    the server number is a radix sort when the numbers fit 16 bits. The
    lexsort of 10^6 blocks was a third of a new server count's evaluation."""
    first = np.argsort(-q, kind="stable")
    srv = server[first]
    if n <= np.iinfo(np.int16).max:
        srv = srv.astype(np.int16)
    return first[np.argsort(srv, kind="stable")]


def _win_table(mass, count, server, n):
    """Request mass and record count per (server, per-record-mass bin)."""
    keep = (mass > 0) & (count > 0)
    q = mass[keep] / count[keep]
    idx = np.clip(np.floor(-np.log2(q) * WIN_PER_OCTAVE), 0, _NB - 1).astype(np.int64)
    key_ = server[keep] * _NB + idx
    wm = np.bincount(key_, weights=mass[keep], minlength=n * _NB).reshape(n, _NB)
    wc = np.bincount(key_, weights=count[keep], minlength=n * _NB).reshape(n, _NB)
    return wm, wc


def _summarize(b: _Blocks, n: int, k: float, hit_prob: float, hot: int) -> dict:
    mass, count, server, cached = _select(b, k)
    nocache = np.bincount(server, weights=mass, minlength=n)
    # a cached key's requests reach its server with probability 1 - hit_prob
    # (write-back: never; read-only: its writes)
    eff = np.where(cached, mass * (1.0 - hit_prob), mass)
    shares_ = np.bincount(server, weights=eff, minlength=n)
    hit = float(np.sum(mass[cached])) * hit_prob
    with np.errstate(invalid="ignore", divide="ignore"):
        hot_nc = np.where(nocache > 0, _hot(mass, count, server, n, hot) / nocache, 0.0)
        hot_c = np.where(shares_ > 0, _hot(eff, count, server, n, hot) / shares_, 0.0)
    # Che tables. Reads of cached keys never reach a server; writes of cached
    # keys do under a read-only cache (hit_prob < 1).
    rm, rc = _win_table(mass[~cached], count[~cached], server[~cached], n)
    wsel = ~cached if hit_prob >= 1.0 else np.ones(len(mass), bool)
    wm, wc = _win_table(mass[wsel], count[wsel], server[wsel], n)
    tol = b.tolerance + k * b.select_tol + 1e-12
    return dict(hit_ratio=hit, shares=shares_, shares_nocache=nocache,
                server_hot_fraction=np.minimum(hot_c, 1.0),
                server_hot_fraction_nocache=np.minimum(hot_nc, 1.0),
                tail_mass=b.tail_mass, tolerance=tol,
                win_read_mass=rm, win_read_count=rc, win_write_mass=wm, win_write_count=wc)


_RESULT_ARRAYS = ("shares", "shares_nocache", "server_hot_fraction", "server_hot_fraction_nocache",
                  "win_read_mass", "win_read_count", "win_write_mass", "win_write_count")
_RESULT_SCALARS = ("hit_ratio", "tail_mass", "tolerance")


@functools.lru_cache(maxsize=256)
def _summary(source, n: int, partition: str, buckets: int, k: int, hit_prob: float,
             hot: int) -> dict:
    """Memory cache in front of the disk cache in front of :func:`_summarize`."""
    cacheable = isinstance(source, (StockSpec, RankSpec))
    path = workload_cache.path_for("workload", (source, n, partition, buckets, k, hit_prob, hot)) \
        if cacheable else None
    z = workload_cache.load(path)
    if z is not None and all(a in z for a in _RESULT_ARRAYS + _RESULT_SCALARS):
        return {a: (z[a].item() if a in _RESULT_SCALARS else z[a])
                for a in _RESULT_ARRAYS + _RESULT_SCALARS}
    res = _summarize(_blocks(source, n, partition, buckets), n, k, hit_prob, hot)
    for a in _RESULT_ARRAYS:
        res[a].setflags(write=False)
    workload_cache.save(path, res)
    return res


def _result(summ: dict, k: int, hot: int, source: str, partition: str,
            notes: tuple = ()) -> WorkloadResult:
    nc, c = summ["shares_nocache"], summ["shares"]
    # a share is (1 - a cumulative popularity): when the cache holds nearly every
    # key, rounding leaves -3e-19 where the truth is 0 (found by the soak)
    if np.any(c < 0):
        c = np.where(np.isfinite(c), np.clip(c, 0.0, None), c)
        c.setflags(write=False)
    mc = np.nanmax(c) if np.any(np.isfinite(c)) else math.nan
    norm = float(np.nanmax(nc) / mc) if mc > 0 else (math.inf if mc == 0 else math.nan)
    return WorkloadResult(
        hit_ratio=float(summ["hit_ratio"]), shares=c, shares_nocache=nc, normalized_x=norm,
        server_hot_fraction=summ["server_hot_fraction"],
        server_hot_fraction_nocache=summ["server_hot_fraction_nocache"],
        hot_records=hot, cached_keys=k, tail_mass=float(summ["tail_mass"]),
        tolerance=float(summ["tolerance"]), source=source, partition=partition, notes=notes,
        win_read_mass=summ.get("win_read_mass"), win_read_count=summ.get("win_read_count"),
        win_write_mass=summ.get("win_write_mass"), win_write_count=summ.get("win_write_count"))


# ----------------------------------------------------------- entry point
def stock_spec(workload, **override) -> StockSpec:
    """The public generator a scenario's ``[workload]`` section names."""
    d = dict(distribution=workload.distribution, theta=float(workload.zipf_theta),
             records=int(workload.records), generator=getattr(workload, "generator", "ycsb"),
             insertorder=getattr(workload, "insertorder", "hashed"))
    d["layout"] = "kvperf" if d["generator"] == "kvperf" else "farreach"
    d.update(override)
    return StockSpec(**d)


def evaluate(workload, switch, servers: int, source=None, *,
             hot_records: int = DEFAULT_HOT_RECORDS) -> WorkloadResult:
    """Shares, hit ratio, normalized throughput and skew for one configuration.

    ``workload`` and ``switch`` are the scenario's sections
    (:class:`model.scenario.Workload`, :class:`model.scenario.Switch`; used:
    ``distribution``, ``zipf_theta``, ``records``, ``read_ratio``,
    ``generator``, ``insertorder``, ``profile``; ``cache``, ``mode``,
    ``cache_keys``, ``partition``, ``hash_buckets``). ``source`` overrides
    ``workload.profile``: None (the scenario's generator, or the profile it
    names), a profile name or path, or a loaded
    :class:`~model.workload_sources.WorkloadProfile`,
    :class:`~model.workload_sources.MeasuredWorkload` or
    :class:`~model.workload_sources.KeyTrace`.

    A read-only cache (``switch.mode = "read-only"``, NetCache) answers only
    the reads of cached keys: their writes stay in ``shares`` and the hit
    ratio is scaled by the read ratio. The result already includes this.
    """
    from . import workload_sources as ws
    n = int(servers)
    if n < 1:
        raise InputError(f"servers must be a positive integer, got {servers!r}", field="servers.count")
    partition = switch.partition
    keys.check_partition(partition)
    buckets = int(switch.hash_buckets)
    if source is None:
        source = getattr(workload, "profile", "") or None
    if isinstance(source, str):
        source = ws.load_source(source, layout=stock_spec(workload).layout)
    hit_prob = float(workload.read_ratio) if switch.mode == "read-only" else 1.0
    if isinstance(source, ws.MeasuredWorkload):
        return source.result(workload, switch, n, hot_records=hot_records)
    if source is None:
        spec = stock_spec(workload)
        label = spec.generator
    elif isinstance(source, ws.WorkloadProfile):
        spec = source.spec(workload)
        label = source.label(workload)
    elif isinstance(source, ws.KeyTrace):
        spec = source
        label = f"trace {source.path}"
    elif isinstance(source, (StockSpec, RankSpec)):
        spec = source
        label = source.label
    else:
        raise TypeError(f"not a workload source: {source!r}")
    total = spec.records if isinstance(spec, StockSpec) else (
        spec.items if isinstance(spec, RankSpec) else len(spec.counts))
    k = min(int(switch.cache_keys), int(total)) if switch.cache else 0
    summ = _summary(spec, n, partition, buckets, k, hit_prob, int(hot_records))
    notes = tuple(getattr(source, "notes", ()) or ())
    return _result(summ, k, int(hot_records), label, partition, notes)


def evaluate_scenario(scenario, source=None, **kw) -> WorkloadResult:
    """:func:`evaluate` for a whole :class:`model.scenario.Scenario`."""
    return evaluate(scenario.workload, scenario.switch, scenario.servers.count, source, **kw)


# ------------------------------------------------------------ memtable hits
#: (id(popularity table), window bytes, lookups) -> (table, fractions): compiling a
#: rack under many profiles (fits, interval sigma points), and the rows of a plan
#: that share a workload and server count, ask the same question. Keyed on the
#: table, which the summary cache keeps alive, not on the result object, which
#: each compile builds anew (keying on it missed every time across rows).
_WINDOW_CACHE: dict = {}
_WINDOW_CACHE_MAX = 8192


def window_hit_fraction(result: WorkloadResult, window_writes, *, server: int | None = None,
                        lookups: str = "reads"):
    n = None if result.win_read_mass is None else result.win_read_mass.shape[0]
    if n is None or lookups not in ("reads", "writes"):
        return _window_hit_fraction(result, window_writes, server=server, lookups=lookups)
    w = np.ascontiguousarray(np.broadcast_to(np.asarray(window_writes, dtype=float), (n,)))
    table = result.win_read_mass if lookups == "reads" else result.win_write_mass
    key = (id(table), id(result.win_write_mass), w.tobytes(), lookups)
    hit = _WINDOW_CACHE.get(key)
    if hit is None or hit[0] is not table or hit[1] is not result.win_write_mass:
        if len(_WINDOW_CACHE) >= _WINDOW_CACHE_MAX:
            _WINDOW_CACHE.clear()
        hit = (table, result.win_write_mass, _window_hit_fraction(result, w, lookups=lookups))
        _WINDOW_CACHE[key] = hit
    out = hit[2]
    return float(out[server]) if server is not None else out.copy()


def _window_hit_fraction(result: WorkloadResult, window_writes, *, server: int | None = None,
                         lookups: str = "reads"):
    """Fraction of a server's lookups whose key was written within the last
    ``window_writes`` writes to that server (docs/workload.md, section 7).

    Che's approximation over the same per-key popularity as the shares, after
    the cache removes its keys: a key with fraction ``p`` of the server's
    writes is among the last W writes with probability ``1 - exp(-W p)``
    (memtables hold every write, duplicates included, so the window is W
    writes; keys are written with the popularity they are read with). A
    lookup of that key then finds it in the memtable.

    ``lookups="reads"``: GETs that reach the server (cached keys' reads are
    answered by the switch); ``"writes"``: lookups made for the server's
    writes (a GET of the stored sequence number before a PUT), whose keys
    follow the write stream (under a read-only cache this includes cached
    keys). ``window_writes`` is a number or one per server; the result is
    one number (``server`` given) or an array per server. Binning per-key
    popularity into 16 bins per octave costs < 0.1 % relative.
    """
    if result.win_read_mass is None:
        raise ValueError("this result has no popularity tables (a measured description "
                         "without a stand-in popularity)")
    if lookups not in ("reads", "writes"):
        raise ValueError(f"lookups must be 'reads' or 'writes', got {lookups!r}")
    lm, lc = ((result.win_read_mass, result.win_read_count) if lookups == "reads"
              else (result.win_write_mass, result.win_write_count))
    wm, wc = result.win_write_mass, result.win_write_count
    n = lm.shape[0]
    w = np.broadcast_to(np.asarray(window_writes, dtype=float), (n,))
    wtot = wm.sum(axis=1)                               # mass of this server's written keys
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.where(lc > 0, lm / np.maximum(lc, 1e-300), 0.0)   # per-key mass in each bin
        pw = q / wtot[:, None]                          # per-key share of the server's writes
        hit = (lm * -np.expm1(-np.maximum(w, 0.0)[:, None] * pw)).sum(axis=1)
        out = np.where(lm.sum(axis=1) > 0, hit / lm.sum(axis=1), 0.0)
    out = np.clip(np.nan_to_num(out), 0.0, 1.0)
    return float(out[server]) if server is not None else out


# ------------------------------------------------------------ sampling
def sample_classes(workload, switch, servers: int, n: int, rng: np.random.Generator,
                   source=None) -> np.ndarray:
    """Draw ``n`` requests from the same popularity :func:`evaluate` uses:
    -1 for a switch-cache hit, else the server index. A read-only cache
    answers only reads (each cached-key request is a hit with probability
    ``read_ratio``). For the simulator: it samples the blocks :func:`evaluate`
    computes from (flat within a tail block). For the generator's exact key
    stream use :func:`model.ycsb.sample_keynums` and :func:`model.keys.servers_of`."""
    from . import workload_sources as ws
    if source is None:
        source = getattr(workload, "profile", "") or None
    if isinstance(source, str):
        source = ws.load_source(source, layout=stock_spec(workload).layout)
    hit_prob = float(workload.read_ratio) if switch.mode == "read-only" else 1.0
    if isinstance(source, ws.MeasuredWorkload):
        res = source.result(workload, switch, servers)
        p = np.concatenate([[res.hit_ratio], res.shares])
        return rng.choice(np.arange(-1, servers), size=n, p=p / p.sum())
    if source is None:
        spec = stock_spec(workload)
    elif isinstance(source, ws.WorkloadProfile):
        spec = source.spec(workload)
    else:
        spec = source                      # StockSpec, RankSpec or KeyTrace
    b = _blocks(spec, int(servers), switch.partition, int(switch.hash_buckets))
    total = spec.records if isinstance(spec, StockSpec) else (
        spec.items if isinstance(spec, RankSpec) else len(spec.counts))
    k = min(int(switch.cache_keys), int(total)) if switch.cache else 0
    mass, _, server, cached = _select(b, k)
    cum = np.cumsum(mass)
    idx = np.minimum(np.searchsorted(cum, rng.random(n) * cum[-1], side="right"), len(mass) - 1)
    out = server[idx].copy()
    hit = cached[idx]
    if hit_prob < 1.0:
        hit &= rng.random(n) < hit_prob
    out[hit] = -1
    return out
