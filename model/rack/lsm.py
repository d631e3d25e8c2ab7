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
* Writes **stop** (the worker blocks, head of line) while ``maxnum``
  immutables wait, and are **slowed** to ``slowdown_mbps`` when
  ``maxnum > 3`` and ``maxnum - 1`` wait (RocksDB's stall rules).
* Running background jobs are threads: with ``servers.cores`` set they
  count as runnable on their machine (:mod:`model.rack.service`).

Mean-value form: :func:`wal_block_us` and :func:`flush_cycle` (the periodic
flush cycle of one instance at a given write rate, with the machine's disk
shared). Per-event form: :func:`write_start`, :func:`write_done`,
:func:`bg_next`, :func:`bg_event` over the state arrays of :func:`new_state`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from .params import ParamDecl

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
        data_bytes=scenario.workload.records / scenario.servers.count * entry)


# Mechanism switch for ``python -m sim explain`` (model/explain.py): the rack
# without storage stalls. Flushes and compaction still run (and still count as
# background threads on the cores); only their effect on writes is removed.
NO_STALL_MAXNUM = 1 << 30


def without_stalls(spec: LsmSpec) -> LsmSpec:
    """``spec`` with WAL switches that cost nothing, and no write stop or slowdown
    (immutables never reach maxnum)."""
    return replace(spec, wal_block_base_us=0.0, wal_block_us_per_mbps=0.0,
                   maxnum=max(spec.maxnum, NO_STALL_MAXNUM))


def wal_block_us(wal, base_us, per_mbps, machine_write_mbps):
    """Both forms: a WAL switch blocks its write this long at the machine's write
    rate (zero with the WAL off); arrays broadcast."""
    return np.where(wal, base_us + per_mbps * np.asarray(machine_write_mbps, dtype=float), 0.0)


# ======================================================================
# per-event form: state arrays and transitions (numba-compatible)
# ======================================================================
# float parameters
P_ENTRY, P_MEM, P_FLUSHNUM, P_MAXNUM, P_WAL, P_FIXED, P_DISK, P_FWF, P_WAMP, P_SLOW, \
    P_BG, P_N = range(12)
# per-station floats
S_ACTIVE, S_FL_END, S_FL_REM, S_CP_REM, S_SLOW_NEXT, S_NF = range(6)
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
    return p


def new_state(stations: int, machines: int, memtable_bytes: float = 0.0, rng=None):
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
@dataclass(frozen=True)
class FlushCycle:
    """The periodic flush cycle of one instance (times in us, per write unless noted)."""
    stop_us: float            # mean write-stop time per write
    stop_event_us: float      # length of one stop
    stops_per_write: float
    slow_us: float            # mean slowdown delay per write
    wal_us: float             # mean WAL-switch block per write
    wal_event_us: float       # length of one WAL-switch block
    flush_busy: float         # fraction of time a flush job runs
    flush_disk_busy: float    # ... of which writing to disk
    compaction_busy: float    # fraction of time compaction runs (own disk job)
    stop_fraction: float      # fraction of time writes are stopped
    memtables_per_flush: float
    cycle_us: float


def _level_time(lo: float, hi: float, tau: float, tau_slow: float, slow_from: float) -> float:
    """Fluid time for the immutable count to rise from lo to hi (< maxnum), at one
    memtable per tau, or per tau_slow at and above slow_from."""
    if hi <= lo:
        return 0.0
    a = max(0.0, min(hi, slow_from) - lo)
    b = max(0.0, hi - max(lo, slow_from))
    return a * tau + b * tau_slow


def _rise(start: float, dur: float, tau: float, tau_slow: float, slow_from: float, cap: float):
    """Immutable count after ``dur`` us from ``start``, and the time spent stopped at cap."""
    t_cap = _level_time(start, cap, tau, tau_slow, slow_from)
    if dur >= t_cap:
        return cap, dur - t_cap
    # invert the piecewise-linear level time
    t_norm = _level_time(start, max(start, slow_from), tau, tau_slow, slow_from)
    if dur <= t_norm:
        return start + dur / tau, 0.0
    return max(start, slow_from) + (dur - t_norm) / tau_slow, 0.0


def flush_cycle(spec: LsmSpec, writes_per_us: float, disk_share_per_us: float,
                wal_event_us: float, running_fraction: float = 1.0) -> FlushCycle:
    """Steady flush cycle of one instance writing ``writes_per_us`` on average.

    Memtables fill deterministically (thousands of writes each) at the write
    rate while writes flow (``writes_per_us / running_fraction``); a flush job
    of j memtables takes ``flush_fixed + j x memtable x flush_write_factor /
    disk_share``. The immutable count rises during a flush; at ``maxnum`` writes
    stop until it ends, and it drains by j at its end; the next flush starts at
    once with everything present if that is at least ``flushnum``. The cycle
    map j -> j' is iterated to its periodic regime and averaged.
    """
    E = spec.entries
    if writes_per_us <= 0:
        return FlushCycle(0, 0, 0, 0, 0, wal_event_us if spec.wal else 0.0, 0, 0, 0, 0, 0, math.inf)
    rate = writes_per_us / max(running_fraction, 1e-6)
    tau = E / rate
    pace = E * spec.entry_bytes / spec.slowdown_bytes_per_us
    slowdown = spec.maxnum > 3
    tau_slow = max(tau, pace) if slowdown else tau
    # slowdown applies at imm >= maxnum - 1 (and imm - 1 >= flushnum)
    slow_from = float(max(spec.maxnum - 1, spec.flushnum + 1)) if slowdown else math.inf
    cap = float(spec.maxnum)
    fn = float(spec.flushnum)

    def flush_time(j: float) -> float:
        return spec.flush_fixed_us + j * spec.memtable_bytes * spec.flush_write_factor / disk_share_per_us

    j = fn
    stats = []
    for it in range(60):
        F = flush_time(j)
        imm_end, stopped = _rise(j, F, tau, tau_slow, slow_from, cap)
        left = imm_end - j                       # immutables present when the flush ends
        if left >= fn:
            wait, j_next = 0.0, left
        else:
            wait, j_next = _level_time(left, fn, tau, tau_slow, slow_from), fn
        # time in the slowdown zone during this cycle (fluid)
        slow_t = 0.0
        if slowdown and tau_slow > tau:
            hi = min(imm_end, cap)
            slow_t = max(0.0, hi - max(j, slow_from)) * tau_slow
        stats.append((j, F, wait, stopped, slow_t))
        if abs(j_next - j) < 1e-9:
            break                 # a fixed point: every cycle alike
        j = j_next
    tail = stats[-1:] if len(stats) < 60 else stats[-8:]
    mem = sum(s[0] for s in tail)              # memtables flushed over the averaged cycles
    total = sum(s[1] + s[2] for s in tail)
    stop = sum(s[3] for s in tail)
    slow_t = sum(s[4] for s in tail)
    busy = sum(s[1] for s in tail)
    disk = sum(s[1] - spec.flush_fixed_us for s in tail)
    writes = mem * E
    n_cyc = len(tail)
    comp = 0.0
    if spec.bg_threads >= 2 and spec.wamp > 1.0:
        comp = min(1.0, mem * spec.memtable_bytes * (spec.wamp - 1.0) / disk_share_per_us / total)
    slow_per_write = slow_t * (1.0 - tau / tau_slow) / writes if tau_slow > tau else 0.0
    return FlushCycle(
        stop_us=stop / writes, stop_event_us=stop / n_cyc, stops_per_write=n_cyc / writes if stop > 0 else 0.0,
        slow_us=slow_per_write, wal_us=wal_event_us / E if spec.wal else 0.0,
        wal_event_us=wal_event_us if spec.wal else 0.0,
        flush_busy=min(1.0, busy / total), flush_disk_busy=min(1.0, disk / total),
        compaction_busy=comp, stop_fraction=stop / total, memtables_per_flush=mem / n_cyc,
        cycle_us=total / n_cyc)


@dataclass(frozen=True)
class FlushCycles:
    """:class:`FlushCycle` of many instances at once (arrays, one entry each)."""
    stop_us: np.ndarray
    stop_event_us: np.ndarray
    stops_per_write: np.ndarray
    slow_us: np.ndarray
    wal_us: np.ndarray
    wal_event_us: np.ndarray
    flush_busy: np.ndarray
    flush_disk_busy: np.ndarray
    compaction_busy: np.ndarray
    stop_fraction: np.ndarray
    memtables_per_flush: np.ndarray
    cycle_us: np.ndarray


@dataclass(frozen=True)
class LsmTable:
    """The :class:`LsmSpec` of many instances (possibly of different racks) as
    arrays, one entry per instance, for :func:`flush_cycles`."""
    specs: tuple            # the LsmSpec of each instance (for the slow path)
    entries: np.ndarray
    entry_bytes: np.ndarray
    memtable_bytes: np.ndarray
    flush_fixed_us: np.ndarray
    flush_write_factor: np.ndarray
    wamp: np.ndarray
    flushnum: np.ndarray
    maxnum: np.ndarray
    wal: np.ndarray
    compacts: np.ndarray    # compaction runs as its own disk job (bg_threads >= 2, wamp > 1)

    @classmethod
    def of(cls, specs, repeat: int = 1) -> "LsmTable":
        """The table of ``specs``, each repeated ``repeat`` times in a row (the
        workers of a rack share their rack's spec): the columns are built per
        spec and repeated, not per instance (64,000 attribute reads for a
        1,000-rack plan padded to 64 workers)."""
        specs = tuple(specs)
        col = lambda f, dtype=float: np.repeat(np.array([f(x) for x in specs], dtype=dtype),  # noqa: E731
                                               repeat)
        return cls(tuple(itertools.chain.from_iterable(itertools.repeat(x, repeat) for x in specs)),
                   col(lambda x: x.entries),
                   col(lambda x: x.entry_bytes), col(lambda x: x.memtable_bytes),
                   col(lambda x: x.flush_fixed_us), col(lambda x: x.flush_write_factor),
                   col(lambda x: x.wamp), col(lambda x: x.flushnum), col(lambda x: x.maxnum),
                   col(lambda x: x.wal, bool),
                   col(lambda x: x.bg_threads >= 2 and x.wamp > 1.0, bool))


#: Workers whose write rates agree within this (relative) share their stall
#: state (:func:`pool_stalls`).
STALL_POOL_TOL = 0.02
STALL_FIELDS = ("stop_us", "stop_event_us", "stops_per_write", "slow_us", "stop_fraction")


def pool_stalls(stalls: Mapping[str, np.ndarray], writes_per_us, weight=None,
                tol: float = STALL_POOL_TOL) -> None:
    """Give the workers of one rack whose write rates agree within ``tol`` the
    mean of their stall figures, in place: ``stalls`` maps each name of
    :data:`STALL_FIELDS` to its per-worker array (those of a
    :class:`FlushCycles`, or views of one rack's row of them).

    Why: at the flush-capacity limit a worker's cycle map is neutral. Its
    running fraction maps to ``c (1 - stop)``, c its flush capacity over its
    write rate, and c is within a fraction of a percent of 1 there, so how
    the stops divide among workers of nearly equal load is a direction the
    fixed point hardly moves along. It drifted to one answer or another (four
    equal workers stopping 0, 22.5, 0 and 4.6 % of the time, never settling),
    where the simulator spreads the stops over them by chance from run to run
    and their expectation is equal (docs/model.md, section 3). Workers whose
    loads differ by more keep their own: the busier one stops more.
    ``weight`` counts the workers a lumped class stands for (None: one each).
    Sorted by write rate, a worker joins the open group while its rate is
    within ``tol`` of the group's first; idle workers (no writes) stay alone."""
    w = np.asarray(writes_per_us, dtype=float)
    if not (np.any(stalls["stop_fraction"] > 0) or np.any(stalls["slow_us"] > 0)):
        return
    wt = np.ones(len(w)) if weight is None else np.asarray(weight, dtype=float)
    order = [int(i) for i in np.argsort(w, kind="stable") if w[i] > 0]
    groups: list[list[int]] = []
    for i in order:
        if groups and w[i] <= w[groups[-1][0]] * (1.0 + tol):
            groups[-1].append(i)
        else:
            groups.append([i])
    for g in groups:
        if len(g) < 2:
            continue
        gw = wt[g]
        for f in STALL_FIELDS:
            arr = stalls[f]
            arr[g] = float(np.dot(gw, arr[g]) / gw.sum())


def flush_cycles(t: LsmTable, writes_per_us, disk_share_per_us, wal_event_us,
                 running_fraction, memtables_per_run=None) -> FlushCycles:
    """:func:`flush_cycle` for arrays of instances (``t`` holds their settings).

    Most instances are in the calm regime -- each flush of ``flushnum``
    memtables ends before ``flushnum`` more fill, and before the immutables
    reach a stall -- whose cycle is closed-form: ``flushnum`` fills long, one
    flush of ``flushnum``. Only the others run the cycle map of
    :func:`flush_cycle`.

    ``memtables_per_run`` (memtables each instance fills over the whole run;
    None: a run long enough for the steady cycle) bounds the stalls by what a
    finite run can reach: it starts with no immutables (:func:`new_state`),
    so writes stop only after at least ``maxnum`` memtables filled, and slow
    down only after ``maxnum - 1``. A run that fills n memtables spends at
    most the fraction ``1 - maxnum / n`` of them in the stalled cycle (none
    if n < maxnum: 1,500 requests never fill 930 memtables).
    """
    w = np.asarray(writes_per_us, dtype=float)
    n = len(w)
    fn = t.flushnum
    live = w > 0
    wal = np.where(t.wal, wal_event_us, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.where(live, t.entries * np.maximum(running_fraction, 1e-6) / w, np.inf)
        F = t.flush_fixed_us + fn * t.memtable_bytes * t.flush_write_factor / disk_share_per_us
        rise = F / tau                                 # memtables that fill during a flush
        cycle = fn * tau
        slow_from = np.where(t.maxnum > 3, np.maximum(t.maxnum - 1, fn + 1), np.inf)
        calm = live & (rise < fn) & (fn + rise < np.minimum(t.maxnum, slow_from))
        busy = np.where(calm, F / cycle, 0.0)
        disk = np.where(calm, (F - t.flush_fixed_us) / cycle, 0.0)
        comp = np.where(calm & t.compacts,
                        np.minimum(1.0, fn * t.memtable_bytes * (t.wamp - 1.0)
                                   / disk_share_per_us / cycle), 0.0)
        wal_us = np.where(live, wal / t.entries, 0.0)
    out = dict(stop_us=np.zeros(n), stop_event_us=np.zeros(n), stops_per_write=np.zeros(n),
               slow_us=np.zeros(n), wal_us=wal_us, wal_event_us=wal,
               flush_busy=busy, flush_disk_busy=disk, compaction_busy=comp,
               stop_fraction=np.zeros(n), memtables_per_flush=np.where(live, fn, 0.0),
               cycle_us=np.where(live, cycle, np.inf))
    slow_path = np.nonzero(live & ~calm)[0]
    if len(slow_path):
        share = np.broadcast_to(disk_share_per_us, (n,))
        run = np.broadcast_to(running_fraction, (n,))
        for i in slow_path:
            cyc = flush_cycle(t.specs[i], float(w[i]), float(share[i]), float(wal[i]),
                              float(run[i]))
            for k in out:
                out[k][i] = getattr(cyc, k)
    if memtables_per_run is not None:
        n_run = np.asarray(memtables_per_run, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            stop_reach = np.where(n_run > 0, np.clip(1.0 - t.maxnum / n_run, 0.0, 1.0), 0.0)
            slow_reach = np.where(n_run > 0, np.clip(1.0 - slow_from / n_run, 0.0, 1.0), 0.0)
        for k in ("stop_us", "stops_per_write", "stop_fraction"):
            out[k] = out[k] * stop_reach
        out["slow_us"] = out["slow_us"] * slow_reach
    return FlushCycles(**out)
