"""Every workload source as *blocks* of equally popular records (docs/workload.md, sections 1-6).

Each block has a total request mass, a record count and a server; all
records of a block are equally popular. Exactly computed records are blocks
of one; the long tail of a key space is a few flat blocks per server.
:func:`blocks` builds them for a :class:`~model.workload_types.StockSpec`
(the generator as the public code runs it), a
:class:`~model.workload_types.RankSpec` (rank-ordered keys) or a
:class:`~model.workload_sources.KeyTrace` (anything else with ``servers()``
and ``counts``); :mod:`model.workload_summary` turns blocks into shares.

The stock generator's folded head and its partition keys do not depend on
the server count; they are remembered in memory and, when an entry point
installed one, in the workload store (:mod:`model.workload_store`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from . import keys, workload_store, ycsb
from .errors import InputError
from .workload_types import RankSpec, StockSpec
from .ycsb import ZipfParams, fnvhash64_np, rank_pmf

TAIL_BINS = 48               # log-spaced rank bins of a rank-ordered tail


@dataclass(frozen=True)
class Blocks:
    """One source's popularity, split over servers (module docstring)."""
    mass: np.ndarray        # request mass of each block (sums to 1)
    count: np.ndarray       # records in each block
    server: np.ndarray      # server of each block
    # sorted by per-record mass (mass / count) descending
    tolerance: float        # abs error bound on shares / hit ratio from the tail
    select_tol: float       # extra bound per cached key (cache selection among tail records)
    tail_mass: float        # mass not computed record by record
    records: float          # total records


@functools.lru_cache(maxsize=16)
def stock_fold(spec: StockSpec):
    """Head ranks folded onto key numbers, with YCSB's modulus and redraw.

    Returns (recs, mass, per_rec_tail, tail, s2, modulus): head records sorted
    by mass descending (ties: lower key number first), each mass including its
    even share of the tail; all masses already conditioned on the redraw.

    The fold does not depend on the server count, and it is half of a new
    server count's first evaluation (0.6 s of 1.3 s: 2^20 FNV hashes and a
    unique), so it is kept in the workload store too (on disk, when an entry
    point installed that): a sweep to a server count the user has not run
    before only partitions the folded head."""
    z = workload_store.load("fold", (spec,))
    if z is not None and all(a in z for a in ("recs", "mass", "scalars", "modulus")):
        per_rec, tail, s2 = (float(x) for x in z["scalars"])
        return z["recs"], z["mass"], per_rec, tail, s2, int(z["modulus"])
    out = fold_head(spec)
    recs, mass, per_rec, tail, s2, m = out
    workload_store.save("fold", (spec,),
                        {"recs": recs, "mass": mass, "scalars": np.array([per_rec, tail, s2]),
                         "modulus": np.array(m, dtype=np.int64)}, compress=False)
    return out


@functools.lru_cache(maxsize=16)
def head_keys(spec: StockSpec, partition: str, buckets: int) -> np.ndarray:
    """:func:`model.keys.partition_keys` of the folded head's records, kept
    like the fold (they too do not depend on the server count: FNV, wire
    key and CRC32 of 10^6 records were a third of a new count's evaluation)."""
    z = workload_store.load("headkeys", (spec, partition, buckets))
    if z is not None and "keys" in z:
        return z["keys"]
    pk = keys.partition_keys(stock_fold(spec)[0], spec.layout, partition, buckets,
                             spec.insertorder)
    pk.setflags(write=False)
    workload_store.save("headkeys", (spec, partition, buckets), {"keys": pk}, compress=False)
    return pk


def fold_head(spec: StockSpec):
    """:func:`stock_fold`, computed."""
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


def stock_blocks(spec: StockSpec, n: int, partition: str, buckets: int) -> Blocks:
    frac, exact = keys.record_fractions(spec.records, spec.layout, spec.insertorder, n,
                                        partition, buckets)
    frac = np.array(frac)
    recs_per_srv = frac * spec.records
    if spec.distribution in ("uniform", "sequential"):
        # Every record equally likely (sequential: each visited once per pass).
        keep = recs_per_srv > 0
        srv = np.flatnonzero(keep)
        tol = 0.0 if exact else 6 * math.sqrt(frac.max() / spec.records)
        return Blocks(frac[keep], recs_per_srv[keep], srv, tol, 0.0, 1.0, float(spec.records))
    if spec.distribution != "zipf":
        raise InputError(f"unknown distribution {spec.distribution!r}", field="workload.distribution")
    recs, mass, per_rec, tail, s2, m = stock_fold(spec)
    srv = keys.servers_from_keys(head_keys(spec, partition, buckets), spec.layout, n,
                                 partition, buckets)
    head_cnt = np.bincount(srv, minlength=n)
    nonhead = np.maximum(recs_per_srv - head_cnt, 0.0)
    t_srv = np.flatnonzero(nonhead > 0)
    # random-hash spread of the tail: variance Σ p_v^2 f (1 - f) per server
    f1f = float(np.max(frac * (1 - frac)))
    sigma = math.sqrt(s2 * f1f)
    if not exact:
        sigma += tail * math.sqrt(f1f / spec.records)
    return Blocks(
        mass=np.concatenate([mass, nonhead[t_srv] * per_rec]),
        count=np.concatenate([np.ones(len(recs)), nonhead[t_srv]]),
        server=np.concatenate([srv, t_srv]).astype(np.int64),
        tolerance=6 * sigma, select_tol=8 * math.sqrt(s2 / spec.records),
        tail_mass=tail, records=float(spec.records))


def rank_masses(spec: RankSpec, starts, ends) -> np.ndarray:
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


def rank_blocks(spec: RankSpec, n: int, partition: str, buckets: int) -> Blocks:
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
            pm = rank_masses(spec, ps, pe)
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
            bm = rank_masses(spec, edges[:-1], edges[1:])
            bc = np.diff(edges).astype(float)
            for b in range(len(bm)):
                keep = frac > 0
                mass.append(bm[b] * frac[keep]), count.append(bc[b] * frac[keep])
                server.append(np.flatnonzero(keep))
            # random-hash spread of the tail: Σ p_r^2 <= p_h * tail
            t = float(bm.sum())
            p_h = float(rank_masses(spec, [h], [h + 1])[0])
            tol = 6 * math.sqrt(p_h * t * float(np.max(frac * (1 - frac))))
        tail = float(np.sum(np.concatenate(mass[1:]))) if len(mass) > 1 else 0.0
    mass = np.concatenate(mass)
    count = np.concatenate(count)
    server = np.concatenate(server).astype(np.int64)
    q = mass / count
    order = np.argsort(-q, kind="stable")
    return Blocks(mass[order], count[order], server[order], tol, 0.0, tail, float(spec.items))


def trace_blocks(trace, n: int, partition: str, buckets: int) -> Blocks:
    srv = trace.servers(n, partition, buckets)
    mass = trace.counts / trace.counts.sum()
    order = np.lexsort((np.arange(len(mass)), -mass))
    return Blocks(mass[order], np.ones(len(mass)), srv[order].astype(np.int64), 0.0, 0.0, 0.0,
                  float(len(mass)))


@functools.lru_cache(maxsize=32)
def blocks(source, n: int, partition: str, buckets: int) -> Blocks:
    if isinstance(source, StockSpec):
        return stock_blocks(source, n, partition, buckets)
    if isinstance(source, RankSpec):
        return rank_blocks(source, n, partition, buckets)
    return trace_blocks(source, n, partition, buckets)
