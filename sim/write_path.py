"""RocksDB's write path, write by write: the simulators' per-event form of the run.

Both engines (:mod:`sim.fast`, compiled, and :mod:`sim.engine_simpy`, in
plain Python) call these functions, and they move the state of
:mod:`model.rack.lsm_rules` -- every instance (one per worker), the job
table, the machines -- by RocksDB's own rules (``seal``, ``schedule``,
``advance_jobs``, ``next_job_event``, ``job_event``, ``recalc``), the same
the analytic solver by phases (:mod:`model.solvers.trajectory`) feeds as a
fluid. What the simulators add is the write itself, in the order RocksDB's
``DBImpl::PreprocessWrite`` and ``WriteImpl`` take it:

* **Stopped** (the instance's write-stall condition is STOPPED): the write
  does not start; its worker blocks, head of line, until a job event of
  its instance clears the stop (:data:`STOP`; the engines park the worker
  and retry it then).
* **Delayed** (DELAYED): the write is paced to the instance's delayed write
  rate (``WriteController``, ``db/write_controller.cc``), kept simple: a
  write starts no earlier than the instance's ``pace_next``, which then
  moves on by ``entry / rate`` from that start. Sustained delayed writes so
  go at the delayed rate; a write after a pause longer than its own
  allowance is not delayed, and no credit builds up beyond one write
  (RocksDB refills a 1 ms credit; that is left out).
* The write adds ``entry`` bytes to the active memtable and counts in the
  instance's ``writes``. The write after which the memtable has no room for
  another entry seals it (``seal``: it becomes immutable, the condition is
  recomputed, a flush scheduled when ``flushnum`` immutables wait): a
  memtable holds ``LsmSpec.entries`` writes. With the WAL on, that write
  then waits the machine's WAL-switch time (:func:`model.rack.lsm.wal_block_us`).
* With ``wal_bytes_per_sync`` set, every ``sync_bytes`` an instance writes
  its write waits ``sync_us`` (the WAL counted from the run's first write:
  a restarted server's new WAL).

Background jobs advance in simulated time: the engines keep the time the
job table was last advanced to (``t_jobs``) and the next job event
(:func:`next_job`); before anything that changes the jobs' rates (a seal,
which can start a flush; a job event) every job is advanced to now
(:func:`jobs_to`). A job event (:func:`job_fires`) that leaves its instance
no longer stopped releases that instance's blocked writers.

``rack`` (:data:`R_N` floats) counts the time any instance was stopped
(:data:`R_STOPPED`, :data:`R_SINCE`, :data:`R_US`: the analytic solver's
stop phases, ``details["lsm"]["stopped_s"]``) and the changes a worker's
process time follows (:data:`R_CHANGES`: seals and finished jobs, which
move the immutables, the SST files and the background jobs
:func:`model.rack.service.cost_in_state` reads) since the engine last
handed its state to the dynamics (:mod:`sim.dynamics`), which zero it.
"""

from __future__ import annotations

import math

import numpy as np

from model.rack import lsm_rules as R

#: what :func:`write_start` says
GO, STOP = 0, 1
#: the ``rack`` array: instances stopped now, since when any has been, the
#: time any was stopped so far (us) (:func:`stop_changed`); changes of the
#: state a process time follows since the dynamics last read it
R_STOPPED, R_SINCE, R_US, R_CHANGES, R_N = 0, 1, 2, 3, 4


def new_rack():
    """The ``rack`` array: no instance stopped."""
    return np.zeros(R_N)


def stop_changed(rack, was_stopped, now_stopped, t):
    """An instance's condition changed at ``t`` from (or to) STOPPED: count
    the time any instance was stopped."""
    if was_stopped == now_stopped:
        return
    if now_stopped:
        if rack[R_STOPPED] == 0.0:
            rack[R_SINCE] = t
        rack[R_STOPPED] += 1.0
    else:
        rack[R_STOPPED] -= 1.0
        if rack[R_STOPPED] == 0.0:
            rack[R_US] += t - rack[R_SINCE]


def rack_stopped_us(rack, t):
    """Time (us) any instance was stopped up to ``t``."""
    if rack[R_STOPPED] > 0.0:
        return rack[R_US] + t - rack[R_SINCE]
    return rack[R_US]


def jobs_to(st, p, jobs, mach, t_jobs, t):
    """Every running job advanced from ``t_jobs`` to ``t`` (the rates hold
    between events), each instance's time with a flush running counted.
    Returns ``t`` (the new ``t_jobs``)."""
    R.advance_jobs(jobs, p, mach, st, t - t_jobs)
    return t


def next_job(st, p, jobs, mach, t):
    """(time, job) of the next job event from ``t`` (the jobs just advanced
    to it); (inf, -1) when no job runs."""
    dt, j = R.next_job_event(jobs, p, mach, st)
    if j < 0:
        return math.inf, -1
    return t + max(dt, 0.0), j


def write_start(st, i, p, jobs, mach, t, t_jobs, wal_block_us, sync_bytes, sync_us, synced,
                rack):
    """A write of instance i starts at time t (the jobs last advanced to
    ``t_jobs``). Returns (GO or STOP, its extra delay in us: pacing, WAL
    switch and sync; did it seal a memtable?). After a seal the jobs are
    advanced to t: the caller's ``t_jobs`` is t and its next job event is
    :func:`next_job`'s."""
    s = st[i]
    if s.cond == R.STOPPED:
        return STOP, 0.0, False
    extra = 0.0
    if s.cond == R.DELAYED and s.rate > 0.0:
        start = s.pace_next if s.pace_next > t else t
        extra = start - t
        s.pace_next = start + p.entry / s.rate
    s.active += p.entry
    s.writes += 1.0
    sealed = False
    if s.active + p.entry > p.memtable:
        jobs_to(st, p, jobs, mach, t_jobs, t)
        was = s.cond == R.STOPPED
        R.seal(st, i, p, jobs, mach, t)
        stop_changed(rack, was, st[i].cond == R.STOPPED, t)
        rack[R_CHANGES] += 1.0
        extra += wal_block_us
        sealed = True
    if sync_bytes > 0.0:
        synced[i] += p.entry
        if synced[i] >= sync_bytes:
            synced[i] -= sync_bytes
            extra += sync_us
    return GO, extra, sealed


def job_fires(st, p, jobs, mach, j, t, t_jobs, rack):
    """Job j's event at t (the jobs last advanced to ``t_jobs``): its fixed
    part ends or it finishes. Returns (its kind, did it finish?, the
    instance whose stopped writers may go on, or -1); the jobs are then
    advanced to t."""
    jobs_to(st, p, jobs, mach, t_jobs, t)
    kind = jobs[j].kind
    i = jobs[j].inst
    was = st[i].cond == R.STOPPED
    finished, i = R.job_event(st, p, jobs, mach, j, t)
    now = st[i].cond == R.STOPPED
    stop_changed(rack, was, now, t)
    if finished:
        rack[R_CHANGES] += 1.0
    release = i if finished and was and not now else -1
    return kind, finished, release
