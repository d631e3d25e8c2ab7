"""From blocks to the answer: cache selection, shares, hot fractions and
memtable-window tables (docs/workload.md, sections 3, 6 and 7).

:func:`summary` is the one computation behind every evaluation: the blocks of
a source (:mod:`model.workload_blocks`) with the ``k`` most popular records
cached. It is remembered in memory and, for the stock and rank-ordered
sources, in the workload store (:mod:`model.workload_store`) when an entry
point installed one. :func:`to_result` dresses a summary as a
:class:`~model.workload_types.WorkloadResult`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import workload_store
from .workload_blocks import Blocks, blocks
from .workload_types import RankSpec, StockSpec, WorkloadResult

WIN_PER_OCTAVE = 16          # window tables: bins per factor 2 of per-record mass
WIN_OCTAVES = 64            # per-record masses down to 2^-64
_NB = WIN_PER_OCTAVE * WIN_OCTAVES + 1


def select(b: Blocks, k: float):
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


def hot_mass(mass, count, server, n, hot):
    """Mass of each server's ``hot`` most popular records (blocks sorted by
    per-record mass within each server by the caller)."""
    order = by_server_then_mass(mass / np.maximum(count, 1e-300), server, n)
    s, m, c = server[order], mass[order], count[order]
    cum = np.cumsum(c)
    starts = np.searchsorted(s, np.arange(n))
    base = np.where(starts > 0, cum[np.maximum(starts - 1, 0)], 0.0)[s]
    before = cum - c - base                     # records of this server ahead of the block
    take = np.clip(hot - before, 0.0, c)
    return np.bincount(s, weights=m * np.where(c > 0, take / np.maximum(c, 1e-300), 0.0),
                       minlength=n)


def by_server_then_mass(q, server, n):
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


def win_table(mass, count, server, n):
    """Request mass and record count per (server, per-record-mass bin)."""
    keep = (mass > 0) & (count > 0)
    q = mass[keep] / count[keep]
    idx = np.clip(np.floor(-np.log2(q) * WIN_PER_OCTAVE), 0, _NB - 1).astype(np.int64)
    key_ = server[keep] * _NB + idx
    wm = np.bincount(key_, weights=mass[keep], minlength=n * _NB).reshape(n, _NB)
    wc = np.bincount(key_, weights=count[keep], minlength=n * _NB).reshape(n, _NB)
    return wm, wc


def cached_hit_fraction(q, read_ratio: float, window: float):
    """Fraction of a cached record's requests the switch answers under a
    read-only cache (NetCache), per-record request mass ``q`` (of all requests).

    Every write of a cached key invalidates its entry on its way through the
    switch; the server's value update re-validates it, whichever write it
    carries (the public switch sets ``latest`` = 1 on every
    NETCACHE_VALUEUPDATE, with no sequence check). With the key's writes a
    Poisson stream of rate ``lam`` and each update arriving ``W`` after its
    write, the entry is valid unless the last write came less than ``W`` ago
    and no update arrived since: ``P(valid) = (1 + exp(-2 lam W)) / 2``. It
    tends to 1/2 for keys written many times per window (an older write's
    update re-validates the entry after a newer write invalidated it), not
    to 0. ``window`` is ``W`` in the rack's requests (``lam W`` = the
    record's writes among them, ``(1 - read_ratio) q window``); reads of a
    valid entry are hits. docs/workload.md, section 4."""
    q = np.asarray(q, dtype=float)
    if window <= 0.0:
        return np.full(q.shape, float(read_ratio))
    valid = 0.5 * (1.0 + np.exp(-2.0 * (1.0 - read_ratio) * q * window))
    return read_ratio * valid


def summarize(b: Blocks, n: int, k: float, hit_prob: float, hot: int,
              window: float = 0.0) -> dict:
    """``hit_prob``: the fraction of a cached key's requests the switch may
    answer (write-back: 1; read-only: the read ratio); ``window``: a
    read-only cache's update window in requests (:func:`cached_hit_fraction`;
    0 = entries always valid)."""
    return apply_window(summary_base(b, n, k, hit_prob, hot), hit_prob, window)


def summary_base(b: Blocks, n: int, k: float, hit_prob: float, hot: int) -> dict:
    """What does not depend on a read-only cache's update window: the selected
    blocks, the load and skew without the cache, the written keys' memtable
    table and the uncached keys' read table. A plan over many client counts
    (many windows) computes it once (:func:`summary`)."""
    mass, count, server, cached = select(b, k)
    nocache = np.bincount(server, weights=mass, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        hot_nc = np.where(nocache > 0, hot_mass(mass, count, server, n, hot) / nocache, 0.0)
    # Che tables. Reads of uncached keys reach their server; writes of cached
    # keys do too under a read-only cache (hit_prob < 1).
    rm, rc = win_table(mass[~cached], count[~cached], server[~cached], n)
    wsel = ~cached if hit_prob >= 1.0 else np.ones(len(mass), bool)
    wm, wc = win_table(mass[wsel], count[wsel], server[wsel], n)
    return dict(mass=mass, count=count, server=server, cached=cached, n=n, hot=hot,
                shares_nocache=nocache, server_hot_fraction_nocache=np.minimum(hot_nc, 1.0),
                tail_mass=b.tail_mass, tolerance=b.tolerance + k * b.select_tol + 1e-12,
                win_read_mass=rm, win_read_count=rc, win_write_mass=wm, win_write_count=wc)


def apply_window(base: dict, hit_prob: float, window: float) -> dict:
    """The summary of :func:`summary_base` with the switch's hits: a cached
    key's requests it answers (write-back: all; read-only: the reads that
    find its entry valid), the rest at its server."""
    mass, count, server, cached = base["mass"], base["count"], base["server"], base["cached"]
    n = base["n"]
    hf = np.zeros(len(mass))
    if hit_prob >= 1.0:
        hf[cached] = 1.0
    else:
        hf[cached] = cached_hit_fraction(mass[cached] / np.maximum(count[cached], 1e-300),
                                         hit_prob, window)
    eff = mass * (1.0 - hf)
    shares_ = np.bincount(server, weights=eff, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        hot_c = np.where(shares_ > 0, hot_mass(eff, count, server, n, base["hot"]) / shares_,
                         0.0)
    rm, rc = base["win_read_mass"], base["win_read_count"]
    if hit_prob < 1.0 and window > 0:
        # reads of an invalid entry reach its server (a key just written): weighted
        # by the invalid fraction, mass and count alike, so each record keeps its
        # own mass (its memtable odds)
        inv = np.flatnonzero(cached)
        rw = 1.0 - hf[inv] / hit_prob if hit_prob > 0 else np.zeros(len(inv))
        am, ac = win_table(mass[inv] * rw, count[inv] * rw, server[inv], n)
        rm, rc = rm + am, rc + ac
    return dict(hit_ratio=float(np.sum(mass * hf)), shares=shares_,
                shares_nocache=base["shares_nocache"],
                server_hot_fraction=np.minimum(hot_c, 1.0),
                server_hot_fraction_nocache=base["server_hot_fraction_nocache"],
                tail_mass=base["tail_mass"], tolerance=base["tolerance"],
                win_read_mass=rm, win_read_count=rc,
                win_write_mass=base["win_write_mass"], win_write_count=base["win_write_count"])

RESULT_ARRAYS = ("shares", "shares_nocache", "server_hot_fraction", "server_hot_fraction_nocache",
                  "win_read_mass", "win_read_count", "win_write_mass", "win_write_count")
RESULT_SCALARS = ("hit_ratio", "tail_mass", "tolerance")


@functools.lru_cache(maxsize=256)
def summary(source, n: int, partition: str, buckets: int, k: int, hit_prob: float,
            hot: int, window: float = 0.0) -> dict:
    """Memory cache in front of the workload store in front of :func:`summarize`."""
    key = (source, n, partition, buckets, k, hit_prob, hot) + ((window,) if window > 0 else ())
    cacheable = isinstance(source, (StockSpec, RankSpec))
    z = workload_store.load("workload", key) if cacheable else None
    if z is not None and all(a in z for a in RESULT_ARRAYS + RESULT_SCALARS):
        return {a: (z[a].item() if a in RESULT_SCALARS else z[a])
                for a in RESULT_ARRAYS + RESULT_SCALARS}
    base = _base(source, n, partition, buckets, k, hit_prob, hot)
    res = apply_window(base, hit_prob, window)
    for a in RESULT_ARRAYS:
        res[a].setflags(write=False)
    if cacheable:
        workload_store.save("workload", key, res)
    return res


@functools.lru_cache(maxsize=16)
def _base(source, n: int, partition: str, buckets: int, k: int, hit_prob: float,
          hot: int) -> dict:
    base = summary_base(blocks(source, n, partition, buckets), n, k, hit_prob, hot)
    for a in ("shares_nocache", "server_hot_fraction_nocache", "win_read_mass",
              "win_read_count", "win_write_mass", "win_write_count"):
        base[a].setflags(write=False)
    return base


def to_result(summ: dict, k: int, hot: int, source: str, partition: str,
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
