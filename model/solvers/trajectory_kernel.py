"""The run's writes as a fluid through RocksDB's rules (compiled): one stretch of a phase.

:func:`advance` moves every instance's state (:mod:`model.rack.lsm_rules`)
forward in time with the writes flowing at the rates the rack solver gave
for the current phase, one event at a time -- a memtable sealed, a job's
fixed part ending, a job finishing, the run's last query -- and returns as
soon as something the rack solver reads has changed: an instance's
write-stall condition or delayed rate, the background jobs on a machine (when
they slow its workers), or a worker's process time by more than ``tol``
through the memtables and SST files its lookups meet. The driver
(:mod:`model.solvers.trajectory`) then solves the rack in the new state and
calls it again.
"""

from __future__ import annotations

import math

from ._jit import njit
from .mechanisms import lsm_rules as R, state_cost

#: why :func:`advance` returned
DONE, RESOLVE, STUCK, BUDGET = 0, 1, 2, 3


@njit(cache=True)
def _changed(st, mach, ref_cond, ref_rate, ref_imm, ref_probes, ref_bg, c_mem, c_probe,
             ref_cost, bg_matters, tol):
    for i in range(st.shape[0]):
        s = st[i]
        if s.cond != ref_cond[i]:
            return True
        if s.cond == R.DELAYED and s.rate != ref_rate[i]:
            return True
        drift = c_mem[i] * (s.imm - ref_imm[i]) + c_probe[i] * (R.probes(st, i) - ref_probes[i])
        if abs(drift) > tol * max(ref_cost[i], 1e-9):
            return True
    if bg_matters:
        for m in range(mach.shape[0]):
            if R.bg_running(mach, m) != ref_bg[m]:
                return True
    return False


@njit(cache=True)
def advance(p, st, jobs, mach, rates, X, t, q_left, ref_cond, ref_rate, ref_imm, ref_probes,
            ref_bg, c_mem, c_probe, ref_cost, bg_matters, tol, max_events):
    """Run on from time ``t`` (us) with instance i writing ``rates[i]`` writes
    per us and the rack completing ``X`` requests per us, until the run's
    ``q_left`` queries are done (DONE), the solver's inputs change (RESOLVE),
    nothing can change any more (STUCK: no writes, no job) or ``max_events``
    events passed (BUDGET). Returns (reason, t, queries done)."""
    n = st.shape[0]
    done = 0.0
    entry = p.entry
    for ev in range(max_events):
        dt = math.inf
        kind = -1            # -1 none, -2 the run ends, -3 a job, i >= 0 instance i seals
        if X > 0.0:
            dt = (q_left - done) / X
            kind = -2
        for i in range(n):
            r = rates[i]
            if r > 0.0 and st[i].cond != R.STOPPED:
                d = (p.memtable - st[i].active) / (r * entry)
                if d < dt:
                    dt = d
                    kind = i
        dj, j = R.next_job_event(jobs, p, mach, st)
        if dj < dt:
            dt = dj
            kind = -3
        if kind == -1:
            return STUCK, t, done
        if dt < 0.0:
            dt = 0.0
        # everything flows for dt
        for i in range(n):
            r = rates[i]
            if r > 0.0 and st[i].cond != R.STOPPED:
                st[i].active += r * entry * dt
                st[i].writes += r * dt
        R.advance_jobs(jobs, p, mach, st, dt)
        t += dt
        done += X * dt
        if kind == -2:
            return DONE, t, q_left
        if kind == -3:
            R.job_event(st, p, jobs, mach, j, t)
        else:
            R.seal(st, kind, p, jobs, mach, t)
        if _changed(st, mach, ref_cond, ref_rate, ref_imm, ref_probes, ref_bg, c_mem, c_probe,
                    ref_cost, bg_matters, tol):
            return RESOLVE, t, done
    return BUDGET, t, done


@njit(cache=True)
def state_inputs(st, mach, machine_of, shares_cores, flat, first, probe, memprobe, bg_penalty,
                 cond, rate, imm, probes, bg_m, bg, cost):
    """The solver's view of the state, into the reference arrays (``cond``,
    ``rate``, ``imm``, ``probes`` per instance, ``bg_m`` per machine), and
    each worker's inputs in it: background jobs on its cores (``bg``) and its
    process time (``cost``, :func:`model.rack.service.state_cost`)."""
    for m in range(mach.shape[0]):
        bg_m[m] = R.bg_running(mach, m)
    for i in range(st.shape[0]):
        cond[i] = st[i].cond
        rate[i] = st[i].rate
        imm[i] = st[i].imm
        probes[i] = R.probes(st, i)
        bg[i] = bg_m[machine_of[i]] if shares_cores else 0.0
        cost[i] = state_cost(flat[i], first[i], probe[i], memprobe[i], bg_penalty, imm[i],
                             probes[i], bg[i])


@njit(cache=True)
def start(st, p, data_bytes, unique):
    """Every instance at the run's start (:func:`model.rack.lsm_rules.start_state`)."""
    R.start_state(st, p, data_bytes, unique)


@njit(cache=True)
def pending_all(st, p, out):
    """Each instance's pending compaction bytes."""
    for i in range(st.shape[0]):
        out[i] = R.pending_bytes(st, i, p)


@njit(cache=True)
def finish(st, t):
    """The run ended at ``t``: count each instance's time in its condition."""
    R.close_counters(st, t)
