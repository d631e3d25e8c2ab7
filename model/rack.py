"""The rack as both engines see it: scenario + profile -> per-request quantities.

:func:`derive` turns a :class:`~model.scenario.Scenario` and a
:class:`~model.profile.Profile` into :class:`RackInputs`: cache hit ratio and
per-server shares (from :mod:`model.workload`), client send cost, network
round trips, receive-buffer capacity in packets and each worker's storage
cost (from :mod:`model.storage`). The analytic solver
(:mod:`model.predict`) and the simulator (:mod:`sim`) both start from it,
so they model the same system and can be compared field by field.

Load-dependent corrections (CPU sharing between busy workers, low-load
slowdown, oversubscribed cores) live in :func:`process_us`, called with the
current utilizations by whichever engine is running.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import storage, workload
from .profile import Profile
from .scenario import Scenario


@dataclass(frozen=True)
class RackInputs:
    scenario: Scenario
    profile: Profile
    hit_ratio: float
    shares: np.ndarray           # per server, fraction of all requests (after cache)
    shares_nocache: np.ndarray   # per server, fraction of all requests without cache
    normalized_x: float
    send_us: float               # client send cost per request
    hit_rtt_us: float            # client -> switch -> client for a hit, besides send
    miss_rtt_us: float           # client -> server -> client wire/stack time, besides send and server
    timeout_us: float
    recv_floor_us: float         # receive call on a busy worker (part of measured wait)
    gap_us: float                # per-request worker time in neither wait nor process
    buffer_pkts: float           # receive-buffer capacity per worker, packets
    workers_per_machine: int
    queries: float               # requests in the run
    write_frac: float            # fraction of server-bound requests that write
    costs: tuple                 # storage.RequestCost per server (load-independent part)

    @property
    def servers(self) -> int:
        return len(self.shares)


def send_us(threads: int, profile: Profile) -> float:
    """Per-request client send cost; grows with the threads sharing client cores and NIC.

    Linear in the thread count: 3.6 us at 32 threads, about 4 us at 128 and
    7 us at 1024 in the reference notes.
    """
    return profile["send_base_us"] + profile["send_per_thread_us"] * max(threads, 1)


def derive(scenario: Scenario, profile: Profile) -> RackInputs:
    sv, sw, w = scenario.servers, scenario.switch, scenario.workload
    ws = workload.shares(w, sv.count, sw.partition, sw.cache_keys, sw.cache,
                         cache_scale=profile.get("cache_scale", 1.0),
                         hash_buckets=sw.hash_buckets,
                         hot_colocation=profile.get("hot_colocation", 0.0))
    shares = np.asarray(ws.shares, dtype=float)
    hit, norm = float(ws.hit_ratio), float(ws.normalized_x)
    if sw.cache and sw.mode == "read-only":
        # NetCache: only reads of cached keys are answered by the switch;
        # writes to them still reach their server.
        nocache = np.asarray(ws.shares_nocache, dtype=float)
        r = w.read_ratio
        shares = (1.0 - r) * nocache + r * shares
        hit *= r
        norm = float(nocache.max() / shares.max()) if shares.max() > 0 else math.inf
    queries = w.queries_m * 1e6
    write_frac = 1.0 - w.read_ratio
    cached = sw.cache_keys * profile.get("cache_scale", 1.0) if sw.cache else 0.0
    costs = []
    for i in range(sv.count):
        writes_i = queries * shares[i] * write_frac
        window = storage.resident_window(scenario, profile, writes_i)
        p_mem = storage.memtable_hit_fraction(scenario, window, sv.count, cached)
        flushes = storage.flush_jobs(scenario, profile, writes_i)
        costs.append(storage.request_cost(scenario, profile, p_mem=p_mem, flushes=flushes))
    pkt_bytes = profile["rcvbuf_pkt_bytes"]
    return RackInputs(
        scenario=scenario, profile=profile, hit_ratio=hit,
        shares=shares, shares_nocache=np.asarray(ws.shares_nocache, dtype=float),
        normalized_x=norm,
        send_us=send_us(scenario.clients.threads, profile),
        hit_rtt_us=profile["hit_rtt_us"], miss_rtt_us=profile["miss_rtt_us"],
        timeout_us=scenario.clients.timeout_ms * 1e3,
        recv_floor_us=profile["recv_floor_us"], gap_us=profile["server_gap_us"],
        buffer_pkts=sv.rcvbuf_kb * 1024.0 / pkt_bytes,
        workers_per_machine=max(1, math.ceil(sv.count / sv.machines)),
        queries=queries, write_frac=write_frac, costs=tuple(costs))


def process_us(inputs: RackInputs, util: np.ndarray) -> np.ndarray:
    """Per-worker process time (us) at utilizations ``util``.

    * Low load: a worker that idles between requests runs colder (caches,
      frequency), so it processes slower: x (1 + idle_penalty * (1 - U)).
    * Busy co-located workers contend for what a machine shares (network
      stack and interrupt processing, memory bandwidth, caches, RocksDB
      background threads): x (1 + share_penalty * busy peers on the machine).
      Unpinned workers pay unpinned_factor on top (storage.request_cost).
    * More runnable threads than cores: time-sliced, plus context switches.
    """
    p = inputs.profile
    sv = inputs.scenario.servers
    base = np.array([c.process_us for c in inputs.costs])
    util = np.clip(np.asarray(util, dtype=float), 0.0, 1.0)
    factor = 1.0 + p["idle_penalty"] * (1.0 - util)
    wpm = inputs.workers_per_machine
    if len(util) > 1:
        peers = (util.sum() - util) * (wpm - 1) / max(len(util) - 1, 1)
        factor = factor * (1.0 + p["share_penalty"] * peers)
    if sv.cores > 0:
        runnable = util.sum() / sv.machines
        over = runnable / sv.cores
        if over > 1.0:
            factor = factor * over * (1.0 + p["context_switch_penalty"])
    return base * factor
