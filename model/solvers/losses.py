"""Queues, blocks and lost packets at a fixed throughput X (compiled): the second half of one evaluation.

With each worker's utilisation and time per request known
(:mod:`model.solvers.stations`), :func:`_awake_losses` finds what the rack
loses per request: each worker's queue and residence, the threads its blocks
(a WAL switch, a sync, a write stop) gather and drop, its steady overflow,
the wire's losses, and the sleep of the threads that wait out a timeout.
Only threads awake are caught by blocks, so their number is a root of its
own (regula falsi, :func:`model.solvers.bracket.illinois_step`).
"""

from __future__ import annotations

import math

from ._jit import njit
from .bracket import illinois_step
from .mechanisms import block_gather, budget_us, tail_overflow, wire_lost_per_request
from .packing import (K_DUP, K_S, K_U, K_WALEV, R_CPU, R_CV2, R_E, R_FLOOR, R_GAP, R_HIT,
                      R_HIT_RTT, R_K,
                      R_MISS_RTT, R_N, R_PERIOD, R_SEND, R_STRICT, R_SYNCUS, R_T, R_WAL, R_WIRE,
                      V_HELD, V_LOST, V_Q, V_R, W_S, W_WF)
from .stations import _residence


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
def _worker_blocks(rs, wal_ev, wf, free, rate, room, lite, syncs_per_write, g0, z0):
    """One worker's blocks per request it serves (a worker writing ``wf`` of
    its requests, a WAL switch blocking ``wal_ev`` us): (thread-us held,
    packets dropped, resends of threads held past their timeout, requests the
    rack loses to them). Its WAL switches and syncs each gather the ``free``
    threads arriving at ``rate`` into the buffer's ``room``. (RocksDB's write
    stops are phases of the run, :mod:`model.solvers.trajectory`.)"""
    T = rs[R_T]
    budget = budget_us(T, rs[R_MISS_RTT])
    period = rs[R_PERIOD]
    wal = rs[R_WAL] > 0.0
    held = 0.0
    drop = 0.0
    late = 0.0
    stop_i = 0.0
    for kind in range(0 if lite else 2):
        if kind == 0:
            ev = wf / rs[R_E] if wal else 0.0
            L = wal_ev
        else:
            ev = wf * syncs_per_write
            L = rs[R_SYNCUS]
        if ev <= 0.0 or L <= 0.0:
            continue
        _arrived, dropped, hold = block_gather(free, rate, L, room)
        held += ev * hold
        drop += ev * dropped
        stop_i += ev * _stop_loss(free, rate, L, g0, z0, dropped, T)
        if math.isfinite(T) and L > budget:
            # threads held past the timeout resend every period meanwhile
            late += ev * hold / period
    return held, drop, late, stop_i


@njit(cache=True)
def _loss_pass(X, n_awake, rs, ws, wk, out_w, final, lite, syncs_per_write, z0):
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
    average (``root._solve_rack``); the held and the block-dropped threads are
    not also counted as a delay in the cycle, which would let the others
    absorb them at a saturated station."""
    M = ws.shape[0]
    N = rs[R_N]
    f = (N - 1.0) / N if N > 1.0 else 0.0
    T = rs[R_T]
    K = rs[R_K]
    period = rs[R_PERIOD]
    fixed = rs[R_FLOOR] + rs[R_GAP]
    cv2 = rs[R_CV2]
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
        held, drop, late, stop_i = _worker_blocks(rs, wk[i, K_WALEV], ws[i, W_WF], free, rate,
                                                  room, lite, syncs_per_write, g0, z0)
        p_steady = max(tail_overflow(U, K, N - 1.0), 0.0)
        lost_visit = (1.0 + wk[i, K_DUP]) * p_steady + drop
        if rs[R_WIRE] > 0.0:
            # every attempt is lost on the wire with probability w, the resend
            # after its timeout too: w / (1 - w) lost attempts per request
            lost_visit += wire_lost_per_request(rs[R_WIRE]) * (1.0 + wk[i, K_DUP])
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
        lost += rs[R_HIT] * wire_lost_per_request(rs[R_WIRE])
    sleep = lost * T if math.isfinite(T) else 0.0
    block_sleep = block_drop * T if math.isfinite(T) else 0.0
    return lost, resends, held_sum, resid, sleep, stop, block_sleep


@njit(cache=True)
def _unqueued_cycle(rs, ws, wk):
    """The cycle without queueing: client cores, wire, switch, a worker's
    service (with the duplicates it serves)."""
    h = rs[R_HIT]
    dups = 0.0
    z_srv = 0.0
    for i in range(ws.shape[0]):
        dups += ws[i, W_S] * wk[i, K_DUP]
        z_srv += ws[i, W_S] * (1.0 + wk[i, K_DUP]) * wk[i, K_S]
    return ((rs[R_CPU] + rs[R_SEND]) * (1.0 + dups) + h * rs[R_HIT_RTT]
            + (1.0 - h) * rs[R_MISS_RTT] + z_srv)


@njit(cache=True)
def _awake_losses(X, rs, ws, wk, out_w, final, lite, syncs_per_write, z0):
    """:func:`_loss_pass` with the threads awake that the rack has at X: those
    not waiting out a timeout, and blocks gather only those; their number is
    the root of ``awake = N - X sleep(awake)`` (sleep falls as fewer are
    awake to be caught)."""
    N = rs[R_N]
    n_awake = N
    r = _loss_pass(X, n_awake, rs, ws, wk, out_w, final, lite, syncs_per_write, z0)
    sleep = r[4]
    if X * sleep > 1e-6 * N:
        # phi(n) = N - X sleep(n) - n falls from phi(lo) > 0 to phi(N) < 0:
        # regula falsi (Illinois), a few passes
        lo_n, hi_n = max(N - X * sleep, 1.0), N
        f_hi = N - X * sleep - N
        r_lo = _loss_pass(X, lo_n, rs, ws, wk, out_w, False, lite, syncs_per_write, z0)
        f_lo = N - X * r_lo[4] - lo_n
        side = 0
        for it in range(30):
            if f_lo <= 0.0 or hi_n - lo_n < 1e-6 * N:
                break
            mid = (lo_n * f_hi - hi_n * f_lo) / (f_hi - f_lo)
            if not (lo_n < mid < hi_n):
                mid = 0.5 * (lo_n + hi_n)
            r_m = _loss_pass(X, mid, rs, ws, wk, out_w, False, lite, syncs_per_write, z0)
            fm = N - X * r_m[4] - mid
            if abs(fm) < 1e-6 * N:
                lo_n = hi_n = mid
                break
            lo_n, f_lo, hi_n, f_hi, side = illinois_step(lo_n, f_lo, hi_n, f_hi, side, mid, fm)
        n_awake = 0.5 * (lo_n + hi_n)
        r = _loss_pass(X, n_awake, rs, ws, wk, out_w, final, lite, syncs_per_write, z0)
    return r
