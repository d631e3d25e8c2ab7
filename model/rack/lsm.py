"""RocksDB's write path: the settings and calibrated numbers its rules run on.

Each worker owns one RocksDB instance. What happens to its writes over a run
-- memtables sealed, flushes at ``flushnum``, writes stopped at ``maxnum``
and slowed one earlier, L0 files against the compaction, slowdown and stop
triggers, pending compaction bytes, the delayed write rate -- is RocksDB's
own rules over counts, written once in :mod:`model.rack.lsm_rules` and run
by both solvers from the database the run starts with. This module compiles
the scenario's RocksDB options and the profile's numbers into the
:class:`LsmSpec` those rules read, and holds the two short blocks a write
can meet besides them, in their mean-value form:

* **WAL switch.** With the WAL on, the write that seals a memtable creates a
  new WAL file and waits ``wal_block_us``: ``wal_switch_ms`` with an idle
  disk, plus ``wal_switch_ms_per_mbps`` per MiB/s the machine writes (the OS
  writing back dirty WAL pages; less with a small ``wal_bytes_per_sync``,
  which keeps fewer of them dirty).
* **WAL syncs** (``storage.wal_bytes_per_sync_mb`` > 0): every that many
  bytes an instance writes, its write waits while the WAL written since the
  last sync goes to disk (``bytes x wal_sync_ms_per_mb``). RocksDB's
  default (0) leaves write-back to the OS.

Both are blocks the closed loop piles up behind
(:func:`model.rack.network.block_gather`).

Background jobs run on the machine (``servers.flush_threads`` and
``servers.compaction_threads``: RocksDB's HIGH and LOW pools, per server
process, which FarReach and the native server also set as each instance's
limits): a flush spends ``flush_fixed_ms`` and then merges its memtables at
up to ``flush_mbps``, writing each key once; a compaction processes its bytes
at up to ``compaction_mbps``; the jobs writing at once share the machine's
``disk_mbps`` equally.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import lsm_rules as rules
from .param_decl import ParamDecl

MIB = 1024.0 * 1024.0
#: bytes of an SST entry besides key and value: the 4-byte seq the servers
#: store with the value, and RocksDB's 8-byte internal-key trailer
SST_ENTRY_EXTRA = 4 + 8

SCENARIO_KEYS = (
    "storage.memtable_mb", "storage.flushnum", "storage.maxnum", "storage.wal",
    "storage.wal_bytes_per_sync_mb", "storage.l0_files", "storage.l0_slowdown",
    "storage.l0_stop", "storage.l1_mb", "storage.delayed_write_rate_mbps", "storage.preloaded",
    "storage.rate_limit_mbps",
    "servers.flush_threads", "servers.compaction_threads", "servers.count", "servers.machines",
    "workload.records", "workload.key_bytes", "workload.value_bytes",
)

PARAMS = (
    ParamDecl("entry_overhead_bytes", "B", "memtable bytes per entry besides key, value and seq"),
    ParamDecl("disk_mbps", "MiB/s", "a machine's disk write bandwidth, shared by its jobs",
              lo=0.0, lo_open=True),
    ParamDecl("flush_fixed_ms", "ms", "fixed part of a flush job (SST creation, fsync)"),
    ParamDecl("flush_mbps", "MiB/s", "memtable bytes one flush job merges per second at most",
              lo=0.0, lo_open=True),
    ParamDecl("compaction_mbps", "MiB/s", "bytes one compaction job processes per second at "
              "most", lo=0.0, lo_open=True),
    ParamDecl("wal_switch_ms", "ms", "creating a new WAL file at a memtable switch"),
    ParamDecl("wal_switch_ms_per_mbps", "ms/(MiB/s)",
              "extra WAL-switch time per MiB/s the machine writes (OS write-back)"),
    ParamDecl("wal_sync_ref_mb", "MiB", "wal_bytes_per_sync below this smooths write-back",
              lo=0.0, lo_open=True),
    ParamDecl("wal_sync_ms_per_mb", "ms/MiB", "a write's wait per MiB of WAL it syncs when "
              "wal_bytes_per_sync is set", lo=0.0),
)


@dataclass(frozen=True)
class LsmSpec:
    entry_bytes: float                # memtable bytes one write adds
    memtable_bytes: float
    flushnum: int
    maxnum: int
    wal: bool
    wal_block_base_us: float          # WAL switch with an idle disk
    wal_block_us_per_mbps: float      # ... plus this per MiB/s the machine writes
    flush_fixed_us: float
    flush_bytes_per_us: float         # one flush job at most
    compaction_bytes_per_us: float    # one compaction job at most
    disk_bytes_per_us: float          # per machine, shared by the jobs writing
    sst_ratio: float = 1.0            # SST bytes per memtable byte (each key written once)
    unique: tuple[float, ...] = ()    # per instance: distinct keys among a flush's writes
    l0_files: int = 4                 # level0_file_num_compaction_trigger
    l0_slowdown: int = 20             # level0_slowdown_writes_trigger
    l0_stop: int = 36                 # level0_stop_writes_trigger
    l1_target_bytes: float = 256.0 * MIB   # max_bytes_for_level_base
    delayed_bytes_per_us: float = 16.0 * MIB / 1e6   # delayed_write_rate
    flush_threads: int = 1            # per machine (0: one per job)
    compaction_threads: int = 1
    data_bytes: tuple[float, ...] = ()    # per instance: the loaded data the run starts with
    sync_bytes: float = 0.0           # wal_bytes_per_sync (0: left to the OS)
    sync_block_us: float = 0.0        # a write's wait at each sync
    stalls: bool = True               # False: no stop or slowdown (sim explain)

    @property
    def entries(self) -> int:
        """Writes one memtable takes before it is sealed."""
        return max(1, int(self.memtable_bytes // self.entry_bytes))

    def rule_params(self) -> np.record:
        """The numbers :mod:`model.rack.lsm_rules` reads, as one record."""
        p = np.zeros(1, dtype=rules.LSM_PARAMS).view(np.recarray)[0]
        p.memtable = self.memtable_bytes
        p.entry = self.entry_bytes
        p.sst_ratio = self.sst_ratio
        p.flushnum = self.flushnum
        p.maxnum = self.maxnum
        p.l0_trigger = self.l0_files
        p.l0_slowdown = self.l0_slowdown
        p.l0_stop = self.l0_stop
        p.l1_target = self.l1_target_bytes
        p.max_rate = self.delayed_bytes_per_us
        p.flush_fixed = self.flush_fixed_us
        p.flush_rate = self.flush_bytes_per_us
        p.compact_rate = self.compaction_bytes_per_us
        p.disk = self.disk_bytes_per_us
        p.flush_pool = self.flush_threads
        p.compact_pool = self.compaction_threads
        # FarReach and the native server set each instance's legacy limits
        # (max_background_flushes / _compactions) to the pools' sizes
        p.inst_flushes = self.flush_threads if self.flush_threads > 0 else 1 << 20
        p.inst_compactions = self.compaction_threads if self.compaction_threads > 0 else 1 << 20
        p.stalls = 1 if self.stalls else 0
        return p


def entry_bytes(scenario, overhead: float) -> float:
    w = scenario.workload
    return w.key_bytes + w.value_bytes + 4 + overhead


def compile_lsm(scenario, pr, records_per_instance=None) -> LsmSpec:
    """``records_per_instance``: the records each instance was loaded with
    (its partition's keys); default an equal split."""
    st, sv, w = scenario.storage, scenario.servers, scenario.workload
    P = {d.name: pr[d.name] for d in PARAMS}      # every parameter is read (and checked)
    sync = 1.0
    if st.wal_bytes_per_sync_mb > 0:
        # smaller wal_bytes_per_sync keeps less dirty WAL data for the switch to wait on
        sync = min(1.0, st.wal_bytes_per_sync_mb / P["wal_sync_ref_mb"])
    entry = entry_bytes(scenario, P["entry_overhead_bytes"])
    sst_entry = w.key_bytes + w.value_bytes + SST_ENTRY_EXTRA
    n = sv.count
    if records_per_instance is None:
        records_per_instance = np.full(n, w.records / n)
    loaded = (np.asarray(records_per_instance, dtype=float) * sst_entry if st.preloaded
              else np.zeros(n))
    per_us = MIB / 1e6
    return LsmSpec(
        entry_bytes=entry,
        memtable_bytes=st.memtable_mb * MIB, flushnum=int(st.flushnum), maxnum=int(st.maxnum),
        wal=bool(st.wal), wal_block_base_us=P["wal_switch_ms"] * 1e3,
        wal_block_us_per_mbps=P["wal_switch_ms_per_mbps"] * 1e3 * sync,
        flush_fixed_us=P["flush_fixed_ms"] * 1e3, flush_bytes_per_us=P["flush_mbps"] * per_us,
        compaction_bytes_per_us=P["compaction_mbps"] * per_us,
        # a rate limiter caps what the machine's jobs write, like a slower disk
        disk_bytes_per_us=(min(P["disk_mbps"], st.rate_limit_mbps) if st.rate_limit_mbps > 0
                           else P["disk_mbps"]) * per_us,
        sst_ratio=min(1.0, sst_entry / entry),
        l0_files=int(st.l0_files), l0_slowdown=int(st.l0_slowdown), l0_stop=int(st.l0_stop),
        l1_target_bytes=st.l1_mb * MIB, delayed_bytes_per_us=st.delayed_write_rate_mbps * per_us,
        flush_threads=int(sv.flush_threads), compaction_threads=int(sv.compaction_threads),
        data_bytes=tuple(loaded.tolist()),
        sync_bytes=st.wal_bytes_per_sync_mb * MIB if st.wal else 0.0,
        sync_block_us=P["wal_sync_ms_per_mb"] * 1e3 * st.wal_bytes_per_sync_mb)


def without_stalls(spec: LsmSpec) -> LsmSpec:
    """``spec`` with WAL switches and syncs that cost nothing and no write stop
    or slowdown: the ``python -m sim explain`` switch for storage stalls.
    Flushes and compactions still run (and still count as background jobs
    on the cores)."""
    return replace(spec, wal_block_base_us=0.0, wal_block_us_per_mbps=0.0, sync_block_us=0.0,
                   stalls=False)


def wal_switch_block_us(wal: bool, base_us: float, per_mbps: float, machine_write_mbps):
    """A WAL switch blocks its write this long at the machine's write rate, MiB/s
    (zero with the WAL off); the mean-value form, compiled into the solver."""
    return base_us + per_mbps * machine_write_mbps if wal else 0.0


def wal_block_us(wal, base_us, per_mbps, machine_write_mbps):
    """:func:`wal_switch_block_us` over arrays (the simulators, per machine)."""
    return np.where(wal, wal_switch_block_us(True, base_us, per_mbps,
                                             np.asarray(machine_write_mbps, dtype=float)), 0.0)


def start_arrays(spec: LsmSpec, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per instance: the loaded bytes, the distinct share of a flush's writes."""
    data = np.asarray(spec.data_bytes or (0.0,) * n, dtype=float)
    unique = np.asarray(spec.unique or (1.0,) * n, dtype=float)
    return data, unique


def initial_state(spec: LsmSpec, machine_of, machines: int):
    """The run's starting state for :mod:`model.rack.lsm_rules`: (params,
    instances, jobs, machines)."""
    p = spec.rule_params()
    data, unique = start_arrays(spec, len(machine_of))
    st, jobs, mach = rules.initial_state(p, np.asarray(machine_of, dtype=np.int64), machines,
                                         data, unique)
    return p, st, jobs, mach


def distinct_share(window_hit, writes: float, points: int = 12) -> float:
    """The share of distinct keys among ``writes`` consecutive writes, from
    ``window_hit(w)``, the fraction of writes whose key was written within the
    last ``w`` (Che's approximation, :func:`model.workload.window_hit_fraction`):
    the distinct count grows by ``1 - window_hit(w)`` per write (trapezoids
    over log-spaced windows)."""
    if writes <= 1.0:
        return 1.0
    w = np.concatenate(([0.0], np.geomspace(1.0, writes, points)))
    miss = 1.0 - np.concatenate(([0.0], np.asarray([window_hit(x) for x in w[1:]])))
    distinct = float(np.sum(0.5 * (miss[1:] + miss[:-1]) * np.diff(w)))
    return min(1.0, max(distinct / writes, 1.0 / writes))


def describe_counts(st, spec: LsmSpec, seconds_per_us: float = 1e-6) -> dict:
    """Per instance, what RocksDB's LOG would report for the run: memtables
    sealed, flushes, compactions, seconds stopped and slowed, entries into
    each, L0 files and pending compaction at the end, MiB flushed and
    compacted; and ``memtables_written``, the memtables its writes fill as a
    fraction (a count a fit can move smoothly)."""
    n = st.shape[0]
    return {
        "memtables": st["sealed"].tolist(),
        "memtables_written": (st["writes"] * spec.entry_bytes / spec.memtable_bytes).tolist(),
        "flushes": st["flushes"].tolist(),
        "compactions": st["compactions"].tolist(),
        "stop_s": (st["stop_us"] * seconds_per_us).tolist(),
        "slow_s": (st["slow_us"] * seconds_per_us).tolist(),
        "stops": st["stops"].tolist(),
        "slows": st["slows"].tolist(),
        "l0_files_end": st["l0"].tolist(),
        "immutables_end": st["imm"].tolist(),
        "flush_mib": (st["flush_bytes"] / MIB).tolist(),
        "compaction_mib": (st["compact_bytes"] / MIB).tolist(),
        "writes": st["writes"].tolist(),
        "instances": n,
    }


__all__ = ["LsmSpec", "compile_lsm", "without_stalls", "wal_switch_block_us", "wal_block_us",
           "initial_state", "describe_counts", "MIB", "PARAMS", "SCENARIO_KEYS"]
