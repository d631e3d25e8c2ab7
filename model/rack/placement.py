"""Workload and placement: which requests the switch answers, and where the rest go.

What it means (docs/model.md, docs/workload.md):

* Each request is a cache hit (answered by the switch) with probability
  ``hit_ratio``; otherwise it goes to worker i with probability
  ``shares[i] / (1 - hit_ratio)``. Shares come from the key popularity, the
  key layout, the partitioning and the cached set, exactly as the public
  YCSB and FarReach code make them, or from a calibrated or measured
  workload description (:mod:`model.workload`, docs/workload.md).
* A request is a write with the workload's update fraction. A write-back
  cache (FarReach) answers reads and writes of cached keys alike, so the
  servers see the same mix; a read-only cache (NetCache) answers only the
  reads of cached keys that find their entry valid (a write invalidates it
  until its server's value update comes back: :mod:`model.workload`), so
  their writes, and the reads in that window, reach the servers and the
  write fraction differs per worker (``write_frac[i]``). Values larger than
  the switch's registers are never cached (``switch.max_value_bytes``).
* The control plane writes evicted dirty values back to their servers:
  Poisson writes at ``evict_writes_per_s``, spread like the cached keys'
  home servers (``evict_probs``). They are served like client writes but no
  client waits for them.
* Workers run on ``servers.machines`` machines in contiguous blocks
  (``machine_of``), which share disk, cores and the WAL's write-back.

Mean-value form: the shares are the visit ratios of the closed network.
Per-event form: :func:`draw_station` over the alias table of
:func:`station_table`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import workload
from .param_decl import ParamDecl

SCENARIO_KEYS = (
    "switch.cache", "switch.mode", "switch.cache_keys", "switch.partition", "switch.hash_buckets",
    "switch.max_value_bytes", "servers.count", "servers.machines",
    "workload.distribution", "workload.zipf_theta", "workload.records", "workload.read_ratio",
    "workload.generator", "workload.insertorder", "workload.profile", "workload.value_bytes",
    "clients.threads",
)

PARAMS = (
    ParamDecl("evict_writes_per_s", "writes/s", "write-backs of evicted dirty keys over the rack",
              lo=0.0, default=0.0),
)


@dataclass(frozen=True)
class KeySampler:
    """Draws request classes (-1 a cache hit, else the server) from the same
    popularity as the shares (:func:`model.workload.sample_classes`); for the
    engine that samples actual keys."""
    workload: Any
    switch: Any
    servers: int
    update_window: float = 0.0       # a read-only cache's, in requests (model.workload)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return workload.sample_classes(self.workload, self.switch, self.servers, n, rng,
                                       update_window=self.update_window)


@dataclass(frozen=True)
class PlacementSpec:
    hit_ratio: float
    shares: tuple[float, ...]          # per worker: fraction of ALL requests, after the cache
    shares_nocache: tuple[float, ...]  # the same without the cache
    normalized_x: float                # max(shares_nocache) / max(shares)
    write_frac: tuple[float, ...]      # per worker: writes among its client requests
    read_ratio: float
    cached_keys: int                   # keys the switch holds
    machine_of: tuple[int, ...]        # per worker: its machine
    machines: int
    evict_per_us: float                # write-backs per us over the rack
    evict_probs: tuple[float, ...]     # per worker: share of the write-backs
    workload_source: str               # what described the key popularity (docs/workload.md)
    keys: KeySampler                   # actual keys, for the SimPy engine

    @property
    def servers(self) -> int:
        return len(self.shares)

    @property
    def workers_per_machine(self) -> int:
        return max(1, math.ceil(len(self.shares) / self.machines))


def evaluate_workload(scenario):
    """The workload model's answer for this scenario (model.workload.evaluate)."""
    return workload.evaluate_scenario(scenario)


def compile_placement(scenario, pr, wres) -> PlacementSpec:
    sv, sw, w = scenario.servers, scenario.switch, scenario.workload
    nocache = np.nan_to_num(np.asarray(wres.shares_nocache, dtype=float))
    shares = np.nan_to_num(np.asarray(wres.shares, dtype=float))
    r = w.read_ratio
    if sw.cache and sw.mode == "read-only":
        # NetCache answers reads of cached keys only: all writes reach their server
        with np.errstate(invalid="ignore", divide="ignore"):
            wf = np.where(shares > 0, np.minimum(1.0, (1.0 - r) * nocache / shares), 1.0 - r)
    else:
        wf = np.full(sv.count, 1.0 - r)
    wpm = max(1, math.ceil(sv.count / sv.machines))
    machine_of = tuple(int(i // wpm) for i in range(sv.count))
    ev = np.clip(nocache - shares, 0.0, None) if sw.cache else np.zeros(sv.count)
    ev = ev / ev.sum() if ev.sum() > 0 else np.full(sv.count, 1.0 / sv.count)
    # write-backs of evicted dirty keys: a write-back cache that holds keys
    # (none when the values do not fit the switch's registers)
    evict = (pr["evict_writes_per_s"] / 1e6
             if sw.cache and sw.mode == "write-back" and wres.cached_keys > 0 else 0.0)
    return PlacementSpec(
        hit_ratio=float(wres.hit_ratio), shares=tuple(map(float, shares)),
        shares_nocache=tuple(map(float, nocache)), normalized_x=float(wres.normalized_x),
        write_frac=tuple(map(float, wf)), read_ratio=float(r),
        cached_keys=int(wres.cached_keys), machine_of=machine_of, machines=max(machine_of) + 1,
        evict_per_us=float(evict), evict_probs=tuple(map(float, ev)),
        workload_source=str(wres.source),
        keys=KeySampler(w, sw, int(sv.count), workload.update_window_requests(scenario)))


# Mechanism switch for ``python -m sim explain`` (model/explain.py).
def without_writebacks(p: PlacementSpec) -> PlacementSpec:
    """No write-backs of evicted dirty keys (the open class of extra writes)."""
    return replace(p, evict_per_us=0.0)


# ---------------------------------------------------------------- per-event form
def station_table(probs) -> tuple[np.ndarray, np.ndarray]:
    """Walker's alias table of a distribution over workers (Vose's
    construction): ``(accept, alias)``. Worker i is drawn with probability
    ``probs[i] / sum(probs)`` by :func:`draw_station`, in constant time
    (the simulators draw a worker for every request; a binary search over
    the cumulative shares cost a mispredicted branch per step)."""
    p = np.asarray(probs, dtype=float)
    n = len(p)
    scaled = p * (n / p.sum())
    accept = np.ones(n)
    alias = np.arange(n, dtype=np.int64)
    small = [i for i in range(n) if scaled[i] < 1.0]
    large = [i for i in range(n) if scaled[i] >= 1.0]
    while small and large:
        s, g = small.pop(), large.pop()
        accept[s] = scaled[s]
        alias[s] = g
        scaled[g] -= 1.0 - scaled[s]
        (small if scaled[g] < 1.0 else large).append(g)
    # what is left is 1 up to rounding: accept it always
    return accept, alias


def draw_station(u_hit: float, u_station: float, hit_ratio: float, accept, alias) -> int:
    """-1 for a cache hit, else the worker, from a uniform ``u_station`` and
    the alias table (:func:`station_table`) of the workers' shares given a miss."""
    if u_hit < hit_ratio:
        return -1
    n = accept.shape[0]
    x = u_station * n
    i = min(int(x), n - 1)
    a = alias[i]
    # i with probability accept[i], else its alias: chosen by arithmetic, not
    # a branch, which would be mispredicted about as often as it is taken
    return a + (i - a) * int(x - i < accept[i])
