"""The analytic solver by phases: the run as the lab ran it, from its first query to its last.

A run is finite, and RocksDB acts on counts (docs/model.md, "The run's write
path"). The rack is solved in the state the run starts in (the loaded
database, memtables empty); RocksDB's rules (:mod:`model.rack.lsm_rules`)
then carry every instance's writes forward at the rates of that solution
(:mod:`model.solvers.trajectory_kernel`) until something the rack solver
reads changes -- a write stop or slowdown begins or ends, the delayed write
rate moves, background jobs start or end on a machine whose workers they
slow, or a worker's process time drifts by more than :data:`TOL` through
the memtables and SST files its lookups meet -- and the rack is solved again
in the new state. Each such stretch is a phase, served at its own
throughput; the run's throughput is its queries over the sum of its phase
times.

A write stop is a phase of its own, never solved: the closed loop piles up
behind the stopped worker, so the rack serves only the requests its threads
complete before they all wait there (each thread's requests until it draws
that worker: ``N (1 - s) / s`` in all) and then nothing until the stop ends;
threads held past their timeout resend every timeout meanwhile.

The racks of a batch advance together: each round solves, in one compiled
batch (:mod:`model.solvers.root`), every rack whose state needs a new
solution, then moves each as far as its solution carries it. A rack that
crosses no threshold is one phase and one solve, as before phases existed.

The run's per-worker figures are its phases' (utilisation by time, process
time by the requests served); :func:`model.solvers.outcome.prediction` reads
them as from any solve. ``details["lsm"]`` holds what RocksDB's LOG would
show per worker, ``details["trajectory"]`` the phases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..rack import RackSpec, lsm as lsm_mech, lsm_rules as rules
from ..rack.arrays import per_worker
from . import trajectory_kernel as kern
from .packing import (O_CLIENT_RES, O_CLIENT_U, O_CYCLE, O_EVALS, O_JUMP, O_LOST, O_NCOL,
                      O_RESENDS, O_RUN, O_SATURATED, O_SLEEP, O_WIDTH, O_X, V_BLOCK, V_DUP,
                      V_FLUSH_BUSY, V_HELD, V_LOST, V_NCOL, V_PROC, V_Q, V_R, V_S, V_SERVED,
                      V_STALL, V_STRETCH, V_U, W_A, W_BG, W_PACE)

#: A worker's process time may drift this far (relative) through the
#: memtables and files its lookups meet before the rack is solved again.
TOL = 0.02
#: Events one kernel call handles at most (a guard: every call is resumable).
MAX_EVENTS = 2_000_000
#: Phases a run keeps in ``details["trajectory"]`` (the rest merged into the last).
MAX_KEPT = 2_000


@dataclass
class Phase:
    t0_us: float
    dt_us: float
    mops: float           # requests per us
    kind: str             # "run", "slow" (some writes delayed), "stop" (some stopped)
    queries: float


@dataclass
class RunState:
    """One rack's run in progress: RocksDB's state, the solutions of its
    phases so far and what they add up to."""
    spec: RackSpec
    rs: np.ndarray
    ws: np.ndarray
    p: object
    st: object
    jobs: object
    mach: object
    q_left: float
    t: float = 0.0
    done: bool = False
    # the solver's view of the state at the last solve
    ref: tuple = ()
    cost: np.ndarray | None = None
    pace: np.ndarray | None = None
    bg: np.ndarray | None = None
    want: tuple | None = None          # (ws) of the next solve
    pace_pass: bool = False            # the next solve computes a delayed worker's pacing
    key: bytes = b""                   # the state as the solver sees it
    cache: dict = field(default_factory=dict)   # key -> (X, ro, wo): states seen before
    last: tuple | None = None          # (X per us, ro, wo) of the current phase
    phases: list = field(default_factory=list)
    by_key: dict = field(default_factory=dict)   # key -> [time, requests] in that state
    stopped_us: np.ndarray | None = None         # per worker: time its writes were stopped
    acc_t: float = 0.0                 # time of the solved phases
    acc_q: float = 0.0                 # requests of the solved phases
    coef: tuple = ()                   # the workers' cost coefficients (service)
    write_rate: tuple = ()
    stop_t: float = 0.0
    stop_q: float = 0.0
    stop_resends: float = 0.0
    stop_lost: float = 0.0
    solves: int = 0


def _bg_matters(spec: RackSpec) -> bool:
    sv = spec.service
    return sv.bg_shares_cores and (sv.bg_penalty > 0.0 or sv.cores > 0)


def start(spec: RackSpec, rs: np.ndarray, ws: np.ndarray) -> RunState:
    pl, sv, ls = spec.placement, spec.service, spec.lsm
    p = ls.rule_params()
    # plain structured arrays for the compiled rules (a record array's
    # attribute lookups cost more in every call than the call itself)
    st, jobs, mach = (a.view(np.ndarray) for a in
                      rules.new_state(pl.servers, pl.machines, pl.machine_of))
    kern.start(st, p, *lsm_mech.start_arrays(ls, pl.servers))
    r = RunState(spec=spec, rs=rs, ws=ws, p=p, st=st, jobs=jobs, mach=mach,
                 q_left=float(spec.queries))
    r.stopped_us = np.zeros(ws.shape[0])
    r.coef = (per_worker(pl, "machine_of", dtype=np.int64), bool(sv.bg_shares_cores),
              per_worker(sv, "flat_us"), per_worker(sv, "first_probes"),
              per_worker(sv, "probe_us"), per_worker(sv, "memprobe_us"), float(sv.bg_penalty))
    # writes per us into each instance: its clients' (per unit of X) and the
    # control plane's write-backs
    r.write_rate = (per_worker(pl, "shares") * per_worker(pl, "write_frac"),
                    pl.evict_per_us * per_worker(pl, "evict_probs"))
    _prepare(r)
    return r


def _inputs(r: RunState):
    """The rack solver's inputs in the current state: per worker, process
    time, background jobs on its cores; the reference arrays the kernel
    compares the state with."""
    n = len(r.st)
    cond = np.zeros(n, dtype=np.int64)
    rate = np.zeros(n)
    imm = np.zeros(n, dtype=np.int64)
    probes = np.zeros(n, dtype=np.int64)
    bg_m = np.zeros(len(r.mach), dtype=np.int64)
    bg = np.zeros(n)
    cost = np.zeros(n)
    kern.state_inputs(r.st, r.mach, *r.coef, cond, rate, imm, probes, bg_m, bg, cost)
    return (cond, rate, imm, probes, bg_m), cost, bg


def _prepare(r: RunState) -> None:
    """Set up the next solve for the current state (or a stop phase: none)."""
    ref, cost, bg = _inputs(r)
    r.ref = ref
    r.cost = cost
    r.bg = bg
    cond = ref[0]
    if (cond == rules.STOPPED).any():
        r.want = None                     # a stop: no solve
        return
    delayed = cond == rules.DELAYED
    # the state as the solver sees it: a flush/stop cycle comes back to the
    # same states, solved once
    r.key = b"".join((np.round(np.log(np.maximum(cost, 1e-12)), 5).tobytes(), bg.tobytes(),
                      delayed.tobytes(), np.round(np.log(ref[1][delayed]), 5).tobytes()))
    hit = r.cache.get(r.key)
    if hit is not None:
        r.last = hit
        r.want = None
        r.pace_pass = False
        return
    ws = r.ws.copy()
    ws[:, W_A] = cost
    ws[:, W_BG] = bg
    ws[:, W_PACE] = 0.0
    r.pace_pass = bool(delayed.any())
    r.want = (ws,)


def _pacing(r: RunState, wo: np.ndarray) -> np.ndarray:
    """Per write, the wait RocksDB's write controller adds while an instance
    is delayed: writes paced to its delayed rate, less the time the worker
    spends between writes anyway (``WriteController::GetDelay``)."""
    cond, rate = r.ref[0], r.ref[1]
    entry = r.spec.lsm.entry_bytes
    wf = per_worker(r.spec.placement, "write_frac")
    pace = np.zeros(len(cond))
    for i in np.flatnonzero(cond == rules.DELAYED):
        if rate[i] <= 0.0 or wf[i] <= 0.0:
            continue
        between = wo[i, V_S] / wf[i]
        pace[i] = max(0.0, entry / rate[i] - between)
    return pace


def needs_solve(r: RunState):
    """The packed inputs (rs, ws) this run needs solved now, or None."""
    if r.done or r.want is None:
        return None
    return r.rs, r.want[0]


def solved(r: RunState, ro: np.ndarray, wo: np.ndarray) -> None:
    """The current state's solution arrived: run on with it."""
    r.solves += 1
    if r.pace_pass:
        # a delayed instance: its pacing from this solution, then once more
        ws = r.want[0].copy()
        ws[:, W_PACE] = _pacing(r, wo)
        r.want = (ws,)
        r.pace_pass = False
        return
    r.last = (float(ro[O_X]), ro.copy(), wo.copy())
    r.cache[r.key] = r.last
    r.want = None
    _run_on(r)


def _rates(r: RunState, X: float) -> np.ndarray:
    """Writes per us into each instance at throughput X: its clients' writes
    and the control plane's write-backs."""
    per_x, backs = r.write_rate
    return X * per_x + backs


def _run_on(r: RunState) -> None:
    """Advance the run with the current solution (or through a stop) until
    it needs another solve or ends."""
    spec = r.spec
    while not r.done:
        cond = r.ref[0]
        stopped = bool(np.any(cond == rules.STOPPED))
        if stopped:
            X = 0.0
            rates = np.zeros(len(cond))
        else:
            if r.last is None or r.want is not None:
                return                      # waiting for a solve
            X = r.last[0]
            rates = _rates(r, X)
        cond_ref, rate_ref, imm_ref, probes_ref, bg_ref = r.ref
        c_probe, c_mem = r.coef[4], r.coef[5]
        t0 = r.t
        why, t, q = kern.advance(r.p, r.st, r.jobs, r.mach, rates, X, r.t, r.q_left, cond_ref,
                                 rate_ref, imm_ref, probes_ref, bg_ref, c_mem, c_probe, r.cost,
                                 _bg_matters(spec), TOL, MAX_EVENTS)
        dt = t - t0
        r.t = t
        if stopped:
            _account_stop(r, dt)
        else:
            _account(r, dt, q, X)
            r.q_left -= q
        if why == kern.DONE or r.q_left <= 1e-9 * max(spec.queries, 1.0):
            r.done = True
            break
        if why == kern.STUCK:
            # nothing moves: a stop no job can clear (cannot happen under
            # RocksDB's rules with a thread per pool), or no writes and no X
            r.done = True
            r.phases.append(Phase(r.t, math.inf, 0.0, "stuck", 0.0))
            break
        if why == kern.BUDGET:
            continue
        _prepare(r)
        if r.want is not None:
            return
    if r.done:
        kern.finish(r.st, r.t)


def _kind(cond) -> str:
    if (cond == rules.STOPPED).any():
        return "stop"
    if (cond == rules.DELAYED).any():
        return "slow"
    return "run"


def _account(r: RunState, dt: float, q: float, X: float) -> None:
    """A solved phase of ``dt`` us served ``q`` requests at ``X`` per us (its
    figures are its solution's, weighted at the end: :func:`outputs`)."""
    if dt <= 0.0:
        return
    _keep(r, Phase(r.t - dt, dt, X, _kind(r.ref[0]), q))
    acc = r.by_key.get(r.key)
    if acc is None:
        acc = r.by_key[r.key] = [0.0, 0.0]
    acc[0] += dt
    acc[1] += q
    r.acc_t += dt
    r.acc_q += q


def _account_stop(r: RunState, dt: float) -> None:
    """A stop of ``dt`` us: the stopped workers are blocked, the others idle;
    the rack serves only the requests its threads complete before they all
    wait at a stopped worker, and the threads held past their timeout resend."""
    if dt <= 0.0:
        return
    spec = r.spec
    cond = r.ref[0]
    stopped = cond == rules.STOPPED
    shares = per_worker(spec.placement, "shares")
    s = float(np.sum(shares[stopped]))
    N = spec.clients.threads
    X_prev = r.last[0] if r.last is not None else 0.0
    served = min(X_prev * dt, N * (1.0 - s) / s) if s > 0 else X_prev * dt
    served = min(served, r.q_left)
    r.q_left -= served
    T = spec.clients.timeout_us
    resends = N * max(0.0, dt / T - 1.0) if math.isfinite(T) and T > 0 else 0.0
    buffer = spec.network.buffer_pkts
    # the stopped workers' buffers hold what they can; the rest is dropped
    dropped = max(0.0, N - max(1, int(stopped.sum())) * buffer)
    r.stop_resends += resends
    if dropped > 0:
        r.stop_lost += dropped * (1.0 + resends / N)
    r.stop_t += dt
    r.stop_q += served
    r.stopped_us[stopped] += dt               # blocked in its write the whole time
    _keep(r, Phase(r.t - dt, dt, served / dt, "stop", served))


def _keep(r: RunState, ph: Phase) -> None:
    if len(r.phases) < MAX_KEPT:
        r.phases.append(ph)
    else:
        last = r.phases[-1]
        last.dt_us += ph.dt_us
        last.queries += ph.queries
        last.mops = last.queries / last.dt_us if last.dt_us > 0 else 0.0


#: per-worker outputs weighted by time, and by requests served
_BY_TIME = (V_U, V_BLOCK, V_STRETCH, V_Q)
_BY_REQUEST = (V_S, V_PROC, V_R, V_DUP, V_LOST, V_HELD)


def outputs(r: RunState) -> tuple[np.ndarray, np.ndarray, dict]:
    """The run's output rows (as one solve's, for
    :func:`model.solvers.outcome.prediction`) and its LSM details: each
    state's solution weighted by the time and the requests the run spent in
    it, the stops added."""
    spec = r.spec
    T = r.t if r.t > 0 else 1e-12
    Q = float(spec.queries)
    M = r.ws.shape[0]
    ro = np.zeros(O_NCOL)
    wo = np.zeros((M, V_NCOL))
    q_solved = max(r.acc_q, 1e-300)
    t_solved = max(r.acc_t, 1e-300)
    sat_q = 0.0
    for key, (dt, q) in r.by_key.items():
        _, ro_k, wo_k = r.cache[key]
        for col in _BY_TIME:
            wo[:, col] += dt * wo_k[:, col]
        wo[:, V_SERVED] += dt * wo_k[:, V_SERVED] * ro_k[O_RUN]
        for col in _BY_REQUEST:
            wo[:, col] += q * wo_k[:, col]
        for col in (O_LOST, O_RESENDS, O_SLEEP, O_CLIENT_RES):
            ro[col] += q * ro_k[col]
        ro[O_CLIENT_U] += dt * ro_k[O_CLIENT_U]
        ro[O_EVALS] = max(ro[O_EVALS], ro_k[O_EVALS])     # the hardest solve's
        ro[O_JUMP] = max(ro[O_JUMP], ro_k[O_JUMP])
        ro[O_WIDTH] = max(ro[O_WIDTH], ro_k[O_WIDTH])
        sat_q += q * ro_k[O_SATURATED]
    # utilisation and blocks over the whole run (a stopped worker is blocked)
    for col in (V_U, V_BLOCK, V_Q):
        wo[:, col] /= T
    wo[:, V_U] += r.stopped_us / T
    wo[:, V_STRETCH] = wo[:, V_STRETCH] / t_solved if r.acc_t > 0 else 1.0
    for col in _BY_REQUEST:
        wo[:, col] /= q_solved
    # a worker's request rate over the whole run, its stops' few included
    wo[:, V_SERVED] = wo[:, V_SERVED] / T + per_worker(spec.placement, "shares") * r.stop_q / T
    wo[:, V_STALL] = r.st["stop_us"] / T
    wo[:, V_FLUSH_BUSY] = r.st["flush_us"] / T
    for col in (O_LOST, O_RESENDS, O_SLEEP, O_CLIENT_RES):
        ro[col] /= max(Q, 1.0)
    ro[O_LOST] += r.stop_lost / max(Q, 1.0)
    ro[O_RESENDS] += r.stop_resends / max(Q, 1.0)
    ro[O_CLIENT_U] /= T
    ro[O_SATURATED] = 1.0 if sat_q > 0.5 * q_solved else 0.0
    # the queries served over the time they took; a run that got stuck (a
    # stop no job can clear) serves fewer than its Q, as the simulator's does
    served = Q - max(r.q_left, 0.0) if r.q_left > 1e-9 * max(Q, 1.0) else Q
    X = served / T if math.isfinite(T) else 0.0
    ro[O_X] = X
    ro[O_RUN] = 1.0
    ro[O_CYCLE] = spec.clients.threads / X if X > 0 else math.inf
    details = {"lsm": lsm_details(r), "trajectory": trajectory_details(r),
               "stuck": any(p.kind == "stuck" for p in r.phases[-1:])}
    return ro, wo, details


def lsm_details(r: RunState) -> dict:
    d = lsm_mech.describe_counts(r.st, r.spec.lsm)
    pending = np.zeros(len(r.st))
    kern.pending_all(r.st, r.p, pending)
    d["pending_compaction_mib_end"] = (pending / lsm_mech.MIB).tolist()
    d["run_s"] = r.t / 1e6
    d["stopped_s"] = r.stop_t / 1e6
    d["solves"] = r.solves
    return d


def trajectory_details(r: RunState) -> dict:
    """The phases, and the run's throughput per second (MOPS) for a plot."""
    ph = r.phases
    T = r.t
    secs = int(math.ceil(T / 1e6)) if math.isfinite(T) else 0
    per_s = np.zeros(min(secs, 100_000))
    for p in ph:
        if not math.isfinite(p.dt_us) or p.dt_us <= 0:
            continue
        a, b = p.t0_us / 1e6, (p.t0_us + p.dt_us) / 1e6
        k = int(a)
        while k < len(per_s) and k < b:
            lo, hi = max(a, k), min(b, k + 1)
            # over dt_us itself: a phase too short to move a and b apart in seconds
            per_s[k] += p.queries * (hi - lo) * 1e6 / p.dt_us / 1e6
            k += 1
    return {
        "phases": [{"start_s": p.t0_us / 1e6, "seconds": p.dt_us / 1e6, "mops": p.mops,
                    "kind": p.kind} for p in ph],
        "per_second_mops": per_s.tolist(),
    }


def run_batch(specs: Sequence[RackSpec], packed: Sequence[tuple], solve_packed: Callable,
              starts: Sequence[float] | None = None) -> list[RunState]:
    """Every rack's run, by rounds: each round solves (in one compiled batch)
    every rack whose state needs a solution, then moves each on."""
    runs = [start(sp, rs, ws) for sp, (rs, ws) in zip(specs, packed)]
    guess = list(starts) if starts is not None else [0.0] * len(runs)
    while True:
        need = [(k, needs_solve(r)) for k, r in enumerate(runs)]
        need = [(k, x) for k, x in need if x is not None]
        if not need:
            break
        RO, WO, OFF = solve_packed([x for _, x in need],
                                   [runs[k].last[0] if runs[k].last else guess[k]
                                    for k, _ in need])
        for j, (k, _) in enumerate(need):
            solved(runs[k], RO[j], WO[OFF[j]:OFF[j + 1]])
    return runs
