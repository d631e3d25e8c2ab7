"""The rack's stations at a fixed throughput X (compiled): the first half of one evaluation.

Once X is fixed every per-worker quantity follows (:mod:`model.solvers.analytic`),
and :func:`model.solvers.balance._evaluate` works them out in order with
these, each writing its worker's scratch columns (``K_*``) and its machine's
row of ``mt``:

* :func:`_rates` -- each worker's request and write rates, the control
  plane's write-backs, each machine's write rate;
* :func:`_write_extras` -- what a write waits for besides its service: the
  WAL switch at its machine's write rate, syncs, the phase's pacing while
  RocksDB delays writes, TransactionDB's commit;
* :func:`_utilisations` -- each worker's utilisation and time per request
  (idle and busy-peer factors, CPU stretch on oversubscribed cores);
* :func:`_duplicates` -- the duplicates late replies make a worker serve.

A phase of the run (:mod:`model.solvers.trajectory`) sets each worker's
process time, pacing and its machine's background jobs (``W_A``, ``W_PACE``,
``W_BG``); RocksDB's stops are phases of their own, never solved here.

``mt``'s columns, per machine: 0 scratch (the workers' summed utilisation in
:func:`_utilisations`, the writers in :func:`_write_extras`), 1 writes per us,
2 background jobs running, 3 unused, 4 workers, 5 the CPU stretch.
"""

from __future__ import annotations

import math

from ._jit import njit
from .mechanisms import (budget_us, client_core_wait, commit_wait, gamma_sf, late_resends,
                         residence_scv, residual_us, service_scv, stretch, wal_switch_block_us)
from .packing import (K_A, K_DUP, K_EXTRA, K_LAM, K_MACH, K_OPN, K_RUN, K_S, K_STRT, K_U, K_W,
                      K_WALEV, K_WFRAC, R_CCORES, R_CORES, R_CPU, R_CTX, R_CV2, R_E, R_EB, R_EVICT,
                      R_FLOOR, R_GAP, R_IP, R_K, R_MISS_RTT, R_N, R_PERIOD, R_SP, R_STRICT,
                      R_SYNCUS, R_T, R_TXN, R_WAL, R_WALBASE, R_WALPER, W_A, W_BG, W_EV, W_PACE,
                      W_S, W_WF)

#: Sweeps of the workers' duplicate load at most (the least fixed point, from none).
DUP_SWEEPS = 60
#: Duplicates a worker serves per request at most: past this the buffer is
#: full of them anyway (the mean-value form bounds them at K S / T too).
DUP_CAP = 1e3


@njit(cache=True)
def _rates(X, rs, ws, wk, mt, n_mach):
    """Each worker's client requests, write-backs and writes per us at X, its
    machine's writes per us and background jobs; the inner states start from
    the same point at every X (no duplicates, idle, writes flowing)."""
    for m in range(n_mach):
        mt[m, 0] = 0.0     # scratch
        mt[m, 1] = 0.0     # the machine's writes per us
        mt[m, 2] = 0.0     # background jobs running
        mt[m, 3] = 0.0
    for i in range(ws.shape[0]):
        wk[i, K_LAM] = X * ws[i, W_S]
        wk[i, K_OPN] = rs[R_EVICT] * ws[i, W_EV]
        wk[i, K_W] = wk[i, K_LAM] * ws[i, W_WF] + wk[i, K_OPN]
        tot = wk[i, K_LAM] + wk[i, K_OPN]
        wk[i, K_WFRAC] = wk[i, K_W] / tot if tot > 0.0 else 0.0
        wk[i, K_DUP] = 0.0
        wk[i, K_U] = 0.0        # every evaluation from the same start: h is a function of X
        wk[i, K_RUN] = 1.0
        m = int(wk[i, K_MACH])
        mt[m, 1] += wk[i, K_W]
        mt[m, 2] = ws[i, W_BG]   # the phase's jobs on the machine (the same for its workers)


@njit(cache=True)
def _write_extras(rs, ws, wk, mt, n_mach, syncs_per_write):
    """Each worker's wait per write besides its service (``K_EXTRA``): the WAL
    switch (``K_WALEV`` at its machine's write rate, once a memtable), syncs,
    the phase's pacing and the commit on its machine's shared path. False
    where a commit path cannot carry its machine's writes."""
    M = wk.shape[0]
    wal = rs[R_WAL] > 0.0
    for m in range(n_mach):
        mt[m, 0] = 0.0
    for i in range(M):
        if wk[i, K_W] > 0.0:
            mt[int(wk[i, K_MACH]), 0] += 1.0             # the machine's writers
    for i in range(M):
        m = int(wk[i, K_MACH])
        mbps = mt[m, 1] * rs[R_EB] / 1.048576           # bytes/us -> MiB/s
        wk[i, K_WALEV] = wal_switch_block_us(wal, rs[R_WALBASE], rs[R_WALPER], mbps)
        commit = commit_wait(mt[m, 1], rs[R_TXN], mt[m, 0])
        if commit == math.inf:
            return False
        wk[i, K_EXTRA] = (wk[i, K_WALEV] / max(rs[R_E], 1.0) + syncs_per_write * rs[R_SYNCUS]
                          + ws[i, W_PACE] + commit)
    return True


@njit(cache=True)
def _mean_stretch(others, cores, ctx):
    """E[stretch(1 + K)] for K ~ Poisson(others): the threads runnable beside a
    worker when its service starts (busy peers and background jobs)."""
    if cores <= 0.0:
        return 1.0
    if others <= 0.0:
        return stretch(1.0, cores, ctx)
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
        tot += p * stretch(1.0 + k, cores, ctx)
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
    return S * (1.0 + ahead - busy) + busy * residual_us(S, service_scv(S, fixed, cv2))


@njit(cache=True)
def _utilisations(rs, ws, wk, mt, n_mach):
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
def _duplicates(X, rs, ws, wk, mt, n_mach):
    """The duplicates each worker serves per request (``K_DUP``), with the
    utilisations they cause: late replies make resends, which reach the
    worker and are served. False where the duplicates take a worker past
    its capacity (a resend storm: no root at this X)."""
    M = ws.shape[0]
    N = rs[R_N]
    f = (N - 1.0) / N if N > 1.0 else 0.0
    K = rs[R_K]
    budget = budget_us(rs[R_T], rs[R_MISS_RTT])
    period = rs[R_PERIOD]
    fixed = rs[R_FLOOR] + rs[R_GAP]
    cv2 = rs[R_CV2]
    # a thread whose timer fired still waits for a client core to resend
    grace = client_core_wait(X, rs[R_CPU], rs[R_CCORES], 1.0, N)
    for outer in range(DUP_SWEEPS):
        moved = 0.0
        for i in range(M):
            U = wk[i, K_U]
            S = wk[i, K_S]
            if f * U >= 1.0:
                return False
            Q = U / (1.0 - f * U)
            ahead = min(f * Q, K)
            R = _residence(S, U, Q, f, cv2, fixed, K)
            if budget + grace > 40.0 * R:
                d = 0.0                  # far in the tail (late_resends' own cut, sooner)
            else:
                scv_r = residence_scv(S, service_scv(S, fixed, cv2), ahead, min(N - 1.0, K))
                if rs[R_STRICT] > 0.0:
                    # only the latest attempt's reply counts: attempts until
                    # one is answered within its timer, each late one resent
                    late = gamma_sf(1.0 / max(scv_r, 1e-6),
                                    (budget + grace) / (R * max(scv_r, 1e-6)))
                    d = min(late / max(1.0 - late, 1e-300), DUP_CAP)
                else:
                    d = min(late_resends(R, scv_r, budget + grace, period), DUP_CAP)
            # more duplicates only lengthen the stay and so make more: from
            # none, the plain iteration rises to the least fixed point
            # (or past a worker's capacity: a resend storm, no root here)
            moved = max(moved, abs(d - wk[i, K_DUP]))
            wk[i, K_DUP] = d
        if moved < 1e-9:
            break
        if not _utilisations(rs, ws, wk, mt, n_mach):
            return False
    return True
