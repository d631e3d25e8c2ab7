"""Workload and placement: which requests the switch answers, and where the rest go.

What it means (docs/model.md, docs/workload.md):

* Each request is a cache hit (answered by the switch) with probability
  ``hit_ratio``; otherwise it goes to worker i with probability
  ``shares[i] / (1 - hit_ratio)``. Shares come from the key popularity, the
  partitioning and the cached set (:mod:`model.workload`).
* A request is a write with the workload's update fraction. A write-back
  cache (FarReach) answers reads and writes of cached keys alike, so the
  servers see the same mix; a read-only cache (NetCache) answers only the
  reads of cached keys, so their writes still reach the servers and the
  write fraction differs per worker (``write_frac[i]``).
* The control plane writes evicted dirty values back to their servers:
  Poisson writes at ``evict_writes_per_s``, spread like the cached keys'
  home servers (``evict_probs``). They are served like client writes but no
  client waits for them.
* Workers run on ``servers.machines`` machines in contiguous blocks
  (``machine_of``), which share disk, cores and the WAL's write-back.

Mean-value form: the shares are the visit ratios of the closed network.
Per-event form: :func:`draw_station`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import workload
from .params import ParamDecl

SCENARIO_KEYS = (
    "switch.cache", "switch.mode", "switch.cache_keys", "switch.partition", "switch.hash_buckets",
    "servers.count", "servers.machines",
    "workload.distribution", "workload.zipf_theta", "workload.records", "workload.read_ratio",
)

PARAMS = (
    ParamDecl("cache_scale", "x", "effective cache size over cache_keys (a stand-in for the lab's "
              "key popularity)", lo=0.0, default=1.0),
    ParamDecl("hot_colocation", "fraction", "share of the hot set's load placed on server 0 "
              "(a stand-in for the lab's key layout)", lo=0.0, hi=1.0, default=0.0),
    ParamDecl("evict_writes_per_s", "writes/s", "write-backs of evicted dirty keys over the rack",
              lo=0.0, default=0.0),
)


@dataclass(frozen=True)
class PlacementSpec:
    hit_ratio: float
    shares: tuple[float, ...]          # per worker: fraction of ALL requests, after the cache
    shares_nocache: tuple[float, ...]  # the same without the cache
    normalized_x: float                # max(shares_nocache) / max(shares)
    write_frac: tuple[float, ...]      # per worker: writes among its client requests
    read_ratio: float
    cached_keys: int                   # records the switch holds
    hot_keys: int                      # the hot set a cache of this size would hold
    machine_of: tuple[int, ...]        # per worker: its machine
    machines: int
    evict_per_us: float                # write-backs per us over the rack
    evict_probs: tuple[float, ...]     # per worker: share of the write-backs
    # the key space itself, for engines that sample actual records
    distribution: str
    zipf_theta: float
    records: int
    partition: str
    hash_buckets: int
    read_only: bool                    # the cache answers reads only (NetCache)
    hot_colocation: float

    @property
    def servers(self) -> int:
        return len(self.shares)

    @property
    def workers_per_machine(self) -> int:
        return max(1, math.ceil(len(self.shares) / self.machines))


def compile_placement(scenario, pr) -> PlacementSpec:
    sv, sw, w = scenario.servers, scenario.switch, scenario.workload
    scale = pr["cache_scale"]
    ws = workload.shares(w, sv.count, sw.partition, sw.cache_keys, sw.cache, cache_scale=scale,
                         hash_buckets=sw.hash_buckets, hot_colocation=pr["hot_colocation"])
    nocache = np.asarray(ws.shares_nocache, dtype=float)
    cached = np.asarray(ws.shares, dtype=float)
    r = w.read_ratio
    if sw.cache and sw.mode == "read-only":
        # NetCache: the switch answers only reads of cached keys.
        shares = (1.0 - r) * nocache + r * cached
        hit = float(ws.hit_ratio) * r
        with np.errstate(invalid="ignore", divide="ignore"):
            wf = np.where(shares > 0, (1.0 - r) * nocache / shares, 1.0 - r)
        norm = float(nocache.max() / shares.max()) if shares.max() > 0 else math.inf
    else:
        shares, hit, norm = cached, float(ws.hit_ratio), float(ws.normalized_x)
        wf = np.full(sv.count, 1.0 - r)
    wpm = max(1, math.ceil(sv.count / sv.machines))
    hot = min(int(round(sw.cache_keys * scale)), int(w.records))
    machine_of = tuple(int(i // wpm) for i in range(sv.count))
    ev = np.clip(nocache - cached, 0.0, None) if sw.cache else np.zeros(sv.count)
    ev = ev / ev.sum() if ev.sum() > 0 else np.full(sv.count, 1.0 / sv.count)
    evict = pr["evict_writes_per_s"] / 1e6 if sw.cache and sw.mode == "write-back" else 0.0
    return PlacementSpec(
        hit_ratio=hit, shares=tuple(map(float, shares)), shares_nocache=tuple(map(float, nocache)),
        normalized_x=norm, write_frac=tuple(map(float, wf)), read_ratio=float(r),
        cached_keys=hot if sw.cache else 0, hot_keys=hot,
        machine_of=machine_of, machines=max(machine_of) + 1,
        evict_per_us=float(evict), evict_probs=tuple(map(float, ev)),
        distribution=w.distribution, zipf_theta=float(w.zipf_theta), records=int(w.records),
        partition=sw.partition, hash_buckets=int(sw.hash_buckets),
        read_only=bool(sw.cache and sw.mode == "read-only"), hot_colocation=pr["hot_colocation"])


# ---------------------------------------------------------------- per-event form
def draw_station(u_hit: float, u_station: float, hit_ratio: float, station_cum) -> int:
    """-1 for a cache hit, else the worker (``station_cum`` = cumulative
    probabilities given a miss, last entry above 1)."""
    if u_hit < hit_ratio:
        return -1
    lo, hi = 0, station_cum.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if station_cum[mid] > u_station:
            hi = mid
        else:
            lo = mid + 1
    return lo
