"""The analytic solver: the rack's mean values as one root in throughput.

The rack is a closed network (docs/model.md): N client threads cycle
through the client machines' cores (a multi-core station), the wire and the
switch (delays), and one FCFS station per worker, visited with that worker's
share of the requests. Each mechanism of :mod:`model.rack` gives its
mean-value form as a function of the load, so once the rack's throughput X
(requests per us) is fixed, every per-worker quantity follows:

* ``placement``: each worker's request and write rates (``X s_i``,
  ``X s_i w_i``) and the control plane's write-backs;
* ``lsm``: each instance's flush cycle at its write rate (write stops and
  slowdown, the machine's disk shared by its flush and compaction jobs), the
  WAL-switch block at the machine's write rate, WAL syncs;
* ``service``: the time per request (storage cost, idle and busy-peer
  factors, CPU stretch on oversubscribed cores) and TransactionDB's commit
  wait at the machine's commit rate;
* ``network``: the steady queue overflowing the buffer, and what a block
  gathers (the closed loop piles clients onto a blocked worker; past its
  buffer they are dropped and wait out a timeout);
* ``clients``: the client cores, a lost packet's timeout, resends while a
  reply is late.

Little's law over a client's cycle closes the loop: ``N = X cycle(X)``.
``h(X) = N / cycle(X) - X`` is positive at X = 0 and negative once a
station cannot carry X (an infinite cycle counts as ``h = -X``), so each
rack is one bracketed root (:func:`_root`): the bracket is grown from a
guess by steps of 5, 10, 20 % ... (the root of a lite pass without
duplicates, loss and blocks, or the caller's ``starts``), then Brent's
method (inverse quadratic and secant steps, bisection when they would not
shrink the bracket) narrows it to ``X_TOL``. The answer is the side of the
final bracket where h >= 0. No damping, no state carried between racks,
nothing to "settle". Where h jumps across zero (a stall cliff: a worker's
flush falls behind at some load) the answer is the load at the jump, where
the rack sits in the simulator too, alternating between the two sides;
``details["jump"]`` says so. Where the rack is saturated (just past X no
station carries the load) the threads the loop cannot place wait out
timeouts in the full buffer's drop-and-retry loop (``details["saturated"]``).

Each h(X) solves a few small inner relations from the same start every time
(so h stays a function of X): the busy-peer factor and CPU stretch on a
machine (a few sweeps), a flush cycle's running fraction, the duplicates a
worker serves (the least fixed point from none, by plain sweeps), and the
threads awake after losses (an Illinois root of at most 30 passes).

The whole batch runs compiled (numba, like the simulator's kernel); the
mechanism functions it calls are the mechanism modules' own, compiled in.
"""

from __future__ import annotations

import math
import threading
from typing import Callable, Sequence

import numpy as np

from ..prediction import Prediction, from_outcome, no_goodput
from ..rack import RackSpec, clients as cl_mech, lsm as lsm_mech, network as nw_mech, \
    service as svc_mech
from ..rack.arrays import per_worker
from ..rack.bottleneck import Outcome
from ..rack.service import run_average_cost
from ..regimes import caveat_dicts
from . import latency_tail
from .bracket import illinois_step
from ._jit import njit, prange, register_jitable

__all__ = ["AnalyticSolver", "solve", "solve_many", "X_TOL"]

_BATCH_LOCK = threading.Lock()

#: Relative width of the final bracket on X (the fit's finite differences
#: move X by about 1e-4; the root is 1e5 times finer).
X_TOL = 1e-9
#: Evaluations of g per rack at most (bisection halves 1e3 in 60 steps).
MAX_EVAL = 200
#: Sweeps of the workers' duplicate load at most (the least fixed point, from none).
DUP_SWEEPS = 60
#: Duplicates a worker serves per request at most: past this the buffer is
#: full of them anyway (the mean-value form bounds them at K S / T too).
DUP_CAP = 1e3

for _f in (cl_mech.client_residence, cl_mech.client_core_wait, cl_mech.client_utilization,
           cl_mech.budget_us, cl_mech.gamma_sf,
           cl_mech.late_resends, cl_mech.residence_scv, nw_mech.tail_overflow,
           nw_mech.block_gather, svc_mech.commit_wait, svc_mech.stretch,
           svc_mech.service_scv, svc_mech.residual_us,
           lsm_mech._level_time, lsm_mech._rise, lsm_mech.cycle_stats):
    register_jitable(_f)
_client_residence = cl_mech.client_residence
_late_resends = cl_mech.late_resends
_residence_scv = cl_mech.residence_scv
_gamma_sf = cl_mech.gamma_sf
_client_core_wait = cl_mech.client_core_wait
_client_utilization = cl_mech.client_utilization
_budget_us = cl_mech.budget_us
_tail_overflow = nw_mech.tail_overflow
_block_gather = nw_mech.block_gather
_commit_wait = svc_mech.commit_wait
_service_scv = svc_mech.service_scv
_residual_us = svc_mech.residual_us
_stretch = svc_mech.stretch
_cycle_stats = lsm_mech.cycle_stats
_C_STOP, _C_STOPEV, _C_STOPS, _C_SLOW, _C_WAL, _C_WALEV, _C_BUSY, _C_DISK, _C_COMP, _C_STOPF, \
    _C_MPF, _C_CYCLE = (lsm_mech.C_STOP_US, lsm_mech.C_STOP_EVENT_US, lsm_mech.C_STOPS_PER_WRITE,
                        lsm_mech.C_SLOW_US, lsm_mech.C_WAL_US, lsm_mech.C_WAL_EVENT_US,
                        lsm_mech.C_FLUSH_BUSY, lsm_mech.C_FLUSH_DISK_BUSY,
                        lsm_mech.C_COMPACTION_BUSY, lsm_mech.C_STOP_FRACTION,
                        lsm_mech.C_MEMTABLES_PER_FLUSH, lsm_mech.C_CYCLE_US)

# ---- per-rack inputs (RS columns) ----
(R_N, R_T, R_SEND, R_HIT_RTT, R_MISS_RTT, R_HIT, R_CPU, R_CCORES, R_K, R_WIRE, R_FLOOR, R_GAP,
 R_IP, R_SP, R_CORES, R_CTX, R_TXN, R_MACH, R_EVICT, R_E, R_EB, R_MEMB, R_FN, R_MX, R_FIXED,
 R_FWF, R_SLOWBPU, R_COMPACTS, R_WAMP, R_WAL, R_WALBASE, R_WALPER, R_DISK, R_SYNCB, R_SYNCUS,
 R_CV2, R_STRICT, R_NCOL) = range(38)
# ---- per-worker inputs (WS columns) ----
W_S, W_WF, W_A, W_EV, W_MACH, W_NRUN, W_NCOL = range(7)
# ---- per-rack outputs (RO columns) ----
(O_X, O_CYCLE, O_LOST, O_RESENDS, O_SLEEP, O_CLIENT_U, O_CLIENT_RES, O_EVALS, O_JUMP,
 O_SATURATED, O_WIDTH, O_RUN, O_NCOL) = range(13)
# ---- per-worker outputs (WO columns) ----
(V_U, V_S, V_PROC, V_SERVED, V_STALL, V_BLOCK, V_STRETCH, V_Q, V_R, V_DUP, V_LOST, V_HELD,
 V_FLUSH_BUSY, V_CYCLE, V_MPF, V_NCOL) = range(16)


# ---------------------------------------------------------------- one evaluation of g
# per-worker scratch columns (K_*) of the workspace a rack is solved in
(K_LAM, K_OPN, K_W, K_RUN, K_EXTRA, K_DUP, K_U, K_S, K_A, K_STRT, K_WFRAC, K_MACH,
 K_NCOL) = range(13)


@njit(cache=True)
def _mean_stretch(others, cores, ctx):
    """E[stretch(1 + K)] for K ~ Poisson(others): the threads runnable beside a
    worker when its service starts (busy peers and background jobs)."""
    if cores <= 0.0:
        return 1.0
    if others <= 0.0:
        return _stretch(1.0, cores, ctx)
    spread = 10.0 * math.sqrt(others + 1.0)
    k0 = max(0, int(others - spread))
    k1 = int(others + spread) + 1
    if 1.0 + k1 <= cores:
        return 1.0
    lp = -others + k0 * math.log(others) - math.lgamma(k0 + 1.0)
    tot = 0.0
    wsum = 0.0
    for k in range(k0, k1 + 1):
        p = math.exp(lp)
        tot += p * _stretch(1.0 + k, cores, ctx)
        wsum += p
        lp += math.log(others) - math.log(k + 1.0)
    return tot / wsum if wsum > 0.0 else 1.0


@njit(cache=True)
def _residence(S, U, Q, f, cv2, fixed, K):
    """Time a request admitted to a worker spends there: Schweitzer's arrival
    theorem with the residual of the request in service (``scv`` of the
    random process part), the queue it finds at most the buffer (packets
    past it were dropped, and their threads wait out a timeout instead)."""
    ahead = min(f * Q, K)
    busy = min(f * U, 1.0)
    return S * (1.0 + ahead - busy) + busy * _residual_us(S, _service_scv(S, fixed, cv2))


@njit(cache=True)
def _utilisations(rs, ws, wk, cyc, mt, n_mach):
    """Each worker's utilisation and time per request at its current duplicate
    load (wk[:, K_DUP]); busy peers and CPU stretch by sweeps over the
    machine. False where a worker would be busy all the time."""
    M = ws.shape[0]
    ip = rs[R_IP]
    sp = rs[R_SP]
    cores = rs[R_CORES]
    fixed = rs[R_FLOOR] + rs[R_GAP]
    coupled = sp > 0.0 or cores > 0.0
    for sweep in range(12 if coupled else 1):
        for m in range(n_mach):
            mt[m, 0] = 0.0
            mt[m, 4] = 0.0
        for i in range(M):
            mt[int(wk[i, K_MACH]), 0] += wk[i, K_U]
            mt[int(wk[i, K_MACH]), 4] += 1.0
        if cores > 0.0:
            # the stretch at the machine's mean number of busy peers (its
            # workers differ by their own utilisation only)
            for m in range(n_mach):
                n_m = max(mt[m, 4], 1.0)
                mt[m, 5] = _mean_stretch(mt[m, 0] * (n_m - 1.0) / n_m + mt[m, 2], cores,
                                         rs[R_CTX])
        change = 0.0
        for i in range(M):
            m = int(wk[i, K_MACH])
            tot = wk[i, K_LAM] * (1.0 + wk[i, K_DUP]) + wk[i, K_OPN]
            peers = mt[m, 0] - wk[i, K_U]
            st = mt[m, 5] if cores > 0.0 else 1.0
            a = ws[i, W_A] * (1.0 + sp * peers) * st
            b = fixed + wk[i, K_WFRAC] * wk[i, K_EXTRA]
            # U = tot (a (1 + ip (1 - U)) + b): linear in U
            u = tot * (a * (1.0 + ip) + b) / (1.0 + tot * a * ip)
            change = max(change, abs(u - wk[i, K_U]))
            wk[i, K_U] = u
            wk[i, K_A] = a
            wk[i, K_STRT] = st
        if change < 1e-11:
            break
    for i in range(M):
        u = wk[i, K_U]
        if u >= 1.0:
            return False
        wk[i, K_S] = fixed + wk[i, K_WFRAC] * wk[i, K_EXTRA] + wk[i, K_A] * (1.0 + ip * (1.0 - u))
    return True


@njit(cache=True)
def _loss_pass(X, n_awake, rs, ws, wk, cyc, out_w, final, lite, any_stall, syncs_per_write,
               z0):
    """(lost packets, resends, thread-us held behind blocks, residence at the
    workers, sleep, requests the rack loses to its blocks, sleep of the
    threads blocks dropped) per request, with ``n_awake`` threads not waiting
    out a timeout: each worker's queue and residence, the threads its blocks
    (a WAL switch, a sync, a write stop) gather and drop, its steady overflow.

    A block stops the rack, not only the threads it holds: every thread
    gathers at the blocked worker within a few cycles, and those it drops
    wake together a timeout later. While ``g`` threads are away the others
    keep the rack's rate only if at least ``X z0`` remain (``z0``: the cycle
    without queueing; fewer cannot carry X however short their queues); past
    that the rack loses ``(g - g0) / z0`` requests per us, ``g0 = n_awake -
    X z0`` (:func:`_stop_loss`). Those lost requests make the rack's run
    average (``_solve_rack``); the held and the block-dropped threads are not
    also counted as a delay in the cycle, which would let the others absorb
    them at a saturated station."""
    M = ws.shape[0]
    N = rs[R_N]
    f = (N - 1.0) / N if N > 1.0 else 0.0
    T = rs[R_T]
    K = rs[R_K]
    budget = _budget_us(T, rs[R_MISS_RTT])
    period = rs[R_SEND] + T
    fixed = rs[R_FLOOR] + rs[R_GAP]
    cv2 = rs[R_CV2]
    wal = rs[R_WAL] > 0.0
    lost = 0.0
    resends = 0.0
    held_sum = 0.0
    resid = 0.0
    stop = 0.0
    block_drop = 0.0
    g0 = max(n_awake - X * z0, 0.0)
    for i in range(M):
        s_i = ws[i, W_S]
        if s_i <= 0.0:
            continue
        U = wk[i, K_U]
        S = wk[i, K_S]
        Q = U / (1.0 - f * U)
        R = _residence(S, U, Q, f, cv2, fixed, K)
        room = max(K - Q, 0.0)
        free = max(n_awake - Q, 0.0)
        rate = X * s_i / n_awake if n_awake > 0.0 else 0.0
        wf = ws[i, W_WF]
        held = 0.0
        drop = 0.0
        late = 0.0
        stop_i = 0.0
        for kind in range(0 if lite else 3):
            if kind == 0:
                ev = wf / rs[R_E] if wal else 0.0
                L = cyc[i, _C_WALEV]
            elif kind == 1:
                ev = wf * syncs_per_write
                L = rs[R_SYNCUS]
            else:
                if not any_stall:
                    continue
                ev = wf * cyc[i, _C_STOPS]
                L = cyc[i, _C_STOPEV]
            if ev <= 0.0 or L <= 0.0:
                continue
            arrived, dropped, hold = _block_gather(free, rate, L, room)
            held += ev * hold
            drop += ev * dropped
            stop_i += ev * _stop_loss(free, rate, L, g0, z0, dropped, T)
            if math.isfinite(T) and L > budget:
                # threads held past the timeout resend every period meanwhile
                late += ev * hold / period
        p_steady = max(_tail_overflow(U, K, N - 1.0), 0.0)
        lost_visit = (1.0 + wk[i, K_DUP]) * p_steady + drop
        if rs[R_WIRE] > 0.0:
            # every attempt is lost on the wire with probability w, the resend
            # after its timeout too: w / (1 - w) lost attempts per request
            lost_visit += _wire_lost(rs[R_WIRE]) * (1.0 + wk[i, K_DUP])
        lost += s_i * lost_visit
        resends += s_i * (wk[i, K_DUP] + late)
        if rs[R_STRICT] > 0.0:
            resid += s_i * wk[i, K_DUP] * period    # the thread waits out each late attempt
        held_sum += s_i * held
        stop += s_i * stop_i
        block_drop += s_i * drop
        resid += s_i * R
        if final:
            out_w[i, V_Q] = Q
            out_w[i, V_R] = R
            out_w[i, V_LOST] = lost_visit
            out_w[i, V_HELD] = held
    if rs[R_WIRE] > 0.0:
        # a hit's packets cross the wire too (to the switch and back)
        lost += rs[R_HIT] * _wire_lost(rs[R_WIRE])
    sleep = lost * T if math.isfinite(T) else 0.0
    block_sleep = block_drop * T if math.isfinite(T) else 0.0
    return lost, resends, held_sum, resid, sleep, stop, block_sleep


@njit(cache=True)
def _wire_lost(w):
    """Attempts lost on the wire per request when each is lost with
    probability ``w`` and a lost one is sent again (geometric: ``w / (1 - w)``;
    the simulators drop every request packet, first attempt or resend, hit or
    miss, with that probability)."""
    return w / (1.0 - w) if w < 1.0 else math.inf


@njit(cache=True)
def _stop_loss(G, rate, L, g0, z0, dropped, T):
    """Requests the rack loses to one block of ``L`` us: ``G`` threads gather
    at the blocked worker, ``g(t) = G (1 - e^{-rate t})``, and the rack loses
    ``(g - g0) / z0`` requests per us while more than ``g0`` are away; then
    the ``dropped`` ones stay away for the timeout ``T``."""
    if z0 <= 0.0 or rate <= 0.0 or L <= 0.0:
        return 0.0
    loss = 0.0
    if G > g0:
        tau = 1.0 / rate
        t0 = -tau * math.log1p(-g0 / G) if g0 > 0.0 else 0.0
        if L > t0:
            loss = ((G - g0) * (L - t0) - tau * ((G - g0) - G * math.exp(-L / tau))) / z0
    if dropped > g0 and math.isfinite(T):
        loss += (dropped - g0) * T / z0
    return max(loss, 0.0)


@njit(cache=True)
def _evaluate(X, rs, ws, wk, cyc, mt, out_w, final, lite=False, away_out=False):
    """Per-request cycle of a client at throughput X (us), and with ``final``
    every per-worker figure in ``out_w``; ``lite`` leaves out duplicates and
    blocks (a cheap first guess of the root). Returns (cycle, lost per request,
    resends per request, sleep per request, client utilisation, client residence,
    requests the rack loses to blocks per request, thread-us away behind
    blocks per request); an infinite cycle where some station cannot carry X."""
    M = ws.shape[0]
    N = rs[R_N]
    f = (N - 1.0) / N if N > 1.0 else 0.0
    T = rs[R_T]
    K = rs[R_K]
    n_mach = int(rs[R_MACH])
    INF = math.inf
    bad = (INF, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    budget = _budget_us(T, rs[R_MISS_RTT])
    period = rs[R_SEND] + T
    fixed = rs[R_FLOOR] + rs[R_GAP]
    cv2 = rs[R_CV2]
    wal = rs[R_WAL] > 0.0
    # ---- rates ----
    for m in range(n_mach):
        mt[m, 0] = 0.0     # scratch
        mt[m, 1] = 0.0     # the machine's writes per us
        mt[m, 2] = 0.0     # background jobs running
        mt[m, 3] = 0.0     # disk jobs running
    for i in range(M):
        wk[i, K_LAM] = X * ws[i, W_S]
        wk[i, K_OPN] = rs[R_EVICT] * ws[i, W_EV]
        wk[i, K_W] = wk[i, K_LAM] * ws[i, W_WF] + wk[i, K_OPN]
        tot = wk[i, K_LAM] + wk[i, K_OPN]
        wk[i, K_WFRAC] = wk[i, K_W] / tot if tot > 0.0 else 0.0
        wk[i, K_DUP] = 0.0
        wk[i, K_U] = 0.0        # every evaluation from the same start: h is a function of X
        wk[i, K_RUN] = 1.0
        mt[int(wk[i, K_MACH]), 1] += wk[i, K_W]
    # ---- LSM: WAL-switch block, flush cycles with the machine's disk shared ----
    any_stall = False
    for sweep in range(4):
        for i in range(M):
            m = int(wk[i, K_MACH])
            mbps = mt[m, 1] * rs[R_EB] / 1.048576           # bytes/us -> MiB/s
            wal_ev = rs[R_WALBASE] + rs[R_WALPER] * mbps if wal else 0.0
            share = rs[R_DISK] / max(1.0, mt[m, 3])
            _cycle_stats(cyc[i], rs[R_E], rs[R_EB], rs[R_MEMB], int(rs[R_FN]), int(rs[R_MX]),
                         rs[R_FIXED], rs[R_FWF], rs[R_SLOWBPU], rs[R_COMPACTS] > 0.0,
                         rs[R_WAMP], wal, wk[i, K_W], share, wal_ev, wk[i, K_RUN], ws[i, W_NRUN])
        for m in range(n_mach):
            mt[m, 3] = 0.0
        moved = 0.0
        for i in range(M):
            mt[int(wk[i, K_MACH]), 3] += cyc[i, _C_DISK] + cyc[i, _C_COMP]
            r = 0.5 * wk[i, K_RUN] + 0.5 * (1.0 - cyc[i, _C_STOPF])
            moved = max(moved, abs(r - wk[i, K_RUN]))
            wk[i, K_RUN] = r
            if cyc[i, _C_STOPF] > 0.0 or cyc[i, _C_SLOW] > 0.0:
                any_stall = True
        if sweep >= 1 and moved < 1e-9:
            break
    for i in range(M):
        mt[int(wk[i, K_MACH]), 2] += cyc[i, _C_BUSY] + cyc[i, _C_COMP]
    # ---- per-write extras: WAL switch, sync, stop, slowdown, commit ----
    syncs_per_write = rs[R_EB] / rs[R_SYNCB] if rs[R_SYNCB] > 0.0 else 0.0
    for m in range(n_mach):
        mt[m, 0] = 0.0
    for i in range(M):
        if wk[i, K_W] > 0.0:
            mt[int(wk[i, K_MACH]), 0] += 1.0             # the machine's writers
    for i in range(M):
        commit = _commit_wait(mt[int(wk[i, K_MACH]), 1], rs[R_TXN], mt[int(wk[i, K_MACH]), 0])
        if commit == INF:
            return bad
        wk[i, K_EXTRA] = (cyc[i, _C_WAL] + syncs_per_write * rs[R_SYNCUS]
                          + cyc[i, _C_STOP] + cyc[i, _C_SLOW] + commit)
    # ---- service with load factors; the duplicates late replies cause ----
    if not _utilisations(rs, ws, wk, cyc, mt, n_mach):
        return bad
    if math.isfinite(T) and not lite:
        # a thread whose timer fired still waits for a client core to resend
        grace = _client_core_wait(X, rs[R_CPU], rs[R_CCORES], 1.0, N)
        for outer in range(DUP_SWEEPS):
            moved = 0.0
            for i in range(M):
                U = wk[i, K_U]
                S = wk[i, K_S]
                if f * U >= 1.0:
                    return bad
                Q = U / (1.0 - f * U)
                ahead = min(f * Q, K)
                R = _residence(S, U, Q, f, cv2, fixed, K)
                if budget + grace > 40.0 * R:
                    d = 0.0                  # far in the tail (late_resends' own cut, sooner)
                else:
                    scv_r = _residence_scv(S, _service_scv(S, fixed, cv2), ahead,
                                           min(N - 1.0, K))
                    if rs[R_STRICT] > 0.0:
                        # only the latest attempt's reply counts: attempts until
                        # one is answered within its timer, each late one resent
                        late = _gamma_sf(1.0 / max(scv_r, 1e-6),
                                         (budget + grace) / (R * max(scv_r, 1e-6)))
                        d = min(late / max(1.0 - late, 1e-300), DUP_CAP)
                    else:
                        d = min(_late_resends(R, scv_r, budget + grace, period), DUP_CAP)
                # more duplicates only lengthen the stay and so make more: from
                # none, the plain iteration rises to the least fixed point
                # (or past a worker's capacity: a resend storm, no root here)
                moved = max(moved, abs(d - wk[i, K_DUP]))
                wk[i, K_DUP] = d
            if moved < 1e-9:
                break
            if not _utilisations(rs, ws, wk, cyc, mt, n_mach):
                return bad
    # ---- queues, blocks, loss: the threads awake are those not waiting out a
    # timeout, and blocks gather only those; their number is the root of
    # awake = N - X sleep(awake) (sleep falls as fewer are awake to be caught)
    h = rs[R_HIT]
    # the cycle without queueing (client cores, wire, switch, a worker's service)
    dups = 0.0
    z_srv = 0.0
    for i in range(M):
        dups += ws[i, W_S] * wk[i, K_DUP]
        z_srv += ws[i, W_S] * (1.0 + wk[i, K_DUP]) * wk[i, K_S]
    z0 = ((rs[R_CPU] + rs[R_SEND]) * (1.0 + dups) + h * rs[R_HIT_RTT]
          + (1.0 - h) * rs[R_MISS_RTT] + z_srv)
    n_awake = N
    lost, resends, held_sum, resid, sleep, stop, block_sleep = _loss_pass(
        X, n_awake, rs, ws, wk, cyc, out_w, final, lite, any_stall, syncs_per_write, z0)
    if X * sleep > 1e-6 * N:
        # phi(n) = N - X sleep(n) - n falls from phi(lo) > 0 to phi(N) < 0:
        # regula falsi (Illinois), a few passes
        lo_n, hi_n = max(N - X * sleep, 1.0), N
        f_hi = N - X * sleep - N
        r_lo = _loss_pass(X, lo_n, rs, ws, wk, cyc, out_w, False, lite, any_stall,
                          syncs_per_write, z0)
        f_lo = N - X * r_lo[4] - lo_n
        side = 0
        for it in range(30):
            if f_lo <= 0.0 or hi_n - lo_n < 1e-6 * N:
                break
            mid = (lo_n * f_hi - hi_n * f_lo) / (f_hi - f_lo)
            if not (lo_n < mid < hi_n):
                mid = 0.5 * (lo_n + hi_n)
            r_m = _loss_pass(X, mid, rs, ws, wk, cyc, out_w, False, lite, any_stall,
                             syncs_per_write, z0)
            fm = N - X * r_m[4] - mid
            if abs(fm) < 1e-6 * N:
                lo_n = hi_n = mid
                break
            lo_n, f_lo, hi_n, f_hi, side = illinois_step(lo_n, f_lo, hi_n, f_hi, side, mid, fm)
        n_awake = 0.5 * (lo_n + hi_n)
        lost, resends, held_sum, resid, sleep, stop, block_sleep = _loss_pass(
            X, n_awake, rs, ws, wk, cyc, out_w, final, lite, any_stall, syncs_per_write, z0)
    visits = 1.0 + lost + resends
    rc = _client_residence(X, rs[R_CPU], rs[R_CCORES], visits, N)
    if rc == INF:
        return bad
    # the threads held behind blocks and asleep after a drop, as a delay in
    # the cycle (Little's law); the same threads as the rack's stops are
    # ``stop``, and ``_solve_rack`` takes the lower of the two
    cycle = (rc + rs[R_SEND] * visits + h * rs[R_HIT_RTT] + (1.0 - h) * rs[R_MISS_RTT]
             + resid + held_sum + sleep)
    if away_out:
        cycle -= held_sum + block_sleep     # the running rack's cycle, without them
    if final:
        for i in range(M):
            out_w[i, V_U] = wk[i, K_U]
            out_w[i, V_S] = wk[i, K_S]
            out_w[i, V_PROC] = wk[i, K_S] - fixed
            out_w[i, V_SERVED] = wk[i, K_LAM] * (1.0 + wk[i, K_DUP]) + wk[i, K_OPN]
            out_w[i, V_STALL] = cyc[i, _C_STOPF]
            blk = wk[i, K_W] * (cyc[i, _C_WAL] + cyc[i, _C_SLOW] + syncs_per_write * rs[R_SYNCUS])
            out_w[i, V_BLOCK] = min(1.0, blk)
            out_w[i, V_STRETCH] = wk[i, K_STRT]
            out_w[i, V_DUP] = wk[i, K_DUP]
            out_w[i, V_FLUSH_BUSY] = cyc[i, _C_BUSY]
            out_w[i, V_CYCLE] = cyc[i, _C_CYCLE]
            out_w[i, V_MPF] = cyc[i, _C_MPF]
    cu = _client_utilization(X, rs[R_CPU], rs[R_CCORES], visits)
    return (cycle, lost, resends, sleep, cu, rc, stop, held_sum + block_sleep)


@njit(cache=True)
def _h(X, rs, ws, wk, cyc, mt, out_w, lite=False, away_out=False):
    """The closed loop's balance at throughput X: ``N / cycle(X) - X``. It
    falls from positive at X = 0 to ``-X`` once a station cannot carry X (an
    infinite cycle), with no pole on the way: a bracketed root converges in
    a few steps. (The inner states -- utilisations, running fractions,
    duplicates -- start from the same point at every X, so h is a function
    of X.)"""
    r = _evaluate(X, rs, ws, wk, cyc, mt, out_w, False, lite, away_out)
    if not math.isfinite(r[0]):
        return -X
    return rs[R_N] / r[0] - X


@njit(cache=True)
def _upper_bound(rs, ws):
    """A throughput no rack can reach: every thread in the delays alone, or a
    station busy all the time at its unloaded service."""
    h = rs[R_HIT]
    z = rs[R_SEND] + rs[R_CPU] + h * rs[R_HIT_RTT] + (1.0 - h) * rs[R_MISS_RTT]
    hi = rs[R_N] / max(z, 1e-9)
    fixed = rs[R_FLOOR] + rs[R_GAP]
    for i in range(ws.shape[0]):
        d = ws[i, W_S] * (fixed + ws[i, W_A])
        if d > 0.0:
            hi = min(hi, 1.0 / d)
    if rs[R_CPU] > 0.0:
        hi = min(hi, rs[R_CCORES] / rs[R_CPU])
    return hi * 1.000001


@njit(cache=True)
def _root(rs, ws, wk, cyc, mt, wo, x0, lite, away_out=False):
    """(X, top of the final bracket, evaluations): the root of h, bracketed
    from ``x0`` when it is a guess (> 0), else from [0, an upper bound]."""
    N = rs[R_N]
    top = _upper_bound(rs, ws)
    lo = 0.0
    hi = top
    evals = 0
    if x0 > 0.0 and x0 < top:
        # a close guess: bracket it by steps of 5, 10, 20 % ... away from it
        h0 = _h(x0, rs, ws, wk, cyc, mt, wo, lite, away_out)
        evals += 1
        step = 1.05
        if h0 > 0.0:
            lo, h_lo = x0, h0
            hi, h_hi = top, -top
            while evals < 20:
                x = min(x0 * step, top)
                hx = _h(x, rs, ws, wk, cyc, mt, wo, lite, away_out)
                evals += 1
                if hx <= 0.0:
                    hi, h_hi = x, hx
                    break
                lo, h_lo = x, hx
                if x >= top:
                    break
                step = 1.0 + 2.0 * (step - 1.0)
        else:
            hi, h_hi = x0, h0
            lo, h_lo = 0.0, N / _evaluate(0.0, rs, ws, wk, cyc, mt, wo, False, lite, away_out)[0]
            while evals < 20:
                x = x0 / step
                hx = _h(x, rs, ws, wk, cyc, mt, wo, lite, away_out)
                evals += 1
                if hx > 0.0:
                    lo, h_lo = x, hx
                    break
                hi, h_hi = x, hx
                step = 1.0 + 2.0 * (step - 1.0)
    else:
        h_lo = N / _evaluate(0.0, rs, ws, wk, cyc, mt, wo, False, lite, away_out)[0]
        h_hi = _h(hi, rs, ws, wk, cyc, mt, wo, lite, away_out)
        evals = 2
    # Brent's method (zeroin): inverse quadratic or secant steps, bisection
    # whenever they would not shrink the bracket fast enough
    a, fa = lo, h_lo
    b, fb = hi, h_hi
    c, fc = a, fa
    d = e = b - a
    while evals < MAX_EVAL:
        if (fb > 0.0) == (fc > 0.0):
            c, fc = a, fa
            d = e = b - a
        if abs(fc) < abs(fb):
            a, fa = b, fb
            b, fb = c, fc
            c, fc = a, fa
        tol = 2.0 * 1e-16 * abs(b) + 0.5 * X_TOL * max(abs(b), 1e-12)
        m = 0.5 * (c - b)
        if abs(m) <= tol or fb == 0.0:
            break
        if abs(e) >= tol and abs(fa) > abs(fb):
            s_ = fb / fa
            if a == c:
                p_ = 2.0 * m * s_
                q_ = 1.0 - s_
            else:
                q_ = fa / fc
                r_ = fb / fc
                p_ = s_ * (2.0 * m * q_ * (q_ - r_) - (b - a) * (r_ - 1.0))
                q_ = (q_ - 1.0) * (r_ - 1.0) * (s_ - 1.0)
            if p_ > 0.0:
                q_ = -q_
            else:
                p_ = -p_
            if 2.0 * p_ < min(3.0 * m * q_ - abs(tol * q_), abs(e * q_)):
                e = d
                d = p_ / q_
            else:
                d = m
                e = m
        else:
            d = m
            e = m
        a, fa = b, fb
        b = b + d if abs(d) > tol else b + (tol if m > 0.0 else -tol)
        fb = _h(b, rs, ws, wk, cyc, mt, wo, lite, away_out)
        evals += 1
    # the carried side of the final bracket (h >= 0: the balance holds or
    # threads are left over), and the bracket's other end
    if fb == 0.0:
        X, hi = b, b                 # an exact root: no bracket left to narrow
    elif fb >= 0.0:
        X, hi = b, c
    else:
        X, hi = c, b
    if X <= 0.0:
        X = 0.5 * hi
    return X, hi, evals


@njit(cache=True)
def _solve_rack(rs, ws, ro, wo, x0):
    M = ws.shape[0]
    n_mach = max(int(rs[R_MACH]), 1)
    wk = np.zeros((M, K_NCOL))
    for i in range(M):
        wk[i, K_MACH] = ws[i, W_MACH]
        wk[i, K_RUN] = 1.0
    cyc = np.zeros((M, lsm_mech.C_N))
    mt = np.zeros((n_mach, 6))
    N = rs[R_N]
    e0 = 0
    if x0 <= 0.0:
        # no guess: the root without duplicates, loss and blocks is a close one
        x0, _, e0 = _root(rs, ws, wk, cyc, mt, wo, 0.0, True)
    X, hi, evals = _root(rs, ws, wk, cyc, mt, wo, x0, False)
    # a jump: the balance flips across the bracket without passing zero, away
    # from a station's capacity (there the drops rise steeply to all: saturation)
    top = _evaluate(hi, rs, ws, wk, cyc, mt, wo, False)[0] if hi > X else 0.0
    r = _evaluate(X, rs, ws, wk, cyc, mt, wo, True)
    busiest = 0.0
    for i in range(M):
        busiest = max(busiest, wo[i, V_U])
    ro[O_JUMP] = 1.0 if (hi > X and math.isfinite(top) and abs(N / top - hi) > 1e-3 * hi
                         and busiest < 0.999) else 0.0
    lost, resends, sleep = r[1], r[2], r[3]
    excess = N - X * r[0]
    past = _evaluate(X * (1.0 + 1e-6), rs, ws, wk, cyc, mt, wo, False)[0]
    if excess > 1e-6 * N and not math.isfinite(past):
        # saturated (just past X no station carries the load): the threads the
        # loop cannot place are in the drop-and-retry loop of the full buffer
        # at the saturated worker, each waiting out a timeout per drop
        ro[O_SATURATED] = 1.0
        if math.isfinite(rs[R_T]):
            per_drop = rs[R_T] + rs[R_SEND] + rs[R_CPU]
            more = excess / (X * per_drop)           # drops per request
            lost += more
            resends += more
            sleep += excess / X
    # Threads away behind blocks (held, or asleep after a block's drops) are
    # in the cycle as a delay: exact on average (Little), but it lets the
    # others absorb them, and a block takes them all at once. Throughput is
    # concave in the threads present, so that is an upper bound; so is the
    # stopped-rack form, which runs the rack without them at its full rate
    # and loses what its stops cost (_stop_loss) with the rate bounded by
    # threads / (cycle without queueing). The answer is the lower of the two.
    run = 1.0
    e_more = 0
    if r[6] > 1e-6 and _upper_bound(rs, ws) / (1.0 + r[6]) < X:
        x_run, _, e_more = _root(rs, ws, wk, cyc, mt, wo, X, False, True)
        stop = _evaluate(x_run, rs, ws, wk, cyc, mt, wo, False, False, True)[6]
        x_stop = x_run / (1.0 + stop)
        if x_stop < X:
            run = x_stop / X
        r = _evaluate(X, rs, ws, wk, cyc, mt, wo, True)      # the outputs at X again
    ro[O_X] = X * run
    ro[O_CYCLE] = r[0] / run
    ro[O_LOST] = lost
    ro[O_RESENDS] = resends
    ro[O_SLEEP] = sleep
    ro[O_CLIENT_U] = r[4] * run
    ro[O_CLIENT_RES] = r[5]
    ro[O_RUN] = run
    ro[O_EVALS] = evals + e0 + e_more + 2
    # the final bracket's relative width: X_TOL unless MAX_EVAL ran out first
    ro[O_WIDTH] = abs(hi - X) / X if X > 0.0 else math.inf


@njit(cache=True, parallel=True)
def _solve_batch(RS, WS, OFF, RO, WO, X0):
    for r in prange(RS.shape[0]):
        a, b = OFF[r], OFF[r + 1]
        _solve_rack(RS[r], WS[a:b], RO[r], WO[a:b], X0[r])


# ---------------------------------------------------------------- packing
def _pack(spec: RackSpec) -> tuple[np.ndarray, np.ndarray]:
    c, nw, pl, sv, ls = spec.clients, spec.network, spec.placement, spec.service, spec.lsm
    rs = np.zeros(R_NCOL)
    rs[R_N] = c.threads
    rs[R_T] = c.timeout_us if math.isfinite(c.timeout_us) else math.inf
    rs[R_SEND] = c.send_us
    rs[R_HIT_RTT] = c.hit_rtt_us
    rs[R_MISS_RTT] = c.miss_rtt_us
    rs[R_HIT] = pl.hit_ratio
    rs[R_CPU] = c.cpu_us
    rs[R_CCORES] = max(1, c.cores)
    # the simulators admit whole packets: a buffer of less than one holds none
    # (above one the fractional size stays, so a fit of rcvbuf_pkt_bytes
    # sees a smooth answer)
    rs[R_K] = nw.buffer_pkts if nw.buffer_pkts >= 1.0 else 0.0
    rs[R_WIRE] = nw.loss_rate
    rs[R_FLOOR] = sv.recv_floor_us
    rs[R_GAP] = sv.gap_us
    rs[R_IP] = sv.idle_penalty
    rs[R_SP] = sv.share_penalty
    rs[R_CORES] = sv.cores
    rs[R_CTX] = sv.ctx_penalty
    rs[R_TXN] = sv.txn_commit_us
    rs[R_MACH] = pl.machines
    rs[R_EVICT] = pl.evict_per_us
    rs[R_E] = ls.entries
    rs[R_EB] = ls.entry_bytes
    rs[R_MEMB] = ls.memtable_bytes
    rs[R_FN] = ls.flushnum
    rs[R_MX] = ls.maxnum
    rs[R_FIXED] = ls.flush_fixed_us
    rs[R_FWF] = ls.flush_write_factor
    rs[R_SLOWBPU] = ls.slowdown_bytes_per_us
    rs[R_COMPACTS] = 1.0 if (ls.bg_threads >= 2 and ls.wamp > 1.0) else 0.0
    rs[R_WAMP] = ls.wamp
    rs[R_WAL] = 1.0 if ls.wal else 0.0
    rs[R_WALBASE] = ls.wal_block_base_us
    rs[R_WALPER] = ls.wal_block_us_per_mbps
    rs[R_DISK] = ls.disk_bytes_per_us
    rs[R_SYNCB] = ls.sync_bytes
    rs[R_SYNCUS] = ls.sync_block_us
    rs[R_CV2] = sv.cv ** 2
    rs[R_STRICT] = 1.0 if c.retry == cl_mech.RETRY_STRICT else 0.0
    m = spec.servers
    ws = np.zeros((m, W_NCOL))
    ws[:, W_S] = per_worker(pl, "shares")
    ws[:, W_WF] = per_worker(pl, "write_frac")
    ws[:, W_A] = run_average_cost(sv)
    ws[:, W_EV] = per_worker(pl, "evict_probs")
    ws[:, W_MACH] = per_worker(pl, "machine_of")
    ws[:, W_NRUN] = per_worker(sv, "writes_per_run") / ls.entries
    return rs, ws


def _solve_packed(packed, starts=None):
    """Solve packed racks; ``starts[r]`` is a guess of rack r's throughput
    (per us; 0 for none): a rack solved under a nearby profile."""
    R = len(packed)
    RS = np.array([p[0] for p in packed]).reshape(R, R_NCOL)
    sizes = [p[1].shape[0] for p in packed]
    OFF = np.zeros(R + 1, dtype=np.int64)
    OFF[1:] = np.cumsum(sizes)
    WS = np.concatenate([p[1] for p in packed]) if R else np.zeros((0, W_NCOL))
    RO = np.zeros((R, O_NCOL))
    WO = np.zeros((WS.shape[0], V_NCOL))
    X0 = np.zeros(R) if starts is None else np.asarray(starts, dtype=float)
    # numba's work queue runs one parallel launch at a time per process
    # (_jit.py): threads that share the process (a Dask worker's) take turns
    with _BATCH_LOCK:
        _solve_batch(RS, WS, OFF, RO, WO, X0)
    return RO, WO, OFF


# ---------------------------------------------------------------- outputs
def _outcome(spec: RackSpec, ro: np.ndarray, wo: np.ndarray) -> tuple[Outcome, dict]:
    sv, c = spec.service, spec.clients
    X = float(ro[O_X])
    run = float(ro[O_RUN])              # the fraction of the run the rack is not stopped
    served = wo[:, V_SERVED] * run
    process = wo[:, V_PROC]
    with np.errstate(divide="ignore", invalid="ignore"):
        wait = np.where(served > 0, 1.0 / np.where(served > 0, served, 1.0) - process - sv.gap_us,
                        math.inf)
    wait = np.where(served > 0, np.maximum(wait, sv.recv_floor_us), math.inf)
    latency = c.threads / X if X > 0 else math.inf
    lost = float(ro[O_LOST])
    resends = float(ro[O_RESENDS]) + lost
    expected = lambda v: 0.0 if v < 0.5 else v  # noqa: E731 -- below one packet a run sees none
    timeout_share = float(ro[O_SLEEP]) * X / c.threads if c.threads > 0 else 0.0
    outcome = Outcome(
        throughput_mops=X, util=wo[:, V_U] * run, wait_us=wait, process_us=process.copy(),
        stall_frac=wo[:, V_STALL].copy(), block_frac=wo[:, V_BLOCK].copy(),
        stretch=wo[:, V_STRETCH].copy(), latency_us=latency, timeout_share=timeout_share,
        lost_per_request=lost, pktloss=expected(spec.queries * lost),
        false_pos=expected(spec.queries * resends),
        client_util=float(ro[O_CLIENT_U]))
    cycle = wo[:, V_CYCLE]
    mpf = wo[:, V_MPF]
    with np.errstate(invalid="ignore", divide="ignore"):
        fill = np.where(np.isfinite(cycle), cycle / np.maximum(mpf, 1e-9) / 1e6, math.inf)
    details = {
        "p_mem": list(sv.p_mem),
        "loss_per_visit": wo[:, V_LOST].tolist(),
        "duplicates_per_request": wo[:, V_DUP].tolist(),
        "timeout_delay_us_per_request": float(ro[O_SLEEP]),
        "held_behind_blocks_us_per_visit": wo[:, V_HELD].tolist(),
        "client_cores_utilization": float(ro[O_CLIENT_U]),
        "running_fraction": run,
        "client_cores_us_per_request": float(ro[O_CLIENT_RES]),
        "memtable_fill_s": fill.tolist(),
        "flush_busy_fraction": wo[:, V_FLUSH_BUSY].tolist(),
        "write_stop_fraction": wo[:, V_STALL].tolist(),
        # per worker, what the response-time distribution is built from (solve_many
        # passes the same figures to model.solvers.latency_tail from its arrays)
        "residence_us": wo[:, V_R].tolist(),
        "queue_requests": wo[:, V_Q].tolist(),
        "block_fraction": wo[:, V_BLOCK].tolist(),
        "lost_per_request": lost,
        "resends_per_request": float(ro[O_RESENDS]),
        "buffer_pkts": float(spec.network.buffer_pkts),
        "evaluations": int(ro[O_EVALS]),
        "cycle_us": float(ro[O_CYCLE]),
        "jump": bool(ro[O_JUMP] > 0),
        "saturated": bool(ro[O_SATURATED] > 0),
        # the root to X_TOL (a bracket no wider than that, both ends checked)
        "bracket_rel_width": float(ro[O_WIDTH]),
        "converged": bool(ro[O_WIDTH] <= 4.0 * X_TOL),
    }
    return outcome, details


# ---------------------------------------------------------------- entry points
class AnalyticSolver:
    """Mean values of the compiled rack by one root in throughput per rack."""
    name = "analytic"

    def solve(self, spec: RackSpec) -> Prediction:
        return solve(spec)

    def solve_many(self, specs: Sequence[RackSpec]) -> list[Prediction]:
        return solve_many(specs)


def solve(spec: RackSpec) -> Prediction:
    """The analytic prediction of one rack."""
    return solve_many([spec])[0]


def solve_many(specs: Sequence[RackSpec],
               progress: Callable[[int, int], None] | None = None,
               starts: Sequence[float | None] | None = None) -> list[Prediction]:
    """The analytic predictions of many racks, solved as one compiled batch.

    ``starts[r]``: a guess of rack r's throughput in MOPS (the same rack
    under a nearby profile, as an interval's sigma points are), which the
    root is bracketed around: the same answer in a third of the steps.
    ``progress(done, total)`` hears of racks finished (chunks of a few
    hundred; a rack takes about a millisecond)."""
    specs = list(specs)
    out: list[Prediction | None] = [None] * len(specs)
    live = []
    for r, sp in enumerate(specs):
        why = cl_mech.no_completion(sp.clients, sp.placement.hit_ratio)
        if why:
            out[r] = no_goodput(sp, "analytic", why)
        else:
            live.append(r)
    tell = progress or (lambda done, total: None)
    CHUNK = 256
    done = len(specs) - len(live)
    for k in range(0, len(live), CHUNK):
        part = live[k:k + CHUNK]
        guess = None if starts is None else [starts[r] or 0.0 for r in part]
        RO, WO, OFF = _solve_packed([_pack(specs[r]) for r in part], guess)
        for j, r in enumerate(part):
            outcome, details = _outcome(specs[r], RO[j], WO[OFF[j]:OFF[j + 1]])
            pred = from_outcome(specs[r], outcome, "analytic", details)
            # regimes where the mean values are known to be off (model.regimes)
            pred.details["caveats"] = caveat_dicts(specs[r], pred)
            wo = WO[OFF[j]:OFF[j + 1]]
            pred.details["latency_us_percentiles"] = latency_tail.none() \
                if not pred.throughput_mops > 0 else latency_tail.of_arrays(
                specs[r], per_worker(specs[r].placement, "shares"), wo[:, V_R], wo[:, V_Q],
                wo[:, V_PROC], wo[:, V_HELD], wo[:, V_BLOCK] + wo[:, V_STALL], wo[:, V_LOST],
                wo[:, V_DUP], float(RO[j, O_CLIENT_RES]),
                1.0 + float(RO[j, O_LOST]) + float(RO[j, O_RESENDS]))
            out[r] = pred
        done += len(part)
        tell(done, len(specs))
    return out  # type: ignore[return-value]
