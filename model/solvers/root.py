"""The root in throughput of each rack, and the compiled batch (the solver's top).

:func:`_root` finds the root of the balance h
(:func:`model.solvers.balance._h`): :func:`_bracket` brackets it from a
guess or from [0, :func:`_upper_bound`], and Brent's method narrows the
bracket to ``X_TOL``. :func:`_solve_rack` solves one rack (a lite first
guess, the root, then the jump, saturation and stopped-rack checks at the
answer) into its output rows; :func:`_solve_batch` solves a batch of racks
in parallel (numba's ``prange``).
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import njit, prange
from .balance import _evaluate, _h
from .packing import (K_MACH, K_NCOL, K_RUN, O_CLIENT_RES, O_CLIENT_U, O_CYCLE, O_EVALS, O_JUMP,
                      O_LOST, O_RESENDS, O_RUN, O_SATURATED, O_SLEEP, O_WIDTH, O_X, R_CCORES,
                      R_CPU, R_FLOOR, R_GAP, R_HIT, R_HIT_RTT, R_MACH, R_MISS_RTT, R_N, R_SEND,
                      R_T, V_U, W_A, W_MACH, W_S)

#: Relative width of the final bracket on X (the fit's finite differences
#: move X by about 1e-4; the root is 1e5 times finer).
X_TOL = 1e-9
#: Evaluations of h per rack at most (bisection halves 1e3 in 60 steps).
MAX_EVAL = 200


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
def _bracket(rs, ws, wk, mt, wo, x0, lite, away_out):
    """(lo, h(lo), hi, h(hi), evaluations): a bracket of the root of h, from
    ``x0`` when it is a guess (> 0), else [0, an upper bound]."""
    N = rs[R_N]
    top = _upper_bound(rs, ws)
    lo = 0.0
    hi = top
    evals = 0
    if x0 > 0.0 and x0 < top:
        # a close guess: bracket it by steps of 5, 10, 20 % ... away from it
        h0 = _h(x0, rs, ws, wk, mt, wo, lite, away_out)
        evals += 1
        step = 1.05
        if h0 > 0.0:
            lo, h_lo = x0, h0
            hi, h_hi = top, -top
            while evals < 20:
                x = min(x0 * step, top)
                hx = _h(x, rs, ws, wk, mt, wo, lite, away_out)
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
            lo, h_lo = 0.0, N / _evaluate(0.0, rs, ws, wk, mt, wo, False, lite, away_out)[0]
            while evals < 20:
                x = x0 / step
                hx = _h(x, rs, ws, wk, mt, wo, lite, away_out)
                evals += 1
                if hx > 0.0:
                    lo, h_lo = x, hx
                    break
                hi, h_hi = x, hx
                step = 1.0 + 2.0 * (step - 1.0)
    else:
        h_lo = N / _evaluate(0.0, rs, ws, wk, mt, wo, False, lite, away_out)[0]
        h_hi = _h(hi, rs, ws, wk, mt, wo, lite, away_out)
        evals = 2
    return lo, h_lo, hi, h_hi, evals


@njit(cache=True)
def _root(rs, ws, wk, mt, wo, x0, lite, away_out=False):
    """(X, top of the final bracket, evaluations): the root of h, bracketed
    from ``x0`` when it is a guess (> 0), else from [0, an upper bound]."""
    lo, h_lo, hi, h_hi, evals = _bracket(rs, ws, wk, mt, wo, x0, lite, away_out)
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
        fb = _h(b, rs, ws, wk, mt, wo, lite, away_out)
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
    """One rack (``rs``, ``ws``: its packed inputs) into its output rows (``ro``,
    ``wo``); ``x0`` a guess of its throughput per us, 0 for none."""
    M = ws.shape[0]
    n_mach = max(int(rs[R_MACH]), 1)
    wk = np.zeros((M, K_NCOL))
    for i in range(M):
        wk[i, K_MACH] = ws[i, W_MACH]
        wk[i, K_RUN] = 1.0
    mt = np.zeros((n_mach, 6))
    N = rs[R_N]
    e0 = 0
    if x0 <= 0.0:
        # no guess: the root without duplicates, loss and blocks is a close one
        x0, _, e0 = _root(rs, ws, wk, mt, wo, 0.0, True)
    X, hi, evals = _root(rs, ws, wk, mt, wo, x0, False)
    # a jump: the balance flips across the bracket without passing zero, away
    # from a station's capacity (there the drops rise steeply to all: saturation)
    top = _evaluate(hi, rs, ws, wk, mt, wo, False)[0] if hi > X else 0.0
    r = _evaluate(X, rs, ws, wk, mt, wo, True)
    busiest = 0.0
    for i in range(M):
        busiest = max(busiest, wo[i, V_U])
    ro[O_JUMP] = 1.0 if (hi > X and math.isfinite(top) and abs(N / top - hi) > 1e-3 * hi
                         and busiest < 0.999) else 0.0
    lost, resends, sleep = r[1], r[2], r[3]
    excess = N - X * r[0]
    past = _evaluate(X * (1.0 + 1e-6), rs, ws, wk, mt, wo, False)[0]
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
    # and loses what its stops cost (losses._stop_loss) with the rate bounded by
    # threads / (cycle without queueing). The answer is the lower of the two.
    run = 1.0
    e_more = 0
    if r[6] > 1e-6 and _upper_bound(rs, ws) / (1.0 + r[6]) < X:
        x_run, _, e_more = _root(rs, ws, wk, mt, wo, X, False, True)
        stop = _evaluate(x_run, rs, ws, wk, mt, wo, False, False, True)[6]
        x_stop = x_run / (1.0 + stop)
        if x_stop < X:
            run = x_stop / X
        r = _evaluate(X, rs, ws, wk, mt, wo, True)      # the outputs at X again
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
    """Every rack of a batch (rack r's workers are rows ``OFF[r]:OFF[r + 1]``)."""
    for r in prange(RS.shape[0]):
        a, b = OFF[r], OFF[r + 1]
        _solve_rack(RS[r], WS[a:b], RO[r], WO[a:b], X0[r])
