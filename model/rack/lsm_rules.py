"""RocksDB's write path as the rules RocksDB applies to counts, over one run.

A run is finite, and RocksDB acts on counts: whether, when and for how long
each of its thresholds is crossed during the run decides what the run does
(docs/model.md, "The run's write path"). This module holds those rules once,
over the state of every instance (one per worker), as plain functions of
structured arrays that both solvers compile in:

* the analytic solver by phases (:mod:`model.solvers.trajectory`) feeds each
  instance's writes as a fluid at the rate the rack solver gives for the
  phase, memtable by memtable;
* the simulators (:mod:`sim`) feed them write by write.

What each rule says, with the RocksDB 7.8 source it follows:

* **Memtables.** A write adds ``entry`` bytes to the instance's active
  memtable; the write that finds it full seals it (``SwitchMemtable``,
  ``db/db_impl/db_impl_write.cc``): it becomes immutable, and with the WAL on
  a new WAL file is created (its block is the caller's: :mod:`model.rack.lsm`).
* **Flushes** (``MemTableList::IsFlushPending``/``PickMemtablesToFlush``,
  ``db/memtable_list.cc``): when at least ``flushnum``
  (``min_write_buffer_number_to_merge``) immutables wait that no flush has
  taken, a flush job takes all of them, if the instance runs fewer flushes
  than its limit (``GetBGJobLimits``, ``db/db_impl/db_impl_compaction_flush.cc``:
  ``max(1, max_background_jobs / 4)``) and the machine's flush pool (the
  process-wide HIGH pool, ``Env::SetBackgroundThreads``) has a thread free.
  It writes one L0 file.
* **Compactions** (``LevelCompactionPicker``, ``db/compaction/compaction_picker_level.cc``;
  scores as ``VersionStorageInfo::ComputeCompactionScore``): L0's score is its
  files over ``level0_file_num_compaction_trigger``, level k's its bytes over
  its target (``max_bytes_for_level_base`` x 10^(k-1)); the highest score of
  at least 1 is compacted when the instance and the machine's LOW pool allow.
  Keys are hashed, so every L0 file overlaps all of L1: an L0->L1
  compaction takes every L0 file and all of L1, and no L1->L2 compaction
  runs beside it. A level-k compaction moves one target file
  (``target_file_size_base``) into level k+1 with the part of k+1 it overlaps.
* **Write stalls** (``ColumnFamilyData::GetWriteStallConditionAndCause``,
  ``db/column_family.cc``): stopped while the unflushed immutables reach
  ``max_write_buffer_number``, L0 reaches ``level0_stop_writes_trigger`` or
  the pending compaction bytes reach the hard limit; delayed while
  ``max_write_buffer_number > 3`` and the immutables reach one less (and one
  more than ``flushnum``), L0 reaches ``level0_slowdown_writes_trigger`` or
  the pending bytes the soft limit. Recomputed whenever RocksDB installs a
  new version: after a memtable seal, a flush and a compaction.
* **The delayed write rate** (``SetupDelay``, ``RecalculateWriteStallConditions``,
  ``db/column_family.cc``; ``db/write_controller.cc``): starts at
  ``delayed_write_rate``; each recomputation while already delayed multiplies
  it by 0.6 when the instance is stopped or near a stop, by 0.8 while the
  pending compaction bytes do not shrink, by 1.25 when they do (at most the
  option); a return to normal multiplies it by 1.4. Delayed writes are paced
  to that rate.
* **Pending compaction bytes** as ``VersionStorageInfo::EstimateCompactionBytesNeeded``
  (``db/version_set.cc``).
* **Jobs** run on the machine: a job first spends a fixed time (a flush's SST
  creation and fsync), then processes its input bytes (a flush: its
  memtables, merged; a compaction: the files it takes) at its kind's rate,
  writing its output (a flush: each key once) at no more than an equal
  share of the machine's disk among the jobs writing.

The state starts from the database a run finds (:func:`initial_state`): the
loaded data in levels, memtables empty (a server restarted after its load).
Counters (memtables sealed, flushes, compactions, time stopped and delayed)
are what a researcher reads in RocksDB's LOG.
"""

from __future__ import annotations

import math

import numpy as np

#: RocksDB's defaults the scenario does not set (include/rocksdb/options.h,
#: advanced_options.h): levels, level size multiplier, target SST size,
#: the pending-compaction limits, the smallest delayed write rate.
NUM_LEVELS = 7
LEVEL_MULTIPLIER = 10.0
TARGET_FILE_BYTES = 64.0 * 1024 * 1024
SOFT_PENDING_BYTES = 64.0 * 1024 ** 3
HARD_PENDING_BYTES = 256.0 * 1024 ** 3
MIN_DELAYED_RATE = 16.0 * 1024 / 1e6          # bytes per us (kMinWriteRate 16 KiB/s)
INC_SLOWDOWN, DEC_SLOWDOWN, NEAR_STOP_SLOWDOWN, RECOVER_SLOWDOWN = 0.8, 1.0 / 0.8, 0.6, 1.4

# write-stall conditions and causes (include/rocksdb/types.h WriteStallCondition/Cause)
NORMAL, DELAYED, STOPPED = 0, 1, 2
CAUSE_NONE, CAUSE_MEMTABLES, CAUSE_L0, CAUSE_PENDING = 0, 1, 2, 3
# job kinds
FLUSH, COMPACT_L0, COMPACT_LEVEL = 0, 1, 2

LSM_PARAMS = np.dtype([
    ("memtable", "f8"),        # write_buffer_size, bytes
    ("entry", "f8"),           # memtable bytes one write adds
    ("sst_ratio", "f8"),       # SST bytes per memtable byte a flush writes (no overwrites)
    ("flushnum", "i8"), ("maxnum", "i8"),
    ("l0_trigger", "i8"), ("l0_slowdown", "i8"), ("l0_stop", "i8"),
    ("l1_target", "f8"),       # max_bytes_for_level_base, bytes
    ("max_rate", "f8"),        # delayed_write_rate, bytes per us
    ("flush_fixed", "f8"),     # us of a flush job before its bytes
    ("flush_rate", "f8"),      # bytes per us one flush job writes at most
    ("compact_rate", "f8"),    # bytes per us one compaction job processes at most
    ("disk", "f8"),            # bytes per us a machine's disk writes, shared by its jobs
    ("flush_pool", "i8"),      # flush threads per machine (0: one per job)
    ("compact_pool", "i8"),    # compaction threads per machine (0: one per job)
    ("inst_flushes", "i8"),    # flushes one instance runs at once
    ("inst_compactions", "i8"),
    ("stalls", "i8"),          # 0: no stop or slowdown (a mechanism switched off)
], align=True)

INSTANCE = np.dtype([
    ("machine", "i8"),
    ("unique", "f8"),          # the share of a flush's writes that are distinct keys
    ("active", "f8"),          # bytes in the active memtable
    ("imm", "i8"),             # immutable memtables not yet flushed (NumNotFlushed)
    ("imm_taken", "i8"),       # ... of which running flushes have taken
    ("flush_jobs", "i8"), ("compact_jobs", "i8"),
    ("l0", "i8"), ("l0_bytes", "f8"),
    ("l0_taken", "i8"), ("l0_taken_bytes", "f8"),
    ("level", "f8", (NUM_LEVELS,)),    # bytes in L1 .. L7 (index 0 is L1)
    ("level_busy", "i8", (NUM_LEVELS,)),
    ("cond", "i8"), ("cause", "i8"),
    ("rate", "f8"),            # the delayed write rate, bytes per us
    ("prev_pending", "f8"),
    ("since", "f8"),           # when the current condition began, us
    ("pace_next", "f8"),       # (per event) the next delayed write starts no earlier
    ("writes", "f8"),
    # counters, as RocksDB's LOG and statistics report them
    ("sealed", "i8"), ("flushes", "i8"), ("compactions", "i8"),
    ("stops", "i8"), ("slows", "i8"),
    ("stop_us", "f8"), ("slow_us", "f8"),
    ("flush_bytes", "f8"), ("compact_bytes", "f8"),
    ("flush_us", "f8"),        # time with a flush of this instance running
], align=True)

JOB = np.dtype([
    ("live", "i8"), ("inst", "i8"), ("kind", "i8"), ("level", "i8"),
    ("writing", "i8"),         # 0 in its fixed part, 1 once it writes (a disk job)
    ("fixed_left", "f8"),      # us of fixed time left
    ("work_left", "f8"),       # bytes left to process
    ("work", "f8"),            # bytes it processes in all
    ("ratio", "f8"),           # bytes it writes per byte it processes
    ("memtables", "i8"),       # a flush: memtables taken
    ("files", "i8"),           # an L0 compaction: files taken
    ("moved", "f8"),           # bytes the job moves into the next level (or writes to L0)
], align=True)

MACHINE = np.dtype([
    ("flushes", "i8"),         # flush jobs running
    ("compactions", "i8"),
    ("disk_jobs", "i8"),       # jobs past their fixed time, writing
], align=True)


# ---------------------------------------------------------------- the state
def new_state(instances: int, machines: int, machine_of, jobs_per_instance: int = 4):
    """(instances, jobs, machines): empty record arrays (fields by name, in
    Python and in compiled code alike)."""
    st = np.zeros(instances, dtype=INSTANCE).view(np.recarray)
    st.machine[:] = np.asarray(machine_of, dtype=np.int64)
    jobs = np.zeros(max(1, instances * jobs_per_instance), dtype=JOB).view(np.recarray)
    mach = np.zeros(max(1, machines), dtype=MACHINE).view(np.recarray)
    return st, jobs, mach


def level_target(p, k):
    """Target bytes of level k+1 (k = 0 is L1): ``max_bytes_for_level_base``
    times 10 per level below L1."""
    return p.l1_target * LEVEL_MULTIPLIER ** k


def fill_levels(st, i, p, data_bytes):
    """Place ``data_bytes`` of loaded data in instance i's levels as leveled
    compaction leaves it: L1 up to its target, then each level up to its
    own, the last level the rest."""
    left = data_bytes
    for k in range(NUM_LEVELS):
        if left <= 0.0:
            break
        take = left if k == NUM_LEVELS - 1 else min(left, level_target(p, k))
        st[i].level[k] = take
        left -= take


def loaded_levels(p, data_bytes):
    """Levels :func:`fill_levels` fills with ``data_bytes``: the SST places a
    lookup checks in the run's first state (no L0 file yet)."""
    left = data_bytes
    n = 0
    for k in range(NUM_LEVELS):
        if left <= 0.0:
            break
        take = left if k == NUM_LEVELS - 1 else min(left, level_target(p, k))
        left -= take
        n += 1
    return n


def initial_state(p, machine_of, machines, data_bytes, unique, jobs_per_instance=4):
    """The state a run starts from: each instance holding ``data_bytes[i]``
    of loaded data in its levels, no L0 file, no memtable filled (a server
    restarted after its load flushed them), writes normal at the full
    delayed rate (unused until a delay)."""
    n = len(machine_of)
    st, jobs, mach = new_state(n, machines, machine_of, jobs_per_instance)
    start_state(st, p, data_bytes, unique)
    return st, jobs, mach


def start_state(st, p, data_bytes, unique):
    """Every instance at the run's start: its loaded data in levels, writes
    normal at the full delayed rate, ``unique`` the share of distinct keys
    among the writes one flush takes."""
    for i in range(st.shape[0]):
        st[i].unique = unique[i]
        fill_levels(st, i, p, data_bytes[i])
        st[i].rate = p.max_rate
        st[i].prev_pending = pending_bytes(st, i, p)


# ---------------------------------------------------------------- stall rules
def pending_bytes(st, i, p):
    """RocksDB's estimate of the bytes compaction still has to rewrite
    (``EstimateCompactionBytesNeeded``): L0 and L1 once L0 triggers, then
    each level's excess over its target times the fan-out into the next."""
    s = st[i]
    est = 0.0
    to_next = 0.0
    l0_on = s.l0 >= p.l0_trigger or s.l0_bytes >= p.l1_target
    if l0_on:
        est = s.l0_bytes
        to_next = s.l0_bytes
    for k in range(NUM_LEVELS - 1):
        size = s.level[k]
        if k == 0 and l0_on:
            est += size
        size += to_next
        to_next = 0.0
        target = level_target(p, k)
        if size > target:
            to_next = size - target
            nxt = s.level[k + 1]
            if nxt > 0.0:
                est += to_next * (nxt / size + 1.0)
    return est


def stall_condition(p, imm, l0, pending):
    """(condition, cause) of an instance (``GetWriteStallConditionAndCause``)."""
    if p.stalls == 0:
        return NORMAL, CAUSE_NONE
    if imm >= p.maxnum:
        return STOPPED, CAUSE_MEMTABLES
    if l0 >= p.l0_stop:
        return STOPPED, CAUSE_L0
    if pending >= HARD_PENDING_BYTES:
        return STOPPED, CAUSE_PENDING
    if p.maxnum > 3 and imm >= p.maxnum - 1 and imm - 1 >= p.flushnum:
        return DELAYED, CAUSE_MEMTABLES
    if l0 >= p.l0_slowdown:
        return DELAYED, CAUSE_L0
    if pending >= SOFT_PENDING_BYTES:
        return DELAYED, CAUSE_PENDING
    return NORMAL, CAUSE_NONE


def recalc(st, i, p, t):
    """Recompute instance i's write-stall condition at time t, as RocksDB does
    when it installs a new version: the time in the old condition is
    counted, the delayed write rate adjusted (``SetupDelay``). True when the
    condition or the rate changed."""
    s = st[i]
    pending = pending_bytes(st, i, p)
    cond, cause = stall_condition(p, s.imm, s.l0, pending)
    was_stopped = s.cond == STOPPED
    was_delayed = s.cond == DELAYED
    old_rate = s.rate
    if cond == DELAYED and was_delayed and p.max_rate > MIN_DELAYED_RATE:
        # already delayed (the controller NeedsDelay): adjust on the debt's trend
        near_stop = False
        if cause == CAUSE_L0:
            near_stop = s.l0 >= p.l0_stop - 2
        elif cause == CAUSE_PENDING:
            near_stop = pending - SOFT_PENDING_BYTES > \
                0.75 * (HARD_PENDING_BYTES - SOFT_PENDING_BYTES)
        r = s.rate
        if was_stopped or near_stop:
            r = max(r * NEAR_STOP_SLOWDOWN, MIN_DELAYED_RATE)
        elif s.prev_pending > 0.0 and s.prev_pending <= pending:
            r = max(r * INC_SLOWDOWN, MIN_DELAYED_RATE)
        elif s.prev_pending > pending:
            r = min(r * DEC_SLOWDOWN, p.max_rate)
        s.rate = r
    elif cond == NORMAL and was_delayed:
        s.rate = min(s.rate * RECOVER_SLOWDOWN, p.max_rate)
    s.prev_pending = pending
    if cond != s.cond:
        span = t - s.since
        if s.cond == STOPPED:
            s.stop_us += span
        elif s.cond == DELAYED:
            s.slow_us += span
        if cond == STOPPED:
            s.stops += 1
        elif cond == DELAYED:
            s.slows += 1
        s.since = t
        s.cond = cond
        s.cause = cause
        return True
    s.cause = cause
    return s.rate != old_rate


def close_counters(st, t):
    """Count every instance's time in its current condition up to t (the end
    of the run), as a LOG read then would."""
    for i in range(st.shape[0]):
        s = st[i]
        if s.cond == STOPPED:
            s.stop_us += t - s.since
        elif s.cond == DELAYED:
            s.slow_us += t - s.since
        s.since = t


def probes(st, i):
    """SST places a lookup that misses the memtables checks: every L0 file and
    every non-empty level (RocksDB's read amplification)."""
    s = st[i]
    n = s.l0
    for k in range(NUM_LEVELS):
        if s.level[k] > 0.0:
            n += 1
    return n


# ---------------------------------------------------------------- jobs
def _free_job(jobs):
    for j in range(jobs.shape[0]):
        if jobs[j].live == 0:
            return j
    return -1


def _flush_limit_ok(st, i, p, mach):
    m = st[i].machine
    return (st[i].flush_jobs < p.inst_flushes
            and (p.flush_pool <= 0 or mach[m].flushes < p.flush_pool))


def _compact_limit_ok(st, i, p, mach):
    m = st[i].machine
    return (st[i].compact_jobs < p.inst_compactions
            and (p.compact_pool <= 0 or mach[m].compactions < p.compact_pool))


def _start(jobs, j, i, kind, level, fixed, work, memtables, files, moved):
    jb = jobs[j]
    jb.live = 1
    jb.inst = i
    jb.kind = kind
    jb.level = level
    jb.writing = 0 if fixed > 0.0 else 1
    jb.fixed_left = fixed
    jb.work_left = work
    jb.work = work
    jb.ratio = moved / work if work > 0.0 else 1.0
    jb.memtables = memtables
    jb.files = files
    jb.moved = moved


def _try_flush(st, i, p, jobs, mach):
    """Start instance i's flush if RocksDB would now. True if one started."""
    s = st[i]
    ready = s.imm - s.imm_taken
    if ready < p.flushnum or ready <= 0 or not _flush_limit_ok(st, i, p, mach):
        return False
    j = _free_job(jobs)
    if j < 0:
        return False
    # a flush merges its memtables (its work: their bytes) and writes each key
    # once: the distinct keys among them
    work = ready * p.memtable
    out = work * p.sst_ratio * s.unique
    _start(jobs, j, i, FLUSH, -1, p.flush_fixed, work, ready, 0, out)
    s.imm_taken += ready
    s.flush_jobs += 1
    m = s.machine
    mach[m].flushes += 1
    if p.flush_fixed <= 0.0:
        mach[m].disk_jobs += 1
    return True


def _try_compact(st, i, p, jobs, mach):
    """Start instance i's most urgent compaction (score >= 1) if RocksDB would
    now. True if one started."""
    s = st[i]
    if not _compact_limit_ok(st, i, p, mach):
        return False
    best = 1.0
    which = -2
    l0_free = s.l0 - s.l0_taken
    if s.l0_taken == 0 and s.level_busy[0] == 0 and p.l0_trigger > 0:
        score = l0_free / p.l0_trigger
        if score >= best:
            best = score
            which = -1
    for k in range(NUM_LEVELS - 1):
        if s.level_busy[k] != 0 or s.level[k] <= 0.0:
            continue
        if k == 0 and s.l0_taken > 0:
            continue            # L1 is the L0 compaction's output
        score = s.level[k] / level_target(p, k)
        if score > best:
            best = score
            which = k
    if which == -2:
        return False
    j = _free_job(jobs)
    if j < 0:
        return False
    m = s.machine
    if which == -1:
        work = s.l0_bytes + s.level[0]
        _start(jobs, j, i, COMPACT_L0, 0, 0.0, work, 0, l0_free, s.l0_bytes)
        s.l0_taken = l0_free
        s.l0_taken_bytes = s.l0_bytes
        s.level_busy[0] = 1
    else:
        move = min(TARGET_FILE_BYTES, s.level[which])
        overlap = move * min(s.level[which + 1] / max(s.level[which], 1.0), LEVEL_MULTIPLIER)
        _start(jobs, j, i, COMPACT_LEVEL, which, 0.0, move + overlap, 0, 0, move)
        s.level_busy[which] = 1
        s.level_busy[which + 1] = 1
    s.compact_jobs += 1
    mach[m].compactions += 1
    mach[m].disk_jobs += 1
    return True


def schedule(st, p, jobs, mach):
    """Start every flush, then every compaction, RocksDB would start now
    (flushes first: the HIGH pool). True if any job started."""
    started = False
    for i in range(st.shape[0]):
        while _try_flush(st, i, p, jobs, mach):
            started = True
    for i in range(st.shape[0]):
        while _try_compact(st, i, p, jobs, mach):
            started = True
    return started


def job_rate(jobs, j, p, mach, st):
    """Bytes per us job j processes now (0 while in its fixed part)."""
    jb = jobs[j]
    if jb.writing == 0:
        return 0.0
    m = st[jb.inst].machine
    share = p.disk / max(1, mach[m].disk_jobs)
    cap = p.flush_rate if jb.kind == FLUSH else p.compact_rate
    # its processing at its own rate, its writing at its share of the disk
    return min(cap, share / jb.ratio) if jb.ratio > 0.0 else cap


def next_job_event(jobs, p, mach, st):
    """(us until the next job event, the job): a fixed part ending or a job
    finishing; (inf, -1) when no job runs."""
    best = math.inf
    bj = -1
    for j in range(jobs.shape[0]):
        jb = jobs[j]
        if jb.live == 0:
            continue
        if jb.writing == 0:
            dt = jb.fixed_left
        else:
            r = job_rate(jobs, j, p, mach, st)
            dt = jb.work_left / r if r > 0.0 else math.inf
        if dt < best:
            best = dt
            bj = j
    return best, bj


def advance_jobs(jobs, p, mach, st, dt):
    """Every running job ``dt`` us further (rates constant over dt), and each
    instance's time with a flush running (``flush_us``) counted."""
    if dt <= 0.0:
        return
    for i in range(st.shape[0]):
        if st[i].flush_jobs > 0:
            st[i].flush_us += dt
    for j in range(jobs.shape[0]):
        jb = jobs[j]
        if jb.live == 0:
            continue
        if jb.writing == 0:
            jb.fixed_left = max(jb.fixed_left - dt, 0.0)
        else:
            jb.work_left = max(jb.work_left - job_rate(jobs, j, p, mach, st) * dt, 0.0)


def job_event(st, p, jobs, mach, j, t):
    """Apply job j's event at time t: its fixed part ends (it starts writing)
    or it finishes (its output installed, the condition recomputed, new jobs
    scheduled). Returns (finished?, the instance)."""
    jb = jobs[j]
    i = jb.inst
    s = st[i]
    m = s.machine
    if jb.writing == 0:
        # the fixed part just ended: it writes from now on
        jb.fixed_left = 0.0
        jb.writing = 1
        mach[m].disk_jobs += 1
        return False, i
    jb.work_left = 0.0
    mach[m].disk_jobs -= 1
    jb.live = 0
    if jb.kind == FLUSH:
        s.imm -= jb.memtables
        s.imm_taken -= jb.memtables
        s.flush_jobs -= 1
        mach[m].flushes -= 1
        s.l0 += 1
        s.l0_bytes += jb.moved
        s.flushes += 1
        s.flush_bytes += jb.moved
    else:
        s.compact_jobs -= 1
        mach[m].compactions -= 1
        s.compactions += 1
        if jb.kind == COMPACT_L0:
            s.l0 -= jb.files
            s.l0_bytes = max(s.l0_bytes - jb.moved, 0.0)
            s.l0_taken = 0
            s.l0_taken_bytes = 0.0
            s.level[0] += jb.moved
            s.level_busy[0] = 0
        else:
            k = jb.level
            s.level[k] = max(s.level[k] - jb.moved, 0.0)
            s.level[k + 1] += jb.moved
            s.level_busy[k] = 0
            s.level_busy[k + 1] = 0
        s.compact_bytes += jb.work
    recalc(st, i, p, t)
    schedule(st, p, jobs, mach)
    return True, i


def seal(st, i, p, jobs, mach, t):
    """Instance i's active memtable is full at time t: it becomes immutable,
    the condition is recomputed and a flush scheduled if one is due."""
    s = st[i]
    s.active = 0.0
    s.imm += 1
    s.sealed += 1
    recalc(st, i, p, t)
    schedule(st, p, jobs, mach)


def any_job(jobs):
    for j in range(jobs.shape[0]):
        if jobs[j].live != 0:
            return True
    return False


def bg_running(mach, m):
    """Background jobs running on machine m (flushes and compactions): threads
    runnable beside its workers."""
    return mach[m].flushes + mach[m].compactions
