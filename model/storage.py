"""RocksDB cost model of one worker: per-request work and LSM background flow.

Two time scales, kept apart:

* **Per request** (:func:`request_cost`): what the worker thread spends
  between receiving a request and sending its reply. It is built from the op
  mix the server sees (after the switch cache), the memtable hit fraction
  (skew the server sees: hot keys are found in the memtable, cold ones go to
  SST files), the seq-check mode, WAL, TransactionDB, skiplist depth
  (memtable size) and the data volume of the run (LSM levels).

* **Background flow** (:func:`lsm_flow`): a fluid model of memtables filling
  at the worker's write rate, flushes of ``flushnum`` immutables taking disk
  time shared by the workers of a machine (times compaction write
  amplification), and the write stall when flushing cannot keep up, plus the
  WAL file switch at each memtable switch, which blocks the worker for a
  time that grows with the machine's write-back load.

Every constant comes from the :class:`~model.profile.Profile`; this module
holds formulas only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .profile import Profile
from .scenario import Scenario

MIB = 1024.0 * 1024.0


@dataclass(frozen=True)
class RequestCost:
    """Mean worker time per request, with its parts (all in us)."""
    process_us: float
    read_us: float
    write_us: float
    seqcheck_us: float
    p_mem: float            # fraction of server-bound keys found in memtables
    memtable_entries: float  # entries per full memtable


@dataclass(frozen=True)
class LsmFlow:
    """Fluid LSM state of one worker at a given write rate."""
    write_mbps: float        # memtable fill rate, MiB/s
    fill_s: float            # time to fill one memtable, s (inf if no writes)
    flush_s: float           # duration of one flush job of flushnum memtables, s
    capacity_mbps: float     # long-run flush capacity, MiB/s
    stall_fraction: float    # fraction of time writes are stalled (fluid)
    switch_block_s: float    # worker blocked at each memtable switch (WAL file), s
    switch_fraction: float   # fraction of time blocked by WAL switches
    switches_per_run: float  # memtable switches during the run


def entry_bytes(scenario: Scenario, profile: Profile) -> float:
    """Bytes one write adds to a memtable: key, value, seq and skiplist overhead."""
    w = scenario.workload
    return w.key_bytes + w.value_bytes + 4 + profile["entry_overhead_bytes"]


def memtable_entries(scenario: Scenario, profile: Profile) -> float:
    return scenario.storage.memtable_mb * MIB / entry_bytes(scenario, profile)


def resident_window(scenario: Scenario, profile: Profile, writes_in_run: float) -> float:
    """Write entries resident in memtables (active + unflushed immutables), time-averaged.

    The active memtable is on average half full; immutables accumulate up to
    flushnum before a flush merges them, so on average (flushnum - 1) / 2 of
    them wait, plus the ones being flushed (still readable until done). A run
    shorter than that holds only what it has written, on average half of it.
    """
    s = scenario.storage
    capacity = memtable_entries(scenario, profile) * (0.5 + (s.flushnum - 1) / 2.0 + s.flushnum * 0.5)
    return float(min(capacity, 0.5 * writes_in_run))


def memtable_hit_fraction(scenario: Scenario, window_writes: float, servers: int,
                          cached_keys: float) -> float:
    """Fraction of server-bound requests whose key is in the memtables.

    Keys are written with the same popularity as they are read (YCSB A), so a
    key of rate q (per server-bound request) is in a window of W writes with
    probability 1 - exp(-W q w) (Che's approximation), w the write fraction.
    The server sees the zipfian beyond the cached head, thinned over the
    servers (each holds a random 1/N of the ranks), so per server it is the
    global sum with the window scaled by N. Ranks fold onto records modulo the
    record count; the fold is spread evenly (a uniform floor).
    """
    w = scenario.workload
    write_frac = 1.0 - w.read_ratio
    if window_writes <= 0 or write_frac <= 0:
        return 0.0
    win = window_writes * servers
    if w.distribution != "zipf":
        # uniform: every record alike; sequential: a key is not revisited soon.
        if w.distribution == "sequential":
            return 0.0
        return float(1.0 - math.exp(-win / w.records))
    return _zipf_window_hit(w.zipf_theta, w.records, cached_keys, win)


def _zipf_window_hit(theta: float, records: int, cached: float, window: float) -> float:
    # Integrate over log-spaced rank bins from the cache edge to the item
    # count: error < 1e-3 with 400 bins (the integrand is smooth in log r).
    items = 1e10
    lo = max(cached, 0.0) + 1.0
    edges = np.geomspace(lo, items + 1.0, 401)
    mid = np.sqrt(edges[:-1] * edges[1:])
    width = np.diff(edges)
    mass = width * mid ** (-theta)                 # unnormalised mass per bin
    total = mass.sum()
    q = mid ** (-theta) / total                    # rate of one rank, per server-bound request
    # Folding: ranks beyond the record count land on records already hit, so
    # every record gets at least the uniform share of the folded tail mass.
    tail = mass[mid > records].sum() / total
    q = q + tail / records
    hit = (mass / total) * (1.0 - np.exp(-window * q))
    return float(min(1.0, hit.sum()))


def flush_jobs(scenario: Scenario, profile: Profile, writes: float) -> float:
    """Flush jobs (new L0 files) a worker makes while taking ``writes`` writes."""
    st = scenario.storage
    return writes * entry_bytes(scenario, profile) / (st.memtable_mb * MIB * st.flushnum)


def sst_shape(flushes: float) -> float:
    """Run-average of log2(1 + files flushed so far), for files growing linearly in time.

    Each flush adds an SST file that later lookups must consider (bloom
    filter, index block) until compaction merges it into levels, so the cost
    of a lookup that misses the memtable grows with the log of the files
    written: ``int_0^1 log2(1 + F t) dt``.
    """
    if flushes <= 1e-9:
        return 0.0
    f = flushes
    return ((1.0 + f) * math.log1p(f) - f) / (f * math.log(2.0))


def request_cost(scenario: Scenario, profile: Profile, *, p_mem: float,
                 flushes: float) -> RequestCost:
    """Worker time per request (us) for the op mix and locality it sees."""
    w, st, sv = scenario.workload, scenario.storage, scenario.servers
    r = w.read_ratio
    entries = memtable_entries(scenario, profile)
    # Skiplist depth: inserts and lookups cost more in bigger memtables.
    depth = max(0.0, math.log2(max(entries, 2.0)) - 18.0)
    skip = profile["skiplist_us_per_log2"] * depth
    miss = 1.0 - p_mem
    # Lookups that miss the memtables probe SST files; more flushed files
    # over the run (small memtables, long runs) make them slower.
    shape = 1.0 + profile["sst_files_factor"] * sst_shape(flushes)
    read = profile["get_mem_us"] + skip + miss * profile["get_sst_us"] * shape
    write = profile["put_us"] + skip
    if st.wal:
        write += profile["wal_us"]
    if st.db == "txn":
        write += profile["txn_us"]
    seq = 0.0
    if sv.seq_check == "disk-get":
        # A GET of the stored seq before each write: cheap in the memtable,
        # expensive when it has to go to SST files.
        seq = profile["get_mem_us"] + skip + miss * profile["seqget_sst_us"] * shape
    elif sv.seq_check == "seq-cache":
        seq = profile["seqcache_us"]
    write += seq
    process = profile["base_us"] + r * read + (1.0 - r) * write
    if not sv.pinned:
        process *= profile["unpinned_factor"]
    return RequestCost(process_us=process, read_us=read, write_us=write,
                       seqcheck_us=seq, p_mem=p_mem,
                       memtable_entries=entries)


def lsm_flow(scenario: Scenario, profile: Profile, *, writes_per_s: float,
             workers_per_machine: int, machine_write_mbps: float,
             run_s: float) -> LsmFlow:
    """Fluid memtable/flush/stall state of one worker writing ``writes_per_s``."""
    st = scenario.storage
    r = writes_per_s * entry_bytes(scenario, profile) / MIB
    m_mb = st.memtable_mb
    # Disk bandwidth of a machine is shared by its workers' flushes in
    # proportion to what they write (processor sharing of the disk, as in the
    # simulator), and compaction rewrites each flushed byte `wamp` times.
    wpm = max(1, workers_per_machine)
    frac = max(r / machine_write_mbps, 1.0 / wpm) if machine_write_mbps > 0 else 1.0 / wpm
    share = profile["disk_mbps"] * min(frac, 1.0) / profile["compaction_wamp"]
    flush_s = profile["flush_fixed_ms"] / 1e3 + st.flushnum * m_mb / share
    capacity = st.flushnum * m_mb / flush_s
    stall = max(0.0, 1.0 - capacity / r) if r > 0 else 0.0
    fill_s = m_mb / r if r > 0 else math.inf
    # Creating a new WAL file at each switch waits behind the OS writing
    # back dirty pages; smaller wal_bytes_per_sync keeps less dirty data.
    block = 0.0
    if st.wal and r > 0:
        sync_factor = 1.0
        if st.wal_bytes_per_sync_mb > 0:
            sync_factor = min(1.0, st.wal_bytes_per_sync_mb / profile["wal_sync_ref_mb"])
        block = (profile["wal_switch_ms"] + profile["wal_switch_ms_per_mbps"]
                 * machine_write_mbps * sync_factor) / 1e3
    switches = run_s / fill_s if fill_s < math.inf else 0.0
    switch_frac = min(0.95, block / fill_s) if fill_s < math.inf else 0.0
    return LsmFlow(write_mbps=r, fill_s=fill_s, flush_s=flush_s, capacity_mbps=capacity,
                   stall_fraction=stall, switch_block_s=block,
                   switch_fraction=switch_frac, switches_per_run=switches)
