"""The closed loop's balance at one throughput X (compiled): one evaluation of h.

:func:`_evaluate` takes the rack through the mean-value relations at X, in
order (stations, then queues, blocks and losses: :mod:`model.solvers.stations`,
:mod:`model.solvers.losses`), to a client's cycle; :func:`_h` is the balance
``N / cycle(X) - X`` whose root :mod:`model.solvers.root` finds. Each
evaluation solves its small inner relations from the same start every time,
so h stays a function of X.
"""

from __future__ import annotations

import math

from ._jit import njit
from .losses import _awake_losses, _unqueued_cycle
from .mechanisms import client_residence, client_utilization
from .packing import (K_DUP, K_LAM, K_OPN, K_S, K_STRT, K_U, K_W, K_WALEV, R_CCORES, R_CPU, R_E,
                      R_EB, R_FLOOR, R_GAP, R_HIT, R_HIT_RTT, R_MACH, R_MISS_RTT, R_N, R_SEND,
                      R_SYNCB, R_SYNCUS, R_T, V_BLOCK, V_DUP, V_PROC, V_S, V_SERVED, V_STRETCH,
                      V_U, W_PACE)
from .stations import _duplicates, _rates, _utilisations, _write_extras


@njit(cache=True)
def _evaluate(X, rs, ws, wk, mt, out_w, final, lite=False, away_out=False):
    """Per-request cycle of a client at throughput X (us), and with ``final``
    every per-worker figure in ``out_w``; ``lite`` leaves out duplicates and
    blocks (a cheap first guess of the root). Returns (cycle, lost per request,
    resends per request, sleep per request, client utilisation, client residence,
    requests the rack loses to blocks per request, thread-us away behind
    blocks per request); an infinite cycle where some station cannot carry X."""
    N = rs[R_N]
    n_mach = int(rs[R_MACH])
    bad = (math.inf, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    # ---- rates; the phase's background jobs on each machine ----
    _rates(X, rs, ws, wk, mt, n_mach)
    # ---- per-write extras: WAL switch, sync, the phase's pacing, commit ----
    syncs_per_write = rs[R_EB] / rs[R_SYNCB] if rs[R_SYNCB] > 0.0 else 0.0
    if not _write_extras(rs, ws, wk, mt, n_mach, syncs_per_write):
        return bad
    # ---- service with load factors; the duplicates late replies cause ----
    if not _utilisations(rs, ws, wk, mt, n_mach):
        return bad
    if math.isfinite(rs[R_T]) and not lite and not _duplicates(X, rs, ws, wk, mt, n_mach):
        return bad
    # ---- queues, blocks, loss, with the threads awake ----
    z0 = _unqueued_cycle(rs, ws, wk)
    lost, resends, held_sum, resid, sleep, stop, block_sleep = _awake_losses(
        X, rs, ws, wk, out_w, final, lite, syncs_per_write, z0)
    visits = 1.0 + lost + resends
    rc = client_residence(X, rs[R_CPU], rs[R_CCORES], visits, N)
    if rc == math.inf:
        return bad
    h = rs[R_HIT]
    # the threads held behind blocks and asleep after a drop, as a delay in
    # the cycle (Little's law); the same threads as the rack's stops are
    # ``stop``, and ``root._solve_rack`` takes the lower of the two
    cycle = (rc + rs[R_SEND] * visits + h * rs[R_HIT_RTT] + (1.0 - h) * rs[R_MISS_RTT]
             + resid + held_sum + sleep)
    if away_out:
        cycle -= held_sum + block_sleep     # the running rack's cycle, without them
    if final:
        _worker_outputs(rs, ws, wk, out_w, syncs_per_write)
    cu = client_utilization(X, rs[R_CPU], rs[R_CCORES], visits)
    return (cycle, lost, resends, sleep, cu, rc, stop, held_sum + block_sleep)


@njit(cache=True)
def _worker_outputs(rs, ws, wk, out_w, syncs_per_write):
    """Each worker's figures at the answer into ``out_w`` (``V_*``; the queue,
    residence, losses and blocks come from the loss pass)."""
    fixed = rs[R_FLOOR] + rs[R_GAP]
    for i in range(wk.shape[0]):
        out_w[i, V_U] = wk[i, K_U]
        out_w[i, V_S] = wk[i, K_S]
        out_w[i, V_PROC] = wk[i, K_S] - fixed
        out_w[i, V_SERVED] = wk[i, K_LAM] * (1.0 + wk[i, K_DUP]) + wk[i, K_OPN]
        blk = wk[i, K_W] * (wk[i, K_WALEV] / max(rs[R_E], 1.0) + ws[i, W_PACE]
                            + syncs_per_write * rs[R_SYNCUS])
        out_w[i, V_BLOCK] = min(1.0, blk)
        out_w[i, V_STRETCH] = wk[i, K_STRT]
        out_w[i, V_DUP] = wk[i, K_DUP]


@njit(cache=True)
def _h(X, rs, ws, wk, mt, out_w, lite=False, away_out=False):
    """The closed loop's balance at throughput X: ``N / cycle(X) - X``. It
    falls from positive at X = 0 to ``-X`` once a station cannot carry X (an
    infinite cycle), with no pole on the way: a bracketed root converges in
    a few steps. (The inner states -- utilisations, running fractions,
    duplicates -- start from the same point at every X, so h is a function
    of X.)"""
    r = _evaluate(X, rs, ws, wk, mt, out_w, False, lite, away_out)
    if not math.isfinite(r[0]):
        return -X
    return rs[R_N] / r[0] - X
