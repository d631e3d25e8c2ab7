"""RocksDB's write path over time: memtables, flushes, compaction, WAL switches, stalls.

What it means (docs/model.md; each worker owns one RocksDB instance):

* Every write adds ``entry_bytes`` (key, value, seq and skiplist overhead)
  to the active memtable when it completes. The first write that finds the
  active memtable full switches memtables: the full one becomes immutable,
  and with the WAL on a new WAL file is created, which blocks that write for
  ``wal_block_us`` -- longer while the OS writes back the machine's dirty WAL
  pages (``wal_switch_ms + wal_switch_ms_per_mbps x machine write MiB/s``,
  less with a small ``wal_bytes_per_sync``).
* When no flush runs and at least ``flushnum`` immutables wait, a flush job
  starts and takes every immutable present (as RocksDB's flush picks all
  ready memtables). It runs ``flush_fixed_ms`` (SST creation, fsync) and
  then writes its bytes to the machine's disk, whose ``disk_mbps`` are
  shared equally by the disk jobs running on that machine.
* Compaction rewrites each flushed byte ``compaction_wamp - 1`` more times.
* **L0->L1 passes** (:attr:`LsmSpec.l1_passes`). Keys are hashed, so every L0
  file overlaps all of L1, and each L0->L1 compaction merges the ``l0_files``
  files of ``memtable x flushnum`` bytes that triggered it with the whole of
  L1 (``l1_mb``, or less when the instance holds less data). Per written byte
  it rewrites ``min(L1, data) / (l0_files x memtable x flushnum)`` bytes of
  L1: 16 with 4 MiB memtables and RocksDB's defaults, 1 with 64 MiB, 0.25
  with 64 MiB and ``flushnum`` 4. That work runs on background threads beside the
  worker, which pays for it per write (``compaction_us`` in
  :mod:`model.rack.service`).
  With one background thread per instance (``servers.bg_threads = 1``) the
  flush waits for it: the flush job writes ``wamp`` times its bytes. With two
  or more, compaction runs beside the flush as its own disk job.
* **WAL syncs** (``storage.wal_bytes_per_sync_mb`` > 0): every that many
  bytes a worker writes, its write waits while the WAL written since the
  last sync goes to disk: ``bytes x wal_sync_ms_per_mb``. RocksDB's default
  (0) leaves write-back to the OS, whose longer flushes then fall on the
  WAL switches instead (the switch's per-MiB/s part shrinks with a small
  ``wal_bytes_per_sync``). The lab found the default fastest: 16 MiB per
  sync ran x0.76 (T36 -> T40); each sync is a block the closed loop piles
  up behind (:func:`model.rack.network.block_gather`).
* Writes **stop** (the worker blocks, head of line) while ``maxnum``
  immutables wait, and are **slowed** to ``slowdown_mbps`` when
  ``maxnum > 3`` and ``maxnum - 1`` wait (RocksDB's stall rules).
* Running background jobs are threads: with ``servers.cores`` set they
  count as runnable on their machine (:mod:`model.rack.service`).

Mean-value form: :func:`wal_block_us` and :func:`cycle_stats` (the periodic
flush cycle of one instance at a given write rate, with the machine's disk
shared). Per-event form: :func:`write_start`, :func:`write_done`,
:func:`bg_next`, :func:`bg_event` over the state arrays of :func:`new_state`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .param_decl import ParamDecl

MIB = 1024.0 * 1024.0

SCENARIO_KEYS = (
    "storage.memtable_mb", "storage.flushnum", "storage.maxnum", "storage.wal",
    "storage.wal_bytes_per_sync_mb", "storage.l0_files", "storage.l1_mb", "servers.bg_threads",
    "servers.count", "workload.records",
    "workload.key_bytes", "workload.value_bytes",
)

PARAMS = (
    ParamDecl("entry_overhead_bytes", "B", "memtable bytes per entry besides key, value and seq"),
    ParamDecl("disk_mbps", "MiB/s", "a machine's disk write bandwidth", lo=0.0, lo_open=True),
    ParamDecl("compaction_wamp", "x", "bytes written to disk per byte flushed (flush + compaction)",
              lo=1.0),
    ParamDecl("flush_fixed_ms", "ms", "fixed part of a flush job (SST creation, fsync)"),
    ParamDecl("wal_switch_ms", "ms", "creating a new WAL file at a memtable switch"),
    ParamDecl("wal_switch_ms_per_mbps", "ms/(MiB/s)",
              "extra WAL-switch time per MiB/s the machine writes (OS write-back)"),
    ParamDecl("wal_sync_ref_mb", "MiB", "wal_bytes_per_sync below this smooths write-back",
              lo=0.0, lo_open=True),
    ParamDecl("slowdown_mbps", "MiB/s", "RocksDB's delayed write rate during a write slowdown",
              lo=0.0, lo_open=True, default=16.0),
    ParamDecl("wal_sync_ms_per_mb", "ms/MiB", "a write's wait per MiB of WAL it syncs when "
              "wal_bytes_per_sync is set", lo=0.0),
)


@dataclass(frozen=True)
class LsmSpec:
    entry_bytes: float
    memtable_bytes: float
    flushnum: int
    maxnum: int
    wal: bool
    wal_block_base_us: float          # WAL switch with an idle disk
    wal_block_us_per_mbps: float      # ... plus this per MiB/s the machine writes
    flush_fixed_us: float
    disk_bytes_per_us: float          # per machine
    wamp: float
    slowdown_bytes_per_us: float
    bg_threads: int
    l0_files: int = 4                 # level0_file_num_compaction_trigger
    l1_target_bytes: float = 256.0 * MIB   # max_bytes_for_level_base
    data_bytes: float = math.inf      # the instance's data: its share of the records, loaded first
    sync_bytes: float = 0.0           # wal_bytes_per_sync (0: left to the OS)
    sync_block_us: float = 0.0        # a write's wait at each sync

    @property
    def l1_bytes(self) -> float:
        """What L1 holds: its target, or all the data when there is less."""
        return min(self.l1_target_bytes, self.data_bytes)

    @property
    def l1_passes(self) -> float:
        """Bytes of L1 that L0->L1 compaction rewrites per byte written: every
        compaction merges ``l0_files`` flushed files with all of L1 (hashed keys
        overlap everywhere)."""
        return self.l1_bytes / (self.l0_files * self.memtable_bytes * self.flushnum)

    @property
    def entries(self) -> int:
        """Writes one memtable takes before it is switched."""
        return max(1, int(self.memtable_bytes // self.entry_bytes))

    @property
    def resident_memtables(self) -> float:
        """Memtables a lookup searches, time-averaged: the active one (half full
        on average), the immutables waiting for a flush and those being flushed."""
        return 0.5 + (self.flushnum - 1) / 2.0 + self.flushnum * 0.5

    @property
    def flush_write_factor(self) -> float:
        """Disk bytes a flush job writes per memtable byte (compaction folded in
        when a single background thread serialises the two)."""
        return self.wamp if self.bg_threads <= 1 else 1.0


def entry_bytes(scenario, overhead: float) -> float:
    w = scenario.workload
    return w.key_bytes + w.value_bytes + 4 + overhead


def compile_lsm(scenario, pr) -> LsmSpec:
    st = scenario.storage
    ref = pr["wal_sync_ref_mb"]                  # every parameter is read (and checked) always
    sync = 1.0
    if st.wal_bytes_per_sync_mb > 0:
        # smaller wal_bytes_per_sync keeps less dirty WAL data for the switch to wait on
        sync = min(1.0, st.wal_bytes_per_sync_mb / ref)
    entry = entry_bytes(scenario, pr["entry_overhead_bytes"])
    return LsmSpec(
        entry_bytes=entry,
        memtable_bytes=st.memtable_mb * MIB, flushnum=int(st.flushnum), maxnum=int(st.maxnum),
        wal=bool(st.wal), wal_block_base_us=pr["wal_switch_ms"] * 1e3,
        wal_block_us_per_mbps=pr["wal_switch_ms_per_mbps"] * 1e3 * sync,
        flush_fixed_us=pr["flush_fixed_ms"] * 1e3, disk_bytes_per_us=pr["disk_mbps"] * MIB / 1e6,
        wamp=pr["compaction_wamp"], slowdown_bytes_per_us=pr["slowdown_mbps"] * MIB / 1e6,
        bg_threads=int(scenario.servers.bg_threads), l0_files=int(st.l0_files),
        l1_target_bytes=st.l1_mb * MIB,
        data_bytes=scenario.workload.records / scenario.servers.count * entry,
        sync_bytes=st.wal_bytes_per_sync_mb * MIB if st.wal else 0.0,
        sync_block_us=pr["wal_sync_ms_per_mb"] * 1e3 * st.wal_bytes_per_sync_mb)


def flushed_fraction(memtables_per_run, flushnum):
    """Share of a run's writes that are flushed (and so compacted) within the
    run: it starts with no immutables, so its first ``flushnum`` memtables
    are still in memory when the first flush starts; of ``n`` memtables
    filled, about ``n - flushnum`` are flushed. Arrays broadcast."""
    n = np.asarray(memtables_per_run, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, np.clip(1.0 - flushnum / n, 0.0, 1.0), 0.0)


# Mechanism switch for ``python -m sim explain`` (model/explain.py): the rack
# without storage stalls. Flushes and compaction still run (and still count as
# background threads on the cores); only their effect on writes is removed.
NO_STALL_MAXNUM = 1 << 30


def without_stalls(spec: LsmSpec) -> LsmSpec:
    """``spec`` with WAL switches that cost nothing, and no write stop or slowdown
    (immutables never reach maxnum)."""
    return replace(spec, wal_block_base_us=0.0, wal_block_us_per_mbps=0.0, sync_block_us=0.0,
                   maxnum=max(spec.maxnum, NO_STALL_MAXNUM))


def wal_switch_block_us(wal: bool, base_us: float, per_mbps: float, machine_write_mbps):
    """A WAL switch blocks its write this long at the machine's write rate, MiB/s
    (zero with the WAL off); the mean-value form, compiled into the solver."""
    return base_us + per_mbps * machine_write_mbps if wal else 0.0


def wal_block_us(wal, base_us, per_mbps, machine_write_mbps):
    """:func:`wal_switch_block_us` over arrays (the simulators, per machine)."""
    return np.where(wal, wal_switch_block_us(True, base_us, per_mbps,
                                             np.asarray(machine_write_mbps, dtype=float)), 0.0)


# ======================================================================
# per-event form: state arrays and transitions (numba-compatible)
# ======================================================================
# float parameters
P_ENTRY, P_MEM, P_FLUSHNUM, P_MAXNUM, P_WAL, P_FIXED, P_DISK, P_FWF, P_WAMP, P_SLOW, \
    P_BG, P_SYNC_BYTES, P_SYNC_US, P_N = range(14)
# per-station floats
S_ACTIVE, S_FL_END, S_FL_REM, S_CP_REM, S_SLOW_NEXT, S_SYNCED, S_NF = range(7)
# per-station ints
I_IMM, I_TAKEN, I_PHASE, I_NI = range(4)
# per-machine floats
M_JOBS, M_LAST, M_BG, M_NM = range(4)

GO, STOP = 0, 1
EV_NONE, EV_FLUSH_FIXED, EV_FLUSH_DISK, EV_COMPACTION = 0, 1, 2, 3


def event_params(spec: LsmSpec) -> np.ndarray:
    p = np.zeros(P_N)
    p[P_ENTRY] = spec.entry_bytes
    p[P_MEM] = spec.memtable_bytes
    p[P_FLUSHNUM] = spec.flushnum
    p[P_MAXNUM] = spec.maxnum
    p[P_WAL] = 1.0 if spec.wal else 0.0
    p[P_FIXED] = spec.flush_fixed_us
    p[P_DISK] = spec.disk_bytes_per_us
    p[P_FWF] = spec.flush_write_factor
    p[P_WAMP] = spec.wamp
    p[P_SLOW] = spec.slowdown_bytes_per_us
    p[P_BG] = spec.bg_threads
    p[P_SYNC_BYTES] = spec.sync_bytes
    p[P_SYNC_US] = spec.sync_block_us
    return p


def new_state(stations: int, machines: int, memtable_bytes: float = 0.0, rng=None,
              sync_bytes: float = 0.0):
    """(per-station floats, per-station ints, per-machine floats): no flush or
    compaction running, no immutables.

    A run starts after its records were loaded, so each instance's active
    memtable already holds an arbitrary part of a memtable: with ``rng``, the
    fill levels are drawn uniformly. (Starting them all empty would make every
    instance switch -- and block on its WAL -- at the same moments.)
    """
    ls = np.zeros((stations, S_NF))
    if rng is not None and memtable_bytes > 0:
        ls[:, S_ACTIVE] = rng.random(stations) * memtable_bytes
    if rng is not None and sync_bytes > 0:
        # syncs fall at arbitrary points of the run, not all at once
        ls[:, S_SYNCED] = rng.random(stations) * sync_bytes
    return (ls, np.zeros((stations, I_NI), dtype=np.int64), np.zeros((machines, M_NM)))


def _flush_start(s, t, p, ls, li, mach, m):
    li[s, I_TAKEN] = li[s, I_IMM]          # a flush takes every immutable present
    li[s, I_PHASE] = 1
    ls[s, S_FL_END] = t + p[P_FIXED]
    mach[m, M_BG] += 1.0


def write_start(s, m, t, p, ls, li, mach, wal_block):
    """A worker starts a write at time t. Returns (status, extra delay in us,
    memtable switched?, flush started?). status STOP: the worker must block
    until a flush of station s completes, then try again."""
    maxnum = p[P_MAXNUM]
    if li[s, I_IMM] >= maxnum:
        return STOP, 0.0, False, False
    extra = 0.0
    switched = False
    started = False
    if ls[s, S_ACTIVE] + p[P_ENTRY] > p[P_MEM]:
        li[s, I_IMM] += 1
        ls[s, S_ACTIVE] = 0.0
        switched = True
        if p[P_WAL] != 0.0:
            extra += wal_block[m]
        if li[s, I_PHASE] == 0 and li[s, I_IMM] >= p[P_FLUSHNUM]:
            _flush_start(s, t, p, ls, li, mach, m)
            started = True
    if p[P_SYNC_BYTES] > 0.0:
        # wal_bytes_per_sync: the write that completes a sync's worth waits for it
        ls[s, S_SYNCED] += p[P_ENTRY]
        if ls[s, S_SYNCED] >= p[P_SYNC_BYTES]:
            ls[s, S_SYNCED] -= p[P_SYNC_BYTES]
            extra += p[P_SYNC_US]
    imm = li[s, I_IMM]
    if maxnum > 3 and imm >= maxnum - 1 and imm - 1 >= p[P_FLUSHNUM]:
        # write slowdown: writes paced to the delayed-write rate
        st = t + extra
        if ls[s, S_SLOW_NEXT] > st:
            st = ls[s, S_SLOW_NEXT]
        extra = st - t
        ls[s, S_SLOW_NEXT] = st + p[P_ENTRY] / p[P_SLOW]
    return GO, extra, switched, started


def write_done(s, p, ls):
    """A write completed: its entry is in the active memtable."""
    ls[s, S_ACTIVE] += p[P_ENTRY]


def _disk_progress(m, t, p, st_mach, ls, li, mach):
    """Advance machine m's processor-shared disk to time t."""
    jobs = mach[m, M_JOBS]
    if jobs > 0.0:
        done = (t - mach[m, M_LAST]) * p[P_DISK] / jobs
        if done > 0.0:
            for s in range(st_mach.shape[0]):
                if st_mach[s] != m:
                    continue
                if li[s, I_PHASE] == 2:
                    ls[s, S_FL_REM] -= done
                if ls[s, S_CP_REM] > 0.0:
                    ls[s, S_CP_REM] -= done
    mach[m, M_LAST] = t


def bg_next(p, st_mach, ls, li, mach):
    """The next background event: (time, station, kind); kind EV_NONE if none."""
    best = 1e300
    bs = -1
    kind = EV_NONE
    for s in range(st_mach.shape[0]):
        m = st_mach[s]
        ph = li[s, I_PHASE]
        if ph == 1:
            if ls[s, S_FL_END] < best:
                best = ls[s, S_FL_END]
                bs = s
                kind = EV_FLUSH_FIXED
        elif ph == 2:
            te = mach[m, M_LAST] + max(ls[s, S_FL_REM], 0.0) * mach[m, M_JOBS] / p[P_DISK]
            if te < best:
                best = te
                bs = s
                kind = EV_FLUSH_DISK
        if ls[s, S_CP_REM] > 0.0:
            te = mach[m, M_LAST] + ls[s, S_CP_REM] * mach[m, M_JOBS] / p[P_DISK]
            if te < best:
                best = te
                bs = s
                kind = EV_COMPACTION
    return best, bs, kind


def bg_event(s, kind, t, p, st_mach, ls, li, mach):
    """Apply background event ``kind`` of station s at time t. Returns True when
    a flush completed (immutables freed: stopped writers may retry)."""
    m = st_mach[s]
    _disk_progress(m, t, p, st_mach, ls, li, mach)
    if kind == EV_FLUSH_FIXED:
        li[s, I_PHASE] = 2
        ls[s, S_FL_REM] = li[s, I_TAKEN] * p[P_MEM] * p[P_FWF]
        mach[m, M_JOBS] += 1.0
        return False
    if kind == EV_FLUSH_DISK:
        taken = li[s, I_TAKEN]
        li[s, I_IMM] -= taken
        li[s, I_TAKEN] = 0
        li[s, I_PHASE] = 0
        ls[s, S_FL_REM] = 0.0
        mach[m, M_JOBS] -= 1.0
        mach[m, M_BG] -= 1.0
        if p[P_BG] >= 2 and p[P_WAMP] > 1.0:
            # compaction of what was flushed runs beside the next flush
            if ls[s, S_CP_REM] <= 0.0:
                ls[s, S_CP_REM] = 0.0
                mach[m, M_JOBS] += 1.0
                mach[m, M_BG] += 1.0
            ls[s, S_CP_REM] += taken * p[P_MEM] * (p[P_WAMP] - 1.0)
        if li[s, I_IMM] >= p[P_FLUSHNUM]:
            _flush_start(s, t, p, ls, li, mach, m)
        return True
    # compaction finished
    ls[s, S_CP_REM] = 0.0
    mach[m, M_JOBS] -= 1.0
    mach[m, M_BG] -= 1.0
    return False


# ======================================================================
# mean-value form
# ======================================================================
# cycle_stats returns a tuple in this order (all per instance)
C_STOP_US, C_STOP_EVENT_US, C_STOPS_PER_WRITE, C_SLOW_US, C_WAL_US, C_WAL_EVENT_US, \
    C_FLUSH_BUSY, C_FLUSH_DISK_BUSY, C_COMPACTION_BUSY, C_STOP_FRACTION, \
    C_MEMTABLES_PER_FLUSH, C_CYCLE_US, C_N = range(13)


def _level_time(lo, hi, tau, tau_slow, slow_from):
    """Fluid time for the immutable count to rise from lo to hi (< maxnum), at one
    memtable per tau, or per tau_slow at and above slow_from."""
    if hi <= lo:
        return 0.0
    a = max(0.0, min(hi, slow_from) - lo)
    b = max(0.0, hi - max(lo, slow_from))
    return a * tau + b * tau_slow


def _rise(start, dur, tau, tau_slow, slow_from, cap):
    """Immutable count after ``dur`` us from ``start``, and the time spent stopped at cap."""
    t_cap = _level_time(start, cap, tau, tau_slow, slow_from)
    if dur >= t_cap:
        return cap, dur - t_cap
    t_norm = _level_time(start, max(start, slow_from), tau, tau_slow, slow_from)
    if dur <= t_norm:
        return start + dur / tau, 0.0
    return max(start, slow_from) + (dur - t_norm) / tau_slow, 0.0


def cycle_stats(out, entries, entry_bytes, memtable_bytes, flushnum, maxnum, flush_fixed_us,
                flush_write_factor, slowdown_bytes_per_us, compacts, wamp, wal, writes_per_us,
                disk_share_per_us, wal_event_us, running_fraction, memtables_per_run):
    """The steady flush cycle of one instance writing ``writes_per_us`` on average,
    written into ``out`` (indexed by the ``C_*`` constants; times in us, per
    write unless they say otherwise).

    Memtables fill deterministically (thousands of writes each) at the write
    rate while writes flow (``writes_per_us / running_fraction``); a flush job
    of j memtables takes ``flush_fixed + j x memtable x flush_write_factor /
    disk_share``. The immutable count rises during a flush; at ``maxnum``
    writes stop until it ends, and it drains by j at its end; the next flush
    starts at once with everything present if that is at least ``flushnum``.
    The calm regime (each flush of ``flushnum`` ends before ``flushnum`` more
    fill and before a stall) is closed-form; otherwise the cycle map
    j -> j' is iterated to its periodic regime and averaged.

    A run starts with no immutables (:func:`new_state`), so it stops writes
    only after ``maxnum`` memtables filled and slows them after ``maxnum - 1``:
    a run that fills ``memtables_per_run`` per instance spends at most
    ``1 - maxnum / n`` of them in the stalled cycle (none for n < maxnum)."""
    out[:] = 0.0
    wal_ev = wal_event_us if wal else 0.0
    out[C_WAL_EVENT_US] = wal_ev
    if writes_per_us <= 0.0:
        out[C_CYCLE_US] = math.inf
        return
    E = entries
    rate = writes_per_us / max(running_fraction, 1e-6)
    tau = E / rate
    fn = float(flushnum)
    cap = float(maxnum)
    slowdown = maxnum > 3
    slow_from = float(max(maxnum - 1, flushnum + 1)) if slowdown else math.inf
    out[C_WAL_US] = wal_ev / E
    F = flush_fixed_us + fn * memtable_bytes * flush_write_factor / disk_share_per_us
    rise = F / tau
    if rise < fn and fn + rise < min(cap, slow_from):
        cycle = fn * tau
        out[C_FLUSH_BUSY] = F / cycle
        out[C_FLUSH_DISK_BUSY] = (F - flush_fixed_us) / cycle
        if compacts:
            out[C_COMPACTION_BUSY] = min(1.0, fn * memtable_bytes * (wamp - 1.0)
                                         / disk_share_per_us / cycle)
        out[C_MEMTABLES_PER_FLUSH] = fn
        out[C_CYCLE_US] = cycle
        return
    pace = E * entry_bytes / slowdown_bytes_per_us
    tau_slow = max(tau, pace) if slowdown else tau
    j = fn
    n_kept = 0
    mem = total = stop = slow_t = busy = disk = 0.0
    for it in range(60):
        Fj = flush_fixed_us + j * memtable_bytes * flush_write_factor / disk_share_per_us
        imm_end, stopped = _rise(j, Fj, tau, tau_slow, slow_from, cap)
        left = imm_end - j
        if left >= fn:
            wait = 0.0
            j_next = left
        else:
            wait = _level_time(left, fn, tau, tau_slow, slow_from)
            j_next = fn
        st = 0.0
        if slowdown and tau_slow > tau:
            st = max(0.0, min(imm_end, cap) - max(j, slow_from)) * tau_slow
        fixed_point = abs(j_next - j) < 1e-9
        if fixed_point or it >= 52:
            # average the periodic regime: the last cycle of a fixed point, the
            # last eight of a longer period
            mem += j
            total += Fj + wait
            stop += stopped
            slow_t += st
            busy += Fj
            disk += Fj - flush_fixed_us
            n_kept += 1
        if fixed_point:
            break
        j = j_next
    writes = mem * E
    n_cyc = float(n_kept)
    reach_stop = 1.0
    reach_slow = 1.0
    if memtables_per_run >= 0.0:
        reach_stop = min(max(1.0 - cap / memtables_per_run, 0.0), 1.0) if memtables_per_run > 0 else 0.0
        reach_slow = min(max(1.0 - slow_from / memtables_per_run, 0.0), 1.0) \
            if memtables_per_run > 0 else 0.0
    out[C_STOP_US] = stop / writes * reach_stop
    out[C_STOP_EVENT_US] = stop / n_cyc
    out[C_STOPS_PER_WRITE] = (n_cyc / writes if stop > 0 else 0.0) * reach_stop
    out[C_SLOW_US] = (slow_t * (1.0 - tau / tau_slow) / writes if tau_slow > tau else 0.0) * reach_slow
    out[C_FLUSH_BUSY] = min(1.0, busy / total)
    out[C_FLUSH_DISK_BUSY] = min(1.0, disk / total)
    if compacts:
        out[C_COMPACTION_BUSY] = min(1.0, mem * memtable_bytes * (wamp - 1.0)
                                     / disk_share_per_us / total)
    out[C_STOP_FRACTION] = stop / total * reach_stop
    out[C_MEMTABLES_PER_FLUSH] = mem / n_cyc
    out[C_CYCLE_US] = total / n_cyc
